// Reductions over a set of axes, with keepdims. `axes` in attrs are normalised and sorted.
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
  x: NDArray, attrs: ReduceAttrs, dtype: DType, init: number,
  step: (acc: number, v: number) => number, finish: (acc: number, n: number) => number = (a) => a,
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

function reduction(
  name: string, dtypeOf: (d: DType) => DType, init: number,
  step: (acc: number, v: number) => number, finish?: (acc: number, n: number) => number,
): OpDef<ReduceAttrs> {
  return defineOp<ReduceAttrs>({
    name,
    kind: 'reduction',
    arity: 1,
    infer: ([x], a) => {
      checkAxes(x!, a.axes);
      return tensorType(dtypeOf(x!.dtype), reducedShape(x!.shape, a.axes, a.keepdims));
    },
    impl: ([x], a) => reduceImpl(x!, a, dtypeOf(x!.dtype), init, step, finish),
  });
}

// Sums of bool and small ints accumulate in int32 like NumPy's default integer; floats keep their dtype.
const sumType = (d: DType): DType => (isFloat(d) || d === 'int64' ? d : promote(d, 'int32'));
const floatType = (d: DType): DType => (isFloat(d) ? d : 'float32');
const same = (d: DType): DType => d;
const nanMax = (a: number, v: number) => (Number.isNaN(a) || Number.isNaN(v) ? NaN : Math.max(a, v));
const nanMin = (a: number, v: number) => (Number.isNaN(a) || Number.isNaN(v) ? NaN : Math.min(a, v));

export const reduceOps = {
  sum: reduction('sum', sumType, 0, (a, v) => a + v),
  prod: reduction('prod', sumType, 1, (a, v) => a * v),
  mean: reduction('mean', floatType, 0, (a, v) => a + v, (a, n) => a / n),
  max: reduction('max', same, -Infinity, nanMax),
  min: reduction('min', same, Infinity, nanMin),
  any: reduction('any', () => 'bool', 0, (a, v) => (a !== 0 || v !== 0 ? 1 : 0)),
  all: reduction('all', () => 'bool', 1, (a, v) => (a !== 0 && v !== 0 ? 1 : 0)),
} as const;

export interface ArgAttrs {
  readonly axis: number;
}

/** An empty axis has no extremum, so no index to return (NumPy raises too). */
function emptyAxis(name: string, shape: readonly Dim[], axis: number): InferError {
  return new InferError(`${name} over axis ${axis} of a tensor of shape ${formatShape(shape)}: the axis is empty`, 'value');
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
      return tensorType('int64', x!.shape.filter((_, i) => i !== a.axis));
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
            if (k === 0 || (!Number.isNaN(best) && (Number.isNaN(v) || better(v, best)))) { best = v; bi = k; }
          }
          out[o * inner + i] = bi;
        }
      }
      return new NDArray(out, shape.filter((_, i) => i !== a.axis), 'int64');
    },
  });
}

export const argOps = {
  argmax: argExtreme('argmax', (v, b) => v > b),
  argmin: argExtreme('argmin', (v, b) => v < b),
} as const;
