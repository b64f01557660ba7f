// Lowering a device program for one call's shapes: the same steps for gpu.js (compile.ts) and
// WebGPU (webgpu/compile.ts), each preparing the lowered program for its own device.
import { DynamicShapeError, lower } from '../../codegen/lower/lower.js';
import type { Program } from '../../codegen/kernel/ir.js';
import { CPU_TILE } from '../cpu/fusion.js';
import type { Fallback } from '../fallback.js';
import { bodyOptimizer, type OptimizedProgram, type Shapes } from '../target.js';

/**
 * `p` lowered for `shapes` (Scans and scatters as gathers of at most `gatherLoops` loop iterations) and
 * prepared by `prepare`; shapes that leave an op no static shape interpret the whole function, saying why.
 */
export function lowerForDevice<P>(
  p: OptimizedProgram<unknown>,
  shapes: Shapes,
  gatherLoops: number,
  prepare: (prog: Program) => { readonly prepared: P; readonly fallbacks: readonly Fallback[] },
): { readonly prepared: P | undefined; readonly fallbacks: readonly Fallback[]; readonly invalid: boolean } {
  try {
    const prog = lower({
      targets: p.graph,
      inputSlot: p.inputSlot,
      variableSlot: p.variableSlot,
      inputShapes: shapes,
      tile: CPU_TILE,
      optimizeBody: bodyOptimizer(p.passes),
      gatherLoops,
    });
    return { ...prepare(prog), invalid: false };
  } catch (e) {
    if (!(e instanceof DynamicShapeError)) throw e;
    return {
      prepared: undefined,
      fallbacks: [{ op: e.op, reason: e.message.slice(e.op.length + 2), whole: true }],
      invalid: e.invalid,
    };
  }
}
