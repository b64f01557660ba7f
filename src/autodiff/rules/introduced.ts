// Gradient rules of the ops only the optimizer introduces (src/ir/ops/introduced.ts). Passes run
// after differentiation, so these only matter for graphs optimized by hand and then differentiated.
import type { Node } from '../../ir/node.js';
import { cast, mul, neg, op, reduce, sub, unsqueeze } from '../ops.js';
import type { OpNode } from '../../ir/registry.js';
import type { GradRule, GradTableFor } from './types.js';

/**
 * loss = -sum(t * log_softmax(x)) over `axis`:
 * d/dx = g * (softmax(x) * sum(t) - t),  d/dt = -g * log_softmax(x).
 */
const softmaxXentGrad: GradRule<OpNode<'softmax_cross_entropy'>> = (n, g) => {
  const [x, t] = n.inputs as [Node, Node];
  const axis = n.attrs.axis;
  const xf = cast(x, n.dtype);
  const tf = cast(t, n.dtype);
  const shifted = sub(xf, reduce('max', xf, [axis], true));
  const logSum = op('log', reduce('sum', op('exp', shifted), [axis], true));
  const logp = sub(shifted, logSum);
  const gk = unsqueeze(g, [axis]);
  const dx = mul(gk, sub(mul(op('exp', logp), reduce('sum', tf, [axis], true)), tf));
  const dt = neg(mul(gk, logp));
  return [x.dtype === n.dtype ? dx : cast(dx, x.dtype), t.dtype === n.dtype ? dt : cast(dt, t.dtype)];
};

export const optimizerGrads: GradTableFor<'fused' | 'softmax_cross_entropy'> = {
  fused: { unsupported: 'fused nodes exist only in compiled graphs (the fusion pass runs after differentiation)' },
  softmax_cross_entropy: softmaxXentGrad,
};
