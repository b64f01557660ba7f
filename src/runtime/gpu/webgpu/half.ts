// float16 values between the host and f16 device buffers: the host holds float16 as float32
// values already rounded to half precision (src/ir/dtype.ts), the device as IEEE half bits.
// Buffers are padded to an even length: WebGPU writes and copies buffers in 4-byte words.
import type { DType } from '../../../ir/dtype.js';
import { NDArray } from '../../../ir/ndarray.js';
import type { Storage } from '../../../codegen/wgsl/scalar.js';

/** The half bits of each of `data`'s values (round to nearest even; already-rounded values convert exactly), padded to an even length. */
export function toHalfArray(data: ArrayLike<number>): Uint16Array {
  const n = data.length;
  const f = Float32Array.from(data);
  const u = new Uint32Array(f.buffer);
  const out = new Uint16Array(n + (n % 2));
  for (let i = 0; i < n; i++) out[i] = halfOfBits(u[i]!);
  return out;
}

function halfOfBits(u: number): number {
  const sign = (u >>> 16) & 0x8000;
  const exp = (u >>> 23) & 0xff;
  let mant = u & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    let r = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    if (rem > half || (rem === half && (r & 1) === 1)) r++;
    return sign | r;
  }
  let r = mant >>> 13;
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (r & 1) === 1)) {
    r++;
    if (r === 0x400) {
      r = 0;
      e++;
      if (e >= 0x1f) return sign | 0x7c00;
    }
  }
  return sign | (e << 10) | r;
}

let table: Float32Array | undefined;

/** The values of `n` half bits from the start of `bytes`, as float32. */
export function fromHalfBytes(bytes: ArrayBuffer, n: number): Float32Array {
  if (table === undefined) {
    table = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) {
      const s = h & 0x8000 ? -1 : 1;
      const e = (h >>> 10) & 0x1f;
      const m = h & 0x3ff;
      table[h] =
        e === 0 ? s * m * 2 ** -24 : e === 0x1f ? (m !== 0 ? NaN : s * Infinity) : s * (1 + m / 1024) * 2 ** (e - 15);
    }
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
