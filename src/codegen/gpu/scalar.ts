// Scalar expressions of the kernel IR as gpu.js kernel source (JavaScript that gpu.js parses and
// translates to GLSL or WebAssembly): the cpu's JavaScript, except where OVERRIDES says
// otherwise. Everything is float32 on the device: GLSL ES 1.0 has no integers in textures and no
// NaN-aware max, and gpu.js' own tanh, expm1 and log1p are the naive formulas, so the ops that
// need care call helpers defined here.
import type { OpName } from '../../ir/registry.js';
import type { DType } from '../../ir/dtype.js';
import { KERNEL_ROWS, type ScalarOp } from '../kernel/expr.js';
import { spell } from '../cpu/js.js';

/** A helper function a kernel may call; gpu.js translates it with the kernel. */
export interface Helper {
  readonly name: string;
  readonly source: string;
  /** Helpers it calls. */
  readonly uses?: readonly string[];
}

// Each helper is plain JavaScript on numbers; names start with `t_` so they never meet a
// gpu.js built-in of the same name (its `tanh`, `expm1`, `log1p` lose precision near 0).
// gpu.js types a literal by its value (2.0 is an integer), and a function by what it returns,
// so whole-number results are written Math.fround(k) to keep every helper a float function.
/** A comparison as 0/1, `nan` when either side is NaN (an explicit x != x test Mesa keeps). */
function compare(name: string, op: string, nan: 0 | 1): Helper {
  return {
    name,
    source: `function ${name}(a, b) { if (a != a || b != b) { return Math.fround(${nan}.0); } if (a ${op} b) { return Math.fround(1.0); } return Math.fround(0.0); }`,
  };
}

const HELPERS: readonly Helper[] = [
  // Goldberg's log1p: log(u) * x / (u - 1) cancels the rounding of u = 1 + x.
  {
    name: 't_log1p',
    source:
      'function t_log1p(x) { const u = 1.0 + x; if (u == 1.0) { return x; } return Math.log(u) * x / (u - 1.0); }',
  },
  // Kahan's expm1: (u - 1) * x / log(u) with u = e^x.
  {
    name: 't_expm1',
    source:
      'function t_expm1(x) { if (x > 80.0) { return Math.exp(x); } const u = Math.exp(x); if (u == 1.0) { return x; } const um = u - 1.0; if (um == -1.0) { return -Math.fround(1.0); } return um * x / Math.log(u); }',
  },
  // tanh = expm1(2x) / (expm1(2x) + 2), accurate near 0, saturated where e^2x overflows.
  {
    name: 't_tanh',
    source:
      'function t_tanh(x) { if (x > 20.0) { return Math.fround(1.0); } if (x < -20.0) { return -Math.fround(1.0); } const e = t_expm1(2.0 * x); return e / (e + 2.0); }',
    uses: ['t_expm1'],
  },
  // The two-branch logistic: never exp of a large positive number.
  {
    name: 't_sigmoid',
    source:
      'function t_sigmoid(x) { if (x >= 0.0) { return 1.0 / (1.0 + Math.exp(-x)); } const e = Math.exp(x); return e / (1.0 + e); }',
  },
  // log(1 + e^x) = max(x, 0) + log1p(e^-|x|).
  {
    name: 't_softplus',
    source: 'function t_softplus(x) { return Math.max(x, 0.0) + t_log1p(Math.exp(-Math.abs(x))); }',
    uses: ['t_log1p'],
  },
  // Abramowitz-Stegun 7.1.26: |error| < 1.5e-7, below float32's resolution of erf near 1.
  {
    name: 't_erf',
    source:
      'function t_erf(x) { const a = Math.abs(x); const t = 1.0 / (1.0 + 0.3275911 * a); const y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-a * a); if (x < 0.0) { return -y; } return y; }',
  },
  // Round half to even (NumPy's round): floor(x + 0.5), minus one on an odd tie.
  {
    name: 't_round',
    source:
      'function t_round(x) { const r = Math.floor(x + 0.5); if (r - x == 0.5) { if (r - 2.0 * Math.floor(r * 0.5) != 0.0) { return r - 1.0; } } return r; }',
  },
  // Python's modulo: the sign of the divisor.
  { name: 't_mod', source: 'function t_mod(a, b) { return a - b * Math.floor(a / b); }' },
  // x ** y for any sign of x: GLSL's pow is undefined for x < 0, so odd/even integer powers are
  // split out; a fractional power of a negative is NaN, made at run time ((x - x) / (x - x)), since
  // the GLSL compiler folds a literal 0.0 / 0.0 to a finite number; 0 to a negative power is
  // 1 / 0 = infinity, also made at run time (GLSL's pow(0, y < 0) is undefined).
  {
    name: 't_pow',
    source:
      'function t_pow(x, y) { if (y == 0.0) { return Math.fround(1.0); } if (x == 0.0) { if (y < 0.0) { return 1.0 / x; } return Math.fround(0.0); } if (x > 0.0) { return Math.pow(x, y); } if (Math.floor(y) != y) { return (x - x) / (x - x); } const p = Math.pow(-x, y); if (y - 2.0 * Math.floor(y * 0.5) != 0.0) { return -p; } return p; }',
  },
  // NumPy's maximum/minimum: NaN wins (GLSL's max leaves NaN unspecified).
  {
    name: 't_nanmax',
    source: 'function t_nanmax(a, b) { if (a != a || b != b) { return a + b; } return Math.max(a, b); }',
  },
  {
    name: 't_nanmin',
    source: 'function t_nanmin(a, b) { if (a != a || b != b) { return a + b; } return Math.min(a, b); }',
  },
  // a / b keeping the sign of a zero quotient: gpu.js' exact-integer division check returns +0 for -0 / 1.
  {
    name: 't_div',
    source: 'function t_div(a, b) { const q = a / b; if (q == 0.0) { return a * (1.0 / b); } return q; }',
  },
  // Comparisons with NaN in mind: Mesa's shader compiler assumes no NaN in a plain `<=` or `==`
  // (so NaN <= 0 comes out true); the explicit x != x test in a function of its own survives.
  {
    name: 't_isnan',
    source: 'function t_isnan(x) { if (x != x) { return Math.fround(1.0); } return Math.fround(0.0); }',
  },
  {
    name: 't_ne0',
    source:
      'function t_ne0(x) { if (x != x) { return Math.fround(1.0); } if (x != 0.0) { return Math.fround(1.0); } return Math.fround(0.0); }',
  },
  compare('t_eq', '==', 0),
  compare('t_ne', '!=', 1),
  compare('t_lt', '<', 0),
  compare('t_le', '<=', 0),
  compare('t_gt', '>', 0),
  compare('t_ge', '>=', 0),
  {
    name: 't_sign',
    source:
      'function t_sign(x) { if (x > 0.0) { return Math.fround(1.0); } if (x < 0.0) { return -Math.fround(1.0); } return x; }',
  },
  // Truncation toward zero (casts to integer dtypes).
  { name: 't_trunc', source: 'function t_trunc(x) { if (x < 0.0) { return Math.ceil(x); } return Math.floor(x); }' },
];

const byName = new Map(HELPERS.map((h) => [h.name, h]));

/** The helpers `names` need, each after those it calls, for gpu.js' `functions` setting. */
export function helperSources(names: Iterable<string>): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const visit = (n: string) => {
    if (seen.has(n)) return;
    seen.add(n);
    const h = byName.get(n);
    if (h === undefined) throw new Error(`internal: no gpu helper ${n}`);
    for (const u of h.uses ?? []) visit(u);
    out.push(h.source);
  };
  for (const n of names) visit(n);
  return out;
}

type Render = (a: readonly string[]) => string;
const call =
  (name: string): Render =>
  (a) =>
    `${name}(${a.join(', ')})`;

/**
 * The gpu's spellings of the kernel IR's scalar ops where they differ from the cpu's JavaScript
 * (the elementwise rows' `js`, src/codegen/cpu/js.ts), which gpu.js parses as it is otherwise:
 * tinygrad's renderer overrides of a shared `code_for_op`.
 */
const OVERRIDES: Partial<Record<ScalarOp, Render>> = {
  div: call('t_div'),
  pow: call('t_pow'),
  mod: call('t_mod'),
  max: call('t_nanmax'),
  min: call('t_nanmin'),
  sign: call('t_sign'),
  round: call('t_round'),
  log1p: call('t_log1p'),
  expm1: call('t_expm1'),
  tanh: call('t_tanh'),
  recip: ([a]) => `(1.0 / ${a})`,
  eq: call('t_eq'),
  ne: call('t_ne'),
  gt: call('t_gt'),
  ge: call('t_ge'),
  lt: call('t_lt'),
  le: call('t_le'),
  and: ([a, b]) => `(t_ne0(${a}) * t_ne0(${b}))`,
  or: ([a, b]) => `Math.max(t_ne0(${a}), t_ne0(${b}))`,
  not: ([a]) => `(Math.fround(1.0) - t_ne0(${a}))`,
  isnan: call('t_isnan'),
  select: ([c, a, b]) => `(t_ne0(${c}) == 1.0 ? ${a} : ${b})`,
};

/** gpu.js source of a scalar op (not the index arithmetic) applied to argument expressions; undefined where it has none. */
export function gpuOpCode(op: ScalarOp, a: readonly string[]): string | undefined {
  const o = OVERRIDES[op];
  if (o !== undefined) return o(a);
  const js = KERNEL_ROWS.get(op)?.spelling.js;
  // the cpu's runtime helpers (rt.*) do not exist on the device
  return js === undefined || js.startsWith('rt.') ? undefined : spell(js, a);
}

/** Elementwise ops without a scalar op, which kernels call through their scalar function: the gpu helper spelling each. */
export const GPU_CALLS: Partial<Record<OpName, Render>> = {
  sigmoid: call('t_sigmoid'),
  softplus: call('t_softplus'),
  erf: call('t_erf'),
};

/** Helper names an expression source calls. */
export function helpersIn(source: string): string[] {
  return [...new Set(source.match(/\bt_[a-z0-9]+(?=\()/g) ?? [])];
}

/**
 * The value a store of `dtype` keeps, as source: integers truncate toward zero and wrap at
 * their width (int32 is exact only within float32's 2^24, and is not wrapped), bool is 0/1.
 */
export function storeAs(dtype: DType, x: string): string {
  switch (dtype) {
    case 'float32':
      return x;
    case 'bool':
      return `(t_ne0(${x}) * (Math.fround(1.0) - t_isnan(${x})))`;
    case 'int32':
      return `t_trunc(${x})`;
    case 'int16':
      return `(t_mod(t_trunc(${x}) + 32768.0, 65536.0) - 32768.0)`;
    case 'int8':
      return `(t_mod(t_trunc(${x}) + 128.0, 256.0) - 128.0)`;
    case 'uint8':
      return `t_mod(t_trunc(${x}), 256.0)`;
    default:
      throw new Error(`internal: the gpu device does not store ${dtype}`);
  }
}

/**
 * A number as a float literal gpu.js parses (finite values only). gpu.js types a literal by its
 * value, so a whole number is wrapped in Math.fround to stay a float: `2.0 * 1.0` alone would
 * be an integer expression that its float helpers reject.
 */
export function floatLiteral(x: number): string {
  if (!Number.isFinite(x)) throw new Error(`internal: ${x} has no literal on the gpu`);
  const s = String(Math.abs(x));
  const lit = Number.isInteger(x) ? `Math.fround(${s}.0)` : s;
  return x < 0 || Object.is(x, -0) ? `(-${lit})` : lit;
}
