// What the GL (program.ts) and WebGPU (webgpu/program.ts) runtimes both do on the host between device kernels.
import type { BufferDecl, ExternStep, Program, Step } from '../../codegen/kernel/ir.js';
import { rethrow } from '../../ir/build.js';
import { formatShape, type NDArray } from '../../ir/ndarray.js';
import type { EvalContext } from '../../ir/op.js';
import { stepBuffers } from '../../codegen/kernel/ir.js';
import { prepare as prepareCpu } from '../../codegen/pipeline.js';
import { buildModule, type RunFn } from '../../codegen/cpu/module.js';
import { runtimeHelpers } from '../../codegen/cpu/runtime.js';
import type { RowCheck } from '../../codegen/kernel/row-checks.js';

/** One step as a cpu program of its own: the buffers it reads are its inputs, those it writes its results. */
export function hostModule(p: Program, s: Step): RunFn {
  const io = stepBuffers(s);
  const buffers: BufferDecl[] = p.buffers.map((b): BufferDecl => {
    const slot = io.reads.indexOf(b.id);
    if (slot >= 0) return { id: b.id, dtype: b.dtype, size: b.size, role: 'input', slot };
    if (io.writes.includes(b.id)) return { id: b.id, dtype: b.dtype, size: b.size, role: 'target' };
    return { id: b.id, dtype: b.dtype, size: b.size, role: 'scratch' };
  });
  const one: Program = {
    buffers,
    steps: [s],
    targets: io.writes.map((w) => ({
      buf: w,
      offset: 0,
      shape: [p.buffers[w]!.size],
      dtype: p.buffers[w]!.dtype,
      copy: false,
    })),
  };
  return buildModule(prepareCpu(one, { wasm: true })).run;
}

/** The row numbers a kernel will read, checked with the cpu kernels' words (runtimeHelpers.row throws the reference's error). */
export function checkRows(c: RowCheck, data: ArrayLike<number>): void {
  for (let i = c.lo; i <= c.hi; i++) runtimeHelpers.row(data[i]!, c.rows, c.op, c.shape);
}

/** Runs extern step `s` by its reference implementation on `ins`; each result, checked against its type, goes flat to `wrote`. */
export function runExternOnHost(
  s: ExternStep,
  ins: NDArray[],
  ctx: EvalContext,
  wrote: (buf: number, v: NDArray) => void,
): void {
  let outs: NDArray[];
  try {
    outs = s.tuple ? s.def.implTuple!(ins, s.attrs, ctx) : [s.def.impl(ins, s.attrs, ctx)];
  } catch (e) {
    throw rethrow(e, s.def.name);
  }
  s.outs.forEach((o, k) => {
    const v = outs[k]!;
    if (v.dtype !== o.dtype || v.shape.length !== o.shape.length || v.shape.some((d, i) => d !== o.shape[i])) {
      throw new Error(
        `internal: op ${s.def.name} produced ${v.dtype} ${formatShape(v.shape)} but its type is ${o.dtype} ${formatShape(o.shape)}`,
      );
    }
    wrote(o.buf, v.reshape([v.size]));
  });
}
