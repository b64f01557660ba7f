// K.function on the gpu device's webgpu mode: the same passes and kernel IR as the cpu and the
// gpu.js modes (../compile.ts), rendered as WGSL (src/codegen/wgsl) and run by program.ts in
// the device's worker. Cached like the other targets: optimized graphs by structural key,
// prepared programs by input shapes (their device buffers freed when they leave the cache).
import type { Node } from '../../../ir/node.js';
import type { NDArray } from '../../../ir/ndarray.js';
import { evalContext, nextEpoch } from '../../../ir/interpret.js';
import type { DeviceResult, Executor } from '../../function.js';
import { cpuFusion } from '../../cpu/fusion.js';
import { ProgramCache } from '../../program-cache.js';
import {
  link,
  passesFor,
  type OptimizedProgram,
  type Shapes,
  type LinkedProgram,
  type Specialised,
  type Target,
  type TargetRequest,
} from '../../target.js';
import { debugEnabled, debugLog } from '../../debug.js';
import { sourceOrWhy, type Fallback } from '../../fallback.js';
import { platform } from '#platform';
import {
  prepareWeb,
  releaseWeb,
  runWeb,
  runWebAsync,
  type WebCall,
  webFallbacks,
  type WebPrepared,
  type WebResult,
} from './program.js';
import { forgetPipelines } from './frame.js';
import { webDeviceResult } from './resident.js';
import { lowerForDevice } from '../specialize.js';
import { openedWebGpu, webgpu, webgpuOpened } from './session.js';
import { syncOnPage } from './page.js';
import { KernelTimer, PROFILE_NOTES } from '../../profile.js';
import { simdAdapter } from '../../../codegen/wgsl/strategy.js';
import { withWorkgroupChooser, workgroupChooser } from './tune.js';

interface WebSpec extends Specialised {
  readonly prepared: WebPrepared | undefined;
}

type WebProgram = OptimizedProgram<WebSpec>;

/** Prepared programs holding device buffers (clear_session frees them all: the cache's clear drops without telling). */
const holding = new Set<WebPrepared>();

const programs = new ProgramCache<WebProgram, WebSpec>({
  onDropSpec: (_p, _key, spec) => {
    if (spec.prepared === undefined) return;
    holding.delete(spec.prepared);
    releaseWeb(webgpu(), spec.prepared);
  },
});

function specialize(p: WebProgram, shapes: Shapes): WebSpec {
  // Scans and scatters as gathers (each element folds its own terms), as for gpu.js.
  return lowerForDevice(p, shapes, 65535, (prog) => {
    const gpu = webgpu();
    const simd = simdLanes(gpu.description);
    const prepared =
      p.tune === undefined
        ? prepareWeb(prog, gpu.maxStorageBuffers, simd)
        : withWorkgroupChooser(workgroupChooser(p.tune, gpu, prog, gpu.maxStorageBuffers), () =>
            prepareWeb(prog, gpu.maxStorageBuffers, simd),
          );
    holding.add(prepared);
    if (debugEnabled('gpu'))
      debugLog(
        `gpu:webgpu program for shapes ${shapes.map((s) => `(${s.join(', ')})`).join(' ')}:\n${describeWeb(prepared)}`,
      );
    return { prepared, fallbacks: webFallbacks(prepared) };
  });
}

/**
 * Whether the adapter runs invocations as SIMD lanes on CPU threads (strategy.ts `simdAdapter`, from
 * its description); THEANINE_WEBGPU_SIMD=1 or 0 says so instead (both forms tested on one adapter).
 */
function simdLanes(description: string): boolean {
  const said = platform.env('THEANINE_WEBGPU_SIMD');
  return said === '1' ? true : said === '0' ? false : simdAdapter(description);
}

/** The WGSL of each kernel, and what runs on the host and why (f.source()). */
export function describeWeb(pp: WebPrepared, indent = ''): string {
  return pp.steps
    .map((s) => {
      switch (s.kind) {
        case 'empty':
          return `${indent}// a kernel of no elements`;
        case 'kernel':
          return `${indent}// ${s.kernel.label.replace(/[^A-Za-z0-9_,. [\]]/g, '_')}: workgroups ${s.kernel.groups.join(' x ')}\n${s.kernel.code.replace(/^/gm, indent)}`;
        case 'scan':
          return `${indent}// scan ${s.step.steps} steps, every step's kernels in the call's command buffer:\n${describeWeb(s.body, `${indent}  `)}`;
        case 'host':
          return `${indent}// on the host: ${s.step.kind === 'extern' ? `op ${s.step.def.name}, not compiled: ${s.step.reason}` : `${s.step.kind} kernel ${s.step.label}`} (${s.why})`;
      }
    })
    .join('\n\n');
}

/** K.function's executor on gpu:webgpu. */
export function webgpuExecutor(req: TargetRequest): Executor & { readonly device: string } {
  const gpu = webgpu();
  const debug = debugEnabled('gpu') || platform.env('THEANINE_DEBUG') !== undefined;
  if (debug && gpu.worker.blocking) debugLog(`function on gpu:webgpu (${gpu.description})`);
  let last: WebPrepared | undefined;
  let notCompiled: readonly Fallback[] | undefined;
  let linkedRef: LinkedProgram<WebSpec> | undefined;
  // The profiler's: every dispatch timed on the device, by timestamp queries where it has them
  // (a page's device: once it has opened before this function is made).
  const timing = platform.env('THEANINE_WEBGPU_TIMING') === 'submits' || !gpu.timestamps ? 'submits' : 'timestamps';
  const timed = req.profile === true ? ({ timer: new KernelTimer(), timing } as const) : undefined;
  return link(webgpuTarget, 'gpu:webgpu', programs, req, (linked) => {
    linkedRef = linked;
    return {
      ...(timed !== undefined
        ? {
            kernelTimes: () => timed.timer.take(),
            profileNote: PROFILE_NOTES[timing === 'timestamps' ? 'webgpuTimestamps' : 'webgpuSubmits'],
          }
        : {}),
      get graph(): readonly Node[] {
        return linked.graph();
      },
      device: 'gpu:webgpu',
      source: () => sourceOrWhy(notCompiled, last, describeWeb),
      run(values: readonly NDArray[], learningPhase: number): (NDArray | DeviceResult)[] {
        if (!gpu.worker.blocking) throw syncOnPage(`calling function ${JSON.stringify(req.name)} synchronously`);
        const call = begin(values, learningPhase);
        return 'done' in call ? call.done : finish(runWeb(gpu, call));
      },
      async runAsync(values: readonly NDArray[], learningPhase: number): Promise<(NDArray | DeviceResult)[]> {
        // (a page's device opens on its first call: the adapter's limits are known from then on)
        await webgpuOpened();
        if (debug && !gpu.worker.blocking && last === undefined)
          debugLog(`function on gpu:webgpu (${gpu.description})`);
        const call = begin(values, learningPhase);
        return 'done' in call ? call.done : finish(await runWebAsync(gpu, call));
      },
    };
  });
  /** The call of the specialisation that runs `values`, or its results where the reference interpreter runs it. */
  function begin(values: readonly NDArray[], learningPhase: number): { done: NDArray[] } | WebCall {
    const spec = linkedRef!.runnable(values.map((v) => v.shape));
    const pp = spec.prepared;
    if (pp === undefined) {
      const r = linkedRef!.interpret(values, learningPhase, spec);
      notCompiled = spec.fallbacks;
      return { done: r };
    }
    notCompiled = undefined;
    last = pp;
    holding.add(pp); // (again, where a clear_session freed it and this function still runs it)
    const ctx = evalContext({ learningPhase, epoch: nextEpoch(), print: (m) => console.log(m) });
    return { pp, inputs: values, cells: linkedRef!.cells, ctx, nOut: req.nOut, timed };
  }
  function finish(results: readonly WebResult[]): (NDArray | DeviceResult)[] {
    return results.map((r, k) =>
      'host' in r
        ? r.host.reshape(req.targets[k]!.shape.map((d, i) => d ?? r.host.shape[i]!))
        : webDeviceResult(r.dev, r.shape, r.dtype),
    );
  }
}

export const webgpuTarget: Target<WebSpec> = {
  passes: passesFor(cpuFusion),
  specialize,
  executor: webgpuExecutor,
  clear: () => {
    programs.clear();
    forgetPipelines();
    const d = openedWebGpu();
    if (d === undefined) return;
    for (const pp of holding) releaseWeb(d, pp);
    holding.clear();
    if (d.worker.blocking) d.worker.call({ kind: 'clear' });
    else d.worker.post({ kind: 'clear' });
  },
};
