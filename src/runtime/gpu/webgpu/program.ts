import type { DType } from '../../../ir/dtype.js';
import { NDArray } from '../../../ir/ndarray.js';
import type { EvalContext } from '../../../ir/op.js';
import type { VariableCell } from '../../../ir/node.js';
import { formatValue } from '../../../ir/ops/misc.js';
import { withBuiltBy, type Provenance } from '../../../ir/provenance.js';
import { stepBuffers, type ExternStep, type Program, type ScanStep, type Step } from '../../../codegen/kernel/ir.js';
import type { RunFn } from '../../../codegen/cpu/module.js';
import { renderLoop, renderMatmul } from '../../../codegen/wgsl/render.js';
import { packKernel, type PackedKernel } from '../../../codegen/wgsl/pack.js';
import { chooseWebStrategies, webBufferInfo, type WebStrategy } from '../../../codegen/wgsl/strategy.js';
import type { RowCheck } from '../../../codegen/kernel/row-checks.js';
import type { Fallback } from '../../fallback.js';
import type { WebGpu } from './session.js';
import { warnOnce } from '../device.js';
import { Batch, Frame, type DeviceBuffers, type Steps } from './frame.js';
import { runScan } from './scan.js';
import { hostModule, checkRows, runExternOnHost } from '../host-step.js';
import { describeStep, stepName } from '../../profile.js';

export type WebStep =
  | {
      readonly kind: 'kernel';
      readonly step: Step;
      readonly kernel: PackedKernel;
      readonly checks: readonly RowCheck[];
      readonly origin?: readonly Provenance[];
      /** The cpu's code of the kernel, run on the host first for the errors of its checked calls (codegen/wgsl/checked.ts), and the buffers it reads. */
      readonly hostCheck?: { readonly run: RunFn; readonly reads: readonly number[] };
    }
  | { readonly kind: 'scan'; readonly step: ScanStep; readonly body: WebPrepared }
  | { readonly kind: 'host'; readonly step: Step; readonly why: string; readonly run: RunFn | undefined }
  /** A kernel of no elements: its buffers hold none. */
  | { readonly kind: 'empty'; readonly writes: readonly number[] };

export interface WebPrepared extends DeviceBuffers {
  readonly steps: readonly WebStep[];
}

/** A label with the step's op names, for warnings and fallbacks. */
const opOf = (s: Step): string => (s.kind === 'extern' ? s.def.name : s.label);

/**
 * Renders every step the WebGPU strategy (src/codegen/wgsl/strategy.ts) puts on the device; the
 * others run on the host. `simdLanes`: the adapter runs invocations as SIMD lanes on CPU threads;
 * `half`: float16 buffers are f16 (the device has `shader-f16`).
 */
export function prepareWeb(p: Program, maxBindings: number, simdLanes = false, half = false): WebPrepared {
  return prepareChosen(p, chooseWebStrategies(p, maxBindings, simdLanes, half), maxBindings, half);
}

function prepareChosen(p: Program, chosen: readonly WebStrategy[], maxBindings: number, half: boolean): WebPrepared {
  // (the cpu's packing buffers are not the device's)
  if (p.buffers.some((b) => b.dtype === 'float64' && b.role !== 'epoch' && b.role !== 'arena')) {
    warnOnce(
      'webgpu-float64',
      'theanine: device "gpu:webgpu" computes float64 values in float32 (WebGPU has no float64), as the tensorflow backend does',
    );
  }
  const info = webBufferInfo(p, maxBindings, half);
  const steps = p.steps.map((s, i): WebStep => {
    const c = chosen[i]!;
    const origin = s.origin !== undefined ? { origin: s.origin } : {};
    if (c.kind === 'host')
      return {
        kind: 'host',
        step: s,
        why: c.why,
        run: s.kind === 'extern' || s.kind === 'print' ? undefined : hostModule(p, s),
      };
    if (c.kind === 'empty') return { kind: 'empty', writes: stepBuffers(s).writes };
    if (s.kind === 'loop' && c.kind === 'loop') {
      const hostCheck =
        c.plan.hostCheck === true ? { hostCheck: { run: hostModule(p, s), reads: stepBuffers(s).reads } } : {};
      const kernel =
        c.plan.pack === undefined
          ? renderLoop(s, c.plan, info)
          : packKernel(renderLoop(s, c.plan, { ...info, maxBindings: Number.POSITIVE_INFINITY }), c.plan.pack);
      return { kind: 'kernel', step: s, kernel, checks: c.checks, ...origin, ...hostCheck };
    }
    if (s.kind === 'matmul' && c.kind === 'matmul')
      return { kind: 'kernel', step: s, kernel: renderMatmul(s, info, c.form), checks: [], ...origin };
    if (s.kind === 'scan' && c.kind === 'scan')
      return { kind: 'scan', step: s, body: prepareChosen(s.body, c.body, maxBindings, half) };
    throw new Error(`internal: the WebGPU strategy of step ${i} (${c.kind}) does not fit its ${s.kind} step`);
  });
  return { program: p, steps, dev: new Map(), uploaded: new Set() };
}

/** What runs on the host instead of the device, for the fallback rule (print_tensor is a host op everywhere, not a fallback). */
export function webFallbacks(pp: WebPrepared): Fallback[] {
  return pp.steps.flatMap((s): Fallback[] => {
    if (s.kind === 'scan') return webFallbacks(s.body);
    if (s.kind !== 'host' || s.step.kind === 'print') return [];
    const reason = s.step.kind === 'extern' ? s.step.reason : `runs on the host on gpu:webgpu: ${s.why}`;
    return [
      { op: opOf(s.step), reason, whole: false, ...(s.step.origin !== undefined ? { origin: s.step.origin } : {}) },
    ];
  });
}

/** Result of a call: each target's value on the host, or a device buffer handed to a variable. */
export type WebResult =
  | { readonly host: NDArray }
  | { readonly dev: number; readonly shape: readonly number[]; readonly dtype: DType };

/**
 * Runs a prepared program's steps in `f` (the function's frame, or a Scan body's for one step).
 * A generator: where a step needs values only the device holds, it yields them, and the driver
 * (`drive`, or `driveAsync` for callAsync) sends the batch and reads them back before resuming;
 * a failed read is thrown back in at the yield, so it carries the step's `built by`.
 */
export function* runSteps(f: Frame, steps: readonly WebStep[], ctx: EvalContext): Steps {
  const timed = f.batch.timed !== undefined;
  const at = f.at;
  let scans = 0;
  for (const [i, s] of steps.entries()) {
    try {
      switch (s.kind) {
        case 'kernel': {
          for (const c of s.checks) {
            yield* f.need([c.buf]);
            checkRows(c, f.hostOf(c.buf).data);
          }
          if (s.hostCheck !== undefined) {
            yield* f.need(s.hostCheck.reads);
            s.hostCheck.run(
              s.hostCheck.reads.map((b) => f.hostOf(b).data),
              [],
              ctx.learningPhase,
              ctx,
            );
          }
          const path = `${at.path}${i}`;
          f.dispatch(
            s.kernel,
            timed
              ? { path, info: () => describeStep(f.p, s.step, `${at.name}${stepName(s.step, -1)}`, path, at.depth) }
              : undefined,
          );
          break;
        }
        case 'scan': {
          const k = scans++;
          yield* runScan(
            f,
            s.step,
            s.body,
            ctx,
            runSteps,
            timed ? { path: `${at.path}${i}/`, name: `${at.name}s${k}: `, depth: at.depth + 1 } : undefined,
          );
          break;
        }
        case 'empty':
          for (const id of s.writes)
            if (f.p.buffers[id]!.size === 0) f.hostWrote(id, NDArray.zeros([0], f.p.buffers[id]!.dtype));
          break;
        case 'host':
          yield* runHost(f, s, ctx);
          break;
      }
    } catch (e) {
      throw withBuiltBy(
        e,
        s.kind === 'kernel' ? s.origin : s.kind === 'host' || s.kind === 'scan' ? s.step.origin : undefined,
      );
    }
  }
}

/** Runs `steps`, each read-back they ask for sent and waited for (Node's worker). */
function drive(steps: Steps): void {
  for (let r = steps.next(); r.done !== true; ) {
    let failed: { e: unknown } | undefined;
    try {
      r.value.frame.flush(r.value.ids);
    } catch (e) {
      failed = { e };
    }
    r = failed === undefined ? steps.next() : steps.throw(failed.e);
  }
}

/** As drive, each read-back awaited (callAsync: a page's only way). */
async function driveAsync(steps: Steps): Promise<void> {
  for (let r = steps.next(); r.done !== true; ) {
    let failed: { e: unknown } | undefined;
    try {
      await r.value.frame.flushAsync(r.value.ids);
    } catch (e) {
      failed = { e };
    }
    r = failed === undefined ? steps.next() : steps.throw(failed.e);
  }
}

/**
 * A call of a prepared program: `inputs` by input slot, `cells` by variable slot; `nOut` targets are
 * outputs (read back), the rest update values (kept on the device where they fill a buffer).
 */
export interface WebCall {
  readonly pp: WebPrepared;
  readonly inputs: readonly NDArray[];
  readonly cells: readonly VariableCell[];
  readonly ctx: EvalContext;
  readonly nOut: number;
  readonly timed: Batch['timed'] | undefined;
}

/** Runs a call, each read-back sent and waited for (Node's worker). */
export function runWeb(gpu: WebGpu, c: WebCall): WebResult[] {
  const f = new Frame(c.pp, new Batch(gpu, c.timed), c.cells, c.ctx, c.inputs);
  drive(runSteps(f, c.pp.steps, c.ctx));
  const end = endWeb(f, c.nOut);
  end.frame.flush(end.reads);
  return end.results();
}

/** As runWeb, without blocking: every request to the device awaited (callAsync). */
export async function runWebAsync(gpu: WebGpu, c: WebCall): Promise<WebResult[]> {
  const f = new Frame(c.pp, new Batch(gpu, c.timed), c.cells, c.ctx, c.inputs);
  await driveAsync(runSteps(f, c.pp.steps, c.ctx));
  const end = endWeb(f, c.nOut);
  await end.frame.flushAsync(end.reads);
  return end.results();
}

/** A call with every step gathered: the buffers still to read back, then the results from the host copies. */
interface CallEnd {
  readonly frame: Frame;
  readonly reads: readonly number[];
  results(): WebResult[];
}

function endWeb(f: Frame, nOut: number): CallEnd {
  const pp = f.pp;
  const p = pp.program;
  // Update values that fill a buffer computed here move to their variable; everything else is read back.
  const targetUse = new Map<number, number>();
  for (const t of p.targets) targetUse.set(t.buf, (targetUse.get(t.buf) ?? 0) + 1);
  const moves = p.targets.map((t, k) => {
    const b = p.buffers[t.buf]!;
    return (
      k >= nOut &&
      !f.host.has(t.buf) &&
      f.onDev.has(t.buf) &&
      t.offset === 0 &&
      b.size === t.shape.reduce((a, d) => a * d, 1) &&
      targetUse.get(t.buf) === 1 &&
      (b.role === 'temp' || b.role === 'target')
    );
  });
  const reads = p.targets.filter((_, k) => !moves[k]).map((t) => t.buf);
  // The moved buffers leave the program now (before any later call is gathered): the variable owns each, the next call allocates another.
  const moved = p.targets.map((t, k) => (moves[k] ? f.devId(t.buf) : undefined));
  for (const [k, t] of p.targets.entries()) if (moves[k]) pp.dev.delete(t.buf);
  return {
    frame: f,
    reads,
    results: () =>
      p.targets.map((t, k): WebResult => {
        if (moved[k] !== undefined) return { dev: moved[k], shape: t.shape, dtype: t.dtype };
        const n = t.shape.reduce((a, d) => a * d, 1);
        // an empty target (a Scan's item kept 'none', as a result) has no buffer to read back
        if (n === 0) return { host: NDArray.zeros(t.shape, t.dtype) };
        const whole = f.host.get(t.buf)!;
        return { host: new NDArray(whole.data.slice(t.offset, t.offset + n), t.shape, t.dtype) };
      }),
  };
}

function* runHost(f: Frame, s: WebStep & { kind: 'host' }, ctx: EvalContext): Steps {
  const step = s.step;
  if (step.kind === 'print') {
    yield* f.need([step.input.buf]);
    const v = f.hostOf(step.input.buf);
    const n = step.input.shape.reduce((a, d) => a * d, 1);
    ctx.print(
      `${step.message}${formatValue(new NDArray(v.data.slice(step.input.offset, step.input.offset + n), step.input.shape, step.input.dtype))}`,
    );
    return;
  }
  const io = stepBuffers(step);
  // (always: what the batch holds is sent first, so the host's writes cannot overtake its dispatches)
  yield { frame: f, ids: io.reads };
  if (step.kind === 'extern') {
    runExtern(f, step, ctx);
    return;
  }
  const p = f.p;
  const ins = io.reads.map((b) =>
    f.host.has(b) ? f.host.get(b)!.data : NDArray.zeros([p.buffers[b]!.size], p.buffers[b]!.dtype).data,
  );
  const outs = s.run!(ins, [], ctx.learningPhase, ctx);
  io.writes.forEach((w, k) => f.hostWrote(w, new NDArray(outs[k]!, [p.buffers[w]!.size], p.buffers[w]!.dtype)));
}

function runExtern(f: Frame, s: ExternStep, ctx: EvalContext): void {
  const ins = s.inputs.map((v) => {
    const whole = f.hostOf(v.buf);
    const n = v.shape.reduce((a, d) => a * d, 1);
    return v.offset === 0 && n === whole.size
      ? whole.reshape(v.shape)
      : new NDArray(whole.data.slice(v.offset, v.offset + n), v.shape, v.dtype);
  });
  runExternOnHost(s, ins, ctx, (buf, v) => f.hostWrote(buf, v));
}

/** Frees a specialisation's device buffers (its program left the cache), Scan bodies' included. */
export function releaseWeb(gpu: WebGpu, pp: WebPrepared): void {
  const ids: number[] = [];
  const collect = (q: WebPrepared): void => {
    ids.push(...q.dev.values());
    q.dev.clear();
    q.uploaded.clear();
    for (const s of q.steps) if (s.kind === 'scan') collect(s.body);
  };
  collect(pp);
  if (ids.length > 0) gpu.worker.post({ kind: 'free', ids, quiet: true });
}
