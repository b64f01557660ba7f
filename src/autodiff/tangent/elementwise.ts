// Tangent rules of elementwise ops: the output's tangent is the sum over inputs of tangent times
// partial derivative (the dual-number rule). The walker broadcasts the result to the output.
import type { Node } from '../../ir/node.js';
import type { elementwiseOps } from '../../ir/ops/elementwise.js';
import { NO_DERIVATIVE, diagonalTangents } from '../rules/elementwise.js';
import { add, cast, div, mul, neg, op, sub, where } from '../ops.js';
import { bilinear, linearIn, zerosLike } from './linear.js';
import type { TangentRule, TangentTableFor } from './types.js';

type Name = keyof typeof elementwiseOps;

/** t * f'(x), with f' given the input and the output. */
const chain =
  (d: (x: Node, out: Node) => Node): TangentRule =>
  (n, [t]) =>
    t ? mul(t, d(n.inputs[0]!, n)) : null;

/** The sum of the terms present: each input's tangent through its partial derivative. */
function sumOf(...terms: (Node | null)[]): Node | null {
  const present = terms.filter((t): t is Node => t !== null);
  return present.length === 0 ? null : present.reduce((a, b) => add(a, b));
}
const term = (t: Node | null | undefined, f: (t: Node) => Node): Node | null => (t ? f(t) : null);

/** Step functions have zero derivative almost everywhere (as their gradient rules). */
const zero: TangentRule = () => null;

/** maximum/minimum: the tangent of the input chosen, ties going to x (the gradient's convention). */
const select =
  (cmp: 'greater_equal' | 'less_equal'): TangentRule =>
  (n, ts) => {
    const [x, y] = n.inputs as [Node, Node];
    return where(op(cmp, x, y), ts[0] ?? zerosLike(x), ts[1] ?? zerosLike(y));
  };

export const elementwiseTangents: TangentTableFor<Name> = {
  // the unary float ops: each one's tangent is its gradient rule on the tangent (../rules/elementwise.ts)
  ...diagonalTangents,
  add: (_, [tx, ty]) => sumOf(tx ?? null, ty ?? null),
  sub: (_, [tx, ty]) => sumOf(tx ?? null, term(ty, neg)),
  mul: bilinear(0, 1),
  // d(x/y) = dx/y - (x/y) dy/y
  div: (n, [tx, ty]) => {
    const [, y] = n.inputs as [Node, Node];
    return sumOf(
      term(tx, (t) => div(t, y)),
      term(ty, (t) => neg(div(mul(t, n), y))),
    );
  },
  // d(x^a) = a x^(a-1) dx + x^a log(x) da
  pow: (n, [tx, ta]) => {
    const [x, a] = n.inputs as [Node, Node];
    return sumOf(
      term(tx, (t) => mul(t, mul(a, op('pow', x, sub(a, 1))))),
      term(ta, (t) => mul(t, mul(n, op('log', x)))),
    );
  },
  // mod(x, y) = x - y floor(x / y)
  mod: (n, [tx, ty]) => {
    const [x, y] = n.inputs as [Node, Node];
    return sumOf(
      tx ?? null,
      term(ty, (t) => neg(mul(t, op('floor', div(x, y))))),
    );
  },
  maximum: select('greater_equal'),
  minimum: select('less_equal'),
  neg: linearIn(0),
  abs: chain((x) => op('sign', x)),
  sign: zero,
  square: chain((x) => mul(x, 2)),
  floor: zero,
  ceil: zero,
  round: zero,
  ...NO_DERIVATIVE,
};

/** where(c, a, b): the tangent of the branch chosen; the condition has none. */
export const whereTangent: TangentRule = (n, ts) => {
  const [, a, b] = n.inputs as [Node, Node, Node];
  if (!ts[1] && !ts[2]) return null;
  return where(n.inputs[0]!, ts[1] ?? zerosLike(a), ts[2] ?? zerosLike(b));
};

/** cast: the tangent in the new dtype; none into an integer or bool result. */
export const castTangent: TangentRule = (n, [t]) => (t && n.dtype.startsWith('float') ? cast(t, n.dtype) : null);
