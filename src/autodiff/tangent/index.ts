// The tangent (forward-mode) rule of every built-in op, keyed by op name. Typed TangentTable (one
// entry per OpName), so an op added to the registry without a tangent rule is a type error, as for
// the gradient table (JAX's per-primitive jvp rules; Theano's R_op).
import { apply } from '../../ir/build.js';
import type { Node } from '../../ir/node.js';
import type { OpNode } from '../../ir/registry.js';
import { reduceOps, type ReductionName } from '../../ir/ops/reduce.js';
import { gradRules } from '../rules/index.js';
import { ctcNoDerivative } from '../rules/ctc.js';
import { extremumWeights, prodPartials } from '../rules/reduce.js';
import type { GradRule } from '../rules/types.js';
import { cumsumOf, div, mul, reduce } from '../ops.js';
import { castTangent, elementwiseTangents, whereTangent } from './elementwise.js';
import { bilinear, linearIn, passThrough, viaReverse } from './linear.js';
import { scanTangent } from './scan.js';
import type { TangentEntry, TangentRule, TangentTable } from './types.js';

const FN = 'autodiff.Rop';

type Reduction = OpNode<ReductionName>;
/** A reduction's tangent: sum over its axes of t times each element's partial derivative. */
const weighted =
  (partials: (n: Reduction) => Node): TangentRule<Reduction> =>
  (n, [t]) =>
    t ? reduce('sum', mul(t, partials(n)), n.attrs.axes, n.attrs.keepdims) : null;

/**
 * The reductions' tangents, by the row's family: linear for sums and means, each element's
 * weight for the extrema (ties share it, as the gradient), its partial for a product (the fold by
 * multiplication), none for the logical folds.
 */
function reductionTangents(): Record<ReductionName, TangentEntry<Reduction>> {
  return Object.fromEntries(
    Object.values(reduceOps).map((r) => [
      r.name,
      r.family === 'logical'
        ? 'none'
        : r.family === 'extremum'
          ? weighted(extremumWeights)
          : r.spelling.combine === 'mul'
            ? weighted(prodPartials)
            : linear0,
    ]),
  ) as Record<ReductionName, TangentEntry<Reduction>>;
}

/** Max pooling: the tangent at each window's selected element; average pooling is linear. */
const poolTangent: TangentRule<OpNode<'pool'>> = (n, [t]) => {
  if (!t) return null;
  return n.attrs.mode === 'max'
    ? apply('pool_select', [n.inputs[0]!, t], n.attrs, FN)
    : apply('pool', [t], n.attrs, FN);
};

const linear0 = linearIn(0);
const fromGradient = (op: 'softmax_cross_entropy' | 'ctc_loss') => viaReverse(gradRules[op] as GradRule);

export const tangentRules: TangentTable = {
  placeholder: 'leaf',
  variable: 'leaf',
  constant: 'leaf',
  learning_phase: 'leaf',
  scan_arg: 'leaf',
  cast: castTangent,
  identity: passThrough,
  reshape: linear0,
  transpose: linear0,
  dot: bilinear(0, 1),
  shape_of: 'none',
  fill_like: 'none',
  index: linear0,
  where: whereTangent,
  ...elementwiseTangents,
  ...reductionTangents(),
  argmax: 'none',
  argmin: 'none',
  conv: bilinear(0, 1),
  conv_transpose: bilinear(0, 1),
  conv_kernel_grad: bilinear(0, 1),
  pool: poolTangent,
  // Both are linear in their second input for a fixed x (x only chooses where values go).
  pool_grad: linearIn(1),
  pool_select: linearIn(1),
  slice: linear0,
  pad: linear0,
  concat: linearIn(),
  gather: linear0,
  tile: linear0,
  repeat_elements: linear0,
  expand_dims: linear0,
  squeeze: linear0,
  merge_axes: linear0,
  specify_shape: linear0,
  batch_dot: bilinear(0, 1),
  reshape_dims: linear0,
  tile_dims: linear0,
  untile_dims: linear0,
  slice_dims: linear0,
  unslice_dims: linear0,
  fill_dims: 'none',
  arange_dims: 'none',
  unslice: linear0,
  concat_part: linear0,
  scatter_add_rows: linear0,
  untile: linear0,
  unrepeat: linear0,
  sum_to_like: linear0,
  broadcast_like: linear0,
  reshape_like: linear0,
  unsqueeze: linear0,
  scatter_index: linear0,
  stop_gradient: 'none',
  // The tangent of the identity map each computes forwards passes through (Theano: a ViewOp's R_op);
  // grad_scale scales it as its gradient, so zero_grad (scale 0) has a zero tangent as Theano's ZeroGrad.
  grad_clip: passThrough,
  grad_scale: (n, [t]) => (t ? mul(t, n.attrs.scale) : null),
  cumsum: linear0,
  // out_j = prod_{i <= j} x_i: d out_j = out_j sum_{i <= j} dx_i / x_i (divides by x, as the gradient does)
  cumprod: (n, [t]) => (t ? mul(n, cumsumOf(div(t, n.inputs[0]!), n.attrs.axis)) : null),
  in_top_k: 'none',
  print: passThrough,
  random_uniform: 'none',
  random_normal: 'none',
  truncated_normal: 'none',
  random_binomial: 'none',
  scan: scanTangent,
  // The walker itself reads a tuple_get's tangent from its tuple's item.
  tuple_get: 'none',
  ctc_loss: fromGradient('ctc_loss'),
  ...ctcNoDerivative,
  fused: { unsupported: 'fused nodes exist only in compiled graphs (the fusion pass runs after differentiation)' },
  softmax_cross_entropy: fromGradient('softmax_cross_entropy'),
};
