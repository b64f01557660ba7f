// The rows form of the SIMD reduction tier's loop bodies (reduce.ts plans a kernel and runs it):
// rowsBody folds each row along the contiguous axis (STREAMS independent accumulator chains), then
// computes and stores the row's elements; the float32 forms of its max, min and sum folds and of
// its element loop run four values per instruction.
import type { Var } from '../../kernel/index-expr.js';
import type { Expr } from '../../kernel/expr.js';
import { exprOrder, REDUCE_INIT } from '../../kernel/expr.js';
import type { LoopKernel } from '../../kernel/ir.js';
import { Body, I32, V128, VOID, memarg, op } from './encode.js';
import {
  Consts,
  S,
  consts32Of,
  constsOf,
  f32Exact,
  float32Approximations,
  renderNode,
  rowAccess,
} from './elementwise.js';
import { EXP_NONPOSITIVE_CONSTS, F32, expNonPositive32 } from './approx.js';
import {
  F32_ELEMENTS,
  FOLD,
  REGB,
  extra,
  findRegion,
  fold,
  loadRegion,
  type RedRegion,
  type Reduce,
  type Scope,
} from './reduce-body.js';
/** Accumulators of a row reduction (independent chains of f64x2 folds). */
const STREAMS = 4;
/** i8x16.shuffle's lanes that swap the two f64 lanes. */
const SWAP = [8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7];
/** i8x16.shuffle's lanes that swap neighbouring f32 lanes (0 with 1, 2 with 3). */
const SWAP32 = [4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11];
/** A v128 constant of four float32 lanes. */
const f32x4 = (x: number): number[] => Array.from(new Uint8Array(new Float32Array([x, x, x, x]).buffer));
/** A v128 mask of lane 1 (float64). */
const LANE1 = [0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255];

/**
 * Whether a row kernel's element loop runs in f32x4 lanes: where the elementwise tier's float32
 * form applies (f32Exact) and every row value it reads is a float32 value (then four elements per
 * instruction); and the row values the element loop reads.
 */
function elementForm(
  k: LoopKernel,
  computed: readonly Expr[],
  scope: ReadonlyMap<Expr, Scope>,
  elements: boolean,
): { f32el: boolean; rowRead: Set<Expr> } {
  const elemNodes = computed.filter((x) => scope.get(x) === 'elem');
  const rowRead = new Set<Expr>();
  for (const e of elemNodes)
    for (const x of e.t === 'op' || e.t === 'call' ? e.args : e.t === 'cast' ? [e.x] : [])
      if (scope.get(x) === 'row' && x.t !== 'const') rowRead.add(x);
  for (const st of k.stores) if (scope.get(st.value) === 'row' && st.value.t !== 'const') rowRead.add(st.value);
  const float32Value = (e: Expr) =>
    (e.t === 'cast' && e.dtype === 'float32') ||
    e.t === 'load' ||
    (e.t === 'reduce' && (e.op === 'max' || e.op === 'min') && e.body.t === 'load');
  const f32el =
    F32_ELEMENTS &&
    elements &&
    elemNodes.length > 0 &&
    [...rowRead].every(float32Value) &&
    f32Exact(
      exprOrder(k.stores.map((x) => x.value)).filter((x) => x.t === 'const' || scope.get(x) === 'elem'),
      k.stores.map((x) => x.value),
    );
  return { f32el, rowRead };
}

/**
 * Whether `e` is exp(x - max) with x an element of a row and max that row's maximum (a softmax's
 * exp, attention's over its scaled and masked row): its argument is then at most 0, or NaN
 * (expNonPositive32).
 */
function exceedsNone(e: Expr, loads: readonly RedRegion[], v: Var, u: Var): boolean {
  if (!(e.t === 'op' && e.op === 'exp') && !(e.t === 'call' && e.name === 'exp')) return false;
  let a = e.args[0]!;
  if (a.t === 'cast' && a.dtype === 'float32') a = a.x;
  if (a.t !== 'op' || a.op !== 'sub') return false;
  const [x, m] = a.args as [Expr, Expr];
  if (x.t !== 'load' || m.t !== 'reduce' || m.op !== 'max' || m.body.t !== 'load' || m.body.buf !== x.buf) return false;
  const here = loadRegion(loads, x, v, u);
  return here >= 0 && here === loadRegion(loads, m.body, m.vars[0]!, u);
}

/** rowsBody's locals that its fold helpers read: the body, its float64 constants, the row length, the accumulators, the streams' scratch, the lane-1 mask. */
interface RowFolds {
  readonly b: Body;
  readonly c: Consts;
  readonly L: number;
  readonly accBase: number;
  readonly streamBase: number;
  readonly perStream: number;
  readonly maskLocal: number;
}
/** rowsBody's i32 local holding the byte address of the current group of element vectors. */
const ROW_A = 5;

/** `n` visits of `width` bytes from rowsBody's RB: a loop over groups of STREAMS (A at each group's start), then the rest; returns how many the rest took. */
function streamLoop(b: Body, n: number, width: number, visit: (st: number, off: number) => void): number {
  const [RB, J, A] = [3, 4, ROW_A];
  const it = Math.floor(n / STREAMS);
  if (it > 0) {
    b.i32(0).set(J);
    b.ops(op.loop, VOID);
    b.get(RB).get(J).ops(op.i32Add).set(A);
    for (let st = 0; st < STREAMS; st++) visit(st, width * st);
    b.addTo(J, width * STREAMS);
    b.get(J)
      .i32(it * STREAMS * width)
      .ops(op.i32LtU, op.brIf, 0, op.end);
  }
  b.get(RB)
    .i32(it * STREAMS * width)
    .ops(op.i32Add)
    .set(A);
  const rest = n - it * STREAMS;
  for (let q = 0; q < rest; q++) visit(q, width * q);
  return rest;
}

/** Pushes the fold `f` (of the two values on the stack) of the STREAMS accumulators at accBase, then of its two f64 halves: the total, in both halves. */
function foldStreams(b: Body, accBase: number, f: () => void): void {
  b.get(accBase).get(accBase + 1);
  f();
  b.get(accBase + 2).get(accBase + 3);
  f();
  f();
  b.set(accBase);
  b.get(accBase)
    .get(accBase)
    .get(accBase)
    .v(extra.shuffle, ...SWAP);
  f();
}

// max or min over the row's float32 values at region byte offset `reg`, into every lane of accBase (f32x4).
// `exact`: f32x4.max/min (IEEE maximum: NaN propagates, +0 beats -0; several x64 instructions
// each); else pmax/pmin (one instruction: a < b ? b : a), which agree with them except on NaN
// and on zeros of both signs: the fast pass also adds each value into a NaN sentinel per stream
// (NaN if any value was NaN; also if +Infinity and -Infinity both occur, which only costs the
// recheck), and a row whose sentinel is NaN or whose value is a zero is folded again exactly
// (XNNPACK's rmax kernels fold with pmax; the recheck keeps the reference's NaN and signed-zero
// rules).
function foldMaxMin32(x: RowFolds, o: 'max' | 'min', reg: number, exact: boolean): void {
  const { b, L, accBase, streamBase } = x;
  const A = ROW_A;
  const init = (i: number) => {
    b.v(S.v128Const, ...f32x4(REDUCE_INIT[o])).set(accBase + i);
  };
  const f = () =>
    b.v(exact ? (o === 'max' ? extra.f32x4Max : extra.f32x4Min) : o === 'max' ? F32['pmax']! : F32['pmin']!);
  // stream i's NaN sentinel and its copy of the value: its scratch locals (free while a row's folds run)
  const NAN = (i: number) => streamBase + i * x.perStream;
  for (let i = 0; i < STREAMS; i++) init(i);
  if (!exact) for (let i = 0; i < STREAMS; i++) b.vzero().set(NAN(i));
  const fold1 = (i: number) => {
    if (exact) {
      f();
      b.set(accBase + i);
      return;
    }
    // stack: acc, x; keep x for the sentinel
    b.tee(NAN(i) + 1);
    f();
    b.set(accBase + i);
    b.get(NAN(i))
      .get(NAN(i) + 1)
      .v(F32['add']!)
      .set(NAN(i));
  };
  const at = (i: number, off: number) => {
    b.get(accBase + i)
      .get(A)
      .v(extra.load, ...memarg(4, reg + off));
    fold1(i);
  };
  const rest = streamLoop(b, L >> 2, 16, at);
  if (L % 4 !== 0) {
    // the last L mod 4 values; the lanes past the row's end take the fold's initial value
    const keep = L % 4;
    b.get(accBase)
      .v(S.v128Const, ...f32x4(REDUCE_INIT[o]))
      .get(A)
      .v(extra.load, ...memarg(4, reg + 16 * rest));
    b.v(S.v128Const, ...Array.from({ length: 16 }, (_, i) => (i >= 4 * keep ? 255 : 0))).v(S.bitselect);
    fold1(0);
  }
  foldStreams(b, accBase, f);
  b.set(accBase);
  b.get(accBase)
    .get(accBase)
    .get(accBase)
    .v(extra.shuffle, ...SWAP32);
  f();
  b.set(accBase);
  if (exact) return;
  b.get(NAN(0)).get(NAN(1)).v(F32['add']!).get(NAN(2)).get(NAN(3)).v(F32['add']!).v(F32['add']!).set(NAN(0));
  b.get(NAN(0))
    .get(NAN(0))
    .v(F32['ne']!)
    .get(accBase)
    .v(S.v128Const, ...f32x4(0))
    .v(F32['eq']!)
    .v(S.or)
    .v(extra.anyTrue)
    .ops(op.if, VOID);
  foldMaxMin32(x, o, reg, true);
  b.ops(op.end);
}

// The float64 sum of a row's float32 terms, pushed (both lanes): `value(st, off)` leaves the four
// terms at element byte offset off (from A; stream st's locals free) in the local it returns;
// its two halves promoted, element pair i (elements 2i, 2i + 1) into
// accumulator i mod 4 as the pair form folds it, so each accumulator adds the same terms in the
// same order and the sum is the pair form's bit for bit (lanes past the row's end add the
// initial 0 only where the pair form does: the odd last element's pair).
function foldSum32(x: RowFolds, value: (st: number, off: number) => number): void {
  const { b, c, L, accBase, maskLocal } = x;
  const HIGH = [8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15];
  for (let i = 0; i < STREAMS; i++) {
    c.get(REDUCE_INIT['sum']);
    b.set(accBase + i);
  }
  const at = (st: number, off: number, lanes: number) => {
    // low pair: elements 0, 1 of the quad (pair 2 st of the group), high pair: 2, 3 (pair 2 st + 1)
    const acc = (2 * st) % STREAMS;
    const Q = value(st, off);
    // low
    b.get(accBase + acc);
    if (lanes === 1) c.get(REDUCE_INIT['sum']);
    b.get(Q).v(extra.f64x2PromoteLow);
    if (lanes === 1) b.get(maskLocal).v(S.bitselect);
    b.v(FOLD['sum']!).set(accBase + acc);
    if (lanes <= 2) return;
    // high
    b.get(accBase + acc + 1);
    if (lanes === 3) c.get(REDUCE_INIT['sum']);
    b.get(Q)
      .get(Q)
      .v(extra.shuffle, ...HIGH)
      .v(extra.f64x2PromoteLow);
    if (lanes === 3) b.get(maskLocal).v(S.bitselect);
    b.v(FOLD['sum']!).set(accBase + acc + 1);
  };
  const rest = streamLoop(b, L >> 2, 16, (st, off) => at(st, off, 4));
  if (L % 4 !== 0) at(rest, 16 * rest, L % 4);
  foldStreams(b, accBase, () => b.v(FOLD['sum']!));
}

/**
 * The sums whose terms run in the float32 form (rowsBody's sumBody32), with the nodes of each
 * term: a float32 value (a cast to float32 at its root) computed from the sum's own elements and
 * constants alone, in the float32 form's ops (f32Exact). Not with setReduceF32Elements(false).
 */
function sumBodies32(order: readonly Expr[], scope: ReadonlyMap<Expr, Scope>): Map<Reduce, Expr[]> {
  const out = new Map<Reduce, Expr[]>();
  if (!F32_ELEMENTS) return out;
  for (const e of order) {
    if (e.t !== 'reduce' || e.op !== 'sum' || e.body.t !== 'cast' || e.body.dtype !== 'float32') continue;
    const all = exprOrder([e.body]);
    const nodes = all.filter((x) => x.t !== 'const');
    if (!nodes.every((x) => scope.get(x) === e) || !f32Exact(all, [e.body])) continue;
    out.set(e as Reduce, nodes);
  }
  return out;
}

/** rowsBody's state that its float32 element loop reads (elementRows32). */
interface ElementRows {
  readonly b: Body;
  readonly c32: Consts;
  readonly k: LoopKernel;
  readonly L: number;
  readonly u: Var;
  readonly v: Var;
  readonly loads: readonly RedRegion[];
  readonly scope: ReadonlyMap<Expr, Scope>;
  readonly computed: readonly Expr[];
  readonly row32: ReadonlyMap<Expr, number>;
  readonly rowLocal: ReadonlyMap<Expr, number>;
  readonly local: (st: number) => (e: Expr) => number;
  readonly scratch: (st: number) => number;
  readonly render32: (e: Expr, loc: (e: Expr) => number, st: number) => void;
  readonly nonPositive: ReadonlySet<Expr>;
  readonly divisors: readonly Expr[];
  readonly recipBase: number;
}

/** rowsBody's element loop in the float32 form: row values as float32 splats, then quads of elements (the last one's lanes past the row stored one by one). */
function elementRows32(x: ElementRows): void {
  const {
    b,
    c32,
    k,
    L,
    u,
    v,
    loads,
    scope,
    computed,
    row32,
    rowLocal,
    local,
    scratch,
    render32,
    nonPositive,
    divisors,
    recipBase,
  } = x;
  const A = ROW_A;
  for (const [e, l] of row32)
    b.get(rowLocal.get(e)!)
      .v(S.demote)
      .set(l)
      .get(l)
      .get(l)
      .v(extra.shuffle, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7)
      .set(l);
  const recip = new Map<Expr, number>(divisors.map((d, i) => [d, recipBase + i]));
  const loc32 = (st: number) => {
    const m = local(st);
    return (e: Expr) => row32.get(e) ?? m(e);
  };
  const quad = (st: number, off: number, lanes: number, byRecip: boolean) => {
    const loc = loc32(st);
    for (const e of computed.filter((x) => scope.get(x) === 'elem')) {
      if (e.t === 'load') b.get(A).v(extra.load, ...memarg(0, loadRegion(loads, e, v, u) * REGB + off));
      else if (byRecip && e.t === 'op' && e.op === 'div' && recip.has(e.args[1]!))
        b.get(loc(e.args[0]!)).get(recip.get(e.args[1]!)!).v(F32['mul']!);
      else if (nonPositive.has(e))
        expNonPositive32(b, c32, loc((e as Expr & { t: 'op' | 'call' }).args[0]!), scratch(st));
      else render32(e, loc, st);
      b.set(loc(e));
    }
    k.stores.forEach((s, j) => {
      const at = (loads.length + j) * REGB + off;
      const val = () => {
        if (s.value.t === 'const') c32.get(s.value.v);
        else b.get(loc(s.value));
      };
      if (lanes === 4) {
        b.get(A);
        val();
        b.v(extra.store, ...memarg(0, at));
        return;
      }
      for (let l = 0; l < lanes; l++) {
        b.get(A);
        val();
        b.v(extra.store32Lane, ...memarg(2, at + 4 * l), l);
      }
    });
  };
  const elementLoop = (byRecip: boolean) => {
    const rest = streamLoop(b, L >> 2, 16, (st, off) => quad(st, off, 4, byRecip));
    if (L % 4 !== 0) quad(rest, 16 * rest, L % 4, byRecip);
  };
  if (divisors.length === 0) elementLoop(false);
  else {
    rowReciprocals(
      b,
      c32,
      divisors.map((d) => row32.get(d)!),
      recipBase,
      scratch(0),
    );
    b.get(recipBase + divisors.length)
      .v(extra.anyTrue)
      .ops(op.if, VOID);
    elementLoop(false);
    b.ops(op.else);
    elementLoop(true);
    b.ops(op.end);
  }
}

/** The float32 constants rowReciprocals reads. */
const RECIPROCAL_CONSTS = [1, 0, 2 ** -126, 2 ** 126, Infinity];

/**
 * A division of an element by a row value, in rowsBody's float32 element loop: a multiplication by
 * the value's float32 reciprocal, made once per row (XNNPACK's, Eigen's and PyTorch's softmax scale
 * by 1/sum; one rounding more than the quotient, docs/numerics.md), in rows whose divisors all
 * have a normal reciprocal: magnitude in [2^-126, 2^126], or 0, Infinity or NaN, whose products
 * give the quotient's value. For each divisor (f32x4 splat at local divisors[i]): its reciprocal
 * into local base + i; then into local base + n (n divisors), lanes set where some divisor's
 * magnitude is in (0, 2^-126) or (2^126, Infinity): those rows divide. `t`: a scratch local.
 */
function rowReciprocals(b: Body, c32: Consts, divisors: readonly number[], base: number, t: number): void {
  const flag = base + divisors.length;
  b.vzero().set(flag);
  divisors.forEach((l, i) => {
    c32.get(1);
    b.get(l)
      .v(F32['div']!)
      .set(base + i);
    b.get(l).v(F32['abs']!).set(t);
    b.get(t);
    c32.get(0).v(F32['gt']!);
    b.get(t);
    c32
      .get(2 ** -126)
      .v(F32['lt']!)
      .v(S.and);
    b.get(t);
    c32.get(2 ** 126).v(F32['gt']!);
    b.get(t);
    c32.get(Infinity).v(F32['lt']!).v(S.and).v(S.or);
    b.get(flag).v(S.or).set(flag);
  });
}

/**
 * The rows form: run(n, base) computes n rows of the chunk block at byte offset base (row i of
 * region j at base + (j * REG + i * L) * 4). Per row: each reduction in dependency order (its accumulators, then the row values
 * that follow from it), then, with output loops [u, v], the row's elements.
 */
export function rowsBody(
  k: LoopKernel,
  L: number,
  elements: boolean,
  order: readonly Expr[],
  scope: ReadonlyMap<Expr, Scope>,
  loads: readonly RedRegion[],
  partials = false,
): Body {
  const u = k.vars[0]!;
  const v = k.vars[1];
  const computed = order.filter((e) => e.t !== 'const');
  const rowNodes = computed.filter((e) => scope.get(e) === 'row');
  const perStream = computed.length + 6; // 6 scratch locals: the float32 form's approximations take 6
  const consts = constsOf(order);
  for (const r of order) if (r.t === 'reduce') consts.add(REDUCE_INIT[r.op]);
  // i32 locals: the arguments, the row, its byte address; 4 and ROW_A: streamLoop's
  const [N, BASE, ROW, RB] = [0, 1, 2, 3];
  const A = ROW_A;
  const vbase = 6;
  const rowLocal = new Map<Expr, number>(rowNodes.map((e, i) => [e, vbase + i]));
  const accBase = vbase + rowNodes.length;
  const streamBase = accBase + STREAMS;
  const maskLocal = streamBase + STREAMS * perStream;
  const { f32el, rowRead } = elementForm(k, computed, scope, elements && !partials);
  const row32 = new Map<Expr, number>([...rowRead].map((e, i) => [e, maskLocal + 1 + i]));
  // row values that divide elements: multiplied by their reciprocals (rowReciprocals)
  const divisors =
    f32el && v !== undefined && float32Approximations()
      ? [...row32.keys()].filter((d) =>
          computed.some((e) => scope.get(e) === 'elem' && e.t === 'op' && e.op === 'div' && e.args[1] === d),
        )
      : [];
  const nonPositive = new Set(
    f32el && v !== undefined && float32Approximations()
      ? computed.filter((e) => scope.get(e) === 'elem' && exceedsNone(e, loads, v, u))
      : [],
  );
  const bodies32 = sumBodies32(order, scope);
  const consts32 = f32el
    ? consts32Of(order.filter((x) => x.t === 'const' || scope.get(x) === 'elem'))
    : new Set<number>();
  if (nonPositive.size > 0) for (const x of EXP_NONPOSITIVE_CONSTS) consts32.add(x);
  if (divisors.length > 0) for (const x of RECIPROCAL_CONSTS) consts32.add(x);
  for (const [, nodes] of bodies32)
    for (const x of consts32Of([...order.filter((y) => y.t === 'const'), ...nodes])) consts32.add(x);
  // every float32 constant is splatted before the row loop (a margin of locals past them: none is expected to be asked for later)
  const C32_LOCALS = f32el || bodies32.size > 0 ? Math.max(64, consts32.size + 16) : 0;
  const b = new Body(2, [
    [4, I32],
    [
      rowNodes.length +
        STREAMS +
        STREAMS * perStream +
        1 +
        row32.size +
        C32_LOCALS +
        consts.size +
        (divisors.length > 0 ? divisors.length + 1 : 0),
      V128,
    ],
  ]);
  const c32 = new Consts(b, maskLocal + 1 + row32.size, true);
  // the divisors' reciprocals, then a flag (rowReciprocals)
  const recipBase = maskLocal + 1 + row32.size + C32_LOCALS + consts.size;
  const c = new Consts(b, maskLocal + 1 + row32.size + C32_LOCALS);
  for (const x of consts) c.get(x).ops(op.drop);
  for (const x of consts32) c32.get(x).ops(op.drop);
  b.v(S.v128Const, ...LANE1).set(maskLocal);
  const local = (st: number) => {
    const m = new Map<Expr, number>(computed.map((e, i) => [e, streamBase + st * perStream + i]));
    return (e: Expr) => rowLocal.get(e) ?? m.get(e)!;
  };
  const push = (loc: (e: Expr) => number) => (e: Expr) => {
    if (e.t === 'const') c.get(e.v);
    else b.get(loc(e));
  };
  // stream st's scratch locals (past its nodes' own)
  const scratch = (st: number) => streamBase + st * perStream + computed.length;
  // node e in the float32 form (four lanes), its operands at loc
  const render32 = (e: Expr, loc: (e: Expr) => number, st: number) =>
    renderNode(
      b,
      c,
      e,
      (x) => {
        if (x.t === 'const') c32.get(x.v);
        else b.get(loc(x));
      },
      loc,
      scratch(st),
      c32,
    );
  // The nodes of one scope at stream st, for the element pair at byte A + off.
  const nodesAt = (nodes: readonly Expr[], st: number, off: number, inner: Var) => {
    const loc = local(st);
    for (const e of nodes) {
      if (e.t === 'load')
        b.get(A)
          .v(extra.load64Zero, ...memarg(3, loadRegion(loads, e, inner, u) * REGB + off))
          .v(S.promote);
      else renderNode(b, c, e, push(loc), loc, scratch(st));
      b.set(loc(e));
    }
  };
  // A pass over a row's L elements: `visit(st, off)` for each pair (streams of STREAMS pairs, then the rest), `tail(st, off)` for an odd last element.
  const streams = (n: number, width: number, visit: (st: number, off: number) => void): number =>
    streamLoop(b, n, width, visit);
  const pass = (visit: (st: number, off: number) => void, tail: (st: number, off: number) => void) => {
    const rest = streams(L >> 1, 8, visit);
    if (L % 2 === 1) tail(rest, 8 * rest);
  };
  const rowFolds: RowFolds = { b, c, L, accBase, streamBase, perStream, maskLocal };
  const maxMin32 = (o: 'max' | 'min', reg: number, exact: boolean) => foldMaxMin32(rowFolds, o, reg, exact);
  const sum32 = (reg: number) =>
    foldSum32(rowFolds, (st, off) => {
      const Q = streamBase + st * perStream;
      b.get(ROW_A)
        .v(extra.load, ...memarg(0, reg + off))
        .set(Q);
      return Q;
    });
  // a sum whose terms are float32 values computed from the row's elements alone (log-softmax's
  // exp of x - max): the terms four at a time in the float32 form (its approximations within
  // their float32 bounds, as docs/numerics.md allows a sum's terms), then summed as sum32 does
  const sumBody32 = (e: Reduce) => {
    const rv = e.vars[0]!;
    const nodes = bodies32.get(e)!;
    foldSum32(rowFolds, (st, off) => {
      const loc = local(st);
      for (const x of nodes) {
        if (x.t === 'load') b.get(ROW_A).v(extra.load, ...memarg(0, loadRegion(loads, x, rv, u) * REGB + off));
        else render32(x, loc, st);
        b.set(loc(x));
      }
      return loc(e.body);
    });
  };
  // partials: fold i's float64 value of row r at region loads, byte (r * folds + i) * 8
  const reduceList = order.filter((x) => x.t === 'reduce');
  const storePartial = (e: Expr) => {
    if (!partials) return;
    b.get(BASE)
      .get(ROW)
      .i32(8 * reduceList.length)
      .ops(op.i32Mul)
      .ops(op.i32Add)
      .get(rowLocal.get(e)!);
    b.v(S.store64Lane, ...memarg(3, loads.length * REGB + 8 * (reduceList as readonly Expr[]).indexOf(e)), 0);
  };
  b.ops(op.block, VOID).get(N).ops(op.i32Eqz, op.brIf, 0);
  b.i32(0).set(ROW);
  b.get(BASE).set(RB);
  b.ops(op.loop, VOID);
  const rowOut = (e: Expr) => {
    if (e.t === 'const') c.get(e.v);
    else b.get(rowLocal.get(e)!);
  };
  for (const e of rowNodes) {
    if (e.t === 'load') {
      // a value per row: v128.load32_splat, then promoted
      b.get(BASE)
        .get(ROW)
        .i32(4)
        .ops(op.i32Mul)
        .ops(op.i32Add)
        .v(
          extra.load32Splat,
          ...memarg(2, findRegion(loads, e.buf, { off: rowAccess(e.index, u, undefined)!.off, row: -1 }) * REGB),
        )
        .v(extra.f64x2PromoteLow);
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
      maxMin32(e.op, loadRegion(loads, e.body, rv, u) * REGB, false);
      b.get(accBase).v(extra.f64x2PromoteLow).set(rowLocal.get(e)!);
      storePartial(e);
      continue;
    }
    if (e.op === 'sum' && e.body.t === 'load' && typeof scope.get(e.body) === 'object') {
      sum32(loadRegion(loads, e.body, rv, u) * REGB);
      b.set(rowLocal.get(e)!);
      storePartial(e);
      continue;
    }
    if (bodies32.has(e)) {
      sumBody32(e);
      b.set(rowLocal.get(e)!);
      storePartial(e);
      continue;
    }
    const body = exprOrder([e.body]).filter((x) => x.t !== 'const' && scope.get(x) !== 'row');
    const val = (st: number) => (e.body.t === 'const' ? c.get(e.body.v) : b.get(local(st)(e.body)));
    for (let st = 0; st < STREAMS; st++) {
      c.get(REDUCE_INIT[e.op]);
      b.set(accBase + st);
    }
    pass(
      (st, off) => {
        nodesAt(body, st, off, rv);
        b.get(accBase + st);
        val(st);
        fold(b, e.op);
        b.set(accBase + st);
      },
      (st, off) => {
        nodesAt(body, st, off, rv);
        b.get(accBase + st);
        c.get(REDUCE_INIT[e.op]);
        val(st);
        b.get(maskLocal).v(S.bitselect);
        fold(b, e.op);
        b.set(accBase + st);
      },
    );
    foldStreams(b, accBase, () => fold(b, e.op));
    b.set(rowLocal.get(e)!);
    storePartial(e);
  }
  if (partials) {
    // nothing more: the partial folds are the results
  } else if (f32el && v !== undefined) {
    elementRows32({
      b,
      c32,
      k,
      L,
      u,
      v,
      loads,
      scope,
      computed,
      row32,
      rowLocal,
      local,
      scratch,
      render32,
      nonPositive,
      divisors,
      recipBase,
    });
  } else if (elements && v !== undefined) {
    const elems = computed.filter((x) => scope.get(x) === 'elem');
    const storeAt = (st: number, off: number, lane64: boolean) => {
      const loc = local(st);
      k.stores.forEach((s, j) => {
        b.get(A);
        push(loc)(s.value);
        b.v(S.demote);
        b.v(lane64 ? S.store64Lane : extra.store32Lane, ...memarg(lane64 ? 3 : 2, (loads.length + j) * REGB + off), 0);
      });
    };
    pass(
      (st, off) => {
        nodesAt(elems, st, off, v);
        storeAt(st, off, true);
      },
      (st, off) => {
        nodesAt(elems, st, off, v);
        storeAt(st, off, false);
      },
    );
  } else {
    k.stores.forEach((s, j) => {
      b.get(ROW).i32(4).ops(op.i32Mul).get(BASE).ops(op.i32Add);
      rowOut(s.value);
      b.v(S.demote).v(extra.store32Lane, ...memarg(2, (loads.length + j) * REGB), 0);
    });
  }
  b.addTo(ROW, 1);
  b.addTo(RB, 4 * L);
  b.get(ROW).get(N).ops(op.i32LtU, op.brIf, 0, op.end, op.end);
  return b;
}
