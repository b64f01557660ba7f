// Rendering the kernel IR (src/codegen/kernel.ts) as WGSL compute shaders for the gpu device's
// WebGPU mode. A loop kernel is one invocation per element of its output loops (all its stores
// in one shader, each at its own index), reduction loops inside the invocation, or, where rows
// share reductions (rows.ts), one workgroup per row folding them together in workgroup memory;
// expressions are placed by the same schedule as on the cpu and the gpu.js renderer
// (src/codegen/schedule.ts). Matrix products: matmul.ts. Values are f32; index arithmetic i32
// (WGSL has exact integers). What is not rendered yet is `Unsupported` with its reason; the
// runtime runs that step on the host and reports it.
import { ExprBuilder, REDUCE_INIT, exprOrder, type Expr } from '../expr.js';
import { range } from '../index-expr.js';
import type { LoopKernel } from '../kernel.js';
import { schedule, type Scope } from '../schedule.js';
import { f32Literal, roundAs, storageOf } from './scalar.js';
import { NoElements, Unsupported, WG, Writer, assemble, foldCode, groups1d, kahanStep, loaded, type BufferInfo, type WgslKernel } from './writer.js';
import { renderRows, rowsForm } from './rows.js';

export { NoElements, Unsupported, type BufferInfo, type WgslKernel } from './writer.js';
export { renderMatmul } from './matmul.js';

/** A loop kernel: one invocation per element of its output loops, every store in the one shader. */
export function renderLoop(k: LoopKernel, bufs: BufferInfo): WgslKernel {
  const written = new Set(k.stores.map((st) => st.buf));
  for (const st of k.stores) {
    if (storageOf(st.dtype) === undefined) throw new Unsupported(`stores ${st.dtype}`);
    if (st.accumulate === true || st.dyn !== undefined) throw new Unsupported('scatters into rows chosen by data');
  }
  const reads = loaded(k.stores.map((st) => st.value));
  if (reads.some((b) => written.has(b))) throw new Unsupported('a running value along an axis (elements read the ones stored before them)');
  const total = k.vars.reduce((p, v) => p * v.size, 1);
  if (total === 0) throw new NoElements();
  if (total > 2 ** 31 - 1) throw new Unsupported(`${total} elements (i32 indices)`);
  const b = new ExprBuilder(() => 'float64');
  const s = schedule(k.vars, k.stores, b);
  const indexNodes = new Set<Expr>();
  for (const ix of s.loadIndex.values()) for (const e of exprOrder([ix])) indexNodes.add(e);
  for (const st of s.stores) for (const e of exprOrder([st.index])) indexNodes.add(e);
  const w = new Writer(bufs, (e) => s.loadIndex.get(e), (e) => indexNodes.has(e));
  const binds = [...new Set([...written, ...reads])].sort((p, q) => p - q);
  const rowLoops = rowsForm(k, s);
  if (rowLoops !== undefined) return renderRows(k, s, rowLoops, w, bufs, binds, [...written]);
  const outputVars = new Set(k.vars.map((v) => v.id));
  const lines: string[] = [`let i = i32(gid.x + gid.y * nwg.x * ${WG}u);`, `if (i >= ${total}i) { return; }`];
  // Output coordinates: row-major over the kernel's output loops.
  let stride = total;
  for (const v of k.vars) {
    stride /= v.size;
    lines.push(v.size === 1 ? `let i${v.id} = 0i;` : `let i${v.id} = (i / ${stride}i) % ${v.size}i;`);
  }
  const fold = (r: Expr & { t: 'reduce' }): string => (r.op === 'sum' ? kahanStep(r.id, w.code(r.body, 'f32')) : foldCode(r.op, w.name(r), w.code(r.body, 'f32')));
  const declaredIn = (scope: Scope): Expr[] => scope.items.flatMap((it) => (it.kind === 'loop' ? declaredIn(it.scope) : [it.e]));
  const emit = (scope: Scope, ind: string): void => {
    for (const it of scope.items) {
      if (it.kind === 'loop') {
        if (outputVars.has(it.scope.v!.id)) emit(it.scope, ind);
        else loop(it.scope, ind);
        continue;
      }
      const e = it.e;
      if (e.t === 'reduce') { reduce(e, ind); continue; }
      const l = w.line(e);
      if (l !== undefined) lines.push(ind + l);
    }
    if (scope.reduce !== undefined && s.reduceLoops.get(scope.reduce)!.last === scope) lines.push(ind + fold(scope.reduce as Expr & { t: 'reduce' }));
  };
  const loop = (scope: Scope, ind: string): void => {
    const v = `i${scope.v!.id}`;
    const inside = declaredIn(scope);
    lines.push(`${ind}for (var ${v} = 0i; ${v} < ${scope.v!.size}i; ${v}++) {`);
    emit(scope, `${ind}  `);
    lines.push(`${ind}}`);
    w.forget(inside); // names declared inside the loop are out of scope after it
  };
  const reduce = (r: Expr & { t: 'reduce' }, ind: string): void => {
    lines.push(`${ind}var ${w.name(r)}: f32 = ${f32Literal(REDUCE_INIT[r.op])};${r.op === 'sum' ? ` var c${r.id}: f32 = 0.0;` : ''}`);
    const loops = s.reduceLoops.get(r)!;
    if (loops.first === s.scopeOf.get(r)) lines.push(ind + fold(r));
    else loop(loops.first, ind);
  };
  emit(s.top, '');
  for (const st of s.stores) {
    const ty = storageOf(st.store.dtype)!;
    const v = roundAs(st.store.dtype, w.code(st.value, 'f32'));
    lines.push(`b${st.store.buf}[${w.code(st.index, 'i32')}] = ${ty === 'f32' ? v : `i32(${v})`};`);
  }
  const body = [
    `@compute @workgroup_size(${WG})`,
    'fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {',
    ...lines.map((l) => `  ${l}`),
    '}',
  ];
  return assemble(k.label, body, binds, [...written], bufs, groups1d(total));
}

/** A row index the host checks before a kernel runs (shaders cannot throw). */
export interface RowCheck {
  readonly buf: number;
  readonly lo: number;
  readonly hi: number;
  readonly rows: number;
  readonly op: string;
  readonly shape: string;
}

/** The data-chosen rows a loop kernel reads ('row' expressions over plain loads). */
export function rowChecks(k: LoopKernel): RowCheck[] {
  const out: RowCheck[] = [];
  for (const e of exprOrder(k.stores.map((st) => st.value))) {
    if (e.t !== 'row') continue;
    if (e.x.t !== 'load' || e.x.dyn !== undefined) throw new Unsupported('a row number that is not a plain read');
    const [lo, hi] = range(e.x.index);
    out.push({ buf: e.x.buf, lo, hi, rows: e.rows, op: e.op, shape: e.shape });
  }
  return out;
}
