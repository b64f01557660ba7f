// The random ops' numbers as one scalar function of (element index, key), called per element
// inside kernels. It is the same computation as the reference's (src/ir/random.ts: Philox-4x32-10,
// then the op's transform), written as a single self-contained function because exportModule
// copies a kernel's scalar functions by their source text (no imports, no helpers outside it).
// test/codegen/kernels-data.test.ts checks it bit for bit against src/ir/random.ts.

/** Which transform of the four Philox words: the op's draw (src/ir/ops/random.ts). */
export const DRAW = { uniform: 0, normal: 1, binomial: 2, truncated: 3 } as const;

/**
 * Element `i` of a random tensor. kind: DRAW.*; (k0, k1, stream): the RandomKey; (a, b): low/high,
 * mean/stddev, or p (in a); bits: a uniform's mantissa bits (53, 24 or 11).
 */
export function philoxDraw(
  kind: number,
  i: number,
  k0: number,
  k1: number,
  stream: number,
  a: number,
  b: number,
  bits: number,
): number {
  // No inner functions: a build tool may wrap them in helpers the exported text cannot see.
  const attempts = kind === 3 ? 64 : 1;
  for (let t = 0; t < attempts; t++) {
    // Philox-4x32-10 of counter (i low, i high, attempt, stream) under key (k0, k1): four uint32 words.
    let x0 = i >>> 0,
      x1 = Math.floor(i / 0x100000000) >>> 0,
      x2 = t >>> 0,
      x3 = stream >>> 0;
    let key0 = k0 >>> 0,
      key1 = k1 >>> 0;
    for (let r = 0; r < 10; r++) {
      if (r > 0) {
        key0 = (key0 + 0x9e3779b9) >>> 0;
        key1 = (key1 + 0xbb67ae85) >>> 0;
      }
      // high 32 bits of M0 * x0 and M1 * x2 exactly, from 16-bit halves (partial sums stay below 2^34)
      let bl = x0 & 0xffff,
        bh = x0 >>> 16;
      let ll = 0x1f53 * bl,
        hl = 0xd251 * bl,
        lh = 0x1f53 * bh;
      let mid = (ll >>> 16) + (hl & 0xffff) + (lh & 0xffff);
      const hi0 = (0xd251 * bh + (hl >>> 16) + (lh >>> 16) + Math.floor(mid / 0x10000)) >>> 0;
      bl = x2 & 0xffff;
      bh = x2 >>> 16;
      ll = 0x8d57 * bl;
      hl = 0xcd9e * bl;
      lh = 0x8d57 * bh;
      mid = (ll >>> 16) + (hl & 0xffff) + (lh & 0xffff);
      const hi1 = (0xcd9e * bh + (hl >>> 16) + (lh >>> 16) + Math.floor(mid / 0x10000)) >>> 0;
      const lo0 = Math.imul(0xd2511f53, x0) >>> 0,
        lo1 = Math.imul(0xcd9e8d57, x2) >>> 0;
      x0 = (hi1 ^ x1 ^ key0) >>> 0;
      x1 = lo1;
      x2 = (hi0 ^ x3 ^ key1) >>> 0;
      x3 = lo0;
    }
    if (kind === 2) return x0 * 2 ** -32 < a ? 1 : 0;
    const u = ((x0 >>> 5) * 0x4000000 + (x1 >>> 6)) * 2 ** -53;
    if (kind === 0) return a + (b - a) * (bits >= 53 ? u : (x0 >>> (32 - bits)) * 2 ** -bits);
    // Box-Muller: u1 = 1 - unit53(w0, w1) in (0, 1], u2 = unit53(w2, w3)
    const z =
      Math.sqrt(-2 * Math.log(1 - u)) * Math.cos(2 * Math.PI * (((x2 >>> 5) * 0x4000000 + (x3 >>> 6)) * 2 ** -53));
    if (kind === 1 || Math.abs(z) <= 2) return a + b * z;
  }
  // truncated normal: 64 misses (about 1e-86) give the mean, as the reference
  return a + b * 0;
}
