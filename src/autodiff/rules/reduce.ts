// Gradient rules of reductions: the cotangent is re-expanded over the reduced axes.
import type { Node } from '../../ir/node.js';
import type { OpNode } from '../../ir/registry.js';
import type { reduceOps } from '../../ir/ops/reduce.js';
import { isFullyKnown } from '../../ir/types.js';
import { broadcastTo, div, mul, op, reduce, scalar, sub, unsqueeze, where, cast } from '../ops.js';
import { apply } from '../../ir/build.js';
import type { GradRule, GradTableFor } from './types.js';
import { sizeOf } from '../../ir/ndarray.js';

type Name = keyof typeof reduceOps;
type Reduction = OpNode<Name>;

/** g of a reduction, with its reduced axes back (size 1) and then broadcast to x's shape. */
function expand(n: Reduction, g: Node): Node {
  const a = n.attrs;
  const kept = a.keepdims ? g : unsqueeze(g, a.axes);
  return broadcastTo(kept, n.inputs[0]!);
}

/** The output with its reduced axes back, for comparisons with x. */
function expandOut(n: Reduction): Node {
  const a = n.attrs;
  return a.keepdims ? n : unsqueeze(n, a.axes);
}

/** Number of reduced elements: a constant when static shapes know it. */
function count(n: Reduction): Node {
  const x = n.inputs[0]!;
  const a = n.attrs;
  const dims = a.axes.map((i) => x.shape[i]!);
  if (isFullyKnown(dims)) return scalar(sizeOf(dims), n.dtype);
  const ones = apply('fill_like', [x], { value: 1, dtype: n.dtype }, 'K.gradients');
  return reduce('sum', ones, a.axes, true);
}

/**
 * max/min: the cotangent goes to the elements equal to the extremum, split equally between ties
 * (a subgradient; Theano gives each tie the whole gradient, TensorFlow picks one).
 */
const extremum: GradRule<Reduction> = (n, g) => [mul(expand(n, g), extremumWeights(n))];

/** max/min: each element's share of the extremum (1/ties where it equals it, else 0), x's shape. */
export function extremumWeights(n: Reduction): Node {
  const x = n.inputs[0]!;
  const hit = cast(op('equal', x, expandOut(n)), x.dtype);
  return div(hit, reduce('sum', hit, n.attrs.axes, true));
}

/**
 * prod: d/dx_i = prod_{j != i} x_j, computed without dividing by zero: with no zero it is
 * p / x_i; with exactly one zero only that element gets the product of the others; with more, 0.
 */
export function prodPartials(n: Reduction): Node {
  const x = n.inputs[0]!;
  const a = n.attrs;
  const isZero = op('equal', x, 0);
  const zeros = reduce('sum', cast(isZero, x.dtype), a.axes, true);
  const nonzero = where(isZero, 1, x);
  const pNonzero = reduce('prod', nonzero, a.axes, true);
  const noZero = div(pNonzero, nonzero);
  const oneZero = where(isZero, pNonzero, 0);
  return where(op('equal', zeros, 0), noZero, where(op('equal', zeros, 1), oneZero, 0));
}

export const reduceGrads: GradTableFor<Name> = {
  sum: (n, g) => [expand(n, g)],
  mean: (n, g) => [div(expand(n, g), count(n))],
  max: extremum,
  min: extremum,
  prod: (n, g) => [mul(expand(n, g), prodPartials(n))],
  any: 'none',
  all: 'none',
};

void sub;
