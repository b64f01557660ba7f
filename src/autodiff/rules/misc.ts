// Gradient rules of the cumulative ops, in_top_k, print and the random draws.
import type { Node } from '../../ir/node.js';
import type { cumulativeOps } from '../../ir/ops/misc.js';
import type { randomOps } from '../../ir/ops/random.js';
import { apply } from '../../ir/build.js';
import { add, div, mul, sub } from '../ops.js';
import type { GradRule, GradTableFor } from './types.js';

const FN = 'K.gradients';

/**
 * Suffix sums along the axis, s_i = sum_{j >= i} g_j, as total - prefix + g_i: the inclusive
 * prefix sum excludes nothing but the terms before i. (No `reverse` op is needed, and the result
 * is again differentiable, so second derivatives work.)
 */
function suffixSum(g: Node, axis: number): Node {
  const total = apply('sum', [g], { axes: [axis], keepdims: true }, FN);
  return add(sub(total, apply('cumsum', [g], { axis }, FN)), g);
}

export const cumulativeGrads: GradTableFor<keyof typeof cumulativeOps> = {
  /** out_j = sum_{i <= j} x_i, so dx_i = sum_{j >= i} g_j. */
  cumsum: (n, g) => [suffixSum(g, n.attrs.axis)],
  /**
   * out_j = prod_{i <= j} x_i, so dx_i = sum_{j >= i} g_j out_j / x_i (TensorFlow's formula).
   * Like TensorFlow's, it divides by x: a zero in x gives a non-finite gradient.
   */
  cumprod: (n, g) => [div(suffixSum(mul(g, n), n.attrs.axis), n.inputs[0]!)],
};

export const miscGrads: { in_top_k: 'none'; print: GradRule } = {
  in_top_k: 'none',
  /** The identity; the gradient graph does not print. */
  print: (_, g) => [g],
};

/** Random draws depend on no differentiable input (their inputs are integer run-time dims). */
export const randomGrads: Record<keyof typeof randomOps, 'none'> = {
  random_uniform: 'none',
  random_normal: 'none',
  truncated_normal: 'none',
  random_binomial: 'none',
};
