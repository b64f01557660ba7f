// Reductions on tfjs. The attrs' axes are already normalised and sorted; an empty axis list
// reduces nothing (the value passes through, reshaped by keepdims, which then changes nothing).
import { InferError } from '../../../ir/errors.js';
import { formatShape } from '../../../ir/ndarray.js';
import { reducedShape, type argOps, type ReduceAttrs, type reduceOps } from '../../../ir/ops/reduce.js';
import type { TF } from '../load.js';
import type { Tensor, TfDType, TfKernel, TfTableFor } from '../types.js';
import { arithDType, castTo, toBool } from './util.js';

/**
 * A reduction of an empty tensor is its fold's initial value everywhere (0 for sum, 1 for prod,
 * -inf for max, NaN for mean...), as the reference computes; tfjs' wasm kernels would read
 * uninitialised memory there.
 */
function emptyResult(tf: TF, x: Tensor, a: ReduceAttrs, init: number, dt: TfDType): Tensor | undefined {
  return x.size === 0 ? tf.fill(reducedShape(x.shape, a.axes, a.keepdims), init, dt) : undefined;
}

/** Reduces in the node's dtype (sums of bool and small ints accumulate in int32, as the reference). */
function reduction(init: number, f: (tf: TF, x: Tensor, axes: number[], keep: boolean) => Tensor): TfKernel<ReduceAttrs> {
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
  if (x.shape[axis] === 0) throw new InferError(`${name} over axis ${axis} of a tensor of shape ${formatShape(x.shape)}: the axis is empty`, 'value');
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

export const reduceKernels: TfTableFor<keyof typeof reduceOps | keyof typeof argOps> = {
  sum: reduction(0, (tf, x, axes, keep) => tf.sum(x, axes, keep)),
  prod: reduction(1, (tf, x, axes, keep) => tf.prod(x, axes, keep)),
  mean: reduction(NaN, (tf, x, axes, keep) => tf.mean(x, axes, keep)),
  max: extreme(-Infinity, (tf, x, axes, keep) => tf.max(x, axes, keep)),
  min: extreme(Infinity, (tf, x, axes, keep) => tf.min(x, axes, keep)),
  any: logical(0, (tf, x, axes, keep) => tf.any(x, axes, keep)),
  all: logical(1, (tf, x, axes, keep) => tf.all(x, axes, keep)),
  // first index of the extremum (int64 in the IR, int32 here)
  argmax: ([x], a, { tf }) => firstNaNWins(tf, extremumInput(tf, x!, a.axis, 'argmax'), a.axis, tf.argMax(extremumInput(tf, x!, a.axis, 'argmax'), a.axis)),
  argmin: ([x], a, { tf }) => firstNaNWins(tf, extremumInput(tf, x!, a.axis, 'argmin'), a.axis, tf.argMin(extremumInput(tf, x!, a.axis, 'argmin'), a.axis)),
};
