// stabilize: rewrites that change how a value is computed so it stays finite and accurate
// where the naive formula overflows or cancels (Theano's `stabilize` phase). These are the
// only rewrites allowed to change results, and only toward the mathematically exact value.
import { apply } from '../ir/build.js';
import { NDArray } from '../ir/ndarray.js';
import { isFloat } from '../ir/dtype.js';
import type { Node } from '../ir/node.js';
import { isOp } from '../ir/registry.js';
import { rule } from './pattern.js';
import { rewrite, rewritePass, type Rewrite } from './rewrite.js';

const scalar = (v: number, like: Node) => apply('constant', [], { value: new NDArray([v], [], like.dtype) });
function axesOf(n: Node): readonly number[] {
  if (!isOp(n, 'sum', 'max')) throw new Error(`internal: stabilize reads the axes of a sum or max, got ${n.op}`);
  return n.attrs.axes;
}
const sameAxes = (a: Node, b: Node) =>
  axesOf(a).length === axesOf(b).length && axesOf(a).every((x, i) => x === axesOf(b)[i]);
const keeps = (n: Node) => n.attrs['keepdims'] === true;

/** `x - max(x, axes, keepdims)` (possibly the finite-safe max below): already shifted. */
function isShifted(y: Node, axes?: Node): boolean {
  if (y.op !== 'sub') return false;
  const [x, m] = y.inputs as [Node, Node];
  const max = m.op === 'where' ? m.inputs[1]! : m;
  return max.op === 'max' && max.inputs[0] === x && keeps(max) && (axes === undefined || sameAxes(max, axes));
}

/** max(x) with non-finite maxima replaced by 0, so x - m is never inf - inf (TensorFlow's reduce_logsumexp). */
function safeMax(x: Node, axes: readonly number[]): Node {
  const m = apply('max', [x], { axes, keepdims: true });
  const finite = apply('equal', [apply('sub', [m, m]), scalar(0, m)]);
  return apply('where', [finite, m, scalar(0, m)]);
}

/** x - max(x) over `axes` (kept), unless x is that already. */
function shifted(x: Node, axes: readonly number[]): Node {
  if (isShifted(x)) return x;
  return apply('sub', [x, apply('max', [x], { axes, keepdims: true })]);
}

/** The softmax composition of src/api: div(exp(y), sum(exp(y), axes, keepdims=true)); returns y and the sum. */
export function matchSoftmax(p: Node): { y: Node; sum: Node } | undefined {
  if (p.op !== 'div') return undefined;
  const [e, s] = p.inputs as [Node, Node];
  if (e.op !== 'exp' || s.op !== 'sum' || !keeps(s) || s.inputs[0] !== e) return undefined;
  return { y: e.inputs[0]!, sum: s };
}

/** log(softmax(y)) = y' - log(sum(exp(y'))) with y' = y - max(y): no exp overflow, no log(0). */
export function logSoftmax(y: Node, axes: readonly number[]): Node {
  const ys = shifted(y, axes);
  const s = apply('sum', [apply('exp', [ys])], { axes, keepdims: true });
  return apply('sub', [ys, apply('log', [s])]);
}

const logSoftmaxRule = rewrite('log_softmax', ['log'], (n) => {
  const sm = matchSoftmax(n.inputs[0]!);
  return sm === undefined ? undefined : logSoftmax(sm.y, axesOf(sm.sum));
});

/**
 * Keras' crossentropy without from_logits rescales the softmax by its row sum and clips it to
 * [eps, 1 - eps] before the log. Of a softmax, the rescale is the identity and the clip only
 * bounds the loss where the exact value is larger: like TensorFlow's Keras (which hands the
 * softmax's logits to softmax_cross_entropy_with_logits), the log goes straight to log-softmax.
 */
function unclip(c: Node): Node | undefined {
  if (c.op === 'clip') return c.inputs[0];
  if ((c.op === 'minimum' || c.op === 'maximum') && c.inputs.length === 2) {
    const [a, b] = c.inputs as [Node, Node];
    const inner = b.op === 'constant' ? a : a.op === 'constant' ? b : undefined;
    if (inner === undefined) return undefined;
    const other = c.op === 'minimum' ? 'maximum' : 'minimum';
    if (inner.op === other && inner.inputs.some((i) => i.op === 'constant'))
      return inner.inputs.find((i) => i.op !== 'constant');
  }
  return undefined;
}

const clippedLogSoftmaxRule = rewrite('log_clipped_softmax', ['log'], (n) => {
  const r = unclip(n.inputs[0]!);
  if (r === undefined || r.op !== 'div') return undefined;
  const [p, s] = r.inputs as [Node, Node];
  const sm = matchSoftmax(p);
  if (sm === undefined || s.op !== 'sum' || s.inputs[0] !== p || !keeps(s) || !sameAxes(s, sm.sum)) return undefined;
  return logSoftmax(sm.y, axesOf(sm.sum));
});

/** log(sum(exp(y), axes, keepdims)) with the sum over `axes` kept: returns y. */
function logSumExpOf(lg: Node, axes: Node): Node | undefined {
  if (lg.op !== 'log') return undefined;
  const se = lg.inputs[0]!;
  if (se.op !== 'sum' || !sameAxes(se, axes) || !keeps(se) || se.inputs[0]!.op !== 'exp') return undefined;
  return se.inputs[0]!.inputs[0];
}

/** The logits x when `l` is log_softmax(x) over `axes`, in either form this codebase builds. */
function logSoftmaxLogits(l: Node, axes: Node): Node | undefined {
  if (l.op !== 'sub') return undefined;
  const [a, b] = l.inputs as [Node, Node];
  // (x - m) - log(sum(exp(x - m))): the stabilize rewrite of log(softmax(x))
  if (isShifted(a, axes) && logSumExpOf(b, axes) === a) return a.inputs[0];
  // x - (log(sum(exp(x - m))) + m): K.logsumexp, as the crossentropies from logits use it
  if (b.op === 'add') {
    for (const [lg, m] of [
      [b.inputs[0]!, b.inputs[1]!],
      [b.inputs[1]!, b.inputs[0]!],
    ] as const) {
      const y = logSumExpOf(lg, axes);
      if (y !== undefined && y.op === 'sub' && y.inputs[0] === a && y.inputs[1] === m && isShifted(y, axes)) return a;
    }
  }
  return undefined;
}

/** -sum(t * log_softmax(x), axis) over one axis becomes the single op softmax_cross_entropy(x, t). */
const softmaxXentRule = rewrite('softmax_cross_entropy', ['neg'], (n) => {
  const s = n.inputs[0]!;
  if (s.op !== 'sum' || keeps(s) || axesOf(s).length !== 1) return undefined;
  const m = s.inputs[0]!;
  if (m.op !== 'mul') return undefined;
  for (const [t, l] of [
    [m.inputs[0]!, m.inputs[1]!],
    [m.inputs[1]!, m.inputs[0]!],
  ] as const) {
    const x = logSoftmaxLogits(l, s);
    if (x === undefined || t.ndim !== x.ndim) continue;
    return apply('softmax_cross_entropy', [x, t], { axis: axesOf(s)[0]! });
  }
  return undefined;
});

/** log(sum(exp(x))) = m + log(sum(exp(x - m))), m = max(x) (0 where the max is not finite). */
const logSumExpRule = rewrite('logsumexp', ['log'], (n) => {
  const s = n.inputs[0]!;
  if (s.op !== 'sum' || s.inputs[0]!.op !== 'exp') return undefined;
  const x = s.inputs[0]!.inputs[0]!;
  if (isShifted(x)) return undefined;
  const axes = axesOf(s);
  const m = safeMax(x, axes);
  const inner = apply('sum', [apply('exp', [apply('sub', [x, m])])], s.attrs);
  const mOut = keeps(s) ? m : apply('sum', [m], { axes, keepdims: false }); // drops the kept size-1 axes exactly
  return apply('add', [mOut, apply('log', [inner])]);
});

export const stabilizeRules: readonly Rewrite[] = [
  // Integer 1 + x wraps on overflow (the reference's meaning): only float x are rewritten.
  rule({ name: 'log1p', from: '(log (add 1 ?x))', to: '(log1p ?x)', when: (b) => isFloat(b.get('x')!.dtype) }),
  rule({ name: 'expm1', from: '(sub (exp ?x) 1)', to: '(expm1 ?x)' }),
  rule({ name: 'log_exp', from: '(log (exp ?x))', to: '?x' }),
  rule({ name: 'log_sigmoid', from: '(log (sigmoid ?x))', to: '(neg (softplus (neg ?x)))' }),
  rule({ name: 'log_one_minus_sigmoid', from: '(log (sub 1 (sigmoid ?x)))', to: '(neg (softplus ?x))' }),
  logSoftmaxRule,
  clippedLogSoftmaxRule,
  softmaxXentRule,
  logSumExpRule,
];

export const stabilizePass = rewritePass(
  'stabilize',
  'log1p, expm1, log-sigmoid, log-softmax, softmax crossentropy as one op, max-shifted logsumexp',
  stabilizeRules,
);
