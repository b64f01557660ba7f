// Leaves and structural ops on tfjs. Placeholders and variables are 'executor' entries: the executor
// supplies their values (fed inputs, and the tf.Variable cache).
import { isFloat, isInt } from '../../../ir/dtype.js';
import { InferError } from '../../../ir/errors.js';
import { formatShape, sizeOf } from '../../../ir/ndarray.js';
import { dotAxisOfY, resolveReshape, type coreOps } from '../../../ir/ops/core.js';
import type { Node } from '../../../ir/node.js';
import type { Tensor, TfTableFor } from '../types.js';
import { tfDType } from '../types.js';
import { arithDType, castTo, floatToInt, toBool } from './util.js';
import { upload } from '../convert.js';

/**
 * A constant is uploaded once and kept (tf.keep: outside every tidy) for as long as its node
 * lives; results that are kept tensors are cloned by the executor before it frees its results.
 */
const constants = new WeakMap<Node, Tensor>();
const dropConstant = new FinalizationRegistry<Tensor>((t) => {
  if (!t.isDisposed) t.dispose();
});

export const coreKernels: TfTableFor<keyof typeof coreOps> = {
  placeholder: 'executor',
  variable: 'executor',
  constant: (_, a, { tf, node }) => {
    let t = constants.get(node);
    if (t === undefined || t.isDisposed) {
      t = tf.keep(upload(tf, a.value));
      constants.set(node, t);
      dropConstant.register(node, t);
    }
    return t;
  },
  learning_phase: (_, __, { tf, learningPhase }) => tf.scalar(learningPhase, 'int32'),
  // NumPy's cast: float to int truncates (NaN and infinities give 0); to bool is "nonzero and not NaN";
  // the executor then wraps narrow integer types.
  cast: ([x], a, { tf, node }) => {
    const from = node.inputs[0]!.dtype;
    if (a.dtype === 'bool') return toBool(tf, x!);
    if (isInt(a.dtype) && isFloat(from)) return floatToInt(tf, x!);
    return castTo(tf, x!, tfDType(a.dtype));
  },
  identity: ([x]) => x!,
  reshape: ([x], a, { tf }) => tf.reshape(x!, resolveReshape(x!.shape, a.shape) as number[]),
  transpose: ([x], a, { tf }) => tf.transpose(x!, [...a.perm]),
  // x's last axis against y's axis dotAxisOfY: y is moved to (k, rest...) and both become matrices.
  // Integer dots run in float32 (exact while sums stay below 2^24) because tfjs' matMul is float-only.
  dot: ([x, y], _, { tf, node }) => {
    const xs = x!.shape;
    const ys = y!.shape;
    const ya = dotAxisOfY(ys.length);
    const k = xs[xs.length - 1]!;
    if (ys[ya] !== k) throw new InferError(`shapes ${formatShape(xs)} and ${formatShape(ys)} are not aligned`);
    const perm = [ya, ...ys.map((_, i) => i).filter((i) => i !== ya)];
    const rest = ys.filter((_, i) => i !== ya);
    const m = sizeOf(xs.slice(0, -1));
    const n = sizeOf(rest);
    // an empty contraction sums nothing: zeros (tfjs' wasm matMul would read uninitialised memory)
    if (k === 0) return tf.zeros([...xs.slice(0, -1), ...rest], 'float32');
    const x2 = tf.reshape(castTo(tf, x!, 'float32'), [m, k]);
    const y2 = tf.reshape(tf.transpose(castTo(tf, y!, 'float32'), perm), [k, n]);
    const out = tf.reshape(tf.matMul(x2, y2), [...xs.slice(0, -1), ...rest]);
    return arithDType(node.dtype) === 'float32' ? out : tf.cast(tf.round(out), arithDType(node.dtype));
  },
  shape_of: ([x], _, { tf }) => tf.tensor1d(x!.shape, 'int32'),
  fill_like: ([x], a, { tf, node }) =>
    castTo(tf, tf.fill(x!.shape, a.value, arithDType(node.dtype)), tfDType(node.dtype)),
  index: ([x], a, { tf }) => {
    const d = x!.shape[0]!;
    const i = a.index < 0 ? a.index + d : a.index;
    if (i < 0 || i >= d) throw new InferError(`index ${a.index} is out of range for axis 0 of size ${d}`, 'value');
    const begin = x!.shape.map((_, j) => (j === 0 ? i : 0));
    const size = x!.shape.map((s, j) => (j === 0 ? 1 : s));
    return tf.reshape(tf.slice(x!, begin, size), x!.shape.slice(1));
  },
};
