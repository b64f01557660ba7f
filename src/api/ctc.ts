// The CTC family. ctc_batch_cost is TensorFlow's loss: the negative log-likelihood of
// each label given log(y_pred + epsilon), renormalised over the classes as TensorFlow's softmax
// of its logits does. The other five are Keras 1's Theano helpers, with their Theano meaning.
import { apply } from '../ir/build.js';
import { ShapeError } from '../ir/errors.js';
import { NDArray, formatShape } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import { isInt } from '../ir/dtype.js';
import { constantNode, options, toTensor, type TensorLike } from './args.js';
import { epsilon } from './config.js';

const FN = 'K.ctc_batch_cost';

/** (samples, 1) or (samples,) lengths as an int32 vector. */
function lengths(x: TensorLike, what: string): Node {
  let t = toTensor('ctc_batch_cost', x, what);
  if (t.ndim === 2 && (t.shape[1] === 1 || t.shape[1] === null)) t = apply('reshape', [t], { shape: [-1] }, FN);
  if (t.ndim !== 1) throw new ShapeError(`${FN}: ${what} must be (samples, 1), got shape ${formatShape(t.shape)}`);
  return t.dtype === 'int32' ? t : apply('cast', [t], { dtype: 'int32' }, FN);
}

/**
 * `ctc_batch_cost(y_true, y_pred, input_length, label_length)` -> (samples, 1): per sample,
 * -log P(y_true[:label_length] | y_pred[:input_length]). y_pred is (samples, time, classes)
 * of probabilities with the blank last; labels past label_length are padding (-1).
 */
export function ctc_batch_cost(
  y_true: TensorLike,
  y_pred: TensorLike,
  input_length: TensorLike,
  label_length: TensorLike,
): Node {
  const yp = toTensor('ctc_batch_cost', y_pred, 'y_pred');
  if (yp.ndim !== 3)
    throw new ShapeError(`${FN}: y_pred must be (samples, time, classes), got shape ${formatShape(yp.shape)}`);
  let yt = toTensor('ctc_batch_cost', y_true, 'y_true');
  if (yt.ndim !== 2)
    throw new ShapeError(`${FN}: y_true must be (samples, max_string_length), got shape ${formatShape(yt.shape)}`);
  if (yt.dtype !== 'int32') yt = apply('cast', [yt], { dtype: 'int32' }, FN);
  const il = lengths(input_length, 'input_length');
  const ll = lengths(label_length, 'label_length');
  // log softmax(log(y + eps)) = log(y + eps) - log(sum(y + eps)): the log-probabilities TensorFlow's loss sees
  const z = apply('add', [yp, constantNode(new NDArray([epsilon()], [], yp.dtype))], {}, FN);
  const logp = apply(
    'sub',
    [apply('log', [z], {}, FN), apply('log', [apply('sum', [z], { axes: [2], keepdims: true }, FN)], {}, FN)],
    {},
    FN,
  );
  const loss = apply('ctc_loss', [logp, yt, il, ll], {}, FN);
  return apply('reshape', [loss], { shape: [-1, 1] }, FN);
}

function labelsArg(fn: string, y: TensorLike): Node {
  const t = toTensor(fn, y, 'Y');
  // float labels (Keras passes y_true as floatx) become int32, as Theano's indexing requires
  return isInt(t.dtype) && t.dtype !== 'uint8' ? t : apply('cast', [t], { dtype: 'int32' }, `K.${fn}`);
}

/** `ctc_interleave_blanks(Y)`: [-1, y1, -1, y2, ..., -1]. */
export function ctc_interleave_blanks(Y: TensorLike): Node {
  return apply('ctc_interleave_blanks', [labelsArg('ctc_interleave_blanks', Y)], {}, 'K.ctc_interleave_blanks');
}

/** `ctc_create_skip_idxs(Y)`: positions i of an interleaved label where a path may jump to i + 2. */
export function ctc_create_skip_idxs(Y: TensorLike): Node {
  return apply('ctc_create_skip_idxs', [labelsArg('ctc_create_skip_idxs', Y)], {}, 'K.ctc_create_skip_idxs');
}

/** `ctc_update_log_p(skip_idxs, zeros, active, log_p_curr, log_p_prev)` -> [active_next, log_p_next]. */
export function ctc_update_log_p(
  skip_idxs: TensorLike,
  zeros: TensorLike,
  active: TensorLike,
  log_p_curr: TensorLike,
  log_p_prev: TensorLike,
): [Node, Node] {
  const fn = 'ctc_update_log_p';
  const ins = [
    toTensor(fn, skip_idxs, 'skip_idxs', 'int64'),
    toTensor(fn, zeros, 'zeros'),
    toTensor(fn, active, 'active', 'int32'),
    toTensor(fn, log_p_curr, 'log_p_curr'),
    toTensor(fn, log_p_prev, 'log_p_prev'),
  ];
  const t = apply('ctc_update_log_p', ins, {}, `K.${fn}`);
  return [apply('tuple_get', [t], { index: 0 }), apply('tuple_get', [t], { index: 1 })];
}

/** `ctc_path_probs(predict, Y, alpha=1e-4)` -> [log_probs (time, n), mask (time, n)] for an interleaved Y. */
export function ctc_path_probs(
  predict: TensorLike,
  Y: TensorLike,
  alpha: number | { alpha?: number } = 1e-4,
): [Node, Node] {
  const a = options<{ alpha: number }>('ctc_path_probs', [alpha], ['alpha']).alpha ?? 1e-4;
  const t = apply(
    'ctc_path_probs',
    [toTensor('ctc_path_probs', predict, 'predict'), labelsArg('ctc_path_probs', Y)],
    { alpha: a },
    'K.ctc_path_probs',
  );
  return [apply('tuple_get', [t], { index: 0 }), apply('tuple_get', [t], { index: 1 })];
}

/**
 * `ctc_cost(predict, Y)`: Theano's cost of one sample, -log of the sum of exp(log_probs) over
 * every reachable (t, s) cell; each step's cells sum to P(Y), so this is -log P(Y) - log(time)
 * (Theano's numbers: 1.73308 where TensorFlow's loss is 3.34211 over 5 steps). The sum is
 * shifted by the largest reachable cell, so long inputs do not underflow.
 */
export function ctc_cost(predict: TensorLike, Y: TensorLike): Node {
  const fn = 'K.ctc_cost';
  const [lp, mask] = ctc_path_probs(predict, ctc_interleave_blanks(Y));
  const minusInf = constantNode(new NDArray([-Infinity], [], lp.dtype));
  const reachable = apply('where', [mask, lp, minusInf], {}, fn);
  const m = apply('max', [reachable], { axes: [0, 1], keepdims: false }, fn);
  const shifted = apply('exp', [apply('sub', [reachable, m], {}, fn)], {}, fn);
  const total = apply(
    'add',
    [apply('log', [apply('sum', [shifted], { axes: [0, 1], keepdims: false }, fn)], {}, fn), m],
    {},
    fn,
  );
  return apply('neg', [total], {}, fn);
}
