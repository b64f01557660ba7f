// Codegen step 4 on the cpu (src/codegen/pipeline.ts): the strategy of each step, chosen before
// rendering and kept beside the program's steps, so a renderer only spells what is chosen here
// (tinygrad decides its optimisations on the kernel AST before the renderer sees it). A loop
// step gets its tier: a WebAssembly SIMD kernel (pooling and its adjoint: ../wasm/pool.ts; random
// draws: ../wasm/philox.ts, a draw only the next elementwise loop reads drawn inside that loop's
// kernel; fused elementwise loops: ../wasm/elementwise.ts; reductions: ../wasm/reduce.ts) where
// one applies, else JavaScript. A matmul gets how its tiles are summed and its packing kernels.
import type { DType } from '../../ir/dtype.js';
import { ExprBuilder } from '../kernel/expr.js';
import { collapseLoopKernel } from '../transform/collapse.js';
import { stepBuffers, type LoopKernel, type MatmulKernel, type Program } from '../kernel/ir.js';
import { planElementwise, type EwPlan } from './wasm/elementwise.js';
import { planBroadcast, type BcPlan } from './wasm/broadcast.js';
import { planPool, type PoolPlan } from './wasm/pool.js';
import { planReduce, type RedPlan } from './wasm/reduce.js';
import { planRowPair } from './wasm/reduce-pair.js';
import { fusablePair, planPhilox, type PhiloxPlan } from './wasm/philox.js';
import { indirectSums, packing, stagedPacks, sumsWhole, tierEpilogue, tilesCall } from './matmul.js';
import { wasmTileModule } from './wasm-kernel.js';
import { smallPacking, smallPrologue, smallRows } from './small-matmul.js';
import { DEFAULT_MATMUL_SCHEDULE, type MatmulSchedule, type ScheduleChooser } from './matmul-schedule.js';
import { jsLoop, type JsLoop } from './loop.js';
import { reorderable } from './loop-order.js';

/** How a loop step runs. */
export type LoopStrategy =
  /** a pool_grad's first kernel, whose result only the next step (in the pool tier) would read: not run */
  | { readonly kind: 'loop'; readonly tier: 'skip' }
  | { readonly kind: 'loop'; readonly tier: 'pool'; readonly plan: PoolPlan }
  /** a draw rendered inside the next step's kernel (that step is a 'philox-pair') */
  | { readonly kind: 'loop'; readonly tier: 'philox-next'; readonly plan: PhiloxPlan }
  | { readonly kind: 'loop'; readonly tier: 'philox-pair'; readonly draw: PhiloxPlan; readonly plan: EwPlan }
  | { readonly kind: 'loop'; readonly tier: 'philox'; readonly plan: PhiloxPlan }
  | { readonly kind: 'loop'; readonly tier: 'elementwise'; readonly plan: EwPlan }
  | { readonly kind: 'loop'; readonly tier: 'broadcast'; readonly plan: BcPlan }
  | { readonly kind: 'loop'; readonly tier: 'reduce'; readonly plan: RedPlan }
  /** the first of two row kernels whose intermediate only the second reads: run inside the second (../wasm/reduce-pair.ts) */
  | { readonly kind: 'loop'; readonly tier: 'pair-first' }
  /** the second of such a pair: both kernels' loop bodies over each block of rows, as one kernel */
  | { readonly kind: 'loop'; readonly tier: 'reduce-pair'; readonly plan: RedPlan }
  /** JavaScript, its inner loop cut into column ranges where its selects compare that loop's index with constants (../split.ts), scheduled */
  | { readonly kind: 'loop'; readonly tier: 'js'; readonly js: JsLoop };

/** How a matmul step runs: its tile sums, its packing (calls of the shared packers and loop kernels) and its epilogue. */
export interface MatmulStrategy {
  readonly kind: 'matmul';
  /** Summed by the WebAssembly micro-kernel. */
  readonly wasm: boolean;
  /** Every tile summed first (cache blocks over the worker threads), then the epilogue (matmul.ts sumsWhole). */
  readonly all: boolean;
  /** A float32 convolution summed through an indirection buffer (A never packed). */
  readonly indirect: boolean;
  /** A product of few rows summed by rows32 on the calling thread, A row-major (small-matmul.ts); `all` is set too (the whole product's sums and epilogue). */
  readonly small: boolean;
  readonly packing: { readonly calls: ReturnType<typeof packing>['calls']; readonly kernels: readonly PackKernel[] };
  /** Strided float32 operands the thread pool packs from the staging area (where the binding gives one). */
  readonly staged: ReturnType<typeof stagedPacks>;
  /** The epilogue in the SIMD tier, where it can render it. */
  readonly epilogue?: EwPlan | undefined;
  /** How its tile sums are blocked and split over the threads (the default unless tuned: src/runtime/tune.ts). */
  readonly schedule: MatmulSchedule;
}

export {
  DEFAULT_MATMUL_SCHEDULE,
  isDefaultSchedule,
  type MatmulSchedule,
  type ScheduleChooser,
  type TilesCall,
} from './matmul-schedule.js';

/** A packing loop kernel (collapsed), cut and scheduled for the JavaScript renderer; `tier`: rendered by the SIMD tier instead (small-matmul.ts smallPrologue). */
export interface PackKernel {
  readonly kernel: LoopKernel;
  readonly js: JsLoop;
  readonly tier?: EwPlan;
}

export type StepStrategy = LoopStrategy | MatmulStrategy | { readonly kind: 'scan' | 'print' | 'extern' };

/** The strategy of every step of `p`, in step order; `wasm`: whether the target has the WebAssembly tiers. */
export function chooseStrategies(p: Program, wasm: boolean, schedule?: ScheduleChooser): StepStrategy[] {
  const dtype = (id: number) => p.buffers[id]!.dtype;
  // a JavaScript loop kernel, its output loops in the tuned order where the order cannot change a value
  const jsStep = (k: LoopKernel): LoopStrategy =>
    js(k, schedule?.loopOrder !== undefined && reorderable(k) ? schedule.loopOrder(k, p.buffers) : undefined);
  let drawn: PhiloxPlan | undefined;
  let paired: RedPlan | undefined;
  return p.steps.map((s, i): StepStrategy => {
    if (paired !== undefined) {
      const plan = paired;
      paired = undefined;
      if (s.kind !== 'loop')
        throw new Error(`internal: step ${i} follows the first of a row-kernel pair but is a ${s.kind}`);
      return { kind: 'loop', tier: 'reduce-pair', plan };
    }
    if (s.kind === 'matmul') return matmulStrategy(s, wasm, dtype, schedule);
    if (s.kind !== 'loop') {
      drawn = undefined;
      return { kind: s.kind };
    }
    const prev = drawn;
    drawn = undefined;
    if (wasm && prev === undefined) {
      paired = planRowPair(p, i, dtype);
      if (paired !== undefined) return { kind: 'loop', tier: 'pair-first' };
    }
    const next = p.steps[i + 1];
    if (s.poolAux === true && wasm && next?.kind === 'loop' && planPool(next, dtype) !== undefined)
      return { kind: 'loop', tier: 'skip' };
    const pool = wasm ? planPool(s, dtype) : undefined;
    if (pool !== undefined) return { kind: 'loop', tier: 'pool', plan: pool };
    if (prev !== undefined) {
      const pair = fusablePair(prev, planElementwise(s, dtype, true));
      if (pair !== undefined) return { kind: 'loop', tier: 'philox-pair', draw: prev, plan: pair };
    }
    const draw = wasm && prev === undefined ? planPhilox(s, dtype) : undefined;
    if (draw !== undefined) {
      if (
        next?.kind === 'loop' &&
        drawnByNext(p, i, draw.out) &&
        fusablePair(draw, planElementwise(next, dtype, true)) !== undefined
      ) {
        drawn = draw;
        return { kind: 'loop', tier: 'philox-next', plan: draw };
      }
      return { kind: 'loop', tier: 'philox', plan: draw };
    }
    if (!wasm) return jsStep(s);
    const simd = planElementwise(s, dtype);
    if (simd !== undefined) {
      const tuned = schedule?.elementwise?.(s, (x) => planElementwise(s, dtype, false, x)!);
      return {
        kind: 'loop',
        tier: 'elementwise',
        plan: tuned === undefined ? simd : planElementwise(s, dtype, false, tuned)!,
      };
    }
    const bc = planBroadcast(s, dtype);
    if (bc !== undefined) return { kind: 'loop', tier: 'broadcast', plan: bc };
    const red = planReduce(s, dtype);
    return red !== undefined ? { kind: 'loop', tier: 'reduce', plan: red } : jsStep(s);
  });
}

const js = (k: LoopKernel, order?: readonly number[]): LoopStrategy => ({
  kind: 'loop',
  tier: 'js',
  js: jsLoop(k, order),
});

/** Whether step i's draw into `out` is a temporary that only step i + 1 reads (so it can be drawn there). */
function drawnByNext(p: Program, i: number, out: number): boolean {
  return (
    p.buffers[out]!.role === 'temp' &&
    !p.targets.some((t) => t.buf === out) &&
    p.steps.every(
      (t, j) =>
        j === i ||
        (j === i + 1
          ? !stepBuffers(t).writes.includes(out)
          : !stepBuffers(t).reads.includes(out) && !stepBuffers(t).writes.includes(out)),
    )
  );
}

function matmulStrategy(
  s: MatmulKernel,
  target: boolean,
  dtype: (id: number) => DType,
  schedule?: ScheduleChooser,
): MatmulStrategy {
  const wasm = target && wasmTileModule() !== null;
  const small = smallRows(s, wasm);
  const all = small || (wasm && sumsWhole(s));
  const indirect = all && !small && indirectSums(s, wasm);
  const pk = small ? smallPacking(s) : packing(s, indirect);
  // the packing loop kernels, collapsed as lowering collapses its own (in float64, as they copy)
  const prologue = small ? smallPrologue(s, dtype) : undefined;
  const kernels = pk.kernels.map((k): PackKernel => {
    const kernel = collapseLoopKernel(k, new ExprBuilder(() => 'float64'));
    return {
      kernel,
      js: jsLoop(kernel),
      ...(prologue !== undefined && k.stores[0]!.buf === s.packA ? { tier: prologue } : {}),
    };
  });
  return {
    kind: 'matmul',
    wasm,
    all,
    indirect,
    small,
    packing: { calls: pk.calls, kernels },
    staged: all && !small ? stagedPacks(s, dtype) : { staged: new Map(), size: 0 },
    epilogue: all ? tierEpilogue(s, dtype) : undefined,
    schedule:
      (all && !small && schedule !== undefined ? schedule.matmul(s, tilesCall(s, indirect)) : undefined) ??
      DEFAULT_MATMUL_SCHEDULE,
  };
}
