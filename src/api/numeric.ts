// Composite math: logsumexp, var/std, clip, and the cumulative ops. Built from primitives
// (DESIGN: few primitives); the passes recognise the patterns that need a fused form.
import { apply } from '../ir/build.js';
import { ValueError } from '../ir/errors.js';
import { describe } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import { checkAxes, checkInt, lit, operands, options, toTensor, type TensorLike } from './args.js';

type AxisArg = number | readonly number[] | null;
type ReduceOpts = { axis?: AxisArg; keepdims?: boolean };

function reduceArgs(fn: string, x: TensorLike, axis: AxisArg | ReduceOpts | undefined, keepdims: boolean | undefined) {
  const t = toTensor(fn, x);
  const o = options<{ axis: AxisArg; keepdims: boolean }>(fn, [axis, keepdims], ['axis', 'keepdims']);
  if (o.keepdims !== undefined && typeof o.keepdims !== 'boolean')
    throw new ValueError(`${fn}: keepdims must be a boolean, got ${describe(o.keepdims)}`);
  return { t, axes: checkAxes(fn, o.axis, t.ndim), keepdims: o.keepdims === true };
}

/**
 * The max over `axes`, replaced by 0 where it is infinite: shifting by an infinite max would
 * turn x - max into NaN (a row of -inf, or one +inf). `m - m` is 0 exactly when m is finite.
 * The result does not depend on the shift, so no gradient flows through it (as TensorFlow).
 */
function finiteMax(fn: string, t: Node, axes: number[], keepdims: boolean): Node {
  const F = `K.${fn}`;
  const m = apply('max', [t], { axes, keepdims }, F);
  const zero = lit(fn, 0, m);
  const finite = apply('equal', [apply('sub', [m, m], {}, F), zero], {}, F);
  return apply('stop_gradient', [apply('where', [finite, m, zero], {}, F)], {}, F);
}

/** log(sum(exp(x), axis)) computed as m + log(sum(exp(x - m))), m the (finite) max: no overflow. */
export function logsumexp(x: TensorLike, axis?: AxisArg | ReduceOpts, keepdims?: boolean): Node {
  const { t, axes, keepdims: kd } = reduceArgs('logsumexp', x, axis, keepdims);
  const F = 'K.logsumexp';
  const shift = finiteMax('logsumexp', t, axes, true);
  const s = apply('sum', [apply('exp', [apply('sub', [t, shift], {}, F)], {}, F)], { axes, keepdims: kd }, F);
  const outShift = kd ? shift : finiteMax('logsumexp', t, axes, false);
  return apply('add', [apply('log', [s], {}, F), outShift], {}, F);
}

/** Population variance (ddof 0), as Keras: mean(square(x - mean(x, keepdims))). */
export function variance(x: TensorLike, axis?: AxisArg | ReduceOpts, keepdims?: boolean): Node {
  const { t, axes, keepdims: kd } = reduceArgs('var', x, axis, keepdims);
  return varianceOf('var', t, axes, kd);
}

export function varianceOf(fn: string, t: Node, axes: number[], keepdims: boolean): Node {
  const F = `K.${fn}`;
  const m = apply('mean', [t], { axes, keepdims: true }, F);
  const d = apply('sub', [t, m], {}, F);
  return apply('mean', [apply('square', [d], {}, F)], { axes, keepdims }, F);
}

/** sqrt(var(x)). */
export function std(x: TensorLike, axis?: AxisArg | ReduceOpts, keepdims?: boolean): Node {
  const { t, axes, keepdims: kd } = reduceArgs('std', x, axis, keepdims);
  return apply('sqrt', [varianceOf('std', t, axes, kd)], {}, 'K.std');
}

function cumulative(op: 'cumsum' | 'cumprod') {
  return (x: TensorLike, axis: number | { axis?: number } = 0): Node => {
    const t = toTensor(op, x);
    const o = options<{ axis: number }>(op, [axis], ['axis']);
    if (t.ndim === 0) throw new ValueError(`${op}: x must have rank >= 1, got a scalar`);
    const [a] = checkAxes(op, checkInt(op, o.axis === undefined ? 0 : o.axis, 'axis'), t.ndim);
    return apply(op, [t], { axis: a! }, `K.${op}`);
  };
}
/** Running sum along `axis` (default 0), inclusive. */
export const cumsum = cumulative('cumsum');
/** Running product along `axis` (default 0), inclusive. */
export const cumprod = cumulative('cumprod');

/**
 * clip(x, min_value, max_value): elementwise into [min, max]. As Keras: a null bound is
 * unbounded, and when both bounds are numbers with max < min, max becomes min.
 */
export function clip(x: TensorLike, min_value?: TensorLike | null, max_value?: TensorLike | null): Node {
  const F = 'K.clip';
  const lo = min_value ?? null;
  let hi = max_value ?? null;
  for (const [v, what] of [
    [lo, 'min_value'],
    [hi, 'max_value'],
  ] as const) {
    if (typeof v === 'number' && Number.isNaN(v)) throw new ValueError(`clip: ${what} is NaN`);
  }
  if (typeof lo === 'number' && typeof hi === 'number' && hi < lo) hi = lo;
  let t = toTensor('clip', x);
  if (lo !== null) t = apply('maximum', operands('clip', t, lo, ['x', 'min_value']), {}, F);
  if (hi !== null) t = apply('minimum', operands('clip', t, hi, ['x', 'max_value']), {}, F);
  return t;
}
