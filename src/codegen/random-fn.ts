// The random ops' numbers as one scalar function of (element index, key), called per element
// inside kernels. It is the same computation as the reference's (src/ir/random.ts: Philox-4x32-10,
// then the op's transform), written as a single self-contained function because exportModule
// copies a kernel's scalar functions by their source text (no imports, no helpers outside it).
// test/codegen/random-kernel.test.ts checks it bit for bit against src/ir/random.ts.

/** Which transform of the four Philox words: the op's draw (src/ir/ops/random.ts). */
export const DRAW = { uniform: 0, normal: 1, binomial: 2, truncated: 3 } as const;

/**
 * Element `i` of a random tensor. kind: DRAW.*; (k0, k1, stream): the RandomKey; (a, b): low/high,
 * mean/stddev, or p (in a); bits: a uniform's mantissa bits (53, 24 or 11).
 */
export function philoxDraw(kind: number, i: number, k0: number, k1: number, stream: number, a: number, b: number, bits: number): number {
  // Philox-4x32-10 of counter (i low, i high, attempt, stream) under key (k0, k1): four uint32 words.
  let w0 = 0, w1 = 0, w2 = 0, w3 = 0;
  const words = (attempt: number): void => {
    let x0 = i >>> 0, x1 = Math.floor(i / 0x100000000) >>> 0, x2 = attempt >>> 0, x3 = stream >>> 0;
    let key0 = k0 >>> 0, key1 = k1 >>> 0;
    for (let r = 0; r < 10; r++) {
      if (r > 0) { key0 = (key0 + 0x9e3779b9) >>> 0; key1 = (key1 + 0xbb67ae85) >>> 0; }
      // high 32 bits of M * x exactly, from 16-bit halves (every partial sum is below 2^34)
      const m0 = 0xd2511f53, m1 = 0xcd9e8d57;
      const hi = (m: number, x: number): number => {
        const al = m & 0xffff, ah = m >>> 16, bl = x & 0xffff, bh = x >>> 16;
        const ll = al * bl, hl = ah * bl, lh = al * bh;
        const mid = (ll >>> 16) + (hl & 0xffff) + (lh & 0xffff);
        return (ah * bh + (hl >>> 16) + (lh >>> 16) + Math.floor(mid / 0x10000)) >>> 0;
      };
      const hi0 = hi(m0, x0), lo0 = Math.imul(m0, x0) >>> 0, hi1 = hi(m1, x2), lo1 = Math.imul(m1, x2) >>> 0;
      x0 = (hi1 ^ x1 ^ key0) >>> 0; x1 = lo1; x2 = (hi0 ^ x3 ^ key1) >>> 0; x3 = lo0;
    }
    w0 = x0; w1 = x1; w2 = x2; w3 = x3;
  };
  const unit53 = (h: number, l: number): number => ((h >>> 5) * 0x4000000 + (l >>> 6)) * 2 ** -53;
  const normal = (): number => Math.sqrt(-2 * Math.log(1 - unit53(w0, w1))) * Math.cos(2 * Math.PI * unit53(w2, w3));
  if (kind === 0) {
    words(0);
    return a + (b - a) * (bits >= 53 ? unit53(w0, w1) : (w0 >>> (32 - bits)) * 2 ** -bits);
  }
  if (kind === 1) { words(0); return a + b * normal(); }
  if (kind === 2) { words(0); return w0 * 2 ** -32 < a ? 1 : 0; }
  // truncated normal: redrawn with attempt 0, 1, ... until |z| <= 2 (64 attempts, as the reference)
  for (let t = 0; t < 64; t++) {
    words(t);
    const z = normal();
    if (Math.abs(z) <= 2) return a + b * z;
  }
  return a + b * 0;
}
