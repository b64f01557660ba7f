// The batching rule of every built-in op, keyed by op name. Typed BatchTable (one entry per OpName),
// so an op added to the registry without a batching rule is a type error, as for gradients
// (JAX's `batching.primitive_batchers`).
import { elementwiseOps } from '../../../ir/ops/elementwise.js';
import { adjointLikeBatchRules, broadcastRule, elementwiseBatchRules } from './elementwise.js';
import { reduceBatchRules } from './reduce.js';
import { shapeBatchRules } from './shape.js';
import { linalgBatchRules, mergedRule } from './linalg.js';
import { scanBatchRule } from './control.js';
import { sizedBatchRules } from './sized.js';
import { ap, batched, materialize, shift } from '../helpers.js';
import type { BatchTable, LoopRule, UnsupportedBatch } from '../types.js';

const ctc: LoopRule = { loop: 'CTC ops have no vectorised batching rule yet' };
const random: UnsupportedBatch = {
  unsupported: 'a random draw whose arguments differ per example; draw the whole batch outside the vmapped function',
};

export const batchRules: BatchTable = {
  placeholder: 'leaf',
  variable: 'leaf',
  constant: 'leaf',
  learning_phase: 'leaf',
  scan_arg: 'leaf',
  cast: broadcastRule,
  identity: broadcastRule,
  stop_gradient: broadcastRule,
  grad_clip: broadcastRule,
  grad_scale: broadcastRule,
  fill_like: broadcastRule,
  print: broadcastRule,
  where: broadcastRule,
  ...elementwiseBatchRules(Object.keys(elementwiseOps) as (keyof typeof elementwiseOps)[]),
  ...adjointLikeBatchRules,
  ...reduceBatchRules,
  ...shapeBatchRules,
  ...linalgBatchRules,
  scan: scanBatchRule,
  tuple_get: { unsupported: 'internal: the walker batches tuple items itself' },
  ...sizedBatchRules,
  random_uniform: random,
  random_normal: random,
  truncated_normal: random,
  random_binomial: random,
  // Every input has a samples axis: the batch folds into it.
  ctc_loss: mergedRule(),
  ctc_loss_grad: mergedRule(),
  ctc_interleave_blanks: ctc,
  ctc_create_skip_idxs: ctc,
  ctc_update_log_p: ctc,
  ctc_path_probs: ctc,
  ctc_decode: ctc,
  ctc_label_dense_to_sparse: ctc,
  ctc_trim: ctc,
  fused: { unsupported: 'only the fusion pass builds this op, after vmap has run' },
  // Logits and targets share one shape: both get the batch, and the axis moves by one.
  softmax_cross_entropy: (n, args, ctx) =>
    batched(
      ap(
        'softmax_cross_entropy',
        args.map((a) => materialize(a, ctx)),
        { axis: shift(n.attrs.axis, n.ndim + 1) },
      ),
    ),
};
