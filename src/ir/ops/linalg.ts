// Batched contraction (Theano's batched_tensordot with one axis per operand). `dot` lives in core.ts.
import { promote } from '../dtype.js';
import { NDArray, formatShape, sizeOf, stridesOf } from '../ndarray.js';
import { defineOp } from '../op.js';
import { tensorType, type Dim } from '../types.js';
import { InferError } from '../errors.js';
import { forEachIndex } from './util.js';
import { unifyDim } from './shape.js';

export interface BatchDotAttrs {
  /** The contracted axis of x and of y, each >= 1 (axis 0 is the batch). */
  readonly axes: readonly [number, number];
}

/**
 * out[b, i..., j...] = sum_k x[b, i... with k at axes[0]] * y[b, j... with k at axes[1]]:
 * per batch row, x's remaining axes in order, then y's remaining axes in order.
 */
export const batchDotOp = defineOp<BatchDotAttrs>({
  name: 'batch_dot',
  kind: 'other',
  arity: 2,
  infer: ([x, y], a) => {
    const xs = x!.shape;
    const ys = y!.shape;
    if (xs.length < 2 || ys.length < 2)
      throw new InferError(`inputs must have rank >= 2; got shapes ${formatShape(xs)} (x) and ${formatShape(ys)} (y)`);
    const [ax, ay] = a.axes;
    if (!Number.isInteger(ax) || ax < 1 || ax >= xs.length)
      throw new InferError(
        `axes[0] = ${ax} is not an axis 1..${xs.length - 1} of x of shape ${formatShape(xs)}`,
        'value',
      );
    if (!Number.isInteger(ay) || ay < 1 || ay >= ys.length)
      throw new InferError(
        `axes[1] = ${ay} is not an axis 1..${ys.length - 1} of y of shape ${formatShape(ys)}`,
        'value',
      );
    const batch = unifyDim(xs[0]!, ys[0]!);
    if (batch === undefined)
      throw new InferError(
        `shapes ${formatShape(xs)} (x) and ${formatShape(ys)} (y) have different batch sizes (axis 0: ${xs[0]} vs ${ys[0]})`,
      );
    if (unifyDim(xs[ax]!, ys[ay]!) === undefined) {
      throw new InferError(
        `shapes ${formatShape(xs)} (x) and ${formatShape(ys)} (y) are not aligned for axes (${ax}, ${ay}): x.shape[${ax}] = ${xs[ax]} but y.shape[${ay}] = ${ys[ay]}`,
      );
    }
    const rest = (s: readonly Dim[], k: number) => s.filter((_, i) => i !== 0 && i !== k);
    return tensorType(promote(x!.dtype, y!.dtype), [batch, ...rest(xs, ax), ...rest(ys, ay)]);
  },
  impl: ([x, y], a) => {
    const [ax, ay] = a.axes;
    const xs = x!.shape;
    const ys = y!.shape;
    if (xs[0] !== ys[0] || xs[ax] !== ys[ay])
      throw new InferError(`shapes ${formatShape(xs)} and ${formatShape(ys)} are not aligned for axes (${ax}, ${ay})`);
    const xst = stridesOf(xs);
    const yst = stridesOf(ys);
    const xRest = xs.map((_, i) => i).filter((i) => i !== 0 && i !== ax);
    const yRest = ys.map((_, i) => i).filter((i) => i !== 0 && i !== ay);
    const shape = [xs[0]!, ...xRest.map((i) => xs[i]!), ...yRest.map((i) => ys[i]!)];
    const n = xs[ax]!;
    const out = new Float64Array(sizeOf(shape));
    forEachIndex(shape, (idx, flat) => {
      const b = idx[0]!;
      let xo = b * xst[0]!;
      xRest.forEach((axis, k) => {
        xo += idx[1 + k]! * xst[axis]!;
      });
      let yo = b * yst[0]!;
      yRest.forEach((axis, k) => {
        yo += idx[1 + xRest.length + k]! * yst[axis]!;
      });
      let s = 0;
      for (let k = 0; k < n; k++) s += x!.data[xo + k * xst[ax]!]! * y!.data[yo + k * yst[ay]!]!;
      out[flat] = s;
    });
    return new NDArray(out, shape, promote(x!.dtype, y!.dtype));
  },
});

export const linalgOps = {
  batch_dot: batchDotOp,
} as const;
