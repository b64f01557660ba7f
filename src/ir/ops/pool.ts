// Pooling primitives, channels-last: data (N, S_1..S_d, C), one window per channel.
//   pool         max: y[n,o,c] = max over the window's cells inside the input (padding never wins);
//                avg: y[n,o,c] = mean over the window's cells inside the input (padded cells are
//                not counted: TensorFlow's 'same' average pooling).
//   pool_grad    the adjoint in x: max sends dy to the window's first maximal cell (row-major, as
//                TensorFlow does); avg spreads dy / count over the counted cells.
//   pool_select  max only: y[n,o,c] = g at the cell where x's window has its maximum; the
//                adjoint of pool_grad in dy (so second derivatives stay in this family).
import { isFloat } from '../dtype.js';
import { NDArray, formatShape, sizeOf } from '../ndarray.js';
import { defineOp } from '../op.js';
import { compatibleShapes, tensorType, type TensorType } from '../types.js';
import { InferError } from '../errors.js';
import { checkWindowAttrs, forEachTap, geometry, staticOutSizes, type Geometry, type WindowAttrs } from './window.js';

export type PoolMode = 'max' | 'avg';
export const POOL_MODES: readonly PoolMode[] = ['max', 'avg'];

export type PoolAttrs = WindowAttrs & {
  readonly window: readonly number[];
  readonly mode: PoolMode;
};

function checkPool(x: TensorType, a: PoolAttrs): number {
  const d = a.window.length;
  if (x.shape.length !== d + 2) {
    throw new InferError(
      `input of shape ${formatShape(x.shape)} must have rank ${d + 2} (batch, ${d} spatial, channels) for a window of ${d} dims`,
    );
  }
  if (a.window.some((k) => !Number.isInteger(k) || k < 1))
    throw new InferError(`pool size ${JSON.stringify(a.window)} must be ${d} positive integers`, 'value');
  checkWindowAttrs(a, d);
  if (!POOL_MODES.includes(a.mode))
    throw new InferError(`pool mode ${JSON.stringify(a.mode)} is not one of ${POOL_MODES.join(', ')}`, 'value');
  if (a.mode === 'avg' && !isFloat(x.dtype))
    throw new InferError(`average pooling needs a float tensor, got ${x.dtype}`, 'type');
  return d;
}

function outType(x: TensorType, a: PoolAttrs, dtype = x.dtype): TensorType {
  const d = a.window.length;
  return tensorType(dtype, [x.shape[0]!, ...staticOutSizes(x.shape, a.window, a), x.shape[d + 1]!]);
}

function geometryOf(x: NDArray, a: PoolAttrs): Geometry {
  return geometry(x.shape[0]!, x.shape.slice(1, -1), a.window, a);
}

/** Flat index into x of each output cell's first maximal input cell (NaN counts as maximal). */
function argMaxima(x: NDArray, g: Geometry): Int32Array {
  const C = x.shape[x.ndim - 1]!;
  const X = x.data;
  const best = new Float64Array(g.n * sizeOf(g.outSize) * C);
  const arg = new Int32Array(best.length).fill(-1);
  forEachTap(g, (o, _t, i) => {
    for (let c = 0; c < C; c++) {
      const j = o * C + c;
      const v = X[i * C + c]!;
      const b = best[j]!;
      if (arg[j]! < 0 || v > b || (Number.isNaN(v) && !Number.isNaN(b))) {
        best[j] = v;
        arg[j] = i * C + c;
      }
    }
  });
  return arg;
}

/** Number of input cells (padding excluded) under each output cell's window. */
function counts(g: Geometry): Float64Array {
  const cnt = new Float64Array(g.n * sizeOf(g.outSize));
  forEachTap(g, (o) => {
    cnt[o] = cnt[o]! + 1;
  });
  return cnt;
}

export const poolOp = defineOp<PoolAttrs>({
  name: 'pool',
  kind: 'other',
  arity: 1,
  infer: ([x], a) => {
    checkPool(x!, a);
    return outType(x!, a);
  },
  impl: ([x], a) => {
    const g = geometryOf(x!, a);
    const C = x!.shape[x!.ndim - 1]!;
    const shape = [g.n, ...g.outSize, C];
    const out = new Float64Array(sizeOf(shape));
    if (a.mode === 'max') {
      const arg = argMaxima(x!, g);
      for (let j = 0; j < out.length; j++) out[j] = x!.data[arg[j]!]!;
    } else {
      const cnt = counts(g);
      forEachTap(g, (o, _t, i) => {
        for (let c = 0; c < C; c++) out[o * C + c] = out[o * C + c]! + x!.data[i * C + c]! / cnt[o]!;
      });
    }
    return new NDArray(out, shape, x!.dtype);
  },
});

/** x (N, S..., C), dy (N, O..., C) -> dx (N, S..., C) of dy's dtype. */
export const poolGradOp = defineOp<PoolAttrs>({
  name: 'pool_grad',
  kind: 'other',
  arity: 2,
  infer: ([x, dy], a) => {
    checkPool(x!, a);
    const want = outType(x!, a);
    if (!compatibleShapes(dy!.shape, want.shape))
      throw new InferError(
        `output gradient shape ${formatShape(dy!.shape)} does not match the pooled shape ${formatShape(want.shape)} of input ${formatShape(x!.shape)}`,
      );
    return tensorType(dy!.dtype, x!.shape);
  },
  impl: ([x, dy], a) => {
    const g = geometryOf(x!, a);
    const C = x!.shape[x!.ndim - 1]!;
    const dx = new Float64Array(x!.size);
    const DY = dy!.data;
    if (a.mode === 'max') {
      const arg = argMaxima(x!, g);
      for (let j = 0; j < arg.length; j++) dx[arg[j]!] = dx[arg[j]!]! + DY[j]!;
    } else {
      const cnt = counts(g);
      forEachTap(g, (o, _t, i) => {
        for (let c = 0; c < C; c++) dx[i * C + c] = dx[i * C + c]! + DY[o * C + c]! / cnt[o]!;
      });
    }
    return new NDArray(dx, x!.shape, dy!.dtype);
  },
});

/** x (N, S..., C), g (N, S..., C) -> (N, O..., C): g where x's window is maximal. */
export const poolSelectOp = defineOp<PoolAttrs>({
  name: 'pool_select',
  kind: 'other',
  arity: 2,
  infer: ([x, g], a) => {
    checkPool(x!, a);
    if (a.mode !== 'max')
      throw new InferError(`pool_select is defined for max pooling only, got mode ${JSON.stringify(a.mode)}`, 'value');
    if (!compatibleShapes(g!.shape, x!.shape))
      throw new InferError(
        `shapes ${formatShape(x!.shape)} (input) and ${formatShape(g!.shape)} (selected values) must match`,
      );
    return outType(x!, a, g!.dtype);
  },
  impl: ([x, gv], a) => {
    const g = geometryOf(x!, a);
    const arg = argMaxima(x!, g);
    const out = new Float64Array(arg.length);
    for (let j = 0; j < arg.length; j++) out[j] = gv!.data[arg[j]!]!;
    return new NDArray(out, [g.n, ...g.outSize, x!.shape[x!.ndim - 1]!], gv!.dtype);
  },
});

export const poolOps = {
  pool: poolOp,
  pool_grad: poolGradOp,
  pool_select: poolSelectOp,
} as const;
