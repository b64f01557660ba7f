// The gradient rule of every built-in op, keyed by op name. Typed GradTable (one entry per OpName), so an
// op added to the registry without a rule here is a type error (JAX's per-primitive tables).
import { castGrad, elementwiseGrads, whereGrad } from './elementwise.js';
import { reduceGrads } from './reduce.js';
import { convGrads } from './conv.js';
import { poolGrads } from './pool.js';
import { ctcGrads } from './ctc.js';
import {
  broadcastLikeGrad,
  dotGrad,
  identityGrad,
  indexGrad,
  reshapeGrad,
  reshapeLikeGrad,
  scatterIndexGrad,
  sumToLikeGrad,
  transposeGrad,
  unsqueezeGrad,
} from './core.js';
import { cumulativeGrads, miscGrads, randomGrads } from './misc.js';
import { shapeGrads } from './shape.js';
import { controlGrads } from './control.js';
import { optimizerGrads } from './introduced.js';
import type { GradTable } from './types.js';
import { apply } from '../../ir/build.js';
import { mul, scalar } from '../ops.js';
import { sizedGrads } from './sized.js';

export const gradRules: GradTable = {
  placeholder: 'leaf',
  variable: 'leaf',
  constant: 'leaf',
  learning_phase: 'leaf',
  cast: castGrad,
  identity: identityGrad,
  reshape: reshapeGrad,
  transpose: transposeGrad,
  dot: dotGrad,
  shape_of: 'none',
  fill_like: 'none',
  index: indexGrad,
  where: whereGrad,
  ...elementwiseGrads,
  ...reduceGrads,
  argmax: 'none',
  argmin: 'none',
  sum_to_like: sumToLikeGrad,
  broadcast_like: broadcastLikeGrad,
  reshape_like: reshapeLikeGrad,
  unsqueeze: unsqueezeGrad,
  scatter_index: scatterIndexGrad,
  stop_gradient: 'none',
  // Theano's GradClip and GradScale: the identity forwards, the cotangent clipped or scaled backwards.
  grad_clip: (n, g) => [
    apply(
      'maximum',
      [apply('minimum', [g, scalar(n.attrs.hi, g.dtype)], {}, 'K.gradients'), scalar(n.attrs.lo, g.dtype)],
      {},
      'K.gradients',
    ),
  ],
  grad_scale: (n, g) => [mul(g, n.attrs.scale)],
  ...cumulativeGrads,
  ...miscGrads,
  ...randomGrads,
  ...convGrads,
  ...poolGrads,
  ...shapeGrads,
  ...controlGrads,
  ...ctcGrads,
  ...optimizerGrads,
  ...sizedGrads,
};
