// IEEE half precision (binary16) bits and float32 values: the host holds float16 as float32
// values rounded to half precision (dtype.ts); ONNX initializers and tensors and WebGPU's f16
// buffers hold the 16 bits.

const word = new Float32Array(1);
const wordBits = new Uint32Array(word.buffer);

/** The half bits of a float32 value's bits `u` (round to nearest even; NaN stays NaN, overflow is infinity). */
export function halfOfFloatBits(u: number): number {
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

/** The half bits of `x` (rounded first to float32, then to nearest even). */
export function toHalfBits(x: number): number {
  word[0] = x;
  return halfOfFloatBits(wordBits[0]!);
}

/** The value of half bits `h`. */
export function fromHalfBits(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 0x1f) return m !== 0 ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}
