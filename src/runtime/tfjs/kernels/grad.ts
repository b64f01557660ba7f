// The gradient helper ops on tfjs: each matches a reference tensor's runtime shape.
import { InferError } from '../../../ir/errors.js';
import { formatShape } from '../../../ir/ndarray.js';
import { unsqueezeShape, type gradOps } from '../../../ir/ops/adjoint.js';
import type { TfTableFor } from '../types.js';
import { arithDType, castTo, expandTo } from './util.js';

export const gradKernels: TfTableFor<keyof typeof gradOps> = {
  // g summed over the leading axes x lacks and the axes where x has 1 and g does not
  sum_to_like: ([g, x], _, { tf, node }) => {
    const gs = g!.shape;
    const xs = x!.shape;
    const off = gs.length - xs.length;
    const axes = gs.map((_, i) => i).filter((i) => i < off || (xs[i - off] === 1 && gs[i] !== 1));
    const gc = castTo(tf, g!, arithDType(node.dtype));
    return tf.reshape(axes.length === 0 ? gc : tf.sum(gc, axes), xs);
  },
  broadcast_like: ([g, x], _, { tf, node }) => expandTo(tf, castTo(tf, g!, arithDType(node.dtype)), x!.shape),
  reshape_like: ([g, x], _, { tf }) => {
    if (g!.size !== x!.size)
      throw new InferError(`cannot reshape ${formatShape(g!.shape)} to ${formatShape(x!.shape)}`);
    return tf.reshape(g!, x!.shape);
  },
  unsqueeze: ([x], a, { tf }) => tf.reshape(x!, unsqueezeShape(x!.shape, a.axes)),
  // zeros of x's shape with g at x[index]: g padded along a new first axis
  scatter_index: ([g, x], a, { tf, node }) => {
    const d = x!.shape[0]!;
    const i = a.index < 0 ? a.index + d : a.index;
    const g1 = tf.reshape(castTo(tf, g!, arithDType(node.dtype)), [1, ...g!.shape]);
    return tf.pad(g1, [[i, d - i - 1], ...g!.shape.map((): [number, number] => [0, 0])]);
  },
  stop_gradient: ([x]) => x!,
  grad_clip: ([x]) => x!,
  grad_scale: ([x]) => x!,
};
