// l2_normalize, bias_add, batch normalization and in_top_k.
import { expect } from 'chai';
import { backend as K } from '../../src/index.js';
import { ShapeError, ValueError } from '../../src/ir/errors.js';
import { opTable } from '../helpers/table.js';
import { tf, tfRef } from '../helpers/tfref-math.js';

const tol = { rtol: 3e-6, atol: 2e-6 };
const x23 = [[3, 4, 0], [1, -2, 2]];
const x2345 = Array.from({ length: 2 }, (_, a) => Array.from({ length: 3 }, (_, b) => Array.from({ length: 4 }, (_, c) => Array.from({ length: 5 }, (_, d) => Math.sin(a * 60 + b * 20 + c * 5 + d) * 3))));

const l2 = (axis?: number | number[]) => tfRef((x) => tf.div(x, tf.sqrt(tf.maximum(tf.sum(tf.square(x), axis, true), 1e-12))));

opTable('K.l2_normalize', [
  { name: 'axis 1', inputs: [x23], build: (x) => K.l2_normalize(x, 1), expected: [[0.6, 0.8, 0], [1 / 3, -2 / 3, 2 / 3]], staticShape: [2, 3], tol: { atol: 1e-15 } },
  { name: 'axis 0', inputs: [x23], build: (x) => K.l2_normalize(x, 0), expected: l2(0), tol },
  { name: 'axis null = all axes', inputs: [x23], build: (x) => K.l2_normalize(x), expected: l2(), tol },
  { name: 'axis list, unknown dims', inputs: [x2345], shapes: [[null, 3, null, 5]], build: (x) => K.l2_normalize(x, { axis: [1, 3] }), expected: l2([1, 3]), staticShape: [null, 3, null, 5], tol },
  // sum of squares floored at 1e-12: a zero row stays zero instead of 0/0
  { name: 'zero vector', inputs: [[[0, 0], [1e-7, 0]]], build: (x) => K.l2_normalize(x, -1), expected: [[0, 0], [0.1, 0]], tol: { rtol: 1e-12 } },
]);

opTable('K.bias_add', [
  { name: 'rank 2', inputs: [x23, [10, 20, 30]], build: (x, b) => K.bias_add(x, b), expected: [[13, 24, 30], [11, 18, 32]], staticShape: [2, 3] },
  { name: 'rank 4 channels_last', inputs: [x2345, [1, 2, 3, 4, 5]], build: (x, b) => K.bias_add(x, b, 'channels_last'), expected: tfRef((x, b) => tf.add(x, b!)), staticShape: [2, 3, 4, 5], tol },
  { name: 'rank 4 channels_first', inputs: [x2345, [1, 2, 3]], build: (x, b) => K.bias_add(x, b, { data_format: 'channels_first' }), expected: tfRef((x, b) => tf.add(x, b!.reshape([1, 3, 1, 1]))), staticShape: [2, 3, 4, 5], tol },
  { name: 'rank 3 channels_first', inputs: [[[[1, 2], [3, 4]]], [10, 20]], build: (x, b) => K.bias_add(x, b, 'channels_first'), expected: [[[11, 12], [23, 24]]] },
  { name: 'rank 3 channels_last', inputs: [[[[1, 2], [3, 4]]], [10, 20]], build: (x, b) => K.bias_add(x, b, 'channels_last'), expected: [[[11, 22], [13, 24]]] },
  { name: 'rank 5 channels_first', inputs: [[x2345], [1, 2]], build: (x, b) => K.bias_add(x, b, 'channels_first'), expected: tfRef((x, b) => tf.add(x, b!.reshape([1, 2, 1, 1, 1]))), tol },
  { name: 'rank 5 channels_last', inputs: [[x2345], [1, 2, 3, 4, 5]], build: (x, b) => K.bias_add(x, b, 'channels_last'), expected: tfRef((x, b) => tf.add(x, b)), tol },
  { name: 'full-rank bias channels_last', inputs: [[[[1, 2], [3, 4]], [[5, 6], [7, 8]]], [[10, 20], [30, 40]]], build: (x, b) => K.bias_add(x, b, 'channels_last'), expected: [[[11, 22], [33, 44]], [[15, 26], [37, 48]]] },
  // Keras reshapes (not transposes) a full-rank bias to (1, C) + spatial: (2 spatial, 3 channels) -> (1, 3, 2)
  { name: 'full-rank bias channels_first', inputs: [[[[0, 0], [0, 0], [0, 0]]], [[1, 2, 3], [4, 5, 6]]], build: (x, b) => K.bias_add(x, b, 'channels_first'), expected: [[[1, 2], [3, 4], [5, 6]]], staticShape: [1, 3, 2] },
  { name: 'default data_format from config', inputs: [[[[1, 2], [3, 4]]], [10, 20]], build: (x, b) => K.bias_add(x, b), expected: [[[11, 22], [13, 24]]] },
  { name: 'unknown batch and channels', inputs: [x2345, [1, 2, 3, 4, 5]], shapes: [[null, 3, 4, null], [null]], build: (x, b) => K.bias_add(x, b), expected: tfRef((x, b) => tf.add(x, b!)), staticShape: [null, 3, 4, null], tol },
]);

const mean3 = [0.5, -1, 2];
const var3 = [1, 0.25, 4];
const beta3 = [0, 1, -1];
const gamma3 = [2, 1, 0.5];
const x43 = [[1, 2, 3], [0, 0, 0], [-1, 5, 2], [2, -3, 8]];

opTable('K.batch_normalization', [
  { name: 'all params', inputs: [x43, mean3, var3, beta3, gamma3], build: (x, m, v, b, g) => K.batch_normalization(x, m, v, b, g), expected: tfRef((x, m, v, b, g) => tf.batchNorm(x, m!, v!, b, g, 1e-3)), staticShape: [4, 3], tol },
  { name: 'epsilon option', inputs: [x43, mean3, var3, beta3, gamma3], build: (x, m, v, b, g) => K.batch_normalization(x, m, v, b, g, { epsilon: 0.1 }), expected: tfRef((x, m, v, b, g) => tf.batchNorm(x, m!, v!, b, g, 0.1)), tol },
  { name: 'null beta and gamma', inputs: [x43, mean3, var3], build: (x, m, v) => K.batch_normalization(x, m, v, null, null, { epsilon: 0 }), expected: tfRef((x, m, v) => tf.div(tf.sub(x, m!), tf.sqrt(v!))), tol },
  { name: 'unknown batch', inputs: [x43, mean3, var3, beta3, gamma3], shapes: [[null, 3], [3], [3], [3], [3]], build: (x, m, v, b, g) => K.batch_normalization(x, m, v, b, g), expected: tfRef((x, m, v, b, g) => tf.batchNorm(x, m!, v!, b, g, 1e-3)), staticShape: [null, 3], tol },
]);

const nbRef = (axes: number[], eps: number, target: number[]) => tfRef((x, g, b) => {
  const { mean, variance } = tf.moments(x, axes, true);
  return tf.add(tf.mul(tf.div(tf.sub(x, mean), tf.sqrt(tf.add(variance, eps))), g!.reshape(target)), b!.reshape(target));
});
opTable('K.normalize_batch_in_training', [
  { name: 'normed, last-axis features', inputs: [x43, gamma3, beta3], build: (x, g, b) => K.normalize_batch_in_training(x, g, b, [0])[0], expected: nbRef([0], 1e-3, [1, 3]), staticShape: [4, 3], tol },
  { name: 'mean', inputs: [x43, gamma3, beta3], build: (x, g, b) => K.normalize_batch_in_training(x, g, b, [0])[1], expected: tfRef((x) => tf.moments(x, 0).mean), staticShape: [3], tol },
  { name: 'var (population)', inputs: [x43, gamma3, beta3], build: (x, g, b) => K.normalize_batch_in_training(x, g, b, [0])[2], expected: tfRef((x) => tf.moments(x, 0).variance), staticShape: [3], tol },
  { name: 'channels_first axes [0, 2, 3]', inputs: [x2345, gamma3, beta3], build: (x, g, b) => K.normalize_batch_in_training(x, g, b, [0, 2, 3], 0.01)[0], expected: nbRef([0, 2, 3], 0.01, [1, 3, 1, 1]), staticShape: [2, 3, 4, 5], tol },
  { name: 'channels_first var', inputs: [x2345, gamma3, beta3], build: (x, g, b) => K.normalize_batch_in_training(x, g, b, [0, 2, 3])[2], expected: tfRef((x) => tf.moments(x, [0, 2, 3]).variance), staticShape: [3], tol },
  { name: 'gamma/beta already broadcastable', inputs: [x2345, [[[[1]], [[2]], [[3]]]], [[[[0]], [[0]], [[1]]]]], build: (x, g, b) => K.normalize_batch_in_training(x, g, b, [0, 2, 3])[0], expected: nbRef([0, 2, 3], 1e-3, [1, 3, 1, 1]), tol },
  { name: 'unknown batch', inputs: [x2345, gamma3, beta3], shapes: [[null, 3, 4, 5], [3], [3]], build: (x, g, b) => K.normalize_batch_in_training(x, g, b, [0, 2, 3])[0], expected: nbRef([0, 2, 3], 1e-3, [1, 3, 1, 1]), staticShape: [null, 3, 4, 5], tol },
  { name: 'null gamma and beta', inputs: [x43], build: (x) => K.normalize_batch_in_training(x, null, null, [0])[0], expected: tfRef((x) => { const { mean, variance } = tf.moments(x, 0, true); return tf.batchNorm(x, mean, variance, undefined, undefined, 1e-3); }), tol },
]);

const preds = [[0.1, 0.3, 0.3, 0.2], [0.9, 0.05, 0.03, 0.02], [0.25, 0.25, 0.25, 0.25], [0.4, NaN, 0.1, 0.5]];
opTable('K.in_top_k', [
  { name: 'k 1, ties count', inputs: [preds, [1, 0, 3, 3]], dtypes: ['float32', 'int32'], build: (p, t) => K.in_top_k(p, t, 1), expected: [true, true, true, true], staticShape: [4], expectedDType: 'bool' },
  { name: 'k 1 misses', inputs: [preds, [3, 1, 0, 0]], dtypes: ['float32', 'int32'], build: (p, t) => K.in_top_k(p, t, 1), expected: [false, false, true, false] },
  { name: 'k 2', inputs: [preds, [3, 1, 0, 0]], dtypes: ['float32', 'int64'], build: (p, t) => K.in_top_k(p, t, 2), expected: [false, true, true, true] },
  { name: 'k 0 is all false', inputs: [preds, [1, 0, 3, 3]], dtypes: ['float32', 'int32'], build: (p, t) => K.in_top_k(p, t, 0), expected: [false, false, false, false] },
  { name: 'negative k is all false', inputs: [preds, [1, 0, 3, 3]], dtypes: ['float32', 'int32'], build: (p, t) => K.in_top_k(p, t, -2), expected: [false, false, false, false] },
  { name: 'k >= classes is all true', inputs: [preds, [0, 1, 2, 3]], dtypes: ['float32', 'int32'], build: (p, t) => K.in_top_k(p, t, 4), expected: [true, true, true, true] },
  { name: 'NaN score or out-of-range target is false', inputs: [preds, [4, -1, 2, 1]], dtypes: ['float32', 'int32'], build: (p, t) => K.in_top_k(p, t, 4), expected: [false, false, true, false] },
  { name: 'unknown batch', inputs: [preds, [1, 0, 3, 3]], dtypes: ['float32', 'int32'], shapes: [[null, 4], [null]], build: (p, t) => K.in_top_k(p, t, 1), expected: [true, true, true, true], staticShape: [null] },
]);

describe('nn errors', () => {
  it('l2_normalize: bad axis', () => {
    expect(() => K.l2_normalize(K.placeholder([2, 3]), 2)).to.throw(ValueError, /l2_normalize: axis 2 is out of range/);
  });
  it('bias_add: bad data_format lists the allowed values', () => {
    expect(() => K.bias_add(K.placeholder([2, 3, 4]), K.placeholder([4]), 'nchw')).to.throw(ValueError, /bias_add: unknown data_format "nchw" \(allowed: "channels_first", "channels_last"\)/);
  });
  it('bias_add: bias rank', () => {
    expect(() => K.bias_add(K.placeholder([2, 3, 4, 5]), K.placeholder([4, 5]))).to.throw(ShapeError, /bias_add: unexpected bias dimensions 2 \(bias shape \(4, 5\)\), expected 1 or 3/);
  });
  it('bias_add: channel count', () => {
    expect(() => K.bias_add(K.placeholder([2, 3, 4]), K.placeholder([3]))).to.throw(ShapeError, /bias_add: bias of shape \(3,\) gives 3 channels but x of shape \(2, 3, 4\) has 4 on axis 2 \(channels_last\)/);
    expect(() => K.bias_add(K.placeholder([2, 3, 4]), K.placeholder([4]), 'channels_first')).to.throw(ShapeError, /has 3 on axis 1 \(channels_first\)/);
  });
  it('bias_add: rank of x', () => {
    expect(() => K.bias_add(K.placeholder([3]), K.placeholder([3]))).to.throw(ShapeError, /bias_add: x must have rank >= 2, got shape \(3,\)/);
    expect(() => K.bias_add(K.placeholder([1, 2, 3, 4, 5, 6]), K.placeholder([2, 3, 4, 5, 6]))).to.throw(ShapeError, /bias_add: a bias of rank 5 needs x of rank 3 to 5/);
  });
  it('bias_add: full-rank bias shape must match x', () => {
    expect(() => K.bias_add(K.placeholder([2, 3, 4]), K.placeholder([2, 4]))).to.throw(ShapeError, /K.bias_add: shapes \(2, 3, 4\) \(x\) and \(1, 2, 4\) \(y\) cannot be broadcast/);
  });
  it('bias_add: a full-rank bias with two unknown dims', () => {
    expect(() => K.bias_add(K.placeholder([2, 3, 4, 5]), K.placeholder([null, null, 5]))).to.throw(ShapeError, /bias_add: bias has shape \(None, None, 5\), with more than one unknown dim/);
  });
  it('batch_normalization: epsilon and shapes', () => {
    const x = K.placeholder([4, 3]);
    expect(() => K.batch_normalization(x, x, x, null, null, -1, -1)).to.throw(ValueError, /batch_normalization: epsilon must be a non-negative number, got number -1/);
    expect(() => K.batch_normalization(x, x, x, null, null, { axis: 2 })).to.throw(ValueError, /batch_normalization: axis number 2 is not an axis of x \(4, 3\) \(allowed: integers -2..1\)/);
    expect(() => K.batch_normalization(x, K.placeholder([4]), x, null, null)).to.throw(ShapeError, /K.batch_normalization: shapes \(4, 3\) \(x\) and \(4,\) \(y\) cannot be broadcast/);
  });
  it('normalize_batch_in_training: gamma rank, axes, epsilon', () => {
    const x = K.placeholder([2, 3, 4]);
    expect(() => K.normalize_batch_in_training(x, K.placeholder([4]), null, [0])).to.throw(ShapeError, /normalize_batch_in_training: gamma has shape \(4,\); expected rank 2 \(x \(2, 3, 4\) without reduction axes \[0\]\) or rank 3/);
    expect(() => K.normalize_batch_in_training(x, null, K.placeholder([4]), [0, 1, 1])).to.throw(ValueError, /normalize_batch_in_training: axis \[0,1,1\] repeats an axis/);
    expect(() => K.normalize_batch_in_training(x, null, null, 'all' as never)).to.throw(ValueError, /normalize_batch_in_training: reduction_axes must be a list of axes/);
    expect(() => K.normalize_batch_in_training(x, null, null, [0], 'a' as never)).to.throw(ValueError, /epsilon must be a non-negative number/);
    expect(() => K.normalize_batch_in_training(x, K.placeholder([5, 4]), null, [0])).to.throw(ShapeError, /K.normalize_batch_in_training: shapes \(2, 3, 4\) \(x\) and \(1, 5, 4\) \(y\) cannot be broadcast/);
  });
  it('in_top_k: ranks, dtypes, batch, k', () => {
    const p = K.placeholder([4, 5]);
    const t = K.placeholder([4], null, 'int32');
    expect(() => K.in_top_k(K.placeholder([4]), t, 1)).to.throw(ShapeError, /K.in_top_k: predictions must have rank 2 \(batch_size, classes\), got shape \(4,\)/);
    expect(() => K.in_top_k(p, K.placeholder([4, 1], null, 'int32'), 1)).to.throw(ShapeError, /K.in_top_k: targets must have rank 1/);
    expect(() => K.in_top_k(p, K.placeholder([4]), 1)).to.throw(TypeError, /K.in_top_k: targets must be an integer tensor, got float32/);
    expect(() => K.in_top_k(p, K.placeholder([3], null, 'int32'), 1)).to.throw(ShapeError, /disagree on the batch size: axis 0 has 4 and 3/);
    expect(() => K.in_top_k(p, t, 1.5)).to.throw(ValueError, /in_top_k: k must be an integer, got number 1.5/);
  });
  it('in_top_k: batch mismatch found at run time', () => {
    const p = K.placeholder([null, 2]);
    const t = K.placeholder([null], null, 'int32');
    const f = K.function([p, t], [K.in_top_k(p, t, 1)]);
    expect(() => f([[[1, 2]], [0, 1]])).to.throw(ValueError, /disagree on the batch size/);
  });
  it('in_top_k: nested-array targets are class ids', () => {
    expect(K.eval(K.in_top_k([[0.1, 0.9], [0.8, 0.2]], [1, 1], 1)).toArray()).to.deep.equal([true, false]);
  });
});
