// The matmul micro-kernel, hand-written once and shared by every compiled function: it is
// optimized by V8 once per process instead of once per generated kernel (generated loops start
// in the interpreter, and a 784-long dot product per tile is where that hurts). A 4 x 4 tile of
// sums lives in locals; `acc` receives it column-major (acc[o + 4c + r]) for the generated epilogue,
// the layout of the WebAssembly kernel (wasm-kernel.ts), which compiled functions prefer.
// Packed layout: A panel at pa[p + 4t + r], B panel at pb[q + 4t + c], t = 0..K-1.

export function tile4x4(
  pa: Float64Array,
  p: number,
  pb: Float64Array,
  q: number,
  K: number,
  acc: Float64Array,
  o: number,
): void {
  let c00 = 0,
    c01 = 0,
    c02 = 0,
    c03 = 0;
  let c10 = 0,
    c11 = 0,
    c12 = 0,
    c13 = 0;
  let c20 = 0,
    c21 = 0,
    c22 = 0,
    c23 = 0;
  let c30 = 0,
    c31 = 0,
    c32 = 0,
    c33 = 0;
  for (let t = 0; t < K; t++) {
    const x0 = pa[p]!,
      x1 = pa[p + 1]!,
      x2 = pa[p + 2]!,
      x3 = pa[p + 3]!;
    const y0 = pb[q]!;
    c00 += x0 * y0;
    c10 += x1 * y0;
    c20 += x2 * y0;
    c30 += x3 * y0;
    const y1 = pb[q + 1]!;
    c01 += x0 * y1;
    c11 += x1 * y1;
    c21 += x2 * y1;
    c31 += x3 * y1;
    const y2 = pb[q + 2]!;
    c02 += x0 * y2;
    c12 += x1 * y2;
    c22 += x2 * y2;
    c32 += x3 * y2;
    const y3 = pb[q + 3]!;
    c03 += x0 * y3;
    c13 += x1 * y3;
    c23 += x2 * y3;
    c33 += x3 * y3;
    p += 4;
    q += 4;
  }
  acc[o] = c00;
  acc[o + 1] = c10;
  acc[o + 2] = c20;
  acc[o + 3] = c30;
  acc[o + 4] = c01;
  acc[o + 5] = c11;
  acc[o + 6] = c21;
  acc[o + 7] = c31;
  acc[o + 8] = c02;
  acc[o + 9] = c12;
  acc[o + 10] = c22;
  acc[o + 11] = c32;
  acc[o + 12] = c03;
  acc[o + 13] = c13;
  acc[o + 14] = c23;
  acc[o + 15] = c33;
}

/** tile4x4 of one A panel against n consecutive B panels: panel t's sums at acc[16t ..] (the WebAssembly kernel's rowPanel). */
export function rowPanel4x4(
  pa: Float64Array,
  p: number,
  pb: Float64Array,
  q: number,
  K: number,
  acc: Float64Array,
  n: number,
): void {
  for (let t = 0; t < n; t++) tile4x4(pa, p, pb, q + t * 4 * K, K, acc, 16 * t);
}

/**
 * The float32 kernel in JavaScript, for runtimes without WebAssembly SIMD: one A panel of mr
 * rows (pa[p + mr t + r]) against n consecutive B panels of nr columns (pb[q + nr(Kj + t) + c]),
 * tile j's sums column-major at acc[mr nr j + mr c + r]. Each sum is s += a*b in float32, the
 * product and the sum each rounded (Math.fround of a float64 product or sum of two float32 values
 * is the correctly rounded float32 result), so it equals the WebAssembly kernel's unfused
 * f32x4 sums bit for bit.
 */
export function rowPanel32(
  pa: Float32Array,
  p: number,
  pb: Float32Array,
  q: number,
  K: number,
  acc: Float32Array,
  n: number,
  mr: number,
  nr: number,
): void {
  const f = Math.fround;
  for (let j = 0; j < n; j++) {
    const o = mr * nr * j,
      qj = q + nr * K * j;
    for (let c = 0; c < nr; c++) {
      for (let r = 0; r < mr; r++) {
        let s = 0;
        for (let t = 0; t < K; t++) s = f(s + f(pa[p + mr * t + r]! * pb[qj + nr * t + c]!));
        acc[o + mr * c + r] = s;
      }
    }
  }
}

/**
 * Packs a strided operand, shared like tile4x4 (warm after its first use): element (b, r, t) of
 * the operand is src[base + b*sb + r*sr + t*st]; panel q of batch b holds rows q*p .. q*p + p - 1
 * as dst[((b * panels + q) * K + t) * p + (r - q*p)], rows past `rows` are zeros.
 */
export function packStrided(
  dst: Float64Array | Float32Array,
  src: ArrayLike<number>,
  base: number,
  sb: number,
  sr: number,
  st: number,
  batch: number,
  rows: number,
  K: number,
  p: number,
): void {
  const panels = Math.ceil(rows / p);
  for (let b = 0; b < batch; b++) {
    for (let q = 0; q < panels; q++) {
      let o = (b * panels + q) * K * p;
      const r0 = q * p;
      const n = Math.min(p, rows - r0);
      if (n === 4 && p === 4) {
        // The common case (full panels of the 4 x 4 kernel), unrolled.
        let s = base + b * sb + r0 * sr;
        for (let t = 0; t < K; t++, s += st, o += 4) {
          dst[o] = src[s]!;
          dst[o + 1] = src[s + sr]!;
          dst[o + 2] = src[s + 2 * sr]!;
          dst[o + 3] = src[s + 3 * sr]!;
        }
        continue;
      }
      for (let t = 0; t < K; t++) {
        let s = base + b * sb + r0 * sr + t * st;
        let r = 0;
        for (; r < n; r++, s += sr) dst[o + r] = src[s]!;
        for (; r < p; r++) dst[o + r] = 0;
        o += p;
      }
    }
  }
}

/**
 * packStrided of an operand contiguous along t (st = 1: A of a row-major product, in the 8 or 12
 * row panels of the float32 tiles): row by row, each read in order, a third faster than reading
 * t by t across the p rows (the same values in the same places). Its own function, called by
 * generated code where the strides say so, so that packStrided's loops keep their optimization.
 */
export function packRows(
  dst: Float64Array | Float32Array,
  src: ArrayLike<number>,
  base: number,
  sb: number,
  sr: number,
  batch: number,
  rows: number,
  K: number,
  p: number,
): void {
  const panels = Math.ceil(rows / p);
  for (let b = 0; b < batch; b++) {
    for (let q = 0; q < panels; q++) {
      const o = (b * panels + q) * K * p;
      const r0 = q * p;
      const n = Math.min(p, rows - r0);
      let s = base + b * sb + r0 * sr;
      for (let r = 0; r < n; r++, s += sr) {
        for (let t = 0, d = o + r; t < K; t++, d += p) dst[d] = src[s + t]!;
      }
      for (let r = n; r < p; r++) {
        for (let t = 0, d = o + r; t < K; t++, d += p) dst[d] = 0;
      }
    }
  }
}
