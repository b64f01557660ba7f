// Gradient rules of the sized ops (src/ir/ops/sized.ts): the static ops' rules with the size
// vectors passed along (they get no gradient: sizes are integers).
import { apply } from '../../ir/build.js';
import type { sizedOps } from '../../ir/ops/sized.js';
import { reshapeTo } from '../ops.js';
import type { RuleEntry } from './types.js';

const FN = 'K.gradients';

export const sizedGrads: { readonly [K in keyof typeof sizedOps]: RuleEntry } = {
  reshape_dims: (n, g) => [reshapeTo(g, n.inputs[0]!), null],
  // every tile's cotangent added into x (zeros where a rep is 0)
  tile_dims: (n, g) => [apply('untile_dims', [g, n.inputs[1]!, n.inputs[0]!], { known: [] }, FN), null],
  untile_dims: (n, g) => [
    apply('tile_dims', [g, n.inputs[1]!], { known: n.inputs[2]!.shape.map(() => null) }, FN),
    null,
    null,
  ],
  fill_dims: 'none',
  arange_dims: 'none',
  slice_dims: (n, g) => [apply('unslice_dims', [g, n.inputs[0]!, n.inputs[1]!, n.inputs[2]!], n.attrs, FN), null, null],
  unslice_dims: (n, g) => [apply('slice_dims', [g, n.inputs[2]!, n.inputs[3]!], n.attrs, FN), null, null, null],
};
