// The crossentropies. Arguments are (output, target, from_logits) in the order the
// seed pages (Keras 2.0's backend docs) give them; Keras 2.0.7 and later write (target, output).
// theanine keeps the seed's order and warns when the arguments look swapped (argorder.ts).
import { apply } from '../ir/build.js';
import { isFloat, isInt } from '../ir/dtype.js';
import { ShapeError, ValueError } from '../ir/errors.js';
import { NDArray, describe, formatShape } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import { compatibleShapes, staticSize } from '../ir/types.js';
import { checkAxes, constantNode, options, toTensor, type TensorLike } from './args.js';
import { epsilon } from './config.js';
import { clip, logsumexp } from './numeric.js';
import { checkArgumentOrder } from './argorder.js';
import { isTensor } from './args.js';

type CEOpts = { from_logits?: boolean; axis?: number };
/** Keras' categorical crossentropies: (output, target, from_logits, axis), or the options as an object. */
type CrossEntropy = (output: TensorLike, target: TensorLike, from_logits?: boolean | CEOpts, axis?: number) => Node;

function ceOptions(fn: string, from_logits: boolean | CEOpts | undefined, axis: number | undefined, ndim: number) {
  const o = options<{ from_logits: boolean; axis: number }>(fn, [from_logits, axis], ['from_logits', 'axis']);
  if (o.from_logits !== undefined && typeof o.from_logits !== 'boolean')
    throw new ValueError(`${fn}: from_logits must be a boolean, got ${describe(o.from_logits)}`);
  if (ndim === 0) throw new ShapeError(`${fn}: output must have rank >= 1 (a class axis), got a scalar`);
  if (Array.isArray(o.axis)) throw new ValueError(`${fn}: axis must be one integer, got ${describe(o.axis)}`);
  return { logits: o.from_logits === true, axis: checkAxes(fn, o.axis ?? -1, ndim)[0]! };
}

/** Static shapes must agree wherever both dims are known (TensorFlow requires equal shapes). */
function checkSameShape(fn: string, target: Node, output: Node, drop: number | null = null): void {
  const want = drop === null ? output.shape : output.shape.filter((_, i) => i !== drop);
  const bad =
    target.ndim !== want.length || target.shape.some((d, i) => d !== null && want[i] !== null && d !== want[i]);
  if (bad) {
    const how = drop === null ? '' : ` without the class axis ${drop}, ${formatShape(want)}`;
    throw new ShapeError(
      `${fn}: target shape ${formatShape(target.shape)} does not match output shape ${formatShape(output.shape)}${how}`,
    );
  }
}

/**
 * Log-probabilities along `axis`: log_softmax(x) = x - logsumexp(x) for logits; otherwise Keras'
 * recipe: scale each row to sum 1, clip to [epsilon, 1 - epsilon], take the log.
 */
function logProbs(fn: string, out: Node, axis: number, logits: boolean): Node {
  const F = `K.${fn}`;
  if (logits) return apply('sub', [out, logsumexp(out, [axis], true)], {}, F);
  const scaled = apply('div', [out, apply('sum', [out], { axes: [axis], keepdims: true }, F)], {}, F);
  const eps = epsilon();
  return apply('log', [clip(scaled, eps, 1 - eps)], {}, F);
}

/** The output as a float tensor, once the arguments are checked to be in Keras' (output, target) order. */
function lossOutput(fn: string, output: TensorLike, target: TensorLike): Node {
  checkArgumentOrder(fn, output, target, isTensor);
  const o = toTensor(fn, output, 'output');
  return isFloat(o.dtype) ? o : apply('cast', [o], { dtype: 'float32' }, `K.${fn}`);
}

/** -sum(target * log p, axis), p the output's probabilities (see logProbs). Shape: output's without axis. */
export const categorical_crossentropy: CrossEntropy = (output, target, from_logits, axis) => {
  const fn = 'categorical_crossentropy';
  const out = lossOutput(fn, output, target);
  const F = `K.${fn}`;
  const tgt = toTensor(fn, target, 'target', out.dtype);
  const { logits, axis: a } = ceOptions(fn, from_logits, axis, out.ndim);
  checkSameShape(fn, tgt, out);
  const lp = logProbs(fn, out, a, logits);
  return apply('neg', [apply('sum', [apply('mul', [tgt, lp], {}, F)], { axes: [a], keepdims: false }, F)], {}, F);
};

/**
 * A target whose shape does not match the output's without the class axis but could (unknown
 * dims: Keras' engine makes targets with K.placeholder(ndim=...), every dim None) is flattened
 * and laid out as that shape, as the TensorFlow and Theano backends flatten it; the element counts
 * must agree at run time. Static shapes that cannot agree are left for checkSameShape's error.
 */
function flattenTarget(fn: string, tgt: Node, out: Node, axis: number): Node {
  const want = out.shape.filter((_, i) => i !== axis);
  const same = tgt.ndim === want.length && tgt.shape.every((d, i) => d !== null && d === want[i]);
  if (same) return tgt;
  const [nt, nw] = [staticSize(tgt.shape), staticSize(want)];
  if (nt !== null && nw !== null) {
    if (nt !== nw || tgt.ndim === want.length) return tgt; // the shape error names both
    return apply('reshape', [tgt], { shape: want as number[] }, `K.${fn}`);
  }
  if (compatibleShapes(tgt.shape, want)) return tgt;
  // The output's shape without the class axis, at run time: argmax drops exactly that axis.
  const like = apply('argmax', [out], { axis }, `K.${fn}`);
  return apply('reshape_like', [tgt, like], {}, `K.${fn}`);
}

/**
 * As categorical_crossentropy with integer class ids for targets: target has output's shape
 * without the class axis (or with a trailing 1, as Keras' flattening allows); float targets are
 * truncated to ints. A class id outside [0, classes) picks nothing and gives 0.
 */
export const sparse_categorical_crossentropy: CrossEntropy = (output, target, from_logits, axis) => {
  const fn = 'sparse_categorical_crossentropy';
  const out = lossOutput(fn, output, target);
  const F = `K.${fn}`;
  let tgt = Array.isArray(target)
    ? constantNode(NDArray.from(target, 'int32', `${fn}: target`))
    : toTensor(fn, target, 'target', 'int32');
  const { logits, axis: a } = ceOptions(fn, from_logits, axis, out.ndim);
  const r = out.ndim;
  const classes = out.shape[a]!;
  if (classes === null)
    throw new ShapeError(`${fn}: the class axis ${a} of output ${formatShape(out.shape)} must have a known size`);
  if (!isInt(tgt.dtype)) tgt = apply('cast', [tgt], { dtype: 'int32' }, F);
  if (tgt.ndim === r && r >= 1 && tgt.shape[r - 1] === 1)
    tgt = apply('max', [tgt], { axes: [r - 1], keepdims: false }, F);
  tgt = flattenTarget(fn, tgt, out, a);
  checkSameShape(fn, tgt, out, a);
  // Class axis first: log-probs (C, rest...) against ids [0..C) shaped (C, 1, ..., 1) broadcast over the targets.
  const perm = [a, ...Array.from({ length: r }, (_, i) => i).filter((i) => i !== a)];
  const lp = apply('transpose', [logProbs(fn, out, a, logits)], { perm }, F);
  const ids = new NDArray(
    Array.from({ length: classes }, (_, i) => i),
    [classes, ...new Array<number>(r - 1).fill(1)],
    'int32',
  );
  const hit = apply('equal', [constantNode(ids), tgt], {}, F);
  const picked = apply('where', [hit, lp, toTensor(fn, 0, 'zero', lp.dtype)], {}, F);
  return apply('neg', [apply('sum', [picked], { axes: [0], keepdims: false }, F)], {}, F);
};

/**
 * Elementwise -(z log p + (1 - z) log(1 - p)), p clipped to [epsilon, 1 - epsilon]; from logits x,
 * the stable form max(x, 0) - x z + log(1 + e^-|x|) (TensorFlow's sigmoid crossentropy).
 */
export function binary_crossentropy(
  output: TensorLike,
  target: TensorLike,
  from_logits?: boolean | { from_logits?: boolean },
): Node {
  const fn = 'binary_crossentropy';
  const out = lossOutput(fn, output, target);
  const F = `K.${fn}`;
  const z = toTensor(fn, target, 'target', out.dtype);
  const o = options<{ from_logits: boolean }>(fn, [from_logits], ['from_logits']);
  if (o.from_logits !== undefined && typeof o.from_logits !== 'boolean')
    throw new ValueError(`${fn}: from_logits must be a boolean, got ${describe(o.from_logits)}`);
  checkSameShape(fn, z, out);
  const one = toTensor(fn, 1, 'one', out.dtype);
  if (o.from_logits === true) {
    // max(x, 0) and -|x| both split on the one condition x >= 0, so their kinks at 0 cancel and the
    // gradient is sigmoid(x) - z there too (maximum's and abs' separate tie rules would give 1 - z,
    // at the exact zeros a zero-initialised last layer produces).
    const zero = toTensor(fn, 0, 'zero', out.dtype);
    const nonneg = apply('greater_equal', [out, zero], {}, F);
    const pos = apply('where', [nonneg, out, zero], {}, F);
    const negAbs = apply('where', [nonneg, apply('neg', [out], {}, F), out], {}, F);
    const tail = apply('softplus', [negAbs], {}, F);
    return apply('add', [apply('sub', [pos, apply('mul', [out, z], {}, F)], {}, F), tail], {}, F);
  }
  const eps = epsilon();
  const p = clip(out, eps, 1 - eps);
  const a = apply('mul', [z, apply('log', [p], {}, F)], {}, F);
  const b = apply('mul', [apply('sub', [one, z], {}, F), apply('log', [apply('sub', [one, p], {}, F)], {}, F)], {}, F);
  return apply('neg', [apply('add', [a, b], {}, F)], {}, F);
}
