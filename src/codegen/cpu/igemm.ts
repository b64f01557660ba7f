// The A operand of an indirect product (a float32 convolution summed by ../wasm/igemm.ts): the
// input's cells copied into the packing arena, a row of zeros after them, and the indirection
// buffer, for each A panel of mr output cells and each tap, the byte offsets of the mr input
// cells the tap reads (the row of zeros where it falls outside the input). XNNPACK builds the
// same buffer once per input pointer; here the input is copied in at each call (the arena is
// shared by every product), so the buffer is written at each call too, one word per (cell, tap)
// instead of the im2col matrix's C floats. A kernel gradient (windowGradA), and a convolution of
// few channels that reads no padding (windowA), read the input through a table of window origins,
// one word per output cell, over its explicitly padded copy.
import { paddedInput } from '../kernel/ir.js';

/**
 * Fills A's packing buffer `dst` (a float32 view of the arena): x[xOff ..] (geometry g: batch,
 * channels, d, then inSize, outSize, window, step, tapStep, start and div, d each: kernel.ts'
 * IndirectA), zeros, then the pointers (panel p's tap k at word p*KS*mr + k*mr + r). Returns
 * the pointers' byte offset in the arena.
 */
export function igemmA(dst: Float32Array, x: Float32Array, xOff: number, g: readonly number[], mr: number): number {
  const [N, C, d] = g as [number, number, number];
  if (!(d >= 1 && d <= 3)) throw new Error(`internal: igemmA takes 1 to 3 spatial axes (got ${d})`);
  // Up to three spatial axes; the missing leading ones are of size 1 (window 1, step 1, tapStep 0, start 0, div 1).
  const missing = [1, 1, 1, 1, 0, 0, 1];
  const ax = (k: number) => [0, 1, 2].map((i) => (i < 3 - d ? missing[k]! : g[3 + k * d + i - (3 - d)]!));
  const [inS, outS, win, st, ts, s0, dv] = [ax(0), ax(1), ax(2), ax(3), ax(4), ax(5), ax(6)];
  // The input cell along an axis: (o*step + tap*tapStep + start) / div where that is a whole cell of the input, else -1.
  const cell = (k: number, o: number, t: number): number => {
    const q = o * st[k]! + t * ts[k]! + s0[k]!;
    if (q < 0) return -1;
    const c = dv[k] === 1 ? q : q % dv[k]! === 0 ? q / dv[k]! : -1;
    return c < inS[k]! ? c : -1;
  };
  const cells = N * inS[0]! * inS[1]! * inS[2]! * C;
  dst.set(x.subarray(xOff, xOff + cells), 0);
  dst.fill(0, cells, cells + C);
  const base = dst.byteOffset,
    zero = base + 4 * cells;
  const KS = win[0]! * win[1]! * win[2]!;
  const M = N * outS[0]! * outS[1]! * outS[2]!;
  const MP = Math.ceil(M / mr);
  const ptrAt = cells + C;
  const out = new Int32Array(dst.buffer, base + 4 * ptrAt, MP * mr * KS);
  // The pointers depend on the geometry and where the arena view starts only: written once, copied at later calls.
  const key = `${base}:${mr}:${g.join(',')}`;
  const hit = madeFor.get(dst.buffer)?.made.get(key);
  if (hit !== undefined) {
    out.set(hit);
    return base + 4 * ptrAt;
  }
  const ptr = new Int32Array(out.length);
  const rowBytes = 4 * C;
  let i = 0;
  for (let n = 0; n < N; n++) {
    for (let o0 = 0; o0 < outS[0]!; o0++) {
      for (let o1 = 0; o1 < outS[1]!; o1++) {
        for (let o2 = 0; o2 < outS[2]!; o2++, i++) {
          let w = Math.floor(i / mr) * KS * mr + (i % mr);
          for (let k0 = 0; k0 < win[0]!; k0++) {
            const p0 = cell(0, o0, k0);
            for (let k1 = 0; k1 < win[1]!; k1++) {
              const p1 = cell(1, o1, k1);
              const ok1 = p0 >= 0 && p1 >= 0;
              const row = ((n * inS[0]! + p0) * inS[1]! + p1) * inS[2]!;
              for (let k2 = 0; k2 < win[2]!; k2++, w += mr) {
                const p2 = cell(2, o2, k2);
                ptr[w] = ok1 && p2 >= 0 ? base + (row + p2) * rowBytes : zero;
              }
            }
          }
        }
      }
    }
  }
  // the last panel's rows past M read zeros
  for (; i < MP * mr; i++)
    for (let k = 0, w = Math.floor(i / mr) * KS * mr + (i % mr); k < KS; k++, w += mr) ptr[w] = zero;
  keepMade(dst.buffer, key, ptr);
  out.set(ptr);
  return base + 4 * ptrAt;
}

/**
 * Indirection buffers made so far, per arena memory (a memory let go or grown takes its buffers
 * with it: clear_session, a larger product), the latest MADE_WORDS words in all, by base, tile
 * and geometry.
 */
const madeFor = new WeakMap<ArrayBufferLike, { made: Map<string, Int32Array>; words: number }>();
const MADE_WORDS = 1 << 23;

/** Keeps `words` made for `key` in `buffer`'s arena (the oldest let go to stay within MADE_WORDS; none kept past it). */
function keepMade(buffer: ArrayBufferLike, key: string, words: Int32Array): void {
  if (words.length > MADE_WORDS) return;
  let cache = madeFor.get(buffer);
  if (cache === undefined) {
    cache = { made: new Map(), words: 0 };
    madeFor.set(buffer, cache);
  }
  while (cache.words + words.length > MADE_WORDS) {
    const [k, v] = cache.made.entries().next().value!;
    cache.made.delete(k);
    cache.words -= v.length;
  }
  cache.made.set(key, words);
  cache.words += words.length;
}

/**
 * A kernel gradient's A (over 'terms', ../wasm/igemm.ts' windowGrad32) in A's packing buffer
 * `dst`: x[xOff ..] copied with its padding made explicit (zeros; kernel.ts' paddedInput), the
 * byte offset of each output cell's window origin in the copy, then per A panel of mr rows
 * (tap..., channel) the table's byte offset and the rows' byte offsets from an origin (rows
 * past the product's: 0). Geometry `g` as igemmA's. Returns the panels' records' byte offset.
 */
export function windowGradA(
  dst: Float32Array,
  x: Float32Array,
  xOff: number,
  g: readonly number[],
  mr: number,
): number {
  const [N, C, d] = g as [number, number, number];
  if (!(d >= 1 && d <= 3)) throw new Error(`internal: windowGradA takes 1 to 3 spatial axes (got ${d})`);
  const { outS, win, st, ts, s0, lo3, pS, cells, base } = paddedCopy(dst, x, xOff, g);
  const T = N * outS[0]! * outS[1]! * outS[2]!;
  const rowsN = win[0]! * win[1]! * win[2]! * C;
  const MP = Math.ceil(rowsN / mr);
  const words = new Int32Array(dst.buffer, base + 4 * cells, T + MP * (mr + 1));
  let t = 0;
  for (let n = 0; n < N; n++) {
    for (let o0 = 0; o0 < outS[0]!; o0++) {
      for (let o1 = 0; o1 < outS[1]!; o1++) {
        const r01 = (n * pS[0]! + o0 * st[0]! + s0[0]! - lo3[0]!) * pS[1]! + o1 * st[1]! + s0[1]! - lo3[1]!;
        for (let o2 = 0; o2 < outS[2]!; o2++)
          words[t++] = base + 4 * C * (r01 * pS[2]! + o2 * st[2]! + s0[2]! - lo3[2]!);
      }
    }
  }
  const table = base + 4 * cells;
  for (let p = 0; p < MP; p++) {
    const rec = T + p * (mr + 1);
    words[rec] = table;
    for (let r = 0; r < mr; r++) {
      const i = p * mr + r;
      if (i >= rowsN) {
        words[rec + 1 + r] = 0;
        continue;
      }
      const ch = i % C,
        tap = Math.floor(i / C);
      const k2 = tap % win[2]!,
        k1 = Math.floor(tap / win[2]!) % win[1]!,
        k0 = Math.floor(tap / (win[2]! * win[1]!));
      words[rec + 1 + r] = 4 * (((k0 * ts[0]! * pS[1]! + k1 * ts[1]!) * pS[2]! + k2 * ts[2]!) * C + ch);
    }
  }
  return table + 4 * T;
}

/** The geometry `g` (igemmA's) per spatial axis, up to three, the missing leading ones of size 1, and x[xOff ..] copied into `dst` with its padding made explicit (zeros; kernel.ts' paddedInput). */
function paddedCopy(dst: Float32Array, x: Float32Array, xOff: number, g: readonly number[]) {
  const [N, C, d] = g as [number, number, number];
  const geo = (k: number) => g.slice(3 + k * d, 3 + (k + 1) * d);
  const a = {
    over: 'terms' as const,
    batch: N,
    channels: C,
    inSize: geo(0),
    outSize: geo(1),
    window: geo(2),
    step: geo(3),
    tapStep: geo(4),
    start: geo(5),
    div: geo(6),
  };
  const { lo, size } = paddedInput(a);
  // window 1, step 1, tapStep 0, start and lo 0 on a missing axis
  const missing = [1, 1, 1, 1, 0, 0, 0, 1];
  const ax = (k: number, v: readonly number[]) => [0, 1, 2].map((i) => (i < 3 - d ? missing[k]! : v[i - (3 - d)]!));
  const [inS, outS, win, st, ts, s0, lo3, pS] = [
    ax(0, a.inSize),
    ax(1, a.outSize),
    ax(2, a.window),
    ax(3, a.step),
    ax(4, a.tapStep),
    ax(5, a.start),
    ax(6, lo),
    ax(7, size),
  ];
  const cells = N * pS[0]! * pS[1]! * pS[2]! * C;
  const base = dst.byteOffset;
  const plain = lo3.every((l) => l === 0) && pS.every((p, k) => p === inS[k]);
  if (plain) dst.set(x.subarray(xOff, xOff + cells), 0);
  else {
    dst.fill(0, 0, cells);
    const row = inS[2]! * C;
    for (let n = 0; n < N; n++) {
      for (let i0 = 0; i0 < inS[0]!; i0++) {
        for (let i1 = 0; i1 < inS[1]!; i1++) {
          const from = xOff + ((n * inS[0]! + i0) * inS[1]! + i1) * row;
          const to = (((n * pS[0]! + i0 - lo3[0]!) * pS[1]! + i1 - lo3[1]!) * pS[2]! - lo3[2]!) * C;
          // short rows element by element: a subarray per row costs more than their copy
          if (row >= 64) dst.set(x.subarray(from, from + row), to);
          else for (let j = 0; j < row; j++) dst[to + j] = x[from + j]!;
        }
      }
    }
  }
  return { inS, outS, win, st, ts, s0, lo3, pS, cells, base };
}

/**
 * A convolution's A over output cells read through window origins (../wasm/igemm.ts'
 * windowGrad32 with rows and terms exchanged), in A's packing buffer `dst`: x[xOff ..] copied with
 * its padding made explicit, the byte offset from a window's origin of each term t = (tap...,
 * channel), K words, then per A panel of mr output cells the terms table's address and the mr
 * cells' window origins (rows past the product's: the first cell's). One word per output cell
 * instead of igemmA's one per (cell, tap): XNNPACK's direct convolution for few input channels
 * reads the same windows. Geometry `g` as igemmA's (div 1). Returns the panels' records' byte offset.
 */
export function windowA(dst: Float32Array, x: Float32Array, xOff: number, g: readonly number[], mr: number): number {
  const [N, C, d] = g as [number, number, number];
  if (!(d >= 1 && d <= 3)) throw new Error(`internal: windowA takes 1 to 3 spatial axes (got ${d})`);
  if (g.slice(3 + 6 * d, 3 + 7 * d).some((v) => v !== 1))
    throw new Error('internal: windowA takes a convolution (div 1)');
  const { outS, win, st, ts, s0, lo3, pS, cells, base } = paddedCopy(dst, x, xOff, g);
  const K = win[0]! * win[1]! * win[2]! * C;
  const M = N * outS[0]! * outS[1]! * outS[2]!;
  const MP = Math.ceil(M / mr);
  const table = base + 4 * cells;
  const words = new Int32Array(dst.buffer, table, K + MP * (mr + 1));
  const key = `w:${base}:${mr}:${g.join(',')}`;
  const hit = madeFor.get(dst.buffer)?.made.get(key);
  if (hit !== undefined) {
    words.set(hit);
    return table + 4 * K;
  }
  const w = new Int32Array(words.length);
  let t = 0;
  for (let k0 = 0; k0 < win[0]!; k0++)
    for (let k1 = 0; k1 < win[1]!; k1++)
      for (let k2 = 0; k2 < win[2]!; k2++)
        for (let ch = 0; ch < C; ch++)
          w[t++] = 4 * (((k0 * ts[0]! * pS[1]! + k1 * ts[1]!) * pS[2]! + k2 * ts[2]!) * C + ch);
  let i = 0;
  const rec = (cell: number) => K + Math.floor(cell / mr) * (mr + 1) + 1 + (cell % mr);
  for (let n = 0; n < N; n++) {
    for (let o0 = 0; o0 < outS[0]!; o0++) {
      for (let o1 = 0; o1 < outS[1]!; o1++) {
        const r01 = (n * pS[0]! + o0 * st[0]! + s0[0]! - lo3[0]!) * pS[1]! + o1 * st[1]! + s0[1]! - lo3[1]!;
        for (let o2 = 0; o2 < outS[2]!; o2++, i++)
          w[rec(i)] = base + 4 * C * (r01 * pS[2]! + o2 * st[2]! + s0[2]! - lo3[2]!);
      }
    }
  }
  for (; i < MP * mr; i++) w[rec(i)] = w[rec(0)]!;
  for (let p = 0; p < MP; p++) w[K + p * (mr + 1)] = table;
  keepMade(dst.buffer, key, w);
  words.set(w);
  return table + 4 * K;
}
