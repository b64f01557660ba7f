// A whole product's schedule (its cache blocks and thread split), and the chooser of tuned
// schedules (products' and the elementwise tier's), apart from the strategy step
// that chooses it (strategy.ts) and the matmul renderer that spells it (matmul.ts), so that
// neither imports the other for it.
import type { BufferDecl, LoopKernel, MatmulKernel } from '../kernel/ir.js';
import type { EwPlan, EwSchedule } from './wasm/elementwise.js';
import { BLOCK_BYTES, MAX_BLOCK_PANELS, MIN_BLOCKS_PER_THREAD } from './wasm-kernel.js';

/**
 * The schedule parameters of a whole product's tile sums (wasm-kernel.ts PackArena.tiles), the
 * autotuner's search space on the cpu (tinygrad's BEAM search over a kernel's opts is the anchor:
 * src/runtime/tune.ts). None changes a sum: every tile is summed over t in the same order whatever
 * the block or the thread that sums it, so every schedule gives bit-identical results.
 */
export interface MatmulSchedule {
  /** Bytes of a cache block of A panels, summed against each B panel in turn (a share of L2). */
  readonly blockBytes: number;
  /** Most A panels in one block. */
  readonly maxPanels: number;
  /** Whether the sums may go to the worker threads (the hand-off model decides: handoff.ts) or stay on the calling thread. */
  readonly split: boolean;
  /** With threads, blocks are made small enough that each thread gets at least this many (a worker that wakes late still finds work). */
  readonly perThread: number;
}

/** Today's schedule: blocks of 512 KiB of A panels, at most 16, split where the hand-off model says so, at least 4 blocks per thread. */
export const DEFAULT_MATMUL_SCHEDULE: MatmulSchedule = Object.freeze({
  blockBytes: BLOCK_BYTES,
  maxPanels: MAX_BLOCK_PANELS,
  split: true,
  perThread: MIN_BLOCKS_PER_THREAD,
});

/** Whether `s` is the default schedule (then the generated code is what it was before tuning existed). */
export const isDefaultSchedule = (s: MatmulSchedule): boolean =>
  s.blockBytes === DEFAULT_MATMUL_SCHEDULE.blockBytes &&
  s.maxPanels === DEFAULT_MATMUL_SCHEDULE.maxPanels &&
  s.split === DEFAULT_MATMUL_SCHEDULE.split &&
  s.perThread === DEFAULT_MATMUL_SCHEDULE.perThread;

/** Tuned schedules, asked for at the strategy step (strategy.ts); undefined for the default. */
export interface ScheduleChooser {
  /** A whole product's schedule. */
  matmul(k: MatmulKernel, tiles: TilesCall): MatmulSchedule | undefined;
  /** An elementwise tier kernel's schedule, given its plan under a schedule (`plan(undefined)`: the default's). */
  elementwise?(k: LoopKernel, plan: (s: EwSchedule | undefined) => EwPlan): EwSchedule | undefined;
  /**
   * The order of a JavaScript loop kernel's output loops (positions in `k.vars`, outermost first),
   * asked only for a kernel whose order cannot change a value (loop-order.ts reorderable);
   * `buffers`: the program's, by id (the sizes and dtypes it is timed on).
   */
  loopOrder?(k: LoopKernel, buffers: readonly BufferDecl[]): readonly number[] | undefined;
}

/** The shape of a whole product's tile sums (PackArena.tiles' arguments that decide its cost): what a tuned schedule is keyed by. */
export interface TilesCall {
  readonly B: number;
  readonly MP: number;
  readonly NP: number;
  readonly K: number;
  /** Bytes of one tile's sums, of an A panel, of a batch's B panels. */
  readonly T: number;
  readonly strideA: number;
  readonly strideB: number;
  /** The blocked kernel (BLOCK_EXPORTS' index). */
  readonly variant: number;
  /** Whether the product may be split at all (not sumsAlone). */
  readonly par: boolean;
  /** A convolution summed through an indirection buffer (timed on its own kernel only with its input). */
  readonly indirect: boolean;
}
