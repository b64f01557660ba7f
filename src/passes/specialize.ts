// specialize: replace general ops by cheaper special cases (Theano's `specialize` phase).
// pow(x, 2) -> x*x and friends: exact or within an ulp of pow, and far cheaper than Math.pow.
// The squared norm of an outer product from its factors: see sumSquareOuter.
import { apply } from '../ir/build.js';
import { isFloat } from '../ir/dtype.js';
import type { Node } from '../ir/node.js';
import { rule } from './pattern.js';
import { rewrite, rewritePass, type Rewrite } from './rewrite.js';

/** The operands of a product a*b whose result has `p`'s rank: mul, or dot over one element ((m, 1) . (1, n)). */
function productOperands(p: Node): [Node, Node] | undefined {
  if (p.op === 'mul') return p.inputs as [Node, Node];
  if (p.op === 'dot') {
    const [a, b] = p.inputs as [Node, Node];
    if (a.ndim === 2 && b.ndim === 2 && a.shape[1] === 1 && b.shape[0] === 1) return [a, b];
  }
  return undefined;
}

/** The squared value's base: square(p) or p*p. */
function squared(s: Node): Node | undefined {
  if (s.op === 'square') return s.inputs[0];
  if (s.op === 'mul' && s.inputs[0] === s.inputs[1]) return s.inputs[0];
  return undefined;
}

/**
 * sum((a*b)^2, R) = sum(a^2, Ra) * sum(b^2, Rb) where every reduced axis is broadcast (static
 * size 1) in a or in b: Ra the reduced axes where a is not, Rb where b is not. It is exact over
 * the reals; in floating point it sums |Ra| + |Rb| terms instead of |Ra| * |Rb|, so the error
 * bound shrinks (gamma_{|Ra|+|Rb|+1} against gamma_{|Ra||Rb|}). This is the per-example gradient
 * norm of DP-SGD (Goodfellow 2015; Opacus' and JAX's per-sample clipping): ||x_i (x) d_i||^2 =
 * ||x_i||^2 ||d_i||^2, so the outer products are never formed. Float dtypes only, one dtype.
 */
const sumSquareOuter = rewrite('sum_square_outer', ['sum'], (n) => {
  const p = squared(n.inputs[0]!);
  const ab = p === undefined ? undefined : productOperands(p);
  if (p === undefined || ab === undefined || !isFloat(n.dtype)) return undefined;
  const [a, b] = ab;
  if (a.dtype !== n.dtype || b.dtype !== n.dtype || p.dtype !== n.dtype) return undefined;
  const r = p.ndim;
  const reduced = [...new Set(n.attrs.axes.map((x) => (x < 0 ? x + r : x)))].sort((x, y) => x - y);
  // the size of output axis i in operand t (right-aligned broadcasting), null where unknown
  const size = (t: Node, i: number) => (i < r - t.ndim ? 1 : t.shape[i - (r - t.ndim)]!);
  const ra: number[] = [];
  const rb: number[] = [];
  for (const i of reduced) {
    const [sa, sb] = [size(a, i), size(b, i)];
    if (sa !== 1 && sb !== 1) return undefined;
    if (sa !== 1) ra.push(i);
    else if (sb !== 1) rb.push(i);
  }
  if (ra.length === 0 || rb.length === 0) return undefined; // nothing factors out
  const part = (t: Node, axes: readonly number[]) =>
    apply('sum', [apply('square', [t])], { axes: axes.map((i) => i - (r - t.ndim)), keepdims: true });
  let out = apply('mul', [part(a, ra), part(b, rb)]);
  if (n.attrs.keepdims !== true) for (const i of [...reduced].reverse()) out = apply('squeeze', [out], { axis: i });
  return out;
});

export const specializeRules: readonly Rewrite[] = [
  rule({ name: 'pow_two', from: '(pow ?x 2)', to: '(mul ?x ?x)' }),
  rule({ name: 'pow_three', from: '(pow ?x 3)', to: '(mul (mul ?x ?x) ?x)' }),
  rule({ name: 'pow_half', from: '(pow ?x 0.5)', to: '(sqrt ?x)' }),
  rule({ name: 'pow_minus_one', from: '(pow ?x -1)', to: '(reciprocal ?x)' }),
  rule({ name: 'pow_minus_half', from: '(pow ?x -0.5)', to: '(reciprocal (sqrt ?x))' }),
  sumSquareOuter,
];

export const specializePass = rewritePass(
  'specialize',
  'pow(x, 2|3|0.5|-1|-0.5) as multiplications, sqrt and reciprocal; sum((a*b)^2) of an outer product as sum(a^2) * sum(b^2)',
  specializeRules,
);
