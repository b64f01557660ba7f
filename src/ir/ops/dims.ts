// Axis bookkeeping that keeps working when dims are unknown (a static reshape target cannot
// express these): a new axis of size 1, dropping an axis of size 1, merging a run of axes, and
// refining a static shape. None of them moves data (row-major order is preserved).
import { NDArray, formatShape } from '../ndarray.js';
import { defineOp } from '../op.js';
import { normAxis, tensorType, type Dim, type StaticShape } from '../types.js';
import { InferError } from '../errors.js';
import { unifyDim } from './shape.js';

function relabel(x: NDArray, shape: readonly number[]): NDArray {
  return new NDArray(x.data, shape, x.dtype);
}

export const expandDimsOp = defineOp<{ readonly axis: number }>({
  name: 'expand_dims',
  kind: 'shape',
  arity: 1,
  infer: ([x], a) => {
    const axis = normAxis(a.axis, x!.shape.length + 1);
    const s: Dim[] = [...x!.shape];
    s.splice(axis, 0, 1);
    return tensorType(x!.dtype, s);
  },
  impl: ([x], a) => {
    const s = [...x!.shape];
    s.splice(a.axis < 0 ? a.axis + s.length + 1 : a.axis, 0, 1);
    return relabel(x!, s);
  },
});

export const squeezeOp = defineOp<{ readonly axis: number }>({
  name: 'squeeze',
  kind: 'shape',
  arity: 1,
  infer: ([x], a) => {
    const axis = normAxis(a.axis, x!.shape.length);
    const d = x!.shape[axis];
    if (d !== null && d !== 1)
      throw new InferError(`cannot squeeze axis ${a.axis} of shape ${formatShape(x!.shape)}: its size is ${d}, not 1`);
    return tensorType(
      x!.dtype,
      x!.shape.filter((_, i) => i !== axis),
    );
  },
  impl: ([x], a) => {
    const axis = a.axis < 0 ? a.axis + x!.shape.length : a.axis;
    if (x!.shape[axis] !== 1)
      throw new InferError(
        `cannot squeeze axis ${a.axis} of shape ${formatShape(x!.shape)}: its size is ${x!.shape[axis]}, not 1`,
      );
    return relabel(
      x!,
      x!.shape.filter((_, i) => i !== axis),
    );
  },
});

export interface MergeAttrs {
  /** Axes `start .. stop-1` become one axis (start < stop). */
  readonly start: number;
  readonly stop: number;
}

export function mergedShape(shape: StaticShape, a: MergeAttrs): Dim[] {
  const run = shape.slice(a.start, a.stop);
  const d = run.includes(null) ? null : run.reduce<number>((p, q) => p * q!, 1);
  return [...shape.slice(0, a.start), d, ...shape.slice(a.stop)];
}

export const mergeAxesOp = defineOp<MergeAttrs>({
  name: 'merge_axes',
  kind: 'shape',
  arity: 1,
  infer: ([x], a) => {
    const r = x!.shape.length;
    if (!Number.isInteger(a.start) || !Number.isInteger(a.stop) || a.start < 0 || a.stop > r || a.start >= a.stop) {
      throw new InferError(
        `cannot merge axes ${a.start}..${a.stop - 1} of a tensor of shape ${formatShape(x!.shape)}`,
        'value',
      );
    }
    return tensorType(x!.dtype, mergedShape(x!.shape, a));
  },
  impl: ([x], a) => relabel(x!, mergedShape(x!.shape, a) as number[]),
});

/** specify_shape's check of a computed value's shape against the dims the caller knows. */
export function checkSpecifiedShape(shape: readonly number[], want: StaticShape): void {
  want.forEach((d, i) => {
    if (d !== null && shape[i] !== d)
      throw new InferError(
        `a value of shape ${formatShape(shape)} was given where shape ${formatShape(want)} is required (axis ${i})`,
      );
  });
}

/** Theano's SpecifyShape: the value unchanged, its static shape refined by dims the caller knows; checked when computed. */
export const specifyShapeOp = defineOp<{ readonly shape: StaticShape }>({
  name: 'specify_shape',
  kind: 'shape',
  arity: 1,
  infer: ([x], a) => {
    if (a.shape.length !== x!.shape.length)
      throw new InferError(
        `shape ${formatShape(a.shape)} has rank ${a.shape.length} but the tensor has shape ${formatShape(x!.shape)}`,
        'value',
      );
    return tensorType(
      x!.dtype,
      x!.shape.map((d, i) => {
        const u = unifyDim(d, a.shape[i]!);
        if (u === undefined)
          throw new InferError(
            `tensor of shape ${formatShape(x!.shape)} cannot have shape ${formatShape(a.shape)}: axis ${i} is ${d}, not ${a.shape[i]}`,
          );
        return u;
      }),
    );
  },
  impl: ([x], a) => {
    checkSpecifiedShape(x!.shape, a.shape);
    return x!;
  },
});

export const dimsOps = {
  expand_dims: expandDimsOp,
  squeeze: squeezeOp,
  merge_axes: mergeAxesOp,
  specify_shape: specifyShapeOp,
} as const;
