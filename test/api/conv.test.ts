// conv1d / conv2d / conv3d against TensorFlow.js (cpu) on the same inputs, plus hand-computed
// cases; static shapes with unknown batch (and unknown spatial dims) checked on every row.
import { expect } from 'chai';
import { backend as K } from '../../src/index.js';
import { NDArray } from '../../src/ir/ndarray.js';
import { expectClose } from '../helpers/assert.js';
import { opTable } from '../helpers/table.js';
import { TOL, dilateKernel, rand, tf, tfReady, tfRow, toFirst, toLast, viaTf, type Dims } from './conv-ref.js';

before(() => tfReady());


const T3 = (t: tf.Tensor) => t as tf.Tensor3D;
const T4 = (t: tf.Tensor) => t as tf.Tensor4D;
const T5 = (t: tf.Tensor) => t as tf.Tensor5D;

// conv1d: x (2, 7, 3), kernel (3, 3, 4).
const x1 = rand([2, 7, 3], 1);
const k1 = rand([3, 3, 4], 2);
const x1s: Dims = [null, 7, 3];
const k1s: Dims = [3, 3, 4];
const tfConv1d = (stride: number, pad: 'valid' | 'same', dil = 1) => (x: NDArray, k: NDArray) =>
  viaTf((a, b) => tf.conv1d(T3(a), T3(b), stride, pad, 'NWC', dil), x, k);

opTable('K.conv1d', [
  tfRow('valid', [x1, k1], [x1s, k1s], (x, k) => K.conv1d(x, k), tfConv1d(1, 'valid'), [null, 5, 4]),
  tfRow('same, stride 2', [x1, k1], [x1s, k1s], (x, k) => K.conv1d(x, k, 2, 'same'), tfConv1d(2, 'same'), [null, 4, 4]),
  tfRow('same, dilation 2', [x1, k1], [x1s, k1s], (x, k) => K.conv1d(x, k, { padding: 'same', dilation_rate: 2 }), tfConv1d(1, 'same', 2), [null, 7, 4]),
  tfRow('valid, dilation [3]', [x1, k1], [x1s, k1s], (x, k) => K.conv1d(x, k, [1], 'valid', null, [3]), tfConv1d(1, 'valid', 3), [null, 1, 4]),
  tfRow('causal, dilation 2: left padding 2 * (3 - 1)', [x1, k1], [x1s, k1s], (x, k) => K.conv1d(x, k, 1, 'causal', null, 2),
    (x, k) => viaTf((a, b) => tf.conv1d(T3(tf.pad(a, [[0, 0], [4, 0], [0, 0]])), T3(b), 1, 'valid', 'NWC', 2), x, k), [null, 7, 4]),
  tfRow('causal, stride 2', [x1, k1], [x1s, k1s], (x, k) => K.conv1d(x, k, { strides: 2, padding: 'causal' }),
    (x, k) => viaTf((a, b) => tf.conv1d(T3(tf.pad(a, [[0, 0], [2, 0], [0, 0]])), T3(b), 2, 'valid'), x, k), [null, 4, 4]),
  tfRow('channels_first, same', [toFirst(x1), k1], [[null, 3, 7], k1s], (x, k) => K.conv1d(x, k, 1, 'same', 'channels_first'),
    (x, k) => toFirst(tfConv1d(1, 'same')(toLast(x), k)), [null, 4, 7]),
  tfRow('channels_first, causal, dilation 2', [toFirst(x1), k1], [[null, 3, 7], k1s], (x, k) => K.conv1d(x, k, 1, 'causal', 'channels_first', 2),
    (x, k) => toFirst(viaTf((a, b) => tf.conv1d(T3(tf.pad(a, [[0, 0], [4, 0], [0, 0]])), T3(b), 1, 'valid', 'NWC', 2), toLast(x), k)), [null, 4, 7]),
  tfRow('same, stride 2 with dilation 2 (zero-dilated kernel)', [x1, k1], [x1s, k1s], (x, k) => K.conv1d(x, k, 2, 'same', null, 2),
    (x, k) => tfConv1d(2, 'same')(x, dilateKernel(k, [2])), [null, 4, 4]),
  tfRow('unknown length stays unknown', [x1, k1], [[null, null, 3], k1s], (x, k) => K.conv1d(x, k, 3, 'valid'), tfConv1d(3, 'valid'), [null, null, 4]),
]);

// conv2d: x (2, 6, 7, 3), kernel (3, 2, 3, 4).
const x2 = rand([2, 6, 7, 3], 3);
const k2 = rand([3, 2, 3, 4], 4);
const x2s: Dims = [null, 6, 7, 3];
const k2s: Dims = [3, 2, 3, 4];
const tfConv2d = (s: [number, number], pad: 'valid' | 'same', dil: [number, number] = [1, 1]) => (x: NDArray, k: NDArray) =>
  viaTf((a, b) => tf.conv2d(T4(a), T4(b), s, pad, 'NHWC', dil), x, k);

opTable('K.conv2d', [
  {
    // Cross-correlation, no flip: y[i, j] = x[i, j] + x[i+1, j+1].
    name: 'hand: 3x3 input, diagonal 2x2 kernel given as nested arrays',
    inputs: [new NDArray([1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 3, 3, 1], 'float32')],
    build: (x) => K.conv2d(x, [[[[1]], [[0]]], [[[0]], [[1]]]]),
    expected: [[[[6], [8]], [[12], [14]]]],
    staticShape: [1, 2, 2, 1],
  },
  {
    // TensorFlow's 'same' split: total padding 1 goes after: y = [x0 + 10 x1, x1 + 10 x2, x2].
    name: "hand: 'same' pads the extra cell at the end",
    inputs: [new NDArray([1, 2, 3], [1, 1, 3, 1], 'float32')],
    build: (x) => K.conv2d(x, [[[[1]], [[10]]]], [1, 1], 'same'),
    expected: [[[[21], [32], [3]]]],
    staticShape: [1, 1, 3, 1],
  },
  tfRow('valid', [x2, k2], [x2s, k2s], (x, k) => K.conv2d(x, k), tfConv2d([1, 1], 'valid'), [null, 4, 6, 4]),
  tfRow('same, strides (2, 2)', [x2, k2], [x2s, k2s], (x, k) => K.conv2d(x, k, [2, 2], 'same'), tfConv2d([2, 2], 'same'), [null, 3, 4, 4]),
  tfRow('same, strides (2, 3)', [x2, k2], [x2s, k2s], (x, k) => K.conv2d(x, k, [2, 3], 'same'), tfConv2d([2, 3], 'same'), [null, 3, 3, 4]),
  tfRow('valid, strides (3, 2) as an option', [x2, k2], [x2s, k2s], (x, k) => K.conv2d(x, k, { strides: [3, 2] }), tfConv2d([3, 2], 'valid'), [null, 2, 3, 4]),
  tfRow('same, dilation (2, 1)', [x2, k2], [x2s, k2s], (x, k) => K.conv2d(x, k, [1, 1], 'same', null, [2, 1]), tfConv2d([1, 1], 'same', [2, 1]), [null, 6, 7, 4]),
  tfRow('valid, dilation 2', [x2, k2], [x2s, k2s], (x, k) => K.conv2d(x, k, 1, 'valid', 'channels_last', 2), tfConv2d([1, 1], 'valid', [2, 2]), [null, 2, 5, 4]),
  tfRow('channels_first, same, strides 2', [toFirst(x2), k2], [[null, 3, 6, 7], k2s], (x, k) => K.conv2d(x, k, 2, 'same', 'channels_first'),
    (x, k) => toFirst(tfConv2d([2, 2], 'same')(toLast(x), k)), [null, 4, 3, 4]),
  tfRow('channels_first, valid, dilation (1, 2)', [toFirst(x2), k2], [[null, 3, 6, 7], k2s], (x, k) => K.conv2d(x, k, 1, 'valid', 'channels_first', [1, 2]),
    (x, k) => toFirst(tfConv2d([1, 1], 'valid', [1, 2])(toLast(x), k)), [null, 4, 4, 5]),
  tfRow('same, strides 2 with dilation 2 (zero-dilated kernel)', [x2, k2], [x2s, k2s], (x, k) => K.conv2d(x, k, 2, 'same', null, 2),
    (x, k) => tfConv2d([2, 2], 'same')(x, dilateKernel(k, [2, 2])), [null, 3, 4, 4]),
  tfRow('valid, strides (2, 1) with dilation (1, 2) (zero-dilated kernel)', [x2, k2], [x2s, k2s], (x, k) => K.conv2d(x, k, [2, 1], 'valid', null, [1, 2]),
    (x, k) => tfConv2d([2, 1], 'valid')(x, dilateKernel(k, [1, 2])), [null, 2, 5, 4]),
  tfRow('unknown spatial dims stay unknown', [x2, k2], [[null, null, null, 3], k2s], (x, k) => K.conv2d(x, k, 2, 'same'), tfConv2d([2, 2], 'same'), [null, null, null, 4]),
]);

// conv3d: x (2, 5, 4, 6, 2), kernel (2, 3, 2, 2, 3).
const x3 = rand([2, 5, 4, 6, 2], 5);
const k3 = rand([2, 3, 2, 2, 3], 6);
const x3s: Dims = [null, 5, 4, 6, 2];
const k3s: Dims = [2, 3, 2, 2, 3];
type Trip = [number, number, number];
const tfConv3d = (s: Trip, pad: 'valid' | 'same', dil: Trip = [1, 1, 1]) => (x: NDArray, k: NDArray) =>
  viaTf((a, b) => tf.conv3d(T5(a), T5(b), s, pad, 'NDHWC', dil), x, k);

opTable('K.conv3d', [
  tfRow('valid', [x3, k3], [x3s, k3s], (x, k) => K.conv3d(x, k), tfConv3d([1, 1, 1], 'valid'), [null, 4, 2, 5, 3]),
  tfRow('same, strides (2, 1, 2)', [x3, k3], [x3s, k3s], (x, k) => K.conv3d(x, k, [2, 1, 2], 'same'), tfConv3d([2, 1, 2], 'same'), [null, 3, 4, 3, 3]),
  tfRow('valid, strides 2', [x3, k3], [x3s, k3s], (x, k) => K.conv3d(x, k, 2), tfConv3d([2, 2, 2], 'valid'), [null, 2, 1, 3, 3]),
  tfRow('same, dilation (1, 2, 2)', [x3, k3], [x3s, k3s], (x, k) => K.conv3d(x, k, 1, 'same', null, [1, 2, 2]), tfConv3d([1, 1, 1], 'same', [1, 2, 2]), [null, 5, 4, 6, 3]),
  tfRow('channels_first, same, strides 2', [toFirst(x3), k3], [[null, 2, 5, 4, 6], k3s], (x, k) => K.conv3d(x, k, 2, 'same', 'channels_first'),
    (x, k) => toFirst(tfConv3d([2, 2, 2], 'same')(toLast(x), k)), [null, 3, 3, 2, 3]),
  tfRow('same, strides 2 with dilation 2 (zero-dilated kernel)', [x3, k3], [x3s, k3s], (x, k) => K.conv3d(x, k, 2, 'same', null, 2),
    (x, k) => tfConv3d([2, 2, 2], 'same')(x, dilateKernel(k, [2, 2, 2])), [null, 3, 2, 3, 3]),
]);

// Keras 1 spellings map onto the Keras 2 parameters.
opTable('Keras 1 spellings of the conv functions', [
  tfRow("conv2d border_mode 'same', dim_ordering 'th'", [toFirst(x2), k2], [[null, 3, 6, 7], k2s], (x, k) => K.conv2d(x, k, { border_mode: 'same', dim_ordering: 'th' }),
    (x, k) => toFirst(tfConv2d([1, 1], 'same')(toLast(x), k)), [null, 4, 6, 7]),
  tfRow("conv2d positional Keras 1 order: strides, border_mode, dim_ordering 'tf', image_shape, filter_shape, filter_dilation", [x2, k2], [x2s, k2s],
    (x, k) => K.conv2d(x, k, [1, 1], 'same', 'tf', [null, 6, 7, 3], [3, 2, 3, 4], [2, 1]), tfConv2d([1, 1], 'same', [2, 1]), [null, 6, 7, 4]),
  tfRow('conv2d filter_dilation as an option', [x2, k2], [x2s, k2s], (x, k) => K.conv2d(x, k, { filter_dilation: [1, 2] }), tfConv2d([1, 1], 'valid', [1, 2]), [null, 4, 5, 4]),
  tfRow('conv1d positional Keras 1 order: stride, border_mode, image_shape, filter_shape', [x1, k1], [x1s, k1s],
    (x, k) => K.conv1d(x, k, 2, 'same', [null, 7, 3], [3, 3, 4]), tfConv1d(2, 'same'), [null, 4, 4]),
  tfRow('conv1d stride and border_mode as options', [x1, k1], [x1s, k1s], (x, k) => K.conv1d(x, k, { stride: 2, border_mode: 'valid' }), tfConv1d(2, 'valid'), [null, 3, 4]),
  tfRow("conv3d dim_ordering 'th' positionally, volume_shape hint", [toFirst(x3), k3], [[null, 2, 5, 4, 6], k3s],
    (x, k) => K.conv3d(x, k, [1, 1, 1], 'valid', 'th', [null, 2, 5, 4, 6]), (x, k) => toFirst(tfConv3d([1, 1, 1], 'valid')(toLast(x), k)), [null, 3, 4, 2, 5]),
]);

describe("K.conv2d data_format null / dim_ordering 'default' read K.image_data_format()", () => {
  it('follows the configured format', () => {
    const saved = K.image_data_format();
    try {
      K.set_image_data_format('channels_first');
      const x = K.placeholder([null, 3, 6, 7]);
      const k = K.placeholder(k2s);
      const a = K.conv2d(x, k, 1, 'same');
      // Hash-consing makes equal graphs the same node.
      expect(K.conv2d(x, k, 1, 'same', 'channels_first')).to.equal(a);
      expect(K.conv2d(x, k, { dim_ordering: 'default', padding: 'same' })).to.equal(a);
      expect(K.int_shape(a)).to.deep.equal([null, 4, 6, 7]);
      const [y] = K.function([x, k], [a])([toFirst(x2), k2]);
      expectClose(y!, toFirst(tfConv2d([1, 1], 'same')(x2, k2)), TOL);
    } finally {
      K.set_image_data_format(saved);
    }
  });
});
