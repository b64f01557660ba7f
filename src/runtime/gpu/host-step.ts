// What the GL (program.ts) and WebGPU (webgpu/program.ts) runtimes both do on the host between device kernels.
import type { BufferDecl, Program, Step } from '../../codegen/kernel.js';
import { stepBuffers } from '../../codegen/kernel.js';
import { prepare as prepareCpu } from '../../codegen/pipeline.js';
import { buildModule, type RunFn } from '../../codegen/cpu/module.js';
import { runtimeHelpers } from '../../codegen/cpu/runtime.js';
import type { RowCheck } from '../../codegen/row-checks.js';

/** One step as a cpu program of its own: the buffers it reads are its inputs, those it writes its results. */
export function hostModule(p: Program, s: Step): RunFn {
  const io = stepBuffers(s);
  const buffers: BufferDecl[] = p.buffers.map((b): BufferDecl => {
    const slot = io.reads.indexOf(b.id);
    if (slot >= 0) return { id: b.id, dtype: b.dtype, size: b.size, role: 'input', slot };
    if (io.writes.includes(b.id)) return { id: b.id, dtype: b.dtype, size: b.size, role: 'target' };
    return { id: b.id, dtype: b.dtype, size: b.size, role: 'scratch' };
  });
  const one: Program = { buffers, steps: [s], targets: io.writes.map((w) => ({ buf: w, offset: 0, shape: [p.buffers[w]!.size], dtype: p.buffers[w]!.dtype, copy: false })) };
  return buildModule(prepareCpu(one, { wasm: true })).run;
}

/** The row numbers a kernel will read, checked with the cpu kernels' words (runtimeHelpers.row throws the reference's error). */
export function checkRows(c: RowCheck, data: ArrayLike<number>): void {
  for (let i = c.lo; i <= c.hi; i++) runtimeHelpers.row(data[i]!, c.rows, c.op, c.shape);
}
