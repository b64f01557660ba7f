// Converting user values at the runtime boundary: inputs fed to compiled functions.
import { coerce, type DType } from '../ir/dtype.js';
import { ValueError } from '../ir/errors.js';
import { NDArray, formatShape, sizeOf } from '../ir/ndarray.js';

function concreteShape(fn: string, shape: unknown): number[] {
  if (!Array.isArray(shape) || shape.some((d) => typeof d !== 'number' || !Number.isInteger(d) || d < 0)) {
    throw new ValueError(
      `${fn}: sparse value's shape must be an array of non-negative integers, got ${JSON.stringify(shape)}`,
    );
  }
  return shape as number[];
}

/** A sparse tensor value in COO form, as `placeholder(..., sparse=true)` accepts. */
export interface SparseValue {
  readonly indices: readonly (readonly number[])[];
  readonly values: readonly number[] | ArrayLike<number>;
  readonly shape: readonly number[];
}

export function isSparseValue(v: unknown): v is SparseValue {
  return typeof v === 'object' && v !== null && 'indices' in v && 'values' in v && 'shape' in v;
}

export function densify(fn: string, v: SparseValue, dtype: DType): NDArray {
  const shape = concreteShape(fn, v.shape);
  const out = NDArray.zeros(shape, dtype);
  const strides = shape.map((_, i) => sizeOf(shape.slice(i + 1)));
  if (v.indices.length !== v.values.length)
    throw new ValueError(`${fn}: sparse value has ${v.indices.length} indices but ${v.values.length} values`);
  v.indices.forEach((ix, k) => {
    if (ix.length !== shape.length || ix.some((c, d) => !Number.isInteger(c) || c < 0 || c >= shape[d]!)) {
      throw new ValueError(
        `${fn}: sparse index ${JSON.stringify(ix)} (entry ${k}) is outside shape ${formatShape(shape)}`,
      );
    }
    out.data[ix.reduce((p, c, d) => p + c * strides[d]!, 0)] = coerce(dtype, Number(v.values[k]));
  });
  return out;
}
