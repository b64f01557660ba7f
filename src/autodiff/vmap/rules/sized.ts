// Batching rules of the sized ops (sizes from int vectors, src/ir/ops/sized.ts). With the size
// vectors shared by all examples (the usual case: they come from shape_of or constants), the
// vectors get an entry for the batch axis (its size, a full slice from 0, one repetition);
// vectors that differ per example give shapes that differ per example, batched by the loop.
import type { Node } from '../../../ir/node.js';
import { NDArray } from '../../../ir/ndarray.js';
import type { OpNode } from '../../../ir/registry.js';
import { ap, batched, firstExample, unbatched } from '../helpers.js';
import { loopBatch } from '../loop.js';
import type { BatchContext, BatchEntry, BatchRule, BatchTableFor, BVal } from '../types.js';
import { batchedRef } from './elementwise.js';

/** `v` with `value` in front. */
function prepend(v: Node, value: number): Node {
  return ap('concat', [ap('constant', [], { value: new NDArray([value], [1], v.dtype) }), v], { axis: 0 });
}

/** `v` with the batch size of `x` (read at run time) in front. */
function withBatch(v: Node, x: Node): Node {
  const b = ap('slice', [ap('shape_of', [x])], { axes: [{ start: 0, stop: 1, step: 1 }] });
  return ap('concat', [b.dtype === v.dtype ? b : ap('cast', [b], { dtype: v.dtype }), v], { axis: 0 });
}

/** The rule for shared size vectors (inputs from `sizes` on); batched ones go through the loop. */
function sized<K extends 'reshape_dims' | 'tile_dims' | 'untile_dims' | 'slice_dims' | 'unslice_dims'>(
  sizes: number,
  rule: (n: OpNode<K>, args: readonly BVal[], ctx: BatchContext) => BVal,
): BatchRule<OpNode<K>> {
  return (n, args, ctx) => {
    if (args.slice(sizes).some((a) => a.batched))
      return loopBatch(n, args, ctx, 'its sizes differ per example') as BVal;
    return rule(n, args, ctx);
  };
}

const fill: BatchEntry = { loop: 'the shape it fills is a tensor value, different per example' };

export const sizedBatchRules: BatchTableFor<
  'reshape_dims' | 'tile_dims' | 'untile_dims' | 'fill_dims' | 'arange_dims' | 'slice_dims' | 'unslice_dims'
> = {
  reshape_dims: sized(1, (n, [x, d], ctx) =>
    batched(ap('reshape_dims', [x!.value, withBatch(d!.value, x!.value)], { known: [ctx.size, ...n.attrs.known] })),
  ),
  tile_dims: sized(1, (n, [x, r]) =>
    batched(ap('tile_dims', [x!.value, prepend(r!.value, 1)], { known: [1, ...n.attrs.known] })),
  ),
  // untile_dims(g, reps, x): x gives the shape only.
  untile_dims: sized(1, (n, [g, r, x], ctx) => {
    if (x === undefined || r === undefined) throw new Error('internal: untile_dims takes three inputs');
    if (!g!.batched) return unbatched(ap('untile_dims', [g!.value, r.value, firstExample(x.value)], n.attrs));
    const known = n.attrs.known.length === 0 ? [] : [1, ...n.attrs.known];
    return batched(ap('untile_dims', [g!.value, prepend(r.value, 1), batchedRef(x, ctx)], { known }));
  }),
  fill_dims: fill,
  arange_dims: { loop: 'its bounds are tensor values, different per example' },
  slice_dims: sized(1, (n, [x, st, sz]) =>
    batched(
      ap('slice_dims', [x!.value, prepend(st!.value, 0), prepend(sz!.value, -1)], {
        start: [0, ...n.attrs.start],
        size: [-1, ...n.attrs.size],
      }),
    ),
  ),
  unslice_dims: sized(2, (n, [g, x, st, sz], ctx) => {
    if (!g!.batched)
      return unbatched(ap('unslice_dims', [g!.value, firstExample(x!.value), st!.value, sz!.value], n.attrs));
    return batched(
      ap('unslice_dims', [g!.value, batchedRef(x!, ctx), prepend(st!.value, 0), prepend(sz!.value, -1)], {
        start: [0, ...n.attrs.start],
        size: [-1, ...n.attrs.size],
      }),
    );
  }),
};
