// Gradient rules of the CTC ops (src/ir/ops/ctc.ts, ctc-theano.ts). The loss's gradient is the
// alpha/beta occupancies its forward-backward recursion gives (ctc_loss_grad); Theano's helper
// ops have none.
import { apply } from '../../ir/build.js';
import { mul } from '../ops.js';
import type { GradRule, GradTableFor } from './types.js';

const FN = 'K.gradients';

/** d loss[b] / d logp = g[b] * ctc_loss_grad: the alpha/beta occupancies, zero past input_length. */
const ctcLossGrad: GradRule = (n, g) => {
  const gb = apply('expand_dims', [apply('expand_dims', [g], { axis: -1 }, FN)], { axis: -1 }, FN);
  return [mul(gb, apply('ctc_loss_grad', n.inputs, {}, FN)), null, null, null];
};

/** The CTC ops without a derivative in either mode (the tangent table, ../tangent/index.ts, takes these too). */
export const ctcNoDerivative = {
  ctc_loss_grad: { unsupported: 'second derivatives of the CTC loss are not implemented' },
  ctc_interleave_blanks: 'none',
  ctc_create_skip_idxs: 'none',
  ctc_update_log_p: {
    unsupported: 'it is a Theano CTC helper without a derivative; differentiate K.ctc_batch_cost instead',
  },
  ctc_path_probs: {
    unsupported: 'it is a Theano CTC helper without a derivative; differentiate K.ctc_batch_cost instead',
  },
  // Decoding picks labels (integers) and a score of the chosen path; TensorFlow gives neither a gradient.
  ctc_decode: 'none',
  ctc_trim: 'none',
  ctc_label_dense_to_sparse: 'none',
} as const;

export const ctcGrads: GradTableFor<'ctc_loss' | keyof typeof ctcNoDerivative> = {
  ctc_loss: ctcLossGrad,
  ...ctcNoDerivative,
};
