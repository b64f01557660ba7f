// Elementwise ops, one row each: the reference scalar function, a dtype rule, and how the other
// backends spell the op, as names (a `Spelling`): the kernel IR's scalar op, its JavaScript, the
// TensorFlow.js function and the ONNX operator. The backends derive their tables from the rows
// and keep only their exceptions (tinygrad's `code_for_op` with per-renderer overrides; PyTensor's
// `nfunc_spec`), so adding an elementwise op is its row, its gradient rule and its K function.
// Broadcasting follows NumPy.
import { promote, isFloat, type DType } from '../dtype.js';
import { defineOp, type OpDef } from '../op.js';
import { broadcastShapes, tensorType, type TensorType } from '../types.js';
import { mapBroadcast } from './util.js';

/** How an elementwise op's result dtype follows from its inputs'. */
export type DTypeRule =
  | 'promote' // the promoted input dtype (add, maximum, ...)
  | 'float' // promoted, then ints and bool become float32 (exp, true division, ...)
  | 'bool'; // comparisons and logic

function resultDType(rule: DTypeRule, ins: readonly TensorType[]): DType {
  if (rule === 'bool') return 'bool';
  const p = ins.map((t) => t.dtype).reduce(promote);
  if (rule === 'float' && !isFloat(p)) return 'float32';
  return p;
}

/**
 * An elementwise op's names in the other backends, each looked up there (the IR imports none of
 * them). A backend with no name for an op, or a name whose meaning differs at the edges (NaN,
 * integer inputs, precision), has an entry of its own for it instead.
 */
export interface Spelling {
  /**
   * The kernel IR's scalar op that is this op (src/codegen/kernel/expr.ts), with `js`, its JavaScript on
   * the cpu (the gpu's spelling too, unless src/codegen/gpu/scalar.ts overrides it): a function
   * called with the operands (`Math.exp`), or an expression over $0, $1 (`($0 + $1)`). Without
   * a kernel op, compiled code calls the row's scalar function.
   */
  readonly kernel?: string;
  readonly js?: string;
  /**
   * The WGSL helper function that computes it on the gpu's webgpu mode (src/codegen/wgsl/scalar.ts
   * holds the helpers), where WGSL has no built-in of the reference's accuracy or none at all.
   */
  readonly wgsl?: string;
  /**
   * The WebAssembly SIMD tier's lane instruction (f64x2.<wasm>, or f32x4.<wasm> in its float32
   * form; src/codegen/cpu/wasm/elementwise.ts) where one computes the op exactly as `js` does; a
   * comparison's gives a lane mask. Without one the tier leaves the op to JavaScript.
   */
  readonly wasm?:
    | 'add'
    | 'sub'
    | 'mul'
    | 'div'
    | 'min'
    | 'max'
    | 'neg'
    | 'abs'
    | 'sqrt'
    | 'eq'
    | 'ne'
    | 'lt'
    | 'gt'
    | 'le'
    | 'ge';
  /** The TensorFlow.js function of the same meaning (`tf.<name>`; src/runtime/tfjs/kernels/elementwise.ts). */
  readonly tf?: string;
  /** The ai.onnx operator of the same meaning (export and import; src/runtime/onnx/ops/elementwise.ts, src/api/onnx.ts). */
  readonly onnx?: string;
}

export interface ElementwiseOp<S extends Spelling = Spelling> extends OpDef<Record<string, never>> {
  readonly kind: 'elementwise';
  readonly scalar: (...xs: number[]) => number;
  readonly dtypeRule: DTypeRule;
  readonly spelling: S;
}

function ew<const S extends Spelling>(
  name: string,
  arity: number,
  dtypeRule: DTypeRule,
  scalar: (...xs: number[]) => number,
  spelling: S,
): ElementwiseOp<S> {
  if ((spelling.kernel === undefined) !== (spelling.js === undefined))
    throw new Error(`internal: elementwise row ${name} needs both kernel and js, or neither`);
  return {
    ...defineOp<Record<string, never>>({
      name,
      kind: 'elementwise',
      arity,
      infer: (ins) =>
        tensorType(
          resultDType(dtypeRule, ins),
          broadcastShapes(
            ins.map((t) => t.shape),
            ins.length === 2 ? ['x', 'y'] : [],
          ),
        ),
      impl: (ins) => mapBroadcast(ins, resultDType(dtypeRule, ins), scalar),
    }),
    kind: 'elementwise',
    scalar,
    dtypeRule,
    spelling,
  };
}

/** Round half to even, as NumPy and Theano's `round` (Keras' backends) do. */
export function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x - Math.trunc(x)) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** Python's modulo: the result takes the sign of the divisor. */
export function pyMod(a: number, b: number): number {
  const r = a % b;
  return r !== 0 && r < 0 !== b < 0 ? r + b : r;
}

function sigmoid(x: number): number {
  return x >= 0 ? 1 / (1 + Math.exp(-x)) : Math.exp(x) / (1 + Math.exp(x));
}
function softplus(x: number): number {
  // log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|)
  return Math.max(x, 0) + Math.log1p(Math.exp(-Math.abs(x)));
}
// Abramowitz–Stegun 7.1.26 is too coarse for a reference; use the series / continued fraction pair.
function erf(x: number): number {
  const ax = Math.abs(x);
  if (ax < 2.5) {
    // Maclaurin series: 2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1))
    let term = ax;
    let sum = ax;
    for (let n = 1; n < 60; n++) {
      term *= (-ax * ax) / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    return Math.sign(x) * (2 / Math.sqrt(Math.PI)) * sum;
  }
  // erfc continued fraction (Lentz), accurate for |x| >= 2.5
  let f = ax;
  let c = ax;
  let d = 0;
  for (let n = 1; n < 200; n++) {
    const an = n / 2;
    d = ax + an * d;
    d = d === 0 ? 1e-300 : 1 / d;
    c = ax + an / c;
    const delta = c * d;
    f *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  const erfc = Math.exp(-ax * ax) / (f * Math.sqrt(Math.PI));
  return Math.sign(x) * (1 - erfc);
}

export const elementwiseOps = {
  // arithmetic
  add: ew('add', 2, 'promote', (a, b) => a + b, {
    kernel: 'add',
    js: '($0 + $1)',
    wasm: 'add',
    tf: 'add',
    onnx: 'Add',
  }),
  sub: ew('sub', 2, 'promote', (a, b) => a - b, {
    kernel: 'sub',
    js: '($0 - $1)',
    wasm: 'sub',
    tf: 'sub',
    onnx: 'Sub',
  }),
  mul: ew('mul', 2, 'promote', (a, b) => a * b, {
    kernel: 'mul',
    js: '($0 * $1)',
    wasm: 'mul',
    tf: 'mul',
    onnx: 'Mul',
  }),
  div: ew('div', 2, 'float', (a, b) => a / b, { kernel: 'div', js: '($0 / $1)', wasm: 'div', tf: 'div', onnx: 'Div' }),
  pow: ew('pow', 2, 'promote', (a, b) => a ** b, { kernel: 'pow', js: '($0 ** $1)', tf: 'pow', onnx: 'Pow' }),
  mod: ew('mod', 2, 'promote', pyMod, { kernel: 'mod', js: 'rt.mod', tf: 'mod', onnx: 'Mod' }),
  maximum: ew('maximum', 2, 'promote', (a, b) => (Number.isNaN(a) || Number.isNaN(b) ? NaN : Math.max(a, b)), {
    kernel: 'max',
    js: 'Math.max',
    wasm: 'max',
    tf: 'maximum',
    onnx: 'Max',
  }),
  minimum: ew('minimum', 2, 'promote', (a, b) => (Number.isNaN(a) || Number.isNaN(b) ? NaN : Math.min(a, b)), {
    kernel: 'min',
    js: 'Math.min',
    wasm: 'min',
    tf: 'minimum',
    onnx: 'Min',
  }),
  neg: ew('neg', 1, 'promote', (a) => -a, { kernel: 'neg', js: '(-$0)', wasm: 'neg', tf: 'neg', onnx: 'Neg' }),
  abs: ew('abs', 1, 'promote', Math.abs, { kernel: 'abs', js: 'Math.abs', wasm: 'abs', tf: 'abs', onnx: 'Abs' }),
  sign: ew('sign', 1, 'promote', (a) => (a > 0 ? 1 : a < 0 ? -1 : a === 0 ? 0 : NaN), {
    kernel: 'sign',
    js: 'rt.sign',
    tf: 'sign',
    onnx: 'Sign',
  }),
  square: ew('square', 1, 'promote', (a) => a * a, { tf: 'square' }),
  floor: ew('floor', 1, 'promote', Math.floor, { kernel: 'floor', js: 'Math.floor', tf: 'floor', onnx: 'Floor' }),
  ceil: ew('ceil', 1, 'promote', Math.ceil, { kernel: 'ceil', js: 'Math.ceil', tf: 'ceil', onnx: 'Ceil' }),
  round: ew('round', 1, 'promote', roundHalfEven, { kernel: 'round', js: 'rt.round', tf: 'round', onnx: 'Round' }),
  // transcendental: ints become float32
  sqrt: ew('sqrt', 1, 'float', Math.sqrt, { kernel: 'sqrt', js: 'Math.sqrt', wasm: 'sqrt', tf: 'sqrt', onnx: 'Sqrt' }),
  exp: ew('exp', 1, 'float', Math.exp, { kernel: 'exp', js: 'Math.exp', tf: 'exp', onnx: 'Exp' }),
  log: ew('log', 1, 'float', Math.log, { kernel: 'log', js: 'Math.log', tf: 'log', onnx: 'Log' }),
  log1p: ew('log1p', 1, 'float', Math.log1p, { kernel: 'log1p', js: 'Math.log1p', wgsl: 't_log1p', tf: 'log1p' }),
  expm1: ew('expm1', 1, 'float', Math.expm1, { kernel: 'expm1', js: 'Math.expm1', wgsl: 't_expm1', tf: 'expm1' }),
  sin: ew('sin', 1, 'float', Math.sin, { kernel: 'sin', js: 'Math.sin', tf: 'sin', onnx: 'Sin' }),
  cos: ew('cos', 1, 'float', Math.cos, { kernel: 'cos', js: 'Math.cos', tf: 'cos', onnx: 'Cos' }),
  tanh: ew('tanh', 1, 'float', Math.tanh, {
    kernel: 'tanh',
    js: 'Math.tanh',
    wgsl: 't_tanh',
    tf: 'tanh',
    onnx: 'Tanh',
  }),
  sigmoid: ew('sigmoid', 1, 'float', sigmoid, { wgsl: 't_sigmoid', tf: 'sigmoid', onnx: 'Sigmoid' }),
  softplus: ew('softplus', 1, 'float', softplus, { wgsl: 't_softplus', tf: 'softplus', onnx: 'Softplus' }),
  erf: ew('erf', 1, 'float', erf, { wgsl: 't_erf', tf: 'erf', onnx: 'Erf' }),
  reciprocal: ew('reciprocal', 1, 'float', (a) => 1 / a, {
    kernel: 'recip',
    js: '(1 / $0)',
    tf: 'reciprocal',
    onnx: 'Reciprocal',
  }),
  // comparisons and logic: bool results
  equal: ew('equal', 2, 'bool', (a, b) => (a === b ? 1 : 0), {
    kernel: 'eq',
    js: '($0 === $1 ? 1 : 0)',
    wasm: 'eq',
    tf: 'equal',
    onnx: 'Equal',
  }),
  not_equal: ew('not_equal', 2, 'bool', (a, b) => (a !== b ? 1 : 0), {
    kernel: 'ne',
    js: '($0 !== $1 ? 1 : 0)',
    wasm: 'ne',
    tf: 'notEqual',
  }),
  greater: ew('greater', 2, 'bool', (a, b) => (a > b ? 1 : 0), {
    kernel: 'gt',
    js: '($0 > $1 ? 1 : 0)',
    wasm: 'gt',
    tf: 'greater',
    onnx: 'Greater',
  }),
  greater_equal: ew('greater_equal', 2, 'bool', (a, b) => (a >= b ? 1 : 0), {
    kernel: 'ge',
    js: '($0 >= $1 ? 1 : 0)',
    wasm: 'ge',
    tf: 'greaterEqual',
    onnx: 'GreaterOrEqual',
  }),
  less: ew('less', 2, 'bool', (a, b) => (a < b ? 1 : 0), {
    kernel: 'lt',
    js: '($0 < $1 ? 1 : 0)',
    wasm: 'lt',
    tf: 'less',
    onnx: 'Less',
  }),
  less_equal: ew('less_equal', 2, 'bool', (a, b) => (a <= b ? 1 : 0), {
    kernel: 'le',
    js: '($0 <= $1 ? 1 : 0)',
    wasm: 'le',
    tf: 'lessEqual',
    onnx: 'LessOrEqual',
  }),
  logical_and: ew('logical_and', 2, 'bool', (a, b) => (a !== 0 && b !== 0 ? 1 : 0), {
    kernel: 'and',
    js: '($0 !== 0 && $1 !== 0 ? 1 : 0)',
    tf: 'logicalAnd',
    onnx: 'And',
  }),
  logical_or: ew('logical_or', 2, 'bool', (a, b) => (a !== 0 || b !== 0 ? 1 : 0), {
    kernel: 'or',
    js: '($0 !== 0 || $1 !== 0 ? 1 : 0)',
    tf: 'logicalOr',
    onnx: 'Or',
  }),
  logical_not: ew('logical_not', 1, 'bool', (a) => (a === 0 ? 1 : 0), {
    kernel: 'not',
    js: '($0 === 0 ? 1 : 0)',
    tf: 'logicalNot',
    onnx: 'Not',
  }),
  isnan: ew('isnan', 1, 'bool', (a) => (Number.isNaN(a) ? 1 : 0), {
    kernel: 'isnan',
    js: '($0 !== $0 ? 1 : 0)',
    tf: 'isNaN',
    onnx: 'IsNaN',
  }),
} as const;

type Rows = typeof elementwiseOps;
export type ElementwiseName = keyof Rows;
/** The rows whose spelling names field F. */
export type SpelledIn<F extends keyof Spelling> = {
  [K in ElementwiseName]: Rows[K]['spelling'] extends Record<F, string> ? K : never;
}[ElementwiseName];
/** The name field F of row K (a string literal type). */
export type SpellingOf<K extends ElementwiseName, F extends keyof Spelling> =
  Rows[K]['spelling'] extends Record<F, infer S> ? S : never;
/** The kernel IR's scalar ops that are elementwise ops (src/codegen/kernel/expr.ts adds select and the index arithmetic). */
export type KernelOp = { [K in SpelledIn<'kernel'>]: SpellingOf<K, 'kernel'> }[SpelledIn<'kernel'>];

/** The rows that name field F, each with its name there: what the backends build their tables from. */
export function rowsSpelledIn<F extends keyof Spelling>(
  field: F,
): { readonly op: SpelledIn<F>; readonly name: string; readonly row: ElementwiseOp }[] {
  const out: { op: SpelledIn<F>; name: string; row: ElementwiseOp }[] = [];
  for (const [op, row] of Object.entries(elementwiseOps) as [ElementwiseName, ElementwiseOp][]) {
    const name = row.spelling[field];
    if (name !== undefined) out.push({ op: op as SpelledIn<F>, name, row });
  }
  return out;
}

/** `where(cond, a, b)`: a where cond is nonzero, else b; all three broadcast. Theano's `switch`. */
export const whereOp = defineOp<Record<string, never>>({
  name: 'where',
  kind: 'elementwise',
  arity: 3,
  infer: (ins) =>
    tensorType(
      promote(ins[1]!.dtype, ins[2]!.dtype),
      broadcastShapes(
        ins.map((t) => t.shape),
        ['condition', 'then', 'else'],
      ),
    ),
  impl: (ins) => mapBroadcast(ins, promote(ins[1]!.dtype, ins[2]!.dtype), (c, a, b) => (c !== 0 ? a : b)),
});
