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
// The exceptions are tanh, exp, sigmoid and log, which have no WebAssembly instruction: vector
// approximations used only where their result is rounded to float32 at once. In the float64 form
// (APPROX below, keyed by function) they are accurate to about 3e-15 relative, so the float32
// value is within 1 ulp of the reference's (Math.fround(Math.tanh(x)), ...) and equal to it except
// within 3e-15 of a rounding midpoint; the float32 form computes tanh, exp and sigmoid in float32
// (APPROX32: within 2, 1 and 2 ulps) and log by APPROX's on each half of the vector. The bounds
// are docs/architecture.md's ("Elementwise approximations"; test/codegen/simd-elementwise.test.ts).
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
import type { IExpr, Var } from '../index-expr.js';
import type { Expr, ScalarOp } from '../expr.js';
import { exprOrder } from '../expr.js';
import type { LoopKernel } from '../kernel.js';
import type { DType } from '../../ir/dtype.js';
import { elementwiseOps, type ElementwiseOp } from '../../ir/ops/elementwise.js';

const ROWS: ReadonlyMap<string, ElementwiseOp> = new Map(Object.entries(elementwiseOps));
import { Body, I32, SHARED_MAX_PAGES, V128, WA, memarg, moduleBytes, op, type WasmMemory, type WasmModule } from './encode.js';
import { type EwRun, runHere, threadCount, threadPool } from '../cpu/threads.js';

/** Elements per chunk (even: the loop takes two at a time). */
export const CHUNK = 4096;
const PAGES = 8;
const MAX_REGIONS = (PAGES * 65536) / (CHUNK * 4);
/** Loops shorter than this stay JavaScript (copying in and out costs more than it saves). */
export const MIN_ELEMENTS = 8192;
/**
 * The float32 form's threshold (f32Exact): four lanes pay sooner. Measured (CPU time, loaded
 * machine) at 1024 elements: arithmetic 28-36 us in JavaScript against 7-9 us, relu(x*y + 1)*x
 * 10-29 against 7-9, at 2048 a sigmoid/tanh gate update 80-107 against 18-21.
 */
export const F32_MIN_ELEMENTS = 1024;

// SIMD opcodes used here (after the 0xfd prefix).
export const S = {
  load64Zero: 0x5d, store64Lane: 0x5b, demote: 0x5e, promote: 0x5f, v128Const: 0x0c, splat: 0x14,
  abs: 0xec, neg: 0xed, sqrt: 0xef, add: 0xf0, sub: 0xf1, mul: 0xf2, div: 0xf3, min: 0xf4, max: 0xf5,
  eq: 0x47, ne: 0x48, lt: 0x49, gt: 0x4a, le: 0x4b, ge: 0x4c,
  and: 0x4e, or: 0x50, not: 0x4d, bitselect: 0x52,
  nearest: 0x94, truncSatZero: 0xfc, extendLowS: 0xc7, i64Add: 0xce, i64Shl: 0xcb, i64ShrU: 0xcd,
  load: 0x00, store: 0x0b, shuffle: 0x0d, f32Splat: 0x13,
} as const;

const I32X4_SHL = 0xab, I32X4_SHR_S = 0xac, I32X4_SUB = 0xb1;

/** The same operations on f32x4 lanes (the float32 form of a kernel: see f32Exact). */
const F32: Readonly<Record<string, number>> = {
  abs: 0xe0, neg: 0xe1, sqrt: 0xe3, add: 0xe4, sub: 0xe5, mul: 0xe6, div: 0xe7, min: 0xe8, max: 0xe9,
  eq: 0x41, ne: 0x42, lt: 0x43, gt: 0x44, le: 0x45, ge: 0x46,
};

const BINARY: Partial<Record<ScalarOp, number>> = { add: S.add, sub: S.sub, mul: S.mul, div: S.div, min: S.min, max: S.max };
const UNARY: Partial<Record<ScalarOp, number>> = { neg: S.neg, abs: S.abs, sqrt: S.sqrt };
export const COMPARE: Partial<Record<ScalarOp, number>> = { eq: S.eq, ne: S.ne, lt: S.lt, gt: S.gt, le: S.le, ge: S.ge };

/**
 * Buffers the tier loads: float32, and small integers and flags, whose values float32 holds
 * exactly (copied in with a conversion, TypedArray.set).
 */
export const LOADED: ReadonlySet<DType> = new Set(['float32', 'bool', 'uint8', 'int8', 'int16']);

/**
 * Where a region of the tier's memory comes from or goes to: element `off + row * r + j` of
 * buffer `buf` for element j of row r (`row` 0 in a one-loop kernel, whose rows are chunks).
 */
export interface EwRegion { readonly buf: number; readonly off: number; readonly row: number }

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
    case 'cast': return e.dtype === 'float32' || e.dtype === 'float64' ? 'plain' : undefined;
    case 'op':
      if (approxOf(e) !== undefined) return e.args[0]!.t === 'const' ? undefined : 'approx';
      if (e.op === 'select' || e.op in COMPARE) return 'branch';
      return e.op in BINARY || e.op in UNARY ? 'plain' : undefined;
    case 'call': return approxOf(e) === undefined || e.args[0]!.t === 'const' ? undefined : 'approx';
    default: return undefined;
  }
}

/**
 * The tier's plan for a loop kernel, or undefined where it does not apply (then the kernel is
 * rendered as JavaScript): at least MIN_ELEMENTS elements (F32_MIN_ELEMENTS in the float32 form), loads (LOADED) and float32 or flag
 * stores at unit stride, and only the ops above; at least one tanh, exp, sigmoid or log, or a
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
export function planElementwise(k: LoopKernel, bufDType: (buf: number) => DType, always = false): EwPlan | undefined {
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
      case 'const': break;
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
    const flag = s.dtype === 'bool' && bufDType(s.buf) === 'bool' && s.value.t === 'op' && s.value.op in COMPARE;
    if (acc === undefined || (u !== undefined && acc.row < v.size) || !((s.dtype === 'float32' && bufDType(s.buf) === 'float32') || flag)) return undefined;
    stores.push({ buf: s.buf, ...acc });
    roundedParent.add(s.value);
  }
  // A buffer both read and written (in place) only at the same elements: a chunk's inputs are all
  // copied in before its results are copied out, so a read of another element (a recursion's) would see an old value.
  if (loads.some((l) => stores.some((x) => x.buf === l.buf) && !stores.some((x) => x.buf === l.buf && x.off === l.off && x.row === l.row))) return undefined;
  // The approximations are within their bounds only once rounded to float32.
  if (approximated.some((e) => !roundedParent.has(e)) || loads.length + stores.length > MAX_REGIONS) return undefined;
  const f32 = f32Exact(order, k.stores.map((s) => s.value));
  if ((approximated.length === 0 && !branches && !always && !f32) || (!f32 && n < MIN_ELEMENTS)) return undefined;

  // Over a shared memory where more than one thread is configured and the loop is long enough to be
  // split over the worker threads; shorter loops keep the private memory, which measured faster.
  const shared = u === undefined && sharedTier() && n >= PARALLEL_MIN_ELEMENTS;
  const bytes = moduleBytes([{ name: 'run', params: 2, body: loopBody(k, v, u, loads, order, f32) }], shared ? 'shared' : true);
  return { n, f32, ...(u !== undefined ? { cols: v.size, rows: u.size } : {}), loads, stores, bytes, shared, label: k.label };
}

/** Float64 (or float32) constants as v128 locals, splatted once before the loop (not once per iteration). */
export class Consts {
  private readonly at = new Map<string, number>();
  constructor(private readonly b: Body, private next: number, private readonly f32 = false) {}
  /** Pushes the constant (allocating its local on first use: call prepare() first for every constant). */
  get(x: number): Body {
    const key = Object.is(x, -0) ? '-0' : String(x);
    let l = this.at.get(key);
    if (l === undefined) {
      l = this.next++;
      this.at.set(key, l);
      if (this.f32) this.b.ops(0x43, ...new Uint8Array(new Float32Array([x]).buffer)).v(S.f32Splat).set(l);
      else this.b.ops(0x44, ...new Uint8Array(new Float64Array([x]).buffer)).v(S.splat).set(l);
    }
    return this.b.get(l);
  }
  get count(): number { return this.at.size; }
}

// biome-ignore lint/correctness/noPrecisionLoss: fdlibm's digits, which round to the intended double
const LN2_HI = 6.93147180369123816490e-01;
// biome-ignore lint/correctness/noPrecisionLoss: as above
const LN2_LO = 1.90821492927058770002e-10;
/** 1/n!, n = 1..12: expm1's Taylor coefficients. */
const EXPM1: number[] = [];
for (let n = 1, f = 1; n <= 12; n++) { f *= n; EXPM1.push(1 / f); }
/** 1/(2j + 1), j = 0..10: log(1+f) = 2s (1 + s^2/3 + s^4/5 + ...), s = f/(2+f). */
const ATANH: number[] = Array.from({ length: 11 }, (_, j) => 1 / (2 * j + 1));
const APPROX_CONSTS = [20, 2, 1, 0, -110, 110, 100, Math.LOG2E, LN2_HI, LN2_LO, ...EXPM1];
const LOG_CONSTS = [0, 0.5, 1, 2, 54, 2 ** -1022, 2 ** 54, 2 ** 52 + 1023, Math.SQRT2, LN2_HI, LN2_LO, -Infinity, Infinity, NaN, ...ATANH];

/**
 * From y (local Y, |y| <= 160, or NaN): K2 := 2^k and P := e^r - 1 with y = k ln2 + r,
 * |r| <= ln2/2 (Cody-Waite: k ln2_hi is exact), e^r - 1 by its Taylor series to r^12/12!
 * (truncation below 2e-16 relative), 2^k exactly from its bits ((k + 1023) << 52).
 * Then e^y = 2^k P + 2^k and e^y - 1 = 2^k P + (2^k - 1), both without cancellation.
 */
function expParts(b: Body, c: Consts, Y: number, K2: number, P: number): void {
  b.get(Y); c.get(Math.LOG2E).v(S.mul).v(S.nearest).set(K2); // k (as f64)
  b.get(Y).get(K2); c.get(LN2_HI).v(S.mul).v(S.sub);
  b.get(K2); c.get(LN2_LO).v(S.mul).v(S.sub).set(P); // P := r
  c.get(EXPM1[11]!);
  for (let n = 10; n >= 0; n--) { b.get(P).v(S.mul); c.get(EXPM1[n]!).v(S.add); }
  b.get(P).v(S.mul).set(P);
  b.get(K2).v(S.truncSatZero).v(S.extendLowS).v(S.v128Const, ...i64x2(1023)).v(S.i64Add).i32(52).v(S.i64Shl).set(K2);
}

type Approx = (b: Body, c: Consts, x: number, t: number) => void;

/**
 * The vector approximations, two lanes, each about 3e-15 relative in float64 (so within 1 ulp
 * once rounded to float32, where the tier uses them): the value of the function at local x is
 * pushed (v128 scratch locals t..t+3).
 * tanh: a = min(|x|, 20) (tanh(20) is 1 in float64), em1 = e^(2a) - 1, em1 / (em1 + 2) with x's
 * sign (tanh(-0) = -0). exp: e^clamp(x, -110, 100) (beyond, float32 rounds to 0 or Infinity as
 * Math.exp's value would). sigmoid: e = e^-min(|x|, 110), 1 / (1 + e) for x >= 0, e / (1 + e)
 * otherwise, the reference's two branches. NaN stays NaN in all three.
 */
const tanhApprox: Approx = (b, c, x, t) => {
  const [Y, K2, P] = [t, t + 1, t + 2];
  b.get(x).v(S.abs); c.get(20).v(S.min); c.get(2).v(S.mul).set(Y);
  expParts(b, c, Y, K2, P);
  b.get(K2).get(P).v(S.mul).get(K2); c.get(1).v(S.sub).v(S.add).set(P); // em1
  b.get(P).get(P); c.get(2).v(S.add).v(S.div);
  b.get(x).v(S.v128Const, ...i64x2(-1, 0x7fffffff)).v(S.bitselect); // x's sign bit
};
const expApprox: Approx = (b, c, x, t) => {
  const [Y, K2, P] = [t, t + 1, t + 2];
  b.get(x); c.get(-110).v(S.max); c.get(100).v(S.min).set(Y);
  expParts(b, c, Y, K2, P);
  b.get(K2).get(P).v(S.mul).get(K2).v(S.add);
};
const sigmoidApprox: Approx = (b, c, x, t) => {
  const [Y, K2, P] = [t, t + 1, t + 2];
  b.get(x).v(S.abs); c.get(110).v(S.min).v(S.neg).set(Y);
  expParts(b, c, Y, K2, P);
  b.get(K2).get(P).v(S.mul).get(K2).v(S.add).set(P); // e
  b.get(P); c.get(1).v(S.add).set(Y); // d = 1 + e
  c.get(1).get(Y).v(S.div); b.get(P).get(Y).v(S.div); // 1/d, e/d
  b.get(x); c.get(0).v(S.ge).v(S.bitselect); // where x >= 0: 1/d
};

/**
 * log at local x, two lanes, about 4e-16 relative in float64 (fdlibm's reduction, a longer
 * series): x = 2^k m with m in [sqrt(1/2), sqrt(2)) from x's bits (float64 subnormals scaled by
 * 2^54 first), f = m - 1 (exact), s = f/(2+f), log(1+f) = 2s(1 + s^2/3 + ... + s^20/21) (|s| <=
 * 0.172: truncation below 3e-17), log x = k ln2_hi + (k ln2_lo + log(1+f)). Zeros give -Infinity,
 * negatives and NaN give NaN, Infinity gives Infinity, as Math.log does. Scratch locals t..t+3.
 */
const logApprox: Approx = (b, c, x, t) => {
  const [Y, K2, P, Z] = [t, t + 1, t + 2, t + 3];
  b.get(x); c.get(2 ** -1022).v(S.lt).set(Z); // small: subnormal (or not positive: replaced below)
  b.get(x); c.get(2 ** 54).v(S.mul); b.get(x).get(Z).v(S.bitselect).set(Y);
  c.get(54); c.get(0); b.get(Z).v(S.bitselect).set(K2);
  // k = biased exponent - 1023 - scaling, as float64: (2^52 + e) - (2^52 + 1023)
  b.get(Y).i32(52).v(S.i64ShrU).v(S.v128Const, ...i64x2(0, 0x43300000)).v(S.or); c.get(2 ** 52 + 1023).v(S.sub); b.get(K2).v(S.sub).set(K2);
  b.get(Y).v(S.v128Const, ...i64x2(-1, 0x000fffff)).v(S.and).v(S.v128Const, ...i64x2(0, 0x3ff00000)).v(S.or).set(P); // m in [1, 2)
  b.get(P); c.get(Math.SQRT2).v(S.gt).set(Z);
  b.get(P); c.get(0.5).v(S.mul); b.get(P).get(Z).v(S.bitselect); c.get(1).v(S.sub).set(P); // f
  b.get(K2); c.get(1); c.get(0); b.get(Z).v(S.bitselect).v(S.add).set(K2);
  b.get(P).get(P); c.get(2).v(S.add).v(S.div).set(Y); // s
  b.get(Y).get(Y).v(S.mul).set(Z); // s^2
  c.get(ATANH[10]!);
  for (let j = 9; j >= 0; j--) { b.get(Z).v(S.mul); c.get(ATANH[j]!).v(S.add); }
  b.get(Y).v(S.mul); c.get(2).v(S.mul).set(P); // log(1+f)
  b.get(K2); c.get(LN2_HI).v(S.mul); b.get(K2); c.get(LN2_LO).v(S.mul); b.get(P).v(S.add).v(S.add).set(Y);
  // special values: -Infinity for zeros, NaN below zero, x itself for NaN and Infinity
  c.get(-Infinity); b.get(x).get(x); c.get(0).v(S.eq).v(S.bitselect).set(Z);
  c.get(NaN); b.get(Z).get(x); c.get(0).v(S.lt).v(S.bitselect).set(Z);
  b.get(Y).get(Z).get(x); c.get(0).v(S.gt); b.get(x); c.get(Infinity).v(S.lt).v(S.and).v(S.bitselect);
};

/**
 * The functions the tier approximates, keyed by the name of the kernel IR's scalar op or of the
 * elementwise row whose scalar function a kernel calls (src/ir/ops/elementwise.ts), each with the
 * constants it reads.
 */
const APPROX: Readonly<Record<string, { readonly render: Approx; readonly consts: readonly number[] }>> = {
  tanh: { render: tanhApprox, consts: APPROX_CONSTS },
  exp: { render: expApprox, consts: APPROX_CONSTS },
  sigmoid: { render: sigmoidApprox, consts: APPROX_CONSTS },
  log: { render: logApprox, consts: LOG_CONSTS },
};

// The float32 form's own approximations (f32x4, four lanes): float32 arithmetic throughout, each
// within a few float32 ulps of the reference's value (bounds measured over every float32 input,
// stated in docs/architecture.md and checked by test/codegen/simd-elementwise.test.ts).
/** ln 2 = EXP32_C1 + EXP32_C2: the high part has 9 significant bits, so k * EXP32_C1 is exact for |k| < 2^15. */
const EXP32_C1 = 0.693359375;
const EXP32_C2 = Math.fround(Math.LN2 - EXP32_C1);
/** 1/n!, n = 2..7, rounded to float32: (e^r - 1 - r) / r^2 to r^5/7! (truncation below 6e-9 for |r| <= ln2/2). */
const EXPM1_32: number[] = [];
for (let n = 2, f = 2; n <= 7; n++, f *= n) EXPM1_32.push(Math.fround(1 / f));
/** The shifter 1.5 * 2^23 (its float32 bits EXP32_SHIFT_BITS): t + it is t rounded to an integer, ties to even, in the low bits. */
const EXP32_SHIFT = 12582912;
const EXP32_SHIFT_BITS = 0x4b400000;
const EXP32_CONSTS = [Math.fround(Math.LOG2E), EXP32_C1, EXP32_C2, ...EXPM1_32, 1, 2, 0, -104, 89, 104, 9.5, EXP32_SHIFT];

/** An i32x4 constant's bytes (all four lanes k). */
function i32x4(k: number): number[] {
  return Array.from(new Uint8Array(new Int32Array([k, k, k, k]).buffer));
}

/**
 * From y (local Y, f32x4, |y| <= 104, or NaN): K := k (as float32), KI := k + bias (as i32) and P := e^r - 1 with
 * y = k ln2 + r, |r| <= ln2/2 (Cody-Waite in two parts: y - k C1 is exact), e^r - 1 =
 * r + r^2 (1/2! + r/3! + ... + r^5/7!) by Horner's rule in float32.
 */
function expParts32(b: Body, c: Consts, Y: number, K: number, P: number, KI: number, bias: number): void {
  // k by the shifter: t + 1.5 * 2^23 rounds t = y log2(e) (|t| < 2^22) to an integer, ties to
  // even, as f32x4.nearest does, and holds it in its low bits: KI := k + bias as i32 from them
  // (no float-to-integer conversion, several instructions on x64), K := k as float32 (exact)
  b.get(Y); c.get(Math.fround(Math.LOG2E)).v(F32['mul']!); c.get(EXP32_SHIFT).v(F32['add']!).tee(KI);
  c.get(EXP32_SHIFT).v(F32['sub']!).set(K);
  b.get(KI).v(S.v128Const, ...i32x4(EXP32_SHIFT_BITS - bias)).v(I32X4_SUB).set(KI);
  b.get(Y).get(K); c.get(EXP32_C1).v(F32['mul']!).v(F32['sub']!);
  b.get(K); c.get(EXP32_C2).v(F32['mul']!).v(F32['sub']!).set(P); // r
  c.get(EXPM1_32[5]!);
  for (let n = 4; n >= 0; n--) { b.get(P).v(F32['mul']!); c.get(EXPM1_32[n]!).v(F32['add']!); }
  b.get(P).v(F32['mul']!).get(P).v(F32['mul']!).get(P).v(F32['add']!).set(P); // r + r^2 q
}

/**
 * exp: e^y, y = clamp(x, -104, 89) (beyond, float32 rounds to 0 or Infinity as fround(Math.exp(x))
 * does), as (1 + P) 2^k1 2^k2 with k1 = floor(k/2), k2 = k - k1: the first product is exact, the
 * second rounds once, also into the subnormals.
 */
const expApprox32: Approx = (b, c, x, t) => {
  const [Y, K, P, K1] = [t, t + 1, t + 2, t + 3];
  b.get(x); c.get(-104).v(F32['max']!); c.get(89).v(F32['min']!).set(Y);
  expParts32(b, c, Y, K, P, K1, 254);
  // in i32x4 lanes from here: k + 254, (k + 254) >> 1 = k1 + 127 with k1 = floor(k/2), and
  // (k + 254) - (k1 + 127) = k2 + 127 with k2 = k - k1: each 2^k's exponent field, biased
  b.get(K1).tee(K).i32(1).v(I32X4_SHR_S).set(K1);
  b.get(P); c.get(1).v(F32['add']!);
  b.get(K1).i32(23).v(I32X4_SHL).v(F32['mul']!);
  b.get(K).get(K1).v(I32X4_SUB).i32(23).v(I32X4_SHL).v(F32['mul']!);
};

/**
 * tanh: a = min(|x|, 9.5) (tanh(9.5) is 1 in float32), em1 = e^(2a) - 1 = 2^k P + (2^k - 1)
 * (no cancellation: both terms have a's sign), em1 / (em1 + 2) with x's sign (tanh(-0) = -0).
 */
const tanhApprox32: Approx = (b, c, x, t) => {
  const [Y, K, P, KI] = [t, t + 1, t + 2, t + 3];
  b.get(x).v(F32['abs']!); c.get(9.5).v(F32['min']!); c.get(2).v(F32['mul']!).set(Y);
  expParts32(b, c, Y, K, P, KI, 127);
  b.get(KI).i32(23).v(I32X4_SHL).tee(K).get(P).v(F32['mul']!).get(K); c.get(1).v(F32['sub']!).v(F32['add']!).set(P); // em1
  b.get(P).get(P); c.get(2).v(F32['add']!).v(F32['div']!);
  b.get(x).v(S.v128Const, ...i32x4(0x7fffffff)).v(S.bitselect); // x's sign bit
};

/**
 * sigmoid: e = e^-min(|x|, 104) (as exp above), 1 / (1 + e) for x >= 0, e / (1 + e) otherwise,
 * the reference's two branches. NaN stays NaN.
 */
const sigmoidApprox32: Approx = (b, c, x, t) => {
  const [Y, E, D] = [t, t + 1, t + 2];
  b.get(x).v(F32['abs']!); c.get(104).v(F32['min']!).v(F32['neg']!).set(Y);
  expApprox32(b, c, Y, t + 1); // scratch t+1..t+4
  b.set(E);
  b.get(E); c.get(1).v(F32['add']!).set(D); // d = 1 + e
  c.get(1).get(D).v(F32['div']!); b.get(E).get(D).v(F32['div']!); // 1/d, e/d
  b.get(x); c.get(0).v(F32['ge']!).v(S.bitselect); // where x >= 0: 1/d
};

/** The float32 form's approximations (four lanes), keyed as APPROX; log runs APPROX's on each half (approxF32). */
const APPROX32: Readonly<Record<string, { readonly render: Approx; readonly consts: readonly number[] }>> = {
  tanh: { render: tanhApprox32, consts: EXP32_CONSTS },
  exp: { render: expApprox32, consts: EXP32_CONSTS },
  sigmoid: { render: sigmoidApprox32, consts: EXP32_CONSTS },
};

/** An i64x2 constant's bytes (both lanes: low word lo, high word hi). */
export function i64x2(lo: number, hi = 0): number[] {
  const w = new Int32Array([lo, hi, lo, hi]);
  return Array.from(new Uint8Array(w.buffer));
}

/** The approximated function a node computes, if it is one of the tier's approximations. */
function approxOf(e: Expr): string | undefined {
  if (e.t === 'op') return Object.hasOwn(APPROX, e.op) ? e.op : undefined;
  // a row's own scalar function, called by the row's name from its template (not a user function of the same name)
  return e.t === 'call' && Object.hasOwn(APPROX, e.name) && e.fn === ROWS.get(e.name)?.scalar ? e.name : undefined;
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
export function renderNode(b: Body, c: Consts, e: Expr, push: (x: Expr) => void, local: (x: Expr) => number, scratch: number, c32?: Consts): void {
  const ops: Readonly<Record<string, number>> = c32 !== undefined ? F32 : { ...BINARY, ...UNARY, ...COMPARE };
  const cc = c32 ?? c;
  const approx = (name: string, x: number) => (c32 === undefined ? APPROX[name]!.render(b, c, x, scratch)
    : F32_APPROX && Object.hasOwn(APPROX32, name) ? APPROX32[name]!.render(b, c32, x, scratch) : approxF32(b, c, APPROX[name]!.render, x, scratch));
  switch (e.t) {
    case 'cast': push(e.x); if (e.dtype === 'float32' && c32 === undefined) b.v(S.demote).v(S.promote); break;
    case 'op': {
      const a = approxOf(e);
      if (a !== undefined) { approx(a, local(e.args[0]!)); break; }
      if (e.op === 'select') {
        // select(q, x, y): x where q is nonzero (NaN is nonzero, as in JavaScript's q !== 0)
        push(e.args[1]!); push(e.args[2]!);
        const q = e.args[0]!;
        if (q.t === 'op' && q.op in COMPARE) { push(q.args[0]!); push(q.args[1]!); b.v(ops[q.op]!); }
        else { push(q); cc.get(0).v(ops['ne']!); }
        b.v(S.bitselect);
        break;
      }
      if (e.op in COMPARE) { cc.get(1); cc.get(0); push(e.args[0]!); push(e.args[1]!); b.v(ops[e.op]!).v(S.bitselect); break; }
      for (const x of e.args) push(x);
      b.v(ops[e.op]!);
      break;
    }
    case 'call': approx(approxOf(e)!, local(e.args[0]!)); break;
    default: throw new Error(`internal: the SIMD tier cannot render a ${e.t} node`);
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

/** Independent vectors per loop iteration: the approximations are long dependency chains, so the out-of-order core needs several in flight. */
const STREAMS = 4;

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
    if (e.t === 'const') { if (!Number.isNaN(e.v) && Math.fround(e.v) !== e.v) return false; continue; }
    if (e.t === 'op' || e.t === 'call') for (const a of e.args) count(a, false);
    else if (e.t === 'cast') count(e.x, e.dtype === 'float32');
  }
  for (const x of stored) count(x, true);
  return order.every((e) => e.t !== 'op' || !ROUNDED_OPS.has(e.op) || uses.get(e) === rounding.get(e));
}

function loopBody(k: LoopKernel, v: Var, u: Var | undefined, loads: readonly EwRegion[], order: readonly Expr[], f32: boolean): Body {
  // params n, base (the byte offset of the chunk block); i32 locals: i (byte offset), end; v128
  // locals: per stream, one per node and 6 scratch; then the constants (float64 splats, then float32 ones)
  const nodes = order.filter((e) => e.t !== 'const');
  const perStream = nodes.length + 6;
  // the float32 form: its own constants and 0, 1 in float32, the approximations' in float64
  const consts32 = new Set<number>(f32 ? [...order.flatMap((e) => (e.t === 'const' ? [e.v] : [])), 0, 1] : []);
  const own = (e: Expr) => F32_APPROX && Object.hasOwn(APPROX32, approxOf(e) ?? '');
  for (const e of order) if (f32 && own(e)) for (const x of APPROX32[approxOf(e)!]!.consts) consts32.add(x);
  const consts64 = f32 ? constsOf(order.filter((e) => e.t !== 'const' && !own(e))) : constsOf(order);
  const [N, BASE, I, END] = [0, 1, 2, 3];
  const base = 4;
  const b = new Body(2, [[2, I32], [STREAMS * perStream + consts64.size + consts32.size, V128]]);
  const c = new Consts(b, base + STREAMS * perStream, false);
  const c32 = new Consts(b, base + STREAMS * perStream + consts64.size, true);
  for (const x of consts64) c.get(x).ops(0x1a); // splat each constant once, before the loop (then drop)
  for (const x of consts32) c32.get(x).ops(0x1a);
  b.get(BASE).set(I);
  b.ops(op.block, 0x40).get(N).ops(op.i32Eqz, op.brIf, 0);
  b.get(N).i32(4).ops(op.i32Mul).get(BASE).ops(op.i32Add).set(END);
  b.ops(op.loop, 0x40);
  const width = f32 ? 16 : 8; // bytes per vector
  const cc = f32 ? c32 : c;
  // Node by node, each for every stream in turn: independent work stays close together in the code.
  const locals = Array.from({ length: STREAMS }, (_, st) => new Map<Expr, number>(nodes.map((e, i) => [e, base + st * perStream + i])));
  for (const e of nodes) {
    for (let st = 0; st < STREAMS; st++) {
      const local = locals[st]!;
      const push = (e: Expr) => (e.t === 'const' ? cc.get(e.v) : b.get(local.get(e)!));
      if (e.t === 'load') {
        const at = regionOf(loads, e.buf, rowAccess(e.index, v, u)!) * CHUNK * 4 + width * st;
        if (f32) b.get(I).v(S.load, ...memarg(0, at));
        else b.get(I).v(S.load64Zero, ...memarg(3, at)).v(S.promote);
      } else renderNode(b, c, e, push, (x) => local.get(x)!, base + st * perStream + nodes.length, f32 ? c32 : undefined);
      b.set(local.get(e)!);
    }
  }
  k.stores.forEach((s, j) => {
    for (let st = 0; st < STREAMS; st++) {
      const at = (loads.length + j) * CHUNK * 4 + width * st;
      b.get(I);
      if (s.value.t === 'const') cc.get(s.value.v); else b.get(locals[st]!.get(s.value)!);
      if (f32) b.v(S.store, ...memarg(0, at));
      else b.v(S.demote).v(S.store64Lane, ...memarg(3, at), 0);
    }
  });
  b.addTo(I, width * STREAMS);
  b.get(I).get(END).ops(op.i32LtU, op.brIf, 0, op.end, op.end);
  return b;
}

/**
 * An approximation in the float32 form: the float64 one (APPROX) on each half of the vector
 * (lanes 0-1, then 2-3 moved down by a shuffle, promoted to f64x2), demoted and joined, so the
 * result is the f64x2 form's value bit for bit. Scratch locals t..t+5 (the float64 one's t..t+3).
 */
function approxF32(b: Body, c: Consts, render: Approx, x: number, t: number): void {
  const [LO, HI] = [t + 4, t + 5];
  const high = [8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15];
  b.get(x).v(S.promote).set(LO);
  b.get(x).get(x).v(S.shuffle, ...high).v(S.promote).set(HI);
  render(b, c, LO, t); b.v(S.demote);
  render(b, c, HI, t); b.v(S.demote);
  b.v(S.shuffle, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
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
      b.v(S.v128Const, ...new Array<number>(16).fill(0)).v(S.promote).set(0);
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
  readonly par?: (lo: number, hi: number, loads: readonly Float32Array[], stores: readonly Float32Array[], offs: readonly number[]) => void;
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

/**
 * Loops at least this long are compiled over the shared memory and split over the threads (a chunk
 * per claim). Measured on 2 cores, the 1M-element tanh chain of bench/ took 15-18 ms over the shared
 * memory (split or not) against 12-13 ms over the private one (the calling thread copies every
 * chunk in and out either way), so only loops four times that long take the shared form.
 */
export const PARALLEL_MIN_ELEMENTS = 1 << 22;

export function sharedMem(bytes: number): Float32Array {
  if (sharedMemory === undefined) {
    sharedMemory = new WA!.Memory({ initial: Math.max(PAGES, Math.ceil(bytes / 65536)), maximum: SHARED_MAX_PAGES, shared: true });
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
function parallelRun(sid: number, regions: number, lo: number, hi: number, loads: readonly Float32Array[], stores: readonly Float32Array[], offs: readonly number[]): void {
  const blockFloats = regions * CHUNK;
  const m = sharedMem(Math.min(PASS_BLOCKS, Math.ceil((hi - lo) / CHUNK)) * blockFloats * 4);
  const threads = threadCount();
  const pool = threadPool();
  for (let p0 = lo; p0 < hi; p0 += PASS_BLOCKS * CHUNK) {
    const p1 = Math.min(hi, p0 + PASS_BLOCKS * CHUNK);
    const blocks = Math.ceil((p1 - p0) / CHUNK);
    for (let b = 0; b < blocks; b++) {
      const s = p0 + b * CHUNK, e = Math.min(p1, s + CHUNK);
      loads.forEach((a, j) => m.set(a.subarray(s + offs[j]!, e + offs[j]!), b * blockFloats + j * CHUNK));
    }
    const job = [1, sid, blocks, blockFloats * 4, CHUNK, p1 - p0 - (blocks - 1) * CHUNK] as const;
    if (threads > 1 && blocks > 1 && pool !== undefined) pool.run(threads, undefined, sharedRuns, job);
    else runHere(undefined, sharedRuns, job);
    for (let b = 0; b < blocks; b++) {
      const s = p0 + b * CHUNK, e = Math.min(p1, s + CHUNK);
      stores.forEach((a, j) => { const r = b * blockFloats + (loads.length + j) * CHUNK; a.set(m.subarray(r, r + e - s), s + offs[loads.length + j]!); });
    }
  }
}

/**
 * Runs shared kernel `sid` over `blocks` blocks of the shared memory (block b at byte
 * b * blockBytes, `per` units each, the last `last`), split over the threads: the form other
 * shared kernels (./reduce.ts) use with their own block layout.
 */
export function runBlocks(sid: number, blocks: number, blockBytes: number, per: number, last: number): void {
  const job = [1, sid, blocks, blockBytes, per, last] as const;
  const pool = threadPool();
  if (threadCount() > 1 && blocks > 1 && pool !== undefined) pool.run(threadCount(), undefined, sharedRuns, job);
  else runHere(undefined, sharedRuns, job);
}

/** The id of the kernel compiled from `bytes` (compiled once per process; generated code calls rt.ew(id)). */
export function ewKernelId(bytes: Uint8Array, shared = false, regions = 0): number {
  const key = Array.from(bytes, (x) => String.fromCharCode(x)).join('');
  let id = modules.get(key);
  if (id === undefined) {
    const module = new WA!.Module(bytes) as WasmModule;
    id = kernels.length;
    if (shared) {
      sharedMem(PAGES * 65536);
      const run = new WA!.Instance(module, { env: { mem: sharedMemory } }).exports['run'] as EwRun;
      const sid = sharedRuns.length;
      sharedRuns.push(run);
      threadPool(true)!.addEwModule(sid, module);
      kernels.push({
        run,
        get mem() { return sharedMem(0); },
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

/**
 * The JavaScript side of a tier kernel: chunks of the loop [lo, hi), each copied into the tier's
 * memory, computed, and copied out. Same parameters as renderLoopKernel's function.
 */
export function renderElementwise(p: EwPlan, bufName: (id: number) => string): { source: string; buffers: number[]; rows: number } {
  const id = ewKernelId(p.bytes, p.shared, p.loads.length + p.stores.length);
  const buffers = [...new Set([...p.loads.map((l) => l.buf), ...p.stores.map((s) => s.buf)])].sort((a, c) => a - c);
  const at = (x: string, off: number) => (off === 0 ? x : `${x} + ${off}`);
  if (p.cols !== undefined) {
    // Two loops: lo, hi are rows; whole rows per chunk, each copied on its own (a region read at
    // row stride `cols` is one contiguous copy per chunk).
    const cols = p.cols;
    const per = Math.floor(CHUNK / cols);
    const rowAt = (r: EwRegion, row: string) => (r.row === 0 ? String(r.off) : at(`${row} * ${r.row}`, r.off));
    const copyIn = p.loads.map((l, j) => l.row === cols
      ? `    m.set(${bufName(l.buf)}.subarray(${rowAt(l, 'r0')}, ${rowAt(l, 'r1')}), ${j * CHUNK});`
      : `    for (let r = r0, o = ${j * CHUNK}; r < r1; r++, o += ${cols}) m.set(${bufName(l.buf)}.subarray(${rowAt(l, 'r')}, ${rowAt(l, 'r')} + ${cols}), o);`);
    const copyOut = p.stores.map((x, j) => {
      const o = (p.loads.length + j) * CHUNK;
      return x.row === cols
        ? `    ${bufName(x.buf)}.set(m.subarray(${o}, ${o} + (r1 - r0) * ${cols}), ${rowAt(x, 'r0')});`
        : `    for (let r = r0, o = ${o}; r < r1; r++, o += ${cols}) ${bufName(x.buf)}.set(m.subarray(o, o + ${cols}), ${rowAt(x, 'r')});`;
    });
    const lines2 = [
      `  const w = rt.ew(${id});`,
      '  const m = w.mem;',
      `  for (let r0 = lo; r0 < hi; r0 += ${per}) {`,
      `    const r1 = hi < r0 + ${per} ? hi : r0 + ${per};`,
      ...copyIn,
      `    w.run((r1 - r0) * ${cols}, 0);`,
      ...copyOut,
      '  }',
    ];
    const source = `function k(${[...buffers.map(bufName), 'lo', 'hi'].join(', ')}) { // WebAssembly SIMD ${p.f32 ? 'f32x4' : 'f64x2'}, ${p.rows} rows of ${cols}: ${p.label.replace(/[^\w,. -]/g, '')}\n${lines2.join('\n')}\n}`;
    return { source, buffers, rows: p.rows! };
  }
  const lines = [
    `  const w = rt.ew(${id});`,
    ...(p.shared ? [
      `  if (hi - lo >= ${PARALLEL_MIN_ELEMENTS}) { w.par(lo, hi, [${p.loads.map((l) => bufName(l.buf)).join(', ')}], [${p.stores.map((x) => bufName(x.buf)).join(', ')}], [${[...p.loads, ...p.stores].map((x) => x.off).join(', ')}]); return; }`,
    ] : []),
    '  const m = w.mem;',
    `  for (let s = lo; s < hi; s += ${CHUNK}) {`,
    `    const e = hi < s + ${CHUNK} ? hi : s + ${CHUNK};`,
    ...p.loads.map((l, j) => `    m.set(${bufName(l.buf)}.subarray(${at('s', l.off)}, ${at('e', l.off)}), ${j * CHUNK});`),
    '    w.run(e - s, 0);',
    ...p.stores.map((s, j) => `    ${bufName(s.buf)}.set(m.subarray(${(p.loads.length + j) * CHUNK}, ${(p.loads.length + j) * CHUNK} + e - s), ${at('s', s.off)});`),
    '  }',
  ];
  const source = `function k(${[...buffers.map(bufName), 'lo', 'hi'].join(', ')}) { // WebAssembly SIMD ${p.f32 ? 'f32x4' : 'f64x2'}: ${p.label.replace(/[^\w,. -]/g, '')}\n${lines.join('\n')}\n}`;
  return { source, buffers, rows: p.n };
}
