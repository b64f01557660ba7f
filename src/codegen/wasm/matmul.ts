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
import { Body, I32, V128, memarg, moduleBytes, op, simd } from './encode.js';

function rowPanelBody(): Body {
  const [PA, PB, K, ACC, N] = [0, 1, 2, 3, 4];
  const [PAI, KI] = [5, 6];
  const accv = (c: number, half: number) => 7 + 2 * c + half; // column c, rows 0-1 (half 0) or 2-3 (half 1)
  const [VA0, VA1, VB] = [15, 16, 17];
  const b = new Body(5, [[2, I32], [11, V128]]);
  b.ops(op.block, 0x40).get(N).ops(op.i32Eqz, op.brIf, 0);
  b.ops(op.loop, 0x40); // one tile per B panel; B panels are consecutive, so pb runs on
  for (let col = 0; col < 4; col++) for (let half = 0; half < 2; half++) b.vzero().set(accv(col, half));
  b.get(PA).set(PAI).get(K).set(KI);
  b.ops(op.block, 0x40).get(KI).ops(op.i32Eqz, op.brIf, 0);
  b.ops(op.loop, 0x40);
  b.get(PAI).v(simd.v128Load, ...memarg(3, 0)).set(VA0);
  b.get(PAI).v(simd.v128Load, ...memarg(3, 16)).set(VA1);
  for (let col = 0; col < 4; col++) {
    b.get(PB).v(simd.v128Load64Splat, ...memarg(3, 8 * col)).set(VB);
    for (let half = 0; half < 2; half++) {
      b.get(accv(col, half)).get(half === 0 ? VA0 : VA1).get(VB).v(simd.f64x2Mul).v(simd.f64x2Add).set(accv(col, half));
    }
  }
  b.addTo(PAI, 32).addTo(PB, 32);
  b.get(KI).i32(1).ops(op.i32Sub).tee(KI).ops(op.brIf, 0);
  b.ops(op.end, op.end);
  for (let col = 0; col < 4; col++) {
    for (let half = 0; half < 2; half++) b.get(ACC).get(accv(col, half)).v(simd.v128Store, ...memarg(3, 16 * (2 * col + half)));
  }
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
  const b = new Body(8, [[7, I32], [11, V128]]);
  b.ops(op.block, 0x40).get(N).ops(op.i32Eqz, op.brIf, 0).get(G).ops(op.i32Eqz, op.brIf, 0);
  b.get(ACC).set(ACCQ);
  b.ops(op.loop, 0x40); // B panels
  b.get(PA).set(PAG).get(ACCQ).set(ACCG).get(G).set(GI);
  b.ops(op.loop, 0x40); // A panels of the block
  for (let col = 0; col < 4; col++) for (let half = 0; half < 2; half++) b.vzero().set(accv(col, half));
  b.get(PAG).set(PAI).get(PB).set(PBI).get(K).set(KI);
  b.ops(op.block, 0x40).get(KI).ops(op.i32Eqz, op.brIf, 0);
  b.ops(op.loop, 0x40);
  b.get(PAI).v(simd.v128Load, ...memarg(3, 0)).set(VA0);
  b.get(PAI).v(simd.v128Load, ...memarg(3, 16)).set(VA1);
  for (let col = 0; col < 4; col++) {
    b.get(PBI).v(simd.v128Load64Splat, ...memarg(3, 8 * col)).set(VB);
    for (let half = 0; half < 2; half++) {
      b.get(accv(col, half)).get(half === 0 ? VA0 : VA1).get(VB).v(simd.f64x2Mul).v(simd.f64x2Add).set(accv(col, half));
    }
  }
  b.addTo(PAI, 32).addTo(PBI, 32);
  b.get(KI).i32(1).ops(op.i32Sub).tee(KI).ops(op.brIf, 0);
  b.ops(op.end, op.end);
  for (let col = 0; col < 4; col++) {
    for (let half = 0; half < 2; half++) b.get(ACCG).get(accv(col, half)).v(simd.v128Store, ...memarg(3, 16 * (2 * col + half)));
  }
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

/** The kernel module's bytes: imports env.mem (shared: the memory worker threads sum in together), exports rowPanel. */
export function matmulModuleBytes(shared = false): Uint8Array {
  return moduleBytes([{ name: 'rowPanel', params: 5, body: rowPanelBody() }, { name: 'panelBlock', params: 8, body: panelBlockBody() }], shared ? 'shared' : true);
}
