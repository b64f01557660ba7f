// The WebAssembly SIMD tier for reductions, rendered from the kernel IR: a loop kernel whose
// values fold a body over a reduction loop (sum, prod, max, min) becomes a small WebAssembly
// module, its nodes rendered as the elementwise tier renders them (./elementwise.ts renderNode:
// f64x2, float64 as the JavaScript kernel computes, rounded to float32 where the reference
// rounds). Two forms, after collapse.ts:
//
// - Rows: the reduction runs along the rows' contiguous axis (a sum over the last axis, a
//   softmax's row max and row sum, a mean over features). Output loops [u] (one value per row) or
//   [u, v] (a row of elements computed from the row's reductions: softmax's exp(x - max) and its
//   division by the sum). Each row's reduction folds its element pairs into four f64x2
//   accumulators (element 2i + l of the row into lane l of accumulator i mod 4), combined as
//   ((a0 . a1) . (a2 . a3)), then lane 0 . lane 1: a fixed order that depends only on the row
//   length, so the result is the same whatever rows a call or a thread takes (a max or min of
//   float32 values folds four per f32x4 instruction instead: the same value). max and min are
//   bit-identical to the reference (any order gives the same maximum, NaN and signed zeros
//   included: f64x2.max is IEEE maximum, as Math.max); sum and prod are float64 sums in another
//   order, within the bound of docs/architecture.md ("Reduction precision").
// - Columns: the reduction runs across rows (a sum over the batch axis, a bias gradient): output
//   loop [v] contiguous, the body read at (r, v). Vectorised across v: one float64 accumulator
//   per column in the tier's memory, each row added in order r = 0, 1, ..., so every column is
//   folded in the reference's own order, bit-identical to it. Output loops [a, v] (a sum over
//   the middle axis of [A, R, C]): the same for each outer index a.
//
// - Vector: folds over a whole vector (no output loop): fixed chunks of CHUNK terms, each folded
//   as a row into a float64 partial, the partials folded in chunk order by the wrapper.
//
// As in the elementwise tier, the JavaScript wrapper copies whole rows of each input into the
// tier's memory (chunks of at most CHUNK floats, region by region), calls the module and copies
// the results out. TensorFlow.js' WebAssembly backend reduces along the inner axis only (it
// transposes first for other axes); XLA's column reductions vectorised across the kept axis are
// the anchor for the second form.
import { IExpr, type Var } from '../index-expr.js';
import type { Expr, ReduceOp } from '../expr.js';
import { exprOrder, REDUCE_INIT } from '../expr.js';
import type { LoopKernel } from '../kernel.js';
import { literal } from '../cpu/js.js';
import type { DType } from '../../ir/dtype.js';
import { Body, I32, V128, WA, memarg, moduleBytes, op, type WasmMemory, type WasmModule } from './encode.js';
import { CHUNK, Consts, LOADED, MIN_ELEMENTS, S, constsOf, ewKernel, f32Exact, ewKernelId, nodeKind, renderNode, rowAccess, runBlocks, sharedMem, sharedTier, tierOn } from './elementwise.js';

/** Floats per region of the tier's memory: a chunk and a little slack (a pair read or written past a row's end). */
const REG = CHUNK + 16;
const REGB = REG * 4;
const PAGES = 8;
const MAX_REGIONS = Math.floor((PAGES * 65536) / REGB);
/** Column reductions take at most this many columns at a time (their float64 accumulators fill a region). */
export const COL_BLOCK = 2048;
let F32_ELEMENTS = true;
/** Whether rows of elements may run in f32x4 lanes (the elementwise tier's float32 form); tests compare both. */
export function setReduceF32Elements(on: boolean): void {
  F32_ELEMENTS = on;
}
/** Accumulators of a row reduction (independent chains of f64x2 folds). */
const STREAMS = 4;

const FOLD: Partial<Record<ReduceOp, number>> = { sum: S.add, prod: S.mul, max: S.max, min: S.min };
const extra = { load: 0x00, store: 0x0b, load64Zero: 0x5d, store32Lane: 0x5a, shuffle: 0x0d } as const;
/** i8x16.shuffle's lanes that swap the two f64 lanes. */
const SWAP = [8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7];
/** i8x16.shuffle's lanes that swap neighbouring f32 lanes (0 with 1, 2 with 3). */
const SWAP32 = [4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11];
const F32_MAX = 0xe9, F32_MIN = 0xe8, PROMOTE_LOW = 0x5f, LOAD32_SPLAT = 0x09, LOAD64_SPLAT = 0x0a;
/** A v128 constant of four float32 lanes. */
const f32x4 = (x: number): number[] => Array.from(new Uint8Array(new Float32Array([x, x, x, x]).buffer));
/** A v128 mask of lane 1 (float64). */
const LANE1 = [0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255];

/** A region of the tier's memory: row r's element j of it is element `off + r * row + j` of buffer `buf`; row -1: one value per row, element `off + r`. */
export interface RedRegion {
  readonly buf: number;
  readonly off: number;
  readonly row: number;
  /** columns with an outer loop: its stride (element a * outer + ...). */
  readonly outer?: number;
}

export interface RedPlan {
  /** vector: folds over a whole vector (rows: its length; cols: the last chunk's, 0 if none). */
  readonly form: 'rows' | 'columns' | 'vector';
  /** columns: the size of an outer output loop (the columns of each of its indices), if any. */
  readonly outer?: number;
  /** vector: each fold's op (the wrapper folds the chunks' partials). */
  readonly ops?: readonly ReduceOp[];
  /** rows: the number of rows; columns: the rows summed (the reduction's length). */
  readonly rows: number;
  /** rows: the row length (the reduction's, and the element loop's); columns: the number of columns. */
  readonly cols: number;
  /** rows: whether each row stores a row of elements (output loops [u, v]) or one value ([u]). */
  readonly elements: boolean;
  readonly loads: readonly RedRegion[];
  readonly stores: readonly RedRegion[];
  /** columns: the accumulator regions (one per reduction), after the loads and stores. */
  readonly accs: number;
  readonly bytes: Uint8Array;
  /** rows: compiled over the shared memory, long calls split over the worker threads (rows of blocks). */
  readonly shared: boolean;
  readonly label: string;
}

/**
 * Row kernels with an approximated function (exp, tanh...: compute-bound) of at least this many
 * elements are compiled over the shared memory and their rows split over the threads. Plain
 * folds are bound by the calling thread's copies in and out, which the split does not shorten.
 */
export const PARALLEL_MIN_ELEMENTS = 1 << 20;
/** Chunk blocks per parallel pass (at most 64 regions' worth of each: a few MiB of the shared memory). */
const PASS_BLOCKS = 64;

type Reduce = Expr & { t: 'reduce' };
/** Where a node is computed: once per row (or column block's end), per element pair of a reduction's body, per element pair of the rows. */
type Scope = 'row' | Reduce | 'elem';

/**
 * The tier's plan for a loop kernel with reductions, or undefined (then it is rendered as
 * JavaScript): float32 results of sum, prod, max or min folds over one loop, loads (LOADED) at
 * unit stride along the reduction (rows) or along the output (columns), at least MIN_ELEMENTS
 * elements read, and only the ops of the elementwise tier, an approximated function only where its
 * value is rounded to float32 at once.
 */
export function planReduce(k: LoopKernel, bufDType: (buf: number) => DType): RedPlan | undefined {
  if (!tierOn() || k.vars.length > 2) return undefined;
  const roots = k.stores.map((s) => s.value);
  const order = exprOrder(roots);
  const reduces = order.filter((e): e is Reduce => e.t === 'reduce');
  if (reduces.some((r) => r.vars.length !== 1 || FOLD[r.op] === undefined)) return undefined;
  for (const s of k.stores) if (s.accumulate === true || s.dyn !== undefined || s.dtype !== 'float32' || bufDType(s.buf) !== 'float32') return undefined;
  if (order.some((e) => e.t === 'load' && !LOADED.has(bufDType(e.buf)))) return undefined;
  // The approximations are within 1 ulp only once rounded to float32.
  const rounded = new Set<Expr>([...roots, ...order.flatMap((e) => (e.t === 'cast' && e.dtype === 'float32' ? [e.x] : []))]);
  for (const e of order) {
    if (e.t === 'const' || e.t === 'load' || e.t === 'reduce') continue;
    const kind = nodeKind(e);
    if (kind === undefined || (kind === 'approx' && !rounded.has(e))) return undefined;
  }
  if (reduces.length === 0) {
    // no fold: rows of elements computed from values read once per row (the elementwise tier
    // reads none), where the tier pays as it does for elementwise loops (an approximation, a branch)
    if (k.vars.length !== 2 || !order.some((e) => e.t === 'load' && rowAccess(e.index, k.vars[0]!, undefined) !== undefined)) return undefined;
    if (!order.some((e) => e.t !== 'const' && e.t !== 'load' && nodeKind(e) !== 'plain')) return undefined;
    return planRows(k, order, reduces, roots);
  }
  if (k.vars.length === 0) return planVector(k, order, reduces);
  const first = reduces[0]!.body;
  const rv = reduces[0]!.vars[0]!;
  const probe = order.find((e) => e.t === 'load' && exprOrder([first]).includes(e));
  if (probe === undefined || probe.t !== 'load') return undefined;
  if (k.vars.length === 1 && rowAccess(probe.index, k.vars[0]!, rv) !== undefined && rowAccess(probe.index, k.vars[0]!, rv)!.row > 0) {
    return planColumns(k, order, reduces, roots);
  }
  const outer = k.vars[0]!;
  if (k.vars.length === 2 && rowAccess(stripVar(probe.index, outer), k.vars[1]!, rv) !== undefined && rowAccess(stripVar(probe.index, outer), k.vars[1]!, rv)!.row > 0) {
    // columns of each outer index (a sum over the middle axis of [A, R, C])
    return planColumns(k, order, reduces, roots, outer);
  }
  return planRows(k, order, reduces, roots);
}

function planRows(k: LoopKernel, order: readonly Expr[], reduces: readonly Reduce[], roots: readonly Expr[]): RedPlan | undefined {
  const u = k.vars[0]!;
  const v = k.vars[1];
  const L = reduces[0]?.vars[0]!.size ?? v!.size;
  if (L > CHUNK || L < 2 || reduces.some((r) => r.vars[0]!.size !== L) || (v !== undefined && v.size !== L)) return undefined;
  if (u.size * L < MIN_ELEMENTS) return undefined;
  const loads: RedRegion[] = [];
  const scope = new Map<Expr, Scope>();
  const byVar = new Map<number, Reduce>();
  for (const r of reduces) byVar.set(r.vars[0]!.id, r);
  for (const e of order) {
    let sc: Scope;
    if (e.t === 'const') sc = 'row';
    else if (e.t === 'load') {
      const elem = v !== undefined ? rowAccess(e.index, v, u) : undefined;
      const perRow = rowAccess(e.index, u, undefined);
      let acc = elem;
      if (elem !== undefined) sc = 'elem';
      else if (perRow !== undefined) {
        // one value per row (row stride -1 marks the region: the chunk's rows' values in a row)
        sc = 'row';
        acc = { off: perRow.off, row: -1 };
      } else {
        const r = reduces.find((x) => rowAccess(e.index, x.vars[0]!, u) !== undefined);
        if (r === undefined) return undefined;
        acc = rowAccess(e.index, r.vars[0]!, u)!;
        // reductions over one loop variable share their body's loads
        sc = byVar.get(r.vars[0]!.id)!;
      }
      if (acc!.row > 0 && acc!.row < L) return undefined;
      if (findRegion(loads, e.buf, acc!) < 0) loads.push({ buf: e.buf, ...acc! });
    } else if (e.t === 'reduce') {
      const b = scope.get(e.body);
      if (b === undefined || typeof b === 'string' || b.vars[0]!.id !== e.vars[0]!.id) return undefined;
      sc = 'row';
    } else {
      const kids = e.t === 'cast' ? [e.x] : e.t === 'op' || e.t === 'call' ? e.args : [];
      const inner = new Set(kids.map((x) => scope.get(x)!).filter((x) => x !== 'row'));
      if (inner.size > 1) return undefined;
      sc = inner.size === 1 ? [...inner][0]! : 'row';
      if (typeof sc !== 'string') sc = byVar.get(sc.vars[0]!.id)!;
    }
    scope.set(e, sc);
  }
  const stores: RedRegion[] = [];
  for (const s of k.stores) {
    if (v !== undefined) {
      const acc = rowAccess(s.index, v, u);
      if (acc === undefined || acc.row < L || scope.get(s.value) === undefined) return undefined;
      stores.push({ buf: s.buf, ...acc });
    } else {
      const acc = rowAccess(s.index, u, undefined);
      if (acc === undefined || scope.get(s.value) !== 'row') return undefined;
      stores.push({ buf: s.buf, off: acc.off, row: 1 });
    }
  }
  if (roots.some((e) => typeof scope.get(e) === 'object')) return undefined;
  if (loads.length + stores.length > MAX_REGIONS) return undefined;
  const shared = u.size * L >= PARALLEL_MIN_ELEMENTS && order.some((e) => nodeKind(e) === 'approx') && sharedTier();
  const bytes = moduleBytes([{ name: 'run', params: 2, body: rowsBody(k, L, v !== undefined, order, scope, loads) }], shared ? 'shared' : true);
  return { form: 'rows', rows: u.size, cols: L, elements: v !== undefined, loads, stores, accs: 0, bytes, shared, label: k.label };
}

/** `x` without its term in `a` (whose coefficient the caller reads with x.coef(a)). */
function stripVar(x: IExpr, a: Var): IExpr {
  return new IExpr(x.terms.filter(([t]) => !(t.kind === 'var' && t.v.id === a.id)), x.c);
}

function planColumns(k: LoopKernel, order: readonly Expr[], reduces: readonly Reduce[], roots: readonly Expr[], outer?: Var): RedPlan | undefined {
  const v = k.vars[k.vars.length - 1]!;
  // an outer loop's stride in each region (0 without one)
  const strip = (x: IExpr) => (outer === undefined ? x : stripVar(x, outer));
  const outerOf = (x: IExpr) => (outer === undefined ? 0 : x.coef(outer));
  if (outer !== undefined && order.some((e) => e.t === 'load' && (e.index.nonAffineIn(outer) || e.index.coef(outer) < 0))) return undefined;
  const R = reduces[0]!.vars[0]!.size;
  if (reduces.some((r) => r.vars[0]!.size !== R) || (outer?.size ?? 1) * v.size * R < MIN_ELEMENTS) return undefined;
  const loads: RedRegion[] = [];
  const inBody = new Map<Expr, Reduce>();
  for (const r of reduces) for (const e of exprOrder([r.body])) if (e.t !== 'const') {
    if (inBody.has(e) && inBody.get(e)!.vars[0]!.id !== r.vars[0]!.id) return undefined;
    inBody.set(e, r);
  }
  for (const e of order) {
    if (e.t === 'load') {
      const r = inBody.get(e);
      // a load in a body is read at (r, v), r's stride at least a row of columns; one after the folds at v (row 0: once per column)
      const acc = r === undefined ? rowAccess(strip(e.index), v, undefined) : rowAccess(strip(e.index), v, r.vars[0]!);
      if (acc === undefined || (r !== undefined && acc.row < v.size)) return undefined;
      const region = { ...acc, outer: outerOf(e.index) };
      if (findRegion(loads, e.buf, region) < 0) loads.push({ buf: e.buf, ...region });
    } else if (e.t === 'reduce' && inBody.has(e)) return undefined; // nested
  }
  // A body reads only its own loop's loads; the values after the folds only the folds, constants and loads at v.
  for (const r of reduces) for (const e of exprOrder([r.body])) if (e.t === 'reduce') return undefined;
  const stores: RedRegion[] = [];
  for (const s of k.stores) {
    const acc = rowAccess(strip(s.index), v, undefined);
    if (acc === undefined || (outer !== undefined && (s.index.nonAffineIn(outer) || s.index.coef(outer) < v.size))) return undefined;
    stores.push({ buf: s.buf, off: acc.off, row: 1, outer: outerOf(s.index) });
  }
  if (loads.length + stores.length + reduces.length > MAX_REGIONS) return undefined;
  const bytes = moduleBytes([{ name: 'run', params: 3, body: columnsBody(k, order, reduces, inBody, loads, stores.length) }], true);
  void roots;
  return { form: 'columns', rows: R, cols: v.size, elements: false, loads, stores, accs: reduces.length, bytes, shared: false, label: k.label, ...(outer !== undefined ? { outer: outer.size } : {}) };
}

/**
 * The vector form: folds over a whole vector (no output loop; a loss's mean, a sum of every
 * element). Fixed chunks of CHUNK elements, each folded as a row of the rows form into a float64
 * partial; the partials folded in chunk order by the wrapper; then the values after the folds
 * (`fin`). The order depends only on the length.
 */
function planVector(k: LoopKernel, order: readonly Expr[], reduces: readonly Reduce[]): RedPlan | undefined {
  const n = reduces[0]!.vars[0]!.size;
  if (n < MIN_ELEMENTS || reduces.some((r) => r.vars[0]!.size !== n)) return undefined;
  const loads: RedRegion[] = [];
  const scope = new Map<Expr, Scope>();
  for (const r of reduces) {
    for (const e of exprOrder([r.body])) {
      if (e.t === 'reduce') return undefined; // a fold reading another's value needs that one first
      if (e.t === 'const') continue;
      if (e.t === 'load') {
        const acc = rowAccess(e.index, r.vars[0]!, undefined);
        if (acc === undefined) return undefined;
        if (findRegion(loads, e.buf, acc) < 0) loads.push({ buf: e.buf, ...acc });
      }
      const was = scope.get(e);
      if (was !== undefined && was !== r) return undefined;
      scope.set(e, r);
    }
  }
  for (const e of order) if (!scope.has(e)) { if (e.t === 'load') return undefined; scope.set(e, 'row'); }
  const stores: RedRegion[] = [];
  for (const s of k.stores) { if (!s.index.isConst) return undefined; stores.push({ buf: s.buf, off: s.index.c, row: 0 }); }
  if (loads.length + 3 > MAX_REGIONS || reduces.length > REG / 2 || stores.length > REG) return undefined;
  const full = Math.floor(n / CHUNK);
  const rest = n - full * CHUNK;
  const funcs = [{ name: 'fin', params: 0, body: vectorFin(k, order, scope, reduces, loads.length) }];
  const vk: LoopKernel = { ...k, vars: [] };
  if (full > 0) funcs.push({ name: 'run', params: 2, body: rowsBody(vk, CHUNK, false, order, scope, loads, true) });
  if (rest > 0) funcs.push({ name: 'tail', params: 2, body: rowsBody(vk, rest, false, order, scope, loads, true) });
  const bytes = moduleBytes(funcs, true);
  return { form: 'vector', rows: n, cols: rest, elements: false, loads, stores, accs: reduces.length, bytes, shared: false, label: k.label, ops: reduces.map((r) => r.op) };
}

/**
 * The vector form's last step: fold i's total (float64 at region loads + 1, byte 8 i), then the
 * values after the folds, stored as float32 (region loads + 2, byte 4 j for store j).
 */
function vectorFin(k: LoopKernel, order: readonly Expr[], scope: ReadonlyMap<Expr, Scope>, reduces: readonly Reduce[], nLoads: number): Body {
  const nodes = order.filter((e) => e.t !== 'const' && scope.get(e) === 'row');
  const consts = constsOf(order.filter((e) => scope.get(e) === 'row'));
  const loc = new Map<Expr, number>(nodes.map((e, i) => [e, i]));
  const b = new Body(0, [[nodes.length + 4 + consts.size, V128]]);
  const c = new Consts(b, nodes.length + 4);
  for (const x of consts) c.get(x).ops(0x1a);
  const push = (e: Expr) => { if (e.t === 'const') c.get(e.v); else b.get(loc.get(e)!); };
  for (const e of nodes) {
    if (e.t === 'reduce') b.i32(0).v(LOAD64_SPLAT, ...memarg(3, (nLoads + 1) * REGB + 8 * reduces.indexOf(e)));
    else renderNode(b, c, e, push, (x) => loc.get(x)!, nodes.length);
    b.set(loc.get(e)!);
  }
  k.stores.forEach((s, j) => { b.i32(0); push(s.value); b.v(S.demote).v(extra.store32Lane, ...memarg(2, (nLoads + 2) * REGB + 4 * j), 0); });
  return b;
}

function findRegion(rs: readonly RedRegion[], buf: number, acc: { off: number; row: number; outer?: number }): number {
  return rs.findIndex((l) => l.buf === buf && l.off === acc.off && l.row === acc.row && (l.outer ?? 0) === (acc.outer ?? 0));
}

/** The region of a load (its index among the plan's loads). */
function loadRegion(loads: readonly RedRegion[], e: Expr & { t: 'load' }, a: Var, b: Var | undefined): number {
  return findRegion(loads, e.buf, rowAccess(e.index, a, b)!);
}

/** Pushes fold(a, b) of two f64x2 values on the stack. */
function fold(b: Body, o: ReduceOp): void {
  b.v(FOLD[o]!);
}

/**
 * The rows form: run(n, base) computes n rows of the chunk block at byte offset base (row i of
 * region j at base + (j * REG + i * L) * 4). Per row: each reduction in dependency order (its accumulators, then the row values
 * that follow from it), then, with output loops [u, v], the row's elements.
 */
function rowsBody(k: LoopKernel, L: number, elements: boolean, order: readonly Expr[], scope: ReadonlyMap<Expr, Scope>, loads: readonly RedRegion[], partials = false): Body {
  const u = k.vars[0]!;
  const v = k.vars[1];
  const computed = order.filter((e) => e.t !== 'const');
  const rowNodes = computed.filter((e) => scope.get(e) === 'row');
  const perStream = computed.length + 6; // 6 scratch locals: the float32 form's approximations take 6
  const consts = constsOf(order);
  for (const r of order) if (r.t === 'reduce') consts.add(REDUCE_INIT[r.op]);
  const [N, BASE, ROW, RB, J, A] = [0, 1, 2, 3, 4, 5];
  const vbase = 6;
  const rowLocal = new Map<Expr, number>(rowNodes.map((e, i) => [e, vbase + i]));
  const accBase = vbase + rowNodes.length;
  const streamBase = accBase + STREAMS;
  const maskLocal = streamBase + STREAMS * perStream;
  // The element loop in f32x4 lanes where the elementwise tier's float32 form applies (f32Exact)
  // and every row value it reads is a float32 value: then four elements per instruction.
  const elemNodes = computed.filter((x) => scope.get(x) === 'elem');
  const rowRead = new Set<Expr>();
  for (const e of elemNodes) for (const x of e.t === 'op' || e.t === 'call' ? e.args : e.t === 'cast' ? [e.x] : []) if (scope.get(x) === 'row' && x.t !== 'const') rowRead.add(x);
  for (const st of k.stores) if (scope.get(st.value) === 'row' && st.value.t !== 'const') rowRead.add(st.value);
  const float32Value = (e: Expr) => (e.t === 'cast' && e.dtype === 'float32') || e.t === 'load' || ((e.t === 'reduce') && (e.op === 'max' || e.op === 'min') && e.body.t === 'load');
  const f32el = F32_ELEMENTS && elements && !partials && elemNodes.length > 0 && [...rowRead].every(float32Value)
    && f32Exact(exprOrder(k.stores.map((x) => x.value)).filter((x) => x.t === 'const' || scope.get(x) === 'elem'), k.stores.map((x) => x.value));
  const row32 = new Map<Expr, number>([...rowRead].map((e, i) => [e, maskLocal + 1 + i]));
  const C32_LOCALS = f32el ? 64 : 0;
  const b = new Body(2, [[4, I32], [rowNodes.length + STREAMS + STREAMS * perStream + 1 + row32.size + C32_LOCALS + consts.size, V128]]);
  const c32 = new Consts(b, maskLocal + 1 + row32.size, true);
  const c = new Consts(b, maskLocal + 1 + row32.size + C32_LOCALS);
  for (const x of consts) c.get(x).ops(0x1a);
  b.v(S.v128Const, ...LANE1).set(maskLocal);
  const local = (st: number) => {
    const m = new Map<Expr, number>(computed.map((e, i) => [e, streamBase + st * perStream + i]));
    return (e: Expr) => rowLocal.get(e) ?? m.get(e)!;
  };
  const push = (loc: (e: Expr) => number) => (e: Expr) => { if (e.t === 'const') c.get(e.v); else b.get(loc(e)); };
  // The nodes of one scope at stream st, for the element pair at byte A + off.
  const nodesAt = (nodes: readonly Expr[], st: number, off: number, inner: Var) => {
    const loc = local(st);
    for (const e of nodes) {
      if (e.t === 'load') b.get(A).v(extra.load64Zero, ...memarg(3, loadRegion(loads, e, inner, u) * REGB + off)).v(S.promote);
      else renderNode(b, c, e, push(loc), loc, streamBase + st * perStream + computed.length);
      b.set(loc(e));
    }
  };
  // A pass over a row's L elements: `visit(st, off)` for each pair (streams of STREAMS pairs, then the rest), `tail(off)` for an odd last element.
  const pass = (visit: (st: number, off: number) => void, tail: (st: number, off: number) => void) => {
    const pairs = L >> 1;
    const it = Math.floor(pairs / STREAMS);
    if (it > 0) {
      b.i32(0).set(J);
      b.ops(op.loop, 0x40);
      b.get(RB).get(J).ops(op.i32Add).set(A);
      for (let st = 0; st < STREAMS; st++) visit(st, 8 * st);
      b.addTo(J, 8 * STREAMS);
      b.get(J).i32(it * STREAMS * 8).ops(op.i32LtU, op.brIf, 0, op.end);
    }
    b.get(RB).i32(it * STREAMS * 8).ops(op.i32Add).set(A);
    const rest = pairs - it * STREAMS;
    for (let q = 0; q < rest; q++) visit(q, 8 * q);
    if (L % 2 === 1) tail(rest, 8 * rest);
  };
  // max or min over the row's float32 values at region byte offset `reg`, into every lane of accBase (f32x4).
  const maxMin32 = (o: 'max' | 'min', reg: number) => {
    const init = (i: number) => { b.v(S.v128Const, ...f32x4(REDUCE_INIT[o])).set(accBase + i); };
    const f = () => b.v(o === 'max' ? F32_MAX : F32_MIN);
    const quads = L >> 2;
    const it = Math.floor(quads / STREAMS);
    for (let i = 0; i < STREAMS; i++) init(i);
    const at = (i: number, off: number) => { b.get(accBase + i).get(A).v(extra.load, ...memarg(4, reg + off)); f(); b.set(accBase + i); };
    if (it > 0) {
      b.i32(0).set(J);
      b.ops(op.loop, 0x40);
      b.get(RB).get(J).ops(op.i32Add).set(A);
      for (let i = 0; i < STREAMS; i++) at(i, 16 * i);
      b.addTo(J, 16 * STREAMS);
      b.get(J).i32(it * STREAMS * 16).ops(op.i32LtU, op.brIf, 0, op.end);
    }
    b.get(RB).i32(it * STREAMS * 16).ops(op.i32Add).set(A);
    const rest = quads - it * STREAMS;
    for (let q = 0; q < rest; q++) at(q, 16 * q);
    if (L % 4 !== 0) {
      // the last L mod 4 values; the lanes past the row's end take the fold's initial value
      const keep = L % 4;
      b.get(accBase).v(S.v128Const, ...f32x4(REDUCE_INIT[o])).get(A).v(extra.load, ...memarg(4, reg + 16 * rest));
      b.v(S.v128Const, ...Array.from({ length: 16 }, (_, i) => (i >= 4 * keep ? 255 : 0))).v(S.bitselect);
      f(); b.set(accBase);
    }
    b.get(accBase).get(accBase + 1); f();
    b.get(accBase + 2).get(accBase + 3); f(); f();
    b.set(accBase);
    b.get(accBase).get(accBase).get(accBase).v(extra.shuffle, ...SWAP); f();
    b.set(accBase);
    b.get(accBase).get(accBase).get(accBase).v(extra.shuffle, ...SWAP32); f();
    b.set(accBase);
  };
  // partials: fold i's float64 value of row r at region loads, byte (r * folds + i) * 8
  const reduceList = order.filter((x) => x.t === 'reduce');
  const storePartial = (e: Expr) => {
    if (!partials) return;
    b.get(BASE).get(ROW).i32(8 * reduceList.length).ops(op.i32Mul).ops(op.i32Add).get(rowLocal.get(e)!);
    b.v(S.store64Lane, ...memarg(3, loads.length * REGB + 8 * (reduceList as readonly Expr[]).indexOf(e)), 0);
  };
  b.ops(op.block, 0x40).get(N).ops(op.i32Eqz, op.brIf, 0);
  b.i32(0).set(ROW);
  b.get(BASE).set(RB);
  b.ops(op.loop, 0x40);
  const rowOut = (e: Expr) => { if (e.t === 'const') c.get(e.v); else b.get(rowLocal.get(e)!); };
  for (const e of rowNodes) {
    if (e.t === 'load') {
      // a value per row: v128.load32_splat, then promoted
      b.get(BASE).get(ROW).i32(4).ops(op.i32Mul).ops(op.i32Add).v(LOAD32_SPLAT, ...memarg(2, findRegion(loads, e.buf, { off: rowAccess(e.index, u, undefined)!.off, row: -1 }) * REGB)).v(PROMOTE_LOW);
      b.set(rowLocal.get(e)!);
      continue;
    }
    if (e.t !== 'reduce') {
      if (partials) continue; // computed from the totals (vectorFin)
      renderNode(b, c, e, rowOut, (x) => rowLocal.get(x)!, streamBase);
      b.set(rowLocal.get(e)!);
      continue;
    }
    const rv = e.vars[0]!;
    if ((e.op === 'max' || e.op === 'min') && e.body.t === 'load') {
      // The max or min of float32 values (a row of a load): in f32x4 lanes, four per instruction,
      // the same value as in float64 (promotion is exact and keeps the order, NaN and signed zeros).
      maxMin32(e.op, loadRegion(loads, e.body, rv, u) * REGB);
      b.get(accBase).v(PROMOTE_LOW).set(rowLocal.get(e)!);
      storePartial(e);
      continue;
    }
    const body = exprOrder([e.body]).filter((x) => x.t !== 'const' && scope.get(x) !== 'row');
    const val = (st: number) => (e.body.t === 'const' ? c.get(e.body.v) : b.get(local(st)(e.body)));
    for (let st = 0; st < STREAMS; st++) { c.get(REDUCE_INIT[e.op]); b.set(accBase + st); }
    pass(
      (st, off) => { nodesAt(body, st, off, rv); b.get(accBase + st); val(st); fold(b, e.op); b.set(accBase + st); },
      (st, off) => {
        nodesAt(body, st, off, rv);
        b.get(accBase + st); c.get(REDUCE_INIT[e.op]); val(st); b.get(maskLocal).v(S.bitselect); fold(b, e.op); b.set(accBase + st);
      },
    );
    b.get(accBase).get(accBase + 1); fold(b, e.op);
    b.get(accBase + 2).get(accBase + 3); fold(b, e.op); fold(b, e.op);
    b.set(accBase);
    b.get(accBase).get(accBase).get(accBase).v(extra.shuffle, ...SWAP); fold(b, e.op);
    b.set(rowLocal.get(e)!);
    storePartial(e);
  }
  if (partials) {
    // nothing more: the partial folds are the results
  } else if (f32el && v !== undefined) {
    // row values as float32 splats, then quads of elements (the last one's lanes past the row stored one by one)
    for (const [e, l] of row32) b.get(rowLocal.get(e)!).v(S.demote).set(l).get(l).get(l).v(extra.shuffle, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7).set(l);
    const loc32 = (st: number) => {
      const m = local(st);
      return (e: Expr) => row32.get(e) ?? m(e);
    };
    const quad = (st: number, off: number, lanes: number) => {
      const loc = loc32(st);
      for (const e of elemNodes) {
        if (e.t === 'load') b.get(A).v(extra.load, ...memarg(0, loadRegion(loads, e, v, u) * REGB + off));
        else renderNode(b, c, e, (x) => { if (x.t === 'const') c32.get(x.v); else b.get(loc(x)); }, loc, streamBase + st * perStream + computed.length, c32);
        b.set(loc(e));
      }
      k.stores.forEach((s, j) => {
        const at = (loads.length + j) * REGB + off;
        const val = () => { if (s.value.t === 'const') c32.get(s.value.v); else b.get(loc(s.value)); };
        if (lanes === 4) { b.get(A); val(); b.v(extra.store, ...memarg(0, at)); return; }
        for (let l = 0; l < lanes; l++) { b.get(A); val(); b.v(extra.store32Lane, ...memarg(2, at + 4 * l), l); }
      });
    };
    const quads = L >> 2;
    const it = Math.floor(quads / STREAMS);
    if (it > 0) {
      b.i32(0).set(J);
      b.ops(op.loop, 0x40);
      b.get(RB).get(J).ops(op.i32Add).set(A);
      for (let st = 0; st < STREAMS; st++) quad(st, 16 * st, 4);
      b.addTo(J, 16 * STREAMS);
      b.get(J).i32(it * STREAMS * 16).ops(op.i32LtU, op.brIf, 0, op.end);
    }
    b.get(RB).i32(it * STREAMS * 16).ops(op.i32Add).set(A);
    const rest = quads - it * STREAMS;
    for (let q = 0; q < rest; q++) quad(q, 16 * q, 4);
    if (L % 4 !== 0) quad(rest, 16 * rest, L % 4);
  } else if (elements && v !== undefined) {
    const elems = computed.filter((x) => scope.get(x) === 'elem');
    const storeAt = (st: number, off: number, lane64: boolean) => {
      const loc = local(st);
      k.stores.forEach((s, j) => {
        b.get(A); push(loc)(s.value); b.v(S.demote);
        b.v(lane64 ? S.store64Lane : extra.store32Lane, ...memarg(lane64 ? 3 : 2, (loads.length + j) * REGB + off), 0);
      });
    };
    pass((st, off) => { nodesAt(elems, st, off, v); storeAt(st, off, true); }, (st, off) => { nodesAt(elems, st, off, v); storeAt(st, off, false); });
  } else {
    k.stores.forEach((s, j) => {
      b.get(ROW).i32(4).ops(op.i32Mul).get(BASE).ops(op.i32Add); rowOut(s.value); b.v(S.demote).v(extra.store32Lane, ...memarg(2, (loads.length + j) * REGB), 0);
    });
  }
  b.addTo(ROW, 1);
  b.addTo(RB, 4 * L);
  b.get(ROW).get(N).ops(op.i32LtU, op.brIf, 0, op.end, op.end);
  return b;
}

/**
 * The columns form: run(mode, n, w) over a block of w columns. mode 0: the accumulators (region
 * loads + stores + i, float64) set to the folds' initial values; 1: n rows of w columns (row i of
 * region j at j * REG + i * w floats) folded into them, row by row; 2: the results computed from
 * them and stored (region loads + j, float32).
 */
function columnsBody(k: LoopKernel, order: readonly Expr[], reduces: readonly Reduce[], inBody: ReadonlyMap<Expr, Reduce>, loads: readonly RedRegion[], nStores: number): Body {
  const v = k.vars[k.vars.length - 1]!;
  const outer = k.vars.length === 2 ? k.vars[0]! : undefined;
  const colRegion = (e: Expr & { t: 'load' }, r: Var | undefined) => {
    const x = outer === undefined ? e.index : stripVar(e.index, outer);
    return findRegion(loads, e.buf, { ...rowAccess(x, v, r)!, outer: outer === undefined ? 0 : e.index.coef(outer) });
  };
  const computed = order.filter((e) => e.t !== 'const');
  const consts = constsOf(order);
  for (const r of reduces) consts.add(REDUCE_INIT[r.op]);
  const [MODE, N, W, ROW, RB, Q, QEND, A] = [0, 1, 2, 3, 4, 5, 6, 7];
  const vbase = 8;
  const loc = new Map<Expr, number>(computed.map((e, i) => [e, vbase + i]));
  const scratch = vbase + computed.length;
  const b = new Body(3, [[5, I32], [computed.length + 4 + consts.size, V128]]);
  const c = new Consts(b, scratch + 4);
  for (const x of consts) c.get(x).ops(0x1a);
  const accOff = (i: number) => (loads.length + nStores + i) * REGB;
  const push = (e: Expr) => { if (e.t === 'const') c.get(e.v); else b.get(loc.get(e)!); };
  // QEND := pairs of columns * 8 (bytes of float32 pairs); a loop over Q = 0, 8, ..., QEND - 8 running `inner`.
  b.get(W).i32(1).ops(op.i32Add).i32(1).ops(0x76 /* i32.shr_u */).i32(3).ops(0x74 /* i32.shl */).set(QEND);
  const overPairs = (inner: () => void) => {
    b.i32(0).set(Q);
    b.ops(op.block, 0x40).get(QEND).ops(op.i32Eqz, op.brIf, 0);
    b.ops(op.loop, 0x40);
    inner();
    b.addTo(Q, 8);
    b.get(Q).get(QEND).ops(op.i32LtU, op.brIf, 0, op.end, op.end);
  };
  // Q2 (the accumulators' byte offset) is 2 Q: pushed as Q + Q.
  const accAddr = () => b.get(Q).get(Q).ops(op.i32Add);
  // mode 0
  b.ops(op.block, 0x40).get(MODE).ops(op.brIf, 0);
  overPairs(() => reduces.forEach((r, i) => { accAddr(); c.get(REDUCE_INIT[r.op]); b.v(extra.store, ...memarg(4, accOff(i))); }));
  b.ops(0x0f, op.end);
  // mode 1
  b.ops(op.block, 0x40).get(MODE).i32(1).ops(0x47 /* i32.ne */, op.brIf, 0);
  b.ops(op.block, 0x40).get(N).ops(op.i32Eqz, op.brIf, 0);
  b.i32(0).set(ROW);
  b.i32(0).set(RB);
  b.ops(op.loop, 0x40);
  overPairs(() => {
    b.get(RB).get(Q).ops(op.i32Add).set(A);
    reduces.forEach((r, i) => {
      for (const e of exprOrder([r.body])) {
        if (e.t === 'const') continue;
        if (e.t === 'load') b.get(A).v(extra.load64Zero, ...memarg(3, colRegion(e, r.vars[0]!) * REGB)).v(S.promote);
        else renderNode(b, c, e, push, (x) => loc.get(x)!, scratch);
        b.set(loc.get(e)!);
      }
      accAddr(); accAddr(); b.v(extra.load, ...memarg(4, accOff(i))); push(r.body); fold(b, r.op); b.v(extra.store, ...memarg(4, accOff(i)));
    });
  });
  b.addTo(ROW, 1);
  b.get(RB).get(W).i32(4).ops(op.i32Mul).ops(op.i32Add).set(RB);
  b.get(ROW).get(N).ops(op.i32LtU, op.brIf, 0, op.end, op.end);
  b.ops(0x0f, op.end);
  // mode 2
  overPairs(() => {
    for (const e of computed) {
      if (inBody.has(e)) continue;
      if (e.t === 'reduce') { accAddr(); b.v(extra.load, ...memarg(4, accOff(reduces.indexOf(e)))); }
      else if (e.t === 'load') b.get(Q).v(extra.load64Zero, ...memarg(3, colRegion(e, undefined) * REGB)).v(S.promote);
      else renderNode(b, c, e, push, (x) => loc.get(x)!, scratch);
      b.set(loc.get(e)!);
    }
    k.stores.forEach((s, j) => { b.get(Q); push(s.value); b.v(S.demote).v(S.store64Lane, ...memarg(3, (loads.length + j) * REGB), 0); });
  });
  return b;
}

// --- runtime: the tier's memory and its compiled kernels ---

export interface RedKernel {
  readonly run: (...args: number[]) => void;
  /** The vector form's other functions: the last chunk's fold, the values after the folds. */
  readonly tail?: (...args: number[]) => void;
  readonly fin?: () => void;
  /** The tier's memory as float32 (region j at j * REG), and as float64 (the vector form's partials and totals). */
  readonly mem: Float32Array;
  readonly mem64?: Float64Array;
  /** A shared rows kernel: rows [lo, hi) split over the threads (see parallelRows). */
  readonly par?: (lo: number, hi: number, ins: readonly Float32Array[], outs: readonly Float32Array[], layout: readonly number[]) => void;
}

let memory: WasmMemory | undefined;
let view: Float32Array | undefined;
let view64: Float64Array | undefined;
const modules = new Map<string, number>();
const kernels: RedKernel[] = [];

/** The id of the kernel compiled from `bytes` (once per process; generated code calls rt.red(id)). */
export function redKernelId(bytes: Uint8Array): number {
  const key = Array.from(bytes, (x) => String.fromCharCode(x)).join('');
  let id = modules.get(key);
  if (id === undefined) {
    memory ??= new WA!.Memory({ initial: PAGES, maximum: PAGES });
    view ??= new Float32Array(memory.buffer);
    const inst = new WA!.Instance(new WA!.Module(bytes) as WasmModule, { env: { mem: memory } });
    id = kernels.length;
    view64 ??= new Float64Array(memory.buffer);
    const ex = inst.exports as Record<string, (...args: number[]) => void>;
    kernels.push({ run: ex['run']!, tail: ex['tail'], fin: ex['fin'] as () => void, mem: view, mem64: view64 });
    modules.set(key, id);
  }
  return id;
}

/** The id of a rows kernel over the shared memory (compiled and handed to the worker pool as the elementwise tier's shared kernels are). */
function redSharedKernelId(bytes: Uint8Array, regions: number): number {
  const key = `s${Array.from(bytes, (x) => String.fromCharCode(x)).join('')}`;
  let id = modules.get(key);
  if (id === undefined) {
    const ek = ewKernel(ewKernelId(bytes, true, regions));
    id = kernels.length;
    kernels.push({ run: ek.run, get mem() { return ek.mem; }, par: (lo, hi, ins, outs, layout) => parallelRows(ek.sid!, lo, hi, ins, outs, layout) });
    modules.set(key, id);
  }
  return id;
}

/**
 * Rows [lo, hi) of a shared rows kernel, in passes of up to PASS_BLOCKS blocks of `per` rows: each
 * block's rows copied into a block of the shared memory of its own, the blocks computed by this
 * thread and the workers (claimed one at a time: every row is computed by the same code whichever
 * thread takes it, so the results are the same with 1 or N threads), the results copied out.
 * layout: L, per, elements (1 or 0), then (row stride, offset) of each input and each output.
 */
function parallelRows(sid: number, lo: number, hi: number, ins: readonly Float32Array[], outs: readonly Float32Array[], layout: readonly number[]): void {
  const [L, per, elements] = layout as [number, number, number];
  const blockFloats = (ins.length + outs.length) * REG;
  const row = (k: number) => layout[3 + 2 * k]!;
  const off = (k: number) => layout[4 + 2 * k]!;
  for (let p0 = lo; p0 < hi; p0 += PASS_BLOCKS * per) {
    const p1 = Math.min(hi, p0 + PASS_BLOCKS * per);
    const blocks = Math.ceil((p1 - p0) / per);
    const m = sharedMem(blocks * blockFloats * 4);
    for (let b = 0; b < blocks; b++) {
      const r0 = p0 + b * per, r1 = Math.min(p1, r0 + per);
      ins.forEach((a, j) => {
        const o = b * blockFloats + j * REG, s = row(j), f = off(j);
        if (s === -1) m.set(a.subarray(r0 + f, r1 + f), o);
        else if (s === L) m.set(a.subarray(r0 * L + f, r1 * L + f), o);
        else for (let r = r0; r < r1; r++) m.set(a.subarray(r * s + f, r * s + f + L), o + (r - r0) * L);
      });
    }
    runBlocks(sid, blocks, blockFloats * 4, per, p1 - p0 - (blocks - 1) * per);
    for (let b = 0; b < blocks; b++) {
      const r0 = p0 + b * per, r1 = Math.min(p1, r0 + per);
      outs.forEach((a, j) => {
        const k = ins.length + j, o = b * blockFloats + k * REG, s = row(k), f = off(k);
        if (elements === 0) a.set(m.subarray(o, o + r1 - r0), r0 + f);
        else if (s === L) a.set(m.subarray(o, o + (r1 - r0) * L), r0 * L + f);
        else for (let r = r0; r < r1; r++) a.set(m.subarray(o + (r - r0) * L, o + (r - r0 + 1) * L), r * s + f);
      });
    }
  }
}

/** The kernel with this id (runtime helper `rt.red`). */
export function redKernel(id: number): RedKernel {
  return kernels[id]!;
}

/** The JavaScript side of a reduction kernel: same parameters as renderLoopKernel's function. */
export function renderReduce(p: RedPlan, bufName: (id: number) => string): { source: string; buffers: number[]; rows?: number } {
  const id = p.shared ? redSharedKernelId(p.bytes, p.loads.length + p.stores.length) : redKernelId(p.bytes);
  const buffers = [...new Set([...p.loads.map((l) => l.buf), ...p.stores.map((s) => s.buf)])].sort((a, c) => a - c);
  const at = (x: string, off: number) => (off === 0 ? x : `${x} + ${off}`);
  const label = p.label.replace(/[^\w,. -]/g, '');
  if (p.form === 'vector') {
    const n = p.rows;
    const full = n - p.cols;
    const acc = (i: number) => `s${i}`;
    const foldJs = (o: ReduceOp, a: string, x: string) => (o === 'sum' ? `${a} += ${x};` : o === 'prod' ? `${a} *= ${x};` : `${a} = Math.${o}(${a}, ${x});`);
    const ops = p.ops!;
    const partial = (p.loads.length * REG) / 2; // float64 index of the partials region
    const copy = (s: string, e: string) => p.loads.map((l, j) => `    m.set(${bufName(l.buf)}.subarray(${at(s, l.off)}, ${at(e, l.off)}), ${j * REG});`);
    const lines = [
      `  const w = rt.red(${id});`,
      '  const m = w.mem, m64 = w.mem64;',
      ...ops.map((o, i) => `  let ${acc(i)} = ${literal(REDUCE_INIT[o])};`),
      ...(full > 0 ? [
        `  for (let s = 0; s < ${full}; s += ${CHUNK}) {`,
        ...copy('s', `s + ${CHUNK}`),
        '    w.run(1, 0);',
        ...ops.map((o, i) => `    ${foldJs(o, acc(i), `m64[${partial + i}]`)}`),
        '  }',
      ] : []),
      ...(p.cols > 0 ? [
        '  {',
        ...copy(String(full), String(n)),
        '    w.tail(1, 0);',
        ...ops.map((o, i) => `    ${foldJs(o, acc(i), `m64[${partial + i}]`)}`),
        '  }',
      ] : []),
      ...ops.map((_, i) => `  m64[${partial + REG / 2 + i}] = ${acc(i)};`),
      '  w.fin();',
      ...p.stores.map((x, j) => `  ${bufName(x.buf)}[${x.off}] = m[${(p.loads.length + 2) * REG + j}];`),
    ];
    const source = `function k(${buffers.map(bufName).join(', ')}) { // WebAssembly SIMD reduction of ${n} elements: ${label}\n${lines.join('\n')}\n}`;
    return { source, buffers };
  }
  if (p.form === 'rows') {
    const L = p.cols;
    const per = Math.floor(CHUNK / L);
    const rowAt = (r: RedRegion, row: string) => (r.row === 0 ? String(r.off) : at(`${row} * ${r.row}`, r.off));
    const copyIn = p.loads.map((l, j) => (l.row === -1
      ? `    m.set(${bufName(l.buf)}.subarray(${at('r0', l.off)}, ${at('r1', l.off)}), ${j * REG});`
      : l.row === L
      ? `    m.set(${bufName(l.buf)}.subarray(${rowAt(l, 'r0')}, ${rowAt(l, 'r1')}), ${j * REG});`
      : `    for (let r = r0, o = ${j * REG}; r < r1; r++, o += ${L}) m.set(${bufName(l.buf)}.subarray(${rowAt(l, 'r')}, ${rowAt(l, 'r')} + ${L}), o);`));
    const copyOut = p.stores.map((x, j) => {
      const o = (p.loads.length + j) * REG;
      if (!p.elements) return `    ${bufName(x.buf)}.set(m.subarray(${o}, ${o} + r1 - r0), ${at('r0', x.off)});`;
      return x.row === L
        ? `    ${bufName(x.buf)}.set(m.subarray(${o}, ${o} + (r1 - r0) * ${L}), ${rowAt(x, 'r0')});`
        : `    for (let r = r0, o = ${o}; r < r1; r++, o += ${L}) ${bufName(x.buf)}.set(m.subarray(o, o + ${L}), ${rowAt(x, 'r')});`;
    });
    const layout = [L, per, p.elements ? 1 : 0, ...[...p.loads, ...p.stores].flatMap((x) => [x.row, x.off])];
    const lines = [
      `  const w = rt.red(${id});`,
      ...(p.shared ? [
        `  if (hi - lo >= ${Math.ceil(PARALLEL_MIN_ELEMENTS / L)}) { w.par(lo, hi, [${p.loads.map((l) => bufName(l.buf)).join(', ')}], [${p.stores.map((x) => bufName(x.buf)).join(', ')}], [${layout.join(', ')}]); return; }`,
      ] : []),
      '  const m = w.mem;',
      `  for (let r0 = lo; r0 < hi; r0 += ${per}) {`,
      `    const r1 = hi < r0 + ${per} ? hi : r0 + ${per};`,
      ...copyIn,
      '    w.run(r1 - r0, 0);',
      ...copyOut,
      '  }',
    ];
    const source = `function k(${[...buffers.map(bufName), 'lo', 'hi'].join(', ')}) { // WebAssembly SIMD reduction, ${p.rows} rows of ${L}: ${label}\n${lines.join('\n')}\n}`;
    return { source, buffers, rows: p.rows };
  }
  // columns: blocks of at most COL_BLOCK columns; each block's rows in chunks of at most CHUNK floats
  // (with an outer loop: all of it for each outer index a, regions offset by a times their stride)
  const C = p.cols;
  const R = p.rows;
  const ind = p.outer !== undefined ? '  ' : '';
  const atR = (x: string, r: RedRegion) => (r.outer ? `${x} + a * ${r.outer}${r.off !== 0 ? ` + ${r.off}` : ''}` : at(x, r.off));
  const body = [
    `  for (let c0 = 0; c0 < ${C}; c0 += ${COL_BLOCK}) {`,
    `    const c1 = ${C} < c0 + ${COL_BLOCK} ? ${C} : c0 + ${COL_BLOCK};`,
    '    const cw = c1 - c0;',
    `    const per = Math.floor(${CHUNK} / cw);`,
    '    w.run(0, 0, cw);',
    `    for (let r0 = 0; r0 < ${R}; r0 += per) {`,
    `      const r1 = ${R} < r0 + per ? ${R} : r0 + per;`,
    ...p.loads.map((l, j) => (l.row === 0 ? ''
      : l.row === C
      ? `      if (cw === ${C}) m.set(${bufName(l.buf)}.subarray(${atR(`r0 * ${C}`, l)}, ${atR(`r1 * ${C}`, l)}), ${j * REG});\n      else for (let r = r0, o = ${j * REG}; r < r1; r++, o += cw) m.set(${bufName(l.buf)}.subarray(${atR(`r * ${l.row} + c0`, l)}, ${atR(`r * ${l.row} + c1`, l)}), o);`
      : `      for (let r = r0, o = ${j * REG}; r < r1; r++, o += cw) m.set(${bufName(l.buf)}.subarray(${atR(`r * ${l.row} + c0`, l)}, ${atR(`r * ${l.row} + c1`, l)}), o);`)).filter((x) => x !== ''),
    '      w.run(1, r1 - r0, cw);',
    '    }',
    ...p.loads.flatMap((l, j) => (l.row === 0 ? [`    m.set(${bufName(l.buf)}.subarray(${atR('c0', l)}, ${atR('c1', l)}), ${j * REG});`] : [])),
    '    w.run(2, 0, cw);',
    ...p.stores.map((x, j) => `    ${bufName(x.buf)}.set(m.subarray(${(p.loads.length + j) * REG}, ${(p.loads.length + j) * REG} + cw), ${atR('c0', x)});`),
    '  }',
  ];
  const lines = [
    `  const w = rt.red(${id});`,
    '  const m = w.mem;',
    ...(p.outer !== undefined ? ['  for (let a = lo; a < hi; a++) {', ...body.map((l) => ind + l.replace(/\n {6}/g, `\n${ind}      `)), '  }'] : body),
  ];
  const params = [...buffers.map(bufName), ...(p.outer !== undefined ? ['lo', 'hi'] : [])];
  const what = p.outer !== undefined ? `${p.outer} x ${R} rows of ${C}` : `${R} rows of ${C}`;
  const source = `function k(${params.join(', ')}) { // WebAssembly SIMD column reduction, ${what}: ${label}\n${lines.join('\n')}\n}`;
  return p.outer !== undefined ? { source, buffers, rows: p.outer } : { source, buffers };
}
