// Running a lowered Program (src/codegen/kernel.ts) on the gpu device's webgpu mode. Each step is
// prepared once per shape specialisation as a WGSL kernel (src/codegen/wgsl/render.ts) or, where
// the renderer does not cover it yet, as a host step (the cpu's code for that one step, or an
// extern's reference implementation), which the compile reports as a fallback naming the op and
// the reason. A call batches consecutive kernels into one request (one command buffer) to the
// device's worker; values stay in device buffers between kernels and across calls (the program's
// intermediates and constants per specialisation, variables per variable: resident.ts); only what
// a host step reads and the function's outputs are read back.
import { rethrow } from '../../../ir/build.js';
import type { DType } from '../../../ir/dtype.js';
import { NDArray, formatShape } from '../../../ir/ndarray.js';
import type { EvalContext } from '../../../ir/op.js';
import type { VariableCell } from '../../../ir/node.js';
import { formatValue } from '../../../ir/ops/misc.js';
import { withBuiltBy, type Provenance } from '../../../ir/provenance.js';
import { stepBuffers, type BufferDecl, type ExternStep, type Program, type Step } from '../../../codegen/kernel.js';
import { planBuffers } from '../../../codegen/plan.js';
import { buildModule, type RunFn } from '../../../codegen/cpu/module.js';
import { runtimeHelpers } from '../../../codegen/cpu/runtime.js';
import { NoElements, Unsupported, renderLoop, renderMatmul, rowChecks, type BufferInfo, type RowCheck, type WgslKernel } from '../../../codegen/wgsl/render.js';
import { storageOf } from '../../../codegen/wgsl/scalar.js';
import type { Fallback } from '../../fallback.js';
import { newBufferId, type WebGpu } from './session.js';
import { warnOnce } from '../device.js';
import { residentId, takeResult, uploadVariable } from './resident.js';

export type WebStep =
  | { readonly kind: 'kernel'; readonly kernel: WgslKernel; readonly key: string; readonly checks: readonly RowCheck[]; readonly origin?: readonly Provenance[] }
  | { readonly kind: 'host'; readonly step: Step; readonly why: string; readonly run: RunFn | undefined }
  /** A kernel of no elements: its buffers hold none. */
  | { readonly kind: 'empty'; readonly writes: readonly number[] };

export interface WebPrepared {
  readonly program: Program;
  readonly steps: readonly WebStep[];
  /** Device buffers of the program's buffers (intermediates, inputs, constants), by program buffer. */
  readonly dev: Map<number, number>;
  /** Constants already uploaded. */
  readonly uploaded: Set<number>;
}

/** Shader sources the worker has compiled, by key (the source itself: equal kernels share one pipeline). */
const compiled = new Set<string>();

export function forgetPipelines(): void {
  compiled.clear();
}

/** A label with the step's op names, for warnings and fallbacks. */
const opOf = (s: Step): string => (s.kind === 'extern' ? s.def.name : s.label);

/** Renders every step, or says why it runs on the host. */
export function prepareWeb(p: Program): WebPrepared {
  const info: BufferInfo = { dtype: (b) => p.buffers[b]!.dtype, size: (b) => p.buffers[b]!.size, storage: (b) => storageIn(p, b) };
  // (the cpu's packing buffers are not the device's)
  if (p.buffers.some((b) => b.dtype === 'float64' && b.role !== 'epoch' && b.role !== 'arena')) {
    warnOnce('webgpu-float64', 'theanine: device "gpu:webgpu" computes float64 values in float32 (WebGPU has no float64), as the tensorflow backend does');
  }
  const steps = p.steps.map((s): WebStep => {
    try {
      let kernel: WgslKernel;
      let checks: RowCheck[] = [];
      if (s.kind === 'loop') { checks = rowChecks(s); kernel = renderLoop(s, info); }
      else if (s.kind === 'matmul') kernel = renderMatmul(s, info);
      else if (s.kind === 'extern') throw new Unsupported(`op ${s.def.name} has no kernel (${s.reason})`);
      else if (s.kind === 'scan') throw new Unsupported('Scan runs on the host in this first version of the webgpu mode');
      else throw new Unsupported('print_tensor is a host callback');
      return { kind: 'kernel', kernel, key: kernel.code, checks, ...(s.origin !== undefined ? { origin: s.origin } : {}) };
    } catch (e) {
      if (e instanceof NoElements) return { kind: 'empty', writes: stepBuffers(s).writes };
      if (!(e instanceof Unsupported)) throw e;
      return { kind: 'host', step: s, why: e.message, run: s.kind === 'extern' || s.kind === 'print' ? undefined : hostModule(p, s) };
    }
  });
  return { program: p, steps, dev: new Map(), uploaded: new Set() };
}

/** What runs on the host instead of the device, for the fallback rule (print_tensor is a host op everywhere, not a fallback). */
export function webFallbacks(pp: WebPrepared): Fallback[] {
  return pp.steps.flatMap((s): Fallback[] => {
    if (s.kind !== 'host' || s.step.kind === 'print') return [];
    const reason = s.step.kind === 'extern' ? s.step.reason : `runs on the host on gpu:webgpu: ${s.why}`;
    return [{ op: opOf(s.step), reason, whole: false, ...(s.step.origin !== undefined ? { origin: s.step.origin } : {}) }];
  });
}

/** One step as a cpu program of its own: the buffers it reads are its inputs, those it writes its results. */
function hostModule(p: Program, s: Step): RunFn {
  const io = stepBuffers(s);
  const buffers: BufferDecl[] = p.buffers.map((b): BufferDecl => {
    const slot = io.reads.indexOf(b.id);
    if (slot >= 0) return { id: b.id, dtype: b.dtype, size: b.size, role: 'input', slot };
    if (io.writes.includes(b.id)) return { id: b.id, dtype: b.dtype, size: b.size, role: 'target' };
    return { id: b.id, dtype: b.dtype, size: b.size, role: 'scratch' };
  });
  const one: Program = { buffers, steps: [s], targets: io.writes.map((w) => ({ buf: w, offset: 0, shape: [p.buffers[w]!.size], dtype: p.buffers[w]!.dtype, copy: false })) };
  return buildModule(one, planBuffers(one)).run;
}

/** How the device holds a program buffer: its dtype's storage; the epoch (a random key word) as its u32 bits. */
function storageIn(p: Program, b: number): 'f32' | 'i32' | undefined {
  return p.buffers[b]!.role === 'epoch' ? 'i32' : storageOf(p.buffers[b]!.dtype);
}

/** Host data in the device's storage type (f32, or i32 for integers, bool and the epoch's bits). */
function toDevice(st: 'f32' | 'i32' | undefined, data: ArrayLike<number>): Float32Array | Int32Array {
  if (st === 'f32') return data instanceof Float32Array ? data : Float32Array.from(data);
  return data instanceof Int32Array ? data : Int32Array.from(data);
}

function fromDevice(dtype: DType, bytes: ArrayBuffer, n: number): NDArray {
  const raw = storageOf(dtype) === 'f32' ? new Float32Array(bytes, 0, n) : new Int32Array(bytes, 0, n);
  return new NDArray(raw, [n], dtype);
}

/** A call's requests to the worker, gathered until something must be read back. */
interface Batch {
  compile: { key: string; code: string }[];
  allocs: { id: number; bytes: number }[];
  writes: { id: number; data: Float32Array | Int32Array }[];
  dispatches: { key: string; binds: number[]; groups: readonly number[] }[];
}
const emptyBatch = (): Batch => ({ compile: [], allocs: [], writes: [], dispatches: [] });

/** Result of a call: each target's value on the host, or a device buffer handed to a variable. */
export type WebResult = { readonly host: NDArray } | { readonly dev: number; readonly shape: readonly number[]; readonly dtype: DType };

/**
 * Runs a prepared program: `inputs` by input slot, `cells` by variable slot; `nOut` targets are
 * outputs (read back), the rest update values (kept on the device where they fill a buffer).
 */
export function runWeb(gpu: WebGpu, pp: WebPrepared, inputs: readonly NDArray[], cells: readonly VariableCell[], ctx: EvalContext, nOut: number): WebResult[] {
  const p = pp.program;
  const host = new Map<number, NDArray>();
  const onDev = new Set<number>();
  let batch = emptyBatch();
  for (const b of p.buffers) {
    switch (b.role) {
      case 'input': host.set(b.id, inputs[b.slot!]!.reshape([b.size])); break;
      case 'variable': if (residentId(cells[b.slot!]!) !== undefined) onDev.add(b.id); else host.set(b.id, cells[b.slot!]!.value.reshape([b.size])); break;
      case 'constant': if (pp.uploaded.has(b.id)) onDev.add(b.id); else host.set(b.id, b.value!.reshape([b.size])); break;
      case 'phase': host.set(b.id, new NDArray([ctx.learningPhase], [1], 'uint8')); break;
      case 'epoch': host.set(b.id, new NDArray([ctx.epoch], [1], 'float64')); break;
      default: break;
    }
  }
  const bytesOf = (id: number): number => p.buffers[id]!.size * 4;
  /** The device buffer holding program buffer `id` (allocated in this batch where new). */
  const devId = (id: number): number => {
    const b = p.buffers[id]!;
    if (b.role === 'variable') {
      const cell = cells[b.slot!]!;
      const r = residentId(cell);
      if (r !== undefined) return r;
      const nid = newBufferId();
      batch.allocs.push({ id: nid, bytes: bytesOf(id) });
      uploadVariable(cell, nid);
      return nid;
    }
    let d = pp.dev.get(id);
    if (d === undefined) {
      d = newBufferId();
      pp.dev.set(id, d);
      batch.allocs.push({ id: d, bytes: bytesOf(id) });
    }
    return d;
  };
  const toDev = (id: number): number => {
    const d = devId(id);
    if (!onDev.has(id)) {
      const h = host.get(id);
      if (h === undefined) throw new Error(`internal: buffer ${id} read before it was written`);
      batch.writes.push({ id: d, data: toDevice(storageIn(p, id), p.buffers[id]!.role === 'epoch' ? [h.data[0]! >>> 0] : h.data) });
      onDev.add(id);
      if (p.buffers[id]!.role === 'constant') pp.uploaded.add(id);
    }
    return d;
  };
  /** Sends the batch, reading back `ids` (program buffers on the device only). */
  const flush = (ids: readonly number[]): void => {
    const want = [...new Set(ids)].filter((id) => !host.has(id));
    const reads = want.map((id) => ({ id: devId(id), bytes: bytesOf(id) }));
    if (reads.length === 0 && batch.dispatches.length === 0 && batch.writes.length === 0 && batch.allocs.length === 0) return;
    const r = gpu.worker.call({ kind: 'run', ...batch, reads });
    batch = emptyBatch();
    if (!r.ok) throw new Error(`gpu:webgpu: ${r.error}`);
    want.forEach((id, k) => host.set(id, fromDevice(p.buffers[id]!.dtype, r.data![k]!, p.buffers[id]!.size)));
  };
  const hostOf = (id: number): NDArray => {
    if (!host.has(id)) flush([id]);
    return host.get(id)!;
  };
  const written = (id: number, v: NDArray): void => { host.set(id, v); onDev.delete(id); };

  for (const s of pp.steps) {
    try {
      if (s.kind === 'kernel') {
        for (const c of s.checks) { const d = hostOf(c.buf).data; for (let i = c.lo; i <= c.hi; i++) runtimeHelpers.row(d[i]!, c.rows, c.op, c.shape); }
        if (!compiled.has(s.key)) { batch.compile.push({ key: s.key, code: s.kernel.code }); compiled.add(s.key); }
        const binds = s.kernel.binds.map((id) => (s.kernel.writes.includes(id) ? devId(id) : toDev(id)));
        batch.dispatches.push({ key: s.key, binds, groups: s.kernel.groups });
        for (const id of s.kernel.writes) {
          // A store that does not cover its buffer keeps the rest: the buffer's host copy goes up first.
          if (host.has(id) && !onDev.has(id)) toDev(id);
          host.delete(id);
          onDev.add(id);
        }
      } else if (s.kind === 'empty') {
        for (const id of s.writes) if (p.buffers[id]!.size === 0) written(id, NDArray.zeros([0], p.buffers[id]!.dtype));
      } else runHost(s);
    } catch (e) {
      throw withBuiltBy(e, s.kind === 'kernel' ? s.origin : s.kind === 'host' ? s.step.origin : undefined);
    }
  }
  // Update values that fill a buffer computed here move to their variable; everything else is read back.
  const targetUse = new Map<number, number>();
  for (const t of p.targets) targetUse.set(t.buf, (targetUse.get(t.buf) ?? 0) + 1);
  const moves = p.targets.map((t, k) => {
    const b = p.buffers[t.buf]!;
    return k >= nOut && !host.has(t.buf) && onDev.has(t.buf) && t.offset === 0 && b.size === t.shape.reduce((a, d) => a * d, 1)
      && targetUse.get(t.buf) === 1 && (b.role === 'temp' || b.role === 'target');
  });
  flush(p.targets.filter((_, k) => !moves[k]).map((t) => t.buf));
  return p.targets.map((t, k): WebResult => {
    if (moves[k]) {
      const id = pp.dev.get(t.buf)!;
      pp.dev.delete(t.buf); // the variable owns it now; the next call allocates another
      return takeResult(id, t.shape, t.dtype);
    }
    const whole = host.get(t.buf)!;
    const n = t.shape.reduce((a, d) => a * d, 1);
    const data = whole.data.slice(t.offset, t.offset + n);
    return { host: new NDArray(data, t.shape, t.dtype) };
  });

  function runHost(s: WebStep & { kind: 'host' }): void {
    const step = s.step;
    if (step.kind === 'print') {
      const v = hostOf(step.input.buf);
      const n = step.input.shape.reduce((a, d) => a * d, 1);
      ctx.print(`${step.message}${formatValue(new NDArray(v.data.slice(step.input.offset, step.input.offset + n), step.input.shape, step.input.dtype))}`);
      return;
    }
    const io = stepBuffers(step);
    flush(io.reads.filter((b) => host.has(b) || onDev.has(b)));
    if (step.kind === 'extern') { runExtern(step); return; }
    const ins = io.reads.map((b) => (host.has(b) ? host.get(b)!.data : NDArray.zeros([p.buffers[b]!.size], p.buffers[b]!.dtype).data));
    const outs = s.run!(ins, [], ctx.learningPhase, ctx);
    io.writes.forEach((w, k) => written(w, new NDArray(outs[k]!, [p.buffers[w]!.size], p.buffers[w]!.dtype)));
  }

  function runExtern(s: ExternStep): void {
    const ins = s.inputs.map((v) => {
      const whole = host.get(v.buf)!;
      const n = v.shape.reduce((a, d) => a * d, 1);
      return v.offset === 0 && n === whole.size ? whole.reshape(v.shape) : new NDArray(whole.data.slice(v.offset, v.offset + n), v.shape, v.dtype);
    });
    let outs: NDArray[];
    try {
      outs = s.tuple ? s.def.implTuple!(ins, s.attrs, ctx) : [s.def.impl(ins, s.attrs, ctx)];
    } catch (e) {
      throw rethrow(e, s.def.name);
    }
    s.outs.forEach((o, k) => {
      const v = outs[k]!;
      if (v.dtype !== o.dtype || v.shape.length !== o.shape.length || v.shape.some((d, i) => d !== o.shape[i])) {
        throw new Error(`internal: op ${s.def.name} produced ${v.dtype} ${formatShape(v.shape)} but its type is ${o.dtype} ${formatShape(o.shape)}`);
      }
      written(o.buf, v.reshape([v.size]));
    });
  }
}

/** Frees a specialisation's device buffers (its program left the cache). */
export function releaseWeb(gpu: WebGpu, pp: WebPrepared): void {
  const ids = [...pp.dev.values()];
  pp.dev.clear();
  pp.uploaded.clear();
  if (ids.length > 0) gpu.worker.post({ kind: 'free', ids, quiet: true });
}
