// Ops that gradients need to undo broadcasting, reshapes and indexing when shapes are only
// known at run time. Each takes a reference tensor whose runtime shape it matches.
import { NDArray, formatShape, sizeOf } from '../ndarray.js';
import { defineOp } from '../op.js';
import { tensorType, type Dim } from '../types.js';
import { InferError } from '../errors.js';
import { broadcastStrides, forEachIndex, offsetOf } from './util.js';
import { forwardingOp } from './core.js';

/** sum_to_like(g, x): g summed over the axes on which x was broadcast, to x's runtime shape. */
export const sumToLikeOp = defineOp<Record<string, never>>({
  name: 'sum_to_like',
  kind: 'reduction',
  arity: 2,
  infer: ([g, x]) => {
    if (x!.shape.length > g!.shape.length)
      throw new InferError(`target ${formatShape(x!.shape)} has higher rank than ${formatShape(g!.shape)}`);
    return tensorType(g!.dtype, x!.shape);
  },
  impl: ([g, x]) => {
    const out = new Float64Array(x!.size);
    const st = broadcastStrides(x!.shape, g!.shape);
    forEachIndex(g!.shape, (idx, i) => {
      const o = offsetOf(idx, st);
      out[o] = out[o]! + g!.data[i]!;
    });
    return new NDArray(out, x!.shape, g!.dtype);
  },
});

/** broadcast_like(g, x): g broadcast (NumPy rules) to x's runtime shape. */
export const broadcastLikeOp = defineOp<Record<string, never>>({
  name: 'broadcast_like',
  kind: 'elementwise',
  arity: 2,
  infer: ([g, x]) => {
    const gs = g!.shape;
    const xs = x!.shape;
    if (gs.length > xs.length)
      throw new InferError(`cannot broadcast ${formatShape(gs)} to the lower-rank ${formatShape(xs)}`);
    const off = xs.length - gs.length;
    gs.forEach((d, i) => {
      const t = xs[off + i]!;
      if (d !== null && d !== 1 && t !== null && t !== d)
        throw new InferError(
          `cannot broadcast ${formatShape(gs)} to ${formatShape(xs)}: axis ${off + i} has ${d} and ${t}`,
        );
    });
    return tensorType(g!.dtype, xs);
  },
  impl: ([g, x]) => {
    const out = new Float64Array(x!.size);
    const st = broadcastStrides(g!.shape, x!.shape);
    forEachIndex(x!.shape, (idx, i) => {
      out[i] = g!.data[offsetOf(idx, st)]!;
    });
    return new NDArray(out, x!.shape, g!.dtype);
  },
});

/** reshape_like(g, x): g with x's runtime shape (same size). */
export const reshapeLikeOp = defineOp<Record<string, never>>({
  name: 'reshape_like',
  kind: 'shape',
  arity: 2,
  infer: ([g, x]) => tensorType(g!.dtype, x!.shape),
  impl: ([g, x]) => {
    if (g!.size !== x!.size)
      throw new InferError(`cannot reshape ${formatShape(g!.shape)} to ${formatShape(x!.shape)}`);
    return g!.reshape(x!.shape);
  },
});

/** unsqueeze(x): size-1 axes inserted at `axes` (positions in the result). */
export const unsqueezeOp = defineOp<{ readonly axes: readonly number[] }>({
  name: 'unsqueeze',
  kind: 'shape',
  arity: 1,
  infer: ([x], a) => tensorType(x!.dtype, unsqueezeShape(x!.shape, a.axes)),
  impl: ([x], a) => x!.reshape(unsqueezeShape(x!.shape, a.axes) as number[]),
});

export function unsqueezeShape<T extends Dim>(shape: readonly T[], axes: readonly number[]): T[] {
  const out: T[] = [];
  let j = 0;
  const r = shape.length + axes.length;
  for (let i = 0; i < r; i++) out.push(axes.includes(i) ? (1 as T) : shape[j++]!);
  return out;
}

/** scatter_index(g, x): zeros of x's shape with x[index] = g (the gradient of `x.get(index)`). */
export const scatterIndexOp = defineOp<{ readonly index: number }>({
  name: 'scatter_index',
  kind: 'shape',
  arity: 2,
  infer: ([, x]) => tensorType(x!.dtype, x!.shape),
  impl: ([g, x], a) => {
    const d = x!.shape[0]!;
    const i = a.index < 0 ? a.index + d : a.index;
    const out = new Float64Array(x!.size);
    const inner = sizeOf(x!.shape.slice(1));
    out.set(g!.data, i * inner);
    return new NDArray(out, x!.shape, x!.dtype);
  },
});

/** stop_gradient(x): x forwards; no gradient flows back (Theano's disconnected_grad). */
export const stopGradientOp = forwardingOp('stop_gradient');

/** Attrs of grad_clip: the bounds its cotangent is clipped to. */
export interface GradClipAttrs {
  readonly lo: number;
  readonly hi: number;
}

/** grad_clip(x): x forwards; the gradient flowing back is clipped to [lo, hi] (Theano's GradClip). */
export const gradClipOp = defineOp<GradClipAttrs>({
  name: 'grad_clip',
  kind: 'elementwise',
  arity: 1,
  infer: ([x], a) => {
    if (!(a.lo <= a.hi)) throw new InferError(`grad_clip needs lo <= hi, got lo ${a.lo} and hi ${a.hi}`, 'value');
    return x!;
  },
  impl: ([x]) => x!,
});

/** grad_scale(x): x forwards; the gradient flowing back is multiplied by `scale` (Theano's GradScale). */
export const gradScaleOp = defineOp<{ readonly scale: number }>({
  name: 'grad_scale',
  kind: 'elementwise',
  arity: 1,
  infer: ([x], a) => {
    if (!Number.isFinite(a.scale)) throw new InferError(`grad_scale needs a finite scale, got ${a.scale}`, 'value');
    return x!;
  },
  impl: ([x]) => x!,
});

export const gradOps = {
  sum_to_like: sumToLikeOp,
  broadcast_like: broadcastLikeOp,
  reshape_like: reshapeLikeOp,
  unsqueeze: unsqueezeOp,
  scatter_index: scatterIndexOp,
  stop_gradient: stopGradientOp,
  grad_clip: gradClipOp,
  grad_scale: gradScaleOp,
} as const;
