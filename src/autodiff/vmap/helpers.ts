// Graph builders for batching rules. A batched value always carries the batch on axis 0, so each
// rule only moves axes by one and never tracks where the batch went (JAX moves batch dims lazily;
// fixing it at 0 keeps every rule a few lines).
import { apply } from '../../ir/build.js';
import type { DType } from '../../ir/dtype.js';
import { ValueError } from '../../ir/errors.js';
import { NDArray, formatShape } from '../../ir/ndarray.js';
import type { Node } from '../../ir/node.js';
import type { Attrs } from '../../ir/op.js';
import type { AttrsOf, OpName } from '../../ir/registry.js';
import { isFullyKnown, normAxis } from '../../ir/types.js';
import type { BVal, BatchContext } from './types.js';

export const FN = 'autodiff.vmap';

export const batched = (value: Node): BVal => ({ value, batched: true });
export const unbatched = (value: Node): BVal => ({ value, batched: false });

/** Builds `op` with the error messages naming vmap. */
export function ap<K extends OpName>(op: K, inputs: readonly Node[], attrs?: AttrsOf<K>): Node;
export function ap(op: string, inputs: readonly Node[], attrs?: Attrs): Node;
export function ap(op: string, inputs: readonly Node[], attrs: unknown = {}): Node {
  return apply(op, inputs, attrs as Attrs, FN);
}

/** Axis `a` of the per-example tensor (rank `ndim`, negative allowed) as an axis of the batched one. */
export function shift(a: number, ndim: number): number {
  return normAxis(a, ndim) + 1;
}

/** `k` unit axes inserted right after the batch axis. */
export function unitAxes(x: Node, k: number): Node {
  return k <= 0 ? x : ap('unsqueeze', [x], { axes: Array.from({ length: k }, (_, i) => i + 1) });
}

/** Moves axis `from` of `x` to position `to`. */
export function moveAxis(x: Node, from: number, to: number): Node {
  if (from === to) return x;
  const perm = x.shape.map((_, i) => i).filter((i) => i !== from);
  perm.splice(to, 0, from);
  return ap('transpose', [x], { perm });
}

/** Zeros of shape [B, 1, ..., 1] (`rank` ones): what broadcasting a value over the batch adds. */
export function batchZeros(ctx: BatchContext, rank: number, dtype: DType): Node {
  if (ctx.size !== null) {
    const shape = [ctx.size, ...new Array<number>(rank).fill(1)];
    return ap('constant', [], { value: new NDArray(new Float64Array(ctx.size), shape, dtype) });
  }
  const ref = ctx.ref;
  const z = ap('fill_like', [ref], { value: 0, dtype });
  const perBatch = ref.ndim === 1 ? z : ap('sum', [z], { axes: ref.shape.map((_, i) => i).slice(1), keepdims: false });
  return rank === 0 ? perBatch : ap('unsqueeze', [perBatch], { axes: Array.from({ length: rank }, (_, i) => i + 1) });
}

/** Zeros of shape [B, ...x.shape] and x's dtype, for ops that read a reference's shape (and dtype). */
export function batchedShapeOf(x: Node, ctx: BatchContext): Node {
  return ap('add', [
    ap('unsqueeze', [ap('fill_like', [x], { value: 0, dtype: x.dtype })], { axes: [0] }),
    batchZeros(ctx, x.ndim, x.dtype),
  ]);
}

/** An unbatched value repeated over the batch: [B, ...x.shape]. */
export function broadcastBatch(x: Node, ctx: BatchContext): Node {
  return ap('broadcast_like', [ap('unsqueeze', [x], { axes: [0] }), batchedShapeOf(x, ctx)]);
}

/** The value with the batch on axis 0, repeating an unbatched one. */
export function materialize(v: BVal, ctx: BatchContext): Node {
  return v.batched ? v.value : broadcastBatch(v.value, ctx);
}

/** The first example of a batched value: an unbatched stand-in where only the shape is read. */
export function firstExample(x: Node): Node {
  return ap('index', [x], { index: 0 });
}

/** [B, N, ...] -> [B*N, ...]: the batch folded into the op's own leading (batch) axis. */
export function mergeBatch(x: Node): Node {
  return ap('merge_axes', [x], { start: 0, stop: 2 });
}

/** [B*N, ...] -> [B, N, ...], back to the per-example node's shape `n.shape`. */
export function splitBatch(y: Node, n: Node, ctx: BatchContext): Node {
  if (isFullyKnown(n.shape)) return ap('reshape', [y], { shape: [-1, ...n.shape] });
  const rest = n.shape.slice(1);
  if (ctx.size !== null && isFullyKnown(rest)) return ap('reshape', [y], { shape: [ctx.size, -1, ...rest] });
  throw new ValueError(
    `${FN}: batching ${n.op} needs a static batch size or a per-example result of known shape; the result has shape ${formatShape(n.shape)} and the batch size is unknown`,
  );
}

/** The batch size, which a rule that cannot do without it requires. */
export function staticSize(ctx: BatchContext, what: string): number {
  if (ctx.size === null)
    throw new ValueError(
      `${FN}: batching ${what} needs a static batch size (give the batched inputs a known axis size)`,
    );
  return ctx.size;
}
