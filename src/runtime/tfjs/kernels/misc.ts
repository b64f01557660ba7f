// Running sums and products, in_top_k, print, and the random draws on tfjs.
import { InferError } from '../../../ir/errors.js';
import { formatShape, sizeOf } from '../../../ir/ndarray.js';
import { formatValue, type cumulativeOps } from '../../../ir/ops/misc.js';
import type { randomOps, RandomAttrs } from '../../../ir/ops/random.js';
import {
  elementBits,
  normalFromBits,
  seededKey,
  truncatedNormal,
  unit32,
  unitFloat,
  unseededKey,
} from '../../../ir/random.js';
import { download } from '../convert.js';
import type { KernelContext, TfKernel, TfTableFor } from '../types.js';
import { arithDType, castTo, fit } from './util.js';

/**
 * The draws are made on the host and uploaded, as TensorFlow.js does for its own random ops:
 * element i is the same pure function of (key, i) as in src/ir/ops/random.ts (Philox from
 * src/ir/random.ts), so a seed gives the same numbers on both backends.
 */
function random<A extends RandomAttrs>(
  draw: (key: ReturnType<typeof seededKey>, i: number, a: A, w: Uint32Array) => number,
): TfKernel<A> {
  return (dims, a, ctx: KernelContext) => {
    const { tf, node } = ctx;
    let k = 0;
    const shape = a.shape.map((d) => {
      if (d !== null) return d;
      const v = dims[k++]!.dataSync()[0]!;
      if (!Number.isInteger(v) || v < 0)
        throw new InferError(
          `shape ${formatShape(a.shape)}: run-time dim ${k - 1} is ${v}, not a non-negative integer`,
          'value',
        );
      return v;
    });
    const key = a.seed !== null ? seededKey(a.seed) : unseededKey(a.uid!, ctx.epoch);
    const w = new Uint32Array(4);
    const out = new Float32Array(sizeOf(shape));
    for (let i = 0; i < out.length; i++) out[i] = draw(key, i, a, w);
    return fit(tf, tf.tensor(out, shape, 'float32'), node.dtype);
  };
}

/** Mantissa bits of a uniform that is exact in `dtype` and below 1 (as the op record). */
const unitBits = (dtype: string) => (dtype === 'float64' ? 53 : dtype === 'float16' ? 11 : 24);

export const miscKernels: TfTableFor<keyof typeof cumulativeOps | 'in_top_k' | 'print' | keyof typeof randomOps> = {
  // inclusive scans along the axis, accumulated in the node's dtype
  cumsum: ([x], a, { tf, node }) => tf.cumsum(castTo(tf, x!, arithDType(node.dtype)), a.axis),
  cumprod: ([x], a, { tf, node }) => tf.cumprod(castTo(tf, x!, arithDType(node.dtype)), a.axis),
  // true where fewer than k classes score strictly higher than the target's score; targets
  // outside [0, classes), a NaN target score, or k < 1 give false
  in_top_k: ([p, t], a, { tf }) => {
    const [b, c] = p!.shape as [number, number];
    if (t!.shape[0] !== b)
      throw new InferError(
        `predictions ${formatShape(p!.shape)} and targets ${formatShape(t!.shape)} disagree on the batch size`,
      );
    if (a.k < 1) return tf.zeros([b], 'bool');
    const pf = castTo(tf, p!, 'float32');
    const ti = castTo(tf, t!, 'int32');
    const hit = tf.cast(tf.oneHot(ti, c), 'bool');
    const score = tf.sum(tf.where(hit, pf, tf.zerosLike(pf)), 1, true);
    const higher = tf.sum(tf.cast(tf.greater(pf, score), 'int32'), 1);
    const valid = tf.logicalAnd(
      tf.logicalAnd(tf.greaterEqual(ti, 0), tf.less(ti, c)),
      tf.logicalNot(tf.isNaN(tf.reshape(score, [b]))),
    );
    return tf.logicalAnd(valid, tf.less(higher, a.k));
  },
  print: ([x], a, { node, print }) => {
    print(`${a.message}${formatValue(download(x!, node.dtype))}`);
    return x!;
  },
  // formulas of src/ir/ops/random.ts, element by element
  random_uniform: random(
    (key, i, a, w) => a.low + (a.high - a.low) * unitFloat(elementBits(key, i, 0, w), unitBits(a.dtype)),
  ),
  random_normal: random((key, i, a, w) => a.mean + a.stddev * normalFromBits(elementBits(key, i, 0, w))),
  truncated_normal: random((key, i, a, w) => a.mean + a.stddev * truncatedNormal(key, i, w)),
  random_binomial: random((key, i, a, w) => (unit32(elementBits(key, i, 0, w)) < a.p ? 1 : 0)),
};
