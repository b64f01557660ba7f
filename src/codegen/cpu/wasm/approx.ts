// The WebAssembly SIMD tier's shared pieces: the SIMD opcodes, v128 constants splatted once
// before a loop (Consts), and the vector approximations of the functions WebAssembly has no
// instruction for, in f64x2 lanes (APPROX: about 4e-16 to 3e-15 relative in float64) and in f32x4
// lanes (APPROX32: the float32 form's bounds, docs/architecture.md "Elementwise approximations").
// The tier's loop kinds (elementwise.ts, reduce.ts, pool.ts) render nodes with them.
import { op, type Body } from './encode.js';

// SIMD opcodes used here (after the 0xfd prefix).
export const S = {
  load64Zero: 0x5d,
  store64Lane: 0x5b,
  demote: 0x5e,
  promote: 0x5f,
  v128Const: 0x0c,
  splat: 0x14,
  abs: 0xec,
  neg: 0xed,
  sqrt: 0xef,
  add: 0xf0,
  sub: 0xf1,
  mul: 0xf2,
  div: 0xf3,
  min: 0xf4,
  max: 0xf5,
  // as F32's pmin/pmax: clamps to a constant, NaN kept, one x64 instruction
  pmin: 0xf6,
  pmax: 0xf7,
  eq: 0x47,
  ne: 0x48,
  lt: 0x49,
  gt: 0x4a,
  le: 0x4b,
  ge: 0x4c,
  and: 0x4e,
  or: 0x50,
  not: 0x4d,
  bitselect: 0x52,
  nearest: 0x94,
  truncSatZero: 0xfc,
  extendLowS: 0xc7,
  i64Add: 0xce,
  i64Shl: 0xcb,
  i64ShrU: 0xcd,
  load: 0x00,
  store: 0x0b,
  shuffle: 0x0d,
  f32Splat: 0x13,
  // i32x4 shifts and subtraction (the float32 exponent's bits)
  i32x4Shl: 0xab,
  i32x4ShrS: 0xac,
  i32x4Sub: 0xb1,
} as const;

/** The same operations on f32x4 lanes (the float32 form of a kernel: see f32Exact). */
export const F32: Readonly<Record<string, number>> = {
  abs: 0xe0,
  neg: 0xe1,
  sqrt: 0xe3,
  add: 0xe4,
  sub: 0xe5,
  mul: 0xe6,
  div: 0xe7,
  min: 0xe8,
  max: 0xe9,
  eq: 0x41,
  ne: 0x42,
  lt: 0x43,
  gt: 0x44,
  le: 0x45,
  ge: 0x46,
  // pmin(a, b) = b < a ? b : a, pmax(a, b) = a < b ? b : a: one x64 instruction each where min and
  // max take several (NaN, signed zeros); with a constant b they clamp as min/max do, NaN in a kept
  pmin: 0xea,
  pmax: 0xeb,
};

/** Float64 (or float32) constants as v128 locals, splatted once before the loop (not once per iteration). */
export class Consts {
  private readonly at = new Map<string, number>();
  constructor(
    private readonly b: Body,
    private next: number,
    private readonly f32 = false,
  ) {}
  /** Pushes the constant (allocating its local on first use: call prepare() first for every constant). */
  get(x: number): Body {
    const key = Object.is(x, -0) ? '-0' : String(x);
    let l = this.at.get(key);
    if (l === undefined) {
      l = this.next++;
      this.at.set(key, l);
      if (this.f32)
        this.b
          .ops(op.f32Const, ...new Uint8Array(new Float32Array([x]).buffer))
          .v(S.f32Splat)
          .set(l);
      else
        this.b
          .ops(op.f64Const, ...new Uint8Array(new Float64Array([x]).buffer))
          .v(S.splat)
          .set(l);
    }
    return this.b.get(l);
  }
  get count(): number {
    return this.at.size;
  }
}

// biome-ignore lint/correctness/noPrecisionLoss: fdlibm's digits, which round to the intended double
const LN2_HI = 6.9314718036912381649e-1;
// biome-ignore lint/correctness/noPrecisionLoss: as above
const LN2_LO = 1.90821492927058770002e-10;
/** 1/n!, n = 1..12: expm1's Taylor coefficients. */
const EXPM1: number[] = [];
for (let n = 1, f = 1; n <= 12; n++) {
  f *= n;
  EXPM1.push(1 / f);
}
/** 1/(2j + 1), j = 0..10: log(1+f) = 2s (1 + s^2/3 + s^4/5 + ...), s = f/(2+f). */
const ATANH: number[] = Array.from({ length: 11 }, (_, j) => 1 / (2 * j + 1));
const APPROX_CONSTS = [20, 2, 1, 0, -110, 110, 100, Math.LOG2E, LN2_HI, LN2_LO, ...EXPM1];
const LOG_CONSTS = [
  0,
  0.5,
  1,
  2,
  54,
  2 ** -1022,
  2 ** 54,
  2 ** 52 + 1023,
  Math.SQRT2,
  LN2_HI,
  LN2_LO,
  -Infinity,
  Infinity,
  NaN,
  ...ATANH,
];

/**
 * From y (local Y, |y| <= 160, or NaN): K2 := 2^k and P := e^r - 1 with y = k ln2 + r,
 * |r| <= ln2/2 (Cody-Waite: k ln2_hi is exact), e^r - 1 by its Taylor series to r^12/12!
 * (truncation below 2e-16 relative), 2^k exactly from its bits ((k + 1023) << 52).
 * Then e^y = 2^k P + 2^k and e^y - 1 = 2^k P + (2^k - 1), both without cancellation.
 */
function expParts(b: Body, c: Consts, Y: number, K2: number, P: number): void {
  b.get(Y);
  c.get(Math.LOG2E).v(S.mul).v(S.nearest).set(K2); // k (as f64)
  b.get(Y).get(K2);
  c.get(LN2_HI).v(S.mul).v(S.sub);
  b.get(K2);
  c.get(LN2_LO).v(S.mul).v(S.sub).set(P); // P := r
  c.get(EXPM1[11]!);
  for (let n = 10; n >= 0; n--) {
    b.get(P).v(S.mul);
    c.get(EXPM1[n]!).v(S.add);
  }
  b.get(P).v(S.mul).set(P);
  b.get(K2)
    .v(S.truncSatZero)
    .v(S.extendLowS)
    .v(S.v128Const, ...i64x2(1023))
    .v(S.i64Add)
    .i32(52)
    .v(S.i64Shl)
    .set(K2);
}

export type Approx = (b: Body, c: Consts, x: number, t: number) => void;

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
  b.get(x).v(S.abs);
  c.get(20).v(S.pmin);
  c.get(2).v(S.mul).set(Y);
  expParts(b, c, Y, K2, P);
  b.get(K2).get(P).v(S.mul).get(K2);
  c.get(1).v(S.sub).v(S.add).set(P); // em1
  b.get(P).get(P);
  c.get(2).v(S.add).v(S.div);
  b.get(x)
    .v(S.v128Const, ...i64x2(-1, 0x7fffffff))
    .v(S.bitselect); // x's sign bit
};
const expApprox: Approx = (b, c, x, t) => {
  const [Y, K2, P] = [t, t + 1, t + 2];
  b.get(x);
  c.get(-110).v(S.pmax);
  c.get(100).v(S.pmin).set(Y);
  expParts(b, c, Y, K2, P);
  b.get(K2).get(P).v(S.mul).get(K2).v(S.add);
};
const sigmoidApprox: Approx = (b, c, x, t) => {
  const [Y, K2, P] = [t, t + 1, t + 2];
  b.get(x).v(S.abs);
  c.get(110).v(S.pmin).v(S.neg).set(Y);
  expParts(b, c, Y, K2, P);
  b.get(K2).get(P).v(S.mul).get(K2).v(S.add).set(P); // e
  b.get(P);
  c.get(1).v(S.add).set(Y); // d = 1 + e
  c.get(1).get(Y).v(S.div);
  b.get(P).get(Y).v(S.div); // 1/d, e/d
  b.get(x);
  c.get(0).v(S.ge).v(S.bitselect); // where x >= 0: 1/d
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
  b.get(x);
  c.get(2 ** -1022)
    .v(S.lt)
    .set(Z); // small: subnormal (or not positive: replaced below)
  b.get(x);
  c.get(2 ** 54).v(S.mul);
  b.get(x).get(Z).v(S.bitselect).set(Y);
  c.get(54);
  c.get(0);
  b.get(Z).v(S.bitselect).set(K2);
  // k = biased exponent - 1023 - scaling, as float64: (2^52 + e) - (2^52 + 1023)
  b.get(Y)
    .i32(52)
    .v(S.i64ShrU)
    .v(S.v128Const, ...i64x2(0, 0x43300000))
    .v(S.or);
  c.get(2 ** 52 + 1023).v(S.sub);
  b.get(K2).v(S.sub).set(K2);
  b.get(Y)
    .v(S.v128Const, ...i64x2(-1, 0x000fffff))
    .v(S.and)
    .v(S.v128Const, ...i64x2(0, 0x3ff00000))
    .v(S.or)
    .set(P); // m in [1, 2)
  b.get(P);
  c.get(Math.SQRT2).v(S.gt).set(Z);
  b.get(P);
  c.get(0.5).v(S.mul);
  b.get(P).get(Z).v(S.bitselect);
  c.get(1).v(S.sub).set(P); // f
  b.get(K2);
  c.get(1);
  c.get(0);
  b.get(Z).v(S.bitselect).v(S.add).set(K2);
  b.get(P).get(P);
  c.get(2).v(S.add).v(S.div).set(Y); // s
  b.get(Y).get(Y).v(S.mul).set(Z); // s^2
  c.get(ATANH[10]!);
  for (let j = 9; j >= 0; j--) {
    b.get(Z).v(S.mul);
    c.get(ATANH[j]!).v(S.add);
  }
  b.get(Y).v(S.mul);
  c.get(2).v(S.mul).set(P); // log(1+f)
  b.get(K2);
  c.get(LN2_HI).v(S.mul);
  b.get(K2);
  c.get(LN2_LO).v(S.mul);
  b.get(P).v(S.add).v(S.add).set(Y);
  // special values: -Infinity for zeros, NaN below zero, x itself for NaN and Infinity
  c.get(-Infinity);
  b.get(x).get(x);
  c.get(0).v(S.eq).v(S.bitselect).set(Z);
  c.get(NaN);
  b.get(Z).get(x);
  c.get(0).v(S.lt).v(S.bitselect).set(Z);
  b.get(Y).get(Z).get(x);
  c.get(0).v(S.gt);
  b.get(x);
  c.get(Infinity).v(S.lt).v(S.and).v(S.bitselect);
};

/**
 * The functions the tier approximates, keyed by the name of the kernel IR's scalar op or of the
 * elementwise row whose scalar function a kernel calls (src/ir/ops/elementwise.ts), each with the
 * constants it reads.
 */
export const APPROX: Readonly<Record<string, { readonly render: Approx; readonly consts: readonly number[] }>> = {
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
/** 1/n!, n = 2..7, rounded to float32: (e^r - 1 - r) / r^2 to r^5/7! (truncation below 6e-9 for |r| <= ln2/2): tanh's and sigmoid's q. */
const EXPM1_32: number[] = [];
for (let n = 2, f = 2; n <= 7; n++, f *= n) EXPM1_32.push(Math.fround(1 / f));
/**
 * exp's q: the degree-4 polynomial nearest (e^r - 1 - r) / r^2 in the relative error it leaves in
 * e^r over |r| <= 0.3467 (minimax by Lawson's iteration, coefficients rounded to float32: at most
 * 3.7e-9, below the Taylor form's 7.3e-9 with one multiply-add fewer). exp's float32 result is
 * within 1 ulp with these over every float32 input (measured exhaustively, docs/numerics.md).
 * XNNPACK's float32 exp kernels use minimax coefficients the same way.
 */
const EXPM1_MINIMAX: readonly number[] = [
  0.4999999403953552, 0.1666652113199234, 0.04166838899254799, 0.008368738926947117, 0.0013814562698826194,
];
/** The shifter 1.5 * 2^23 (its float32 bits EXP32_SHIFT_BITS): t + it is t rounded to an integer, ties to even, in the low bits. */
const EXP32_SHIFT = 12582912;
const EXP32_SHIFT_BITS = 0x4b400000;
const EXP32_CONSTS = [
  Math.fround(Math.LOG2E),
  EXP32_C1,
  EXP32_C2,
  ...EXPM1_32,
  1,
  2,
  0,
  -104,
  89,
  104,
  9.5,
  EXP32_SHIFT,
];
/** The constants exp's float32 form reads (its q: EXPM1_MINIMAX). */
const EXP32_OWN_CONSTS = [Math.fround(Math.LOG2E), EXP32_C1, EXP32_C2, ...EXPM1_MINIMAX, 1, 89, -104, EXP32_SHIFT];

/** An i32x4 constant's bytes (all four lanes k). */
function i32x4(k: number): number[] {
  return Array.from(new Uint8Array(new Int32Array([k, k, k, k]).buffer));
}

/**
 * From y (local Y, f32x4, |y| <= 104, or NaN): K := k (as float32), KI := k + bias (as i32) and P := e^r - 1 with
 * y = k ln2 + r, |r| <= ln2/2 (Cody-Waite in two parts: y - k C1 is exact), e^r - 1 =
 * r + r^2 q(r), q's coefficients `q` (lowest first: EXPM1_32's 1/2! .. 1/7!, or EXPM1_MINIMAX) by Horner's rule in float32.
 */
function expParts32(
  b: Body,
  c: Consts,
  Y: number,
  K: number,
  P: number,
  KI: number,
  bias: number,
  q: readonly number[] = EXPM1_32,
): void {
  // k by the shifter: t + 1.5 * 2^23 rounds t = y log2(e) (|t| < 2^22) to an integer, ties to
  // even, as f32x4.nearest does, and holds it in its low bits: KI := k + bias as i32 from them
  // (no float-to-integer conversion, several instructions on x64), K := k as float32 (exact)
  b.get(Y);
  c.get(Math.fround(Math.LOG2E)).v(F32['mul']!);
  c.get(EXP32_SHIFT).v(F32['add']!).tee(KI);
  c.get(EXP32_SHIFT).v(F32['sub']!).set(K);
  b.get(KI)
    .v(S.v128Const, ...i32x4(EXP32_SHIFT_BITS - bias))
    .v(S.i32x4Sub)
    .set(KI);
  b.get(Y).get(K);
  c.get(EXP32_C1).v(F32['mul']!).v(F32['sub']!);
  b.get(K);
  c.get(EXP32_C2).v(F32['mul']!).v(F32['sub']!).set(P); // r
  c.get(q[q.length - 1]!);
  for (let n = q.length - 2; n >= 0; n--) {
    b.get(P).v(F32['mul']!);
    c.get(q[n]!).v(F32['add']!);
  }
  b.get(P).v(F32['mul']!).get(P).v(F32['mul']!).get(P).v(F32['add']!).set(P); // r + r^2 q
}

/**
 * exp: e^y, y = clamp(x, -104, 89) (beyond, float32 rounds to 0 or Infinity as fround(Math.exp(x))
 * does), as (1 + P) 2^k1 2^k2 with k1 = floor(k/2), k2 = k - k1: the first product is exact, the
 * second rounds once, also into the subnormals. q: exp's own (EXPM1_MINIMAX); sigmoid's exp keeps
 * the Taylor form its bound was measured with.
 */
const expWith =
  (q: readonly number[]): Approx =>
  (b, c, x, t) => {
    const [Y, K, P, K1] = [t, t + 1, t + 2, t + 3];
    b.get(x);
    c.get(-104).v(F32['pmax']!);
    c.get(89).v(F32['pmin']!).set(Y);
    expParts32(b, c, Y, K, P, K1, 254, q);
    // in i32x4 lanes from here: k + 254, (k + 254) >> 1 = k1 + 127 with k1 = floor(k/2), and
    // (k + 254) - (k1 + 127) = k2 + 127 with k2 = k - k1: each 2^k's exponent field, biased
    b.get(K1).tee(K).i32(1).v(S.i32x4ShrS).set(K1);
    b.get(P);
    c.get(1).v(F32['add']!);
    b.get(K1).i32(23).v(S.i32x4Shl).v(F32['mul']!);
    b.get(K).get(K1).v(S.i32x4Sub).i32(23).v(S.i32x4Shl).v(F32['mul']!);
  };
const expApprox32 = expWith(EXPM1_MINIMAX);
const expTaylor32 = expWith(EXPM1_32);

/**
 * exp of an argument known to be at most 0 or NaN (softmax's x - max of x's row: rowsBody): the
 * same value as expApprox32, bit for bit, in fewer instructions. y = max(x, -104) (NaN kept), so
 * k is in [-150, 0]: (1 + P) 2^(k + 64) is exact (a normal float32: k + 64 >= -86), and its
 * product by 2^-64 rounds once, as expApprox32's second product does, to the same value. XNNPACK's
 * softmax exp (f32-raddstoreexpminusmax) also uses that its argument is not positive.
 */
export const expNonPositive32: Approx = (b, c, x, t) => {
  // constants: EXP_NONPOSITIVE_CONSTS
  const [Y, K, P, KI] = [t, t + 1, t + 2, t + 3];
  b.get(x);
  c.get(-104).v(F32['pmax']!).set(Y);
  expParts32(b, c, Y, K, P, KI, 127 + 64, EXPM1_MINIMAX);
  b.get(P);
  c.get(1).v(F32['add']!);
  b.get(KI).i32(23).v(S.i32x4Shl).v(F32['mul']!);
  c.get(2 ** -64).v(F32['mul']!);
};

/** The constants expNonPositive32 reads. */
export const EXP_NONPOSITIVE_CONSTS: readonly number[] = [...EXP32_OWN_CONSTS, 2 ** -64];

/**
 * tanh: a = min(|x|, 9.5) (tanh(9.5) is 1 in float32), em1 = e^(2a) - 1 = 2^k P + (2^k - 1)
 * (no cancellation: both terms have a's sign), em1 / (em1 + 2) with x's sign (tanh(-0) = -0).
 */
const tanhApprox32: Approx = (b, c, x, t) => {
  const [Y, K, P, KI] = [t, t + 1, t + 2, t + 3];
  b.get(x).v(F32['abs']!);
  c.get(9.5).v(F32['pmin']!);
  c.get(2).v(F32['mul']!).set(Y);
  expParts32(b, c, Y, K, P, KI, 127);
  b.get(KI).i32(23).v(S.i32x4Shl).tee(K).get(P).v(F32['mul']!).get(K);
  c.get(1).v(F32['sub']!).v(F32['add']!).set(P); // em1
  b.get(P).get(P);
  c.get(2).v(F32['add']!).v(F32['div']!);
  b.get(x)
    .v(S.v128Const, ...i32x4(0x7fffffff))
    .v(S.bitselect); // x's sign bit
};

/**
 * sigmoid: e = e^-min(|x|, 104) (as exp above), 1 / (1 + e) for x >= 0, e / (1 + e) otherwise,
 * the reference's two branches. NaN stays NaN.
 */
const sigmoidApprox32: Approx = (b, c, x, t) => {
  const [Y, E, D] = [t, t + 1, t + 2];
  b.get(x).v(F32['abs']!);
  c.get(104).v(F32['pmin']!).v(F32['neg']!).set(Y);
  expTaylor32(b, c, Y, t + 1); // scratch t+1..t+4
  b.set(E);
  b.get(E);
  c.get(1).v(F32['add']!).set(D); // d = 1 + e
  c.get(1).get(D).v(F32['div']!);
  b.get(E).get(D).v(F32['div']!); // 1/d, e/d
  b.get(x);
  c.get(0).v(F32['ge']!).v(S.bitselect); // where x >= 0: 1/d
};

/** The float32 form's approximations (four lanes), keyed as APPROX; log runs APPROX's on each half (approxF32). */
export const APPROX32: Readonly<Record<string, { readonly render: Approx; readonly consts: readonly number[] }>> = {
  tanh: { render: tanhApprox32, consts: EXP32_CONSTS },
  exp: { render: expApprox32, consts: EXP32_OWN_CONSTS },
  sigmoid: { render: sigmoidApprox32, consts: EXP32_CONSTS },
};

/** An i64x2 constant's bytes (both lanes: low word lo, high word hi). */
export function i64x2(lo: number, hi = 0): number[] {
  const w = new Int32Array([lo, hi, lo, hi]);
  return Array.from(new Uint8Array(w.buffer));
}

/**
 * An approximation in the float32 form: the float64 one (APPROX) on each half of the vector
 * (lanes 0-1, then 2-3 moved down by a shuffle, promoted to f64x2), demoted and joined, so the
 * result is the f64x2 form's value bit for bit. Scratch locals t..t+5 (the float64 one's t..t+3).
 */
export function approxF32(b: Body, c: Consts, render: Approx, x: number, t: number): void {
  const [LO, HI] = [t + 4, t + 5];
  const high = [8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15];
  b.get(x).v(S.promote).set(LO);
  b.get(x)
    .get(x)
    .v(S.shuffle, ...high)
    .v(S.promote)
    .set(HI);
  render(b, c, LO, t);
  b.v(S.demote);
  render(b, c, HI, t);
  b.v(S.demote);
  b.v(S.shuffle, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
}
