// The compiler behind K.function on the gpu device: the same passes and the same kernel IR as
// the cpu (src/runtime/compile.ts), rendered as gpu.js kernels (src/codegen/gpu/render.ts) and
// run by program.ts. Cached like the cpu: optimized graphs by structural key, prepared programs
// by input shapes. Optimizer `none` lowers the graph as built (one kernel per node). Shapes known
// only from values (an op whose output size depends on them) are interpreted, as on the cpu.
import { provenanceComment } from '../../ir/provenance.js';
import { clearGpuKernels } from './kernels.js';
import type { Node, VariableCell } from '../../ir/node.js';
import type { NDArray } from '../../ir/ndarray.js';
import { evaluate, nextEpoch } from '../../ir/interpret.js';
import type { EvalContext } from '../../ir/op.js';
import { formatPassReport, runPasses, type Pass } from '../../passes/pass.js';
import type { OptimizerLevel } from '../../passes/pipeline.js';
import { pipelineKey, resolvePipeline, type PassSelection } from '../../passes/user.js';
import { fusedLabel } from '../../passes/fusion.js';
import { DynamicShapeError, lower } from '../../codegen/lower.js';
import type { Executor, Optimizer, DeviceResult } from '../function.js';
import { CPU_TILE, bodyOptimizer, cpuTarget, structuralKey } from '../compile.js';
import { ProgramCache, shapesKey } from '../program-cache.js';
import { debugEnabled, debugLog } from '../debug.js';
import { gpuDevice, type GpuDevice } from './device.js';
import type { DeviceBuffer } from './buffer.js';
import { prepare, runPrepared, type Prepared } from './program.js';
import { Runner, hostVal, hostValue, type Val } from './runner.js';
import { storeOnDevice } from './resident.js';
import { checkFallbacks, describeFallbacks, fallbackPolicy, type Fallback, type FallbackPolicy } from '../fallback.js';
import { platform } from '#platform';

interface GpuProgram {
  readonly graph: readonly Node[];
  readonly passes: readonly Pass[];
  readonly inputSlot: ReadonlyMap<Node, number>;
  readonly variableSlot: ReadonlyMap<Node, number>;
  /** Prepared programs by input shapes (none where shapes are known only at run time), and what is not compiled. */
  readonly specs: Map<string, GpuSpec>;
}

/** Programs by structural key and their prepared programs by shapes, bounded as on the cpu. */
const programs = new ProgramCache<GpuProgram, GpuSpec>((_p, _key, spec) => {
  // Its constants' uploads go with it (a function calling those shapes again prepares anew).
  for (const buf of spec.prepared?.uploads.values() ?? []) buf.release();
});

export function clearGpuCompileCache(): void {
  programs.clear();
  clearGpuKernels();
}

function compileGraph(inputs: readonly Node[], targets: readonly Node[], passes: readonly Pass[], variables: readonly Node[]): GpuProgram {
  const onPass = debugEnabled('passes')
    ? (r: Parameters<typeof formatPassReport>[0], g: Parameters<typeof formatPassReport>[1]) => platform.writeStderr(formatPassReport(r, g, { label: fusedLabel }))
    : undefined;
  const graph = passes.length === 0 ? targets : runPasses(passes, { outputs: targets }, onPass === undefined ? {} : { onPass }).outputs;
  return {
    graph, passes,
    inputSlot: new Map(inputs.map((n, i) => [n, i])),
    variableSlot: new Map(variables.map((v, i) => [v, i])),
    specs: new Map(),
  };
}

interface GpuSpec {
  readonly prepared: Prepared | undefined;
  readonly fallbacks: readonly Fallback[];
  /** Interpreted because shapes do not fit: the interpreter's error comes first. */
  readonly invalid: boolean;
}

/** Extern steps the device runs by their reference implementation on the host (Scan bodies included). */
function hostExterns(pp: Prepared): Fallback[] {
  return pp.steps.flatMap((s): Fallback[] => {
    if (s.kind === 'scan') return hostExterns(s.body);
    if (s.kind === 'host' && s.step.kind === 'extern') return [{ op: s.step.def.name, reason: s.step.reason, whole: false }];
    return [];
  });
}

function specialize(p: GpuProgram, shapes: readonly (readonly number[])[], device: GpuDevice): GpuSpec {
  try {
    const prog = lower({
      targets: p.graph, inputSlot: p.inputSlot, variableSlot: p.variableSlot, inputShapes: shapes, tile: CPU_TILE, optimizeBody: bodyOptimizer(p.passes),
      // Scans and scatters as gathers where their loops fit the device's limit (a margin for the kernel's other loops).
      gatherLoops: Number.isFinite(device.maxLoop) ? Math.floor(device.maxLoop / 2) : 65535,
    });
    const prepared = prepare(prog, device);
    if (debugEnabled('gpu')) debugLog(`gpu program for shapes ${shapes.map((s) => `(${s.join(', ')})`).join(' ')}:\n${describe(prepared)}`);
    return { prepared, fallbacks: hostExterns(prepared), invalid: false };
  } catch (e) {
    if (!(e instanceof DynamicShapeError)) throw e;
    return { prepared: undefined, fallbacks: [{ op: e.op, reason: e.message.slice(e.op.length + 2), whole: true }], invalid: e.invalid };
  }
}

/** The kernels of a prepared program, and what runs on the host and why (f.source()). */
export function describe(pp: Prepared, indent = ''): string {
  return pp.steps.map((s) => {
    switch (s.kind) {
      case 'kernels': {
        const note = provenanceComment(s.origin);
        return s.kernels.map((k) => `${indent}// ${k.label.replace(/[^A-Za-z0-9_,. ]/g, '_')}: ${k.kernel.size} elements\n${note === undefined ? '' : `${indent}// ${note}\n`}${[...k.kernel.functions, k.kernel.source].join('\n').replace(/^/gm, indent)}`).join('\n');
      }
      case 'op': return `${indent}// op ${s.step.def.name} (a gpu kernel of its own)\n${[...s.lowered.kernel.functions, s.lowered.kernel.source].join('\n').replace(/^/gm, indent)}`;
      case 'scan': return `${indent}// scan ${s.step.steps} steps, a host loop over its body:\n${describe(s.body, `${indent}  `)}`;
      case 'print': return `${indent}// print: a host callback (the value read back and written through the print hook)`;
      case 'host': return `${indent}// on the host: ${s.step.kind === 'extern' ? `op ${s.step.def.name}, not compiled: ${s.step.reason}` : `${s.step.kind} kernel`} (${s.why})`;
    }
  }).join('\n\n');
}

export interface GpuCompileRequest {
  readonly inputs: readonly Node[];
  readonly targets: readonly Node[];
  readonly nOut: number;
  readonly level: Optimizer;
  /** User passes added, passes removed (src/passes/user.ts). */
  readonly passes?: PassSelection;
  /** The function's name and fallback rule (src/runtime/fallback.ts). */
  readonly name?: string;
  readonly fallback?: FallbackPolicy;
}

export interface GpuExecutor extends Executor {
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
export function gpuCompiledExecutor(req: GpuCompileRequest): GpuExecutor {
  const device = gpuDevice();
  if (debugEnabled('gpu') || platform.env('THEANINE_DEBUG') !== undefined) debugLog(`function on ${device.name} (${device.description})`);
  // The same passes as the cpu (fusion asks the same templates); the list is part of the key.
  const passes = req.level === 'none' ? [] : resolvePipeline(req.level as OptimizerLevel, cpuTarget, req.passes);
  const { key, variables } = structuralKey(req.inputs, req.targets, `${req.level}[${pipelineKey(passes)}]`, 'gpu');
  const prog = programs.program(key, () => compileGraph(req.inputs, req.targets, passes, variables));
  const cells: VariableCell[] = variables.map((v) => v.cell!);
  let last: Prepared | undefined;
  let notCompiled: readonly Fallback[] | undefined;
  const specFor = (shapes: readonly (readonly number[])[]): GpuSpec => programs.spec(prog, shapesKey(shapes), () => specialize(prog, shapes, device));
  const policy = req.fallback ?? fallbackPolicy('function', undefined);
  const warned = { warned: false };
  const name = req.name ?? 'function';
  return {
    graph: prog.graph,
    device: device.name,
    source: () => (notCompiled !== undefined
      ? `// not compiled: ${describeFallbacks(notCompiled)}; this function runs in the reference interpreter on the host`
      : last === undefined ? '// not run yet: call the function once, then ask again' : describe(last)),
    run(values: readonly NDArray[], learningPhase: number): (NDArray | DeviceResult)[] {
      const spec = specFor(values.map((v) => v.shape));
      if (!spec.invalid) checkFallbacks(name, spec.fallbacks, policy, warned);
      const pp = spec.prepared;
      if (pp === undefined) {
        const feeds = new Map<Node, NDArray>(req.inputs.map((n, i) => [n, values[i]!]));
        const r = evaluate(req.targets, { feeds, learningPhase });
        if (spec.invalid) checkFallbacks(name, spec.fallbacks, policy, warned);
        notCompiled = spec.fallbacks;
        return r;
      }
      notCompiled = undefined;
      last = pp;
      const ctx: EvalContext = { learningPhase, epoch: nextEpoch(), print: (m) => console.log(m) };
      const r = new Runner(device, ctx);
      try {
        const vals = runPrepared(r, pp, values.map((v): Val => hostVal(v)), cells, learningPhase);
        return vals.map((v, k) => {
          // Update values computed here stay on the device (leaves and their aliases are copied).
          if (k >= req.nOut && v.dev !== undefined && v.host === undefined && r.owned.includes(v.dev)) return deviceResult(v, v.dev.share());
          return hostValue(v).reshape(req.targets[k]!.shape.map((d, i) => d ?? v.shape[i]!));
        });
      } finally {
        for (const b of r.owned) b.release();
      }
    },
  };
}
