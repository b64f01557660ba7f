import type { LoopKernel } from '../kernel/ir.js';
import { roundAs, storeAs } from './scalar.js';
import { Writer, writeScopes, assemble, coordCode, groups1d, type BufferInfo, type WgslKernel } from './writer.js';
import { renderRows } from './rows.js';
import { renderSteps } from './steps.js';
import type { LoopPlan } from './strategy.js';

export type { BufferInfo, WgslKernel } from './writer.js';
export { renderMatmul } from './matmul.js';

/** A loop kernel as strategy.ts planned it: one invocation per element of its output loops (or per row: rows.ts), every store in the one shader. */
export function renderLoop(k: LoopKernel, plan: LoopPlan, bufs: BufferInfo): WgslKernel {
  const { sched: s, indexNodes, total } = plan;
  const w = new Writer(
    bufs,
    (e) => s.loadIndex.get(e),
    (e) => indexNodes.has(e),
  );
  const binds = [...plan.binds];
  if (plan.rows !== undefined) return renderRows(k, s, plan.rows, w, bufs, binds, [...plan.written], plan.workgroup);
  if (plan.steps !== undefined) return renderSteps(k, s, indexNodes, plan.steps, bufs, binds, [...plan.written]);
  const outputVars = new Set(k.vars.map((v) => v.id));
  const wg = plan.workgroup;
  const lines: string[] = [`let i = i32(gid.x + gid.y * nwg.x * ${wg}u);`, `if (i >= ${total}i) { return; }`];
  // Output coordinates: row-major over the kernel's output loops.
  const sizes = k.vars.map((v) => v.size);
  k.vars.forEach((v, j) => lines.push(`let i${v.id} = ${coordCode('i', sizes, j)};`));
  writeScopes(w, s, outputVars, lines);
  for (const st of s.stores) {
    const v = roundAs(st.store.dtype, w.code(st.value, 'f32'));
    lines.push(`b${st.store.buf}[${w.code(st.index, 'i32')}] = ${storeAs(bufs.storage(st.store.buf)!, v)};`);
  }
  const body = [
    `@compute @workgroup_size(${wg})`,
    'fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {',
    ...lines.map((l) => `  ${l}`),
    '}',
  ];
  return assemble(k.label, body, binds, [...plan.written], bufs, groups1d(total, wg));
}
