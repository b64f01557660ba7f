// Shared helpers for reference implementations: index arithmetic over row-major arrays.
import { allocate, type DType } from '../dtype.js';
import { NDArray, formatShape, sizeOf, stridesOf, type Shape } from '../ndarray.js';
import { InferError } from '../errors.js';

/** Runtime broadcast of concrete shapes (the static check may have let unknown dims through). */
export function broadcastConcrete(shapes: readonly Shape[]): number[] {
  const rank = Math.max(0, ...shapes.map((s) => s.length));
  const out = new Array<number>(rank).fill(1);
  for (const s of shapes) {
    for (let k = 1; k <= s.length; k++) {
      const d = s[s.length - k]!;
      const o = out[rank - k]!;
      if (d === 1) continue;
      if (o !== 1 && o !== d) {
        throw new InferError(
          `shapes ${shapes.map((x) => formatShape(x)).join(' and ')} cannot be broadcast: axis -${k} has ${o} and ${d}`,
        );
      }
      out[rank - k] = d;
    }
  }
  return out;
}

/** Strides of `shape` viewed inside `out` (right-aligned), 0 on broadcast dims. */
export function broadcastStrides(shape: Shape, out: Shape): number[] {
  const st = stridesOf(shape);
  const r = new Array<number>(out.length).fill(0);
  const off = out.length - shape.length;
  for (let i = 0; i < shape.length; i++) r[off + i] = shape[i] === 1 ? 0 : st[i]!;
  return r;
}

/** Applies `f` elementwise over broadcast inputs; results are computed in float64 and stored as `dtype`. */
export function mapBroadcast(inputs: readonly NDArray[], dtype: DType, f: (...xs: number[]) => number): NDArray {
  const shape = broadcastConcrete(inputs.map((a) => a.shape));
  const n = sizeOf(shape);
  const out = new Float64Array(n);
  const k = inputs.length;
  const strides = inputs.map((a) => broadcastStrides(a.shape, shape));
  const rank = shape.length;
  const idx = new Array<number>(rank).fill(0);
  const offs = new Array<number>(k).fill(0);
  const args = new Array<number>(k);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < k; j++) args[j] = inputs[j]!.data[offs[j]!]!;
    out[i] = f(...args);
    // advance the multi-index (odometer), updating each input's offset
    for (let d = rank - 1; d >= 0; d--) {
      idx[d]!++;
      for (let j = 0; j < k; j++) offs[j] = offs[j]! + strides[j]![d]!;
      if (idx[d]! < shape[d]!) break;
      for (let j = 0; j < k; j++) offs[j] = offs[j]! - strides[j]![d]! * shape[d]!;
      idx[d] = 0;
    }
  }
  return new NDArray(out, shape, dtype);
}

/** Offset of a multi-index in a row-major array of `shape`. */
export function offsetOf(index: readonly number[], strides: readonly number[]): number {
  let o = 0;
  for (let i = 0; i < index.length; i++) o += index[i]! * strides[i]!;
  return o;
}

/** Calls `f(index)` for every multi-index of `shape` in row-major order (index array reused). */
export function forEachIndex(shape: Shape, f: (index: number[], flat: number) => void): void {
  const n = sizeOf(shape);
  const idx = new Array<number>(shape.length).fill(0);
  for (let i = 0; i < n; i++) {
    f(idx, i);
    for (let d = shape.length - 1; d >= 0; d--) {
      idx[d]!++;
      if (idx[d]! < shape[d]!) break;
      idx[d] = 0;
    }
  }
}

/** A new array of `shape` whose element at each index is `f(index)`. */
export function generate(shape: Shape, dtype: DType, f: (index: number[]) => number): NDArray {
  const out = new Float64Array(sizeOf(shape));
  forEachIndex(shape, (idx, i) => {
    out[i] = f(idx);
  });
  return new NDArray(out, shape, dtype);
}

export function emptyLike(shape: Shape, dtype: DType): NDArray {
  return new NDArray(allocate(dtype, sizeOf(shape)), shape, dtype);
}
