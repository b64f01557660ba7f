// Independent references for the convolution tests: TensorFlow.js (cpu backend, float32) on
// the same inputs, plus small array utilities (layout transposes, zero-dilated kernels,
// strided subsampling) used to reach forms TensorFlow.js lacks.
import * as tf from '@tensorflow/tfjs';
import { NDArray, sizeOf, stridesOf } from '../../src/ir/ndarray.js';
import type { Node } from '../../src/ir/node.js';
import type { OpCase } from '../helpers/table.js';

let ready: Promise<boolean> | undefined;
/** Selects TensorFlow.js' cpu backend once (call from a `before` hook). */
export function tfReady(): Promise<boolean> {
  ready ??= tf.setBackend('cpu');
  return ready;
}

export { tf };

/** Deterministic pseudo-random values in [-1, 1) (a small LCG), float64. */
export function rand(shape: number[], seed: number): NDArray {
  let s = seed * 2654435761 % 4294967296;
  const out = new Float64Array(sizeOf(shape));
  for (let i = 0; i < out.length; i++) {
    s = (s * 1664525 + 1013904223) % 4294967296;
    out[i] = Math.round((s / 4294967296) * 2000 - 1000) / 1000;
  }
  return new NDArray(out, shape, 'float64');
}

/** Runs `f` on TensorFlow.js tensors made from the arrays and returns the result as float64. */
export function viaTf(f: (...ts: tf.Tensor[]) => tf.Tensor, ...xs: NDArray[]): NDArray {
  const ts = xs.map((x) => tf.tensor(Array.from(x.data), [...x.shape], 'float32'));
  const r = tf.tidy(() => f(...ts));
  const out = new NDArray(Array.from(r.dataSync()), r.shape, 'float64');
  tf.dispose([...ts, r]);
  return out;
}

/** Axis permutation of an array (out axis i is in axis perm[i]). */
export function permute(x: NDArray, perm: number[]): NDArray {
  const shape = perm.map((p) => x.shape[p]!);
  const st = stridesOf(x.shape);
  const out = new Float64Array(x.size);
  const idx = new Array<number>(shape.length).fill(0);
  for (let i = 0; i < out.length; i++) {
    let off = 0;
    for (let d = 0; d < shape.length; d++) off += idx[d]! * st[perm[d]!]!;
    out[i] = x.data[off]!;
    for (let d = shape.length - 1; d >= 0; d--) {
      if (++idx[d]! < shape[d]!) break;
      idx[d] = 0;
    }
  }
  return new NDArray(out, shape, x.dtype);
}

/** channels_first (N, C, S...) -> channels_last (N, S..., C) and back. */
export const toLast = (x: NDArray): NDArray => permute(x, [0, ...x.shape.slice(2).map((_, i) => i + 2), 1]);
export const toFirst = (x: NDArray): NDArray => permute(x, [0, x.ndim - 1, ...x.shape.slice(2).map((_, i) => i + 1)]);

/**
 * A kernel (K..., in, out) with dilation - 1 zeros inserted between taps: convolving with it
 * undilated equals convolving with the original at that dilation (same extent, same padding).
 */
export function dilateKernel(w: NDArray, dil: number[]): NDArray {
  const d = dil.length;
  const shape = w.shape.map((k, i) => (i < d ? dil[i]! * (k - 1) + 1 : k));
  const out = new Float64Array(sizeOf(shape));
  const ost = stridesOf(shape);
  const idx = new Array<number>(w.ndim).fill(0);
  for (let i = 0; i < w.size; i++) {
    let off = 0;
    for (let a = 0; a < w.ndim; a++) off += (a < d ? idx[a]! * dil[a]! : idx[a]!) * ost[a]!;
    out[off] = w.data[i]!;
    for (let a = w.ndim - 1; a >= 0; a--) {
      if (++idx[a]! < w.shape[a]!) break;
      idx[a] = 0;
    }
  }
  return new NDArray(out, shape, w.dtype);
}

/** Zero padding of the spatial axes 1..d of channels-last data: pads[i] = [before, after]. */
export function padSpatial(x: NDArray, pads: [number, number][]): NDArray {
  return viaTf((t) => tf.pad(t, [[0, 0], ...pads, [0, 0]]), x);
}

/** TensorFlow.js computes in float32. */
export const TOL = { atol: 2e-5, rtol: 1e-4 };
export type Dims = (number | null)[];

/** A table row whose expected value comes from an independent computation (TensorFlow.js). */
export function tfRow(name: string, inputs: NDArray[], shapes: Dims[], build: (...xs: Node[]) => Node, expected: (...xs: NDArray[]) => NDArray, staticShape: Dims): OpCase {
  return { name, inputs, shapes, build, expected, staticShape, tol: TOL };
}
