// Scalar expressions of the kernel IR as WGSL: a table of spellings keyed by the kernel IR's
// scalar op, plus helper functions for the ops WGSL's built-ins do not give as the reference
// computes them (tinygrad's renderer/wgsl.py is the anchor: a shared `code_for_op` table with a
// few overrides). Values are f32 on the device; index arithmetic is i32 (render.ts). WGSL lets
// an implementation assume no NaN or infinity, so NaN-aware forms are not attempted here.
import type { OpName } from '../../ir/registry.js';
import type { DType } from '../../ir/dtype.js';
import { KERNEL_ROWS, type ScalarOp } from '../kernel/expr.js';
import { elementwiseOps, type ElementwiseOp } from '../../ir/ops/elementwise.js';

type Render = (a: readonly string[]) => string;
const fn =
  (name: string): Render =>
  (a) =>
    `${name}(${a.join(', ')})`;
const bin =
  (op: string): Render =>
  ([x, y]) =>
    `(${x} ${op} ${y})`;
/** A condition as 0/1 in f32. */
const cond = (c: string): string => `select(0.0, 1.0, ${c})`;
const cmp =
  (op: string): Render =>
  ([x, y]) =>
    cond(`${x} ${op} ${y}`);

/** WGSL of each scalar op on f32 operands (the index arithmetic's i32 forms are INDEX_OPS). */
export const WGSL_OPS: Readonly<Partial<Record<ScalarOp, Render>>> = {
  add: bin('+'),
  sub: bin('-'),
  mul: bin('*'),
  div: bin('/'),
  pow: fn('t_pow'),
  mod: fn('t_mod'),
  max: fn('max'),
  min: fn('min'),
  neg: ([x]) => `(-${x})`,
  abs: fn('abs'),
  sign: fn('sign'),
  floor: fn('floor'),
  ceil: fn('ceil'),
  // WGSL's round breaks ties to even, as NumPy's does.
  round: fn('round'),
  sqrt: fn('sqrt'),
  exp: fn('exp'),
  log: fn('log'),
  sin: fn('sin'),
  cos: fn('cos'),
  // The rows' WGSL helpers (log1p, expm1, and the hyperbolic tangent, whose WGSL built-in is
  // specified through sinh/cosh: inaccurate near 0, overflowing for large |x|).
  ...Object.fromEntries(
    [...KERNEL_ROWS].filter(([, r]) => r.spelling.wgsl !== undefined).map(([op, r]) => [op, fn(r.spelling.wgsl!)]),
  ),
  recip: ([x]) => `(1.0 / ${x})`,
  eq: cmp('=='),
  ne: cmp('!='),
  gt: cmp('>'),
  ge: cmp('>='),
  lt: cmp('<'),
  le: cmp('<='),
  and: ([x, y]) => cond(`${x} != 0.0 && ${y} != 0.0`),
  or: ([x, y]) => cond(`${x} != 0.0 || ${y} != 0.0`),
  not: ([x]) => cond(`${x} == 0.0`),
  // On the bits: a finite-math optimizer may fold x != x to false.
  isnan: ([x]) => cond(`(bitcast<u32>(${x}) & 0x7fffffffu) > 0x7f800000u`),
  select: ([c, a, b]) => `select(${b}, ${a}, ${c} != 0.0)`,
  idiv: ([x, y]) => `floor(${x} / ${y})`,
  imod: fn('t_mod'),
};

/** The index arithmetic in i32 (floor division and modulo for any sign). */
export const INDEX_OPS: Readonly<Partial<Record<ScalarOp, Render>>> = {
  add: bin('+'),
  sub: bin('-'),
  mul: bin('*'),
  idiv: bin('/'),
  imod: bin('%'),
  div: fn('t_fdiv'),
  mod: fn('t_fmod'),
  // floor of a floor division (schedule.ts spells a division of a signed index so) is that division.
  floor: ([x]) => x!,
  max: fn('max'),
  min: fn('min'),
};

/** Elementwise ops without a scalar op, called through their scalar function: their WGSL helper. */
export const WGSL_CALLS: Partial<Record<OpName, Render>> = Object.fromEntries(
  (Object.values(elementwiseOps) as readonly ElementwiseOp[])
    .filter((r) => r.spelling.kernel === undefined && r.spelling.wgsl !== undefined)
    .map((r) => [r.name, fn(r.spelling.wgsl!)]),
);

interface Helper {
  readonly source: string;
  readonly uses?: readonly string[];
}

const HELPERS: Readonly<Record<string, Helper>> = {
  // Goldberg's log1p and Kahan's expm1 (as the gpu.js renderer, src/codegen/gpu/scalar.ts).
  t_log1p: {
    source: 'fn t_log1p(x: f32) -> f32 { let u = 1.0 + x; if (u == 1.0) { return x; } return log(u) * x / (u - 1.0); }',
  },
  t_expm1: {
    source:
      'fn t_expm1(x: f32) -> f32 { if (x > 80.0) { return exp(x); } let u = exp(x); if (u == 1.0) { return x; } let um = u - 1.0; if (um == -1.0) { return -1.0; } return um * x / log(u); }',
  },
  t_tanh: {
    source:
      'fn t_tanh(x: f32) -> f32 { if (x > 20.0) { return 1.0; } if (x < -20.0) { return -1.0; } let e = t_expm1(2.0 * x); return e / (e + 2.0); }',
    uses: ['t_expm1'],
  },
  t_sigmoid: {
    source:
      'fn t_sigmoid(x: f32) -> f32 { if (x >= 0.0) { return 1.0 / (1.0 + exp(-x)); } let e = exp(x); return e / (1.0 + e); }',
  },
  t_softplus: {
    source: 'fn t_softplus(x: f32) -> f32 { return max(x, 0.0) + t_log1p(exp(-abs(x))); }',
    uses: ['t_log1p'],
  },
  // Abramowitz-Stegun 7.1.26: |error| < 1.5e-7.
  t_erf: {
    source:
      'fn t_erf(x: f32) -> f32 { let a = abs(x); let t = 1.0 / (1.0 + 0.3275911 * a); let y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * exp(-a * a); return select(y, -y, x < 0.0); }',
  },
  // Python's modulo: the sign of the divisor.
  t_mod: { source: 'fn t_mod(a: f32, b: f32) -> f32 { return a - b * floor(a / b); }' },
  // x ** y for any sign of x (WGSL's pow is undefined for x < 0): integer powers of negatives by parity.
  t_pow: {
    source:
      'fn t_pow(x: f32, y: f32) -> f32 { if (y == 0.0) { return 1.0; } if (x == 0.0) { if (y < 0.0) { return 1.0 / x; } return 0.0; } if (x > 0.0) { return pow(x, y); } if (floor(y) != y) { return (x - x) / (x - x); } let p = pow(-x, y); if (y - 2.0 * floor(y * 0.5) != 0.0) { return -p; } return p; }',
  },
  t_fdiv: {
    source:
      'fn t_fdiv(a: i32, b: i32) -> i32 { let q = a / b; if ((a % b != 0) && ((a < 0) != (b < 0))) { return q - 1; } return q; }',
  },
  t_fmod: {
    source:
      'fn t_fmod(a: i32, b: i32) -> i32 { let r = a % b; if (r != 0 && ((r < 0) != (b < 0))) { return r + b; } return r; }',
  },
  // Philox-4x32-10 in u32 lanes, the reference's counter and key per element (src/ir/random.ts).
  t_mulhi: {
    source:
      'fn t_mulhi(a: u32, b: u32) -> u32 { let al = a & 0xffffu; let ah = a >> 16u; let bl = b & 0xffffu; let bh = b >> 16u; let ll = al * bl; let hl = ah * bl; let lh = al * bh; let mid = (ll >> 16u) + (hl & 0xffffu) + (lh & 0xffffu); return ah * bh + (hl >> 16u) + (lh >> 16u) + (mid >> 16u); }',
  },
  t_philox: {
    source:
      'fn t_philox(i: u32, t: u32, stream: u32, k0: u32, k1: u32) -> vec4u { var x = vec4u(i, 0u, t, stream); var key0 = k0; var key1 = k1; for (var r = 0; r < 10; r++) { if (r > 0) { key0 += 0x9e3779b9u; key1 += 0xbb67ae85u; } let hi0 = t_mulhi(0xd2511f53u, x.x); let lo0 = 0xd2511f53u * x.x; let hi1 = t_mulhi(0xcd9e8d57u, x.z); let lo1 = 0xcd9e8d57u * x.z; x = vec4u(hi1 ^ x.y ^ key0, lo1, hi0 ^ x.w ^ key1, lo0); } return x; }',
    uses: ['t_mulhi'],
  },
  // A uniform with 53 bits (27 from hi, 26 from lo), and 1 minus it, both without rounding to 0 or 1 first.
  t_unit53: {
    source:
      'fn t_unit53(hi: u32, lo: u32) -> f32 { return f32(hi >> 5u) * 7.450580596923828e-9 + f32(lo >> 6u) * 1.1102230246251565e-16; }',
  },
  t_normal: {
    source:
      'fn t_normal(w: vec4u) -> f32 { let u1 = f32(134217728u - (w.x >> 5u)) * 7.450580596923828e-9 - f32(w.y >> 6u) * 1.1102230246251565e-16; return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * t_unit53(w.z, w.w)); }',
    uses: ['t_unit53'],
  },
  // truncated_normal: the first of 64 attempts within two standard deviations, else 0 (as the reference).
  t_truncnormal: {
    source:
      'fn t_truncnormal(i: u32, stream: u32, k0: u32, k1: u32) -> f32 { for (var t = 0u; t < 64u; t++) { let z = t_normal(t_philox(i, t, stream, k0, k1)); if (abs(z) <= 2.0) { return z; } } return 0.0; }',
    uses: ['t_normal', 't_philox'],
  },
  // A value stored into an integer dtype: truncated; NaN and infinities (all exponent bits set: a test
  // on the bits, which no finite-math assumption folds away) are 0, as a typed array stores them (integer mod by 0).
  t_int: {
    source:
      'fn t_int(x: f32) -> f32 { if ((bitcast<u32>(x) & 0x7f800000u) == 0x7f800000u) { return 0.0; } return trunc(x); }',
  },
  t_bits: { source: 'fn t_bits(b: u32) -> f32 { return bitcast<f32>(b); }' },
  t_row: { source: 'fn t_row(x: i32, rows: i32) -> i32 { return select(x, x + rows, x < 0); }' },
};

/** The helper functions a shader body calls (each after those it calls). */
export function helperSources(body: string): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const visit = (n: string): void => {
    if (seen.has(n)) return;
    seen.add(n);
    const h = HELPERS[n];
    if (h === undefined) throw new Error(`internal: no WGSL helper ${n}`);
    for (const u of h.uses ?? []) visit(u);
    out.push(h.source);
  };
  for (const n of new Set(body.match(/\bt_[a-z0-9]+(?=\()/g) ?? [])) visit(n);
  return out;
}

const F32_MAX = 3.4028234663852886e38;

/** An f32 literal (infinities and NaN through their bits: WGSL has no literal for them). */
export function f32Literal(v: number): string {
  // Through a function of its argument: a constant expression that is not finite does not compile.
  if (Number.isNaN(v)) return 't_bits(0x7fc00000u)';
  if (Math.abs(v) > F32_MAX) return v > 0 ? 't_bits(0x7f800000u)' : 't_bits(0xff800000u)';
  const f = Math.fround(v);
  const s = Object.is(f, -0) ? '-0.0' : String(f);
  const lit = /[.e]/.test(s) ? s : `${s}.0`;
  return `${lit}f`;
}

/** An i32 literal (index constants are whole numbers within i32). */
export function i32Literal(v: number): string {
  // NaN arises only from index arithmetic over an extent of 0 (a division by it), in a loop of no iterations.
  if (Number.isNaN(v)) return '0i';
  if (!Number.isInteger(v) || Math.abs(v) > 2 ** 31 - 1) throw new Error(`internal: ${v} is not an i32 index constant`);
  return v < 0 ? `(${v}i)` : `${v}i`;
}

/** How the device holds a buffer's elements: f32, i32, or f16 (float16 on a device with `shader-f16`). */
export type Storage = 'f32' | 'i32' | 'f16';

/**
 * How the device stores a dtype: f32 (float32; float16 values as f32 unless `half`; float64
 * computed in float32, as the tensorflow backend does, with a warning from the runtime), f16
 * (float16 where `half`: the adapter has `shader-f16`), or i32 (the integer dtypes below 64 bits and bool).
 */
export function storageOf(dtype: DType, half = false): Storage | undefined {
  switch (dtype) {
    case 'float16':
      return half ? 'f16' : 'f32';
    case 'float32':
    case 'float64':
      return 'f32';
    case 'int32':
    case 'int16':
    case 'int8':
    case 'uint8':
    case 'bool':
      return 'i32';
    default:
      return undefined;
  }
}

/** A rounded f32 value (roundAs) as a store into a buffer of storage `ty` writes it. */
export function storeAs(ty: Storage, v: string): string {
  return ty === 'f32' ? v : `${ty}(${v})`;
}

/** Bytes per element of a storage. */
export const storageBytes = (ty: Storage | undefined): number => (ty === 'f16' ? 2 : 4);

/** An f32 value rounded as a store of `dtype` keeps it, still as f32 (integers truncate and wrap; bool is 0/1). */
export function roundAs(dtype: DType, x: string): string {
  switch (dtype) {
    case 'float32':
    case 'float64':
      return x;
    case 'float16':
      return `quantizeToF16(${x})`;
    case 'bool':
      return `select(0.0, 1.0, ${x} != 0.0)`;
    case 'int32':
      return `t_int(${x})`;
    case 'int16':
      return `(t_mod(t_int(${x}) + 32768.0, 65536.0) - 32768.0)`;
    case 'int8':
      return `(t_mod(t_int(${x}) + 128.0, 256.0) - 128.0)`;
    case 'uint8':
      return `t_mod(t_int(${x}), 256.0)`;
    default:
      throw new Error(`internal: WGSL does not store ${dtype}`);
  }
}
