// Reductions on tfjs. The attrs' axes are already normalised and sorted; an empty axis list
// reduces nothing (the value passes through, reshaped by keepdims, which then changes nothing).
import { InferError } from '../../../ir/errors.js';
import { formatShape } from '../../../ir/ndarray.js';
import {
  reducedShape,
  type ArgAttrs,
  reductionRows,
  type argOps,
  type ReduceAttrs,
  type reduceOps,
  type ReductionOp,
} from '../../../ir/ops/reduce.js';
import type { TF } from '../load.js';
import type { Tensor, TfDType, TfKernel, TfTableFor } from '../types.js';
import { arithDType, castTo, toBool } from './util.js';

/**
 * A reduction of an empty tensor is its row's `empty` value everywhere (its fold's identity, NaN
 * for mean), as the reference computes; tfjs' wasm kernels would read
 * uninitialised memory there.
 */
function emptyResult(tf: TF, x: Tensor, a: ReduceAttrs, init: number, dt: TfDType): Tensor | undefined {
  return x.size === 0 ? tf.fill(reducedShape(x.shape, a.axes, a.keepdims), init, dt) : undefined;
}

/** Reduces in the node's dtype (sums of bool and small ints accumulate in int32, as the reference). */
function reduction(
  init: number,
  f: (tf: TF, x: Tensor, axes: number[], keep: boolean) => Tensor,
): TfKernel<ReduceAttrs> {
  return ([x], a, { tf, node }) => {
    if (a.axes.length === 0) return x!;
    const dt = arithDType(node.dtype);
    return emptyResult(tf, x!, a, init, dt) ?? f(tf, castTo(tf, x!, dt), [...a.axes], a.keepdims);
  };
}

/** max/min keep the input dtype; bool runs as int32. */
function extreme(init: number, f: (tf: TF, x: Tensor, axes: number[], keep: boolean) => Tensor): TfKernel<ReduceAttrs> {
  return ([x], a, { tf }) => {
    if (a.axes.length === 0) return x!;
    const xv = x!.dtype === 'bool' ? tf.cast(x!, 'int32') : x!;
    return emptyResult(tf, xv, a, init, xv.dtype as TfDType) ?? f(tf, xv, [...a.axes], a.keepdims);
  };
}

function logical(init: number, f: (tf: TF, x: Tensor, axes: number[], keep: boolean) => Tensor): TfKernel<ReduceAttrs> {
  return ([x], a, { tf }) => {
    const b = toBool(tf, x!);
    if (a.axes.length === 0) return b;
    return emptyResult(tf, b, a, init, 'bool') ?? f(tf, b, [...a.axes], a.keepdims);
  };
}

/** An empty axis has no extremum (the reference's runtime error); bool compares as int32. */
function extremumInput(tf: TF, x: Tensor, axis: number, name: string): Tensor {
  if (x.shape[axis] === 0)
    throw new InferError(
      `${name} over axis ${axis} of a tensor of shape ${formatShape(x.shape)}: the axis is empty`,
      'value',
    );
  return x.dtype === 'bool' ? tf.cast(x, 'int32') : x;
}

/**
 * NumPy's (and the reference's) argmax and argmin pick the first NaN along the axis; tfjs skips
 * NaN. Where a row has a NaN, its index is the first NaN's (argMax of the
 * NaN mask picks the first true).
 */
function firstNaNWins(tf: TF, x: Tensor, axis: number, idx: Tensor): Tensor {
  if (x.dtype !== 'float32') return idx;
  const nan = tf.isNaN(x);
  return tf.where(tf.any(nan, axis), tf.argMax(tf.cast(nan, 'int32'), axis), idx);
}

/** argmax or argmin: the first index of the extremum (int64 in the IR, int32 here). */
function argKernel(name: 'argmax' | 'argmin'): TfKernel<ArgAttrs> {
  return ([x], a, { tf }) => {
    const xv = extremumInput(tf, x!, a.axis, name);
    return firstNaNWins(tf, xv, a.axis, name === 'argmax' ? tf.argMax(xv, a.axis) : tf.argMin(xv, a.axis));
  };
}

/** The tfjs functions the rows name (a row naming no function of tfjs fails to compile here). */
type TfReduceName = (typeof reduceOps)[keyof typeof reduceOps]['spelling']['tf'];

/** Each reduction row's kernel: its tfjs function, by its family, with its empty result (src/ir/ops/reduce.ts). */
function rowKernel(r: ReductionOp): TfKernel<ReduceAttrs> {
  const f = (tf: TF, x: Tensor, axes: number[], keep: boolean) =>
    (tf[r.spelling.tf as TfReduceName] as (x: Tensor, axes: number[], keep: boolean) => Tensor)(x, axes, keep);
  return (r.family === 'arith' ? reduction : r.family === 'extremum' ? extreme : logical)(r.empty, f);
}

export const reduceKernels: TfTableFor<keyof typeof reduceOps | keyof typeof argOps> = {
  ...(Object.fromEntries(reductionRows.map((r) => [r.name, rowKernel(r)])) as TfTableFor<keyof typeof reduceOps>),
  argmax: argKernel('argmax'),
  argmin: argKernel('argmin'),
};
