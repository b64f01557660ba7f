// Running a lowered Program (src/codegen/kernel/ir.ts) on the gpu device. Each step is prepared
// once per shape specialisation, where src/codegen/gpu/strategy.ts puts it, as one of:
//   kernel  a loop or matmul kernel rendered by src/codegen/gpu/render.ts (one per store);
//   op      an extern step of a user op with only a gpu template (src/codegen/gpu/extern.ts);
//   scan    a Scan: a host loop over its body's own prepared program, states on the device;
//   host    anything else: the step as the cpu renders it (a one-step cpu program), or an
//           extern's reference implementation, with its inputs read back.
// Values stay on the device between kernels; only what a host step reads is read back.
import { withBuiltBy, type Provenance } from '../../ir/provenance.js';
import { NDArray } from '../../ir/ndarray.js';
import type { VariableCell } from '../../ir/node.js';
import type { ExternStep, PrintStep, Program, ScanStep, Step, ValueRef } from '../../codegen/kernel/ir.js';
import { formatValue } from '../../ir/ops/misc.js';
import { stepBuffers } from '../../codegen/kernel/ir.js';
import type { RunFn } from '../../codegen/cpu/module.js';
import { renderLoopStore, renderMatmul, type GpuKernel } from '../../codegen/gpu/render.js';
import { chooseGpuStrategies, type BufferInfo, type GpuStrategy } from '../../codegen/gpu/strategy.js';
import type { RowCheck } from '../../codegen/kernel/row-checks.js';
import { userElementwise, type ExternKernel } from '../../codegen/gpu/extern.js';
import { userGpuHelper } from '../../codegen/lower/user.js';
import type { DeviceBuffer } from './buffer.js';
import { warnOnce, type GpuDevice } from './device.js';
import { uploadKernelRun } from './kernels.js';
import { deviceCopy, rememberUpload } from './resident.js';
import { type Runner, hostVal, hostValue, sizeOf, type Val } from './runner.js';
import { stats } from './stats.js';
import { offsetKernel, scanLoop } from './scan.js';
import { hostModule, checkRows, runExternOnHost } from './host-step.js';
import { describeStep, stepName } from '../profile.js';

export type PreparedStep =
  | {
      readonly kind: 'kernels';
      readonly step: Step;
      readonly kernels: readonly GpuKernel[];
      readonly checks?: readonly RowCheck[];
      readonly origin?: readonly Provenance[];
    }
  | { readonly kind: 'op'; readonly step: ExternStep; readonly lowered: ExternKernel }
  | { readonly kind: 'scan'; readonly step: ScanStep; readonly body: Prepared }
  | { readonly kind: 'print'; readonly step: PrintStep }
  | { readonly kind: 'host'; readonly step: Step; readonly why: string; readonly run: RunFn | undefined };

export interface Prepared {
  readonly program: Program;
  readonly steps: readonly PreparedStep[];
  /** Constants uploaded once per specialisation (kept for its lifetime). */
  readonly uploads: Map<number, DeviceBuffer>;
}

/** Renders every step the gpu strategy (src/codegen/gpu/strategy.ts) puts on the device; the others run on the host. */
export function prepare(p: Program, device: GpuDevice): Prepared {
  return prepareChosen(p, chooseGpuStrategies(p, device));
}

function prepareChosen(p: Program, chosen: readonly GpuStrategy[]): Prepared {
  const info: BufferInfo = { dtype: (b) => p.buffers[b]!.dtype, size: (b) => p.buffers[b]!.size };
  const steps = p.steps.map((s, i): PreparedStep => {
    const c = chosen[i]!;
    const origin = s.origin !== undefined ? { origin: s.origin } : {};
    if (c.kind === 'host')
      return { kind: 'host', step: s, why: c.why, run: s.kind === 'extern' ? undefined : hostModule(p, s) };
    switch (s.kind) {
      case 'loop': {
        if (c.kind !== 'loop') break;
        return {
          kind: 'kernels',
          step: s,
          kernels: c.stores.map((st) => renderLoopStore(s, st, info)),
          ...(c.checks.length > 0 ? { checks: c.checks } : {}),
          ...origin,
        };
      }
      case 'matmul':
        return { kind: 'kernels', step: s, kernels: [renderMatmul(s, info)], ...origin };
      case 'scan':
        if (c.kind === 'scan') return { kind: 'scan', step: s, body: prepareChosen(s.body, c.body) };
        break;
      // print_tensor's host callback: the value read back and written through the print hook.
      case 'print':
        return { kind: 'print', step: s };
      case 'extern': {
        // A user op with only a gpu template: its helper per element.
        const out = s.outs[0]!;
        const l = userElementwise(
          { dtype: out.dtype, shape: out.shape, inputs: s.inputs },
          userGpuHelper({ op: s.def.name, attrs: s.attrs, inputs: s.inputs }),
        );
        if (l === undefined) break;
        return { kind: 'op', step: s, lowered: l };
      }
    }
    throw new Error(`internal: the gpu strategy of step ${i} (${c.kind}) does not fit its ${s.kind} step`);
  });
  return { program: p, steps, uploads: new Map() };
}

/** The value a ValueRef names: its buffer's value, or a slice of it. */
function valueOf(r: Runner, bufs: Map<number, Val>, v: ValueRef): Val {
  const whole = bufs.get(v.buf);
  if (whole === undefined) throw new Error(`internal: buffer ${v.buf} read before it was written`);
  const n = sizeOf(v.shape);
  if (v.offset === 0 && n === sizeOf(whole.shape)) {
    return { shape: v.shape, dtype: v.dtype, host: whole.host?.reshape(v.shape), dev: whole.dev };
  }
  if (whole.dev !== undefined && whole.host === undefined && n > 0) {
    return { shape: v.shape, dtype: v.dtype, host: undefined, dev: r.run(offsetKernel(n), [whole.dev, v.offset]) };
  }
  const h = hostValue(whole);
  return hostVal(new NDArray(h.data.slice(v.offset, v.offset + n), v.shape, v.dtype));
}

function note(why: string, label: string): void {
  const key = `step:${label}`;
  warnOnce(key, `theanine: device "gpu": ${label} runs on the host (${why})`);
  stats.hostNodes.set(key, (stats.hostNodes.get(key) ?? 0) + 1);
}

/** A kernel argument from a value: the device buffer, or the host data as float32. */
function argOf(v: Val): DeviceBuffer | Float32Array {
  if (v.dev !== undefined) return v.dev;
  const d = v.host!.data;
  return d instanceof Float32Array ? d : Float32Array.from(d);
}

/**
 * Runs a prepared program: `inputs` by input slot, `cells` by variable slot. Returns the
 * targets' values (device buffers stay on the device; the caller reads back what it needs).
 */
export function runPrepared(
  r: Runner,
  pp: Prepared,
  inputs: readonly Val[],
  cells: readonly VariableCell[],
  phase: number,
): Val[] {
  const p = pp.program;
  const bufs = new Map<number, Val>();
  for (const b of p.buffers) {
    switch (b.role) {
      case 'input':
        bufs.set(b.id, inputs[b.slot!]!);
        break;
      case 'variable': {
        const cell = cells[b.slot!]!;
        const dev = deviceCopy(cell);
        bufs.set(
          b.id,
          dev !== undefined
            ? { shape: [b.size], dtype: b.dtype, host: undefined, dev }
            : hostVal(cell.value.reshape([b.size])),
        );
        break;
      }
      case 'constant': {
        const up = pp.uploads.get(b.id);
        bufs.set(b.id, { shape: [b.size], dtype: b.dtype, host: b.value!.reshape([b.size]), dev: up });
        break;
      }
      case 'phase':
        bufs.set(b.id, hostVal(new NDArray([phase], [1], 'uint8')));
        break;
      case 'epoch':
        bufs.set(b.id, hostVal(new NDArray([r.ctx.epoch], [1], 'float64')));
        break;
      default:
        break;
    }
  }
  /** A kernel argument for buffer `id`: variables and constants are uploaded once. */
  const arg = (id: number): DeviceBuffer | Float32Array => {
    const v = bufs.get(id)!;
    if (v.dev !== undefined) return v.dev;
    const b = p.buffers[id]!;
    if (b.role === 'variable' || b.role === 'constant') {
      const buf = uploadKernelRun(r.device, argOf(v) as Float32Array);
      if (b.role === 'variable') rememberUpload(cells[b.slot!]!, buf);
      else pp.uploads.set(id, buf);
      v.dev = buf;
      return buf;
    }
    return argOf(v);
  };
  const at = r.at;
  let scans = 0;
  pp.steps.forEach((s, i) => {
    const t0 = r.timer === undefined ? 0 : performance.now();
    const scan = s.kind === 'scan' ? scans++ : -1;
    try {
      if (scan >= 0 && r.timer !== undefined)
        r.at = { path: `${at.path}${i}/`, name: `${at.name}s${scan}: `, depth: at.depth + 1 };
      runStep(s);
    } catch (e) {
      throw withBuiltBy(e, s.kind === 'kernels' ? s.origin : s.step.origin); // the user's calls the step computes
    } finally {
      r.at = at;
    }
    if (r.timer !== undefined) {
      r.finish();
      const step = s.step;
      r.timer.add(
        `${at.path}${i}`,
        () =>
          describeStep(
            p,
            step,
            `${at.name}${stepName(step, scan)}${s.kind === 'host' ? ' (on the host)' : ''}`,
            `${at.path}${i}`,
            at.depth,
          ),
        performance.now() - t0,
      );
    }
  });
  return p.targets.map((t) => valueOf(r, bufs, t));

  function runStep(s: PreparedStep): void {
    switch (s.kind) {
      case 'kernels':
        for (const c of s.checks ?? []) checkRows(c, hostValue(bufs.get(c.buf)!).data);
        for (const k of s.kernels) {
          const dev = r.run(
            k.kernel,
            k.args.map((a) => (a.kind === 'inf' ? Infinity : arg(a.buf))),
          );
          bufs.set(k.out, { shape: [k.kernel.size], dtype: p.buffers[k.out]!.dtype, host: undefined, dev });
        }
        break;
      case 'op': {
        const ins = s.step.inputs.map((v) => valueOf(r, bufs, v));
        const out = s.step.outs[0]!;
        const dev = r.run(
          s.lowered.kernel,
          s.lowered.args.map((k) => argOf(ins[k]!)),
        );
        bufs.set(out.buf, { shape: [sizeOf(out.shape)], dtype: out.dtype, host: undefined, dev });
        break;
      }
      case 'scan': {
        const items = scanLoop(
          r,
          s.step,
          (ins) => runPrepared(r, s.body, ins, cells, phase),
          (v) => valueOf(r, bufs, v),
        );
        const ids = [
          ...s.step.outItems.map((o) => o.buf),
          ...s.step.finalItems,
          ...s.step.stateItems.map((o) => o.buf),
        ];
        ids.forEach((id, i) => {
          const v = items[i]!;
          bufs.set(id, {
            shape: [sizeOf(v.shape)],
            dtype: v.dtype,
            host: v.host?.reshape([sizeOf(v.shape)]),
            dev: v.dev,
          });
        });
        break;
      }
      case 'print': {
        const v = hostValue(valueOf(r, bufs, s.step.input));
        r.ctx.print(`${s.step.message}${formatValue(v)}`);
        break;
      }
      case 'host':
        note(
          s.why,
          s.step.kind === 'matmul'
            ? `a matmul kernel [${s.step.label}]`
            : `${s.step.kind === 'extern' ? 'op' : 'kernel'} ${s.step.label}`,
        );
        if (s.step.kind === 'extern') runExtern(r, s.step, bufs);
        else {
          const io = stepBuffers(s.step);
          // A buffer the step reads before any step wrote it is its own (a scan reading the element it stored before).
          const ins = io.reads.map((b) =>
            bufs.has(b) ? hostValue(bufs.get(b)!).data : NDArray.zeros([p.buffers[b]!.size], p.buffers[b]!.dtype).data,
          );
          const outs = s.run!(ins, [], phase, r.ctx);
          io.writes.forEach((w, k) =>
            bufs.set(w, hostVal(new NDArray(outs[k]!, [p.buffers[w]!.size], p.buffers[w]!.dtype))),
          );
        }
        break;
    }
  }
}

function runExtern(r: Runner, s: ExternStep, bufs: Map<number, Val>): void {
  const ins = s.inputs.map((v) => hostValue(valueOf(r, bufs, v)));
  runExternOnHost(s, ins, r.ctx, (buf, v) => bufs.set(buf, hostVal(v)));
}
