// conv2d_transpose, Keras 1's deconv2d and separable_conv2d against TensorFlow.js (cpu), plus
// the adjoint identity <conv(a, w), b> = <a, conv_transpose(b, w)> computed by hand.
import { expect } from 'chai';
import { backend as K } from '../../src/index.js';
import { NDArray } from '../../src/ir/ndarray.js';
import { opTable } from '../helpers/table.js';
import { dilateKernel, permute, rand, tf, tfReady, tfRow, toFirst, toLast, viaTf, type Dims } from './conv-ref.js';

before(() => tfReady());

const T4 = (t: tf.Tensor) => t as tf.Tensor4D;

// x (2, 4, 5, 3): 3 channels in; kernel (3, 3, 2, 3) = (kh, kw, out_channels, in_channels).
const x = rand([2, 4, 5, 3], 11);
const k = rand([3, 3, 2, 3], 12);
const xs: Dims = [null, 4, 5, 3];
const ks: Dims = [3, 3, 2, 3];
type Out = [number, number, number, number];
const tfT = (out: Out, s: number, pad: 'valid' | 'same') => (a: NDArray, b: NDArray) =>
  viaTf((p, q) => tf.conv2dTranspose(T4(p), T4(q), out, s, pad), a, b);

opTable('K.conv2d_transpose', [
  {
    // A 1x1 input spread by a 2x2 kernel with stride 2: the kernel itself.
    name: 'hand: one pixel times a 2x2 kernel',
    inputs: [new NDArray([3], [1, 1, 1, 1], 'float32')],
    build: (v) => K.conv2d_transpose(v, [[[[1]], [[2]]], [[[3]], [[4]]]], [1, 2, 2, 1], [2, 2]),
    expected: [[[[3], [6]], [[9], [12]]]],
    staticShape: [1, 2, 2, 1],
  },
  tfRow('valid, stride 1', [x, k], [xs, ks], (a, b) => K.conv2d_transpose(a, b, [2, 6, 7, 2]), tfT([2, 6, 7, 2], 1, 'valid'), [null, 6, 7, 2]),
  tfRow('same, strides 2, even output', [x, k], [xs, ks], (a, b) => K.conv2d_transpose(a, b, [2, 8, 10, 2], [2, 2], 'same'), tfT([2, 8, 10, 2], 2, 'same'), [null, 8, 10, 2]),
  tfRow('same, strides 2, odd output (padding split differs)', [x, k], [xs, ks], (a, b) => K.conv2d_transpose(a, b, [2, 7, 9, 2], 2, 'same'), tfT([2, 7, 9, 2], 2, 'same'), [null, 7, 9, 2]),
  tfRow('valid, strides 2, output 9 x 11', [x, k], [xs, ks], (a, b) => K.conv2d_transpose(a, b, [null, 9, 11, 2], 2, 'valid'), tfT([2, 9, 11, 2], 2, 'valid'), [null, 9, 11, 2]),
  tfRow('valid, strides 2, output 10 x 12 (last row and column untouched)', [x, k], [xs, ks], (a, b) => K.conv2d_transpose(a, b, { output_shape: [-1, 10, 12, 2], strides: 2 }),
    tfT([2, 10, 12, 2], 2, 'valid'), [null, 10, 12, 2]),
  tfRow('batch given as a tensor', [x, k], [xs, ks], (a, b) => K.conv2d_transpose(a, b, [K.shape(a).get(0), 8, 10, 2], 2, 'same'), tfT([2, 8, 10, 2], 2, 'same'), [null, 8, 10, 2]),
  tfRow('channels_first, same, strides 2', [toFirst(x), k], [[null, 3, 4, 5], ks], (a, b) => K.conv2d_transpose(a, b, [null, 2, 8, 10], 2, 'same', 'channels_first'),
    (a, b) => toFirst(tfT([2, 8, 10, 2], 2, 'same')(toLast(a), b)), [null, 2, 8, 10]),
  tfRow('valid, dilation 2 (zero-dilated kernel)', [x, k], [xs, ks], (a, b) => K.conv2d_transpose(a, b, [2, 8, 9, 2], 1, 'valid', null, 2),
    (a, b) => tfT([2, 8, 9, 2], 1, 'valid')(a, dilateKernel(b, [2, 2])), [null, 8, 9, 2]),
  tfRow('same, strides 2, dilation (2, 1) (zero-dilated kernel)', [x, k], [xs, ks], (a, b) => K.conv2d_transpose(a, b, [2, 8, 10, 2], 2, 'same', null, [2, 1]),
    (a, b) => tfT([2, 8, 10, 2], 2, 'same')(a, dilateKernel(b, [2, 1])), [null, 8, 10, 2]),
]);

// deconv2d's kernel is (kh, kw, in_channels, out_channels): TensorFlow's with the last two axes swapped.
const kd = permute(k, [0, 1, 3, 2]);
opTable('K.deconv2d (Keras 1)', [
  tfRow("strides 2, border_mode 'same', dim_ordering 'tf'", [x, kd], [xs, [3, 3, 3, 2]], (a, b) => K.deconv2d(a, b, [2, 8, 10, 2], [2, 2], 'same', 'tf'),
    (a, b) => tfT([2, 8, 10, 2], 2, 'same')(a, permute(b, [0, 1, 3, 2])), [null, 8, 10, 2]),
  tfRow("dim_ordering 'th', valid, with image_shape and filter_shape hints", [toFirst(x), kd], [[null, 3, 4, 5], [3, 3, 3, 2]],
    (a, b) => K.deconv2d(a, b, [null, 2, 6, 7], [1, 1], 'valid', 'th', [null, 3, 4, 5], [3, 3, 3, 2]),
    (a, b) => toFirst(tfT([2, 6, 7, 2], 1, 'valid')(toLast(a), permute(b, [0, 1, 3, 2]))), [null, 2, 6, 7]),
  tfRow('options object with border_mode', [x, kd], [xs, [3, 3, 3, 2]], (a, b) => K.deconv2d(a, b, { output_shape: [2, 7, 9, 2], strides: [2, 2], border_mode: 'same' }),
    (a, b) => tfT([2, 7, 9, 2], 2, 'same')(a, permute(b, [0, 1, 3, 2])), [null, 7, 9, 2]),
]);

describe('K.conv2d_transpose is the adjoint of K.conv2d', () => {
  for (const [pad, s, dil, out] of [['valid', 2, 1, [1, 9, 11, 2]], ['same', 2, 1, [1, 8, 9, 2]], ['same', 1, 2, [1, 4, 5, 2]], ['valid', 1, [2, 1], [1, 8, 7, 2]]] as const) {
    it(`<conv2d(a, w), b> = <a, conv2d_transpose(b, w)> (${pad}, strides ${s}, dilation ${JSON.stringify(dil)})`, () => {
      const a = K.placeholder(out);
      // TensorFlow's transpose kernel (kh, kw, out, in) is the forward conv's (kh, kw, in, out).
      const y = K.conv2d(a, K.constant(k), s, pad, null, dil);
      const b = rand(K.int_shape(y) as number[], 21);
      const bt = K.placeholder(b.shape);
      const z = K.conv2d_transpose(bt, K.constant(k), [...out], s, pad, null, dil);
      const av = rand([...out], 22);
      const [yv, zv] = K.function([a, bt], [y, z])([av, b]);
      let lhs = 0;
      let rhs = 0;
      for (let i = 0; i < b.size; i++) lhs += yv!.data[i]! * b.data[i]!;
      for (let i = 0; i < av.size; i++) rhs += av.data[i]! * zv!.data[i]!;
      expect(Math.abs(lhs - rhs)).to.be.below(1e-4 * (1 + Math.abs(lhs)));
    });
  }
});

// separable_conv2d: x (2, 6, 7, 3), depthwise (3, 3, 3, 2), pointwise (1, 1, 6, 4).
const sx = rand([2, 6, 7, 3], 31);
const dk = rand([3, 3, 3, 2], 32);
const pk = rand([1, 1, 6, 4], 33);
const sxs: Dims = [null, 6, 7, 3];
const tfSep = (s: number, pad: 'valid' | 'same', dil = 1) => (a: NDArray, b: NDArray, c: NDArray) =>
  viaTf((p, q, r) => tf.separableConv2d(T4(p), T4(q), T4(r), s, pad, dil), a, b, c);

opTable('K.separable_conv2d', [
  tfRow('valid', [sx, dk, pk], [sxs, [3, 3, 3, 2], [1, 1, 6, 4]], (a, b, c) => K.separable_conv2d(a, b, c), tfSep(1, 'valid'), [null, 4, 5, 4]),
  tfRow('same, strides 2', [sx, dk, pk], [sxs, [3, 3, 3, 2], [1, 1, 6, 4]], (a, b, c) => K.separable_conv2d(a, b, c, [2, 2], 'same'), tfSep(2, 'same'), [null, 3, 4, 4]),
  tfRow('same, dilation 2', [sx, dk, pk], [sxs, [3, 3, 3, 2], [1, 1, 6, 4]], (a, b, c) => K.separable_conv2d(a, b, c, 1, 'same', null, 2), tfSep(1, 'same', 2), [null, 6, 7, 4]),
  tfRow('channels_first, valid, strides 2', [toFirst(sx), dk, pk], [[null, 3, 6, 7], [3, 3, 3, 2], [1, 1, 6, 4]],
    (a, b, c) => K.separable_conv2d(a, b, c, { strides: 2, data_format: 'channels_first' }), (a, b, c) => toFirst(tfSep(2, 'valid')(toLast(a), b, c)), [null, 4, 2, 3]),
  tfRow('depth multiplier 1, strides 2 with dilation 2 (zero-dilated kernel)', [sx, rand([2, 2, 3, 1], 34), rand([1, 1, 3, 2], 35)], [sxs, [2, 2, 3, 1], [1, 1, 3, 2]],
    (a, b, c) => K.separable_conv2d(a, b, c, 2, 'same', null, 2), (a, b, c) => tfSep(2, 'same')(a, dilateKernel(b, [2, 2]), c), [null, 3, 4, 2]),
  tfRow("Keras 1 border_mode and dim_ordering 'th'", [toFirst(sx), dk, pk], [[null, 3, 6, 7], [3, 3, 3, 2], [1, 1, 6, 4]],
    (a, b, c) => K.separable_conv2d(a, b, c, { border_mode: 'same', dim_ordering: 'th' }), (a, b, c) => toFirst(tfSep(1, 'same')(toLast(a), b, c)), [null, 4, 6, 7]),
]);
