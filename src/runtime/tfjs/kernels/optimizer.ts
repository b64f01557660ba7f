// The ops only the optimizer introduces (src/ir/ops/introduced.ts). The tensorflow backend runs
// the pipeline without fusion (each op stays a tfjs call), so `fused` is met only in graphs
// optimized elsewhere; its body is evaluated like any graph.
import type { SoftmaxXentAttrs } from '../../../ir/ops/introduced.js';
import type { FusedBody } from '../../../ir/fused.js';
import type { Node } from '../../../ir/node.js';
import type { Tensor, TfTableFor } from '../types.js';
import { castTo } from './util.js';

export const optimizerKernels: TfTableFor<'fused' | 'softmax_cross_entropy'> = {
  fused: (ins, a: { readonly body: FusedBody }, ctx) => {
    const feeds = new Map<Node, Tensor>();
    a.body.params.forEach((p, i) => feeds.set(p, ins[i]!));
    return ctx.evaluate([a.body.root], feeds)[0]!;
  },
  // -sum(t * ((x - m) - log sum exp(x - m)), axis), m = max(x, axis): the stable form
  softmax_cross_entropy: ([x, t], a: SoftmaxXentAttrs, { tf }) => {
    const xf = castTo(tf, x!, 'float32');
    const axis = a.axis < 0 ? a.axis + xf.shape.length : a.axis;
    const shifted = tf.sub(xf, tf.max(xf, axis, true));
    const logp = tf.sub(shifted, tf.log(tf.sum(tf.exp(shifted), axis, true)));
    return tf.neg(tf.sum(tf.mul(castTo(tf, t!, 'float32'), logp), axis));
  },
};
