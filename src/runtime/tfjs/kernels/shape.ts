// Structural ops on tfjs (slice, pad, concat, gather, tile, repeat, axis bookkeeping,
// batch_dot) and their adjoints. Bool values move as int32 where a tfjs kernel may not take
// bool; the executor casts results back to the node's dtype.
import { InferError } from '../../../ir/errors.js';
import { formatShape, sizeOf } from '../../../ir/ndarray.js';
import { checkSpecifiedShape, mergedShape, type dimsOps } from '../../../ir/ops/dims.js';
import type { linalgOps } from '../../../ir/ops/linalg.js';
import { sliceRange, type SliceAxis, type shapeOps } from '../../../ir/ops/shape.js';
import type { shapeGradOps } from '../../../ir/ops/shape-adjoint.js';
import type { TF } from '../load.js';
import type { Tensor, TfTableFor } from '../types.js';
import { arithDType, castTo, expandTo, scalarLike } from './util.js';

/** x with `axis` reversed when `step` < 0: a negative-step slice is a positive-step slice of the reversal. */
function forward(tf: TF, x: Tensor, axis: number, step: number): Tensor {
  return step < 0 ? tf.reverse(x, axis) : x;
}

/** Python's x[start:stop:step] on every axis: reversals for negative steps, then one strided slice. */
export function pySlice(tf: TF, x: Tensor, axes: readonly SliceAxis[]): Tensor {
  let v = x;
  const begin: number[] = [];
  const end: number[] = [];
  const strides: number[] = [];
  axes.forEach((s, i) => {
    const d = x.shape[i]!;
    const { first, count } = sliceRange(s, d);
    v = forward(tf, v, i, s.step);
    const f = s.step < 0 ? d - 1 - first : first;
    const st = Math.abs(s.step);
    begin.push(count === 0 ? 0 : f);
    end.push(count === 0 ? 0 : f + (count - 1) * st + 1);
    strides.push(st);
  });
  return tf.stridedSlice(v, begin, end, strides);
}

/**
 * The adjoint of pySlice: zeros of `shape` with g where the slice read. Per axis: g spread out
 * by the step (zeros between), padded to the axis, and reversed back for a negative step.
 */
function pyUnslice(tf: TF, g: Tensor, axes: readonly SliceAxis[], shape: readonly number[]): Tensor {
  let v = g;
  axes.forEach((s, i) => {
    const d = shape[i]!;
    const { first, count } = sliceRange(s, d);
    const st = Math.abs(s.step);
    if (count === 0) {
      const z = [...v.shape];
      z[i] = d;
      v = tf.zeros(z, v.dtype);
      return;
    }
    if (st > 1) v = spread(tf, v, i, st);
    const f = s.step < 0 ? d - 1 - first : first;
    const pads = v.shape.map((_, j): [number, number] => (j === i ? [f, d - f - v.shape[i]!] : [0, 0]));
    v = forward(tf, tf.pad(v, pads), i, s.step);
  });
  return v;
}

/** Along `axis`, `step - 1` zeros after each element but the last (length (n - 1) * step + 1). */
export function spread(tf: TF, x: Tensor, axis: number, step: number): Tensor {
  const n = x.shape[axis]!;
  const withSlot = [...x.shape.slice(0, axis + 1), 1, ...x.shape.slice(axis + 1)];
  const pads = withSlot.map((_, j): [number, number] => (j === axis + 1 ? [0, step - 1] : [0, 0]));
  const merged = [...x.shape];
  merged[axis] = n * step;
  const long = tf.reshape(tf.pad(tf.reshape(x, withSlot), pads), merged);
  const begin = merged.map(() => 0);
  const size = merged.map((d, j) => (j === axis ? Math.max((n - 1) * step + 1, 0) : d));
  return tf.slice(long, begin, size);
}

/** Indices with negatives counted from the end, checked against `n` rows as the reference does. */
function rowIndices(tf: TF, ind: Tensor, n: number, ref: readonly number[]): Tensor {
  const i = castTo(tf, ind, 'int32');
  const k = tf.where(tf.less(i, 0), tf.add(i, scalarLike(tf, n, i)), i);
  if (k.size > 0) {
    const [lo, hi] = tf.stack([tf.min(k), tf.max(k)]).dataSync();
    if (lo! < 0 || hi! >= n) {
      const raw = Array.from(i.dataSync()).find((r) => (r < 0 ? r + n : r) < 0 || (r < 0 ? r + n : r) >= n);
      throw new InferError(
        `index ${raw} is out of range for reference of shape ${formatShape(ref)} (allowed: ${-n}..${n - 1})`,
        'value',
      );
    }
  }
  return k;
}

/**
 * Each element `rep` times along `axis` (NumPy's repeat): the axes before and after it merged, a
 * new axis after it broadcast to `rep`, merged again. At most 4 dims reach tfjs whatever the rank
 * (XNNPack takes at most 6), and broadcasting is cheaper than tfjs' Tile kernel on wasm.
 */
function repeatAlong(tf: TF, x: Tensor, axis: number, rep: number): Tensor {
  const prod = (s: readonly number[]) => sizeOf(s);
  const pre = prod(x.shape.slice(0, axis)),
    d = x.shape[axis]!,
    post = prod(x.shape.slice(axis + 1));
  const out = [...x.shape];
  out[axis] = d * rep;
  return tf.reshape(expandTo(tf, tf.reshape(x, [pre, d, 1, post]), [pre, d, rep, post]), out);
}

/** The whole tensor `reps[i]` times along axis i (NumPy's tile): tfjs' Tile kernel, which takes any rank. */
function tileBy(tf: TF, x: Tensor, reps: readonly number[]): Tensor {
  return tf.tile(x, [...reps]);
}

const num = (tf: TF, t: Tensor) => (t.dtype === 'bool' ? tf.cast(t, 'int32') : t);
const normAxis = (axis: number, rank: number) => (axis < 0 ? axis + rank : axis);

type ShapeOps = keyof typeof shapeOps | keyof typeof dimsOps | keyof typeof linalgOps | keyof typeof shapeGradOps;

export const shapeKernels: TfTableFor<ShapeOps> = {
  slice: ([x], a, { tf }) => pySlice(tf, num(tf, x!), a.axes),
  pad: ([x], a, { tf }) =>
    tf.pad(
      num(tf, x!),
      a.pads.map(([b, e]): [number, number] => [b, e]),
    ),
  concat: (ins, a, { tf, node }) => {
    const first = ins[0]!;
    const axis = normAxis(a.axis, first.shape.length);
    for (const t of ins) {
      if (t.shape.some((d, i) => i !== axis && d !== first.shape[i])) {
        throw new InferError(
          `shapes ${ins.map((u) => formatShape(u.shape)).join(', ')} differ off the concatenation axis ${axis}`,
        );
      }
    }
    const dt = arithDType(node.dtype);
    return tf.concat(
      ins.map((t) => castTo(tf, t, dt)),
      axis,
    );
  },
  gather: ([ref, ind], _, { tf }) => tf.gather(num(tf, ref!), rowIndices(tf, ind!, ref!.shape[0]!, ref!.shape), 0),
  tile: ([x], a, { tf }) => tileBy(tf, num(tf, x!), a.reps),
  repeat_elements: ([x], a, { tf }) => repeatAlong(tf, num(tf, x!), normAxis(a.axis, x!.shape.length), a.rep),
  expand_dims: ([x], a, { tf }) => tf.expandDims(x!, normAxis(a.axis, x!.shape.length + 1)),
  squeeze: ([x], a, { tf }) => {
    const axis = normAxis(a.axis, x!.shape.length);
    if (x!.shape[axis] !== 1)
      throw new InferError(
        `cannot squeeze axis ${a.axis} of shape ${formatShape(x!.shape)}: its size is ${x!.shape[axis]}, not 1`,
      );
    return tf.reshape(
      x!,
      x!.shape.filter((_, i) => i !== axis),
    );
  },
  merge_axes: ([x], a, { tf }) => tf.reshape(x!, mergedShape(x!.shape, a) as number[]),
  specify_shape: ([x], a) => {
    checkSpecifiedShape(x!.shape, a.shape);
    return x!;
  },
  // per batch row: x as (rows, k) against y as (k, cols), one batched matMul (float32)
  batch_dot: ([x, y], a, { tf, node }) => {
    const [ax, ay] = a.axes;
    const xs = x!.shape;
    const ys = y!.shape;
    if (xs[0] !== ys[0] || xs[ax] !== ys[ay])
      throw new InferError(`shapes ${formatShape(xs)} and ${formatShape(ys)} are not aligned for axes (${ax}, ${ay})`);
    const xRest = xs.map((_, i) => i).filter((i) => i !== 0 && i !== ax);
    const yRest = ys.map((_, i) => i).filter((i) => i !== 0 && i !== ay);
    const size = (s: readonly number[], axes: number[]) => axes.reduce((p, i) => p * s[i]!, 1);
    if (xs[ax] === 0) return tf.zeros([xs[0]!, ...xRest.map((i) => xs[i]!), ...yRest.map((i) => ys[i]!)], 'float32');
    const x3 = tf.reshape(tf.transpose(castTo(tf, x!, 'float32'), [0, ...xRest, ax]), [
      xs[0]!,
      size(xs, xRest),
      xs[ax]!,
    ]);
    const y3 = tf.reshape(tf.transpose(castTo(tf, y!, 'float32'), [0, ay, ...yRest]), [
      ys[0]!,
      ys[ay]!,
      size(ys, yRest),
    ]);
    const out = tf.reshape(tf.matMul(x3, y3), [xs[0]!, ...xRest.map((i) => xs[i]!), ...yRest.map((i) => ys[i]!)]);
    return arithDType(node.dtype) === 'float32' ? out : tf.cast(tf.round(out), arithDType(node.dtype));
  },
  unslice: ([g, x], a, { tf }) => pyUnslice(tf, num(tf, g!), a.axes, x!.shape),
  concat_part: ([g, ...xs], a, { tf }) => {
    const axis = normAxis(a.axis, g!.shape.length);
    const before = xs.slice(0, a.index).reduce((s, t) => s + t.shape[axis]!, 0);
    const begin = g!.shape.map((_, i) => (i === axis ? before : 0));
    const size = g!.shape.map((d, i) => (i === axis ? xs[a.index]!.shape[axis]! : d));
    return tf.slice(g!, begin, size);
  },
  // rows of g added into zeros at their (possibly repeated) indices: scatterND sums duplicates
  scatter_add_rows: ([g, ind, ref], _, { tf, node }) => {
    const n = ref!.shape[0]!;
    const k = rowIndices(tf, ind!, n, ref!.shape);
    const m = k.size;
    const rows = tf.reshape(castTo(tf, g!, arithDType(node.dtype)), [m, ...ref!.shape.slice(1)]);
    return tf.scatterND(tf.reshape(k, [m, 1]), rows, ref!.shape);
  },
  // the sum of the tiles: each axis of size r * d split as (r, d), the r axes summed
  untile: ([g], a, { tf, node }) => {
    const gs = g!.shape;
    const split = gs.flatMap((d, i) => [a.reps[i]!, d / a.reps[i]!]);
    const summed = tf.sum(
      tf.reshape(castTo(tf, g!, arithDType(node.dtype)), split),
      gs.map((_, i) => 2 * i),
    );
    return tf.reshape(
      summed,
      gs.map((d, i) => d / a.reps[i]!),
    );
  },
  // the sum of each run of `rep`: the axis split as (d, rep), the rep axis summed
  unrepeat: ([g], a, { tf, node }) => {
    const gs = g!.shape;
    const axis = normAxis(a.axis, gs.length);
    const split = [...gs.slice(0, axis), gs[axis]! / a.rep, a.rep, ...gs.slice(axis + 1)];
    return tf.sum(tf.reshape(castTo(tf, g!, arithDType(node.dtype)), split), axis + 1);
  },
};
