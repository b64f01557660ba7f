// Neural-network helpers: l2_normalize, bias_add, batch normalization, in_top_k. Compositions
// of primitives except in_top_k (a counting op with no elementwise form).
import { apply } from '../ir/build.js';
import { ShapeError, ValueError } from '../ir/errors.js';
import { NDArray, describe, formatShape } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import type { Dim } from '../ir/types.js';
import { checkAxes, checkInt, constantNode, lit, operands, options, toTensor, type TensorLike } from './args.js';
import { image_data_format } from './config.js';
import { varianceOf } from './numeric.js';

/** A static target shape for `reshape`: unknown dims become -1, at most one of them. */
export function reshapeTarget(fn: string, dims: readonly Dim[], what: string, original: readonly Dim[]): number[] {
  if (dims.filter((d) => d === null).length > 1) {
    throw new ShapeError(
      `${fn}: ${what} has shape ${formatShape(original)}, with more than one unknown dim; give it a known shape`,
    );
  }
  return dims.map((d) => d ?? -1);
}

/** x / sqrt(max(sum(x^2, axis), 1e-12)) (TensorFlow's l2_normalize; axis null = all axes). */
export function l2_normalize(
  x: TensorLike,
  axis?: number | readonly number[] | null | { axis?: number | readonly number[] | null },
): Node {
  const fn = 'l2_normalize';
  const F = 'K.l2_normalize';
  const t = toTensor(fn, x);
  const o = options<{ axis: number | readonly number[] | null }>(fn, [axis], ['axis']);
  const axes = checkAxes(fn, o.axis ?? null, t.ndim);
  const ss = apply('sum', [apply('square', [t], {}, F)], { axes, keepdims: true }, F);
  const floor = toTensor(fn, 1e-12, 'epsilon', ss.dtype);
  return apply('div', [t, apply('sqrt', [apply('maximum', [ss, floor], {}, F)], {}, F)], {}, F);
}

const DATA_FORMATS = ['channels_first', 'channels_last'] as const;
type DataFormat = (typeof DATA_FORMATS)[number];

export function checkDataFormat(fn: string, v: unknown): DataFormat {
  if (v === undefined || v === null) return image_data_format();
  if (!DATA_FORMATS.includes(v as DataFormat)) {
    throw new ValueError(
      `${fn}: unknown data_format ${typeof v === 'string' ? JSON.stringify(v) : describe(v)} (allowed: "channels_first", "channels_last")`,
    );
  }
  return v as DataFormat;
}

/**
 * bias_add(x, bias, data_format), Keras' rules: bias has rank 1 (one value per channel) or rank
 * ndim(x) - 1 (channel and spatial dims). For rank-3..5 x, channels_first puts the channel on
 * axis 1; a full-rank bias is reshaped as Keras does: `(1,) + bias.shape` for channels_last,
 * `(1, bias.shape[-1]) + bias.shape[:-1]` for channels_first (a reshape, not a transpose).
 * Other ranks add a rank-1 bias along the last axis.
 */
export function bias_add(
  x: TensorLike,
  bias: TensorLike,
  data_format?: string | null | { data_format?: string | null },
): Node {
  const fn = 'bias_add';
  const F = 'K.bias_add';
  const [t, b] = operands(fn, x, bias, ['x', 'bias']);
  const o = options<{ data_format: string | null }>(fn, [data_format], ['data_format']);
  const df = checkDataFormat(fn, o.data_format);
  const r = t.ndim;
  if (r < 2) throw new ShapeError(`${fn}: x must have rank >= 2, got shape ${formatShape(t.shape)}`);
  if (b.ndim !== 1 && b.ndim !== r - 1) {
    throw new ShapeError(
      `${fn}: unexpected bias dimensions ${b.ndim} (bias shape ${formatShape(b.shape)}), expected 1 or ${r - 1} for x of shape ${formatShape(t.shape)}`,
    );
  }
  const first = df === 'channels_first' && r >= 3 && r <= 5;
  if (r > 5 && b.ndim !== 1) {
    throw new ShapeError(
      `${fn}: a bias of rank ${b.ndim} needs x of rank 3 to 5; for x of shape ${formatShape(t.shape)} give a rank-1 bias`,
    );
  }
  let target: readonly Dim[];
  if (b.ndim === 1) {
    const c = b.shape[0]!;
    target = first ? [1, c, ...new Array<Dim>(r - 2).fill(1)] : [...new Array<Dim>(r - 1).fill(1), c];
  } else {
    target = first ? [1, b.shape[r - 2]!, ...b.shape.slice(0, r - 2)] : [1, ...b.shape];
  }
  const chAxis = first ? 1 : r - 1;
  const have = t.shape[chAxis]!;
  const want = target[chAxis]!;
  if (have !== null && want !== null && have !== want) {
    throw new ShapeError(
      `${fn}: bias of shape ${formatShape(b.shape)} gives ${want} channels but x of shape ${formatShape(t.shape)} has ${have} on axis ${chAxis} (${df})`,
    );
  }
  const rb = apply('reshape', [b], { shape: reshapeTarget(fn, target, 'bias', b.shape) }, F);
  return apply('add', [t, rb], {}, F);
}

type Maybe = TensorLike | null | undefined;

type BNOpts = { axis?: number; epsilon?: number };

/**
 * batch_normalization(x, mean, var, beta, gamma, axis=-1, epsilon=1e-3), Keras 2.3's signature:
 * (x - mean) / sqrt(var + epsilon) * gamma + beta; a null gamma or beta is left out. Keras 2.0
 * had no axis (its 6th parameter was epsilon): a 6th positional number that is not a valid axis of
 * x (an integer in [-ndim, ndim)) is read as epsilon, so 2.0 calls keep working. As Keras 2.3 on
 * TensorFlow, for a 4-D x with axis 1/-3 (NCHW) or 3/-1 (NHWC) the parameters are flattened and laid
 * along that axis (its fused_batch_norm path); otherwise they broadcast against x as given.
 */
export function batch_normalization(
  x: TensorLike,
  mean: TensorLike,
  variance: TensorLike,
  beta: Maybe,
  gamma: Maybe,
  axis?: number | BNOpts,
  epsilon?: number | BNOpts,
): Node {
  const fn = 'batch_normalization';
  const F = `K.${fn}`;
  const t = toTensor(fn, x);
  let given: unknown[] = [axis, epsilon];
  const validAxis = (a: unknown): boolean => typeof a === 'number' && Number.isInteger(a) && a >= -t.ndim && a < t.ndim;
  // Keras 2.0: batch_normalization(x, mean, var, beta, gamma, epsilon)
  if (
    typeof axis === 'number' &&
    !validAxis(axis) &&
    (epsilon === undefined || (typeof epsilon === 'object' && epsilon !== null))
  )
    given = [undefined, axis, epsilon];
  const o = options<{ axis: number; epsilon: number }>(fn, given, ['axis', 'epsilon']);
  const eps = o.epsilon ?? 1e-3;
  if (typeof eps !== 'number' || !(eps >= 0))
    throw new ValueError(`${fn}: epsilon must be a non-negative number, got ${describe(eps)}`);
  const ax = o.axis ?? -1;
  if (!validAxis(ax))
    throw new ValueError(
      `${fn}: axis ${describe(ax)} is not an axis of x ${formatShape(t.shape)} (allowed: integers ${-t.ndim}..${t.ndim - 1})`,
    );
  const a = ax < 0 ? ax + t.ndim : ax;
  if (t.ndim === 4 && (a === 1 || a === 3)) {
    // Keras 2.3's fused path: each parameter reshaped to (-1) and placed on the channel axis.
    const target = [1, 1, 1, 1];
    target[a] = -1;
    const lay = (p: Maybe, what: string): Maybe => {
      if (p === null || p === undefined) return p;
      const n = toTensor(fn, p, what, t.dtype);
      if (n.ndim === 0) return n;
      const c = t.shape[a]!;
      const size = n.shape.every((d) => d !== null) ? n.shape.reduce((q, d) => q! * d!, 1) : null;
      if (c !== null && size !== null && size !== c) {
        throw new ShapeError(
          `${fn}: ${what} of shape ${formatShape(n.shape)} has ${size} entries but x ${formatShape(t.shape)} has ${c} channels on axis ${a}`,
        );
      }
      return apply('reshape', [n], { shape: target }, F);
    };
    return normalize(fn, t, lay(mean, 'mean')!, lay(variance, 'var')!, lay(beta, 'beta'), lay(gamma, 'gamma'), eps);
  }
  return normalize(fn, t, mean, variance, beta, gamma, eps);
}

function normalize(
  fn: string,
  t: Node,
  mean: TensorLike,
  variance: TensorLike,
  beta: Maybe,
  gamma: Maybe,
  eps: number,
): Node {
  const F = `K.${fn}`;
  const [, m] = operands(fn, t, mean, ['x', 'mean']);
  const [, v] = operands(fn, t, variance, ['x', 'var']);
  const sd = apply('sqrt', [apply('add', [v, lit(fn, eps, v)], {}, F)], {}, F);
  let y = apply('div', [apply('sub', [t, m], {}, F), sd], {}, F);
  if (gamma !== null && gamma !== undefined) y = apply('mul', operands(fn, y, gamma, ['x', 'gamma']), {}, F);
  if (beta !== null && beta !== undefined) y = apply('add', operands(fn, y, beta, ['x', 'beta']), {}, F);
  return y;
}

/**
 * Batch statistics over `reduction_axes` (population variance) and x normalized with them.
 * Returns [normed, mean, var]; mean and var have x's shape without the reduction axes. gamma and
 * beta have that shape too (or x's rank, already broadcastable), as in Keras.
 */
export function normalize_batch_in_training(
  x: TensorLike,
  gamma: Maybe,
  beta: Maybe,
  reduction_axes: readonly number[],
  epsilon?: number | { epsilon?: number },
): [Node, Node, Node] {
  const fn = 'normalize_batch_in_training';
  const F = `K.${fn}`;
  const t = toTensor(fn, x);
  if (!Array.isArray(reduction_axes) && typeof reduction_axes !== 'number') {
    throw new ValueError(`${fn}: reduction_axes must be a list of axes, got ${describe(reduction_axes)}`);
  }
  const axes = checkAxes(fn, reduction_axes, t.ndim);
  const o = options<{ epsilon: number }>(fn, [epsilon], ['epsilon']);
  const eps = o.epsilon ?? 1e-3;
  if (typeof eps !== 'number' || !(eps >= 0))
    throw new ValueError(`${fn}: epsilon must be a non-negative number, got ${describe(eps)}`);
  const meanK = apply('mean', [t], { axes, keepdims: true }, F);
  const varK = varianceOf(fn, t, axes, true);
  const spread = (p: Maybe, what: string): Maybe => {
    if (p === null || p === undefined) return p;
    const n = toTensor(fn, p, what, t.dtype);
    if (n.ndim === t.ndim) return n;
    if (n.ndim !== t.ndim - axes.length) {
      throw new ShapeError(
        `${fn}: ${what} has shape ${formatShape(n.shape)}; expected rank ${t.ndim - axes.length} (x ${formatShape(t.shape)} without reduction axes ${JSON.stringify(axes)}) or rank ${t.ndim}`,
      );
    }
    const dims: Dim[] = [];
    let k = 0;
    for (let i = 0; i < t.ndim; i++) dims.push(axes.includes(i) ? 1 : n.shape[k++]!);
    return apply('reshape', [n], { shape: reshapeTarget(fn, dims, what, n.shape) }, F);
  };
  const normed = normalize(fn, t, meanK, varK, spread(beta, 'beta'), spread(gamma, 'gamma'), eps);
  return [normed, apply('mean', [t], { axes, keepdims: false }, F), varianceOf(fn, t, axes, false)];
}

/**
 * Whether targets[i] is among the k highest predictions[i] (ties at the boundary count as in);
 * predictions (batch, classes), targets (batch,) integers; k < 1 gives all false.
 */
export function in_top_k(predictions: TensorLike, targets: TensorLike, k: number): Node {
  const fn = 'in_top_k';
  const kk = checkInt(fn, k, 'k');
  const p = toTensor(fn, predictions, 'predictions');
  // nested arrays of class ids become int32, not floatx
  const t = Array.isArray(targets)
    ? constantNode(NDArray.from(targets, 'int32', `${fn}: targets`))
    : toTensor(fn, targets, 'targets', 'int32');
  return apply('in_top_k', [p, t], { k: kk }, 'K.in_top_k');
}
