// What the cpu's kernels fuse, as the FusionTarget the fusion pass is handed (src/passes/fusion.ts).
// The gpu device renders the same kernel IR, so its targets take `cpuFusion` too.
import type { FusionTarget } from '../../passes/fusion.js';
import { classify, matmulPrologue, shapeOnly } from '../../codegen/lower/templates.js';
import { poolAlone } from '../../codegen/cpu/wasm/pool.js';

/** Register tile of the cpu matmul micro-kernel summing in float64 (measured: see bench/README.md). */
export const CPU_TILE = { mr: 4, nr: 4 } as const;

/** What the kernel-IR renderers fuse (src/codegen/lower/templates.ts). */
export const cpuFusion = { classify, shapeOnly, matmulPrologue } satisfies FusionTarget;
/** The cpu target's: poolings the WebAssembly pool tier takes stay kernels of their own (codegen/cpu/wasm/pool.ts poolAlone). */
export const cpuTargetFusion = { ...cpuFusion, alone: poolAlone } satisfies FusionTarget;
