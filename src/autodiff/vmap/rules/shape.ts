// Batching rules of shape ops: the per-example op on the batched tensor with a leading axis added
// to its attrs (a full slice, no padding, one repetition, perm entry 0, ...).
import type { DType } from '../../../ir/dtype.js';
import { NDArray } from '../../../ir/ndarray.js';
import type { Node } from '../../../ir/node.js';
import type { OpNode } from '../../../ir/registry.js';
import type { SliceAxis } from '../../../ir/ops/shape.js';
import { ap, batched, firstExample, materialize, moveAxis, shift, splitBatch, unbatched } from '../helpers.js';
import type { BatchContext, BatchRule, BatchTableFor, BVal } from '../types.js';
import { axisRule } from './reduce.js';
import { batchedRef } from './elementwise.js';

const FULL: SliceAxis = { start: null, stop: null, step: 1 };

function reshapeBatched(x: Node, n: Node, ctx: BatchContext, target: readonly number[]): Node {
  // -1 resolves from the per-example size where the per-example shape is known.
  if (n.shape.every((d) => d !== null)) return ap('reshape', [x], { shape: [-1, ...(n.shape as number[])] });
  if (ctx.size !== null) return ap('reshape', [x], { shape: [ctx.size, ...target] });
  return splitBatch(x, n, ctx);
}

/** `x[i]` of each example: the index moves to axis 1. */
const indexRule: BatchRule = (n, [x]) => batched(ap('index', [moveAxis(x!.value, 1, 0)], n.attrs));

/** scatter_index writes along axis 0: the batch steps aside to axis 1 and back. */
const scatterIndexRule: BatchRule = (n, [g, x], ctx) => {
  if (!g!.batched) return unbatched(ap('scatter_index', [g!.value, firstExample(x!.value)], n.attrs));
  const ref = moveAxis(batchedRef(x!, ctx), 0, 1);
  return batched(moveAxis(ap('scatter_index', [g!.value, ref], n.attrs), 1, 0));
};

const concatRule: BatchRule<OpNode<'concat'>> = (n, args, ctx) =>
  batched(
    ap(
      'concat',
      args.map((a) => materialize(a, ctx)),
      { axis: shift(n.attrs.axis, n.ndim) },
    ),
  );

/** concat_part(g, x0, ...): the xs give shapes only. */
const concatPartRule: BatchRule<OpNode<'concat_part'>> = (n, [g, ...xs], ctx) => {
  const attrs = { axis: shift(n.attrs.axis, n.ndim), index: n.attrs.index };
  if (!g!.batched)
    return unbatched(
      ap('concat_part', [g!.value, ...xs.map((x) => (x.batched ? firstExample(x.value) : x.value))], n.attrs),
    );
  return batched(ap('concat_part', [g!.value, ...xs.map((x) => batchedRef(x, ctx))], attrs));
};

/** Unbatched indices: per-example rows are rows of the batch-second reference. */
function gatherRule(n: Node, [ref, ind]: readonly BVal[], ctx: BatchContext): BVal {
  if (!ind!.batched) {
    const out = ap('gather', [moveAxis(ref!.value, 0, 1), ind!.value]);
    return batched(moveAxis(out, ind!.value.ndim, 0));
  }
  if (!ref!.batched) return batched(ap('gather', [ref!.value, ind!.value]));
  const [flat, offs] = flatRows(ref!.value, ind!.value, n.inputs[0]!.shape[0] ?? null, ctx);
  return batched(ap('gather', [flat, offs]));
}

/**
 * Both reference and indices batched: rows of example b are rows b*N.. of the reference with the
 * batch merged into its rows, so the indices get b*N added (negative ones first made positive).
 */
function flatRows(ref: Node, ind: Node, rows: number | null, ctx: BatchContext): [Node, Node] {
  if (rows === null || ctx.size === null) {
    throw new Error(
      'autodiff.vmap: gathering with batched indices from a batched reference needs static batch and row counts',
    );
  }
  const dt = ind.dtype;
  const scalar = (v: number) => ap('constant', [], { value: ndScalar(v, dt) });
  const pos = ap('where', [ap('less', [ind, scalar(0)]), ap('add', [ind, scalar(rows)]), ind]);
  const base = ap('constant', [], { value: offsets(ctx.size, rows, ind.ndim - 1, dt) });
  return [ap('merge_axes', [ref], { start: 0, stop: 2 }), ap('add', [pos, base])];
}

const ndScalar = (v: number, dt: DType) => new NDArray([v], [], dt);
function offsets(size: number, rows: number, rank: number, dt: DType): NDArray {
  return new NDArray(
    Array.from({ length: size }, (_, b) => b * rows),
    [size, ...new Array<number>(rank).fill(1)],
    dt,
  );
}

/** scatter_add_rows(g, indices, ref), the adjoint of gather. */
const scatterAddRowsRule: BatchRule = (n, [g, ind, ref], ctx) => {
  if (!ind!.batched) {
    if (!g!.batched) return unbatched(ap('scatter_add_rows', [g!.value, ind!.value, firstExample(ref!.value)]));
    const gb = moveAxis(g!.value, 0, ind!.value.ndim);
    const out = ap('scatter_add_rows', [gb, ind!.value, moveAxis(batchedRef(ref!, ctx), 0, 1)]);
    return batched(moveAxis(out, 1, 0));
  }
  const [flat, offs] = flatRows(batchedRef(ref!, ctx), ind!.value, n.shape[0] ?? null, ctx);
  return batched(splitBatch(ap('scatter_add_rows', [materialize(g!, ctx), offs, flat]), n, ctx));
};

type Name =
  | 'reshape'
  | 'transpose'
  | 'index'
  | 'unsqueeze'
  | 'scatter_index'
  | 'expand_dims'
  | 'squeeze'
  | 'merge_axes'
  | 'specify_shape'
  | 'slice'
  | 'unslice'
  | 'pad'
  | 'concat'
  | 'concat_part'
  | 'gather'
  | 'scatter_add_rows'
  | 'tile'
  | 'repeat_elements'
  | 'shape_of';

export const shapeBatchRules: BatchTableFor<Name> = {
  reshape: (n, [x], ctx) => batched(reshapeBatched(x!.value, n, ctx, n.attrs.shape)),
  transpose: (n, [x]) => batched(ap('transpose', [x!.value], { perm: [0, ...n.attrs.perm.map((p) => p + 1)] })),
  index: indexRule,
  unsqueeze: (n, [x]) => batched(ap('unsqueeze', [x!.value], { axes: n.attrs.axes.map((a) => a + 1) })),
  scatter_index: scatterIndexRule,
  expand_dims: (n, [x]) => batched(ap('expand_dims', [x!.value], { axis: shift(n.attrs.axis, n.ndim) })),
  squeeze: axisRule,
  merge_axes: (n, [x]) => batched(ap('merge_axes', [x!.value], { start: n.attrs.start + 1, stop: n.attrs.stop + 1 })),
  specify_shape: (n, [x], ctx) => batched(ap('specify_shape', [x!.value], { shape: [ctx.size, ...n.attrs.shape] })),
  slice: (n, [x]) => batched(ap('slice', [x!.value], { axes: [FULL, ...n.attrs.axes] })),
  unslice: (n, [g, x], ctx) => {
    if (!g!.batched) return unbatched(ap('unslice', [g!.value, firstExample(x!.value)], n.attrs));
    return batched(ap('unslice', [g!.value, batchedRef(x!, ctx)], { axes: [FULL, ...n.attrs.axes] }));
  },
  pad: (n, [x]) => batched(ap('pad', [x!.value], { ...n.attrs, pads: [[0, 0], ...n.attrs.pads] })),
  concat: concatRule,
  concat_part: concatPartRule,
  gather: gatherRule,
  scatter_add_rows: scatterAddRowsRule,
  tile: (n, [x]) => batched(ap('tile', [x!.value], { reps: [1, ...n.attrs.reps] })),
  repeat_elements: axisRule,
  // Every example has the same shape: the batched tensor's shape without its first entry.
  shape_of: (_n, [x]) =>
    unbatched(ap('slice', [ap('shape_of', [x!.value])], { axes: [{ start: 1, stop: null, step: 1 }] })),
};
