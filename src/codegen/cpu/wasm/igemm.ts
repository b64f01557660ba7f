// The convolution micro-kernel in WebAssembly SIMD (f32x4): an indirect matrix product (igemm),
// XNNPACK's f32-igemm 4x8 wasmsimd "splat" kernel being the anchor. A convolution's im2col
// matrix is never packed: the A operand is an indirection buffer of pointers, one per (output
// cell, tap), each to the input cell's C contiguous channels (channels_last), or to a row of
// zeros where the tap falls in the padding. B is the kernel, packed in panels of nr output
// features (column c of step t at + 4(nr t + c)), so the output features are the vector lanes
// and each input value is splatted: an mr x nr tile holds mr output cells of nr features.
//
// The sums are those of the packed kernels (./matmul.ts): s += a*b for t = (tap, channel) =
// 0..K-1 in order, in float32, rounded after the product and after the sum (or one relaxed-SIMD
// multiply-add with `fused`), so a convolution sums to the same numbers, bit for bit, as its
// im2col product through panelBlock32 or the JavaScript rowPanel32.
import { Body, I32, V128, VOID, madd32, memarg, op, simd } from './encode.js';

/** The igemm register tile: 4 output cells by 8 features (two f32x4 vectors), 8 sums (XNNPACK's x86 wasmsimd igemm tile). */
export const IGEMM_TILE = { mr: 4, nr: 8 } as const;

/**
 * igemm32(pa, sa, G, pb, K, acc, sacc, n), the blocked kernels' signature (threads.ts'
 * PanelBlock), byte offsets: G A panels (panel g's indirection at pa + g*sa: KS taps of mr
 * i32 byte offsets, tap-major, each to C = K / KS consecutive float32 input channels; KS =
 * sa / (4 mr)) against n consecutive B panels of nr columns (panel q at pb + 4 nr K q). The
 * sums of tile (g, q) go row-major: row r at acc + g*sacc + r*(sacc/mr) + 4 nr q, as
 * panelBlock32r stores them, so the same epilogue reads them. B panel by B panel, the G A
 * panels of the block in turn (the B panel stays in L1).
 */
export function igemm32Body(fused: boolean, mr: number = IGEMM_TILE.mr, nr: number = IGEMM_TILE.nr): Body {
  const [PA, SA, G, PB, K, ACC, SACC, N] = [0, 1, 2, 3, 4, 5, 6, 7];
  const [KS, C, RS, GI, PAG, ACCG, ACCQ, IND, TI, CI, PBI, ROW] = [8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19];
  const PTR = (r: number) => 20 + r;
  const { b, V, accv, VB, VA } = tileBody(mr, nr, 12 + mr);
  const tile: TileLocals = { mr, nr, accv, ACCG, ROW, RS, PAG, SA, SACC, GI, PBI, PB, ACCQ, N };
  // One step of t: B's nr features (V vectors), each cell's input value splatted.
  const step = (u: number) => {
    for (let v = 0; v < V; v++)
      b.get(PBI)
        .v(simd.v128Load, ...memarg(2, 4 * (u * nr + 4 * v)))
        .set(VB(v));
    for (let r = 0; r < mr; r++) {
      b.get(PTR(r))
        .v(simd.v128Load32Splat, ...memarg(2, 4 * u))
        .set(VA);
      for (let v = 0; v < V; v++) madd32(b, fused, VA, VB(v), accv(r, v));
    }
  };
  b.ops(op.block, VOID).get(N).ops(op.i32Eqz, op.brIf, 0).get(G).ops(op.i32Eqz, op.brIf, 0);
  b.get(SA)
    .i32(4 * mr)
    .ops(op.i32DivU)
    .set(KS);
  b.get(K).get(KS).ops(op.i32DivU).set(C);
  openTile(b, tile, PA, ACC, G);
  b.get(PAG).set(IND).get(PB).set(PBI).get(KS).set(TI);
  b.ops(op.loop, VOID); // taps
  for (let r = 0; r < mr; r++)
    b.get(IND)
      .ops(op.i32Load, ...memarg(2, 4 * r))
      .set(PTR(r));
  b.addTo(IND, 4 * mr);
  b.get(C).set(CI);
  b.ops(op.loop, VOID); // channels (one per pass: unrolling by 2 or 4 measured slower, V8 then spills)
  step(0);
  for (let r = 0; r < mr; r++) b.addTo(PTR(r), 4);
  b.addTo(PBI, 4 * nr);
  b.get(CI).i32(1).ops(op.i32Sub).tee(CI).ops(op.brIf, 0);
  b.ops(op.end);
  b.get(TI).i32(1).ops(op.i32Sub).tee(TI).ops(op.brIf, 0);
  b.ops(op.end);
  storeTile(b, tile);
  return b;
}

/**
 * windowGrad32(pa, sa, G, pb, K, acc, sacc, n): a convolution's kernel gradient,
 * dW[(tap, ch), f] = sum over the output cells p of x[p's window + tap, ch] * dy[p, f], as the
 * same 4 x 8 tiles, the sum's terms t = p read through a table instead of packed panels: the
 * input is copied with its padding made explicit (zeros), so every tap of every window is a
 * cell of the copy, at p's window origin plus the tap's offset. A panel g's record at pa + g*sa
 * (sa = 4(mr + 1)): the byte offset of the table of window origins (K words, one per output
 * cell), then the mr rows' byte offsets from the origin (tap and channel; rows past the
 * product's read any cell: their sums are never stored). B panels and the row-major sums as
 * igemm32's. The sums are the packed product's (t = 0..K-1 in order), bit for bit. With rows and
 * terms exchanged (../igemm.ts' windowA: the table holds the terms' offsets from a window origin,
 * each record its mr output cells' origins) the same kernel sums a convolution of few channels.
 */
export function windowGrad32Body(fused: boolean, mr: number = IGEMM_TILE.mr, nr: number = IGEMM_TILE.nr): Body {
  const [PA, SA, G, PB, K, ACC, SACC, N] = [0, 1, 2, 3, 4, 5, 6, 7];
  const [RS, GI, PAG, ACCG, ACCQ, TBL, TI, PBI, ROW, O] = [8, 9, 10, 11, 12, 13, 14, 15, 16, 17];
  const OFF = (r: number) => 18 + r;
  const { b, V, accv, VB, VA } = tileBody(mr, nr, 10 + mr);
  const tile: TileLocals = { mr, nr, accv, ACCG, ROW, RS, PAG, SA, SACC, GI, PBI, PB, ACCQ, N };
  b.ops(op.block, VOID)
    .get(N)
    .ops(op.i32Eqz, op.brIf, 0)
    .get(G)
    .ops(op.i32Eqz, op.brIf, 0)
    .get(K)
    .ops(op.i32Eqz, op.brIf, 0);
  openTile(b, tile, PA, ACC, G);
  b.get(PAG)
    .ops(op.i32Load, ...memarg(2, 0))
    .set(TBL);
  for (let r = 0; r < mr; r++)
    b.get(PAG)
      .ops(op.i32Load, ...memarg(2, 4 + 4 * r))
      .set(OFF(r));
  b.get(PB).set(PBI).get(K).set(TI);
  b.ops(op.loop, VOID); // the sum's terms: output cells
  b.get(TBL)
    .ops(op.i32Load, ...memarg(2, 0))
    .set(O);
  for (let v = 0; v < V; v++)
    b.get(PBI)
      .v(simd.v128Load, ...memarg(2, 16 * v))
      .set(VB(v));
  for (let r = 0; r < mr; r++) {
    b.get(O)
      .get(OFF(r))
      .ops(op.i32Add)
      .v(simd.v128Load32Splat, ...memarg(2, 0))
      .set(VA);
    for (let v = 0; v < V; v++) madd32(b, fused, VA, VB(v), accv(r, v));
  }
  b.addTo(TBL, 4).addTo(PBI, 4 * nr);
  b.get(TI).i32(1).ops(op.i32Sub).tee(TI).ops(op.brIf, 0);
  b.ops(op.end);
  storeTile(b, tile);
  return b;
}

/**
 * A kernel's body with its 8 parameters, nI32 i32 locals, then the v128 locals of an mr x nr
 * tile: the sums (accv(r, v), row r's vector v of V = nr / 4), B's V vectors (VB(v)) and A's
 * splatted value (VA).
 */
function tileBody(mr: number, nr: number, nI32: number) {
  const V = nr / 4;
  const accv = (r: number, v: number) => nI32 + 8 + r * V + v;
  const VB = (v: number) => nI32 + 8 + mr * V + v;
  const VA = nI32 + 8 + mr * V + V;
  const b = new Body(8, [
    [nI32, I32],
    [mr * V + V + 1, V128],
  ]);
  return { b, V, accv, VB, VA };
}

/** The locals the two kernels' block loops share (byte offsets and counters): openTile's and storeTile's. */
interface TileLocals {
  readonly mr: number;
  readonly nr: number;
  readonly accv: (r: number, v: number) => number;
  readonly ACCG: number;
  readonly ROW: number;
  readonly RS: number;
  readonly PAG: number;
  readonly SA: number;
  readonly SACC: number;
  readonly GI: number;
  readonly PBI: number;
  readonly PB: number;
  readonly ACCQ: number;
  readonly N: number;
}

/**
 * Before a tile's sums: RS := SACC / mr (a row of sums' bytes), opens the loop over the B panels
 * (from byte ACC of the sums) and the loop over the block's G A panels (from byte PA), and zeroes the sums.
 */
function openTile(b: Body, t: TileLocals, PA: number, ACC: number, G: number): void {
  b.get(t.SACC).i32(t.mr).ops(op.i32DivU).set(t.RS);
  b.get(ACC).set(t.ACCQ);
  b.ops(op.loop, VOID); // B panels
  b.get(PA).set(t.PAG).get(t.ACCQ).set(t.ACCG).get(G).set(t.GI);
  b.ops(op.loop, VOID); // A panels of the block
  for (let r = 0; r < t.mr; r++) for (let v = 0; v < t.nr / 4; v++) b.vzero().set(t.accv(r, v));
}

/**
 * After a tile's sums: stores them row-major (row r at ACCG + r*RS), steps to the block's next A
 * panel (closing its loop), then to the next B panel (closing the B panels' loop and the block).
 */
function storeTile(b: Body, t: TileLocals): void {
  const V = t.nr / 4;
  b.get(t.ACCG).set(t.ROW);
  for (let r = 0; r < t.mr; r++) {
    for (let v = 0; v < V; v++)
      b.get(t.ROW)
        .get(t.accv(r, v))
        .v(simd.v128Store, ...memarg(2, 16 * v));
    b.get(t.ROW).get(t.RS).ops(op.i32Add).set(t.ROW);
  }
  b.get(t.PAG).get(t.SA).ops(op.i32Add).set(t.PAG);
  b.get(t.ACCG).get(t.SACC).ops(op.i32Add).set(t.ACCG);
  b.get(t.GI).i32(1).ops(op.i32Sub).tee(t.GI).ops(op.brIf, 0);
  b.ops(op.end);
  b.get(t.PBI).set(t.PB); // the next B panel follows this one
  b.addTo(t.ACCQ, 4 * t.nr);
  b.get(t.N).i32(1).ops(op.i32Sub).tee(t.N).ops(op.brIf, 0);
  b.ops(op.end, op.end);
}
