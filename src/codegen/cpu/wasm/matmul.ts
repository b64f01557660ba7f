// The matmul micro-kernel in WebAssembly SIMD (f64x2), assembled with encode.ts: the same 4 x 4
// tile of float64 sums as cpu/microkernel.ts' tile4x4, two lanes at a time. Separate multiply
// and add (no fused multiply-add, relaxed or not), so every sum is bit-identical to the
// JavaScript kernel's and the reference's (s += a*b for t = 0..K-1, float64): the cpu device's
// rule that compiled results equal the reference interpreter's holds for matrix products.
//
// rowPanel(pa, pb, K, acc, n): byte offsets; one A panel (rows r = 0..3 at pa + 32t + 8r)
// against n consecutive B panels (columns c = 0..3 of panel q at pb + 32(qK + t) + 8c), the
// 4 x 4 sums of panel q column-major at acc + 128q + 8(4c + r). One call per A panel: the
// generated epilogue then writes four whole output rows (contiguous stores, where a column of
// tiles would touch every row's cache line once per 4 columns). The A panel stays in L1 while
// B streams through.
import { Body, I32, V128, VOID, madd32, memarg, moduleBytes, op, simd } from './encode.js';
import { igemm32Body, windowGrad32Body } from './igemm.js';

/**
 * The locals of one float64 4 x 4 tile: the A panel's start `a` (walked in `ai`), the B panel
 * (walked in `bi` itself), the step count `k` (counted down in `ki`), where the sums go (`acc`),
 * the sums (column c, rows 0-1 in half 0, rows 2-3 in half 1), A's two vectors and B's splat.
 */
interface Tile64 {
  readonly a: number;
  readonly ai: number;
  readonly bi: number;
  readonly k: number;
  readonly ki: number;
  readonly acc: number;
  readonly accv: (col: number, half: number) => number;
  readonly va: readonly [number, number];
  readonly vb: number;
}

/** One tile's sums, s += a*b for t = 0..K-1 from zero, stored column-major at acc (rowPanel and panelBlock). */
function tile64(b: Body, t: Tile64): void {
  for (let col = 0; col < 4; col++) for (let half = 0; half < 2; half++) b.vzero().set(t.accv(col, half));
  b.get(t.a).set(t.ai).get(t.k).set(t.ki);
  b.ops(op.block, VOID).get(t.ki).ops(op.i32Eqz, op.brIf, 0);
  b.ops(op.loop, VOID);
  b.get(t.ai)
    .v(simd.v128Load, ...memarg(3, 0))
    .set(t.va[0]);
  b.get(t.ai)
    .v(simd.v128Load, ...memarg(3, 16))
    .set(t.va[1]);
  for (let col = 0; col < 4; col++) {
    b.get(t.bi)
      .v(simd.v128Load64Splat, ...memarg(3, 8 * col))
      .set(t.vb);
    for (let half = 0; half < 2; half++) {
      b.get(t.accv(col, half)).get(t.va[half]!).get(t.vb).v(simd.f64x2Mul).v(simd.f64x2Add).set(t.accv(col, half));
    }
  }
  b.addTo(t.ai, 32).addTo(t.bi, 32);
  b.get(t.ki).i32(1).ops(op.i32Sub).tee(t.ki).ops(op.brIf, 0);
  b.ops(op.end, op.end);
  for (let col = 0; col < 4; col++) {
    for (let half = 0; half < 2; half++)
      b.get(t.acc)
        .get(t.accv(col, half))
        .v(simd.v128Store, ...memarg(3, 16 * (2 * col + half)));
  }
}

function rowPanelBody(): Body {
  const [PA, PB, K, ACC, N] = [0, 1, 2, 3, 4];
  const [PAI, KI] = [5, 6];
  const accv = (c: number, half: number) => 7 + 2 * c + half; // column c, rows 0-1 (half 0) or 2-3 (half 1)
  const [VA0, VA1, VB] = [15, 16, 17];
  const b = new Body(5, [
    [2, I32],
    [11, V128],
  ]);
  b.ops(op.block, VOID).get(N).ops(op.i32Eqz, op.brIf, 0);
  b.ops(op.loop, VOID); // one tile per B panel; B panels are consecutive, so pb runs on
  tile64(b, { a: PA, ai: PAI, bi: PB, k: K, ki: KI, acc: ACC, accv, va: [VA0, VA1], vb: VB });
  b.addTo(ACC, 128);
  b.get(N).i32(1).ops(op.i32Sub).tee(N).ops(op.brIf, 0);
  b.ops(op.end, op.end);
  return b;
}

/**
 * panelBlock(pa, sa, G, pb, K, acc, sacc, n): G A panels (panel g at pa + g*sa) against n
 * consecutive B panels, B panel by B panel: tile (g, q)'s sums at acc + g*sacc + 128q. Each
 * tile is summed exactly as rowPanel sums it (same order, same operations); the loop order keeps
 * one B panel in L1 while the G A panels come from L2, so B streams from memory once per G A
 * panels instead of once per A panel (the cache blocking of Goto's GEMM, without its K split).
 */
function panelBlockBody(): Body {
  const [PA, SA, G, PB, K, ACC, SACC, N] = [0, 1, 2, 3, 4, 5, 6, 7];
  const [PAI, PBI, KI, GI, PAG, ACCG, ACCQ] = [8, 9, 10, 11, 12, 13, 14];
  const accv = (c: number, half: number) => 15 + 2 * c + half;
  const [VA0, VA1, VB] = [23, 24, 25];
  const b = new Body(8, [
    [7, I32],
    [11, V128],
  ]);
  b.ops(op.block, VOID).get(N).ops(op.i32Eqz, op.brIf, 0).get(G).ops(op.i32Eqz, op.brIf, 0);
  b.get(ACC).set(ACCQ);
  b.ops(op.loop, VOID); // B panels
  b.get(PA).set(PAG).get(ACCQ).set(ACCG).get(G).set(GI);
  b.ops(op.loop, VOID); // A panels of the block
  b.get(PB).set(PBI);
  tile64(b, { a: PAG, ai: PAI, bi: PBI, k: K, ki: KI, acc: ACCG, accv, va: [VA0, VA1], vb: VB });
  b.get(PAG).get(SA).ops(op.i32Add).set(PAG);
  b.get(ACCG).get(SACC).ops(op.i32Add).set(ACCG);
  b.get(GI).i32(1).ops(op.i32Sub).tee(GI).ops(op.brIf, 0);
  b.ops(op.end);
  b.get(PBI).set(PB); // the next B panel follows this one
  b.addTo(ACCQ, 128);
  b.get(N).i32(1).ops(op.i32Sub).tee(N).ops(op.brIf, 0);
  b.ops(op.end, op.end);
  return b;
}

/**
 * The float32 register tile: 8 rows (two f32x4 vectors of A) by 4 columns (each a splat of one B
 * element), 8 accumulators, with or without fused multiply-adds. Wider tiles spill on x64, where
 * V8 keeps one of the 16 vector registers as scratch: 8 x 4 holds 8 sums, a step's 2 A vectors
 * and 4 splats, and the product (XNNPACK's x86 WebAssembly SIMD kernels use the same count of
 * accumulators, 4 x 8 with B as vectors, one step of K per pass).
 */
export const TILE32 = { mr: 8, nr: 4 } as const;
/**
 * A 12 x 4 float32 tile (12 sums, 3 A vectors, 4 splats: it spills under V8, see
 * ../wasm-kernel.ts tile32): exported as panelBlock32w(r) for measurements of other tiles;
 * no product is lowered for it.
 */
export const TILE32_WIDE = { mr: 12, nr: 4 } as const;

/**
 * panelBlock32(pa, sa, G, pb, K, acc, sacc, n): panelBlock in float32 (f32x4, four lanes): G A
 * panels of mr rows (panel g at pa + g*sa, row r of step t at + 4(mr t + r)) against n
 * consecutive B panels of nr columns (column c of step t at pb + 4(nr t + c)); tile (g, q)'s
 * float32 sums column-major at acc + g*sacc + 4 mr nr q + 4(mr c + r). Each sum is s += a*b
 * for t = 0..K-1 in float32 (rounded after the product and after the sum), or with `fused` a
 * relaxed-SIMD multiply-add (one rounding where the runtime fuses it). One step of t per pass of
 * the loop: V8's TurboFan schedules a pass's loads ahead of its arithmetic, so a pass of two
 * steps holds 2(mr/4 + nr) loaded vectors beside the mr nr / 4 sums and spills sums to the stack
 * (8 x 4: 4 sums spilled and reloaded every pass, the sums' add chains then wait on store-to-load
 * forwarding: 36 GFLOP/s against 55 in one pass, 1024 x 1024 x 1024 on one core of 62 GFLOP/s
 * peak). TurboFan unrolls the one-step loop itself, without the spills.
 * With `rows` (panelBlock32r, panelBlock32wr: the whole products' form), the sums go row-major
 * instead, as the product's rows: tile (g, q)'s row r at acc + g*sacc + r*(sacc/mr) + 4 nr q
 * (each 4 x 4 block of sums transposed with shuffles), so the epilogue reads each output row in
 * order. Same sums, stored elsewhere.
 */
function panelBlock32Body(mr: number, nr: number, fused: boolean, rows = false): Body {
  if (rows && nr !== 4) throw new Error(`internal: the row-major float32 store transposes 4 x 4 blocks (nr ${nr})`);
  const [PA, SA, G, PB, K, ACC, SACC, N] = [0, 1, 2, 3, 4, 5, 6, 7];
  const [PAI, PBI, KI, GI, PAG, ACCG, ACCQ, RS, ROW] = [8, 9, 10, 11, 12, 13, 14, 15, 16];
  const V = mr / 4;
  const accv = (c: number, v: number) => 17 + c * V + v;
  const VA = (v: number) => 17 + nr * V + v;
  const VB = 17 + nr * V + V;
  const TR = (i: number) => 17 + nr * V + V + 1 + i; // transposition temporaries
  const b = new Body(8, [
    [9, I32],
    [nr * V + V + 1 + 4, V128],
  ]);
  if (rows) b.get(SACC).i32(mr).ops(op.i32DivU).set(RS);
  const step = (u: number) => {
    for (let v = 0; v < V; v++)
      b.get(PAI)
        .v(simd.v128Load, ...memarg(2, 4 * (u * mr + 4 * v)))
        .set(VA(v));
    for (let c = 0; c < nr; c++) {
      b.get(PBI)
        .v(simd.v128Load32Splat, ...memarg(2, 4 * (u * nr + c)))
        .set(VB);
      for (let v = 0; v < V; v++) madd32(b, fused, VA(v), VB, accv(c, v));
    }
  };
  b.ops(op.block, VOID).get(N).ops(op.i32Eqz, op.brIf, 0).get(G).ops(op.i32Eqz, op.brIf, 0);
  b.get(ACC).set(ACCQ);
  b.ops(op.loop, VOID); // B panels
  b.get(PA).set(PAG).get(ACCQ).set(ACCG).get(G).set(GI);
  b.ops(op.loop, VOID); // A panels of the block
  for (let c = 0; c < nr; c++) for (let v = 0; v < V; v++) b.vzero().set(accv(c, v));
  b.get(PAG).set(PAI).get(PB).set(PBI).get(K).set(KI);
  b.ops(op.block, VOID).get(KI).ops(op.i32Eqz, op.brIf, 0);
  b.ops(op.loop, VOID); // steps of t, one per pass (see above)
  step(0);
  b.addTo(PAI, 4 * mr).addTo(PBI, 4 * nr);
  b.get(KI).i32(1).ops(op.i32Sub).tee(KI).ops(op.brIf, 0);
  b.ops(op.end, op.end);
  if (rows) {
    // rows 4v..4v+3: transpose the 4 x 4 block (columns in accv(0..3, v)) into 4 row vectors
    b.get(ACCG).set(ROW);
    for (let v = 0; v < V; v++) storeTransposed(b, (c) => accv(c, v), TR, ROW, RS, 2);
  } else {
    for (let c = 0; c < nr; c++) {
      for (let v = 0; v < V; v++)
        b.get(ACCG)
          .get(accv(c, v))
          .v(simd.v128Store, ...memarg(2, 4 * (c * mr + 4 * v)));
    }
  }
  b.get(PAG).get(SA).ops(op.i32Add).set(PAG);
  b.get(ACCG).get(SACC).ops(op.i32Add).set(ACCG);
  b.get(GI).i32(1).ops(op.i32Sub).tee(GI).ops(op.brIf, 0);
  b.ops(op.end);
  b.get(PBI).set(PB); // the next B panel follows this one
  b.addTo(ACCQ, rows ? 4 * nr : 4 * mr * nr);
  b.get(N).i32(1).ops(op.i32Sub).tee(N).ops(op.brIf, 0);
  b.ops(op.end, op.end);
  return b;
}

/**
 * Stores the transpose of the 4 x 4 block of float32 values whose rows are the v128 locals
 * input(0..3) (eight i8x16.shuffles): its row j (the block's column j) at the byte address in
 * local AT (memarg alignment `align`), AT advanced by local STEP after each; tmp(0..3): scratch.
 */
function storeTransposed(
  b: Body,
  input: (i: number) => number,
  tmp: (i: number) => number,
  AT: number,
  STEP: number,
  align: number,
): void {
  // i8x16.shuffle of two f32x4 by 32-bit lanes (0-3 the first operand's, 4-7 the second's)
  const shuffle = (...lanes: number[]) =>
    b.v(simd.i8x16Shuffle, ...lanes.flatMap((l) => [4 * l, 4 * l + 1, 4 * l + 2, 4 * l + 3]));
  b.get(input(0)).get(input(1));
  shuffle(0, 4, 1, 5).set(tmp(0));
  b.get(input(2)).get(input(3));
  shuffle(0, 4, 1, 5).set(tmp(1));
  b.get(input(0)).get(input(1));
  shuffle(2, 6, 3, 7).set(tmp(2));
  b.get(input(2)).get(input(3));
  shuffle(2, 6, 3, 7).set(tmp(3));
  for (let j = 0; j < 4; j++) {
    b.get(AT)
      .get(tmp(j < 2 ? 0 : 2))
      .get(tmp(j < 2 ? 1 : 3));
    shuffle(...(j % 2 === 0 ? [0, 1, 4, 5] : [2, 3, 6, 7])).v(simd.v128Store, ...memarg(align, 0));
    b.get(AT).get(STEP).ops(op.i32Add).set(AT);
  }
}

/**
 * Rows of A the small-product kernels (rowVec32) sum at once: products of 1 to 3 rows (a batch of
 * one at inference) are summed by them instead of by a tile of TILE32.mr rows that is mostly
 * padding.
 */
export const ROWVEC_MAX_ROWS = 3;

/**
 * rowVec32 (R rows, 1..ROWVEC_MAX_ROWS): rowVec32(pa, sa, pb, K, acc, n), the few-row form of
 * panelBlock32 for products of R rows. A's rows r = 0..R-1 of step t are read at
 * pa + t*sa + 4r (the packed A panel, sa its step's bytes: 4 mr) and broadcast, as XNNPACK's
 * f32-gemm 1x8 WebAssembly SIMD kernels broadcast A for a one-row product; the n consecutive B
 * panels (4 columns each, column c of step t at pb + 16(qK + t) + 4c) are read as vectors, G of
 * them per pass (G R + R + 1 vector registers: 8 panels for one row, 4 for two, 3 for three;
 * then the panels left in smaller groups). Each sum is s += a*b for t = 0..K-1 in float32 with
 * the same operations as panelBlock32 (multiply then add, or the relaxed multiply-add with
 * `fused`), so a row's sums equal the tile kernel's bit for bit, a quarter (or less) of its work at
 * one row. The sums go row-major: row r, column 4q + c at acc + 16(r n + q) + 4c.
 */
function rowVec32Body(R: number, fused: boolean): Body {
  const [PA, SA, PB, K, ACC, N] = [0, 1, 2, 3, 4, 5];
  const [Q, PBQ, ACCQ, AI, KI, KB, RS, ROW] = [6, 7, 8, 9, 10, 11, 12, 13];
  const GMAX = R === 1 ? 8 : R === 2 ? 4 : 3;
  const P = (g: number) => 14 + g; // B panel g's pointer
  const V0 = 14 + GMAX;
  const accv = (r: number, g: number) => V0 + r * GMAX + g;
  const VA = (r: number) => V0 + R * GMAX + r;
  const VB = V0 + R * GMAX + R;
  const b = new Body(6, [
    [8 + GMAX, I32],
    [R * GMAX + R + 1, V128],
  ]);
  b.get(K).i32(4).ops(op.i32Shl).set(KB); // bytes of one B panel
  b.get(N).i32(4).ops(op.i32Shl).set(RS); // bytes of one row of sums
  b.get(PB).set(PBQ).get(ACC).set(ACCQ).get(N).set(Q);
  const groups = [GMAX, ...[4, 2, 1].filter((g) => g < GMAX)];
  for (const G of groups) {
    b.ops(op.block, VOID, op.loop, VOID); // groups of G panels while G are left
    b.get(Q).i32(G).ops(op.i32LtU, op.brIf, 1);
    for (let r = 0; r < R; r++) for (let g = 0; g < G; g++) b.vzero().set(accv(r, g));
    for (let g = 0; g < G; g++) b.get(PBQ).get(KB).i32(g).ops(op.i32Mul, op.i32Add).set(P(g));
    b.get(PA).set(AI).get(K).set(KI);
    b.ops(op.block, VOID).get(KI).ops(op.i32Eqz, op.brIf, 0);
    b.ops(op.loop, VOID); // steps t
    for (let r = 0; r < R; r++)
      b.get(AI)
        .v(simd.v128Load32Splat, ...memarg(2, 4 * r))
        .set(VA(r));
    for (let g = 0; g < G; g++) {
      b.get(P(g))
        .v(simd.v128Load, ...memarg(2, 0))
        .set(VB);
      for (let r = 0; r < R; r++) madd32(b, fused, VA(r), VB, accv(r, g));
      b.addTo(P(g), 16);
    }
    b.get(AI).get(SA).ops(op.i32Add).set(AI);
    b.get(KI).i32(1).ops(op.i32Sub).tee(KI).ops(op.brIf, 0);
    b.ops(op.end, op.end);
    endRowsPass(b, R, G, accv, { ACCQ, ROW, RS, PBQ, KB, Q });
  }
  return b;
}

/**
 * The end of a pass of the row kernels (rowVec32, ./rows.ts' rows32) over G B panels: stores R
 * rows of G vectors of sums acc(r, g) row-major (row r at ACCQ + r RS, panel g at byte 16 g;
 * ROW: scratch), steps to the next G panels (PBQ += G KB, ACCQ += 16 G, Q -= G), branches back to
 * the passes' loop and closes it. The capitals are i32 locals.
 */
export function endRowsPass(
  b: Body,
  R: number,
  G: number,
  acc: (r: number, g: number) => number,
  L: { ACCQ: number; ROW: number; RS: number; PBQ: number; KB: number; Q: number },
): void {
  b.get(L.ACCQ).set(L.ROW);
  for (let r = 0; r < R; r++) {
    for (let g = 0; g < G; g++)
      b.get(L.ROW)
        .get(acc(r, g))
        .v(simd.v128Store, ...memarg(2, 16 * g));
    if (r < R - 1) b.get(L.ROW).get(L.RS).ops(op.i32Add).set(L.ROW);
  }
  b.get(L.PBQ).get(L.KB).i32(G).ops(op.i32Mul, op.i32Add).set(L.PBQ);
  b.addTo(L.ACCQ, 16 * G);
  b.get(L.Q).i32(G).ops(op.i32Sub).set(L.Q);
  b.ops(op.br, 0);
  b.ops(op.end, op.end);
}

/**
 * pack32(src, sr, st, dst, K, rows, p): one panel of a float32 operand packed for the kernels:
 * element (r, t) at src + r*sr + t*st (byte offsets and strides) to dst + 4(p t + r), for
 * t = 0..K-1 and r = 0..p-1, rows r >= `rows` zero (the edge panel). A bit copy (i32 loads and
 * stores), so the packed values are the operand's. Two vector paths for full panels (rows = p, p
 * a multiple of 4): an operand contiguous along t (st = 4: A of a row-major product) is read 4
 * steps of 4 rows at a time and each 4 x 4 block transposed with shuffles; one contiguous along
 * the rows (sr = 4: B of a row-major product) is copied 4 rows at a time, step by step. The
 * steps the vector paths leave (K mod 4 of the first) and every other operand go element by element.
 */
function pack32Body(): Body {
  const [SRC, SR, ST, DST, K, ROWS, P] = [0, 1, 2, 3, 4, 5, 6];
  const [T, R, S, D, G, PS, S1, S2, S3, N, T0] = [7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17];
  const V = (i: number) => 18 + i; // the 4 rows loaded
  const W = (i: number) => 22 + i; // the transposition's temporaries
  const b = new Body(7, [
    [11, I32],
    [8, V128],
  ]);
  b.get(P).i32(2).ops(op.i32Shl).set(PS); // bytes of one packed step
  b.i32(0).set(T0);
  // full panel of a width divisible by 4?
  b.get(ROWS).get(P).ops(op.i32Eq).get(P).i32(3).ops(op.i32And, op.i32Eqz, op.i32And);
  b.ops(op.if, VOID);
  b.get(ST).i32(4).ops(op.i32Eq).get(K).i32(4).ops(op.i32GeU, op.i32And);
  b.ops(op.if, VOID);
  // contiguous along t: groups of 4 rows, 4 steps at a time, each 4 x 4 block transposed
  b.get(K).i32(-4).ops(op.i32And).set(T0);
  b.i32(0).set(G);
  b.ops(op.block, VOID, op.loop, VOID); // row groups
  b.get(SRC).get(G).get(SR).ops(op.i32Mul, op.i32Add).tee(S);
  b.get(SR).ops(op.i32Add).tee(S1).get(SR).ops(op.i32Add).tee(S2).get(SR).ops(op.i32Add).set(S3);
  b.get(DST).get(G).i32(2).ops(op.i32Shl, op.i32Add).set(D);
  b.get(K).i32(2).ops(op.i32ShrU).set(N);
  b.ops(op.loop, VOID); // 4 steps
  [S, S1, S2, S3].forEach((x, i) =>
    b
      .get(x)
      .v(simd.v128Load, ...memarg(0, 0))
      .set(V(i)),
  );
  storeTransposed(b, V, W, D, PS, 0);
  for (const x of [S, S1, S2, S3]) b.addTo(x, 16);
  b.get(N).i32(1).ops(op.i32Sub).tee(N).ops(op.brIf, 0);
  b.ops(op.end);
  b.get(G).i32(4).ops(op.i32Add).tee(G).get(P).ops(op.i32LtU, op.brIf, 0);
  b.ops(op.end, op.end);
  b.ops(op.else);
  b.get(SR).i32(4).ops(op.i32Eq);
  b.ops(op.if, VOID);
  // contiguous along the rows: each step's p values copied 4 at a time
  b.get(K).set(T0);
  b.ops(op.block, VOID).get(K).ops(op.i32Eqz, op.brIf, 0);
  b.get(SRC).set(S).get(DST).set(D).get(K).set(N);
  copySteps(b, S, D, G, PS, ST, PS, N); // steps
  b.ops(op.end); // block
  b.ops(op.end); // if sr = 4
  b.ops(op.end); // if st = 4 / else
  b.ops(op.end); // if full panel
  // the steps left, element by element (zeros past `rows`)
  b.get(T0).set(T);
  b.ops(op.block, VOID).get(T).get(K).ops(op.i32GeU, op.brIf, 0);
  b.ops(op.loop, VOID); // steps
  b.get(SRC).get(T).get(ST).ops(op.i32Mul, op.i32Add).set(S);
  b.get(DST).get(T).get(PS).ops(op.i32Mul, op.i32Add).set(D);
  b.i32(0).set(R);
  b.ops(op.loop, VOID); // rows
  b.get(D);
  b.get(R).get(ROWS).ops(op.i32LtU);
  b.ops(op.if, I32)
    .get(S)
    .ops(op.i32Load, ...memarg(2, 0))
    .ops(op.else)
    .i32(0)
    .ops(op.end);
  b.ops(op.i32Store, ...memarg(2, 0));
  b.get(S).get(SR).ops(op.i32Add).set(S);
  b.addTo(D, 4);
  b.get(R).i32(1).ops(op.i32Add).tee(R).get(P).ops(op.i32LtU, op.brIf, 0);
  b.ops(op.end);
  b.get(T).i32(1).ops(op.i32Add).tee(T).get(K).ops(op.i32LtU, op.brIf, 0);
  b.ops(op.end, op.end);
  return b;
}

/**
 * A loop of `count` (an i32 local counted down to 0; at least 1) copies of one step of a panel:
 * PS bytes (a multiple of 16) from S to D, 4 rows per vector (G: the byte counter), then S and D
 * advanced by the locals SD and DD. All i32 locals.
 */
function copySteps(b: Body, S: number, D: number, G: number, PS: number, SD: number, DD: number, count: number): void {
  b.ops(op.loop, VOID);
  b.i32(0).set(G);
  b.ops(op.loop, VOID); // groups of 4 rows
  b.get(D)
    .get(G)
    .ops(op.i32Add)
    .get(S)
    .get(G)
    .ops(op.i32Add)
    .v(simd.v128Load, ...memarg(0, 0))
    .v(simd.v128Store, ...memarg(0, 0));
  b.get(G).i32(16).ops(op.i32Add).tee(G).get(PS).ops(op.i32LtU, op.brIf, 0);
  b.ops(op.end);
  b.get(S).get(SD).ops(op.i32Add).set(S);
  b.get(D).get(DD).ops(op.i32Add).set(D);
  b.get(count).i32(1).ops(op.i32Sub).tee(count).ops(op.brIf, 0);
  b.ops(op.end);
}

/**
 * packCols32(src, st, dst, K, p, np): np consecutive full panels of p rows (p a multiple of 4) of a
 * float32 operand contiguous along the rows (element (r, t) at src + 4r + t*st; B of a row-major
 * product), panel j to dst + j*4Kp: what pack32 does panel by panel, step by step across the np
 * panels instead, so each step's 4 p np bytes are read once, in order (panel by panel, each step
 * of a product of 1024 columns is a new page: a third slower there).
 */
function packCols32Body(): Body {
  const [SRC, ST, DST, K, P, NP] = [0, 1, 2, 3, 4, 5];
  const [S, D, J, G, PS, DS, N] = [6, 7, 8, 9, 10, 11, 12];
  const b = new Body(6, [[7, I32]]);
  b.get(P).i32(2).ops(op.i32Shl).set(PS); // bytes of one panel's step
  b.get(K).get(PS).ops(op.i32Mul).set(DS); // bytes of one packed panel
  b.ops(op.block, VOID).get(K).ops(op.i32Eqz, op.brIf, 0).get(NP).ops(op.i32Eqz, op.brIf, 0);
  b.get(K).set(N);
  b.ops(op.loop, VOID); // steps
  b.get(SRC).set(S).get(DST).set(D).get(NP).set(J);
  copySteps(b, S, D, G, PS, PS, DS, J); // panels
  b.get(SRC).get(ST).ops(op.i32Add).set(SRC);
  b.get(DST).get(PS).ops(op.i32Add).set(DST);
  b.get(N).i32(1).ops(op.i32Sub).tee(N).ops(op.brIf, 0);
  b.ops(op.end, op.end);
  return b;
}

/**
 * The kernel module's bytes: imports env.mem (shared: the memory worker threads sum in
 * together), exports rowPanel, panelBlock (float64), panelBlock32 and panelBlock32w (float32,
 * the TILE32 tile and the TILE32_WIDE one of measurements; panelBlock32r and panelBlock32wr the same with row-major sums),
 * igemm32 and windowGrad32 (convolutions and their kernel gradients through an indirection
 * buffer: ./igemm.ts), pack32 and packCols32 (operand packing), rowVec32_1..3 (products of 1 to 3 rows); with `fused`, relaxed-SIMD multiply-adds, valid only where the
 * runtime has relaxed SIMD). `tile32` replaces panelBlock32's tile (measurements of other tiles).
 */
export function matmulModuleBytes(
  shared = false,
  fused = false,
  tile32: { mr: number; nr: number } = TILE32,
): Uint8Array {
  return moduleBytes(
    [
      { name: 'rowPanel', params: 5, body: rowPanelBody() },
      { name: 'panelBlock', params: 8, body: panelBlockBody() },
      { name: 'panelBlock32', params: 8, body: panelBlock32Body(tile32.mr, tile32.nr, fused) },
      { name: 'panelBlock32w', params: 8, body: panelBlock32Body(TILE32_WIDE.mr, TILE32_WIDE.nr, fused) },
      { name: 'panelBlock32r', params: 8, body: panelBlock32Body(tile32.mr, tile32.nr, fused, true) },
      { name: 'panelBlock32wr', params: 8, body: panelBlock32Body(TILE32_WIDE.mr, TILE32_WIDE.nr, fused, true) },
      { name: 'pack32', params: 7, body: pack32Body() },
      { name: 'igemm32', params: 8, body: igemm32Body(fused) },
      { name: 'packCols32', params: 6, body: packCols32Body() },
      { name: 'windowGrad32', params: 8, body: windowGrad32Body(fused) },
      ...Array.from({ length: ROWVEC_MAX_ROWS }, (_, i) => ({
        name: `rowVec32_${i + 1}`,
        params: 6,
        body: rowVec32Body(i + 1, fused),
      })),
    ],
    shared ? 'shared' : true,
  );
}
