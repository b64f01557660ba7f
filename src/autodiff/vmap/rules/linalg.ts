// Batching rules of products, convolutions and pooling, all without a loop over examples:
// - dot: a batched operand's batch rides along as a free axis, or both batched is batch_dot;
// - batch_dot, pooling, in_top_k: the batch merged into the op's own batch axis;
// - convolutions with a batched kernel: the batch merged into the channels and the groups
//   (JAX's `_conv_general_dilated_batch_rule` does the same with feature_group_count).
import type { Node } from '../../../ir/node.js';
import type { OpNode } from '../../../ir/registry.js';
import { ValueError } from '../../../ir/errors.js';
import { formatShape } from '../../../ir/ndarray.js';
import { FN, ap, batched, firstExample, materialize, mergeBatch, moveAxis, splitBatch, unbatched } from '../helpers.js';
import type { BatchContext, BatchRule, BatchTableFor } from '../types.js';

const dotRule: BatchRule = (_n, [x, y]) => {
  const xv = x!.value;
  const yv = y!.value;
  if (x!.batched && y!.batched) {
    const ay = yv.ndim >= 3 ? yv.ndim - 2 : 1;
    if (xv.ndim >= 2 && xv.shape[xv.ndim - 1] === 1) return batched(outerProduct(xv, yv, ay));
    return batched(ap('batch_dot', [xv, yv], { axes: [xv.ndim - 1, ay] }));
  }
  if (x!.batched) return batched(ap('dot', [xv, yv]));
  if (yv.ndim === 2) {
    // y per example is a vector: each example's result is y_b . x, contracting x's last axis.
    const xt = xv.ndim === 1 ? xv : moveAxis(xv, xv.ndim - 1, xv.ndim - 2);
    return batched(ap('dot', [yv, xt]));
  }
  // The batch is one of y's free axes: it lands right after x's free axes.
  return batched(moveAxis(ap('dot', [xv, yv]), xv.ndim - 1, 0));
};

/**
 * A contraction over one element (per-example gradients of products: x (m, 1) . g (1, n)) is a
 * broadcast multiply, which fusion folds into what reads it, so a reduction of the per-example
 * gradients never stores them; their squared norms the specialize pass takes from the factors
 * (sum_square_outer, src/passes/specialize.ts). Stored, it costs what batch_dot does (bench/README.md).
 */
function outerProduct(xv: Node, yv: Node, ay: number): Node {
  const xq = ap('squeeze', [xv], { axis: xv.ndim - 1 });
  const yq = ap('squeeze', [yv], { axis: ay });
  const [xFree, yFree] = [xq.ndim - 1, yq.ndim - 1];
  const xe = ap('unsqueeze', [xq], { axes: Array.from({ length: yFree }, (_, i) => xq.ndim + i) });
  const ye = ap('unsqueeze', [yq], { axes: Array.from({ length: xFree }, (_, i) => i + 1) });
  return ap('mul', [xe, ye]);
}

/** Ops over a leading batch axis of their own: the vmap batch merged into it and split out after. */
export function mergedRule(shapeOnly: readonly number[] = []): BatchRule {
  return (n, args, ctx) => {
    const ins = args.map((a, i) =>
      shapeOnly.includes(i) ? (a.batched ? firstExample(a.value) : a.value) : mergeBatch(materialize(a, ctx)),
    );
    return batched(splitBatch(ap(n.op, ins, n.attrs), n, ctx));
  };
}

/** [.., B, C] from [B, .., C]: the batch moved before the last axis and merged into it. */
function intoChannels(x: Node): Node {
  const r = x.ndim;
  return ap('merge_axes', [moveAxis(x, 0, r - 2)], { start: r - 2, stop: r });
}

/** [.., B*F] -> [B, .., F]: the last axis split into (B, F) and the batch moved to the front. */
function outOfChannels(y: Node, n: Node, ctx: BatchContext): Node {
  const f = n.shape[n.ndim - 1] ?? null;
  const lead = n.shape.slice(0, -1);
  const known = [...lead, f].filter((d) => d === null).length;
  let split: Node;
  if (ctx.size !== null && f !== null && lead.every((d) => d !== null))
    split = ap('reshape', [y], { shape: [...(lead as number[]), ctx.size, f] });
  else if (known === 0) split = ap('reshape', [y], { shape: [...(lead as number[]), -1, f!] });
  else
    throw new ValueError(
      `${FN}: batching ${n.op} with a batched kernel needs the per-example result's shape; it is ${formatShape(n.shape)}`,
    );
  return moveAxis(split, n.ndim - 1, 0);
}

/**
 * conv(x, w): a batched input alone is merged into the conv's batch; a batched kernel puts each
 * example's kernel in a group of its own (B * groups groups over B * C channels).
 */
const convRule: BatchRule<OpNode<'conv'>> = (n, [x, w], ctx) => {
  if (!w!.batched) return batched(splitBatch(ap('conv', [mergeBatch(x!.value), w!.value], n.attrs), n, ctx));
  const xs = intoChannels(materialize(x!, ctx));
  const ws = intoChannels(w!.value);
  return batched(
    outOfChannels(ap('conv', [xs, ws], { ...n.attrs, groups: n.attrs.groups * batchCount(w!.value, ctx) }), n, ctx),
  );
};

/** dy (N, O.., F), w (K.., Cg, F) [, like]: the adjoint of conv in its input. */
const convTransposeRule: BatchRule<OpNode<'conv_transpose'>> = (n, [dy, w, like], ctx) => {
  const extra = like === undefined ? [] : [like.batched ? firstExample(like.value) : like.value];
  // only the size input batched: it is read for its shape, which every example shares, so the result is one
  if (!dy!.batched && !w!.batched) return unbatched(ap('conv_transpose', [dy!.value, w!.value, ...extra], n.attrs));
  if (!w!.batched)
    return batched(splitBatch(ap('conv_transpose', [mergeBatch(dy!.value), w!.value, ...extra], n.attrs), n, ctx));
  const dys = intoChannels(materialize(dy!, ctx));
  const ws = intoChannels(w!.value);
  const y = ap('conv_transpose', [dys, ws, ...extra], {
    ...n.attrs,
    groups: n.attrs.groups * batchCount(w!.value, ctx),
  });
  return batched(outOfChannels(y, n, ctx));
};

/** x (N, S.., C), dy (N, O.., F) [, like] -> (K.., C/G, F): one kernel gradient per example, as groups. */
const convKernelGradRule: BatchRule<OpNode<'conv_kernel_grad'>> = (n, [x, dy, like], ctx) => {
  const extra = like === undefined ? [] : [like.batched ? firstExample(like.value) : like.value];
  const xs = intoChannels(materialize(x!, ctx));
  const dys = intoChannels(materialize(dy!, ctx));
  const y = ap('conv_kernel_grad', [xs, dys, ...extra], {
    ...n.attrs,
    groups: n.attrs.groups * batchCount(x!.value, ctx),
  });
  return batched(outOfChannels(y, n, ctx));
};

/** The batch size, which the groups count needs statically. */
function batchCount(x: Node, ctx: BatchContext): number {
  const b = ctx.size ?? x.shape[0] ?? null;
  if (b === null)
    throw new ValueError(
      `${FN}: batching a convolution with batched kernels (or per-example kernel gradients) needs a static batch size: each example is a group of the convolution; give the batched arguments a known size on their batch axis`,
    );
  return b;
}

/** batch_dot of per-example tensors: the vmap batch merged into the op's batch. */
const batchDotRule: BatchRule = mergedRule();

export const linalgBatchRules: BatchTableFor<
  | 'dot'
  | 'batch_dot'
  | 'conv'
  | 'conv_transpose'
  | 'conv_kernel_grad'
  | 'pool'
  | 'pool_grad'
  | 'pool_select'
  | 'in_top_k'
> = {
  dot: dotRule,
  batch_dot: batchDotRule,
  conv: convRule,
  conv_transpose: convTransposeRule,
  conv_kernel_grad: convKernelGradRule,
  pool: mergedRule(),
  pool_grad: mergedRule(),
  pool_select: mergedRule(),
  in_top_k: mergedRule(),
};
