// Counter-based random numbers: Philox-4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random
// numbers: as easy as 1, 2, 3", SC'11). Every draw is a pure function of (key, counter), so the
// number at element i of a random tensor can be recomputed from i alone: a compiled loop, a GPU
// kernel or a fused expression reproduces the reference interpreter's numbers exactly, in any
// order. This file defines those numbers; the random ops (ops/random.ts) only lay them out.

/** Philox's round multipliers and the Weyl-sequence key increments (the paper's constants). */
const M0 = 0xd2511f53;
const M1 = 0xcd9e8d57;
const W0 = 0x9e3779b9;
const W1 = 0xbb67ae85;

/** High 32 bits of the 64-bit product of two uint32s, exactly, via 16-bit halves. */
export function mulhi32(a: number, b: number): number {
  const al = a & 0xffff;
  const ah = a >>> 16;
  const bl = b & 0xffff;
  const bh = b >>> 16;
  const ll = al * bl;
  const hl = ah * bl;
  const lh = al * bh;
  // bits 16..47 of the product; every partial sum stays below 2^34, exact in a double
  const mid = (ll >>> 16) + (hl & 0xffff) + (lh & 0xffff);
  return (ah * bh + (hl >>> 16) + (lh >>> 16) + Math.floor(mid / 0x10000)) >>> 0;
}

/**
 * Philox-4x32-10: a bijection of the 128-bit counter (c0..c3) keyed by (k0, k1). Each round
 * multiplies c0 and c2 by M0, M1 and mixes the 64-bit products' halves with c1, c3 and the key
 * (a Feistel-like network); the key advances by (W0, W1) before every round after the first.
 * Writes the four output words to `out` (uint32 values as non-negative numbers).
 */
export function philox4x32(
  c0: number,
  c1: number,
  c2: number,
  c3: number,
  k0: number,
  k1: number,
  out: Uint32Array,
): Uint32Array {
  let x0 = c0 >>> 0,
    x1 = c1 >>> 0,
    x2 = c2 >>> 0,
    x3 = c3 >>> 0;
  let key0 = k0 >>> 0,
    key1 = k1 >>> 0;
  for (let r = 0; r < 10; r++) {
    if (r > 0) {
      key0 = (key0 + W0) >>> 0;
      key1 = (key1 + W1) >>> 0;
    }
    const hi0 = mulhi32(M0, x0);
    const lo0 = Math.imul(M0, x0) >>> 0;
    const hi1 = mulhi32(M1, x2);
    const lo1 = Math.imul(M1, x2) >>> 0;
    x0 = (hi1 ^ x1 ^ key0) >>> 0;
    x1 = lo1;
    x2 = (hi0 ^ x3 ^ key1) >>> 0;
    x3 = lo0;
  }
  out[0] = x0;
  out[1] = x1;
  out[2] = x2;
  out[3] = x3;
  return out;
}

/**
 * Where a random tensor's numbers come from. Seeded draws use key = the seed's low and high
 * 32 bits and stream 0, so a seed gives the same numbers on every run and device. Unseeded draws
 * use key = (the op's unique id, the evaluation's epoch) and stream 1, so each evaluation draws
 * afresh and two unseeded ops never share numbers (nor collide with a seeded op).
 */
export interface RandomKey {
  readonly k0: number;
  readonly k1: number;
  readonly stream: number;
}

export function seededKey(seed: number): RandomKey {
  return { k0: seed >>> 0, k1: Math.floor(seed / 0x100000000) >>> 0, stream: 0 };
}

export function unseededKey(uid: number, epoch: number): RandomKey {
  return { k0: uid >>> 0, k1: epoch >>> 0, stream: 1 };
}

/**
 * The four words for element `index` of a tensor (row-major), attempt `attempt` (rejection
 * sampling draws again with attempt 1, 2, ...): counter = (index low, index high, attempt, stream).
 */
export function elementBits(key: RandomKey, index: number, attempt: number, out: Uint32Array): Uint32Array {
  return philox4x32(index >>> 0, Math.floor(index / 0x100000000) >>> 0, attempt, key.stream, key.k0, key.k1, out);
}

const TWO_M53 = 2 ** -53;
const TWO_M32 = 2 ** -32;

/** A uniform in [0, 1) with 53 random bits: 27 from `hi`, 26 from `lo`. */
export function unit53(hi: number, lo: number): number {
  return ((hi >>> 5) * 0x4000000 + (lo >>> 6)) * TWO_M53;
}

/**
 * A uniform in [0, 1) with `bits` random bits (11 for float16, 24 for float32, 53 for float64),
 * so the value is exact in its dtype and never rounds up to 1.
 */
export function unitFloat(w: Uint32Array, bits: number): number {
  if (bits >= 53) return unit53(w[0]!, w[1]!);
  return (w[0]! >>> (32 - bits)) * 2 ** -bits;
}

/** A uniform in [0, 1) on the 2^-32 grid (the Bernoulli draw compares it with p). */
export function unit32(w: Uint32Array): number {
  return w[0]! * TWO_M32;
}

/**
 * A standard normal by Box–Muller from the element's four words: u1 = 1 - unit53(w0, w1) in
 * (0, 1] (so the log is finite), u2 = unit53(w2, w3); z = sqrt(-2 ln u1) cos(2 pi u2).
 */
export function normalFromBits(w: Uint32Array): number {
  const u1 = 1 - unit53(w[0]!, w[1]!);
  const u2 = unit53(w[2]!, w[3]!);
  return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
}

/** Attempts before truncated_normal gives up (each succeeds with p = 0.954; 64 misses is ~1e-86). */
export const TRUNCATED_ATTEMPTS = 64;

/** A standard normal conditioned on |z| <= 2: redrawn with attempt 0, 1, ... until it lands inside. */
export function truncatedNormal(key: RandomKey, index: number, scratch: Uint32Array): number {
  for (let a = 0; a < TRUNCATED_ATTEMPTS; a++) {
    const z = normalFromBits(elementBits(key, index, a, scratch));
    if (Math.abs(z) <= 2) return z;
  }
  return 0;
}

/**
 * A small sequential generator (mulberry32) for host-side draws that need no counter: verify_grad's
 * projection weights, the examples' initial weights and batch order. Uniform in [0, 1).
 * The random ops draw with Philox above, which any element can be computed from independently.
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
