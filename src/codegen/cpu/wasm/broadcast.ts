// The WebAssembly SIMD tier for elementwise loops over broadcast operands: a kernel of loops
// [a,] u, v whose result is written row-major (row R = a*U + u, V elements each) and whose loads are
// each one of
// - 'full': the result's own layout, R*V + v (+ offset);
// - 'vec': a row read by every u, a*V + v (or v alone: one row for every a);
// - 'col': one element per row broadcast along it, a*U + u (+ offset).
// Per-example gradients of products are the usual case: out[a, u, v] = x[a, u] * d[a, v] (an outer
// product per example, vmap's batching of dot over one element), whose JavaScript loop costs about
// a nanosecond an element where this tier's f32x4 loop runs at the speed of the copies. XNNPACK's
// vmulc (a vector times a scalar broadcast) is the anchor; here the loop is the whole fused kernel.
// Only the float32 form (f32Exact) without approximated functions: every element is the
// reference's, bit for bit. Chunks of whole rows are copied into the tier's private memory
// (elementwise.ts) as one contiguous slice per operand, computed row by row (a 'col' operand
// splatted once per row, a row's last vector taken at V - 4 so rows of any length from 4 need no
// scalar tail: the overlap recomputes equal values), and the results copied out in one slice.
import type { IExpr, Var } from '../../kernel/index-expr.js';
import { type Expr, exprOrder } from '../../kernel/expr.js';
import type { LoopKernel } from '../../kernel/ir.js';
import type { DType } from '../../../ir/dtype.js';
import { Body, I32, V128, VOID, memarg, moduleBytes, op, simd } from './encode.js';
import { Consts, S } from './approx.js';
import {
  CHUNK,
  F32_MIN_ELEMENTS,
  LOADED,
  consts32Of,
  ewKernelId,
  f32Exact,
  nodeKind,
  renderNode,
  tierOn,
} from './elementwise.js';

/** How a load reads its operand (see the file's comment); `perA`: a 'vec' row that changes with a. */
export interface BcLoad {
  readonly buf: number;
  readonly off: number;
  readonly kind: 'full' | 'vec' | 'col';
  readonly perA: boolean;
}

export interface BcPlan {
  readonly loops: 2 | 3;
  /** Sizes of the loops: A is 1 for a kernel of two. */
  readonly A: number;
  readonly U: number;
  readonly V: number;
  /** Rows per chunk. */
  readonly per: number;
  /** Floats of each region of the tier's memory (the loads', then the stores'). */
  readonly region: number;
  readonly loads: readonly BcLoad[];
  /** Stores, all in the result's layout at these buffers and offsets. */
  readonly stores: readonly { readonly buf: number; readonly off: number }[];
  readonly bytes: Uint8Array;
  readonly label: string;
}

/** The coefficient of each loop variable in `x` (x.c aside), or undefined where x has another atom. */
function coefficients(x: IExpr, vars: readonly Var[]): number[] | undefined {
  const k = vars.map(() => 0);
  for (const [a, c] of x.terms) {
    const i = a.kind === 'var' ? vars.findIndex((v) => v.id === a.v.id) : -1;
    if (i < 0) return undefined;
    k[i] = k[i]! + c;
  }
  return k;
}

/** A load's form, or undefined where it is none of the three. */
function classify(x: IExpr, vars: readonly Var[], U: number, V: number): Omit<BcLoad, 'buf'> | undefined {
  const k = coefficients(x, vars);
  if (k === undefined) return undefined;
  const [ka, ku, kv] = vars.length === 3 ? k : [0, k[0]!, k[1]!];
  const hasA = vars.length === 3;
  if (ku === V && kv === 1 && (!hasA || ka === U * V)) return { off: x.c, kind: 'full', perA: true };
  if (ku === 0 && kv === 1 && (ka === V || ka === 0)) return { off: x.c, kind: 'vec', perA: hasA && ka === V };
  if (ku === 1 && kv === 0 && (!hasA || ka === U)) return { off: x.c, kind: 'col', perA: true };
  return undefined;
}

/**
 * The tier's plan for a loop kernel, or undefined where it does not apply: two or three loops,
 * rows of 4 to CHUNK / 2 elements, at least F32_MIN_ELEMENTS elements, float32 stores in the
 * result's layout, loads of the three forms (at least one broadcast: without, elementwise.ts's
 * tier takes the kernel) and only plain or select and comparison nodes of the float32 form.
 */
export function planBroadcast(k: LoopKernel, bufDType: (buf: number) => DType): BcPlan | undefined {
  if (!tierOn() || k.vars.length < 2 || k.vars.length > 3) return undefined;
  const V = k.vars[k.vars.length - 1]!.size;
  const U = k.vars[k.vars.length - 2]!.size;
  const A = k.vars.length === 3 ? k.vars[0]!.size : 1;
  if (V < 4 || V > CHUNK / 2 || A * U * V < F32_MIN_ELEMENTS) return undefined;
  const order = exprOrder(k.stores.map((s) => s.value));
  const loads: BcLoad[] = [];
  for (const e of order) {
    if (e.t === 'const') continue;
    if (e.t === 'load') {
      const f = classify(e.index, k.vars, U, V);
      if (f === undefined || !LOADED.has(bufDType(e.buf))) return undefined;
      if (loadOf(loads, e.buf, f) < 0) loads.push({ buf: e.buf, ...f });
    } else {
      const kind = nodeKind(e);
      if (kind === undefined || kind === 'approx') return undefined;
    }
  }
  if (!loads.some((l) => l.kind !== 'full')) return undefined;
  const stores: { buf: number; off: number }[] = [];
  for (const s of k.stores) {
    if (s.accumulate === true || s.dyn !== undefined || s.dtype !== 'float32' || bufDType(s.buf) !== 'float32')
      return undefined;
    const f = classify(s.index, k.vars, U, V);
    if (f?.kind !== 'full') return undefined;
    stores.push({ buf: s.buf, off: f.off });
  }
  // A stored buffer read only where it is written (each chunk is copied in before it is copied out).
  if (loads.some((l) => stores.some((s) => s.buf === l.buf && (l.kind !== 'full' || l.off !== s.off))))
    return undefined;
  if (
    loads.length + stores.length > REGIONS ||
    !f32Exact(
      order,
      k.stores.map((s) => s.value),
    )
  )
    return undefined;
  // regions as large as the memory holds, up to REGION_MAX chunks: fewer chunks, each a few copies and a call
  const region = CHUNK * Math.min(REGION_MAX, Math.floor(REGIONS / (loads.length + stores.length)));
  // rows per chunk: its rows, and the 'vec' rows of the a's they span, each fit in a region
  let per = Math.floor(region / V);
  if (loads.some((l) => l.kind === 'vec' && l.perA)) while ((Math.ceil(per / U) + 1) * V > region) per--;
  const bytes = moduleBytes([{ name: 'run', params: 2, body: rowsBody(k, loads, order, U, V, region) }], true);
  return { loops: k.vars.length === 3 ? 3 : 2, A, U, V, per, region, loads, stores, bytes, label: k.label };
}

/** Regions of CHUNK floats the tier's private memory (512 KiB, elementwise.ts) holds. */
const REGIONS = (512 * 1024) / (CHUNK * 4);
/** The most chunks of floats a region takes (a chunk of rows copied in and out stays in the core's L2). */
const REGION_MAX = 8;
/** Vectors per step of a row's loop while they fit in it. */
const UNROLL = 4;

function loadOf(loads: readonly BcLoad[], buf: number, f: Omit<BcLoad, 'buf'>): number {
  return loads.findIndex((l) => l.buf === buf && l.off === f.off && l.kind === f.kind && l.perA === f.perA);
}

/**
 * run(rows, phase): `rows` rows of the chunk, the first at u = phase of its a (the 'vec' rows
 * region starts at that a). Region j of the memory at j * size floats: the loads, then the stores.
 */
function rowsBody(
  k: LoopKernel,
  loads: readonly BcLoad[],
  order: readonly Expr[],
  U: number,
  V: number,
  size: number,
): Body {
  const nodes = order.filter((e) => e.t !== 'const');
  const consts = consts32Of(order);
  // params ROWS, PHASE; i32 locals FULL (byte offset of the row), COL (of its 'col' element), VEC (of its 'vec' row), C (of the vector in the row)
  const [ROWS, PHASE, FULL, COL, VEC, C] = [0, 1, 2, 3, 4, 5];
  const base = 6;
  const b = new Body(2, [
    [4, I32],
    [nodes.length + 6 + consts.size, V128],
  ]);
  const c32 = new Consts(b, base + nodes.length + 6, true);
  for (const x of consts) c32.get(x).ops(op.drop);
  const local = new Map<Expr, number>(nodes.map((e, i) => [e, base + i]));
  const region = (e: Expr & { t: 'load' }) => {
    const j = loadOf(loads, e.buf, classify(e.index, k.vars, U, V)!);
    return { j, l: loads[j]! };
  };
  const last = (V - 4) * 4;
  b.ops(op.block, VOID).get(ROWS).ops(op.i32Eqz, op.brIf, 0);
  b.ops(op.loop, VOID);
  for (const e of nodes) {
    if (e.t !== 'load') continue;
    const { j, l } = region(e);
    if (l.kind === 'col')
      b.get(COL)
        .v(simd.v128Load32Splat, ...memarg(2, j * size * 4))
        .set(local.get(e)!);
  }
  // the vector at byte C + at of the row: its loads, nodes and stores
  const vector = (at: number) => {
    for (const e of nodes) {
      if (e.t === 'load') {
        const { j, l } = region(e);
        if (l.kind === 'col') continue;
        b.get(l.kind === 'full' ? FULL : VEC)
          .get(C)
          .ops(op.i32Add)
          .v(S.load, ...memarg(0, j * size * 4 + at));
      } else
        renderNode(
          b,
          c32,
          e,
          (x) => (x.t === 'const' ? c32.get(x.v) : b.get(local.get(x)!)),
          (x) => local.get(x)!,
          base + nodes.length,
          c32,
        );
      b.set(local.get(e)!);
    }
    k.stores.forEach((s, j) => {
      b.get(FULL).get(C).ops(op.i32Add);
      if (s.value.t === 'const') c32.get(s.value.v);
      else b.get(local.get(s.value)!);
      b.v(S.store, ...memarg(0, (loads.length + j) * size * 4 + at));
    });
  };
  b.i32(0).set(C);
  // UNROLL vectors a step while they are all in the row
  if (V >= 4 * UNROLL) {
    const lastFull = last - 16 * (UNROLL - 1);
    b.ops(op.block, VOID, op.loop, VOID);
    b.i32(lastFull).get(C).ops(op.i32LtU, op.brIf, 1);
    for (let s = 0; s < UNROLL; s++) vector(16 * s);
    b.addTo(C, 16 * UNROLL).ops(op.br, 0, op.end, op.end);
  }
  // then, where elements are left, one a step from at most V - 4 (the row's last vector): stop after it, else step on, at most to it
  b.ops(op.block, VOID)
    .i32(last + 15)
    .get(C)
    .ops(op.i32LtU, op.brIf, 0);
  b.i32(last).get(C).ops(op.i32LtU, op.if, VOID).i32(last).set(C).ops(op.end);
  b.ops(op.block, VOID, op.loop, VOID);
  vector(0);
  b.get(C).i32(last).ops(op.i32Eq, op.brIf, 1);
  b.addTo(C, 16);
  b.i32(last).get(C).ops(op.i32LtU, op.if, VOID).i32(last).set(C).ops(op.end);
  b.ops(op.br, 0, op.end, op.end, op.end);
  // the next row
  b.addTo(FULL, V * 4)
    .addTo(COL, 4)
    .addTo(PHASE, 1);
  b.get(PHASE)
    .i32(U)
    .ops(op.i32Eq, op.if, VOID)
    .i32(0)
    .set(PHASE)
    .addTo(VEC, V * 4)
    .ops(op.end);
  b.get(ROWS).i32(1).ops(op.i32Sub).tee(ROWS).ops(op.brIf, 0);
  b.ops(op.end, op.end);
  return b;
}

/** The JavaScript side: chunks of `per` rows of the kernel's rows [lo * U, hi * U) (three loops; [lo, hi) for two). */
export function renderBroadcast(
  p: BcPlan,
  bufName: (id: number) => string,
): { source: string; buffers: number[]; rows: number } {
  const id = ewKernelId(p.bytes, false, p.loads.length + p.stores.length);
  const buffers = [...new Set([...p.loads.map((l) => l.buf), ...p.stores.map((s) => s.buf)])].sort((a, c) => a - c);
  const three = p.loops === 3;
  const U = three ? p.U : 1;
  const { V } = p;
  const at = (x: string, off: number) => (off === 0 ? x : `${x} + ${off}`);
  const copyIn = p.loads.map((l, j) => {
    const [from, to] =
      l.kind === 'full'
        ? [`r0 * ${V}`, `r1 * ${V}`]
        : l.kind === 'col'
          ? ['r0', 'r1']
          : l.perA
            ? [`a0 * ${V}`, `a1 * ${V}`]
            : ['0', String(V)];
    return `    m.set(${bufName(l.buf)}.subarray(${at(from, l.off)}, ${at(to, l.off)}), ${j * p.region});`;
  });
  const copyOut = p.stores.map((s, j) => {
    const o = (p.loads.length + j) * p.region;
    return `    ${bufName(s.buf)}.set(m.subarray(${o}, ${o} + (r1 - r0) * ${V}), ${at(`r0 * ${V}`, s.off)});`;
  });
  const lines = [
    `  const w = rt.ew(${id});`,
    '  const m = w.mem;',
    `  for (let r0 = lo * ${U}, end = hi * ${U}; r0 < end; r0 += ${p.per}) {`,
    `    const r1 = end < r0 + ${p.per} ? end : r0 + ${p.per};`,
    `    const a0 = Math.floor(r0 / ${p.U}), a1 = Math.floor((r1 - 1) / ${p.U}) + 1;`,
    ...copyIn,
    `    w.run(r1 - r0, r0 - a0 * ${p.U});`,
    ...copyOut,
    '  }',
  ];
  const source = `function k(${[...buffers.map(bufName), 'lo', 'hi'].join(', ')}) { // WebAssembly SIMD f32x4, rows of ${V} over broadcasts: ${p.label.replace(/[^\w,. -]/g, '')}\n${lines.join('\n')}\n}`;
  return { source, buffers, rows: three ? p.A : p.U };
}
