// Products of few rows (inference at a small batch: 1 to SMALL_ROWS_MAX rows) under the
// WebAssembly kernel: A is copied row-major into the packing arena (or its prologue evaluated
// there row by row) instead of packed into panels of the tile's 8 or 12 rows, B is the usual
// packed (and kept) operand, and ./wasm/rows.ts' rows32 sums every row, row-major, as a whole
// product's tiles are (matmul.ts sumsWhole), so the epilogue is the whole product's (in the SIMD
// tier where it can be); large ones split by columns over the worker threads. XNNPACK's f32-gemm
// 1x8 and 4x8 "splat" kernels are the anchor: measured on 784 x 256 (one thread, CPU time), 32
// rows 221 us against 351 us for the 8 x 4 tiles, one row 15 us against 87 us (the tile's padding
// rows) and 19 us (rowVec32_1).
import type { MatmulKernel } from '../kernel/ir.js';
import { WA, type WasmMemory, type WasmModule } from './wasm/encode.js';
import { SMALL_ROWS_MAX } from './wasm/rows.js';
import { handoffMeasured, handoffThreads } from './handoff.js';
import { ROWS_EXPORT, threadCount, threadPool, type PackPanel, type PanelBlock, type RowVec, type Rows32 } from './threads.js';
import { packKernels, stridedOperand, tLoops, type packing, type StridedOperand } from './matmul.js';
import { ExprBuilder } from '../kernel/expr.js';
import { iadd, iconst, iscale, ivar, newVar, substitute, type IExpr } from '../kernel/index-expr.js';
import type { LoopKernel } from '../kernel/ir.js';
import { collapseLoopKernel, mapIndices } from '../transform/collapse.js';
import { planElementwise, type EwPlan } from './wasm/elementwise.js';
import type { DType } from '../../ir/dtype.js';
import { packArena, rowsModule } from './wasm-kernel.js';

/** Whether a product is summed by rows32: float32 sums of one matrix of 1..SMALL_ROWS_MAX rows (not a convolution's indirect A). */
export function smallRows(k: MatmulKernel, wasm: boolean): boolean {
  return wasm && k.sum === 'float32' && k.indirect === undefined && k.batch.size === 1 && k.m.size <= SMALL_ROWS_MAX;
}

/** A's strided view when rows32 reads it as copied by rowsA (contiguous along t); undefined: its packing kernel writes it row-major. */
export function smallA(k: MatmulKernel): StridedOperand | undefined {
  const sa = stridedOperand(k.a, k.batch, k.m, k.k);
  return sa !== undefined && sa.st === 1 ? sa : undefined;
}

/**
 * The packing of a product rows32 sums: A row-major (a call of rowsA where it is a view contiguous
 * along t, else its packing kernel with panels of one row: row i, step t at i*K + t), B in the
 * panels of nr columns every product uses (so its kept pack is the same).
 */
export function smallPacking(k: MatmulKernel): ReturnType<typeof packing> {
  const sa = smallA(k);
  const sb = stridedOperand(k.b, k.batch, k.n, k.k);
  return {
    kernels: [...packKernels({ ...k, mr: 1 }, sa === undefined, false), ...packKernels(k, false, sb === undefined)],
    calls: [
      ...(sa !== undefined ? [{ buf: sa.buf, dst: k.packA, op: sa, rows: k.m.size, p: 1 }] : []),
      ...(sb !== undefined ? [{ buf: sb.buf, dst: k.packB, op: sb, rows: k.n.size, p: k.nr }] : []),
    ],
  };
}

/**
 * A read through a prologue (an elementwise function of other buffers: the previous layer's bias
 * and activation) evaluated into its rows by the SIMD tier, where the tier takes the loop (rows of
 * A, each K long, stored row-major in float32 as the JavaScript packing kernel stores them: the
 * operand's value rounded once to the float32 packing buffer); undefined: the JavaScript kernel.
 */
export function smallPrologue(k: MatmulKernel, dtype: (buf: number) => DType): EwPlan | undefined {
  if (smallA(k) !== undefined || dtype(k.packA) !== 'float32') return undefined;
  const b = new ExprBuilder(dtype);
  const row = newVar(k.m.size);
  const tv = tLoops(k.a, k.k);
  const tIdx = iadd(...tv.map(([v, st]) => iscale(ivar(v), st)));
  const sub = (x: IExpr) => substitute(x, (u) => (u.id === k.m.id ? ivar(row) : u.id === k.k.id ? tIdx : u.id === k.batch.id ? iconst(0) : undefined));
  const [value] = mapIndices(b, [k.a], sub, (vs) => vs);
  const kernel: LoopKernel = {
    kind: 'loop', label: 'pack A rows', vars: [row, ...tv.map(([v]) => v)],
    stores: [{ buf: k.packA, index: iadd(iscale(ivar(row), k.k.size), tIdx), value: value!, dtype: 'float32' }],
  };
  return planElementwise(collapseLoopKernel(kernel, b), dtype);
}

/**
 * A's rows into the packing buffer row-major (row i at dst[i*K ..]): each row one TypedArray.set
 * (a memory copy), all of them one where the rows lie back to back.
 */
export function rowsA(dst: Float32Array, src: Float32Array | Float64Array, base: number, sr: number, rows: number, K: number): void {
  if (sr === K) { dst.set(src.subarray(base, base + rows * K)); return; }
  for (let i = 0; i < rows; i++) dst.set(src.subarray(base + i * sr, base + i * sr + K), i * K);
}

/** The handoff model's kind of work for rows32 (./handoff.ts: a rate of its own, apart from the tiles'). */
const ROWS_KIND = -1;

let bound: { memory: WasmMemory; module: WasmModule; rows32: Rows32; blocks: (PanelBlock | PackPanel | RowVec | Rows32)[] } | undefined;

/** rows32 over the packing arena's memory, in the tile kernels' form, and the kernels a rows job runs (the arena's, then rows32): made again when the arena makes a new memory. */
function kernel(): NonNullable<typeof bound> {
  const memory = packArena.wasmMemory;
  if (memory === undefined) throw new Error('internal: rows32 called without the WebAssembly packing arena');
  const module = rowsModule(typeof SharedArrayBuffer === 'function' && memory.buffer instanceof SharedArrayBuffer);
  if (bound !== undefined && bound.memory === memory && bound.module === module) return bound;
  const rows32 = new WA!.Instance(module, { env: { mem: memory } }).exports['rows32'] as Rows32;
  const blocks = [...packArena.blocks];
  blocks[ROWS_EXPORT] = rows32;
  return bound = { memory, module, rows32, blocks };
}

/**
 * rows32 of the arena (byte offsets into it): M rows of A at pa (lda bytes apart) against NP B
 * panels at pb, sums at acc (ldc bytes a row). Split by columns over the worker threads where
 * the arena is shared with them (two claims per thread, each a range of B's panels) where the
 * hand-off model, measured, says it pays (./handoff.ts, on for these whatever setHandoffModel
 * says: a worker round trip only where it pays; no size threshold).
 */
export function rows32(pa: number, lda: number, pb: number, K: number, acc: number, ldc: number, M: number, NP: number): void {
  const k = kernel();
  const work = M * NP * 4 * K;
  const pool = threadPool();
  const shared = typeof SharedArrayBuffer === 'function' && k.memory.buffer instanceof SharedArrayBuffer;
  const threads = pool !== undefined && shared && NP >= 2 ? handoffThreads(work, threadCount(), ROWS_KIND, true) : 1;
  const t0 = performance.now();
  if (threads <= 1) k.rows32(pa, lda, pb, K, acc, ldc, M, NP);
  else {
    const per = Math.ceil(NP / (2 * threads));
    pool!.run(threads, k.blocks, [], [2, Math.ceil(NP / per), pa, lda, pb, K, acc, ldc, M, NP, per]);
  }
  handoffMeasured(work, threads, performance.now() - t0, ROWS_KIND);
}

/** Lets the instance go (clear_session: the arena's memory goes too). */
export function releaseRows(): void {
  bound = undefined;
}

/** The generated call of rows32 for product `k`: A row-major at pa (K floats a row), B's panels at pb, the sums row-major in `acc` (NP*nr floats a row: the whole product's layout). */
export function renderSmallSums(k: MatmulKernel, pa: string, pb: string): string {
  const K = k.k.size, NP = Math.ceil(k.n.size / k.nr);
  if (k.nr !== 4) throw new Error(`internal: rows32 reads B in panels of 4 columns (nr ${k.nr})`);
  return `rt.rows32(${pa}.byteOffset, ${4 * K}, ${pb}.byteOffset, ${K}, acc.byteOffset, ${4 * NP * k.nr}, ${k.m.size}, ${NP});`;
}
