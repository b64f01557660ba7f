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
import type { IExpr, Var } from '../../kernel/index-expr.js';
import type { Expr } from '../../kernel/expr.js';
import { exprOrder, REDUCE_INIT } from '../../kernel/expr.js';
import type { LoopKernel } from '../../kernel/ir.js';
import { foldCode, literal } from '../js.js';
import type { DType } from '../../../ir/dtype.js';
import { WA, moduleBytes, type WasmMemory, type WasmModule } from './encode.js';
import {
  CHUNK,
  LOADED,
  MIN_ELEMENTS,
  ewKernel,
  ewKernelId,
  nodeKind,
  rowAccess,
  runBlocks,
  sharedMem,
  sharedTier,
  tierOn,
  type TierRecipe,
} from './elementwise.js';

import {
  REG,
  PAGES,
  MAX_REGIONS,
  COL_BLOCK,
  FOLD,
  type RedRegion,
  type RedPlan,
  PARALLEL_MIN_ELEMENTS,
  PASS_BLOCKS,
  type Reduce,
  type Scope,
  vectorFin,
  findRegion,
  columnsBody,
  stripVar,
} from './reduce-body.js';
import { rowsBody } from './reduce-rows.js';

export { COL_BLOCK, PARALLEL_MIN_ELEMENTS, setReduceF32Elements, type RedPlan, type RedRegion } from './reduce-body.js';

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
  for (const s of k.stores)
    if (s.accumulate === true || s.dyn !== undefined || s.dtype !== 'float32' || bufDType(s.buf) !== 'float32')
      return undefined;
  if (order.some((e) => e.t === 'load' && !LOADED.has(bufDType(e.buf)))) return undefined;
  // The approximations are within 1 ulp only once rounded to float32.
  const rounded = new Set<Expr>([
    ...roots,
    ...order.flatMap((e) => (e.t === 'cast' && e.dtype === 'float32' ? [e.x] : [])),
  ]);
  for (const e of order) {
    if (e.t === 'const' || e.t === 'load' || e.t === 'reduce') continue;
    const kind = nodeKind(e);
    if (kind === undefined || (kind === 'approx' && !rounded.has(e))) return undefined;
  }
  if (reduces.length === 0) {
    // no fold: rows of elements computed from values read once per row (the elementwise tier
    // reads none), where the tier pays as it does for elementwise loops (an approximation, a branch)
    if (
      k.vars.length !== 2 ||
      !order.some((e) => e.t === 'load' && rowAccess(e.index, k.vars[0]!, undefined) !== undefined)
    )
      return undefined;
    if (!order.some((e) => e.t !== 'const' && e.t !== 'load' && nodeKind(e) !== 'plain')) return undefined;
    return planRows(k, order, reduces, roots);
  }
  if (k.vars.length === 0) return planVector(k, order, reduces);
  const first = reduces[0]!.body;
  const rv = reduces[0]!.vars[0]!;
  const probe = order.find((e) => e.t === 'load' && exprOrder([first]).includes(e));
  if (probe === undefined || probe.t !== 'load') return undefined;
  if (
    k.vars.length === 1 &&
    rowAccess(probe.index, k.vars[0]!, rv) !== undefined &&
    rowAccess(probe.index, k.vars[0]!, rv)!.row > 0
  ) {
    return planColumns(k, order, reduces, roots);
  }
  const outer = k.vars[0]!;
  if (
    k.vars.length === 2 &&
    rowAccess(stripVar(probe.index, outer), k.vars[1]!, rv) !== undefined &&
    rowAccess(stripVar(probe.index, outer), k.vars[1]!, rv)!.row > 0
  ) {
    // columns of each outer index (a sum over the middle axis of [A, R, C])
    return planColumns(k, order, reduces, roots, outer);
  }
  return planRows(k, order, reduces, roots);
}

function planRows(
  k: LoopKernel,
  order: readonly Expr[],
  reduces: readonly Reduce[],
  roots: readonly Expr[],
): RedPlan | undefined {
  const u = k.vars[0]!;
  const v = k.vars[1];
  const L = reduces[0]?.vars[0]!.size ?? v!.size;
  if (L > CHUNK || L < 2 || reduces.some((r) => r.vars[0]!.size !== L) || (v !== undefined && v.size !== L))
    return undefined;
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
  const body = rowsBody(k, L, v !== undefined, order, scope, loads);
  const bytes = moduleBytes([{ name: 'run', params: 2, body }], shared ? 'shared' : true);
  return {
    form: 'rows',
    rows: u.size,
    cols: L,
    elements: v !== undefined,
    loads,
    stores,
    accs: 0,
    bytes,
    shared,
    label: k.label,
    body,
  };
}

function planColumns(
  k: LoopKernel,
  order: readonly Expr[],
  reduces: readonly Reduce[],
  roots: readonly Expr[],
  outer?: Var,
): RedPlan | undefined {
  const v = k.vars[k.vars.length - 1]!;
  // an outer loop's stride in each region (0 without one)
  const strip = (x: IExpr) => (outer === undefined ? x : stripVar(x, outer));
  const outerOf = (x: IExpr) => (outer === undefined ? 0 : x.coef(outer));
  if (
    outer !== undefined &&
    order.some((e) => e.t === 'load' && (e.index.nonAffineIn(outer) || e.index.coef(outer) < 0))
  )
    return undefined;
  const R = reduces[0]!.vars[0]!.size;
  if (reduces.some((r) => r.vars[0]!.size !== R) || (outer?.size ?? 1) * v.size * R < MIN_ELEMENTS) return undefined;
  const loads: RedRegion[] = [];
  const inBody = new Map<Expr, Reduce>();
  for (const r of reduces)
    for (const e of exprOrder([r.body]))
      if (e.t !== 'const') {
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
    if (acc === undefined || (outer !== undefined && (s.index.nonAffineIn(outer) || s.index.coef(outer) < v.size)))
      return undefined;
    stores.push({ buf: s.buf, off: acc.off, row: 1, outer: outerOf(s.index) });
  }
  if (loads.length + stores.length + reduces.length > MAX_REGIONS) return undefined;
  void roots;
  const funcs = [{ name: 'run', params: 3, body: columnsBody(k, order, reduces, inBody, loads, stores.length) }];
  const form = { form: 'columns', rows: R, cols: v.size, loads, stores } as const;
  return ownMemoryPlan(k, reduces, funcs, { ...form, ...(outer !== undefined ? { outer: outer.size } : {}) });
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
  for (const e of order)
    if (!scope.has(e)) {
      if (e.t === 'load') return undefined;
      scope.set(e, 'row');
    }
  const stores: RedRegion[] = [];
  for (const s of k.stores) {
    if (!s.index.isConst) return undefined;
    stores.push({ buf: s.buf, off: s.index.c, row: 0 });
  }
  if (loads.length + 3 > MAX_REGIONS || reduces.length > REG / 2 || stores.length > REG) return undefined;
  const full = Math.floor(n / CHUNK);
  const rest = n - full * CHUNK;
  const funcs = [{ name: 'fin', params: 0, body: vectorFin(k, order, scope, reduces, loads.length) }];
  const vk: LoopKernel = { ...k, vars: [] };
  if (full > 0) funcs.push({ name: 'run', params: 2, body: rowsBody(vk, CHUNK, false, order, scope, loads, true) });
  if (rest > 0) funcs.push({ name: 'tail', params: 2, body: rowsBody(vk, rest, false, order, scope, loads, true) });
  const form = { form: 'vector', rows: n, cols: rest, loads, stores } as const;
  return ownMemoryPlan(k, reduces, funcs, { ...form, ops: reduces.map((r) => r.op) });
}

/**
 * The plan of a columns or vector form: its module over the tier's own memory (plain, not
 * shared: their calls are not split over threads), an accumulator region per fold, one value per
 * output element.
 */
function ownMemoryPlan(
  k: LoopKernel,
  reduces: readonly Reduce[],
  funcs: Parameters<typeof moduleBytes>[0],
  p: Pick<RedPlan, 'form' | 'rows' | 'cols' | 'loads' | 'stores' | 'outer' | 'ops'>,
): RedPlan {
  return {
    ...p,
    elements: false,
    accs: reduces.length,
    bytes: moduleBytes(funcs, true),
    shared: false,
    label: k.label,
  };
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
  readonly par?: (
    lo: number,
    hi: number,
    ins: readonly Float32Array[],
    outs: readonly Float32Array[],
    layout: readonly number[],
    gap?: number,
  ) => void;
}

let memory: WasmMemory | undefined;
let view: Float32Array | undefined;
let view64: Float64Array | undefined;
const modules = new Map<string, number>();
const kernels: RedKernel[] = [];

const recipes: TierRecipe[] = [];
/** What kernel `id` was compiled from (the compile cache on disk stores it). */
export function redRecipe(id: number): TierRecipe | undefined {
  return recipes[id];
}
/** The id of the kernel compiled from `r` in this process. */
export function redKernelFrom(r: TierRecipe): number {
  return r.shared ? redSharedKernelId(r.bytes, r.regions) : redKernelId(r.bytes);
}

/** The id of the kernel compiled from `bytes` (once per process; generated code calls rt.red(id)). */
export function redKernelId(bytes: Uint8Array): number {
  const key = Array.from(bytes, (x) => String.fromCharCode(x)).join('');
  let id = modules.get(key);
  if (id === undefined) {
    memory ??= new WA!.Memory({ initial: PAGES, maximum: PAGES });
    view ??= new Float32Array(memory.buffer);
    const inst = new WA!.Instance(new WA!.Module(bytes) as WasmModule, { env: { mem: memory } });
    id = kernels.length;
    recipes[id] = { bytes, shared: false, regions: 0 };
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
    recipes[id] = { bytes, shared: true, regions };
    kernels.push({
      run: ek.run,
      get mem() {
        return ek.mem;
      },
      par: (lo, hi, ins, outs, layout, gap) => parallelRows(ek.sid!, lo, hi, ins, outs, layout, gap),
    });
    modules.set(key, id);
  }
  return id;
}

/**
 * Rows [lo, hi) of a shared rows kernel, in passes of up to PASS_BLOCKS blocks of `per` rows: each
 * block's rows copied into a block of the shared memory of its own, the blocks computed by this
 * thread and the workers (claimed one at a time: every row is computed by the same code whichever
 * thread takes it, so the results are the same with 1 or N threads), the results copied out.
 * Passes alternate between two halves of the memory: while the workers compute pass q in one,
 * the calling thread copies pass q - 1's results out of the other and pass q + 1's rows in, then
 * takes what blocks of pass q are left (XNNPACK's pthreadpool has the caller work beside the pool
 * the same way; the copies are this tier's own cost, so they overlap the compute).
 * layout: L, per, elements (1 or 0), then (row stride, offset) of each input and each output.
 */
function parallelRows(
  sid: number,
  lo: number,
  hi: number,
  ins: readonly Float32Array[],
  outs: readonly Float32Array[],
  layout: readonly number[],
  gap = 0,
): void {
  const [L, per, elements] = layout as [number, number, number];
  const blockFloats = (ins.length + gap + outs.length) * REG;
  const row = (k: number) => layout[3 + 2 * k]!;
  const off = (k: number) => layout[4 + 2 * k]!;
  const passRows = PASS_BLOCKS * per;
  const passes = Math.ceil((hi - lo) / passRows);
  const halfFloats = Math.min(PASS_BLOCKS, Math.ceil((hi - lo) / per)) * blockFloats;
  const m = sharedMem((passes > 1 ? 2 : 1) * halfFloats * 4);
  const span = (q: number) => [lo + q * passRows, Math.min(hi, lo + (q + 1) * passRows)] as const;
  // visit(r0, r1, b) for each block of pass q: rows r0 .. r1 - 1, at float b of the memory (its half)
  const eachBlock = (q: number, visit: (r0: number, r1: number, b: number) => void) => {
    const [p0, p1] = span(q);
    const h = (q & 1) * halfFloats;
    for (let r0 = p0, b = h; r0 < p1; r0 += per, b += blockFloats) visit(r0, Math.min(p1, r0 + per), b);
  };
  const copyIn = (q: number) =>
    eachBlock(q, (r0, r1, b) => {
      ins.forEach((a, j) => {
        const o = b + j * REG,
          s = row(j),
          f = off(j);
        if (s === -1) m.set(a.subarray(r0 + f, r1 + f), o);
        else if (s === L) m.set(a.subarray(r0 * L + f, r1 * L + f), o);
        else for (let r = r0; r < r1; r++) m.set(a.subarray(r * s + f, r * s + f + L), o + (r - r0) * L);
      });
    });
  const copyOut = (q: number) =>
    eachBlock(q, (r0, r1, b) => {
      outs.forEach((a, j) => {
        const k = ins.length + j,
          o = b + (k + gap) * REG,
          s = row(k),
          f = off(k);
        if (elements === 0) a.set(m.subarray(o, o + r1 - r0), r0 + f);
        else if (s === L) a.set(m.subarray(o, o + (r1 - r0) * L), r0 * L + f);
        else for (let r = r0; r < r1; r++) a.set(m.subarray(o + (r - r0) * L, o + (r - r0 + 1) * L), r * s + f);
      });
    });
  copyIn(0);
  for (let q = 0; q < passes; q++) {
    const [p0, p1] = span(q);
    const blocks = Math.ceil((p1 - p0) / per);
    // the other half: pass q - 1's results out before pass q + 1's rows overwrite them
    const during =
      passes === 1
        ? undefined
        : () => {
            if (q > 0) copyOut(q - 1);
            if (q + 1 < passes) copyIn(q + 1);
          };
    runBlocks(sid, blocks, blockFloats * 4, per, p1 - p0 - (blocks - 1) * per, (q & 1) * halfFloats * 4, during);
  }
  copyOut(passes - 1);
}

/** The kernel with this id (runtime helper `rt.red`). */
export function redKernel(id: number): RedKernel {
  return kernels[id]!;
}

/** The JavaScript side of a reduction kernel: same parameters as renderLoopKernel's function. */
export function renderReduce(
  p: RedPlan,
  bufName: (id: number) => string,
): { source: string; buffers: number[]; rows?: number } {
  const id = p.shared
    ? redSharedKernelId(p.bytes, p.loads.length + (p.gap ?? 0) + p.stores.length)
    : redKernelId(p.bytes);
  const buffers = [...new Set([...p.loads.map((l) => l.buf), ...p.stores.map((s) => s.buf)])].sort((a, c) => a - c);
  const at = (x: string, off: number) => (off === 0 ? x : `${x} + ${off}`);
  const label = p.label.replace(/[^\w,. -]/g, '');
  if (p.form === 'vector') {
    const n = p.rows;
    const full = n - p.cols;
    const acc = (i: number) => `s${i}`;
    const ops = p.ops!;
    const partial = (p.loads.length * REG) / 2; // float64 index of the partials region
    const copy = (s: string, e: string) =>
      p.loads.map((l, j) => `    m.set(${bufName(l.buf)}.subarray(${at(s, l.off)}, ${at(e, l.off)}), ${j * REG});`);
    const lines = [
      `  const w = rt.red(${id});`,
      '  const m = w.mem, m64 = w.mem64;',
      ...ops.map((o, i) => `  let ${acc(i)} = ${literal(REDUCE_INIT[o])};`),
      ...(full > 0
        ? [
            `  for (let s = 0; s < ${full}; s += ${CHUNK}) {`,
            ...copy('s', `s + ${CHUNK}`),
            '    w.run(1, 0);',
            ...ops.map((o, i) => `    ${foldCode(o, acc(i), `m64[${partial + i}]`)}`),
            '  }',
          ]
        : []),
      ...(p.cols > 0
        ? [
            '  {',
            ...copy(String(full), String(n)),
            '    w.tail(1, 0);',
            ...ops.map((o, i) => `    ${foldCode(o, acc(i), `m64[${partial + i}]`)}`),
            '  }',
          ]
        : []),
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
    const copyIn = p.loads.map((l, j) =>
      l.row === -1
        ? `    m.set(${bufName(l.buf)}.subarray(${at('r0', l.off)}, ${at('r1', l.off)}), ${j * REG});`
        : l.row === L
          ? `    m.set(${bufName(l.buf)}.subarray(${rowAt(l, 'r0')}, ${rowAt(l, 'r1')}), ${j * REG});`
          : `    for (let r = r0, o = ${j * REG}; r < r1; r++, o += ${L}) m.set(${bufName(l.buf)}.subarray(${rowAt(l, 'r')}, ${rowAt(l, 'r')} + ${L}), o);`,
    );
    const gap = p.gap ?? 0;
    const copyOut = p.stores.map((x, j) => {
      const o = (p.loads.length + gap + j) * REG;
      if (!p.elements) return `    ${bufName(x.buf)}.set(m.subarray(${o}, ${o} + r1 - r0), ${at('r0', x.off)});`;
      return x.row === L
        ? `    ${bufName(x.buf)}.set(m.subarray(${o}, ${o} + (r1 - r0) * ${L}), ${rowAt(x, 'r0')});`
        : `    for (let r = r0, o = ${o}; r < r1; r++, o += ${L}) ${bufName(x.buf)}.set(m.subarray(o, o + ${L}), ${rowAt(x, 'r')});`;
    });
    const layout = [L, per, p.elements ? 1 : 0, ...[...p.loads, ...p.stores].flatMap((x) => [x.row, x.off])];
    const lines = [
      `  const w = rt.red(${id});`,
      ...(p.shared
        ? [
            `  if (hi - lo >= ${Math.ceil(PARALLEL_MIN_ELEMENTS / L)}) { w.par(lo, hi, [${p.loads.map((l) => bufName(l.buf)).join(', ')}], [${p.stores.map((x) => bufName(x.buf)).join(', ')}], [${layout.join(', ')}]${gap > 0 ? `, ${gap}` : ''}); return; }`,
          ]
        : []),
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
  const atR = (x: string, r: RedRegion) =>
    r.outer ? `${x} + a * ${r.outer}${r.off !== 0 ? ` + ${r.off}` : ''}` : at(x, r.off);
  const body = [
    `  for (let c0 = 0; c0 < ${C}; c0 += ${COL_BLOCK}) {`,
    `    const c1 = ${C} < c0 + ${COL_BLOCK} ? ${C} : c0 + ${COL_BLOCK};`,
    '    const cw = c1 - c0;',
    `    const per = Math.floor(${CHUNK} / cw);`,
    '    w.run(0, 0, cw);',
    `    for (let r0 = 0; r0 < ${R}; r0 += per) {`,
    `      const r1 = ${R} < r0 + per ? ${R} : r0 + per;`,
    ...p.loads
      .map((l, j) =>
        l.row === 0
          ? ''
          : l.row === C
            ? `      if (cw === ${C}) m.set(${bufName(l.buf)}.subarray(${atR(`r0 * ${C}`, l)}, ${atR(`r1 * ${C}`, l)}), ${j * REG});\n      else for (let r = r0, o = ${j * REG}; r < r1; r++, o += cw) m.set(${bufName(l.buf)}.subarray(${atR(`r * ${l.row} + c0`, l)}, ${atR(`r * ${l.row} + c1`, l)}), o);`
            : `      for (let r = r0, o = ${j * REG}; r < r1; r++, o += cw) m.set(${bufName(l.buf)}.subarray(${atR(`r * ${l.row} + c0`, l)}, ${atR(`r * ${l.row} + c1`, l)}), o);`,
      )
      .filter((x) => x !== ''),
    '      w.run(1, r1 - r0, cw);',
    '    }',
    ...p.loads.flatMap((l, j) =>
      l.row === 0 ? [`    m.set(${bufName(l.buf)}.subarray(${atR('c0', l)}, ${atR('c1', l)}), ${j * REG});`] : [],
    ),
    '    w.run(2, 0, cw);',
    ...p.stores.map(
      (x, j) =>
        `    ${bufName(x.buf)}.set(m.subarray(${(p.loads.length + j) * REG}, ${(p.loads.length + j) * REG} + cw), ${atR('c0', x)});`,
    ),
    '  }',
  ];
  const lines = [
    `  const w = rt.red(${id});`,
    '  const m = w.mem;',
    ...(p.outer !== undefined
      ? ['  for (let a = lo; a < hi; a++) {', ...body.map((l) => ind + l.replace(/\n {6}/g, `\n${ind}      `)), '  }']
      : body),
  ];
  const params = [...buffers.map(bufName), ...(p.outer !== undefined ? ['lo', 'hi'] : [])];
  const what = p.outer !== undefined ? `${p.outer} x ${R} rows of ${C}` : `${R} rows of ${C}`;
  const source = `function k(${params.join(', ')}) { // WebAssembly SIMD column reduction, ${what}: ${label}\n${lines.join('\n')}\n}`;
  return p.outer !== undefined ? { source, buffers, rows: p.outer } : { source, buffers };
}
