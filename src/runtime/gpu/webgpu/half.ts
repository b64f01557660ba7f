// float16 values between the host and f16 device buffers: the host holds float16 as float32
// values already rounded to half precision (src/ir/dtype.ts), the device as IEEE half bits.
// Buffers are padded to an even length: WebGPU writes and copies buffers in 4-byte words.
import type { DType } from '../../../ir/dtype.js';
import { NDArray } from '../../../ir/ndarray.js';
import { fromHalfBits, halfOfFloatBits } from '../../../ir/half.js';
import type { Storage } from '../../../codegen/wgsl/scalar.js';

/** The half bits of each of `data`'s values (round to nearest even; already-rounded values convert exactly), padded to an even length. */
export function toHalfArray(data: ArrayLike<number>): Uint16Array {
  const n = data.length;
  const f = Float32Array.from(data);
  const u = new Uint32Array(f.buffer);
  const out = new Uint16Array(n + (n % 2));
  for (let i = 0; i < n; i++) out[i] = halfOfFloatBits(u[i]!);
  return out;
}

let table: Float32Array | undefined;

/** The values of `n` half bits from the start of `bytes`, as float32. */
export function fromHalfBytes(bytes: ArrayBuffer, n: number): Float32Array {
  if (table === undefined) {
    table = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) table[h] = fromHalfBits(h);
  }
  const bits = new Uint16Array(bytes, 0, n);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = table[bits[i]!]!;
  return out;
}

/** Bytes rounded up to whole 4-byte words (WebGPU's buffer sizes, writes and copies). */
export const paddedBytes = (b: number): number => Math.ceil(b / 4) * 4;

/** A read-back of `n` elements of storage `ty` as the host holds `dtype`. */
export function fromDevice(dtype: DType, ty: Storage | undefined, bytes: ArrayBuffer, n: number): NDArray {
  const raw =
    ty === 'f16' ? fromHalfBytes(bytes, n) : ty === 'f32' ? new Float32Array(bytes, 0, n) : new Int32Array(bytes, 0, n);
  return new NDArray(raw, [n], dtype);
}

/** A host value as an upload into storage `ty` (f16: half bits, padded to an even length). */
export function toDevice(ty: Storage | undefined, data: ArrayLike<number>): Float32Array | Int32Array | Uint16Array {
  return ty === 'f16' ? toHalfArray(data) : ty === 'f32' ? new Float32Array(data) : new Int32Array(data);
}
