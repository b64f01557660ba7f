// pool2d / pool3d (max and avg) against TensorFlow.js (cpu), whose 'same' average pooling
// excludes padded cells as SPEC §5 asks, plus hand-computed edge cases.
import { backend as K } from '../../src/index.js';
import { NDArray } from '../../src/ir/ndarray.js';
import { opTable } from '../helpers/table.js';
import { rand, tf, tfReady, tfRow, toFirst, toLast, viaTf, type Dims } from './conv-ref.js';

before(() => tfReady());

const T4 = (t: tf.Tensor) => t as tf.Tensor4D;
const T5 = (t: tf.Tensor) => t as tf.Tensor5D;
type Pair = number | [number, number];
type Trip = number | [number, number, number];

const x2 = rand([2, 6, 7, 3], 41);
const x2s: Dims = [null, 6, 7, 3];
const tfPool2 = (mode: 'max' | 'avg', size: Pair, s: Pair, pad: 'valid' | 'same') => (a: NDArray) =>
  viaTf((t) => (mode === 'max' ? tf.maxPool(T4(t), size, s, pad) : tf.avgPool(T4(t), size, s, pad)), a);

opTable('K.pool2d', [
  {
    // Windows [1, 2], [2, 3], [3, pad]: the last mean is over its one real cell.
    name: "hand: avg 'same' excludes the padded cell from the mean",
    inputs: [new NDArray([1, 2, 3], [1, 1, 3, 1], 'float32')],
    build: (v) => K.pool2d(v, [1, 2], [1, 1], 'same', 'channels_last', 'avg'),
    expected: [[[[1.5], [2.5], [3]]]],
    staticShape: [1, 1, 3, 1],
  },
  {
    name: "hand: max 'same' never takes the padding (all-negative input)",
    inputs: [new NDArray([-1, -2, -3], [1, 1, 3, 1], 'float32')],
    build: (v) => K.pool2d(v, [1, 2], [1, 1], 'same'),
    expected: [[[[-1], [-2], [-3]]]],
    staticShape: [1, 1, 3, 1],
  },
  {
    name: 'avg of an int32 tensor is computed in floatx',
    inputs: [new NDArray([1, 2, 4, 7], [1, 2, 2, 1], 'int32')],
    build: (v) => K.pool2d(v, 2, 1, 'valid', null, 'avg'),
    expected: [[[[3.5]]]],
    staticShape: [1, 1, 1, 1],
    expectedDType: 'float32',
  },
  tfRow('max, valid, pool 2, default strides (1, 1)', [x2], [x2s], (v) => K.pool2d(v, 2), tfPool2('max', 2, 1, 'valid'), [null, 5, 6, 3]),
  tfRow('max, same, pool (3, 2), strides (2, 2)', [x2], [x2s], (v) => K.pool2d(v, [3, 2], [2, 2], 'same'), tfPool2('max', [3, 2], [2, 2], 'same'), [null, 3, 4, 3]),
  tfRow('max, valid, pool 3, strides (3, 2)', [x2], [x2s], (v) => K.pool2d(v, 3, [3, 2]), tfPool2('max', 3, [3, 2], 'valid'), [null, 2, 3, 3]),
  tfRow('avg, valid, pool (2, 3), strides (2, 1)', [x2], [x2s], (v) => K.pool2d(v, [2, 3], [2, 1], 'valid', null, 'avg'), tfPool2('avg', [2, 3], [2, 1], 'valid'), [null, 3, 5, 3]),
  tfRow('avg, same, pool 3, strides 2', [x2], [x2s], (v) => K.pool2d(v, { pool_size: 3, strides: 2, padding: 'same', pool_mode: 'avg' }), tfPool2('avg', 3, 2, 'same'), [null, 3, 4, 3]),
  tfRow('avg, same, pool (4, 4), strides 1 (wide padding)', [x2], [x2s], (v) => K.pool2d(v, 4, 1, 'same', null, 'avg'), tfPool2('avg', 4, 1, 'same'), [null, 6, 7, 3]),
  tfRow('channels_first, avg, same, pool 2, strides 2', [toFirst(x2)], [[null, 3, 6, 7]], (v) => K.pool2d(v, 2, 2, 'same', 'channels_first', 'avg'),
    (a) => toFirst(tfPool2('avg', 2, 2, 'same')(toLast(a))), [null, 3, 3, 4]),
  tfRow("Keras 1 border_mode 'same', dim_ordering 'th'", [toFirst(x2)], [[null, 3, 6, 7]], (v) => K.pool2d(v, 3, { strides: 2, border_mode: 'same', dim_ordering: 'th' }),
    (a) => toFirst(tfPool2('max', 3, 2, 'same')(toLast(a))), [null, 3, 3, 4]),
  tfRow('unknown spatial dims stay unknown', [x2], [[null, null, 7, 3]], (v) => K.pool2d(v, 2, 2, 'same'), tfPool2('max', 2, 2, 'same'), [null, null, 4, 3]),
]);

const x3 = rand([2, 5, 4, 6, 2], 42);
const x3s: Dims = [null, 5, 4, 6, 2];
const tfPool3 = (mode: 'max' | 'avg', size: Trip, s: Trip, pad: 'valid' | 'same') => (a: NDArray) =>
  viaTf((t) => (mode === 'max' ? tf.maxPool3d(T5(t), size, s, pad) : tf.avgPool3d(T5(t), size, s, pad)), a);

opTable('K.pool3d', [
  tfRow('max, valid, pool 2, default strides', [x3], [x3s], (v) => K.pool3d(v, 2), tfPool3('max', 2, 1, 'valid'), [null, 4, 3, 5, 2]),
  tfRow('max, same, pool (2, 3, 2), strides (2, 2, 1)', [x3], [x3s], (v) => K.pool3d(v, [2, 3, 2], [2, 2, 1], 'same'), tfPool3('max', [2, 3, 2], [2, 2, 1], 'same'), [null, 3, 2, 6, 2]),
  tfRow('avg, valid, pool (3, 2, 2), strides 2', [x3], [x3s], (v) => K.pool3d(v, [3, 2, 2], 2, 'valid', null, 'avg'), tfPool3('avg', [3, 2, 2], 2, 'valid'), [null, 2, 2, 3, 2]),
  tfRow('avg, same, pool 3, strides 2', [x3], [x3s], (v) => K.pool3d(v, 3, 2, 'same', null, 'avg'), tfPool3('avg', 3, 2, 'same'), [null, 3, 2, 3, 2]),
  tfRow('channels_first, max, same, pool 2, strides 2', [toFirst(x3)], [[null, 2, 5, 4, 6]], (v) => K.pool3d(v, 2, 2, 'same', 'channels_first'),
    (a) => toFirst(tfPool3('max', 2, 2, 'same')(toLast(a))), [null, 2, 3, 2, 3]),
  tfRow('channels_first, avg, same, pool (2, 2, 3), strides 1', [toFirst(x3)], [[null, 2, 5, 4, 6]], (v) => K.pool3d(v, [2, 2, 3], 1, 'same', 'channels_first', 'avg'),
    (a) => toFirst(tfPool3('avg', [2, 2, 3], 1, 'same')(toLast(a))), [null, 2, 5, 4, 6]),
]);
