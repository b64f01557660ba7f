// Keras 2.3's ctc_decode and ctc_label_dense_to_sparse (src/ir/ops/ctc-decode.ts has the searches).
import { apply } from '../ir/build.js';
import { ShapeError, ValueError } from '../ir/errors.js';
import { NDArray, describe, formatShape } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import { isInt } from '../ir/dtype.js';
import { constantNode, options, toTensor, type TensorLike } from './args.js';
import { epsilon } from './config.js';

function lengthVector(fn: string, x: TensorLike, what: string): Node {
  let t = toTensor(fn, x, what, 'int32');
  if (t.ndim === 2 && (t.shape[1] === 1 || t.shape[1] === null)) t = apply('reshape', [t], { shape: [-1] }, `K.${fn}`);
  if (t.ndim !== 1)
    throw new ShapeError(`${fn}: ${what} must be a vector (samples,), got shape ${formatShape(t.shape)}`);
  return t.dtype === 'int32' ? t : apply('cast', [t], { dtype: 'int32' }, `K.${fn}`);
}

type DecodeOptions = { greedy?: boolean; beam_width?: number; top_paths?: number; merge_repeated?: boolean };

/**
 * ctc_decode(y_pred (samples, time, classes) of probabilities with the blank last, input_length
 * (samples,), greedy=true, beam_width=100, top_paths=1, merge_repeated=false) -> [decoded,
 * log_prob]: as Keras 2.3 on TensorFlow, the decoders see log(y_pred + epsilon); `decoded` is a
 * list of top_paths int32 (samples, width) tensors, each as wide as that path's longest decoding
 * in the batch (TensorFlow's sparse_to_dense of the decoder's result), shorter ones followed by
 * -1s; log_prob (samples, top_paths) is TensorFlow's: greedy, minus the sum of each step's largest
 * log-probability (with repeated labels merged, as tf.nn.ctc_greedy_decoder's default); beam
 * search, each path's log-probability under each step's log-softmax (TensorFlow's
 * CTCBeamSearchDecoder). No gradient, as in TensorFlow.
 */
export function ctc_decode(
  y_pred: TensorLike,
  input_length: TensorLike,
  greedy?: boolean | DecodeOptions,
  beam_width?: number,
  top_paths?: number,
  merge_repeated?: boolean,
): [Node[], Node] {
  const fn = 'ctc_decode';
  const o = options<Required<DecodeOptions>>(
    fn,
    [greedy, beam_width, top_paths, merge_repeated],
    ['greedy', 'beam_width', 'top_paths', 'merge_repeated'],
  );
  const y = toTensor(fn, y_pred, 'y_pred');
  if (y.ndim !== 3)
    throw new ShapeError(`${fn}: y_pred must be (samples, time, classes), got shape ${formatShape(y.shape)}`);
  const len = lengthVector(fn, input_length, 'input_length');
  const flag = (v: unknown, what: string, dflt: boolean): boolean => {
    if (v === undefined) return dflt;
    if (typeof v !== 'boolean') throw new ValueError(`${fn}: ${what} must be a boolean, got ${describe(v)}`);
    return v;
  };
  const count = (v: unknown, what: string, dflt: number): number => {
    if (v === undefined) return dflt;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1)
      throw new ValueError(`${fn}: ${what} must be a positive integer, got ${describe(v)}`);
    return v;
  };
  const g = flag(o.greedy, 'greedy', true);
  const attrs = {
    greedy: g,
    beam_width: count(o.beam_width, 'beam_width', 100),
    top_paths: count(o.top_paths, 'top_paths', 1),
    merge_repeated: flag(o.merge_repeated, 'merge_repeated', false),
  };
  if (g && attrs.top_paths !== 1)
    throw new ValueError(
      `${fn}: greedy decoding gives one path, so top_paths must be 1 (got ${attrs.top_paths}); use greedy=false for beam search`,
    );
  if (!g && attrs.top_paths > attrs.beam_width)
    throw new ValueError(`${fn}: top_paths ${attrs.top_paths} is larger than beam_width ${attrs.beam_width}`);
  const F = `K.${fn}`;
  const logp = apply('log', [apply('add', [y, constantNode(new NDArray([epsilon()], [], y.dtype))], {}, F)], {}, F);
  const t = apply('ctc_decode', [logp, len], attrs, F);
  const decoded = Array.from({ length: attrs.top_paths }, (_, i) =>
    apply('ctc_trim', [apply('tuple_get', [t], { index: i })], {}, F),
  );
  return [decoded, apply('tuple_get', [t], { index: attrs.top_paths })];
}

/** A sparse tensor as three tensors (TensorFlow's SparseTensor): COO indices, values, dense shape. */
export interface SparseTensor {
  readonly indices: Node;
  readonly values: Node;
  readonly dense_shape: Node;
}

/**
 * ctc_label_dense_to_sparse(labels (samples, max_label_length), label_lengths (samples,)): the
 * first label_lengths[b] labels of each row as a sparse tensor { indices (n, 2) int32, values
 * (n,), dense_shape [samples, max_label_length] }, row by row (TensorFlow's order).
 */
export function ctc_label_dense_to_sparse(labels: TensorLike, label_lengths: TensorLike): SparseTensor {
  const fn = 'ctc_label_dense_to_sparse';
  const l = toTensor(fn, labels, 'labels', 'int32');
  if (l.ndim !== 2)
    throw new ShapeError(`${fn}: labels must be (samples, max_label_length), got shape ${formatShape(l.shape)}`);
  if (!isInt(l.dtype)) throw new ValueError(`${fn}: labels must be integers, got ${l.dtype}`);
  const n = lengthVector(fn, label_lengths, 'label_lengths');
  if (l.shape[0] !== null && n.shape[0] !== null && l.shape[0] !== n.shape[0]) {
    throw new ShapeError(
      `${fn}: labels shape ${formatShape(l.shape)} and label_lengths shape ${formatShape(n.shape)} disagree on the number of samples`,
    );
  }
  const t = apply('ctc_label_dense_to_sparse', [l, n], {}, `K.${fn}`);
  return {
    indices: apply('tuple_get', [t], { index: 0 }),
    values: apply('tuple_get', [t], { index: 1 }),
    dense_shape: apply('tuple_get', [t], { index: 2 }),
  };
}
