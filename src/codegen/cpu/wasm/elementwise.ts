// The WebAssembly SIMD tier for fused elementwise loops, rendered from the kernel IR: a loop
// kernel that is one contiguous pass over float32 buffers (after collapse.ts) becomes a small
// WebAssembly module whose loop evaluates the kernel's expression tree a vector at a time, in one
// of two forms. Where the reference rounds every arithmetic node to float32 (f32Exact: the usual
// case, each op's value is a float32 tensor) the kernel runs in f32x4 lanes, four elements per
// instruction: float32 +, -, *, /, sqrt are correctly rounded, so they equal the reference's float64
// operation rounded to float32, and the result is bit-identical. Otherwise every node is computed
// as the JavaScript kernel computes it, in f64x2 lanes (float64, rounded to float32 exactly where
// the reference rounds: f32x4.demote then f64x2.promote is Math.fround). In both forms arithmetic,
// comparisons, selects, max/min, abs, sqrt are bit-identical to the reference.
// The exceptions are the functions WebAssembly has no instruction for (approx.ts: the hyperbolic
// tangent, exp, sigmoid and log): vector approximations used only where their result is rounded
// to float32 at once. In the float64 form (APPROX, keyed by function) they are accurate to about
// 3e-15 relative, so the float32 value is within 1 ulp of the reference's (Math.fround of the Math
// function) and equal to it except within 3e-15 of a rounding midpoint; the float32 form computes
// all but log in float32 (APPROX32: within 2, 1 and 2 ulps) and log by APPROX's on each half of
// the vector. The bounds are docs/architecture.md's ("Elementwise approximations";
// test/codegen/simd-elementwise.test.ts).
//
// The loop runs over chunks: the JavaScript wrapper copies CHUNK elements of each input into the
// tier's memory (TypedArray.set, a memcpy), calls the module, and copies the results out; the
// chunks stay in L1/L2 and the tier's memory is a fixed 512 KiB. TensorFlow.js' WebAssembly
// backend (XNNPACK) is the anchor: per-op SIMD loops with polynomial transcendentals; here the
// loop is the whole fused kernel.
//
// With more than one thread configured (../cpu/threads.ts), loops of at least PARALLEL_MIN_ELEMENTS
// are compiled over a shared memory instead and split: each chunk's inputs are
// copied into a block of their own, and the blocks are computed by the calling thread and the
// worker pool (each worker holds an instance of every kernel over the same memory).
import type { IExpr, Var } from '../../kernel/index-expr.js';
import type { Expr, ScalarOp } from '../../kernel/expr.js';
import { handoffMeasured, handoffThreads } from '../handoff.js';
import { KERNEL_ROWS, exprOrder } from '../../kernel/expr.js';
import type { LoopKernel } from '../../kernel/ir.js';
import type { DType } from '../../../ir/dtype.js';
import { elementwiseOps, type ElementwiseOp, type Spelling } from '../../../ir/ops/elementwise.js';

const ROWS: ReadonlyMap<string, ElementwiseOp> = new Map(Object.entries(elementwiseOps));
import {
  Body,
  I32,
  SHARED_MAX_PAGES,
  V128,
  VOID,
  WA,
  memarg,
  moduleBytes,
  op,
  type WasmMemory,
  type WasmModule,
} from './encode.js';
import { APPROX, APPROX32, Consts, F32, S, approxF32, i64x2 } from './approx.js';

export { Consts, S, i64x2 };
import { type EwRun, runHere, threadCount, threadPool } from '../threads.js';
import {
  DEFAULT_STREAMS,
  EW_STREAMS,
  PARALLEL_MIN_ELEMENTS,
  defaultEwSchedule,
  type EwSchedule,
} from './ew-schedule.js';

export { DEFAULT_STREAMS, EW_STREAMS, PARALLEL_MIN_ELEMENTS, defaultEwSchedule, type EwSchedule };

/** Elements per chunk (even: the loop takes two at a time). */
export const CHUNK = 4096;
const PAGES = 8;
const MAX_REGIONS = (PAGES * 65536) / (CHUNK * 4);
/** Loops shorter than this stay JavaScript (copying in and out costs more than it saves). */
export const MIN_ELEMENTS = 8192;
/**
 * The float32 form's threshold (f32Exact): four lanes pay sooner. Measured (CPU time, loaded
 * machine) at 1024 elements: arithmetic 28-36 us in JavaScript against 7-9 us, relu(x*y + 1)*x
 * 10-29 against 7-9, at 2048 an LSTM's gate update 80-107 against 18-21.
 */
export const F32_MIN_ELEMENTS = 1024;

type Lane = NonNullable<Spelling['wasm']>;
/** Lane instructions whose result is a lane mask (all bits set where true). */
const MASKS: ReadonlySet<Lane> = new Set<Lane>(['eq', 'ne', 'lt', 'gt', 'le', 'ge']);
/** The lane instruction of each kernel op whose elementwise row names one (the row's `wasm` spelling). */
const LANE: ReadonlyMap<ScalarOp, Lane> = new Map(
  [...KERNEL_ROWS].flatMap(([op, r]): [ScalarOp, Lane][] =>
    r.spelling.wasm === undefined ? [] : [[op, r.spelling.wasm]],
  ),
);
/** The kernel ops whose lane instruction is a comparison. */
const COMPARE: ReadonlySet<ScalarOp> = new Set([...LANE].filter(([, l]) => MASKS.has(l)).map(([op]) => op));

/**
 * Buffers the tier loads: float32, and small integers and flags, whose values float32 holds
 * exactly (copied in with a conversion, TypedArray.set).
 */
export const LOADED: ReadonlySet<DType> = new Set(['float32', 'bool', 'uint8', 'int8', 'int16']);

/**
 * Where a region of the tier's memory comes from or goes to: element `off + row * r + j` of
 * buffer `buf` for element j of row r (`row` 0 in a one-loop kernel, whose rows are chunks).
 */
export interface EwRegion {
  readonly buf: number;
  readonly off: number;
  readonly row: number;
}

/** What the tier needs of a kernel: its input regions and output regions. */
export interface EwPlan {
  /** Elements in all. */
  readonly n: number;
  /** A kernel of two loops: the inner loop's size (each row is copied in and out on its own); undefined for one loop. */
  readonly cols?: number;
  /** The outer loop's size (two loops). */
  readonly rows?: number;
  readonly loads: readonly EwRegion[];
  readonly stores: readonly EwRegion[];
  readonly bytes: Uint8Array;
  /** Lanes: f32x4 (four elements per instruction, see f32Exact) or f64x2. */
  readonly f32: boolean;
  /** Whether the module imports the tier's shared memory (then long loops are split over threads). */
  readonly shared: boolean;
  readonly label: string;
  /** The schedule it was built with. */
  readonly schedule: EwSchedule;
}

/**
 * `index` = u*row + v + off (unit stride along the inner loop v, any non-negative stride `row`
 * along the outer loop u, 0 for a row read by every row): { off, row }, else undefined.
 */
export function rowAccess(x: IExpr, v: Var, u: Var | undefined): { off: number; row: number } | undefined {
  let unit = false;
  let row = 0;
  for (const [a, k] of x.terms) {
    if (a.kind !== 'var') return undefined;
    if (a.v.id === v.id && k === 1) unit = true;
    else if (u !== undefined && a.v.id === u.id && k > 0) row = k;
    else return undefined;
  }
  return unit ? { off: x.c, row } : undefined;
}

/** Where a load's region is in the tier's memory (its index among the plan's loads). */
function regionOf(loads: readonly EwRegion[], buf: number, acc: { off: number; row: number }): number {
  return loads.findIndex((l) => l.buf === buf && l.off === acc.off && l.row === acc.row);
}

/**
 * How the tier renders a computed node (not a load or constant): 'approx' for the approximated
 * functions (APPROX), 'branch' for selects and comparisons, 'plain' for the other ops and float
 * casts, undefined where the tier has no rendering (then the kernel stays JavaScript).
 */
export function nodeKind(e: Expr): 'approx' | 'branch' | 'plain' | undefined {
  switch (e.t) {
    case 'cast':
      return e.dtype === 'float32' || e.dtype === 'float64' ? 'plain' : undefined;
    case 'op':
      if (approxOf(e) !== undefined) return e.args[0]!.t === 'const' ? undefined : 'approx';
      if (e.op === 'select' || COMPARE.has(e.op)) return 'branch';
      return LANE.has(e.op) ? 'plain' : undefined;
    case 'call':
      return approxOf(e) === undefined || e.args[0]!.t === 'const' ? undefined : 'approx';
    default:
      return undefined;
  }
}

/**
 * The tier's plan for a loop kernel, or undefined where it does not apply (then the kernel is
 * rendered as JavaScript): at least MIN_ELEMENTS elements (F32_MIN_ELEMENTS in the float32 form), loads (LOADED) and float32 or flag
 * stores at unit stride, and only the ops above; at least one approximated function (approx.ts), or a
 * select or comparison (where the tier pays: JavaScript branches on each element's data and
 * mispredicts about half of them on mixed signs, as relu's do, where the tier's bitselect does
 * not branch), or a kernel of the float32 form (f32Exact: arithmetic alone, four lanes, measured
 * about twice as fast as JavaScript with the copies counted; in two lanes it was not). Either one
 * loop, or two whose inner loop is at unit stride in every load and store and at most a chunk
 * long (rows of a matrix, such as an LSTM's gate slices of its pre-activations, row stride
 * 4 x units): then the wrapper copies whole rows in and out, and the module's loop runs over
 * the chunk's rows as one contiguous pass. `always`: arithmetic alone qualifies too (a loop
 * whose input is drawn into the tier's memory, ./philox.ts, where no copy in is saved by JavaScript).
 */
export function planElementwise(
  k: LoopKernel,
  bufDType: (buf: number) => DType,
  always = false,
  tuned?: EwSchedule,
): EwPlan | undefined {
  if (tuned !== undefined && !EW_STREAMS.includes(tuned.streams))
    throw new Error(`internal: the elementwise tier builds ${EW_STREAMS.join(', ')} streams, not ${tuned.streams}`);
  if (!tierOn() || k.vars.length < 1 || k.vars.length > 2) return undefined;
  const v = k.vars[k.vars.length - 1]!;
  const u = k.vars.length === 2 ? k.vars[0]! : undefined;
  const n = v.size * (u?.size ?? 1);
  if (n < F32_MIN_ELEMENTS || (u !== undefined && v.size > CHUNK)) return undefined;
  const loads: EwRegion[] = [];
  const stores: EwRegion[] = [];
  const order = exprOrder(k.stores.map((s) => s.value));
  // Nodes whose value is rounded to float32 at once (a cast's argument, a float32 store's value).
  const roundedParent = new Set<Expr>();
  const approximated: Expr[] = [];
  let branches = false;
  for (const e of order) {
    switch (e.t) {
      case 'const':
        break;
      case 'load': {
        const acc = rowAccess(e.index, v, u);
        if (acc === undefined || !LOADED.has(bufDType(e.buf))) return undefined;
        if (regionOf(loads, e.buf, acc) < 0) loads.push({ buf: e.buf, ...acc });
        break;
      }
      default: {
        const kind = nodeKind(e);
        if (kind === undefined) return undefined;
        if (e.t === 'cast' && e.dtype === 'float32') roundedParent.add(e.x);
        if (kind === 'approx') approximated.push(e);
        if (kind === 'branch') branches = true;
      }
    }
  }
  for (const s of k.stores) {
    if (s.accumulate === true || s.dyn !== undefined) return undefined; // scatters: rows chosen by data
    const acc = rowAccess(s.index, v, u);
    // float32 stores, or bool ones of a comparison (0 or 1, converted as the results are copied out)
    const flag = s.dtype === 'bool' && bufDType(s.buf) === 'bool' && s.value.t === 'op' && COMPARE.has(s.value.op);
    if (
      acc === undefined ||
      (u !== undefined && acc.row < v.size) ||
      !((s.dtype === 'float32' && bufDType(s.buf) === 'float32') || flag)
    )
      return undefined;
    stores.push({ buf: s.buf, ...acc });
    roundedParent.add(s.value);
  }
  // A buffer both read and written (in place) only at the same elements: a chunk's inputs are all
  // copied in before its results are copied out, so a read of another element (a recursion's) would see an old value.
  if (
    loads.some(
      (l) =>
        stores.some((x) => x.buf === l.buf) &&
        !stores.some((x) => x.buf === l.buf && x.off === l.off && x.row === l.row),
    )
  )
    return undefined;
  // The approximations are within their bounds only once rounded to float32.
  if (approximated.some((e) => !roundedParent.has(e)) || loads.length + stores.length > MAX_REGIONS) return undefined;
  const f32 = f32Exact(
    order,
    k.stores.map((s) => s.value),
  );
  if ((approximated.length === 0 && !branches && !always && !f32) || (!f32 && n < MIN_ELEMENTS)) return undefined;

  // Over a shared memory where more than one thread is configured and the loop is long enough to be
  // split over the worker threads (or its tuned schedule splits it); shorter loops keep the private
  // memory, which measured faster.
  const schedule = tuned ?? defaultEwSchedule(n, u !== undefined);
  const shared = u === undefined && sharedTier() && schedule.split;
  const bytes = moduleBytes(
    [{ name: 'run', params: 2, body: loopBody(k, v, u, loads, order, f32, schedule.streams) }],
    shared ? 'shared' : true,
  );
  return {
    n,
    f32,
    ...(u !== undefined ? { cols: v.size, rows: u.size } : {}),
    loads,
    stores,
    bytes,
    shared,
    label: k.label,
    schedule,
  };
}

/** The approximated function a node computes, if it is one of the tier's approximations. */
function approxOf(e: Expr): string | undefined {
  if (e.t === 'op') return Object.hasOwn(APPROX, e.op) ? e.op : undefined;
  // a row's own scalar function, called by the row's name from its template (not a user function of the same name)
  return e.t === 'call' && Object.hasOwn(APPROX, e.name) && e.fn === ROWS.get(e.name)?.scalar ? e.name : undefined;
}

/** The float32 form's constants the nodes of `order` read (their own, 0 and 1, their float32 approximations'), splatted once before a loop. */
export function consts32Of(order: readonly Expr[]): Set<number> {
  const consts = new Set<number>([...order.flatMap((e) => (e.t === 'const' ? [e.v] : [])), 0, 1]);
  for (const e of order) {
    const a = approxOf(e);
    if (F32_APPROX && a !== undefined && Object.hasOwn(APPROX32, a)) for (const x of APPROX32[a]!.consts) consts.add(x);
  }
  return consts;
}

/** The float64 constants the nodes of `order` read (their own, and their approximations'), splatted once before a loop. */
export function constsOf(order: readonly Expr[]): Set<number> {
  const consts = new Set<number>(order.flatMap((e) => (e.t === 'const' ? [e.v] : [])));
  const used = new Set(order.map(approxOf));
  for (const [name, a] of Object.entries(APPROX)) if (used.has(name)) for (const x of a.consts) consts.add(x);
  return consts.add(0).add(1);
}

/**
 * Pushes the f64x2 value of computed node `e` (one nodeKind accepts), its operands pushed by
 * `push` (a local, or a constant); `local(x)` is the local holding operand x, and 4 scratch v128
 * locals start at `scratch`. Every node as the JavaScript kernel computes it (float64, rounded to
 * float32 where the kernel rounds), the APPROX functions within their stated bounds.
 * With `c32` (the float32 constants), the node's f32x4 value in the float32 form (f32Exact):
 * float32 operations, casts unchanged, approximations on each half (approxF32; 6 scratch locals).
 */
export function renderNode(
  b: Body,
  c: Consts,
  e: Expr,
  push: (x: Expr) => void,
  local: (x: Expr) => number,
  scratch: number,
  c32?: Consts,
): void {
  // the lane instructions' opcodes: f32x4 in the float32 form, else f64x2
  const ops: Readonly<Record<string, number>> = c32 !== undefined ? F32 : S;
  const lane = (op: ScalarOp): number => ops[LANE.get(op)!]!;
  const cc = c32 ?? c;
  const approx = (name: string, x: number) =>
    c32 === undefined
      ? APPROX[name]!.render(b, c, x, scratch)
      : F32_APPROX && Object.hasOwn(APPROX32, name)
        ? APPROX32[name]!.render(b, c32, x, scratch)
        : approxF32(b, c, APPROX[name]!.render, x, scratch);
  switch (e.t) {
    case 'cast':
      push(e.x);
      if (e.dtype === 'float32' && c32 === undefined) b.v(S.demote).v(S.promote);
      break;
    case 'op': {
      const a = approxOf(e);
      if (a !== undefined) {
        approx(a, local(e.args[0]!));
        break;
      }
      if (e.op === 'select') {
        // select(q, x, y): x where q is nonzero (NaN is nonzero, as in JavaScript's q !== 0)
        push(e.args[1]!);
        push(e.args[2]!);
        const q = e.args[0]!;
        if (q.t === 'op' && COMPARE.has(q.op)) {
          push(q.args[0]!);
          push(q.args[1]!);
          b.v(lane(q.op));
        } else {
          push(q);
          cc.get(0).v(ops['ne']!);
        }
        b.v(S.bitselect);
        break;
      }
      if (COMPARE.has(e.op)) {
        cc.get(1);
        cc.get(0);
        push(e.args[0]!);
        push(e.args[1]!);
        b.v(lane(e.op)).v(S.bitselect);
        break;
      }
      for (const x of e.args) push(x);
      b.v(lane(e.op));
      break;
    }
    case 'call':
      approx(approxOf(e)!, local(e.args[0]!));
      break;
    default:
      throw new Error(`internal: the SIMD tier cannot render a ${e.t} node`);
  }
}

let F32_APPROX = true;
/**
 * Whether kernels compiled from now on in the float32 form use its own float32 approximations
 * (APPROX32, the default) or APPROX's float64 ones on each half vector (tests and bench/ compare both).
 */
export function setFloat32Approximations(on: boolean): void {
  F32_APPROX = on;
}
/** Whether the float32 form uses its own approximations (setFloat32Approximations; the disk cache's key). */
export function float32Approximations(): boolean {
  return F32_APPROX;
}

/**
 * Operations whose float64 value rounded to float32 equals the float32 operation on the same
 * float32 arguments: both are correctly rounded, and rounding twice (to float64, then to
 * float32) is innocuous for +, -, *, / and sqrt because 53 >= 2 * 24 + 2 (Figueroa, "When is
 * double rounding innocuous?", 1995).
 */
const ROUNDED_OPS: ReadonlySet<string> = new Set(['add', 'sub', 'mul', 'div', 'sqrt']);

/**
 * Whether the kernel computes the same float32 values in f32x4 lanes as the reference does in
 * float64: every constant is a float32 value, and every node of ROUNDED_OPS is read only through
 * a rounding to float32 (a float32 cast or store), as the reference rounds each op's float32
 * value. Every other node of the tier is exact on float32 values in either width (neg, abs,
 * min, max, comparisons, selects, casts), or an approximation, which is rounded at once anyway.
 * Then the kernel runs four elements per instruction, bit-identical apart from the approximations.
 */
export function f32Exact(order: readonly Expr[], stored: readonly Expr[]): boolean {
  const uses = new Map<Expr, number>();
  const rounding = new Map<Expr, number>();
  const count = (x: Expr, rounds: boolean) => {
    uses.set(x, (uses.get(x) ?? 0) + 1);
    if (rounds) rounding.set(x, (rounding.get(x) ?? 0) + 1);
  };
  for (const e of order) {
    if (e.t === 'const') {
      if (!Number.isNaN(e.v) && Math.fround(e.v) !== e.v) return false;
      continue;
    }
    if (e.t === 'op' || e.t === 'call') for (const a of e.args) count(a, false);
    else if (e.t === 'cast') count(e.x, e.dtype === 'float32');
  }
  for (const x of stored) count(x, true);
  return order.every((e) => e.t !== 'op' || !ROUNDED_OPS.has(e.op) || uses.get(e) === rounding.get(e));
}

/** The loop over a chunk, streams independent vectors per iteration (the approximations are long dependency chains, so the out-of-order core needs several in flight). */
function loopBody(
  k: LoopKernel,
  v: Var,
  u: Var | undefined,
  loads: readonly EwRegion[],
  order: readonly Expr[],
  f32: boolean,
  streams: number,
): Body {
  // params n, base (the byte offset of the chunk block); i32 locals: i (byte offset), end; v128
  // locals: per stream, one per node and 6 scratch; then the constants (float64 splats, then float32 ones)
  const nodes = order.filter((e) => e.t !== 'const');
  const perStream = nodes.length + 6;
  // the float32 form: its own constants and 0, 1 in float32, the approximations' in float64
  const consts32 = f32 ? consts32Of(order) : new Set<number>();
  const own = (e: Expr) => F32_APPROX && Object.hasOwn(APPROX32, approxOf(e) ?? '');
  const consts64 = f32 ? constsOf(order.filter((e) => e.t !== 'const' && !own(e))) : constsOf(order);
  const [N, BASE, I, END] = [0, 1, 2, 3];
  const base = 4;
  const b = new Body(2, [
    [2, I32],
    [streams * perStream + consts64.size + consts32.size, V128],
  ]);
  const c = new Consts(b, base + streams * perStream, false);
  const c32 = new Consts(b, base + streams * perStream + consts64.size, true);
  for (const x of consts64) c.get(x).ops(op.drop); // splat each constant once, before the loop (then drop)
  for (const x of consts32) c32.get(x).ops(op.drop);
  b.get(BASE).set(I);
  b.ops(op.block, VOID).get(N).ops(op.i32Eqz, op.brIf, 0);
  b.get(N).i32(4).ops(op.i32Mul).get(BASE).ops(op.i32Add).set(END);
  b.ops(op.loop, VOID);
  const width = f32 ? 16 : 8; // bytes per vector
  const cc = f32 ? c32 : c;
  // Node by node, each for every stream in turn: independent work stays close together in the code.
  const locals = Array.from(
    { length: streams },
    (_, st) => new Map<Expr, number>(nodes.map((e, i) => [e, base + st * perStream + i])),
  );
  for (const e of nodes) {
    for (let st = 0; st < streams; st++) {
      const local = locals[st]!;
      const push = (e: Expr) => (e.t === 'const' ? cc.get(e.v) : b.get(local.get(e)!));
      if (e.t === 'load') {
        const at = regionOf(loads, e.buf, rowAccess(e.index, v, u)!) * CHUNK * 4 + width * st;
        if (f32) b.get(I).v(S.load, ...memarg(0, at));
        else
          b.get(I)
            .v(S.load64Zero, ...memarg(3, at))
            .v(S.promote);
      } else
        renderNode(b, c, e, push, (x) => local.get(x)!, base + st * perStream + nodes.length, f32 ? c32 : undefined);
      b.set(local.get(e)!);
    }
  }
  k.stores.forEach((s, j) => {
    for (let st = 0; st < streams; st++) {
      const at = (loads.length + j) * CHUNK * 4 + width * st;
      b.get(I);
      if (s.value.t === 'const') cc.get(s.value.v);
      else b.get(locals[st]!.get(s.value)!);
      if (f32) b.v(S.store, ...memarg(0, at));
      else b.v(S.demote).v(S.store64Lane, ...memarg(3, at), 0);
    }
  });
  b.addTo(I, width * streams);
  b.get(I).get(END).ops(op.i32LtU, op.brIf, 0, op.end, op.end);
  return b;
}

// --- runtime: the tier's memory and its compiled kernels ---

let enabled = true;
let memory: WasmMemory | undefined;
let view: Float32Array | undefined;

/** Turns the tier off or on (tests compare both). Kernels compiled meanwhile keep their form. */
export function setSimdTier(on: boolean): void {
  enabled = on;
}

let supported: boolean | undefined;
/** Whether the tier is on and the runtime has WebAssembly SIMD. */
export function tierOn(): boolean {
  if (!enabled || WA === undefined) return false;
  if (supported === undefined) {
    try {
      const b = new Body(0, [[1, V128]]);
      b.v(S.v128Const, ...new Array<number>(16).fill(0))
        .v(S.promote)
        .set(0);
      supported = WA.validate(moduleBytes([{ name: 'f', params: 0, body: b }], false));
    } catch {
      supported = false;
    }
  }
  return supported;
}

export interface EwKernel {
  /** n elements of the chunk block at byte offset base (region j of a block at j * CHUNK floats). */
  run(n: number, base: number): void;
  /** The tier's memory as float32 (block 0: region j at j * CHUNK). */
  readonly mem: Float32Array;
  /** Where the kernel is over the shared memory: the loop [lo, hi) split over the threads (see parallelRun). */
  readonly par?: (
    lo: number,
    hi: number,
    loads: readonly Float32Array[],
    stores: readonly Float32Array[],
    offs: readonly number[],
  ) => void;
  /** Where the kernel is over the shared memory: its number among the shared kernels (runBlocks). */
  readonly sid?: number;
}

const modules = new Map<string, number>();
const kernels: EwKernel[] = [];

// The shared form: one memory, grown to hold a whole long loop (a block of regions per chunk),
// and the kernels over it, numbered for the thread pool in the order they are compiled.
let sharedMemory: WasmMemory | undefined;
let sharedView = new Float32Array(0);
const sharedRuns: EwRun[] = [];

/** Whether kernels compiled now use the shared memory (more than one thread configured, shared memory available). */
export function sharedTier(): boolean {
  return threadCount() > 1 && threadPool(true) !== undefined;
}

export function sharedMem(bytes: number): Float32Array {
  if (sharedMemory === undefined) {
    sharedMemory = new WA!.Memory({
      initial: Math.max(PAGES, Math.ceil(bytes / 65536)),
      maximum: SHARED_MAX_PAGES,
      shared: true,
    });
    threadPool(true)!.setEwMemory(sharedMemory);
  } else if (sharedMemory.buffer.byteLength < bytes) {
    sharedMemory.grow(Math.ceil((bytes - sharedMemory.buffer.byteLength) / 65536));
  }
  if (sharedView.buffer !== sharedMemory.buffer) sharedView = new Float32Array(sharedMemory.buffer);
  return sharedView;
}

/** Chunk blocks of one parallel pass: the shared memory holds at most this many blocks (R regions: R * 1 MiB). */
const PASS_BLOCKS = 64;

/**
 * A shared kernel over [lo, hi), in passes of up to PASS_BLOCKS chunks: every chunk's inputs
 * copied into its own block of the shared memory, the blocks computed by this thread and the
 * workers (claimed one at a time), the outputs copied out. loads[j] is read at offset offs[j],
 * stores[j] written at offs[loads + j].
 */
function parallelRun(
  sid: number,
  regions: number,
  lo: number,
  hi: number,
  loads: readonly Float32Array[],
  stores: readonly Float32Array[],
  offs: readonly number[],
): void {
  const blockFloats = regions * CHUNK;
  const m = sharedMem(Math.min(PASS_BLOCKS, Math.ceil((hi - lo) / CHUNK)) * blockFloats * 4);
  const threads = threadCount();
  const pool = threadPool();
  for (let p0 = lo; p0 < hi; p0 += PASS_BLOCKS * CHUNK) {
    const p1 = Math.min(hi, p0 + PASS_BLOCKS * CHUNK);
    const blocks = Math.ceil((p1 - p0) / CHUNK);
    for (let b = 0; b < blocks; b++) {
      const s = p0 + b * CHUNK,
        e = Math.min(p1, s + CHUNK);
      loads.forEach((a, j) => m.set(a.subarray(s + offs[j]!, e + offs[j]!), b * blockFloats + j * CHUNK));
    }
    const job = [1, sid, blocks, blockFloats * 4, CHUNK, p1 - p0 - (blocks - 1) * CHUNK, 0] as const;
    if (threads > 1 && blocks > 1 && pool !== undefined) pool.run(threads, undefined, sharedRuns, job);
    else runHere(undefined, sharedRuns, job);
    for (let b = 0; b < blocks; b++) {
      const s = p0 + b * CHUNK,
        e = Math.min(p1, s + CHUNK);
      stores.forEach((a, j) => {
        const r = b * blockFloats + (loads.length + j) * CHUNK;
        a.set(m.subarray(r, r + e - s), s + offs[loads.length + j]!);
      });
    }
  }
}

/**
 * Runs shared kernel `sid` over `blocks` blocks of the shared memory (block b at byte
 * base + b * blockBytes, `per` units each, the last `last`), split over the threads: the form other
 * shared kernels (./reduce.ts) use with their own block layout. `during`: the calling thread's
 * own work on other memory, overlapping the workers' (ThreadPool.run).
 */
export function runBlocks(
  sid: number,
  blocks: number,
  blockBytes: number,
  per: number,
  last: number,
  base = 0,
  during?: () => void,
): void {
  const job = [1, sid, blocks, blockBytes, per, last, base] as const;
  const pool = threadPool();
  // split where the hand-off model (../cpu/handoff.ts) says it pays: the work is the blocks' floats, its rate this kernel's
  const work = (blocks * blockBytes) / 4;
  const threads = blocks > 1 && pool !== undefined ? handoffThreads(work, threadCount(), sid + 1) : 1;
  const t0 = performance.now();
  if (threads > 1) pool!.run(threads, undefined, sharedRuns, job, during);
  else {
    during?.();
    runHere(undefined, sharedRuns, job);
  }
  handoffMeasured(work, threads, performance.now() - t0, sid + 1);
}

/** What a tier kernel is compiled from (the compile cache on disk stores it to make the kernel again in another process). */
export interface TierRecipe {
  readonly bytes: Uint8Array;
  readonly shared: boolean;
  readonly regions: number;
}
const recipes: TierRecipe[] = [];
/** What kernel `id` was compiled from. */
export function ewRecipe(id: number): TierRecipe | undefined {
  return recipes[id];
}

/** The id of the kernel compiled from `bytes` (compiled once per process; generated code calls rt.ew(id)). */
export function ewKernelId(bytes: Uint8Array, shared = false, regions = 0): number {
  const key = Array.from(bytes, (x) => String.fromCharCode(x)).join('');
  let id = modules.get(key);
  if (id === undefined) {
    const module = new WA!.Module(bytes) as WasmModule;
    id = kernels.length;
    recipes[id] = { bytes, shared, regions };
    if (shared) {
      sharedMem(PAGES * 65536);
      const run = new WA!.Instance(module, { env: { mem: sharedMemory } }).exports['run'] as EwRun;
      const sid = sharedRuns.length;
      sharedRuns.push(run);
      threadPool(true)!.addEwModule(sid, module);
      kernels.push({
        run,
        get mem() {
          return sharedMem(0);
        },
        par: (lo, hi, loads, stores, offs) => parallelRun(sid, regions, lo, hi, loads, stores, offs),
        sid,
      });
    } else {
      memory ??= new WA!.Memory({ initial: PAGES, maximum: PAGES });
      view ??= new Float32Array(memory.buffer);
      const inst = new WA!.Instance(module, { env: { mem: memory } });
      kernels.push({ run: inst.exports['run'] as EwRun, mem: view });
    }
    modules.set(key, id);
  }
  return id;
}

/** The kernel with this id (runtime helper `rt.ew`). */
export function ewKernel(id: number): EwKernel {
  return kernels[id]!;
}

/** A tuned unroll, as the source's comment names it (nothing for the default). */
const unrolled = (p: EwPlan): string => (p.schedule.streams === DEFAULT_STREAMS ? '' : ` x${p.schedule.streams}`);

/** Loops from this many elements go to the threads: PARALLEL_MIN_ELEMENTS, or two chunks where a tuned schedule splits a shorter loop. */
export const splitFrom = (p: EwPlan): number => (p.n >= PARALLEL_MIN_ELEMENTS ? PARALLEL_MIN_ELEMENTS : 2 * CHUNK);

/**
 * The JavaScript side of a tier kernel: chunks of the loop [lo, hi), each copied into the tier's
 * memory, computed, and copied out. Same parameters as renderLoopKernel's function.
 */
export function renderElementwise(
  p: EwPlan,
  bufName: (id: number) => string,
): { source: string; buffers: number[]; rows: number } {
  const id = ewKernelId(p.bytes, p.shared, p.loads.length + p.stores.length);
  const buffers = [...new Set([...p.loads.map((l) => l.buf), ...p.stores.map((s) => s.buf)])].sort((a, c) => a - c);
  const at = (x: string, off: number) => (off === 0 ? x : `${x} + ${off}`);
  if (p.cols !== undefined) {
    // Two loops: lo, hi are rows; whole rows per chunk, each copied on its own (a region read at
    // row stride `cols` is one contiguous copy per chunk).
    const cols = p.cols;
    const per = Math.floor(CHUNK / cols);
    const rowAt = (r: EwRegion, row: string) => (r.row === 0 ? String(r.off) : at(`${row} * ${r.row}`, r.off));
    // A region every row reads alike (row stride 0: a bias broadcast over the rows) is the same in
    // every chunk: written once, before the chunks (its row, then doubled in place by copyWithin),
    // not row by row in each (a convolution's 18432 rows of 16: 18432 copies a call before).
    const once = p.loads.flatMap((l, j) =>
      l.row !== 0
        ? []
        : [
            `  { const n = hi - lo < ${per} ? hi - lo : ${per};`,
            `    m.set(${bufName(l.buf)}.subarray(${l.off}, ${l.off + cols}), ${j * CHUNK});`,
            `    for (let f = 1; f < n; f *= 2) m.copyWithin(${j * CHUNK} + f * ${cols}, ${j * CHUNK}, ${j * CHUNK} + (f < n - f ? f : n - f) * ${cols}); }`,
          ],
    );
    const copyIn = p.loads.flatMap((l, j) =>
      l.row === 0
        ? []
        : [
            l.row === cols
              ? `    m.set(${bufName(l.buf)}.subarray(${rowAt(l, 'r0')}, ${rowAt(l, 'r1')}), ${j * CHUNK});`
              : `    for (let r = r0, o = ${j * CHUNK}; r < r1; r++, o += ${cols}) m.set(${bufName(l.buf)}.subarray(${rowAt(l, 'r')}, ${rowAt(l, 'r')} + ${cols}), o);`,
          ],
    );
    const copyOut = p.stores.map((x, j) => {
      const o = (p.loads.length + j) * CHUNK;
      return x.row === cols
        ? `    ${bufName(x.buf)}.set(m.subarray(${o}, ${o} + (r1 - r0) * ${cols}), ${rowAt(x, 'r0')});`
        : `    for (let r = r0, o = ${o}; r < r1; r++, o += ${cols}) ${bufName(x.buf)}.set(m.subarray(o, o + ${cols}), ${rowAt(x, 'r')});`;
    });
    const lines2 = [
      `  const w = rt.ew(${id});`,
      '  const m = w.mem;',
      ...once,
      `  for (let r0 = lo; r0 < hi; r0 += ${per}) {`,
      `    const r1 = hi < r0 + ${per} ? hi : r0 + ${per};`,
      ...copyIn,
      `    w.run((r1 - r0) * ${cols}, 0);`,
      ...copyOut,
      '  }',
    ];
    const source = `function k(${[...buffers.map(bufName), 'lo', 'hi'].join(', ')}) { // WebAssembly SIMD ${p.f32 ? 'f32x4' : 'f64x2'}${unrolled(p)}, ${p.rows} rows of ${cols}: ${p.label.replace(/[^\w,. -]/g, '')}\n${lines2.join('\n')}\n}`;
    return { source, buffers, rows: p.rows! };
  }
  const lines = [
    `  const w = rt.ew(${id});`,
    ...(p.shared
      ? [
          `  if (hi - lo >= ${splitFrom(p)}) { w.par(lo, hi, [${p.loads.map((l) => bufName(l.buf)).join(', ')}], [${p.stores.map((x) => bufName(x.buf)).join(', ')}], [${[...p.loads, ...p.stores].map((x) => x.off).join(', ')}]); return; }`,
        ]
      : []),
    '  const m = w.mem;',
    `  for (let s = lo; s < hi; s += ${CHUNK}) {`,
    `    const e = hi < s + ${CHUNK} ? hi : s + ${CHUNK};`,
    ...p.loads.map(
      (l, j) => `    m.set(${bufName(l.buf)}.subarray(${at('s', l.off)}, ${at('e', l.off)}), ${j * CHUNK});`,
    ),
    '    w.run(e - s, 0);',
    ...p.stores.map(
      (s, j) =>
        `    ${bufName(s.buf)}.set(m.subarray(${(p.loads.length + j) * CHUNK}, ${(p.loads.length + j) * CHUNK} + e - s), ${at('s', s.off)});`,
    ),
    '  }',
  ];
  const source = `function k(${[...buffers.map(bufName), 'lo', 'hi'].join(', ')}) { // WebAssembly SIMD ${p.f32 ? 'f32x4' : 'f64x2'}${unrolled(p)}: ${p.label.replace(/[^\w,. -]/g, '')}\n${lines.join('\n')}\n}`;
  return { source, buffers, rows: p.n };
}
