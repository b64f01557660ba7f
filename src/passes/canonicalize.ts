// canonicalize: algebraic identities that only remove work, plus constant folding, to a fixed
// point (Theano runs them together). Every replacement must keep the node's exact type (the
// engine checks), so `x * 1` stays when the 1 broadcasts x to a larger shape or a wider dtype.
import { apply } from '../ir/build.js';
import { NDArray } from '../ir/ndarray.js';
import { isOp } from '../ir/registry.js';
import { reductionNames } from '../ir/ops/reduce.js';
import { isFullyKnown } from '../ir/types.js';
import { foldRule } from './constant-fold.js';
import { commuteRule } from './merge.js';
import { rule } from './pattern.js';
import { rewrite, rewritePass, type Rewrite } from './rewrite.js';

/** Identities written as data. */
export const algebraicRules: readonly Rewrite[] = [
  rule({ name: 'mul_one', from: '(mul ?x 1)', to: '?x' }),
  rule({ name: 'add_zero', from: '(add ?x 0)', to: '?x' }),
  rule({ name: 'sub_zero', from: '(sub ?x 0)', to: '?x' }),
  rule({ name: 'zero_sub', from: '(sub 0 ?x)', to: '(neg ?x)' }),
  rule({ name: 'div_one', from: '(div ?x 1)', to: '?x' }),
  rule({ name: 'pow_one', from: '(pow ?x 1)', to: '?x' }),
  rule({ name: 'mul_minus_one', from: '(mul ?x -1)', to: '(neg ?x)' }),
  rule({ name: 'neg_neg', from: '(neg (neg ?x))', to: '?x' }),
  rule({ name: 'abs_abs', from: '(abs (abs ?x))', to: '(abs ?x)' }),
  // For unsigned dtypes neg wraps (neg(3) is 253 in uint8), so |−x| is not |x| there.
  rule({
    name: 'abs_neg',
    from: '(abs (neg ?x))',
    to: '(abs ?x)',
    when: (b) => b.get('x')!.dtype !== 'uint8' && b.get('x')!.dtype !== 'bool',
  }),
  rule({ name: 'not_not', from: '(logical_not (logical_not ?x))', to: '?x' }),
  rule({ name: 'identity', from: '(identity ?x)', to: '?x' }),
  // Gradients are built before the optimizer runs, so in the graph being compiled this is the identity.
  rule({ name: 'stop_gradient', from: '(stop_gradient ?x)', to: '?x' }),
  rule({ name: 'grad_clip', from: '(grad_clip ?x)', to: '?x' }),
  rule({ name: 'grad_scale', from: '(grad_scale ?x)', to: '?x' }),
  rule({ name: 'where_same', from: '(where ?c ?x ?x)', to: '?x' }),
];

const castSame = rewrite('cast_same', ['cast'], (n) =>
  n.inputs[0]!.dtype === n.attrs.dtype ? n.inputs[0] : undefined,
);

/** transpose(transpose(x, p), q) = transpose(x, p∘q); the identity permutation disappears. */
const transposeRule = rewrite('transpose_transpose', ['transpose'], (n) => {
  const q = n.attrs.perm;
  const x = n.inputs[0]!;
  if (q.every((p, i) => p === i)) return x;
  if (!isOp(x, 'transpose')) return undefined;
  const p = x.attrs.perm;
  const perm = q.map((i) => p[i]!);
  const inner = x.inputs[0]!;
  return perm.every((v, i) => v === i) ? inner : apply('transpose', [inner], { perm });
});

/** reshape(reshape(x)) = reshape(x); a reshape to the shape x already has is x. */
const reshapeRule = rewrite('reshape_chain', ['reshape'], (n) => {
  const target = n.attrs.shape;
  const x = n.inputs[0]!;
  const holes = target.filter((d) => d === -1).length;
  // Every other dim equal (and sizes equal): the -1 dim, if any, equals x's dim too.
  if (x.ndim === target.length && holes <= 1 && target.every((d, i) => d === x.shape[i] || d === -1)) return x;
  if (x.op === 'reshape') return apply('reshape', [x.inputs[0]!], n.attrs);
  return undefined;
});

/** The shape of a tensor whose static shape is fully known is a constant. */
const shapeOfRule = rewrite('shape_of_static', ['shape_of'], (n) => {
  const s = n.inputs[0]!.shape;
  return isFullyKnown(s) ? apply('constant', [], { value: new NDArray([...s], [s.length], 'int32') }) : undefined;
});

/** A reduction over no axes is the identity (when it keeps the dtype; the engine checks). */
const emptyReduceRule = rewrite('reduce_no_axes', reductionNames, (n) =>
  n.attrs.axes.length === 0 ? n.inputs[0] : undefined,
);

export const canonicalRules: readonly Rewrite[] = [
  foldRule,
  commuteRule,
  ...algebraicRules,
  castSame,
  transposeRule,
  reshapeRule,
  shapeOfRule,
  emptyReduceRule,
];

export const canonicalizePass = rewritePass(
  'canonicalize',
  'algebraic identities (x*1, x+0, neg(neg x), transpose/reshape chains, identity) and constant folding, to a fixed point',
  canonicalRules,
);
