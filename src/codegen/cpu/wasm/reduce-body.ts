// The SIMD reduction tier's memory layout, plan records and shared emitters (reduce.ts plans a
// kernel and runs it), with the column form's loop body (columnsBody: folds across rows,
// vectorised along the kept axis) and the vector form's last step (vectorFin). The row form's
// body is reduce-rows.ts.
import { IExpr, type Var } from '../../kernel/index-expr.js';
import type { Expr, ReduceOp } from '../../kernel/expr.js';
import { exprOrder, FOLD_ROWS, REDUCE_INIT } from '../../kernel/expr.js';
import type { LoopKernel } from '../../kernel/ir.js';
import { Body, I32, V128, VOID, memarg, op } from './encode.js';
import { CHUNK, Consts, S, constsOf, renderNode, rowAccess } from './elementwise.js';

/** Floats per region of the tier's memory: a chunk and a little slack (a pair read or written past a row's end). */
export const REG = CHUNK + 16;
export const REGB = REG * 4;
export const PAGES = 8;
export const MAX_REGIONS = Math.floor((PAGES * 65536) / REGB);
/** Column reductions take at most this many columns at a time (their float64 accumulators fill a region). */
export const COL_BLOCK = 2048;
export let F32_ELEMENTS = true;
/** Whether rows of elements may run in f32x4 lanes (the elementwise tier's float32 form); tests compare both. */
export function setReduceF32Elements(on: boolean): void {
  F32_ELEMENTS = on;
}
/** Each fold's lane op, from its row's `wasm` spelling (src/ir/ops/reduce.ts); a fold without one stays in JavaScript. */
export const FOLD: Partial<Record<ReduceOp, number>> = Object.fromEntries(
  [...FOLD_ROWS].flatMap(([op, r]) => (r.spelling.wasm === undefined ? [] : [[op, S[r.spelling.wasm]]])),
);
/** Vector opcodes the reductions use beyond S's (after the 0xfd prefix, 5.4.8): loads and stores, then f32x4 and conversions. */
export const extra = {
  load: 0x00,
  load32Splat: 0x09,
  load64Splat: 0x0a,
  store: 0x0b,
  shuffle: 0x0d,
  store32Lane: 0x5a,
  load64Zero: 0x5d,
  f64x2PromoteLow: 0x5f,
  f32x4Min: 0xe8,
  f32x4Max: 0xe9,
  anyTrue: 0x53,
} as const;

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
  /** rows: the loop body (a row pair's module calls two: reduce-pair.ts). */
  readonly body?: Body;
  /** rows: regions between the loads and the stores (a row pair's intermediate: reduce-pair.ts); 0 if absent. */
  readonly gap?: number;
}

/**
 * Row kernels with an approximated function (exp, sigmoid...: compute-bound) of at least this many
 * elements are compiled over the shared memory and their rows split over the threads. Plain
 * folds are bound by the calling thread's copies in and out, which the split does not shorten.
 */
export const PARALLEL_MIN_ELEMENTS = 1 << 20;
/** Chunk blocks per parallel pass (at most 64 regions' worth of each: a few MiB of the shared memory). */
export const PASS_BLOCKS = 64;

export type Reduce = Expr & { t: 'reduce' };
/** Where a node is computed: once per row (or column block's end), per element pair of a reduction's body, per element pair of the rows. */
export type Scope = 'row' | Reduce | 'elem';

/**
 * The vector form's last step: fold i's total (float64 at region loads + 1, byte 8 i), then the
 * values after the folds, stored as float32 (region loads + 2, byte 4 j for store j).
 */
export function vectorFin(
  k: LoopKernel,
  order: readonly Expr[],
  scope: ReadonlyMap<Expr, Scope>,
  reduces: readonly Reduce[],
  nLoads: number,
): Body {
  const nodes = order.filter((e) => e.t !== 'const' && scope.get(e) === 'row');
  const consts = constsOf(order.filter((e) => scope.get(e) === 'row'));
  const loc = new Map<Expr, number>(nodes.map((e, i) => [e, i]));
  const b = new Body(0, [[nodes.length + 4 + consts.size, V128]]);
  const c = new Consts(b, nodes.length + 4);
  for (const x of consts) c.get(x).ops(op.drop);
  const push = (e: Expr) => {
    if (e.t === 'const') c.get(e.v);
    else b.get(loc.get(e)!);
  };
  for (const e of nodes) {
    if (e.t === 'reduce') b.i32(0).v(extra.load64Splat, ...memarg(3, (nLoads + 1) * REGB + 8 * reduces.indexOf(e)));
    else renderNode(b, c, e, push, (x) => loc.get(x)!, nodes.length);
    b.set(loc.get(e)!);
  }
  k.stores.forEach((s, j) => {
    b.i32(0);
    push(s.value);
    b.v(S.demote).v(extra.store32Lane, ...memarg(2, (nLoads + 2) * REGB + 4 * j), 0);
  });
  return b;
}

export function findRegion(
  rs: readonly RedRegion[],
  buf: number,
  acc: { off: number; row: number; outer?: number },
): number {
  return rs.findIndex(
    (l) => l.buf === buf && l.off === acc.off && l.row === acc.row && (l.outer ?? 0) === (acc.outer ?? 0),
  );
}

/** The region of a load (its index among the plan's loads). */
export function loadRegion(loads: readonly RedRegion[], e: Expr & { t: 'load' }, a: Var, b: Var | undefined): number {
  return findRegion(loads, e.buf, rowAccess(e.index, a, b)!);
}

/** Pushes fold(a, b) of two f64x2 values on the stack. */
export function fold(b: Body, o: ReduceOp): void {
  b.v(FOLD[o]!);
}

/**
 * The columns form: run(mode, n, w) over a block of w columns. mode 0: the accumulators (region
 * loads + stores + i, float64) set to the folds' initial values; 1: n rows of w columns (row i of
 * region j at j * REG + i * w floats) folded into them, row by row; 2: the results computed from
 * them and stored (region loads + j, float32).
 */
export function columnsBody(
  k: LoopKernel,
  order: readonly Expr[],
  reduces: readonly Reduce[],
  inBody: ReadonlyMap<Expr, Reduce>,
  loads: readonly RedRegion[],
  nStores: number,
): Body {
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
  const b = new Body(3, [
    [5, I32],
    [computed.length + 4 + consts.size, V128],
  ]);
  const c = new Consts(b, scratch + 4);
  for (const x of consts) c.get(x).ops(op.drop);
  const accOff = (i: number) => (loads.length + nStores + i) * REGB;
  const push = (e: Expr) => {
    if (e.t === 'const') c.get(e.v);
    else b.get(loc.get(e)!);
  };
  // QEND := pairs of columns * 8 (bytes of float32 pairs); a loop over Q = 0, 8, ..., QEND - 8 running `inner`.
  b.get(W).i32(1).ops(op.i32Add).i32(1).ops(op.i32ShrU).i32(3).ops(op.i32Shl).set(QEND);
  const overPairs = (inner: () => void) => {
    b.i32(0).set(Q);
    b.ops(op.block, VOID).get(QEND).ops(op.i32Eqz, op.brIf, 0);
    b.ops(op.loop, VOID);
    inner();
    b.addTo(Q, 8);
    b.get(Q).get(QEND).ops(op.i32LtU, op.brIf, 0, op.end, op.end);
  };
  // Q2 (the accumulators' byte offset) is 2 Q: pushed as Q + Q.
  const accAddr = () => b.get(Q).get(Q).ops(op.i32Add);
  // mode 0
  b.ops(op.block, VOID).get(MODE).ops(op.brIf, 0);
  overPairs(() =>
    reduces.forEach((r, i) => {
      accAddr();
      c.get(REDUCE_INIT[r.op]);
      b.v(extra.store, ...memarg(4, accOff(i)));
    }),
  );
  b.ops(op.return, op.end);
  // mode 1
  b.ops(op.block, VOID).get(MODE).i32(1).ops(op.i32Ne, op.brIf, 0);
  b.ops(op.block, VOID).get(N).ops(op.i32Eqz, op.brIf, 0);
  b.i32(0).set(ROW);
  b.i32(0).set(RB);
  b.ops(op.loop, VOID);
  overPairs(() => {
    b.get(RB).get(Q).ops(op.i32Add).set(A);
    reduces.forEach((r, i) => {
      for (const e of exprOrder([r.body])) {
        if (e.t === 'const') continue;
        if (e.t === 'load')
          b.get(A)
            .v(extra.load64Zero, ...memarg(3, colRegion(e, r.vars[0]!) * REGB))
            .v(S.promote);
        else renderNode(b, c, e, push, (x) => loc.get(x)!, scratch);
        b.set(loc.get(e)!);
      }
      accAddr();
      accAddr();
      b.v(extra.load, ...memarg(4, accOff(i)));
      push(r.body);
      fold(b, r.op);
      b.v(extra.store, ...memarg(4, accOff(i)));
    });
  });
  b.addTo(ROW, 1);
  b.get(RB).get(W).i32(4).ops(op.i32Mul).ops(op.i32Add).set(RB);
  b.get(ROW).get(N).ops(op.i32LtU, op.brIf, 0, op.end, op.end);
  b.ops(op.return, op.end);
  // mode 2
  overPairs(() => {
    for (const e of computed) {
      if (inBody.has(e)) continue;
      if (e.t === 'reduce') {
        accAddr();
        b.v(extra.load, ...memarg(4, accOff(reduces.indexOf(e))));
      } else if (e.t === 'load')
        b.get(Q)
          .v(extra.load64Zero, ...memarg(3, colRegion(e, undefined) * REGB))
          .v(S.promote);
      else renderNode(b, c, e, push, (x) => loc.get(x)!, scratch);
      b.set(loc.get(e)!);
    }
    k.stores.forEach((s, j) => {
      b.get(Q);
      push(s.value);
      b.v(S.demote).v(S.store64Lane, ...memarg(3, (loads.length + j) * REGB), 0);
    });
  });
  return b;
}

/** `x` without its term in `a` (whose coefficient the caller reads with x.coef(a)). */
export function stripVar(x: IExpr, a: Var): IExpr {
  return new IExpr(
    x.terms.filter(([t]) => !(t.kind === 'var' && t.v.id === a.id)),
    x.c,
  );
}
