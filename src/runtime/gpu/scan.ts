// Scan on the gpu: a host loop over the body's kernels. States stay on the device from step to
// step, each step's slice of a sequence is a kernel reading at an offset (an argument, so all
// steps share one kernel), and stacked results are written slot by slot into a device buffer.
// Each step's other buffers are released when the step ends, so memory does not grow with the
// number of steps. Shapes are fixed when the Scan is lowered (src/codegen/lower/lower.ts): shapes the
// reference would reject make the whole function interpreted, so the reference reports them.
import { NDArray } from '../../ir/ndarray.js';
import type { ScanStep, ValueRef } from '../../codegen/kernel/ir.js';
import type { TensorType } from '../../ir/types.js';
import type { KernelSource } from '../../codegen/gpu/source.js';
import type { DeviceBuffer } from './buffer.js';
import { type Runner, hostVal, hostValue, sizeOf, type Val } from './runner.js';

/** `n` elements of a0 from offset a1 (a sequence's step, a slice of a buffer). */
export const offsetKernel = (n: number): KernelSource => ({
  source: 'function (a0, a1) {\n  return a0[this.thread.x + a1];\n}',
  functions: [],
  size: n,
});

/** Slot a2 of a (T, inner) buffer a0 replaced by a1; without a0 (the first slot), zeros elsewhere. */
const stackKernel = (steps: number, inner: number, first: boolean): KernelSource => ({
  source: first
    ? `function (a0) {\n  const i = this.thread.x;\n  let v = 0.0;\n  if (i < ${inner}) { v = a0[i]; }\n  return v;\n}`
    : `function (a0, a1, a2) {\n  const i = this.thread.x;\n  let v = a0[i];\n  if (Math.floor(i / ${inner}) == a2) { v = a1[i - a2 * ${inner}]; }\n  return v;\n}`,
  functions: [],
  size: steps * inner,
});

/** One stacked item: on the device when its steps are, else on the host as the reference does. */
class Stack {
  private acc: DeviceBuffer | undefined;
  private readonly host: NDArray[] = [];

  constructor(
    readonly steps: number,
    readonly t: TensorType,
  ) {}

  put(r: Runner, k: number, v: Val): void {
    if (v.dev === undefined) {
      this.host.push(hostValue(v));
      return;
    }
    const inner = sizeOf(v.shape);
    const prev = this.acc;
    const first = prev === undefined;
    this.acc = r.run(stackKernel(this.steps, inner, first), first ? [v.dev] : [prev, v.dev, k]);
    r.owned.pop(); // the stack owns its buffer, not the step
    prev?.release();
  }

  result(shape: readonly number[]): { val: Val; buf: DeviceBuffer | undefined } {
    if (this.acc !== undefined)
      return {
        val: { shape: [this.steps, ...shape], dtype: this.t.dtype, host: undefined, dev: this.acc },
        buf: this.acc,
      };
    const first = this.host[0]!;
    const out = new Float64Array(first.size * this.host.length);
    this.host.forEach((s, k) => out.set(s.data, k * first.size));
    return { val: hostVal(new NDArray(out, [this.host.length, ...first.shape], first.dtype)), buf: undefined };
  }
}

/**
 * End of a scan step: releases the device buffers of the step (and those carried from before)
 * except the ones the next step or the end still reads (`live`: the new states and the outputs
 * kept 'last'); returns the buffers carried on.
 */
function carryOver(r: Runner, carried: ReadonlySet<DeviceBuffer>, live: readonly Val[]): Set<DeviceBuffer> {
  const keep = new Set<DeviceBuffer>();
  for (const v of live) if (v.dev !== undefined) keep.add(v.dev);
  for (const buf of [...r.owned, ...carried]) if (!keep.has(buf)) buf.release();
  return new Set([...keep].filter((buf) => r.owned.includes(buf) || carried.has(buf)));
}

/** Step t of a sequence: a kernel reading at offset t * inner, or a host slice of a host value. */
function slice(r: Runner, seq: Val, t: number): Val {
  const shape = seq.shape.slice(1);
  const inner = sizeOf(shape);
  if (seq.dev === undefined || inner === 0) {
    const h = hostValue(seq);
    return hostVal(new NDArray(h.data.slice(t * inner, (t + 1) * inner), shape, h.dtype));
  }
  return { shape, dtype: seq.dtype, host: undefined, dev: r.run(offsetKernel(inner), [seq.dev, t * inner]) };
}

/**
 * A lowered Scan step (the compiled path): per step, the body's prepared program runs on the
 * step's inputs by slot (sequences' slices, states, constants); its targets are the step's
 * outputs, then the new states.
 */
export function scanLoop(
  r: Runner,
  s: ScanStep,
  runBody: (inputs: readonly Val[]) => Val[],
  valueOf: (v: ValueRef) => Val,
): Val[] {
  const T = s.steps;
  const nOut = s.outItems.length;
  const seqs = s.seqs.map(valueOf);
  const consts = s.consts.map(valueOf);
  let states = s.inits.map(valueOf);
  const outShapes = s.body.targets.slice(0, nOut).map((t) => t.shape);
  const stacked = [...s.outItems, ...s.stateItems];
  const types = [...s.body.targets.slice(0, nOut), ...s.inits].map(
    (t): TensorType => ({ dtype: t.dtype, shape: t.shape }),
  );
  const stacks = stacked.map((it, i) => (it.keep === 'all' ? new Stack(T, types[i]!) : undefined));
  const outer = r.owned;
  let carried = new Set<DeviceBuffer>();
  let lastOuts: Val[] = [];
  try {
    for (let k = 0; k < T; k++) {
      const t = s.backwards ? T - 1 - k : k;
      r.owned = [];
      const results = runBody([...seqs.map((q) => slice(r, q, t)), ...states, ...consts]);
      const outs = results.slice(0, nOut);
      const news = results.slice(nOut);
      [...outs, ...news].forEach((v, i) => stacks[i]?.put(r, k, v));
      carried = carryOver(r, carried, [...news, ...outs.filter((_, i) => s.outItems[i]!.keep === 'last')]);
      states = news;
      lastOuts = outs;
    }
  } catch (e) {
    for (const buf of [...r.owned, ...carried]) buf.release();
    r.owned = outer;
    throw e;
  }
  r.owned = outer;
  outer.push(...carried);
  const item = (i: number, last: Val, shape: readonly number[], dtype: TensorType['dtype']): Val => {
    const keep = stacked[i]!.keep;
    if (keep === 'none') return hostVal(NDArray.zeros([0, ...shape], dtype));
    if (keep === 'last') return last;
    const { val, buf } = stacks[i]!.result(shape);
    if (buf !== undefined) outer.push(buf);
    return val;
  };
  return [
    ...lastOuts.map((v, o) => item(o, v, outShapes[o]!, v.dtype)),
    ...states,
    ...states.map((v, j) => item(nOut + j, v, s.inits[j]!.shape, v.dtype)),
  ];
}
