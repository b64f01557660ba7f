// Window geometry on tfjs for the convolution and pooling kernels: the padded input, and
// the strided view a window offset ("tap") reads, with its adjoint. Shapes are channels-last:
// (N, S..., C).
import { geometry, padsFor, type Geometry, type WindowAttrs } from '../../../ir/ops/window.js';
import type { TF } from '../load.js';
import type { Tensor } from '../types.js';
import { spread } from './shape.js';
import { sizeOf } from '../../../ir/ndarray.js';

/**
 * The window geometry of ir/ops/window.ts (sizes, attrs, padding before) with what the tfjs
 * kernels add for one evaluation: the rank, both pads per axis, padded sizes and the taps.
 */
export interface Geo extends Geometry {
  readonly d: number;
  readonly pads: [number, number][];
  readonly padded: number[];
  readonly taps: number[][];
}

export function geo(n: number, inSize: readonly number[], window: readonly number[], a: WindowAttrs): Geo {
  const d = inSize.length;
  const pads = inSize.map((s, i) => padsFor(s, window[i]!, a.strides[i]!, a.dilation[i]!, a.padding));
  const taps: number[][] = [[]];
  for (const k of window) {
    const next: number[][] = [];
    for (const t of taps) for (let j = 0; j < k; j++) next.push([...t, j]);
    taps.splice(0, taps.length, ...next);
  }
  return {
    ...geometry(n, inSize, window, a),
    d,
    pads,
    padded: inSize.map((s, i) => s + pads[i]![0] + pads[i]![1]),
    taps,
  };
}

export function padSpatial(tf: TF, x: Tensor, g: Geo, value = 0): Tensor {
  if (g.pads.every(([b, e]) => b === 0 && e === 0)) return x;
  return tf.pad(x, [[0, 0], ...g.pads, [0, 0]], value);
}

/** The view tap_t of a padded (N, P..., C) tensor: (N, O..., C). */
export function tap(tf: TF, xpad: Tensor, g: Geo, t: readonly number[]): Tensor {
  const n = xpad.shape[0]!;
  const c = xpad.shape[g.d + 1]!;
  const begin = [0, ...t.map((j, i) => j * g.a.dilation[i]!), 0];
  const end = [n, ...t.map((j, i) => j * g.a.dilation[i]! + (g.outSize[i]! - 1) * g.a.strides[i]! + 1), c];
  return tf.stridedSlice(xpad, begin, end, [1, ...g.a.strides, 1]);
}

/** The adjoint of `tap`: y (N, O..., C) placed where tap_t read, zeros elsewhere, shape (N, P..., C). */
export function untap(tf: TF, y: Tensor, g: Geo, t: readonly number[]): Tensor {
  let v = y;
  for (let i = 0; i < g.d; i++) if (g.a.strides[i]! > 1) v = spread(tf, v, i + 1, g.a.strides[i]!);
  const pads = t.map((j, i): [number, number] => {
    const before = j * g.a.dilation[i]!;
    return [before, g.padded[i]! - before - v.shape[i + 1]!];
  });
  return tf.pad(v, [[0, 0], ...pads, [0, 0]]);
}

/** A padded (N, P..., C) tensor cropped back to the unpadded input (N, S..., C). */
export function crop(tf: TF, xpad: Tensor, g: Geo): Tensor {
  if (g.pads.every(([b, e]) => b === 0 && e === 0)) return xpad;
  const begin = [0, ...g.pads.map(([b]) => b), 0];
  const size = [-1, ...g.padded.map((p, i) => p - g.pads[i]![0] - g.pads[i]![1]), -1];
  return tf.slice(xpad, begin, size);
}

export function sumAll(tf: TF, ts: Tensor[]): Tensor {
  return ts.length === 1 ? ts[0]! : tf.addN(ts);
}

/**
 * Non-overlapping windows (strides equal to the window, no dilation): the padded input
 * reshaped so each output cell's window is the last axis, (N, O..., C, K), taps in row-major
 * window order. One reshape and one transpose instead of one strided view per tap.
 */
export function isTiling(g: Geo, window: readonly number[]): boolean {
  return g.a.dilation.every((s) => s === 1) && g.a.strides.every((s, i) => s === window[i]);
}

export function blocks(tf: TF, x: Tensor, g: Geo, window: readonly number[], fill = 0): Tensor {
  const d = g.d;
  const n = x.shape[0]!;
  const c = x.shape[d + 1]!;
  let v = padSpatial(tf, x, g, fill);
  const used = g.outSize.map((o, i) => o * window[i]!);
  if (used.some((u, i) => u !== g.padded[i]))
    v = tf.slice(
      v,
      v.shape.map(() => 0),
      [n, ...used, c],
    );
  const split = [n, ...g.outSize.flatMap((o, i) => [o, window[i]!]), c];
  // (N, O1, k1, ..., Od, kd, C) -> (N, O1..Od, C, k1..kd)
  const perm = [0, ...g.outSize.map((_, i) => 1 + 2 * i), 1 + 2 * d, ...g.outSize.map((_, i) => 2 + 2 * i)];
  const k = sizeOf(window);
  return tf.reshape(tf.transpose(tf.reshape(v, split), perm), [n, ...g.outSize, c, k]);
}

/** The adjoint of `blocks`: (N, O..., C, K) back to (N, S..., C), cells outside every window 0. */
export function unblocks(tf: TF, y: Tensor, g: Geo, window: readonly number[]): Tensor {
  const d = g.d;
  const n = y.shape[0]!;
  const c = y.shape[d + 1]!;
  const split = [n, ...g.outSize, c, ...window];
  // (N, O1..Od, C, k1..kd) -> (N, O1, k1, ..., Od, kd, C)
  const perm = [0, ...g.outSize.flatMap((_, i) => [1 + i, 2 + d + i]), 1 + d];
  const used = g.outSize.map((o, i) => o * window[i]!);
  let v = tf.reshape(tf.transpose(tf.reshape(y, split), perm), [n, ...used, c]);
  if (used.some((u, i) => u !== g.padded[i]))
    v = tf.pad(v, [[0, 0], ...used.map((u, i): [number, number] => [0, g.padded[i]! - u]), [0, 0]]);
  return crop(tf, v, g);
}
