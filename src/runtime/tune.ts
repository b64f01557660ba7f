// Kernel autotuning on the cpu device (K.function's `tune`, THEANINE_BEAM=N): a beam search over
// each whole matrix product's schedule (../codegen/cpu/strategy.ts MatmulSchedule: the cache
// block of A panels, the most panels in a block, whether the worker threads may take it, the
// fewest blocks per thread), each
// candidate timed on this machine on the product's own kernel over random operands of its shape,
// within a time budget; the best is kept on disk per kernel structure and machine
// (./tune-cache.ts) and reused by later processes. tinygrad's BEAM=N (a beam of N schedules
// widened one optimisation axis at a time, kernels timed in isolation on random buffers, results in
// a disk cache) is the anchor. A schedule only moves work between blocks and threads, so a tuned
// product computes bit-identical results. The elementwise tier's kernels (../codegen/cpu/wasm/
// ew-schedule.ts EwSchedule: the unroll, independent vectors per loop iteration, and whether a
// loop splits over the worker threads) are searched the same way, each timed running its loop on
// random values; they compute bit-identical results too. A JavaScript loop kernel's output loop
// order (../codegen/cpu/loop-order.ts), only where no order can change a value, is searched over
// its permutations, each rendered and timed on buffers of the program's sizes.
import { platform } from '#platform';
import { ValueError } from '../ir/errors.js';
import { igemmA, windowA } from '../codegen/cpu/igemm.js';
import {
  DEFAULT_MATMUL_SCHEDULE,
  type MatmulSchedule,
  type ScheduleChooser,
  type TilesCall,
} from '../codegen/cpu/strategy.js';
import { threadCount } from '../codegen/cpu/threads.js';
import { packArena } from '../codegen/cpu/wasm-kernel.js';
import { indirectGeometry, windowRows, type MatmulKernel } from '../codegen/kernel/ir.js';
import {
  CHUNK,
  EW_STREAMS,
  ewKernel,
  ewKernelId,
  sharedTier,
  splitFrom,
  type EwPlan,
  type EwSchedule,
} from '../codegen/cpu/wasm/elementwise.js';
import { machineKey, TuneCache, type TunedEntry } from './tune-cache.js';
import type { BufferDecl, LoopKernel } from '../codegen/kernel/ir.js';
import { identityOrder, isOrder, loopOrders, loopRunner, loopSource } from '../codegen/cpu/loop-order.js';

/** How a function is tuned: schedules kept in the beam, and the milliseconds one specialisation may spend searching. */
export interface TuneOptions {
  readonly beam: number;
  readonly budgetMs: number;
}

/** K.function's `tune`: true (THEANINE_BEAM's beam, else 2), a beam width, or both fields. */
export type TuneOption = boolean | number | { readonly beam?: number; readonly budgetMs?: number };

/** Milliseconds a specialisation spends searching unless told (THEANINE_BEAM_MS, `tune.budgetMs`). */
export const DEFAULT_BUDGET_MS = 2000;
/** The beam width of `tune: true` without THEANINE_BEAM. */
const DEFAULT_BEAM = 2;
/** A candidate replaces the default only when its median is this fraction faster (timings on a loaded machine vary by a few percent). */
export const MIN_GAIN = 0.03;

const isBeam = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 1 && x <= 64;
const isBudget = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x) && x >= 0;

function envInt(name: string, ok: (x: number) => boolean, allowed: string): number | undefined {
  const v = platform.env(name);
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!ok(n)) throw new ValueError(`${name} is ${JSON.stringify(v)}; allowed: ${allowed}`);
  return n;
}

/** THEANINE_BEAM: the beam width every cpu function is tuned with (0 or unset: none). */
export function beamFromEnv(): number | undefined {
  const n = envInt('THEANINE_BEAM', (x) => x === 0 || isBeam(x), 'an integer from 0 (off) to 64');
  return n === 0 ? undefined : n;
}

const budgetFromEnv = (): number =>
  envInt('THEANINE_BEAM_MS', isBudget, 'milliseconds, a number >= 0') ?? DEFAULT_BUDGET_MS;

/** A function's tuning from its `tune` option and THEANINE_BEAM / THEANINE_BEAM_MS; undefined: not tuned. */
export function tuneOptions(opt: unknown, fn = 'function'): TuneOptions | undefined {
  if (opt === undefined) {
    const beam = beamFromEnv();
    return beam === undefined ? undefined : { beam, budgetMs: budgetFromEnv() };
  }
  if (opt === false) return undefined;
  if (opt === true) return { beam: beamFromEnv() ?? DEFAULT_BEAM, budgetMs: budgetFromEnv() };
  if (isBeam(opt)) return { beam: opt, budgetMs: budgetFromEnv() };
  if (typeof opt === 'object' && opt !== null && !Array.isArray(opt)) {
    const o = opt as Record<string, unknown>;
    const extra = Object.keys(o).filter((k) => k !== 'beam' && k !== 'budgetMs');
    if (extra.length > 0)
      throw new ValueError(`${fn}: tune has unknown field ${JSON.stringify(extra[0])} (allowed: beam, budgetMs)`);
    if (o['beam'] !== undefined && !isBeam(o['beam']))
      throw new ValueError(`${fn}: tune.beam must be an integer from 1 to 64, got ${String(o['beam'])}`);
    if (o['budgetMs'] !== undefined && !isBudget(o['budgetMs']))
      throw new ValueError(`${fn}: tune.budgetMs must be a number of milliseconds >= 0, got ${String(o['budgetMs'])}`);
    return {
      beam: (o['beam'] as number | undefined) ?? beamFromEnv() ?? DEFAULT_BEAM,
      budgetMs: (o['budgetMs'] as number | undefined) ?? budgetFromEnv(),
    };
  }
  throw new ValueError(
    `${fn}: tune must be true, false, a beam width (an integer from 1 to 64) or { beam, budgetMs }, got ${typeof opt === 'number' ? opt : JSON.stringify(opt)}`,
  );
}

/** One axis of the search: a schedule field and the values it takes. */
export interface Axis<S = MatmulSchedule> {
  readonly field: keyof S & string;
  readonly values: readonly (number | boolean | readonly number[])[];
}

/** The cpu search space, in the order the beam widens it: cache block bytes, panels per block, then with threads the split and the blocks per thread. */
export function searchAxes(call: TilesCall, threads: number): Axis[] {
  const axes: Axis[] = [
    { field: 'blockBytes', values: [32, 64, 128, 256, 512, 1024, 2048].map((k) => k * 1024) },
    { field: 'maxPanels', values: [2, 4, 8, 16, 32, 64] },
  ];
  if (call.par && threads > 1)
    axes.push({ field: 'split', values: [true, false] }, { field: 'perThread', values: [1, 2, 4, 8, 16] });
  return axes;
}

/** A search's outcome: the schedule kept, its time and the default's, what it cost, and whether the budget cut it short. */
export interface SearchResult<S = MatmulSchedule> {
  readonly best: S;
  readonly ms: number;
  readonly defaultMs: number;
  readonly candidates: number;
  readonly searchMs: number;
  readonly complete: boolean;
}

/** Timing pairs (default, winner), alternating which runs first, before a winner replaces the default. */
export const CONFIRM = 4;

/**
 * Whether a searched winner replaces the default, from CONFIRM alternating pairs of timings
 * (`mine[i]` against `theirs[i]`; the search's first timings, biased low by the choice, are not
 * among them): only when it was
 * faster in every pair and its median beats the default's by more than the measured noise (the
 * spread of the default's own timings, (max - min) / median) and by MIN_GAIN at least. Anything
 * less keeps the default, so a tuned kernel is never slower than the default within what this
 * machine can tell apart (tinygrad's BEAM likewise keeps the hand-coded schedule unless the
 * searched one times faster: BEAM_COMPARE).
 */
export function confirmWin(mine: readonly number[], theirs: readonly number[]): boolean {
  if (mine.length < 2 || mine.length !== theirs.length) return false;
  const dms = median([...theirs]);
  const noise = dms > 0 ? (Math.max(...theirs) - Math.min(...theirs)) / dms : 0;
  return mine.every((m, i) => m < theirs[i]!) && median([...mine]) < dms * (1 - Math.max(MIN_GAIN, noise));
}

/**
 * Beam search from the default `base`: the beam (the `beam` fastest schedules so far) is widened
 * by every value of one axis at a time, each new schedule timed once (`time`: its median in ms).
 * The default is always timed first and is always a candidate. The budget keeps room for the
 * confirmation: no new candidate is timed once `now()` is within 2 * CONFIRM timings of the
 * default (as long as its first timing took) of `deadline`. The fastest schedule, where it is not
 * the default, is then timed against the default in CONFIRM alternating pairs, each started only
 * before `deadline`, and kept only when every pair ran and confirmWin says so; the budget is
 * exceeded by one pair of timings at most.
 */
export function beamSearch<S extends object = MatmulSchedule>(
  axes: readonly Axis<S>[],
  beam: number,
  time: (s: S) => number,
  deadline: number,
  now: () => number = () => performance.now(),
  base: S = DEFAULT_MATMUL_SCHEDULE as S,
): SearchResult<S> {
  const t0 = now();
  const fields = Object.keys(base) as (keyof S)[];
  const scheduleKey = (s: S): string => fields.map((f) => String(s[f])).join('/');
  const timed = new Map<string, { s: S; ms: number }>();
  const measure = (s: S) => {
    const k = scheduleKey(s);
    if (!timed.has(k)) timed.set(k, { s, ms: time(s) });
    return timed.get(k)!;
  };
  const d0 = now();
  const defaultMs = measure(base).ms;
  const stopAt = deadline - 2 * CONFIRM * (now() - d0);
  let front = [base];
  let complete = true;
  search: for (const axis of axes) {
    const next: { s: S; ms: number }[] = [];
    for (const s of front) {
      for (const v of axis.values) {
        const c = { ...s, [axis.field]: v } as S;
        if (!timed.has(scheduleKey(c)) && now() >= stopAt) {
          complete = false;
          next.push(...front.map(measure));
          break search;
        }
        next.push(measure(c));
      }
    }
    const seen = new Set<string>();
    front = next
      .sort((a, b) => a.ms - b.ms)
      .filter((x) => !seen.has(scheduleKey(x.s)) && seen.add(scheduleKey(x.s)))
      .slice(0, beam)
      .map((x) => x.s);
  }
  let best = { s: base, ms: defaultMs };
  for (const x of timed.values()) if (x.ms < best.ms) best = x;
  if (scheduleKey(best.s) === scheduleKey(base))
    return { best: base, ms: defaultMs, defaultMs, candidates: timed.size, searchMs: now() - t0, complete };
  // The fastest of many noisy timings is biased low: it is timed again against the default in
  // alternating pairs (ABBA: the default first in even pairs), and kept only on those.
  const mine: number[] = [],
    theirs: number[] = [];
  for (let i = 0; i < CONFIRM && now() < deadline; i++) {
    if (i % 2 === 0) {
      theirs.push(time(base));
      mine.push(time(best.s));
    } else {
      mine.push(time(best.s));
      theirs.push(time(base));
    }
  }
  const win = mine.length === CONFIRM && confirmWin(mine, theirs);
  const ms = mine.length > 0 ? median(mine) : best.ms,
    dms = theirs.length > 0 ? median(theirs) : defaultMs;
  return {
    best: win ? best.s : base,
    ms: win ? ms : dms,
    defaultMs: dms,
    candidates: timed.size,
    searchMs: now() - t0,
    complete,
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((p, q) => p - q);
  return s.length % 2 === 1 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/** The cache key of a product's tile sums: every argument that decides its cost. */
export function kernelKey(c: TilesCall): string {
  return `tiles B${c.B} MP${c.MP} NP${c.NP} K${c.K} T${c.T} A${c.strideA} Bs${c.strideB} v${c.variant}${c.par ? '' : ' alone'}${c.indirect ? ' igemm' : ''}`;
}

const align16 = (x: number): number => Math.ceil(x / 16) * 16;

/**
 * A timer of schedules for one product's tile sums: random operands of its shape placed in the
 * packing arena after its kept packs (an indirect product's pointers or window origins built by
 * igemmA or windowA from a random input of its geometry), and the product's own kernel run
 * through PackArena.tiles: the median of several runs after one to warm up. Undefined for a
 * kernel gradient's indirect product (its origin table is not built here: the default schedule).
 */
export function tilesTimer(k: MatmulKernel, c: TilesCall): ((s: MatmulSchedule) => number) | undefined {
  const a = k.indirect;
  if (c.indirect && (a === undefined || a.over === 'terms')) return undefined;
  const accBytes = c.B * c.MP * c.NP * c.T,
    bBytes = c.B * c.strideB;
  let aBytes = c.B * c.MP * c.strideA;
  let cells = 0;
  if (c.indirect && a !== undefined) {
    cells = a.batch * a.inSize.reduce((p, v) => p * v, 1) * a.channels;
    aBytes = 4 * (cells + (windowRows(a) ? c.K : a.channels)) + c.MP * c.strideA;
  }
  const total = align16(aBytes) + align16(bBytes) + accBytes;
  const view = packArena.f64(Math.ceil(total / 8) + 2);
  const base = packArena.base * 8;
  const f32 = packArena.f32();
  const pb0 = base + align16(aBytes),
    acc0 = pb0 + align16(bBytes);
  const fill = (from: number, bytes: number) => {
    if (c.T === 128 && !c.indirect) for (let i = from / 8; i < (from + bytes) / 8; i++) view[i] = Math.random() - 0.5;
    else for (let i = from / 4; i < (from + bytes) / 4; i++) f32[i] = Math.random() - 0.5;
  };
  let pa0 = base;
  if (c.indirect && a !== undefined) {
    const x = Float32Array.from({ length: cells }, () => Math.random() - 0.5);
    const geom = indirectGeometry(a);
    pa0 = (windowRows(a) ? windowA : igemmA)(f32.subarray(base / 4, base / 4 + aBytes / 4), x, 0, geom, k.mr);
  } else fill(base, aBytes);
  fill(pb0, bBytes);
  const run = (s: MatmulSchedule) =>
    packArena.tiles(
      pa0,
      c.strideA,
      pb0,
      c.strideB,
      c.MP,
      c.K,
      acc0,
      c.NP,
      c.B,
      c.T,
      c.variant,
      c.par && s.split,
      s.blockBytes,
      s.maxPanels,
      s.perThread,
    );
  return (s) => {
    // one run to warm up (its time sets the repetitions: about 5 ms of runs, 3 to 15), then the median
    const t0 = performance.now();
    run(s);
    const reps = Math.max(3, Math.min(15, Math.ceil(5 / Math.max(performance.now() - t0, 1e-3))));
    const times: number[] = [];
    for (let i = 0; i < reps; i++) {
      const t = performance.now();
      run(s);
      times.push(performance.now() - t);
    }
    return median(times);
  };
}

/** What tuning did in this process (tests and the bench read it). */
export const tuneStats = { searches: 0, candidates: 0, searchMs: 0, outOfBudget: 0, untimed: 0 };

/** The process's tuned schedules (read from the cache folder on first use). */
export const tuneCache = new TuneCache(() => machineKey(threadCount()));

const entrySchedule = (e: TunedEntry): MatmulSchedule | undefined =>
  'blockBytes' in e
    ? { blockBytes: e.blockBytes, maxPanels: e.maxPanels, split: e.split, perThread: e.perThread }
    : undefined;

/** FNV-1a of a module's bytes, in hex: a kernel's structure (an elementwise module's ops, regions and lanes; a WGSL kernel's text) in the cache key. */
export function digest(bytes: Uint8Array): string {
  let h = 0x811c9dc5;
  for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

/** The cache key of an elementwise tier kernel: its default module's digest and length, and the loop's length (whether a split pays depends on it). */
export const ewKernelKey = (p: EwPlan): string =>
  `ew ${digest(p.bytes)} ${p.bytes.length} n${p.n}${p.cols !== undefined ? ` cols${p.cols}` : ''}`;

/** The most elements an elementwise kernel is timed over (a longer loop is timed over its first this many). */
const EW_TIMED_ELEMENTS = 1 << 22;

/**
 * A timer of an elementwise kernel's schedules, on random values in [0.5, 1.5) (inside every
 * approximation's domain): a one-loop kernel runs its whole loop as its generated code does (each
 * chunk copied into the tier's memory, computed and copied out; a split schedule through the
 * threads), over its length up to EW_TIMED_ELEMENTS; a kernel of rows runs one chunk in place.
 * Runs are batched to about a millisecond; the median of 5 batches after one to warm up.
 */
export function ewTimer(plan: (s: EwSchedule | undefined) => EwPlan): (s: EwSchedule) => number {
  const base = plan(undefined);
  const rand = (n: number) => {
    const a = new Float32Array(n);
    for (let i = 0; i < n; i++) a[i] = 0.5 + Math.random();
    return a;
  };
  const n = Math.min(base.n, EW_TIMED_ELEMENTS);
  const maxOff = Math.max(0, ...base.loads.map((l) => l.off), ...base.stores.map((x) => x.off));
  const loads = base.cols === undefined ? base.loads.map(() => rand(n + maxOff)) : [];
  const stores = base.cols === undefined ? base.stores.map(() => new Float32Array(n + maxOff)) : [];
  return (s) => {
    const p = plan(s);
    const regions = p.loads.length + p.stores.length;
    const w = ewKernel(ewKernelId(p.bytes, p.shared, regions));
    let run: () => void;
    if (p.cols !== undefined) {
      const m = w.mem;
      for (let i = 0; i < regions * CHUNK; i++) m[i] = 0.5 + Math.random();
      run = () => w.run(CHUNK, 0);
    } else if (p.shared && w.par !== undefined && n >= splitFrom(p)) {
      const offs = [...p.loads, ...p.stores].map((x) => x.off);
      run = () => w.par!(0, n, loads, stores, offs);
    } else {
      run = () => {
        const m = w.mem;
        for (let lo = 0; lo < n; lo += CHUNK) {
          const hi = Math.min(n, lo + CHUNK);
          p.loads.forEach((l, j) => m.set(loads[j]!.subarray(lo + l.off, hi + l.off), j * CHUNK));
          w.run(hi - lo, 0);
          p.stores.forEach((x, j) =>
            stores[j]!.set(
              m.subarray((p.loads.length + j) * CHUNK, (p.loads.length + j) * CHUNK + hi - lo),
              lo + x.off,
            ),
          );
        }
      };
    }
    return timeBatched(run);
  };
}

/** The time of one `run()` in ms: batched to about a millisecond, the median of 5 batches after one to warm up. */
function timeBatched(run: () => void): number {
  const t0 = performance.now();
  run();
  const batch = Math.max(1, Math.min(1000, Math.round(1 / Math.max(performance.now() - t0, 1e-4))));
  const times: number[] = [];
  for (let r = 0; r < 6; r++) {
    const t = performance.now();
    for (let i = 0; i < batch; i++) run();
    if (r > 0) times.push((performance.now() - t) / batch);
  }
  return median(times);
}

/** The elementwise search space: the unroll, then where more than one thread is configured and a one-loop kernel is at least two chunks long, whether it splits over them. */
export function ewAxes(p: EwPlan): Axis<EwSchedule>[] {
  const axes: Axis<EwSchedule>[] = [{ field: 'streams', values: EW_STREAMS }];
  if (sharedTier() && p.cols === undefined && p.n >= 2 * CHUNK) axes.push({ field: 'split', values: [false, true] });
  return axes;
}

/** A JavaScript loop kernel's schedule: the order of its output loops (../codegen/cpu/loop-order.ts). */
export interface LoopSchedule {
  readonly order: readonly number[];
}

/** Loop kernels with fewer elements than this keep their order untuned (a short loop's order does not show in its time). */
export const LOOP_TUNED_FROM = 1 << 14;

/**
 * The cache key of a JavaScript loop kernel: the digest and length of its source in its own order
 * (its loops' sizes and strides are constants there), its generated names (loop variables,
 * temporaries, buffers: numbered per compile) renumbered by first appearance, and its number of loops.
 */
export const loopKernelKey = (source: string, loops: number): string => {
  const names = new Map<string, number>();
  const norm = source.replace(/\b[a-z]\d+\b/g, (m) => {
    if (!names.has(m)) names.set(m, names.size);
    return `${m[0]}_${names.get(m)}`;
  });
  const bytes = new TextEncoder().encode(norm);
  return `loop ${digest(bytes)} ${bytes.length} v${loops}`;
};

/**
 * A timer of a loop kernel's orders: the kernel rendered in each order and run over the program's
 * buffer sizes (loop-order.ts loopRunner: a long kernel over its first outer rows, the time
 * scaled to the whole), batched to about a millisecond; the median of 5 batches after one to warm up.
 */
export function loopTimer(k: LoopKernel, buffers: readonly BufferDecl[]): (s: LoopSchedule) => number {
  const runner = loopRunner(k, buffers);
  return (s) => {
    const { run, share } = runner(s.order);
    return timeBatched(run) / share;
  };
}

/** The loop order's search space: one axis, every candidate order of the kernel's output loops. */
export const loopAxes = (k: LoopKernel): Axis<LoopSchedule>[] => [
  { field: 'order', values: loopOrders(k.vars.length) },
];

/**
 * The schedule chooser of one specialisation (../codegen/pipeline.ts prepare): a product's stored
 * schedule where the cache has it, else a search within what is left of `opts.budgetMs` (a
 * complete search is stored; one the budget cut short is used but not stored); the default once
 * the budget is spent.
 */
export function scheduleChooser(opts: TuneOptions, now: () => number = () => performance.now()): ScheduleChooser {
  const deadline = now() + opts.budgetMs;
  const record = <S extends MatmulSchedule | EwSchedule | LoopSchedule>(key: string, r: SearchResult<S>) => {
    tuneStats.searches++;
    tuneStats.candidates += r.candidates;
    tuneStats.searchMs += r.searchMs;
    if (r.complete)
      tuneCache.set(key, {
        ...r.best,
        ms: r.ms,
        defaultMs: r.defaultMs,
        searchMs: r.searchMs,
        candidates: r.candidates,
      });
  };
  return {
    matmul(k, call) {
      const key = kernelKey(call);
      const hit = tuneCache.get(key);
      if (hit !== undefined) return entrySchedule(hit);
      if (now() >= deadline) {
        tuneStats.outOfBudget++;
        return undefined;
      }
      const timer = tilesTimer(k, call);
      if (timer === undefined) {
        tuneStats.untimed++;
        return undefined;
      }
      const r = beamSearch(searchAxes(call, threadCount()), opts.beam, timer, deadline, now);
      record(key, r);
      return r.best;
    },
    elementwise(_k, plan) {
      const base = plan(undefined);
      // A loop shorter than a chunk runs one partial chunk: its unroll does not show.
      if (base.n < CHUNK) return undefined;
      const key = ewKernelKey(base);
      const hit = tuneCache.get(key);
      if (hit !== undefined) return 'streams' in hit ? { streams: hit.streams, split: hit.split } : undefined;
      if (now() >= deadline) {
        tuneStats.outOfBudget++;
        return undefined;
      }
      const r = beamSearch<EwSchedule>(ewAxes(base), opts.beam, ewTimer(plan), deadline, now, base.schedule);
      record(key, r);
      return r.best;
    },
    loopOrder(k, buffers) {
      const n = k.vars.length;
      if (k.vars.reduce((p, v) => p * v.size, 1) < LOOP_TUNED_FROM) return undefined;
      const key = loopKernelKey(loopSource(k, undefined).src.source, n);
      const hit = tuneCache.get(key);
      if (hit !== undefined) return 'order' in hit && isOrder(hit.order, n) ? hit.order : undefined;
      if (now() >= deadline) {
        tuneStats.outOfBudget++;
        return undefined;
      }
      const base: LoopSchedule = { order: identityOrder(n) };
      const r = beamSearch<LoopSchedule>(loopAxes(k), opts.beam, loopTimer(k, buffers), deadline, now, base);
      record(key, r);
      return r.best.order;
    },
  };
}
