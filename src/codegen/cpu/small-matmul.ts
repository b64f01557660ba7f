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
import {
  ROWS_EXPORT,
  threadCount,
  threadPool,
  type PackPanel,
  type PanelBlock,
  type RowVec,
  type Rows32,
  type RowsArgs,
} from './threads.js';
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
 * B's strided view when a few-row product may read it row-major from a copy (axpy32: a view
 * contiguous along the columns, B[t, n] at base + t*st + n), else undefined (rows32 on B's panels).
 * The copy costs K memory copies of a row (one in all where the rows lie back to back); packing
 * into panels a strided gather of every element, 4-5x the copy (784 x 256: 180 us against 35 us,
 * one thread). The sums are the same, in the same order; rows32 on panels is faster per call
 * (the kernels alone, 784 x 256, one thread: 32 rows 193-204 us against 211-219 us, 4 rows 25
 * against 26 us, one row 15 against 16.5 us). So a B packed anew at every call (not a kept pack)
 * is read row-major, and a kept one too until panelsAfter says packing pays.
 */
export function smallB(k: MatmulKernel): StridedOperand | undefined {
  const sb = stridedOperand(k.b, k.batch, k.n, k.k);
  return sb !== undefined && (sb.sr === 1 || k.n.size === 1) && k.nr === 4 ? sb : undefined;
}

/**
 * Calls in a row that read one kept B row-major before it is packed into panels (PackArena.rowsFirst):
 * the ski-rental rule (pack once the row-major reads have cost what packing costs; at most twice
 * the best choice in hindsight), from the figures above (784 x 256): packing costs about 145 us
 * more than a copy, and a call reading a copy costs the copy (35 us) and slower sums (about
 * 0.5 us a row) over a call on kept panels: 5 calls at 1 or 2 rows, 4 at 3 to 26 rows, 3 from 27
 * on. Measured on one shape: the ratio, not the size, is what the rule keeps.
 */
export function panelsAfter(k: MatmulKernel): number {
  return Math.ceil(145 / (35 + 0.5 * k.m.size));
}

/**
 * The packing of a product rows32 sums: A row-major (a call of rowsA where it is a view contiguous
 * along t, else its packing kernel with panels of one row: row i, step t at i*K + t); B row-major
 * padded to whole groups of nr columns (rowsB, for axpy32) where smallB says so, else in the
 * panels of nr columns every product uses.
 */
export function smallPacking(k: MatmulKernel): ReturnType<typeof packing> {
  const sa = smallA(k);
  const sb = stridedOperand(k.b, k.batch, k.n, k.k);
  const rowMajor = smallB(k) !== undefined;
  return {
    kernels: [...packKernels({ ...k, mr: 1 }, sa === undefined, false), ...packKernels(k, false, sb === undefined)],
    calls: [
      ...(sa !== undefined ? [{ buf: sa.buf, dst: k.packA, op: sa, rows: k.m.size, p: 1 }] : []),
      ...(sb !== undefined
        ? [
            {
              buf: sb.buf,
              dst: k.packB,
              op: sb,
              rows: k.n.size,
              p: k.nr,
              ...(rowMajor ? { rowMajor: true as const } : {}),
            },
          ]
        : []),
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
  const sub = (x: IExpr) =>
    substitute(x, (u) =>
      u.id === k.m.id ? ivar(row) : u.id === k.k.id ? tIdx : u.id === k.batch.id ? iconst(0) : undefined,
    );
  const [value] = mapIndices(b, [k.a], sub, (vs) => vs);
  const kernel: LoopKernel = {
    kind: 'loop',
    label: 'pack A rows',
    vars: [row, ...tv.map(([v]) => v)],
    stores: [{ buf: k.packA, index: iadd(iscale(ivar(row), k.k.size), tIdx), value: value!, dtype: 'float32' }],
  };
  return planElementwise(collapseLoopKernel(kernel, b), dtype);
}

/**
 * A's rows into the packing buffer row-major (row i at dst[i*K ..]): each row one TypedArray.set
 * (a memory copy), all of them one where the rows lie back to back.
 */
export function rowsA(
  dst: Float32Array,
  src: Float32Array | Float64Array,
  base: number,
  sr: number,
  rows: number,
  K: number,
): void {
  if (sr === K) {
    dst.set(src.subarray(base, base + rows * K));
    return;
  }
  for (let i = 0; i < rows; i++) dst.set(src.subarray(base + i * sr, base + i * sr + K), i * K);
}

/**
 * B's rows into the packing buffer row-major, each padded to `width` columns with zeros (row t at
 * dst[t*width ..]): one TypedArray.set a row, one in all where the rows lie back to back unpadded.
 */
export function rowsB(
  dst: Float32Array,
  src: Float32Array | Float64Array,
  base: number,
  st: number,
  K: number,
  N: number,
  width: number,
): void {
  if (st === N && N === width) {
    dst.set(src.subarray(base, base + K * N));
    return;
  }
  for (let t = 0; t < K; t++) {
    dst.set(src.subarray(base + t * st, base + t * st + N), t * width);
    for (let n = N; n < width; n++) dst[t * width + n] = 0;
  }
}

/**
 * The hand-off model's kind of work for a rows32 job of `work` multiply-adds (./handoff.ts): a rate
 * per job size, apart from the tiles' and from each other's, since a call's fixed cost weighs on
 * small jobs: a rate shared with a small product (a batch-1 inference's 256 x 10, a few us) would
 * understate a large one's (its 784 x 256) and split it where splitting does not pay.
 */
const rowsKind = (work: number) => -1 - work;

let bound:
  | {
      memory: WasmMemory;
      module: WasmModule;
      rows32: Rows32;
      axpy32: Rows32;
      blocks: (PanelBlock | PackPanel | RowVec | Rows32)[];
    }
  | undefined;

/** rows32 over the packing arena's memory, in the tile kernels' form, and the kernels a rows job runs (the arena's, then rows32): made again when the arena makes a new memory. */
function kernel(): NonNullable<typeof bound> {
  const memory = packArena.wasmMemory;
  if (memory === undefined) throw new Error('internal: rows32 called without the WebAssembly packing arena');
  const module = rowsModule(typeof SharedArrayBuffer === 'function' && memory.buffer instanceof SharedArrayBuffer);
  if (bound !== undefined && bound.memory === memory && bound.module === module) return bound;
  const ex = new WA!.Instance(module, { env: { mem: memory } }).exports;
  const rows32 = ex['rows32'] as Rows32,
    axpy32 = ex['axpy32'] as Rows32;
  const blocks = [...packArena.blocks];
  blocks[ROWS_EXPORT] = rows32;
  blocks[ROWS_EXPORT + 1] = axpy32;
  return (bound = { memory, module, rows32, axpy32, blocks });
}

/**
 * rows32 of the arena (byte offsets into it): M rows of A at pa (lda bytes apart) against NP B
 * panels at pb, sums at acc (ldc bytes a row). Split by columns over the worker threads where
 * the arena is shared with them (two claims per thread, each a range of B's panels) where the
 * hand-off model, measured, says it pays (./handoff.ts, on for these whatever setHandoffModel
 * says: a worker round trip only where it pays; no size threshold). `axpy`: B row-major (ldc
 * bytes a row, axpy32) instead of in panels.
 */
export function rows32(...[pa, lda, pb, K, acc, ldc, M, NP, axpy = 0]: [...RowsArgs, axpy?: number]): void {
  const k = kernel();
  const work = M * NP * 4 * K;
  const pool = threadPool();
  const shared = typeof SharedArrayBuffer === 'function' && k.memory.buffer instanceof SharedArrayBuffer;
  const threads =
    pool !== undefined && shared && NP >= 2 ? handoffThreads(work, threadCount(), rowsKind(work), true) : 1;
  const t0 = performance.now();
  if (threads <= 1) (axpy ? k.axpy32 : k.rows32)(pa, lda, pb, K, acc, ldc, M, NP);
  else {
    const per = Math.ceil(NP / (2 * threads));
    pool!.run(threads, k.blocks, [], [2, Math.ceil(NP / per), pa, lda, pb, K, acc, ldc, M, NP, per, axpy]);
  }
  handoffMeasured(work, threads, performance.now() - t0, rowsKind(work));
}

/** Lets the instance go (clear_session: the arena's memory goes too). */
export function releaseRows(): void {
  bound = undefined;
}

/** The generated call of rows32 for product `k`: A row-major at pa (K floats a row), B's panels (or where the expression `rowMajor` is 1: its rows, as wide as the sums') at pb, the sums row-major in `acc` (NP*nr floats a row: the whole product's layout). */
export function renderSmallSums(k: MatmulKernel, pa: string, pb: string, rowMajor: string): string {
  const K = k.k.size,
    NP = Math.ceil(k.n.size / k.nr);
  if (k.nr !== 4) throw new Error(`internal: rows32 reads B in panels of 4 columns (nr ${k.nr})`);
  return `rt.rows32(${pa}.byteOffset, ${4 * K}, ${pb}.byteOffset, ${K}, acc.byteOffset, ${4 * NP * k.nr}, ${k.m.size}, ${NP}${rowMajor === '0' ? '' : `, ${rowMajor}`});`;
}
