// The profiler (K.function's `profile: true`, then `f.profile()`): per kernel its calls, total and
// mean time, bytes read and written, FLOPs where known (matrix products), the ops and K calls it
// came from; per op class the same summed (Theano's ProfileStats: time per Apply node and per Op
// class); the compile phases; the peak of buffer memory one call holds. Printed as a table, or
// written as Chrome trace-event JSON (the format Perfetto and chrome://tracing open). The cpu times
// every step of its generated code (codegen/cpu/module.ts' step timer); the other targets time
// their kernels themselves (KernelTimer) and say how in `note` (PROFILE_NOTES).
import { itemsize } from '../ir/dtype.js';
import { formatProvenance } from '../ir/provenance.js';
import { stepBuffers, type Program, type Step } from '../codegen/kernel/ir.js';
import type { StepProfile } from '../codegen/cpu/module.js';
import { NDArray as NDArrayClass, type NDArray } from '../ir/ndarray.js';
import type { Executor } from './function.js';
import { compileStats, compileTimes } from './target.js';

export interface KernelProfile {
  readonly name: string;
  /** Times it ran (a Scan body's kernels: once per loop step). */
  readonly calls: number;
  readonly totalMs: number;
  readonly meanMs: number;
  /** Bytes of the buffers it reads and writes, summed over its calls. */
  readonly bytesRead: number;
  readonly bytesWritten: number;
  /** Floating-point operations over its calls, where known (matrix products: 2 m n k per batch). */
  readonly flops?: number;
  /** The ops it computes. */
  readonly nodes: readonly string[];
  /** The K calls (and user lines) that built those nodes. */
  readonly kCalls: readonly string[];
}

export interface OpProfile {
  /** The op class: `fused` (elementwise loops), `matmul`, `scan`, or an extern step's op. */
  readonly op: string;
  readonly kernels: number;
  readonly calls: number;
  readonly totalMs: number;
  /** Its share of the time in kernels (0..1). */
  readonly share: number;
}

export interface CompileProfile {
  /** Milliseconds per phase, summed over the function's compiles (runtime/target.ts' compileTimes). */
  readonly passes: number;
  readonly bodyPasses: number;
  readonly lower: number;
  readonly plan: number;
  readonly render: number;
  readonly firstRun: number;
  readonly specializations: number;
}

export interface FunctionProfile {
  readonly function: string;
  readonly target: string;
  readonly calls: number;
  /** Wall time of the calls (inputs converted to results). */
  readonly totalMs: number;
  readonly kernels: readonly KernelProfile[];
  readonly ops: readonly OpProfile[];
  readonly compile: CompileProfile;
  /** Bytes of buffers one call holds at most: planned intermediates (reused across calls) and results. */
  readonly peakBytes: number;
  /** What this target cannot time, and why. */
  readonly note?: string;
}

/** What a step is, for the profile: name, op class, bytes and FLOPs per call (a kernel profile's over its calls), ops and K calls. */
export interface StepInfo extends Pick<KernelProfile, 'name' | 'flops' | 'nodes' | 'kCalls'> {
  readonly op: string;
  readonly read: number;
  readonly written: number;
  /** Runs per function call (a Scan body's steps: the loop's length). */
  readonly per: number;
  /** Where it is: its row in the step timer, under its Scan's (`3`, `3/0`). */
  readonly path: string;
  /** 0 for the function's own steps; 1 and more inside Scan bodies. */
  readonly depth: number;
}

const timedLabel = (s: Step, k: number): string =>
  s.kind === 'matmul'
    ? `matmul ${s.m.size}x${s.k.size}x${s.n.size} [${s.label}]`
    : s.kind === 'scan'
      ? `scan body s${k}: ${s.label}`
      : s.label;

/** A step's name in a profile (the cpu's step timer's row label; a fused loop as fused{ops}); `k`: the Scan's index among its program's Scans. */
export const stepName = (s: Step, k: number): string =>
  s.kind === 'loop' && s.label.includes(',') ? `fused{${s.label}}` : timedLabel(s, k);

function infoOf(prog: Program, s: Step, name: string, per: number, path: string, depth: number): StepInfo {
  const size = (id: number) => {
    const b = prog.buffers[id]!;
    return b.size * itemsize(b.dtype);
  };
  const { reads, writes } = stepBuffers(s);
  const nodes =
    s.kind === 'extern' || s.kind === 'print' || s.kind === 'scan'
      ? [s.kind === 'scan' ? 'scan' : s.label]
      : s.label.split(',');
  const op = s.kind === 'loop' ? (nodes.length > 1 ? 'fused' : nodes[0]!) : s.kind === 'extern' ? s.label : s.kind;
  return {
    name,
    op,
    per,
    nodes,
    path,
    depth,
    read: [...new Set(reads)].reduce((a, b) => a + size(b), 0),
    written: [...new Set(writes)].reduce((a, b) => a + size(b), 0),
    ...(s.kind === 'matmul' ? { flops: 2 * s.batch.size * s.m.size * s.n.size * s.k.size } : {}),
    kCalls: s.origin === undefined ? [] : s.origin.map((p) => formatProvenance([p], 1)),
  };
}

/**
 * The timed steps of a program, in the order of the step timer's rows: steps the renderer joined
 * with the next or left out have no row of their own (their time is in the next row), so rows are
 * matched to steps by label in order. Scan bodies' rows follow, with their own programs.
 */
function stepInfos(
  prog: Program,
  p: StepProfile,
  per: number,
  prefix: string,
  at: string,
  out: { info: StepInfo; prof: StepProfile; row: number }[],
): void {
  let i = 0;
  let scans = 0;
  p.labels.forEach((label, row) => {
    let s: Step | undefined;
    for (let j = i; j < prog.steps.length; j++) {
      const c = prog.steps[j]!;
      if (timedLabel(c, scans) === label) {
        s = c;
        i = j + 1;
        break;
      }
    }
    const name = `${prefix}${s?.kind === 'loop' && s.label.includes(',') ? `fused{${s.label}}` : label}`;
    const path = `${at}${row}`;
    const depth = at === '' ? 0 : at.split('/').length - 1;
    out.push({
      info:
        s === undefined
          ? { name, op: '?', per, nodes: [], kCalls: [], read: 0, written: 0, path, depth }
          : infoOf(prog, s, name, per, path, depth),
      prof: p,
      row,
    });
    if (s?.kind === 'scan') {
      const sub = p.subs?.[scans];
      if (sub !== undefined) stepInfos(s.body, sub, per * s.steps, `${prefix}s${scans}: `, `${path}/`, out);
      scans++;
    }
  });
}

interface Row {
  info: StepInfo;
  calls: number;
  ms: number;
}

/** What a step is (its name, op class, bytes and FLOPs per run, ops and K calls), for a target that times its steps itself. */
export function describeStep(prog: Program, s: Step, name: string, path: string, depth: number): StepInfo {
  return infoOf(prog, s, name, 1, path, depth);
}

/** A kernel's runs and time in one call, on a target that times kernels itself (KernelTimer). */
export interface KernelTime {
  readonly info: StepInfo;
  calls: number;
  ms: number;
}

/**
 * One call's kernel times on a target that times its kernels itself (the gpu device, the
 * tensorflow and onnx backends): rows by where the kernel is (its path), summed over its runs.
 */
export class KernelTimer {
  private rows = new Map<string, KernelTime>();

  /** A run of the kernel at `path` that took `ms`; `info` describes it (asked once per path). */
  add(path: string, info: () => StepInfo, ms: number, runs = 1): void {
    let r = this.rows.get(path);
    if (r === undefined) this.rows.set(path, (r = { info: info(), calls: 0, ms: 0 }));
    r.calls += runs;
    r.ms += Math.max(0, ms);
  }

  /** The call's rows, and a fresh start for the next call. */
  take(): KernelTime[] {
    const out = [...this.rows.values()];
    this.rows = new Map();
    return out;
  }
}

/** A StepInfo for a kernel known only by name and the ops it runs (the tensorflow and onnx backends: one graph node or ONNX node each). */
export function nodeInfo(
  name: string,
  op: string,
  nodes: readonly string[],
  kCalls: readonly string[],
  path: string,
  depth: number,
  bytes?: { read: number; written: number },
): StepInfo {
  return { name, op, per: 1, nodes, kCalls, read: bytes?.read ?? 0, written: bytes?.written ?? 0, path, depth };
}

/** What one specialisation gives the profiler: its program and its step timer. */
export interface TimedProgram {
  readonly program: Program;
  readonly steps: StepProfile;
  /** Bytes of its planned buffers (what one call holds besides its results). */
  readonly bytes: number;
}

/** One function's profile as it is gathered, call by call. */
export class Profiler {
  private readonly rows = new Map<string, Row>();
  private readonly layouts = new WeakMap<TimedProgram, { info: StepInfo; prof: StepProfile; row: number }[]>();
  private calls = 0;
  private totalMs = 0;
  private peak = 0;
  private readonly compileMs: Record<keyof Omit<CompileProfile, 'specializations'>, number> = {
    passes: 0,
    bodyPasses: 0,
    lower: 0,
    plan: 0,
    render: 0,
    firstRun: 0,
  };
  private specializations = 0;

  constructor(
    readonly fn: string,
    readonly target: string,
    private readonly note?: string,
  ) {}

  /** A compile's phases (compileTimes after it). */
  compiled(times: Readonly<Record<string, number>>, specialization: boolean): void {
    for (const k of Object.keys(this.compileMs) as (keyof typeof this.compileMs)[]) this.compileMs[k] += times[k] ?? 0;
    if (specialization) this.specializations++;
  }

  /** One call: its wall time, and what its kernels took: the cpu's step timers (read and reset), or another target's KernelTimer rows. */
  called(ms: number, timed?: TimedProgram, resultBytes = 0, times?: readonly KernelTime[]): void {
    this.calls++;
    this.totalMs += ms;
    this.addTimes(times ?? []);
    if (timed === undefined) {
      // other targets' buffers are their runtime's: the results are what is known
      this.peak = Math.max(this.peak, resultBytes);
      return;
    }
    this.peak = Math.max(this.peak, timed.bytes + resultBytes);
    let layout = this.layouts.get(timed);
    if (layout === undefined) {
      layout = [];
      stepInfos(timed.program, timed.steps, 1, '', '', layout);
      this.layouts.set(timed, layout);
    }
    for (const { info, prof, row } of layout) {
      const key = `${info.path}|${info.name}`;
      let r = this.rows.get(key);
      if (r === undefined) {
        r = { info, calls: 0, ms: 0 };
        this.rows.set(key, r);
      }
      r.calls += info.per;
      r.ms += prof.ms[row]!;
    }
    const reset = (p: StepProfile) => {
      p.ms.fill(0);
      p.subs?.forEach((s) => {
        if (s !== undefined) reset(s);
      });
    };
    reset(timed.steps);
  }

  /** Kernel times a target gives when asked (the onnx backend's), read when the profile is. */
  pending: (() => readonly KernelTime[]) | undefined;

  private addTimes(times: readonly KernelTime[]): void {
    for (const t of times) {
      const key = `${t.info.path}|${t.info.name}`;
      let r = this.rows.get(key);
      if (r === undefined) {
        r = { info: t.info, calls: 0, ms: 0 };
        this.rows.set(key, r);
      }
      r.calls += t.calls;
      r.ms += t.ms;
    }
  }

  /** Forgets the calls so far (their kernel times); compile phases and the peak stay. */
  reset(): void {
    this.pending?.();
    this.rows.clear();
    this.calls = 0;
    this.totalMs = 0;
  }

  profile(): FunctionProfile {
    if (this.pending !== undefined) this.addTimes(this.pending());
    const kernels: KernelProfile[] = [...this.rows.values()]
      .map(({ info, calls, ms }) => {
        return {
          name: info.name,
          calls,
          totalMs: ms,
          meanMs: calls === 0 ? 0 : ms / calls,
          bytesRead: info.read * calls,
          bytesWritten: info.written * calls,
          ...(info.flops !== undefined ? { flops: info.flops * calls } : {}),
          nodes: info.nodes,
          kCalls: info.kCalls,
        };
      })
      .sort((a, b) => b.totalMs - a.totalMs);
    // Op classes over the function's own kernels: a Scan's time includes its body's kernels.
    const byOp = new Map<string, { kernels: number; calls: number; totalMs: number }>();
    for (const { info, calls, ms } of this.rows.values()) {
      if (info.depth > 0) continue;
      const o = byOp.get(info.op) ?? { kernels: 0, calls: 0, totalMs: 0 };
      byOp.set(info.op, { kernels: o.kernels + 1, calls: o.calls + calls, totalMs: o.totalMs + ms });
    }
    const inKernels = [...byOp.values()].reduce((a, o) => a + o.totalMs, 0);
    const ops = [...byOp]
      .map(([op, o]) => ({ op, ...o, share: inKernels === 0 ? 0 : o.totalMs / inKernels }))
      .sort((a, b) => b.totalMs - a.totalMs);
    return {
      function: this.fn,
      target: this.target,
      calls: this.calls,
      totalMs: this.totalMs,
      kernels,
      ops,
      compile: { ...this.compileMs, specializations: this.specializations },
      peakBytes: this.peak,
      ...(this.note !== undefined ? { note: this.note } : {}),
    };
  }
}

const fmtBytes = (b: number): string =>
  b >= 2 ** 20 ? `${(b / 2 ** 20).toFixed(1)} MiB` : b >= 1024 ? `${(b / 1024).toFixed(1)} KiB` : `${b} B`;

/** The profile as the printed table: kernels by time, then op classes, compile phases and peak memory. */
export function profileTable(p: FunctionProfile): string {
  const lines = [
    `profile of function ${JSON.stringify(p.function)} on ${p.target}: ${p.calls} calls, ${p.totalMs.toFixed(3)} ms in calls`,
  ];
  if (p.note !== undefined) lines.push(`note: ${p.note}`);
  if (p.kernels.length > 0) {
    const w = Math.min(60, Math.max(6, ...p.kernels.map((k) => k.name.length)));
    lines.push(
      '',
      `${'kernel'.padEnd(w)}  ${'calls'.padStart(7)}  ${'total ms'.padStart(10)}  ${'mean ms'.padStart(9)}  ${'read'.padStart(10)}  ${'written'.padStart(10)}  ${'MFLOP'.padStart(9)}  K calls`,
    );
    for (const k of p.kernels) {
      const name = k.name.length > w ? `${k.name.slice(0, w - 3)}...` : k.name;
      lines.push(
        `${name.padEnd(w)}  ${String(k.calls).padStart(7)}  ${k.totalMs.toFixed(3).padStart(10)}  ${k.meanMs.toFixed(4).padStart(9)}  ${fmtBytes(k.bytesRead).padStart(10)}  ${fmtBytes(k.bytesWritten).padStart(10)}  ${(k.flops === undefined ? '-' : (k.flops / 1e6).toFixed(2)).padStart(9)}  ${k.kCalls.slice(0, 2).join('; ')}${k.kCalls.length > 2 ? ` (+${k.kCalls.length - 2})` : ''}`,
      );
    }
    const ow = Math.max(8, ...p.ops.map((o) => o.op.length));
    lines.push(
      '',
      `${'op class'.padEnd(ow)}  ${'kernels'.padStart(7)}  ${'calls'.padStart(7)}  ${'total ms'.padStart(10)}  share`,
    );
    for (const o of p.ops)
      lines.push(
        `${o.op.padEnd(ow)}  ${String(o.kernels).padStart(7)}  ${String(o.calls).padStart(7)}  ${o.totalMs.toFixed(3).padStart(10)}  ${(100 * o.share).toFixed(1).padStart(5)}%`,
      );
  }
  const c = p.compile;
  lines.push(
    '',
    `compile: passes ${c.passes.toFixed(1)} ms, scan bodies' passes ${c.bodyPasses.toFixed(1)} ms, lowering ${c.lower.toFixed(1)} ms, buffer plan ${c.plan.toFixed(1)} ms, code generation ${c.render.toFixed(1)} ms, first run ${c.firstRun.toFixed(1)} ms (${c.specializations} specialisations)`,
  );
  lines.push(`peak buffer memory: ${fmtBytes(p.peakBytes)}`);
  return `${lines.join('\n')}\n`;
}

/**
 * The profile as Chrome trace-event JSON (the Trace Event Format's JSON object form): one
 * complete event ('X') per kernel, laid end to end in the order of their total time on one
 * thread of one process, with its calls, bytes and K calls in `args`; the compile phases on a
 * second thread. Durations are the kernels' totals over all calls (a profile, not a timeline).
 */
export function profileTrace(p: FunctionProfile): string {
  const us = (ms: number) => Math.round(ms * 1000 * 1000) / 1000;
  const events: object[] = [
    { name: 'process_name', ph: 'M', pid: 1, tid: 0, args: { name: `theanine ${p.function} (${p.target})` } },
    { name: 'thread_name', ph: 'M', pid: 1, tid: 1, args: { name: 'kernels (total over calls)' } },
    { name: 'thread_name', ph: 'M', pid: 1, tid: 2, args: { name: 'compile' } },
  ];
  let t = 0;
  for (const k of p.kernels) {
    events.push({
      name: k.name,
      cat: 'kernel',
      ph: 'X',
      pid: 1,
      tid: 1,
      ts: us(t),
      dur: us(k.totalMs),
      args: {
        calls: k.calls,
        meanMs: k.meanMs,
        bytesRead: k.bytesRead,
        bytesWritten: k.bytesWritten,
        ...(k.flops !== undefined ? { flops: k.flops } : {}),
        nodes: k.nodes.join(','),
        kCalls: k.kCalls.join('; '),
      },
    });
    t += k.totalMs;
  }
  t = 0;
  for (const [phase, ms] of Object.entries(p.compile)) {
    if (phase === 'specializations') continue;
    events.push({ name: phase, cat: 'compile', ph: 'X', pid: 1, tid: 2, ts: us(t), dur: us(ms), args: {} });
    t += ms;
  }
  return JSON.stringify({
    traceEvents: events,
    displayTimeUnit: 'ms',
    otherData: {
      calls: p.calls,
      totalMs: p.totalMs,
      peakBytes: p.peakBytes,
      ...(p.note !== undefined ? { note: p.note } : {}),
    },
  });
}

/** How a target times its kernels (`note` of its profiles), or why a profile has no kernel rows. */
export const PROFILE_NOTES = {
  gpujs:
    "the gpu device times each step on the host until the device has finished it (gl.finish() after its kernels; gpu.js' webasm mode runs them synchronously); a kernel's first run includes gpu.js compiling its shader",
  webgpuTimestamps:
    'the gpu device (webgpu) times each kernel on the device with timestamp queries (a compute pass per kernel, its start and end written by the device); steps run on the host are not timed',
  webgpuSubmits:
    'the gpu device (webgpu) times each kernel on the device with a submit of its own, waited for (onSubmittedWorkDone; the adapter has no timestamp queries, or THEANINE_WEBGPU_TIMING=submits); steps run on the host are not timed',
  tensorflow:
    'the tensorflow backend times each graph node from its call until TensorFlow.js has computed it (the node, wasm and cpu backends compute an op when it is called; webgl is waited for by reading the result)',
  onnx: "the onnx backend reads ONNX Runtime's own profile (SessionOptions.enableProfiling): each ONNX node's kernel time, summed per graph node; ONNX Runtime's nodes of its own (input casts, output copies, fusions named after none of ours) are rows of their own",
  none: 'optimizer "none" runs the reference interpreter: there are no kernels to time, so the profile times whole calls',
} as const;

/** A function's executor with its calls (and on the cpu, its kernels) recorded by `profiler`. */
export function profiledExecutor(inner: Executor, profiler: Profiler): Executor {
  if (inner.kernelTimesOnDemand === true && inner.kernelTimes !== undefined)
    profiler.pending = inner.kernelTimes.bind(inner);
  return Object.assign(Object.create(inner) as Executor, {
    runAsync: undefined, // callAsync runs this run, not the inner executor's runAsync
    run(values: readonly NDArray[], learningPhase: number) {
      const specs = compileStats.specializations;
      const t0 = performance.now();
      const out = inner.run(values, learningPhase);
      const ms = performance.now() - t0;
      if (compileStats.specializations !== specs) profiler.compiled({ ...compileTimes, passes: 0 }, true);
      const resultBytes = out.reduce((a, r) => a + (r instanceof NDArrayClass ? r.data.byteLength : 0), 0);
      profiler.called(
        ms,
        inner.lastTimed?.(),
        resultBytes,
        inner.kernelTimesOnDemand === true ? undefined : inner.kernelTimes?.(),
      );
      return out;
    },
  });
}
