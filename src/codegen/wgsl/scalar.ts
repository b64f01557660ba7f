// Scalar expressions of the kernel IR as WGSL: a table of spellings keyed by the kernel IR's
// scalar op, plus helper functions for the ops WGSL's built-ins do not give as the reference
// computes them (tinygrad's renderer/wgsl.py is the anchor: a shared `code_for_op` table with a
// few overrides). Values are f32 on the device; index arithmetic is i32 (render.ts). WGSL lets
// an implementation assume no NaN or infinity, so NaN-aware forms are not attempted here.
import type { OpName } from '../../ir/registry.js';
import type { DType } from '../../ir/dtype.js';
import type { ScalarOp } from '../expr.js';

type Render = (a: readonly string[]) => string;
const fn = (name: string): Render => (a) => `${name}(${a.join(', ')})`;
const bin = (op: string): Render => ([x, y]) => `(${x} ${op} ${y})`;
/** A condition as 0/1 in f32. */
const cond = (c: string): string => `select(0.0, 1.0, ${c})`;
const cmp = (op: string): Render => ([x, y]) => cond(`${x} ${op} ${y}`);

/** WGSL of each scalar op on f32 operands (the index arithmetic's i32 forms are INDEX_OPS). */
export const WGSL_OPS: Readonly<Partial<Record<ScalarOp, Render>>> = {
  add: bin('+'), sub: bin('-'), mul: bin('*'), div: bin('/'),
  pow: fn('t_pow'), mod: fn('t_mod'),
  max: fn('max'), min: fn('min'),
  neg: ([x]) => `(-${x})`,
  abs: fn('abs'), sign: fn('sign'), floor: fn('floor'), ceil: fn('ceil'),
  // WGSL's round breaks ties to even, as NumPy's does.
  round: fn('round'),
  sqrt: fn('sqrt'), exp: fn('exp'), log: fn('log'), sin: fn('sin'), cos: fn('cos'),
  log1p: fn('t_log1p'), expm1: fn('t_expm1'),
  // WGSL's tanh is specified through sinh/cosh (inaccurate near 0, overflowing for large |x|).
  tanh: fn('t_tanh'),
  recip: ([x]) => `(1.0 / ${x})`,
  eq: cmp('=='), ne: cmp('!='), gt: cmp('>'), ge: cmp('>='), lt: cmp('<'), le: cmp('<='),
  and: ([x, y]) => cond(`${x} != 0.0 && ${y} != 0.0`),
  or: ([x, y]) => cond(`${x} != 0.0 || ${y} != 0.0`),
  not: ([x]) => cond(`${x} == 0.0`),
  isnan: ([x]) => cond(`${x} != ${x}`),
  select: ([c, a, b]) => `select(${b}, ${a}, ${c} != 0.0)`,
  idiv: ([x, y]) => `floor(${x} / ${y})`,
  imod: fn('t_mod'),
};

/** The index arithmetic in i32 (floor division and modulo for any sign). */
export const INDEX_OPS: Readonly<Partial<Record<ScalarOp, Render>>> = {
  add: bin('+'), sub: bin('-'), mul: bin('*'),
  idiv: bin('/'), imod: bin('%'),
  div: fn('t_fdiv'), mod: fn('t_fmod'),
  // floor of a floor division (schedule.ts spells a division of a signed index so) is that division.
  floor: ([x]) => x!,
  max: fn('max'), min: fn('min'),
};

/** Elementwise ops without a scalar op, called through their scalar function: their WGSL helper. */
export const WGSL_CALLS: Partial<Record<OpName, Render>> = {
  sigmoid: fn('t_sigmoid'),
  softplus: fn('t_softplus'),
  erf: fn('t_erf'),
};

interface Helper { readonly source: string; readonly uses?: readonly string[] }

const HELPERS: Readonly<Record<string, Helper>> = {
  // Goldberg's log1p and Kahan's expm1 (as the gpu.js renderer, src/codegen/gpu/scalar.ts).
  t_log1p: { source: 'fn t_log1p(x: f32) -> f32 { let u = 1.0 + x; if (u == 1.0) { return x; } return log(u) * x / (u - 1.0); }' },
  t_expm1: { source: 'fn t_expm1(x: f32) -> f32 { if (x > 80.0) { return exp(x); } let u = exp(x); if (u == 1.0) { return x; } let um = u - 1.0; if (um == -1.0) { return -1.0; } return um * x / log(u); }' },
  t_tanh: { source: 'fn t_tanh(x: f32) -> f32 { if (x > 20.0) { return 1.0; } if (x < -20.0) { return -1.0; } let e = t_expm1(2.0 * x); return e / (e + 2.0); }', uses: ['t_expm1'] },
  t_sigmoid: { source: 'fn t_sigmoid(x: f32) -> f32 { if (x >= 0.0) { return 1.0 / (1.0 + exp(-x)); } let e = exp(x); return e / (1.0 + e); }' },
  t_softplus: { source: 'fn t_softplus(x: f32) -> f32 { return max(x, 0.0) + t_log1p(exp(-abs(x))); }', uses: ['t_log1p'] },
  // Abramowitz-Stegun 7.1.26: |error| < 1.5e-7.
  t_erf: { source: 'fn t_erf(x: f32) -> f32 { let a = abs(x); let t = 1.0 / (1.0 + 0.3275911 * a); let y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * exp(-a * a); return select(y, -y, x < 0.0); }' },
  // Python's modulo: the sign of the divisor.
  t_mod: { source: 'fn t_mod(a: f32, b: f32) -> f32 { return a - b * floor(a / b); }' },
  // x ** y for any sign of x (WGSL's pow is undefined for x < 0): integer powers of negatives by parity.
  t_pow: { source: 'fn t_pow(x: f32, y: f32) -> f32 { if (y == 0.0) { return 1.0; } if (x == 0.0) { if (y < 0.0) { return 1.0 / x; } return 0.0; } if (x > 0.0) { return pow(x, y); } if (floor(y) != y) { return (x - x) / (x - x); } let p = pow(-x, y); if (y - 2.0 * floor(y * 0.5) != 0.0) { return -p; } return p; }' },
  t_fdiv: { source: 'fn t_fdiv(a: i32, b: i32) -> i32 { let q = a / b; if ((a % b != 0) && ((a < 0) != (b < 0))) { return q - 1; } return q; }' },
  t_fmod: { source: 'fn t_fmod(a: i32, b: i32) -> i32 { let r = a % b; if (r != 0 && ((r < 0) != (b < 0))) { return r + b; } return r; }' },
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
  if (!Number.isInteger(v) || Math.abs(v) > 2 ** 31 - 1) throw new Error(`internal: ${v} is not an i32 index constant`);
  return v < 0 ? `(${v}i)` : `${v}i`;
}

/** How the device stores a dtype: f32 (float32; float16 values as f32) or i32 (the integer dtypes and bool). */
export function storageOf(dtype: DType): 'f32' | 'i32' | undefined {
  switch (dtype) {
    case 'float32': case 'float16': return 'f32';
    case 'int32': case 'int16': case 'int8': case 'uint8': case 'bool': return 'i32';
    default: return undefined;
  }
}

/** An f32 value rounded as a store of `dtype` keeps it, still as f32 (integers truncate and wrap; bool is 0/1). */
export function roundAs(dtype: DType, x: string): string {
  switch (dtype) {
    case 'float32': return x;
    case 'float16': return `quantizeToF16(${x})`;
    case 'bool': return `select(0.0, 1.0, ${x} != 0.0)`;
    case 'int32': return `trunc(${x})`;
    case 'int16': return `(t_mod(trunc(${x}) + 32768.0, 65536.0) - 32768.0)`;
    case 'int8': return `(t_mod(trunc(${x}) + 128.0, 256.0) - 128.0)`;
    case 'uint8': return `t_mod(trunc(${x}), 256.0)`;
    default: throw new Error(`internal: WGSL does not store ${dtype}`);
  }
}
