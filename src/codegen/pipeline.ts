// The codegen pipeline: what happens to an optimized graph (src/passes/pipeline.ts is the list
// of graph passes before it) for one set of input shapes, in order. The shape of tinygrad's
// codegen (`full_rewrite_to_sink` lists every lowering step in order, then a renderer spells
// the result):
//
//   1. specialise shapes  lower.ts `specializeShapes`: concrete types from the input shapes
//   2. lower              lower.ts `lower` (lower-data.ts, lower-pool.ts, lower-ctc.ts,
//                         lower-scan.ts; templates*.ts): the kernel IR, a Program of steps
//   3. collapse           collapse.ts `collapseLoopKernel`: contiguous loops merged, on each loop
//                         kernel as lowering makes it (a kernel that must keep its loops is made
//                         without it), and on the packing kernels of step 4
//   4. choose strategies  cpu/strategy.ts `chooseStrategies`: per step, its tier (WebAssembly
//                         SIMD pool, Philox, elementwise or reduction kernel, or JavaScript) or a
//                         matmul's tile sums, packing kernels, epilogue and schedule (its cache
//                         blocks and thread split: the default, or tuned); a JavaScript loop
//                         kernel cut (split.ts) and scheduled (schedule.ts); tagged beside the steps.
//                         The gpu device: gpu/strategy.ts `chooseGpuStrategies` (gpu.js) and
//                         wgsl/strategy.ts `chooseWebStrategies` (webgpu): per step, on the device
//                         (its loop kernels scheduled; in WGSL, their form) or on the host with
//                         the reason
//   5. plan buffers       plan.ts `planBuffers`: intermediates assigned to a few reused arrays
//   6. render             a renderer spells the prepared program: cpu/driver.ts `renderDriver`
//                         through a binding (cpu/module.ts `buildModule`: a run-time module;
//                         src/runtime/export/render.ts: an exported module), its kernels by
//                         cpu/loop.ts (JavaScript) and wasm/*.ts (WebAssembly); gpu/render.ts
//                         and wgsl/render.ts render the device steps of step 4 for gpu.js and
//                         WebGPU (src/runtime/gpu); renderers only spell what step 4 chose.
//
// Steps 1-3 are `lowerProgram`, 4-5 `prepare`; a cpu renderer takes a `Prepared`. The gpu device
// takes the Program of step 3 and its own step 4 (src/runtime/gpu/program.ts `prepare`,
// webgpu/program.ts `prepareWeb`); its buffers live on the device, so it has no step 5.
import type { Program } from './kernel/ir.js';
import { lower, type LowerSpec } from './lower/lower.js';
import { planBuffers, type Plan } from './transform/plan.js';
import { chooseStrategies, type ScheduleChooser, type StepStrategy } from './cpu/strategy.js';

/** What the cpu renderers take: the program, each step's strategy (in step order) and its buffer plan. */
export interface Prepared {
  readonly program: Program;
  readonly strategies: readonly StepStrategy[];
  readonly plan: Plan;
}

/** A cpu target: whether it has the WebAssembly tiers (the run-time module does; an exported module does not). */
export interface CpuTarget {
  readonly wasm: boolean;
}

/** Steps 1 to 3: the kernel IR of the graph for these input shapes. */
export function lowerProgram(spec: LowerSpec): Program {
  return lower(spec);
}

/**
 * Steps 4 and 5: the strategy of each step for `target`, then the buffer plan. `schedule` gives a
 * whole product's tuned schedule (src/runtime/tune.ts); without it, or where it gives none, the default.
 */
export function prepare(program: Program, target: CpuTarget, schedule?: ScheduleChooser): Prepared {
  const strategies = chooseStrategies(program, target.wasm, schedule);
  const plan = planBuffers(program);
  return { program, strategies, plan };
}
