// Kernel autotuning on the gpu device's webgpu mode (K.function's `tune`, THEANINE_BEAM=N): the
// workgroup size of each loop kernel the device runs (src/codegen/wgsl/strategy.ts
// WorkgroupChooser, WORKGROUP_SIZES), each candidate rendered, compiled and dispatched on the
// device over random buffers of the kernel's sizes, timed by the device's timestamp queries where
// it has them, else by a submit per dispatch waited for (THEANINE_WEBGPU_TIMING=submits chooses
// that one), as the profiler times kernels. The search and its rule are the cpu's
// (../../tune.ts beamSearch and confirmWin: a candidate replaces the default only when faster in
// every confirming pair by more than the default's spread and MIN_GAIN), within the function's
// time budget; a complete search is kept on disk per kernel (its WGSL at the default size) and
// adapter (../../tune-cache.ts), and reused by later processes. tinygrad's BEAM searches its
// GPU kernels' local sizes the same way, timed on the device, cached per kernel and device.
// A workgroup size only regroups invocations: an elementwise kernel computes bit-identical
// values; a row's folds combine their parts in another order.
import type { LoopKernel, Program } from '../../../codegen/kernel/ir.js';
import { renderLoop, type WgslKernel } from '../../../codegen/wgsl/render.js';
import { packKernel, type PackedKernel } from '../../../codegen/wgsl/pack.js';
import {
  setWorkgroupChooser,
  workgroupSizes,
  storageIn,
  webBufferInfo,
  type LoopPlan,
  type WorkgroupChooser,
} from '../../../codegen/wgsl/strategy.js';
import { platform } from '#platform';
import { beamSearch, digest, tuneStats, type SearchResult, type TuneOptions } from '../../tune.js';
import { TuneCache } from '../../tune-cache.js';
import { newBufferId, type WebGpu } from './session.js';
import { paddedBytes, toDevice } from './half.js';
import { storageBytes, type Storage } from '../../../codegen/wgsl/scalar.js';

/** A loop kernel's schedule on the device: invocations per workgroup. */
export interface WorkgroupSchedule {
  readonly workgroup: number;
}

/** The adapter a workgroup size was measured on (the description Dawn or the browser gives). */
export const adapterKey = (gpu: WebGpu): string => `webgpu|${gpu.description}|${platform.runtime}`;

let cache: { key: string; cache: TuneCache } | undefined;

/** The process's tuned workgroup sizes on adapter `gpu` (read from the cache folder on first use). */
export function webTuneCache(gpu: WebGpu): TuneCache {
  const key = adapterKey(gpu);
  if (cache === undefined || cache.key !== key) cache = { key, cache: new TuneCache(() => key) };
  return cache.cache;
}

const TYPES: ReadonlySet<string> = new Set(['f16', 'f32', 'i32', 'u32']);

/**
 * The cache key of a loop kernel: its WGSL at the default workgroup size (its ops, buffer sizes
 * and form), generated names (t317, i52, b3: numbered per compile) renumbered in order of first
 * use, digested.
 */
export function wgslKernelKey(code: string): string {
  const names = new Map<string, number>();
  const canon = code.replace(/\b([a-z])(\d+)\b/g, (m, c: string) => {
    if (TYPES.has(m)) return m;
    let k = names.get(m);
    if (k === undefined) {
      k = names.size;
      names.set(m, k);
    }
    return `${c}${k}`;
  });
  return `wgsl ${digest(new TextEncoder().encode(canon))} ${canon.length}`;
}

/** Dispatches of a candidate per timing; the first warms up and is not counted. */
const DISPATCHES = 6;

/**
 * A timer of workgroup sizes for one kernel: `base` its kernel at the default size, `render(wg)`
 * at a size. Every binding gets a device buffer of its size (f32 values in [0.5, 1.5), inside
 * every approximation's domain; i32 zeros: in-bounds indices), and each timing is one request to the device dispatching the
 * candidate DISPATCHES times, each in a pass of its own: the median of all but the first. The
 * buffers and every candidate's pipeline are made first, untimed. `release` frees them.
 */
export function workgroupTimer(
  gpu: WebGpu,
  p: Program,
  base: PackedKernel,
  render: (wg: number) => WgslKernel,
  sizes: readonly number[],
): { time(s: WorkgroupSchedule): number; release(): void } {
  const timing = platform.env('THEANINE_WEBGPU_TIMING') === 'submits' || !gpu.timestamps ? 'submits' : 'timestamps';
  const fill = (ty: Storage | undefined, n: number) => {
    if (ty === 'i32') return new Int32Array(Math.max(1, n));
    const a = new Float32Array(Math.max(1, n));
    for (let i = 0; i < n; i++) a[i] = 0.5 + Math.random();
    return ty === 'f16' ? toDevice(ty, a) : a;
  };
  const bufs = base.binds.map((b) => ({ id: newBufferId(), n: p.buffers[b]!.size, ty: storageIn(p, b, gpu.f16) }));
  if (base.packed !== undefined) bufs.push({ id: newBufferId(), n: base.packed.total, ty: base.packed.ty });
  const ids = bufs.map((b) => b.id);
  const keys = new Map(
    sizes.map((wg): [number, { key: string; code: WgslKernel }] => {
      const code = render(wg);
      return [wg, { key: `tune|${code.code}`, code }];
    }),
  );
  // the buffers and every candidate's pipeline, before any timing (a compile is not a candidate's time)
  const r = gpu.worker.call(
    {
      kind: 'run',
      allocs: bufs.map((b) => ({ id: b.id, bytes: paddedBytes(storageBytes(b.ty) * Math.max(1, b.n)) })),
      writes: bufs.map((b) => ({ id: b.id, data: fill(b.ty, b.n) })),
      compile: [...keys.values()].map((k) => ({ key: k.key, code: k.code.code })),
      reads: [],
    },
    'a tuning timing',
  );
  const release = () =>
    gpu.worker.call(
      { kind: 'run', evict: [...keys.values()].map((k) => k.key), frees: ids, reads: [] },
      'a tuning timing',
    );
  if (!r.ok) {
    release();
    throw new Error(`gpu:webgpu: compiling the workgroup sizes of kernel ${base.label}: ${r.error}`);
  }
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 === 1 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  };
  return {
    time(s) {
      const k = keys.get(s.workgroup)!;
      const op = { k: 'd', key: k.key, binds: ids, groups: k.code.groups };
      const t = gpu.worker.call(
        { kind: 'run', ops: Array.from({ length: DISPATCHES }, () => op), reads: [], timing },
        'a tuning timing',
      );
      if (!t.ok)
        throw new Error(`gpu:webgpu: timing workgroup size ${s.workgroup} of kernel ${k.code.label}: ${t.error}`);
      return median(t.times!.slice(1));
    },
    release,
  };
}

/**
 * The workgroup chooser of one specialisation (program `p`, on `gpu`, binding at most
 * `maxBindings` buffers per shader): a kernel's stored size where the cache has it, else a search
 * within what is left of `opts.budgetMs` (a complete search is stored; one the budget cut short is
 * used but not stored); the default once the budget is spent, for the kernels of a Scan body (their
 * buffers are the body's), and where the device cannot be waited for (a page's: tuning needs
 * Node's worker). The budget is exceeded by one kernel's setup (its buffers and pipelines) and
 * one pair of timings at most.
 */
export function workgroupChooser(
  opts: TuneOptions,
  gpu: WebGpu,
  p: Program,
  maxBindings: number,
  now: () => number = () => performance.now(),
): WorkgroupChooser {
  const deadline = now() + opts.budgetMs;
  const top = new Set<unknown>(p.steps);
  const info = webBufferInfo(p, maxBindings, gpu.f16);
  const store = webTuneCache(gpu);
  return {
    loop(k: LoopKernel, plan: LoopPlan) {
      if (!top.has(k) || !gpu.worker.blocking) {
        tuneStats.untimed++;
        return undefined;
      }
      const render = (wg: number) => {
        const at = { ...plan, workgroup: wg };
        return plan.pack === undefined
          ? renderLoop(k, at, info)
          : packKernel(renderLoop(k, at, { ...info, maxBindings: Number.POSITIVE_INFINITY }), plan.pack);
      };
      const base = render(plan.workgroup);
      const key = wgslKernelKey(base.code);
      const hit = store.get(key);
      if (hit !== undefined) return 'workgroup' in hit ? hit.workgroup : undefined;
      if (now() >= deadline) {
        tuneStats.outOfBudget++;
        return undefined;
      }
      const t0 = now();
      const sizes = workgroupSizes(plan);
      const timer = workgroupTimer(gpu, p, base, render, sizes);
      const setupMs = now() - t0;
      let r: SearchResult<WorkgroupSchedule>;
      try {
        r = beamSearch<WorkgroupSchedule>(
          [{ field: 'workgroup', values: sizes }],
          opts.beam,
          timer.time,
          deadline,
          now,
          { workgroup: plan.workgroup },
        );
      } finally {
        timer.release();
      }
      tuneStats.searches++;
      tuneStats.candidates += r.candidates;
      tuneStats.searchMs += setupMs + r.searchMs;
      if (r.complete)
        store.set(key, {
          ...r.best,
          ms: r.ms,
          defaultMs: r.defaultMs,
          searchMs: setupMs + r.searchMs,
          candidates: r.candidates,
        });
      return r.best.workgroup;
    },
  };
}

/** `make()` with `chooser` installed as the workgroup chooser (the one before it put back after). */
export function withWorkgroupChooser<T>(chooser: WorkgroupChooser, make: () => T): T {
  const was = setWorkgroupChooser(chooser);
  try {
    return make();
  } finally {
    setWorkgroupChooser(was);
  }
}
