// The compiler behind K.function on the gpu device: the same passes and the same kernel IR as
// the cpu (src/runtime/cpu/compile.ts), rendered as gpu.js kernels (src/codegen/gpu/render.ts) and
// run by program.ts. Cached like the cpu: optimized graphs by structural key, prepared programs
// by input shapes. Optimizer `none` lowers the graph as built (one kernel per node). Shapes known
// only from values (an op whose output size depends on them) are interpreted, as on the cpu.
import { provenanceComment } from '../../ir/provenance.js';
import type { Node } from '../../ir/node.js';
import { requireGpuTemplates } from '../../codegen/lower/user.js';
import { clearGpuKernels, finishKernels } from './kernels.js';
import { KernelTimer, PROFILE_NOTES } from '../profile.js';
import type { NDArray } from '../../ir/ndarray.js';
import { evalContext, nextEpoch } from '../../ir/interpret.js';
import type { EvalContext } from '../../ir/op.js';
import type { Executor, DeviceResult } from '../function.js';
import { cpuFusion } from '../cpu/fusion.js';
import { ProgramCache } from '../program-cache.js';
import { link, passesFor } from '../target.js';
import type { OptimizedProgram, Shapes, Specialised, Target, TargetRequest } from '../target.js';
import { debugEnabled, debugLog } from '../debug.js';
import { gpuDevice, webgpuRequested } from './device.js';
import { webgpuExecutor, webgpuTarget } from './webgpu/compile.js';
import type { DeviceBuffer } from './buffer.js';
import { prepare, runPrepared, type Prepared } from './program.js';
import { Runner, hostVal, hostValue, type Val } from './runner.js';
import { storeOnDevice } from './resident.js';
import { lowerForDevice } from './specialize.js';
import { sourceOrWhy, type Fallback } from '../fallback.js';
import { platform } from '#platform';

type GpuProgram = OptimizedProgram<GpuSpec>;

/** Programs by structural key and their prepared programs by shapes, bounded as on the cpu. */
const programs = new ProgramCache<GpuProgram, GpuSpec>({
  // Its constants' uploads go with it (a function calling those shapes again prepares anew).
  onDropSpec: (_p, _key, spec) => {
    for (const buf of spec.prepared?.uploads.values() ?? []) buf.release();
  },
});

function clearGpuCompileCache(): void {
  programs.clear();
  clearGpuKernels();
}

interface GpuSpec extends Specialised {
  /** Undefined where shapes are known only at run time (interpreted). */
  readonly prepared: Prepared | undefined;
}

/** Extern steps the device runs by their reference implementation on the host (Scan bodies included). */
function hostExterns(pp: Prepared): Fallback[] {
  return pp.steps.flatMap((s): Fallback[] => {
    if (s.kind === 'scan') return hostExterns(s.body);
    if (s.kind === 'host' && s.step.kind === 'extern')
      return [{ op: s.step.def.name, reason: s.step.reason, whole: false }];
    return [];
  });
}

function specialize(p: GpuProgram, shapes: Shapes): GpuSpec {
  const device = gpuDevice();
  // Scans and scatters as gathers where their loops fit the device's limit (a margin for the kernel's other loops).
  return lowerForDevice(p, shapes, Number.isFinite(device.maxLoop) ? Math.floor(device.maxLoop / 2) : 65535, (prog) => {
    const prepared = prepare(prog, device);
    if (debugEnabled('gpu'))
      debugLog(`gpu program for shapes ${shapes.map((s) => `(${s.join(', ')})`).join(' ')}:\n${describe(prepared)}`);
    return { prepared, fallbacks: hostExterns(prepared) };
  });
}

/** The kernels of a prepared program, and what runs on the host and why (f.source()). */
export function describe(pp: Prepared, indent = ''): string {
  return pp.steps
    .map((s) => {
      switch (s.kind) {
        case 'kernels': {
          const note = provenanceComment(s.origin);
          return s.kernels
            .map(
              (k) =>
                `${indent}// ${k.label.replace(/[^A-Za-z0-9_,. ]/g, '_')}: ${k.kernel.size} elements\n${note === undefined ? '' : `${indent}// ${note}\n`}${[...k.kernel.functions, k.kernel.source].join('\n').replace(/^/gm, indent)}`,
            )
            .join('\n');
        }
        case 'op':
          return `${indent}// op ${s.step.def.name} (a gpu kernel of its own)\n${[...s.lowered.kernel.functions, s.lowered.kernel.source].join('\n').replace(/^/gm, indent)}`;
        case 'scan':
          return `${indent}// scan ${s.step.steps} steps, a host loop over its body:\n${describe(s.body, `${indent}  `)}`;
        case 'print':
          return `${indent}// print: a host callback (the value read back and written through the print hook)`;
        case 'host':
          return `${indent}// on the host: ${s.step.kind === 'extern' ? `op ${s.step.def.name}, not compiled: ${s.step.reason}` : `${s.step.kind} kernel`} (${s.why})`;
      }
    })
    .join('\n\n');
}

interface GpuExecutor extends Executor {
  /** `gpu:<mode>`. */
  readonly device: string;
}

/** An update value left on the device: each variable it is stored into takes a reference of its own. */
function deviceResult(v: Val, buf: DeviceBuffer): DeviceResult {
  let first = true;
  return {
    shape: v.shape,
    dtype: v.dtype,
    storeInto(cell) {
      storeOnDevice(cell, first ? buf : buf.share(), v.shape, v.dtype);
      first = false;
    },
  };
}

/** K.function's executor for device "gpu". */
function gpuCompiledExecutor(req: TargetRequest): GpuExecutor {
  const device = gpuDevice();
  if (debugEnabled('gpu') || platform.env('THEANINE_DEBUG') !== undefined)
    debugLog(`function on ${device.name} (${device.description})`);
  let last: Prepared | undefined;
  let notCompiled: readonly Fallback[] | undefined;
  const timer = req.profile === true ? new KernelTimer() : undefined;
  return link(gpuTarget, 'gpu', programs, req, (linked) => ({
    ...(timer !== undefined ? { kernelTimes: () => timer.take(), profileNote: PROFILE_NOTES.gpujs } : {}),
    get graph(): readonly Node[] {
      return linked.graph();
    },
    device: device.name,
    source: () => sourceOrWhy(notCompiled, last, describe),
    run(values: readonly NDArray[], learningPhase: number): (NDArray | DeviceResult)[] {
      const spec = linked.runnable(values.map((v) => v.shape));
      const pp = spec.prepared;
      if (pp === undefined) {
        const r = linked.interpret(values, learningPhase, spec);
        notCompiled = spec.fallbacks;
        return r;
      }
      notCompiled = undefined;
      last = pp;
      const ctx: EvalContext = evalContext({ learningPhase, epoch: nextEpoch(), print: (m) => console.log(m) });
      const r = new Runner(device, ctx, timer, finishKernels);
      try {
        const vals = runPrepared(
          r,
          pp,
          values.map((v): Val => hostVal(v)),
          linked.cells,
          learningPhase,
        );
        return vals.map((v, k) => {
          // Update values computed here stay on the device (leaves and their aliases are copied).
          if (k >= req.nOut && v.dev !== undefined && v.host === undefined && r.owned.includes(v.dev))
            return deviceResult(v, v.dev.share());
          return hostValue(v).reshape(req.targets[k]!.shape.map((d, i) => d ?? v.shape[i]!));
        });
      } finally {
        for (const b of r.owned) b.release();
      }
    },
  }));
}

/**
 * The gpu: the same passes and kernel IR as the cpu (fusion asks the same templates), rendered as
 * gpu.js kernels per input shapes; `none` lowers the graph as built (one kernel per node).
 */
export const gpuTarget: Target<GpuSpec> = {
  passes: passesFor(cpuFusion),
  specialize,
  executor: (req) => {
    // THEANINE_GPU_MODE=webgpu: WGSL kernels on WebGPU (user ops run their wgsl template there: src/codegen/wgsl/user.ts; without one, on the host, reported).
    if (webgpuRequested()) return webgpuExecutor(req);
    requireGpuTemplates(req.targets); // user ops need a gpu template (src/codegen/lower/user.ts)
    return gpuCompiledExecutor(req);
  },
  clear: () => {
    clearGpuCompileCache();
    webgpuTarget.clear();
  },
};
