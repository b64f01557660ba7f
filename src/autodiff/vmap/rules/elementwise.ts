// Batching rules of elementwise ops and of the adjoint ops that match a reference's shape.
// Broadcasting is NumPy's (right-aligned), so an unbatched operand broadcasts over the batch as it
// is, and a batched one gets unit axes after the batch to reach the result's rank (JAX's
// `broadcast_batcher`).
import type { Node } from '../../../ir/node.js';
import type { elementwiseOps } from '../../../ir/ops/elementwise.js';
import type { OpName } from '../../../ir/registry.js';
import { ap, batched, batchedShapeOf, firstExample, unbatched, unitAxes } from '../helpers.js';
import type { BatchContext, BatchRule, BatchTableFor, BVal } from '../types.js';

/** Batched operands lifted to the result's rank plus the batch axis; the op applied as it is. */
export const broadcastRule: BatchRule = (n, args) => {
  const ins = args.map((a) => (a.batched ? unitAxes(a.value, n.ndim - (a.value.ndim - 1)) : a.value));
  return batched(ap(n.op, ins, n.attrs));
};

type Name = keyof typeof elementwiseOps;

/** Every elementwise row batches the same way. */
export function elementwiseBatchRules(names: readonly Name[]): BatchTableFor<Name> {
  return Object.fromEntries(names.map((k) => [k, broadcastRule])) as unknown as BatchTableFor<Name>;
}

/**
 * The shape reference of a `like` op (an input read only for its shape) under a batched operand:
 * batched as it is, or given the batch axis.
 */
export function batchedRef(x: BVal, ctx: BatchContext): Node {
  return x.batched ? x.value : batchedShapeOf(x.value, ctx);
}

/**
 * `op(g, ref)` where ref is read for its shape: with g unbatched every example gives the same
 * result (the first example's shape stands in for all); else the reference gets the batch axis,
 * after `align` lifts g to the reference's rank.
 */
function likeRule(op: OpName, align: boolean): BatchRule {
  return (_n, [g, x], ctx) => {
    if (!g!.batched) return unbatched(ap(op, [g!.value, firstExample(x!.value)]));
    const ref = batchedRef(x!, ctx);
    return batched(ap(op, [align ? unitAxes(g!.value, ref.ndim - g!.value.ndim) : g!.value, ref]));
  };
}

/** sum_to_like sums a batched g over its leading axes: the reference gets unit axes there, then loses them. */
const sumToLikeRule: BatchRule = (_n, [g, x], ctx) => {
  if (!g!.batched) return unbatched(ap('sum_to_like', [g!.value, firstExample(x!.value)]));
  const ref = batchedRef(x!, ctx);
  const lead = g!.value.ndim - ref.ndim;
  if (lead === 0) return batched(ap('sum_to_like', [g!.value, ref]));
  const summed = ap('sum_to_like', [g!.value, unitAxes(ref, lead)]);
  return batched(ap('reshape_like', [summed, ref]));
};

export const adjointLikeBatchRules: BatchTableFor<'sum_to_like' | 'broadcast_like' | 'reshape_like'> = {
  sum_to_like: sumToLikeRule,
  broadcast_like: likeRule('broadcast_like', true),
  reshape_like: likeRule('reshape_like', false),
};
