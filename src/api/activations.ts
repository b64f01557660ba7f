// Activations. sigmoid and softplus are elementwise primitives (each has a stable scalar form);
// the rest are compositions, so the passes see their structure (relu's maximum, softmax's
// max-shift) and fuse them.
import { apply } from '../ir/build.js';
import { ValueError } from '../ir/errors.js';
import { describe, formatShape } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import { checkAxes, lit, options, toTensor, unary, type TensorLike } from './args.js';
import { clip } from './numeric.js';
import { markSoftmax } from './argorder.js';

function num(fn: string, v: unknown, what: string): number {
  if (typeof v !== 'number' || Number.isNaN(v))
    throw new ValueError(`${fn}: ${what} must be a number, got ${describe(v)}`);
  return v;
}

/** 1 / (1 + e^-x), evaluated without overflow for either sign. */
export const sigmoid = unary('sigmoid', 'sigmoid');
/** log(1 + e^x), as max(x, 0) + log1p(e^-|x|). */
export const softplus = unary('softplus', 'softplus');

/** x / (1 + |x|). */
export function softsign(x: TensorLike): Node {
  const t = toTensor('softsign', x);
  const F = 'K.softsign';
  return apply('div', [t, apply('add', [lit('softsign', 1, t), apply('abs', [t], {}, F)], {}, F)], {}, F);
}

/** clip(0.2 x + 0.5, 0, 1): Keras' piecewise-linear sigmoid. */
export function hard_sigmoid(x: TensorLike): Node {
  const t = toTensor('hard_sigmoid', x);
  const F = 'K.hard_sigmoid';
  const lin = apply('add', [apply('mul', [t, lit('hard_sigmoid', 0.2, t)], {}, F), lit('hard_sigmoid', 0.5, t)], {}, F);
  return clip(lin, 0, 1);
}

type ReluOpts = { alpha?: number; max_value?: number | null; threshold?: number };

/**
 * x above `th`, else 0, as where(x <= th, 0, x): NaN passes through, and the gradient at x = th is
 * 0, as tf.nn.relu's (maximum(x, 0) would send it to x on the tie). Exact zeros are common (zero
 * image backgrounds, relu of relu, zero-initialised biases), so the tie decides training curves.
 */
function above(t: Node, th: Node, zero: Node): Node {
  return apply('where', [apply('less_equal', [t, th], {}, 'K.relu'), zero, t], {}, 'K.relu');
}

/**
 * relu(x, alpha = 0, max_value = null, threshold = 0), Keras 2.3: x for x > threshold, clipped to
 * [0, max_value]; below the threshold 0, minus the leak alpha * (threshold - x). The leak is not
 * clipped (Keras subtracts it after the clip). Both parts have TensorFlow's zero gradient at the
 * threshold (Keras builds them from tf.nn.relu and x * (x > threshold)).
 */
export function relu(x: TensorLike, alpha?: number | ReluOpts, max_value?: number | null, threshold?: number): Node {
  const fn = 'relu';
  const F = 'K.relu';
  const t = toTensor(fn, x);
  const o = options<{ alpha: number; max_value: number | null; threshold: number }>(
    fn,
    [alpha, max_value, threshold],
    ['alpha', 'max_value', 'threshold'],
  );
  const a = num(fn, o.alpha === undefined ? 0 : o.alpha, 'alpha');
  const th = num(fn, o.threshold === undefined ? 0 : o.threshold, 'threshold');
  const mx = o.max_value === undefined || o.max_value === null ? null : num(fn, o.max_value, 'max_value');
  const zero = lit(fn, 0, t);
  let y = above(t, th === 0 ? zero : lit(fn, th, t), zero);
  if (mx !== null) y = clip(y, 0, mx);
  if (a !== 0) {
    // alpha * relu(threshold - x)
    const below = th === 0 ? apply('neg', [t], {}, F) : apply('sub', [lit(fn, th, t), t], {}, F);
    const leak = apply('mul', [lit(fn, a, t), above(below, zero, zero)], {}, F);
    y = apply('sub', [y, leak], {}, F);
  }
  return y;
}

/** x for x > 0, alpha * (e^x - 1) otherwise; the exp sees min(x, 0) so the unused branch never overflows. */
export function elu(x: TensorLike, alpha?: number | { alpha?: number }): Node {
  const fn = 'elu';
  const F = 'K.elu';
  const t = toTensor(fn, x);
  const o = options<{ alpha: number }>(fn, [alpha], ['alpha']);
  const a = num(fn, o.alpha === undefined ? 1 : o.alpha, 'alpha');
  const zero = lit(fn, 0, t);
  const neg = apply('expm1', [apply('minimum', [t, zero], {}, F)], {}, F);
  const scaled = a === 1 ? neg : apply('mul', [neg, lit(fn, a, neg)], {}, F);
  return apply('where', [apply('greater', [t, zero], {}, F), t, scaled], {}, F);
}

/**
 * softmax along `axis` (default the last): exp(x - max) / sum(exp(x - max)), the max shift
 * keeping exp from overflowing. As Keras' activation, a tensor of rank < 2 is an error.
 */
export function softmax(x: TensorLike, axis?: number | { axis?: number }): Node {
  const fn = 'softmax';
  const F = 'K.softmax';
  const t = toTensor(fn, x);
  const o = options<{ axis: number }>(fn, [axis], ['axis']);
  if (t.ndim < 2)
    throw new ValueError(
      `softmax: cannot apply softmax to a tensor of rank ${t.ndim} (shape ${formatShape(t.shape)}); it needs rank >= 2`,
    );
  if (Array.isArray(o.axis)) throw new ValueError(`softmax: axis must be one integer, got ${describe(o.axis)}`);
  const axes = checkAxes(fn, o.axis ?? -1, t.ndim);
  // softmax does not depend on the shift, so no gradient flows through it
  const m = apply('stop_gradient', [apply('max', [t], { axes, keepdims: true }, F)], {}, F);
  const e = apply('exp', [apply('sub', [t, m], {}, F)], {}, F);
  return markSoftmax(apply('div', [e, apply('sum', [e], { axes, keepdims: true }, F)], {}, F));
}
