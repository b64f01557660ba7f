// Loop kernels whose rows share reductions (a row sum, softmax's max and sum, a mean over
// everything) as one workgroup per row: the workgroup's invocations fold strided parts of each
// reduction, combine them as a tree in workgroup memory, and then compute the row's elements
// between them. The per-invocation form (render.ts) would instead fold the whole reduction once
// per element of the row, or use one invocation for a long one. tfjs-backend-webgpu's reduce
// program (a workgroup per output, a tree in shared memory) is the anchor.
import { FOLD_ROWS, REDUCE_INIT, type Expr, type ReduceOp } from '../kernel/expr.js';
import type { LoopKernel } from '../kernel/ir.js';
import type { Schedule, Scope, ScopeItem } from '../transform/schedule.js';
import { WGSL_OPS, f32Literal, roundAs, storeAs } from './scalar.js';
import {
  MAX_GROUPS,
  assemble,
  coordCode,
  foldCode,
  kahanStep,
  type BufferInfo,
  type WgslKernel,
  type Writer,
} from './writer.js';

/** Invocations per row where a row's reductions are folded by a workgroup. */
export const ROW_WG = 64;
/** Rows per workgroup where each invocation folds its own row (an adapter that runs invocations as SIMD lanes on CPU threads). */
export const ROW_LANES = 8;
/** Rows from which such an adapter gives each invocation a row: enough workgroups of ROW_LANES rows for its threads. */
const LANE_ROWS_FROM = 64;
/** Terms per lane from which a lane's sum is compensated (Kahan). */
const KAHAN_FROM = 256;

/** The tree's combination of two partial folds. */
function combine(op: ReduceOp, a: string, b: string): string {
  return WGSL_OPS[FOLD_ROWS.get(op)!.spelling.combine]!([a, b]);
}

type Reduce = Expr & { t: 'reduce' };

/** The scopes of a reduction's loops, outermost first (undefined where another reduction nests in them). */
function chain(s: Schedule, r: Reduce): Scope[] | undefined {
  const { first, last } = s.reduceLoops.get(r)!;
  const out: Scope[] = [];
  for (let sc: Scope | undefined = first; sc !== undefined; ) {
    out.push(sc);
    if (sc === last) return out;
    if (sc.items.some((it) => it.kind === 'expr' && it.e.t === 'reduce')) return undefined;
    const next: ScopeItem | undefined = sc.items.find((it) => it.kind === 'loop');
    sc = next?.kind === 'loop' ? next.scope : undefined;
  }
  return undefined;
}

/**
 * The number of output loops that make a row (the rest are the row's elements), where the rows
 * form pays and applies: every reduction at an output scope, over loops of its own, with nothing
 * nested; it pays where an element would fold a row's reductions again, or a reduction is long
 * for one invocation.
 */
export function rowsForm(k: LoopKernel, s: Schedule): number | undefined {
  const reduces = [...s.reduceLoops.keys()] as Reduce[];
  if (reduces.length === 0) return undefined;
  let d = 0;
  let longest = 0;
  for (const r of reduces) {
    const at = s.scopeOf.get(r)!;
    if (at.reduce !== undefined || r.vars.length === 0 || chain(s, r) === undefined) return undefined;
    d = Math.max(d, at.depth);
    longest = Math.max(
      longest,
      r.vars.reduce((p, v) => p * v.size, 1),
    );
  }
  const rows = k.vars.slice(0, d).reduce((p, v) => p * v.size, 1);
  const inner = k.vars.slice(d).reduce((p, v) => p * v.size, 1);
  if (rows > MAX_GROUPS * MAX_GROUPS) return undefined;
  return (inner > 1 && longest > 1) || longest >= 256 || (rows < 4096 && longest >= 32) ? d : undefined;
}

/**
 * Invocations per row of a kernel in the rows form: ROW_WG folding together in workgroup memory,
 * or, on an adapter that runs a workgroup's invocations as SIMD lanes on one CPU thread (lavapipe,
 * SwiftShader: `simdLanes`) and rows enough to keep its threads busy, 1, with no barriers. Such an
 * adapter switches between the lanes' coroutines at every barrier: on lavapipe a workgroup's tree
 * over a row of 1024 costs ten times the row's loads (bench/README.md).
 */
export function rowLanes(k: LoopKernel, d: number, simdLanes: boolean): number {
  const rows = k.vars.slice(0, d).reduce((p, v) => p * v.size, 1);
  return simdLanes && rows >= LANE_ROWS_FROM ? 1 : ROW_WG;
}

/**
 * A loop kernel in the rows form: `d` output loops make a row (rowsForm), `lanes` invocations per
 * row: a power of two folding together in workgroup memory (Kahan's compensation from ROW_WG *
 * KAHAN_FROM elements whatever the lanes), or 1 (rowLanes: ROW_LANES rows a workgroup, each
 * invocation folding its own, compensated from KAHAN_FROM elements).
 */
export function renderRows(
  k: LoopKernel,
  s: Schedule,
  d: number,
  w: Writer,
  bufs: BufferInfo,
  binds: number[],
  written: number[],
  lanes = ROW_WG,
): WgslKernel {
  const rowVars = k.vars.slice(0, d),
    innerVars = k.vars.slice(d);
  const rows = rowVars.reduce((p, v) => p * v.size, 1);
  const inner = innerVars.reduce((p, v) => p * v.size, 1);
  const tree = lanes > 1;
  const lines: string[] = tree
    ? ['let row = i32(wg.x + wg.y * nwg.x);', `if (row >= ${rows}i) { return; }`, 'let lane = i32(lid);']
    : [`let row = i32(gid.x + gid.y * nwg.x * ${ROW_LANES}u);`, `if (row >= ${rows}i) { return; }`];
  const from = tree ? 'lane' : '0i';
  const coords = (vars: typeof k.vars, flat: string, ind: string): void => {
    const sizes = vars.map((v) => v.size);
    vars.forEach((v, j) => lines.push(`${ind}let i${v.id} = ${coordCode(flat, sizes, j)};`));
  };
  coords(rowVars, 'row', '');
  const exprs = (scope: Scope, ind: string): void => {
    for (const it of scope.items) {
      if (it.kind !== 'expr') continue;
      if (it.e.t === 'reduce') reduce(it.e, ind);
      else {
        const l = w.line(it.e);
        if (l !== undefined) lines.push(ind + l);
      }
    }
  };
  const reduce = (r: Reduce, ind: string): void => {
    const scopes = chain(s, r)!;
    const n = r.vars.reduce((p, v) => p * v.size, 1);
    const a = w.name(r);
    // Each lane's part is compensated where it is long; the tree adds log2(lanes) roundings.
    const kahan = r.op === 'sum' && n > (tree ? ROW_WG : 1) * KAHAN_FROM;
    lines.push(`${ind}var ${a}: f32 = ${f32Literal(REDUCE_INIT[r.op])};${kahan ? ` var c${r.id}: f32 = 0.0;` : ''}`);
    lines.push(`${ind}for (var q = ${from}; q < ${n}i; q += ${lanes}i) {`);
    coords(r.vars, 'q', `${ind}  `);
    const inside: Expr[] = [];
    for (const sc of scopes) {
      for (const it of sc.items) if (it.kind === 'expr') inside.push(it.e);
      exprs(sc, `${ind}  `);
    }
    lines.push(`${ind}  ${kahan ? kahanStep(r.id, w.code(r.body, 'f32')) : foldCode(r.op, a, w.code(r.body, 'f32'))}`);
    lines.push(`${ind}}`);
    w.forget(inside);
    if (!tree) return;
    lines.push(`${ind}red[lane] = ${a};`, `${ind}workgroupBarrier();`);
    lines.push(`${ind}for (var h = ${lanes / 2}i; h > 0i; h = h / 2i) {`);
    lines.push(`${ind}  if (lane < h) { red[lane] = ${combine(r.op, 'red[lane]', 'red[lane + h]')}; }`);
    lines.push(`${ind}  workgroupBarrier();`, `${ind}}`);
    lines.push(`${ind}${a} = red[0];`, `${ind}workgroupBarrier();`);
  };
  // The row's scopes (output loops 0..d-1), then its elements (the rest), strided over the lanes.
  let sc: Scope = s.top;
  for (;;) {
    exprs(sc, '');
    const next = sc.items.find((it) => it.kind === 'loop');
    if (next?.kind !== 'loop' || next.scope.reduce !== undefined || next.scope.depth > d) break;
    sc = next.scope;
  }
  lines.push(`for (var e = ${from}; e < ${inner}i; e += ${lanes}i) {`);
  coords(innerVars, 'e', '  ');
  for (
    let next: ScopeItem | undefined = sc.items.find((it) => it.kind === 'loop');
    next?.kind === 'loop' && next.scope.reduce === undefined;
    next = next.scope.items.find((it) => it.kind === 'loop')
  ) {
    exprs(next.scope, '  ');
  }
  for (const st of s.stores) {
    const v = roundAs(st.store.dtype, w.code(st.value, 'f32'));
    lines.push(`  b${st.store.buf}[${w.code(st.index, 'i32')}] = ${storeAs(bufs.storage(st.store.buf)!, v)};`);
  }
  lines.push('}');
  const body = tree
    ? [
        `var<workgroup> red: array<f32, ${lanes}>;`,
        `@compute @workgroup_size(${lanes})`,
        'fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {',
      ]
    : [
        `@compute @workgroup_size(${ROW_LANES})`,
        'fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {',
      ];
  body.push(...lines.map((l) => `  ${l}`), '}');
  const n = tree ? rows : Math.ceil(rows / ROW_LANES);
  const groups: [number, number, number] = n <= MAX_GROUPS ? [n, 1, 1] : [MAX_GROUPS, Math.ceil(n / MAX_GROUPS), 1];
  return assemble(k.label, body, binds, written, bufs, groups);
}
