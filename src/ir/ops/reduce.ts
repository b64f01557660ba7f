// Reductions over a set of axes, with keepdims, one row each; `axes` in attrs are normalised and sorted.
import { promote, isFloat, type DType } from '../dtype.js';
import { NDArray, formatShape, stridesOf, type Shape, sizeOf } from '../ndarray.js';
import { defineOp, type OpDef } from '../op.js';
import { normAxis, tensorType, type Dim, type TensorType } from '../types.js';
import { InferError } from '../errors.js';
import { forEachIndex } from './util.js';

export interface ReduceAttrs {
  readonly axes: readonly number[];
  readonly keepdims: boolean;
}

export function reducedShape<T extends Dim>(shape: readonly T[], axes: readonly number[], keepdims: boolean): T[] {
  const out: T[] = [];
  shape.forEach((d, i) => {
    if (!axes.includes(i)) out.push(d);
    else if (keepdims) out.push(1 as T);
  });
  return out;
}

function checkAxes(t: TensorType, axes: readonly number[]): void {
  for (const a of axes) normAxis(a, t.shape.length);
  if (new Set(axes).size !== axes.length) throw new InferError(`axis ${JSON.stringify(axes)} repeats an axis`, 'value');
}

/**
 * Folds each output cell's inputs in row-major order with `step`, starting from `init`,
 * then applies `finish(acc, count)`.
 */
function reduceImpl(
  x: NDArray,
  attrs: ReduceAttrs,
  dtype: DType,
  init: number,
  step: (acc: number, v: number) => number,
  finish: (acc: number, n: number) => number = (a) => a,
): NDArray {
  const outShape = reducedShape(x.shape, attrs.axes, false);
  const outStrides = stridesOf(outShape);
  let count = 1;
  for (const a of attrs.axes) count *= x.shape[a]!;
  const acc = new Float64Array(sizeOf(outShape)).fill(init);
  const keep = x.shape.map((_, i) => !attrs.axes.includes(i));
  forEachIndex(x.shape, (idx, flat) => {
    let o = 0;
    let j = 0;
    for (let d = 0; d < idx.length; d++) if (keep[d]) o += idx[d]! * outStrides[j++]!;
    acc[o] = step(acc[o]!, x.data[flat]!);
  });
  for (let i = 0; i < acc.length; i++) acc[i] = finish(acc[i]!, count);
  return new NDArray(acc, reducedShape(x.shape, attrs.axes, attrs.keepdims), dtype);
}

/**
 * How a reduction's kind of values and edges go in the other backends: `arith` folds in the
 * result dtype (sum, prod, mean), `extremum` keeps the input dtype and propagates NaN (max, min),
 * `logical` folds booleans (any, all).
 */
export type ReduceFamily = 'arith' | 'extremum' | 'logical';

/**
 * A reduction's names in the other backends, each looked up there (the IR imports none of them),
 * as the elementwise rows' `Spelling`.
 */
export interface ReduceSpelling {
  /**
   * The kernel IR's fold that computes it (src/codegen/kernel/expr.ts `ReduceOp`): a row whose `kernel`
   * is its own name is a fold and spells it; `mean` is the `sum` fold divided by the count.
   */
  readonly kernel: string;
  readonly mean?: true;
  /**
   * The fold statement acc := acc (op) v on the cpu, over $0 (the accumulator) and $1 (the value),
   * matching the reference fold (`Math.max` propagates NaN as nanMax does).
   */
  readonly js?: string;
  /** gpu.js' fold statement where it differs from `js` (GLSL has no NaN-propagating max). */
  readonly gpu?: string;
  /** WGSL's fold statement where it differs from `gpu` (else `js`): WGSL may assume finite values, so its max is the built-in. */
  readonly wgsl?: string;
  /** The WebAssembly SIMD tier's lane op (f32x4/f64x2.<wasm>); without one the tier leaves it to JavaScript. */
  readonly wasm?: 'add' | 'mul' | 'max' | 'min';
  /** The TensorFlow.js function (`tf.<name>(x, axes, keepDims)`; src/runtime/tfjs/kernels/reduce.ts). */
  readonly tf: string;
  /**
   * The ai.onnx operator: of the same meaning (import and export; src/api/onnx.ts,
   * src/runtime/onnx/ops/core.ts), or for a `logical` row the one its export folds int32 0/1 with.
   */
  readonly onnx: string;
  /** The kernel IR's scalar op that combines two partial results (src/codegen/kernel/expr.ts). */
  readonly combine: 'add' | 'mul' | 'max' | 'min' | 'or' | 'and';
  /** The running op whose elements are this fold's prefixes (cumsum), lowered as this fold (src/codegen/lower/data.ts). */
  readonly cumulative?: string;
}

export interface ReductionOp<S extends ReduceSpelling = ReduceSpelling> extends OpDef<ReduceAttrs> {
  readonly kind: 'reduction';
  /** The fold's initial value: the result over no elements, before `finish`. */
  readonly identity: number;
  readonly fold: (acc: number, v: number) => number;
  readonly finish?: ((acc: number, n: number) => number) | undefined;
  /** The result of reducing an empty axis (the identity, finished over a count of 0: NaN for mean). */
  readonly empty: number;
  readonly family: ReduceFamily;
  readonly spelling: S;
}

function reduction<const S extends ReduceSpelling>(
  name: string,
  dtypeOf: (d: DType) => DType,
  family: ReduceFamily,
  identity: number,
  fold: (acc: number, v: number) => number,
  spelling: S,
  finish?: (acc: number, n: number) => number,
): ReductionOp<S> {
  if ((spelling.kernel === name) !== (spelling.js !== undefined))
    throw new Error(
      `internal: reduction row ${name} spells its fold in JavaScript exactly when it is its own kernel fold`,
    );
  return {
    ...defineOp<ReduceAttrs>({
      name,
      kind: 'reduction',
      arity: 1,
      infer: ([x], a) => {
        checkAxes(x!, a.axes);
        return tensorType(dtypeOf(x!.dtype), reducedShape(x!.shape, a.axes, a.keepdims));
      },
      impl: ([x], a) => reduceImpl(x!, a, dtypeOf(x!.dtype), identity, fold, finish),
    }),
    kind: 'reduction',
    identity,
    fold,
    finish,
    empty: finish === undefined ? identity : finish(identity, 0),
    family,
    spelling,
  };
}

// Sums of bool and small ints accumulate in int32 like NumPy's default integer; floats keep their dtype.
const sumType = (d: DType): DType => (isFloat(d) || d === 'int64' ? d : promote(d, 'int32'));
const floatType = (d: DType): DType => (isFloat(d) ? d : 'float32');
const same = (d: DType): DType => d;
const nanMax = (a: number, v: number) => (Number.isNaN(a) || Number.isNaN(v) ? NaN : Math.max(a, v));
const nanMin = (a: number, v: number) => (Number.isNaN(a) || Number.isNaN(v) ? NaN : Math.min(a, v));

// One row per reduction (as the elementwise rows): dtype rule, identity, reference fold, and its
// spellings; the kernel IR's folds, the renderers' fold statements, the SIMD tier's lane ops, the
// tfjs kernels, the ONNX translations and the canonical rewrites derive their tables from these
// rows, so adding a reduction is its row, its gradient rule and its K function.
export const reduceOps = {
  sum: reduction('sum', sumType, 'arith', 0, (a, v) => a + v, {
    kernel: 'sum',
    combine: 'add',
    js: '$0 += $1;',
    wasm: 'add',
    tf: 'sum',
    onnx: 'ReduceSum',
    cumulative: 'cumsum',
  }),
  prod: reduction('prod', sumType, 'arith', 1, (a, v) => a * v, {
    kernel: 'prod',
    combine: 'mul',
    js: '$0 *= $1;',
    wasm: 'mul',
    tf: 'prod',
    onnx: 'ReduceProd',
    cumulative: 'cumprod',
  }),
  mean: reduction(
    'mean',
    floatType,
    'arith',
    0,
    (a, v) => a + v,
    { kernel: 'sum', combine: 'add', mean: true, tf: 'mean', onnx: 'ReduceMean' },
    (a, n) => a / n,
  ),
  max: reduction('max', same, 'extremum', -Infinity, nanMax, {
    kernel: 'max',
    combine: 'max',
    js: '$0 = Math.max($0, $1);',
    gpu: '$0 = t_nanmax($0, $1);',
    wgsl: '$0 = max($0, $1);',
    wasm: 'max',
    tf: 'max',
    onnx: 'ReduceMax',
  }),
  min: reduction('min', same, 'extremum', Infinity, nanMin, {
    kernel: 'min',
    combine: 'min',
    js: '$0 = Math.min($0, $1);',
    gpu: '$0 = t_nanmin($0, $1);',
    wgsl: '$0 = min($0, $1);',
    wasm: 'min',
    tf: 'min',
    onnx: 'ReduceMin',
  }),
  any: reduction(
    'any',
    () => 'bool',
    'logical',
    0,
    (a, v) => (a !== 0 || v !== 0 ? 1 : 0),
    {
      kernel: 'any',
      combine: 'or',
      js: 'if ($1 !== 0) $0 = 1;',
      gpu: 'if ($1 != 0.0) { $0 = 1.0; }',
      tf: 'any',
      onnx: 'ReduceMax',
    },
  ),
  all: reduction(
    'all',
    () => 'bool',
    'logical',
    1,
    (a, v) => (a !== 0 && v !== 0 ? 1 : 0),
    {
      kernel: 'all',
      combine: 'and',
      js: 'if ($1 === 0) $0 = 0;',
      gpu: 'if ($1 == 0.0) { $0 = 0.0; }',
      tf: 'all',
      onnx: 'ReduceMin',
    },
  ),
} as const;

/** The reductions' names (each op with `axes` and `keepdims` attrs). */
export type ReductionName = keyof typeof reduceOps;
/** The kernel IR's folds: the rows that are their own kernel fold. */
export type KernelFold = (typeof reduceOps)[ReductionName]['spelling']['kernel'];
/** Every reduction row, in table order. */
export const reductionRows: readonly ReductionOp[] = Object.values(reduceOps);
export const reductionNames = Object.keys(reduceOps) as ReductionName[];
/** The row of a reduction op, or undefined for any other op name. */
export function reductionRow(op: string): ReductionOp | undefined {
  return Object.hasOwn(reduceOps, op) ? reduceOps[op as ReductionName] : undefined;
}
/** The row whose prefixes the running op `op` (cumsum...) computes, or undefined. */
export function cumulativeRow(op: string): ReductionOp | undefined {
  return reductionRows.find((r) => r.spelling.cumulative === op);
}

export interface ArgAttrs {
  readonly axis: number;
}

/** An empty axis has no extremum, so no index to return (NumPy raises too). */
function emptyAxis(name: string, shape: readonly Dim[], axis: number): InferError {
  return new InferError(
    `${name} over axis ${axis} of a tensor of shape ${formatShape(shape)}: the axis is empty`,
    'value',
  );
}

/** Index of the first extremum along one axis (int64, as NumPy/TensorFlow); NaN counts as the extremum. */
function argExtreme(name: string, better: (v: number, best: number) => boolean): OpDef<ArgAttrs> {
  return defineOp<ArgAttrs>({
    name,
    kind: 'reduction',
    arity: 1,
    infer: ([x], a) => {
      normAxis(a.axis, x!.shape.length);
      if (x!.shape[a.axis] === 0) throw emptyAxis(name, x!.shape, a.axis);
      return tensorType(
        'int64',
        x!.shape.filter((_, i) => i !== a.axis),
      );
    },
    impl: ([x], a) => {
      const shape: Shape = x!.shape;
      const n = shape[a.axis]!;
      if (n === 0) throw emptyAxis(name, shape, a.axis); // an unknown dim that turned out empty
      const inner = stridesOf(shape)[a.axis]!;
      const outer = x!.size / (n * inner || 1);
      const out = new Float64Array(outer * inner);
      for (let o = 0; o < outer; o++) {
        for (let i = 0; i < inner; i++) {
          let best = NaN;
          let bi = 0;
          for (let k = 0; k < n; k++) {
            const v = x!.data[(o * n + k) * inner + i]!;
            if (k === 0 || (!Number.isNaN(best) && (Number.isNaN(v) || better(v, best)))) {
              best = v;
              bi = k;
            }
          }
          out[o * inner + i] = bi;
        }
      }
      return new NDArray(
        out,
        shape.filter((_, i) => i !== a.axis),
        'int64',
      );
    },
  });
}

export const argOps = {
  argmax: argExtreme('argmax', (v, b) => v > b),
  argmin: argExtreme('argmin', (v, b) => v < b),
} as const;
