// The few-row float32 product kernel: rows32 sums a product of 1 to SMALL_ROWS_MAX rows whose A
// is read row-major, where it lies (no packing into panels), against B packed in panels of 4
// columns (../matmul.ts' packing: column c of step t at pb + 16(qK + t) + 4c, the layout of
// the kept weight packs). XNNPACK's f32-gemm WebAssembly SIMD kernels with A broadcast one
// element at a time (1x8, 4x8 "splat") are the anchor: a product of one or a few rows (inference
// at a small batch) is then as cheap per row as a full tile, where an 8-row tile would spend most
// of its multiply-adds on padding rows.
import { Body, I32, madd32, memarg, moduleBytes, op, simd, V128, VOID } from './encode.js';
import { endRowsPass } from './matmul.js';

/** Most rows of a product rows32 sums (../small-matmul.ts chooses it up to here). */
export const SMALL_ROWS_MAX = 32;

/**
 * Row groups and the B panels each sums per pass: R rows against G panels hold R G sums, R
 * broadcast A values and one B vector in registers (x64 has 16 vector registers, V8 keeps one
 * as scratch): 4 rows x 2 panels, 2 x 4, 1 x 8, the same count of sums as the 8 x 4 tile.
 */
const GROUPS: readonly (readonly [rows: number, panels: number])[] = [
  [4, 2],
  [2, 4],
  [1, 8],
];
/**
 * Steps of t per pass of the loop, by rows of the group: two for one row (784 x 256: 18 -> 15 us),
 * one for more (two steps per pass measured 60 -> 36 GFLOP/s at 4 rows, 58 -> 35 at 2: V8's
 * registers no longer hold the sums).
 */
const UNROLL = new Map([[1, 2]]);
/**
 * axpy32's row groups: one pass reads G * 16 bytes of each of B's rows, so 2 x 4 and 1 x 8 read
 * whole 64-byte lines where 4 x 2 reads half of one (32 x 784 x 256 on one thread: 210 us against
 * 229 us; rows32 on panels 192 us).
 */
const ROW_MAJOR_GROUPS = GROUPS.filter(([, panels]) => panels >= 4);
/** The select instruction (5.4.3: the first operand where the condition is non-zero, else the second). */
const SELECT = 0x1b;
/**
 * B panels every row group is summed against before the next ones: the block (8 panels of K
 * steps, 100 KiB at K = 784) is read from memory once and stays in L2 while the row groups reuse
 * it, where all of B (800 KiB) passed for each group. 32 x 784 x 256 after the caches were
 * flushed: 318-378 us with B whole, 282-301 us in blocks of 2 to 16; the same with warm caches.
 */
const PANEL_BLOCK = 8;

/**
 * rows32(pa, lda, pb, K, acc, ldc, M, NP): for rows i = 0..M-1 (row i of step t at pa + i*lda +
 * 4t) and the NP B panels, the float32 sums s += a*b for t = 0..K-1 (multiply, then add, or with
 * `fused` the relaxed multiply-add: the tile kernels' operations in their order, so a row's sums
 * equal theirs bit for bit) stored row-major: row i,
 * column 4q + c at acc + i*ldc + 16q + 4c. B panels go in blocks of PANEL_BLOCK; against each
 * block, rows in groups of 4, then 2, then 1; within a group, the block's panels in passes of G
 * (then 4, 2, 1 for the panels left).
 *
 * `rowMajorB` (axpy32): B is read row-major where it lies, unpacked: column 4q + c of step t at
 * pb + t*ldc + 16q + 4c (B's rows as wide as the sums' rows, padded to whole groups of 4
 * columns), so acc[i, 4q..] += a[i, t] * B[t, 4q..]: the same sums in the same order as rows32's
 * (bit for bit), with no packing of B. XNNPACK's f32-gemm kernels read a packed B; a row-major B
 * read in the same register blocking is the "axpy" form of few-row products (BLAS gemv "N").
 */
function rows32Body(fused: boolean, rowMajorB = false, NB = PANEL_BLOCK): Body {
  const [PA, LDA, PB, K, ACC, LDC, M, NP] = [0, 1, 2, 3, 4, 5, 6, 7];
  const [KB, ROWA, ROWC, Q, PBQ, ACCQ, KI, OUT] = [8, 9, 10, 11, 12, 13, 14, 15];
  const AP = (r: number) => 16 + r; // row r's pointer (4 at most)
  const P = (g: number) => 20 + g; // B panel g's pointer (8 at most)
  const [QB, PBB, ACCB, MI, NBL] = [28, 29, 30, 31, 32]; // panels left, the block's B panels and sums, rows left, the block's panels
  const I32S = 33; // vector locals are numbered after the i32 ones
  const vacc = (r: number, g: number, G: number) => I32S + r * G + g;
  const VA = (r: number) => I32S + 8 + r;
  const VB = I32S + 12;
  const b = new Body(8, [
    [I32S - 8, I32],
    [13, V128],
  ]);
  if (rowMajorB)
    b.i32(16).set(KB); // bytes from one group of 4 columns of B to the next
  else b.get(K).i32(4).ops(op.i32Shl).set(KB); // bytes of one B panel
  b.get(PB).set(PBB).get(ACC).set(ACCB).get(NP).set(QB);
  b.ops(op.block, VOID, op.loop, VOID); // blocks of NB panels, every row against each
  b.get(QB).ops(op.i32Eqz, op.brIf, 1);
  b.i32(NB).get(QB).get(QB).i32(NB).ops(op.i32GeU, SELECT).set(NBL);
  b.get(PA).set(ROWA).get(ACCB).set(ROWC).get(M).set(MI);
  for (const [R, GMAX] of rowMajorB ? ROW_MAJOR_GROUPS : GROUPS) {
    b.ops(op.block, VOID, op.loop, VOID); // groups of R rows while R are left
    b.get(MI).i32(R).ops(op.i32LtU, op.brIf, 1);
    b.get(PBB).set(PBQ).get(ROWC).set(ACCQ).get(NBL).set(Q);
    const passes = [GMAX, ...[4, 2, 1].filter((g) => g < GMAX)];
    for (const G of passes) {
      b.ops(op.block, VOID, op.loop, VOID); // passes of G panels while G are left
      b.get(Q).i32(G).ops(op.i32LtU, op.brIf, 1);
      const U = UNROLL.get(R) ?? 1;
      for (let r = 0; r < R; r++) for (let g = 0; g < G; g++) b.vzero().set(vacc(r, g, G));
      for (let r = 0; r < R; r++) b.get(ROWA).get(LDA).i32(r).ops(op.i32Mul, op.i32Add).set(AP(r));
      // B row-major: a pointer per step of a pass of the loop (step u's row at P(u)), panel g at offset 16g of the row
      if (rowMajorB) for (let u = 0; u < U; u++) b.get(PBQ).get(LDC).i32(u).ops(op.i32Mul, op.i32Add).set(P(u));
      else for (let g = 0; g < G; g++) b.get(PBQ).get(KB).i32(g).ops(op.i32Mul, op.i32Add).set(P(g));
      // U steps per pass of the loop (A at offsets 4u, B at 16u; pointers moved once), then the K mod U left one by one
      const steps = (U: number) => {
        for (let u = 0; u < U; u++) {
          for (let r = 0; r < R; r++)
            b.get(AP(r))
              .v(simd.v128Load32Splat, ...memarg(2, 4 * u))
              .set(VA(r));
          for (let g = 0; g < G; g++) {
            if (rowMajorB)
              b.get(P(u))
                .v(simd.v128Load, ...memarg(2, 16 * g))
                .set(VB);
            else
              b.get(P(g))
                .v(simd.v128Load, ...memarg(2, 16 * u))
                .set(VB);
            for (let r = 0; r < R; r++) madd32(b, fused, VA(r), VB, vacc(r, g, G));
          }
        }
        if (rowMajorB) for (let v = 0; v < U; v++) b.get(P(v)).get(LDC).i32(U).ops(op.i32Mul, op.i32Add).set(P(v));
        else for (let g = 0; g < G; g++) b.addTo(P(g), 16 * U);
        for (let r = 0; r < R; r++) b.addTo(AP(r), 4 * U);
      };
      for (const [n, u] of U > 1
        ? ([
            [K, U],
            [-1, 1],
          ] as const)
        : ([[K, 1]] as const)) {
        if (n === K) b.get(K).i32(Math.log2(u)).ops(op.i32ShrU).set(KI);
        else
          b.get(K)
            .i32(U - 1)
            .ops(op.i32And)
            .set(KI);
        b.ops(op.block, VOID).get(KI).ops(op.i32Eqz, op.brIf, 0);
        b.ops(op.loop, VOID); // steps t
        steps(u);
        b.get(KI).i32(1).ops(op.i32Sub).tee(KI).ops(op.brIf, 0);
        b.ops(op.end, op.end);
      }
      endRowsPass(b, R, G, (r, g) => vacc(r, g, G), { ACCQ, ROW: OUT, RS: LDC, PBQ, KB, Q });
    }
    b.get(ROWA).get(LDA).i32(R).ops(op.i32Mul, op.i32Add).set(ROWA);
    b.get(ROWC).get(LDC).i32(R).ops(op.i32Mul, op.i32Add).set(ROWC);
    b.get(MI).i32(R).ops(op.i32Sub).set(MI);
    b.ops(op.br, 0);
    b.ops(op.end, op.end);
  }
  b.get(PBB).get(KB).get(NBL).ops(op.i32Mul, op.i32Add).set(PBB);
  b.get(ACCB).get(NBL).i32(4).ops(op.i32Shl, op.i32Add).set(ACCB);
  b.get(QB).get(NBL).ops(op.i32Sub).set(QB);
  b.ops(op.br, 0);
  b.ops(op.end, op.end);
  return b;
}

/** The module's bytes: imports env.mem (shared: the packing arena of a process with worker threads), exports rows32 and axpy32 (B row-major); `fused` only where the runtime has relaxed SIMD. */
export function rowsModuleBytes(shared: boolean, fused: boolean): Uint8Array {
  return moduleBytes(
    [
      { name: 'rows32', params: 8, body: rows32Body(fused) },
      { name: 'axpy32', params: 8, body: rows32Body(fused, true) },
    ],
    shared ? 'shared' : true,
  );
}
