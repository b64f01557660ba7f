// Keras 2.3's extra convolutions: depthwise_conv2d, separable_conv1d and conv3d_transpose against
// TensorFlow.js; local_conv1d / local_conv2d against loops written from their definition
// (unshared weights). Values on every target, gradients by verify_grad.
import { expect } from 'chai';
import { backend as K, ShapeError, ValueError } from '../../src/index.js';
import { NDArray } from '../../src/ir/ndarray.js';
import { opTable } from '../helpers/table.js';
import { gradTable } from '../helpers/gradtable.js';
import { rand, tf, tfReady, tfRow, toFirst, toLast, viaTf, type Dims } from './conv-ref.js';

before(() => tfReady());

const T4 = (t: tf.Tensor) => t as tf.Tensor4D;
const T5 = (t: tf.Tensor) => t as tf.Tensor5D;
const T3 = (t: tf.Tensor) => t as tf.Tensor3D;

// depthwise_conv2d: x (2, 5, 6, 3), kernel (3, 2, 3, 2): 3 channels, multiplier 2.
const xd = rand([2, 5, 6, 3], 41);
const kd = rand([3, 2, 3, 2], 42);
const xds: Dims = [null, 5, 6, 3];
const tfDepth = (s: number, pad: 'valid' | 'same', dil: [number, number] = [1, 1]) => (x: NDArray, k: NDArray) =>
  viaTf((a, b) => tf.depthwiseConv2d(T4(a), T4(b), s, pad, 'NHWC', dil), x, k);

opTable('K.depthwise_conv2d', [
  tfRow('valid', [xd, kd], [xds, [3, 2, 3, 2]], (x, k) => K.depthwise_conv2d(x, k), tfDepth(1, 'valid'), [null, 3, 5, 6]),
  tfRow('same, strides 2', [xd, kd], [xds, [3, 2, 3, 2]], (x, k) => K.depthwise_conv2d(x, k, [2, 2], 'same'), tfDepth(2, 'same'), [null, 3, 3, 6]),
  tfRow('same, dilation 2 (options object)', [xd, kd], [xds, [3, 2, 3, 2]], (x, k) => K.depthwise_conv2d(x, k, { padding: 'same', dilation_rate: 2 }), tfDepth(1, 'same', [2, 2]), [null, 5, 6, 6]),
  tfRow('channels_first', [toFirst(xd), kd], [[null, 3, 5, 6], [3, 2, 3, 2]], (x, k) => K.depthwise_conv2d(x, k, 1, 'valid', 'channels_first'),
    (x, k) => toFirst(tfDepth(1, 'valid')(toLast(x), k)), [null, 6, 3, 5]),
]);

// separable_conv1d: x (2, 7, 3), depthwise (3, 3, 2), pointwise (1, 6, 4); TensorFlow.js' separableConv2d on a unit row.
const xs1 = rand([2, 7, 3], 43);
const dk1 = rand([3, 3, 2], 44);
const pk1 = rand([1, 6, 4], 45);
const sep1 = (s: number, pad: 'valid' | 'same', dil = 1, leftPad = 0) => (x: NDArray, d: NDArray, p: NDArray) => viaTf((a, b, c) => {
  const a2 = tf.expandDims(leftPad > 0 ? tf.pad(a, [[0, 0], [leftPad, 0], [0, 0]]) : a, 1) as tf.Tensor4D;
  const y = tf.separableConv2d(a2, tf.expandDims(b, 0) as tf.Tensor4D, tf.expandDims(c, 0) as tf.Tensor4D, [1, s], pad, [1, dil]);
  return tf.squeeze(y, [1]);
}, x, d, p);
const s1Shapes: Dims[] = [[null, 7, 3], [3, 3, 2], [1, 6, 4]];
opTable('K.separable_conv1d', [
  { ...tfRow('valid', [xs1, dk1, pk1], s1Shapes, (x, d, p) => K.separable_conv1d(x, d, p), sep1(1, 'valid'), [null, 5, 4]) },
  tfRow('same, strides 2', [xs1, dk1, pk1], s1Shapes, (x, d, p) => K.separable_conv1d(x, d, p, 2, 'same'), sep1(2, 'same'), [null, 4, 4]),
  tfRow('valid, dilation 2', [xs1, dk1, pk1], s1Shapes, (x, d, p) => K.separable_conv1d(x, d, p, { dilation_rate: 2 }), sep1(1, 'valid', 2), [null, 3, 4]),
  tfRow('causal, dilation 2: 4 zeros on the left', [xs1, dk1, pk1], s1Shapes, (x, d, p) => K.separable_conv1d(x, d, p, 1, 'causal', null, 2), sep1(1, 'valid', 2, 4), [null, 7, 4]),
  tfRow('channels_first', [toFirst(xs1), dk1, pk1], [[null, 3, 7], [3, 3, 2], [1, 6, 4]], (x, d, p) => K.separable_conv1d(x, d, p, 1, 'valid', 'channels_first'),
    (x, d, p) => toFirst(sep1(1, 'valid')(toLast(x), d, p)), [null, 4, 5]),
]);

// conv3d_transpose: x (2, 2, 3, 2, 3), kernel (2, 2, 2, 2, 3) = (d, h, w, out, in).
const x3 = rand([2, 2, 3, 2, 3], 46);
const k3 = rand([2, 2, 2, 2, 3], 47);
const tf3 = (out: [number, number, number, number, number], s: number, pad: 'valid' | 'same') => (x: NDArray, k: NDArray) =>
  viaTf((a, b) => tf.conv3dTranspose(T5(a), T5(b), out, s, pad), x, k);
opTable('K.conv3d_transpose', [
  tfRow('valid, stride 1', [x3, k3], [[null, 2, 3, 2, 3], [2, 2, 2, 2, 3]], (x, k) => K.conv3d_transpose(x, k, [2, 3, 4, 3, 2]), tf3([2, 3, 4, 3, 2], 1, 'valid'), [null, 3, 4, 3, 2]),
  tfRow('same, strides 2', [x3, k3], [[null, 2, 3, 2, 3], [2, 2, 2, 2, 3]], (x, k) => K.conv3d_transpose(x, k, [null, 4, 6, 4, 2], [2, 2, 2], 'same'), tf3([2, 4, 6, 4, 2], 2, 'same'), [null, 4, 6, 4, 2]),
  tfRow('channels_first, valid, strides 2 (options object)', [toFirst(x3), k3], [[null, 3, 2, 3, 2], [2, 2, 2, 2, 3]],
    (x, k) => K.conv3d_transpose(x, k, { output_shape: [2, 2, 4, 6, 4], strides: 2, data_format: 'channels_first' }),
    (x, k) => toFirst(tf3([2, 4, 6, 4, 2], 2, 'valid')(toLast(x), k)), [null, 2, 4, 6, 4]),
]);

/** local_conv1d from its definition: y[b, i, f] = sum_{k, c} x[b, i*s + k, c] * W[i, k*C + c, f] (channels_last). */
function local1(x: NDArray, w: NDArray, ks: number, s: number, first: boolean): NDArray {
  const [B, A1, A2] = x.shape as [number, number, number];
  const [L, C] = first ? [A2, A1] : [A1, A2];
  const [O, , F] = w.shape as [number, number, number];
  expect(O).to.equal(Math.floor((L - ks) / s) + 1);
  const at = (b: number, t: number, c: number) => x.data[first ? (b * C + c) * L + t : (b * L + t) * C + c]!;
  const out = new Float64Array(B * O * F);
  for (let b = 0; b < B; b++) for (let i = 0; i < O; i++) for (let f = 0; f < F; f++) {
    let acc = 0;
    for (let k = 0; k < ks; k++) for (let c = 0; c < C; c++) {
      const feat = first ? c * ks + k : k * C + c; // a patch flattens in its layout's order
      acc += at(b, i * s + k, c) * w.data[(i * ks * C + feat) * F + f]!;
    }
    out[(b * O + i) * F + f] = acc;
  }
  return new NDArray(out, [B, O, F], 'float64');
}

/** local_conv2d from its definition (channels_last patches flatten (kr, kc, C); channels_first (C, kr, kc)). */
function local2(x: NDArray, w: NDArray, [kr, kc]: [number, number], [sr, sc]: [number, number], [or, oc]: [number, number], first: boolean): NDArray {
  const [B] = x.shape as [number];
  const C = first ? x.shape[1]! : x.shape[3]!;
  const [H, W] = first ? [x.shape[2]!, x.shape[3]!] : [x.shape[1]!, x.shape[2]!];
  const F = w.shape[2]!;
  const at = (b: number, r: number, q: number, c: number) => x.data[first ? ((b * C + c) * H + r) * W + q : ((b * H + r) * W + q) * C + c]!;
  const out = new Float64Array(B * or * oc * F);
  for (let b = 0; b < B; b++) for (let i = 0; i < or; i++) for (let j = 0; j < oc; j++) for (let f = 0; f < F; f++) {
    let acc = 0;
    for (let p = 0; p < kr; p++) for (let q = 0; q < kc; q++) for (let c = 0; c < C; c++) {
      const feat = first ? (c * kr + p) * kc + q : (p * kc + q) * C + c;
      acc += at(b, i * sr + p, j * sc + q, c) * w.data[((i * oc + j) * kr * kc * C + feat) * F + f]!;
    }
    out[first ? ((b * F + f) * or + i) * oc + j : ((b * or + i) * oc + j) * F + f] = acc;
  }
  return new NDArray(out, first ? [B, F, or, oc] : [B, or, oc, F], 'float64');
}

const xl = rand([2, 7, 3], 48);
const wl = rand([3, 6, 4], 49); // kernel_size 2, strides 2: 3 outputs, 2 * 3 features
const xl2 = rand([2, 4, 5, 2], 50);
const wl2 = rand([4, 8, 3], 51); // kernel (2, 2), strides (2, 3): output (2, 2); 2 * 2 * 2 features
opTable('K.local_conv1d and K.local_conv2d', [
  { name: 'local_conv1d, kernel 2, strides 2', inputs: [xl, wl], shapes: [[null, 7, 3], [3, 6, 4]], build: (x, w) => K.local_conv1d(x, w, [2], [2]), expected: (x, w) => local1(x, w, 2, 2, false), staticShape: [null, 3, 4] },
  { name: 'local_conv1d, channels_first', inputs: [toFirst(xl), wl], build: (x, w) => K.local_conv1d(x, w, 2, 2, 'channels_first'), expected: (x, w) => local1(x, w, 2, 2, true), staticShape: [2, 3, 4] },
  { name: 'local_conv2d, kernel (2, 2), strides (2, 3)', inputs: [xl2, wl2], shapes: [[null, 4, 5, 2], [4, 8, 3]], build: (x, w) => K.local_conv2d(x, w, [2, 2], [2, 3], [2, 2]), expected: (x, w) => local2(x, w, [2, 2], [2, 3], [2, 2], false), staticShape: [null, 2, 2, 3] },
  { name: 'local_conv2d, channels_first (options object)', inputs: [toFirst(xl2), wl2], build: (x, w) => K.local_conv2d(x, w, [2, 2], [2, 3], [2, 2], { data_format: 'channels_first' }), expected: (x, w) => local2(x, w, [2, 2], [2, 3], [2, 2], true), staticShape: [2, 3, 2, 2] },
]);

gradTable('gradients: Keras 2.3 convolutions', [
  { name: 'depthwise_conv2d same, strides 2', inputs: [rand([1, 4, 5, 2], 52), rand([2, 2, 2, 2], 53)], build: (x, k) => K.depthwise_conv2d(x, k, 2, 'same') },
  { name: 'separable_conv1d causal, dilation 2', inputs: [rand([1, 6, 2], 54), rand([2, 2, 1], 55), rand([1, 2, 3], 56)], build: (x, d, p) => K.separable_conv1d(x, d, p, 1, 'causal', null, 2) },
  { name: 'conv3d_transpose same, strides 2', inputs: [rand([1, 2, 2, 1, 2], 57), rand([2, 2, 2, 1, 2], 58)], build: (x, k) => K.conv3d_transpose(x, k, [1, 3, 4, 2, 1], 2, 'same') },
  { name: 'local_conv1d', inputs: [rand([2, 5, 2], 59), rand([2, 4, 3], 60)], build: (x, w) => K.local_conv1d(x, w, 2, 3) },
  { name: 'local_conv2d channels_first', inputs: [rand([1, 2, 3, 3], 61), rand([4, 8, 2], 62)], build: (x, w) => K.local_conv2d(x, w, 2, 1, [2, 2], 'channels_first') },
]);

describe('Keras 2.3 convolutions: errors name the function, the argument and both shapes', () => {
  it('depthwise_conv2d: channels disagree', () => {
    expect(() => K.depthwise_conv2d(K.placeholder([null, 5, 5, 3]), K.placeholder([2, 2, 4, 1]))).to.throw(ShapeError, /K\.depthwise_conv2d: depthwise_kernel shape \(2, 2, 4, 1\) and x shape \(None, 5, 5, 3\) do not match/);
  });
  it('separable_conv1d: wrong ranks and unknown options', () => {
    expect(() => K.separable_conv1d(K.placeholder([null, 5, 5, 3]), K.placeholder([2, 3, 1]), K.placeholder([1, 3, 2]))).to.throw(ShapeError, /K\.separable_conv1d: x must have rank 3/);
    expect(() => K.separable_conv1d(K.placeholder([null, 5, 3]), K.placeholder([2, 3, 1]), K.placeholder([1, 3, 2]), { stride: 1, foo: 2 } as never)).to.throw(ValueError, /unknown option "(stride|foo)"/);
  });
  it('conv3d_transpose: output_shape must have 5 entries and fit', () => {
    const x = K.placeholder([null, 2, 3, 2, 3]);
    const k = K.placeholder([2, 2, 2, 2, 3]);
    expect(() => K.conv3d_transpose(x, k, [2, 3, 4, 2])).to.throw(ValueError, /K\.conv3d_transpose: output_shape must be a list of 5 dims/);
    expect(() => K.conv3d_transpose(x, k, [2, 9, 4, 3, 2])).to.throw(ShapeError, /output_shape \(2, 9, 4, 3, 2\) does not fit x/);
    expect(() => K.conv3d_transpose(x, k)).to.throw(ValueError, /K\.conv3d_transpose: output_shape is required/);
  });
  it('local_conv1d / local_conv2d: the kernel must match the positions and patch size', () => {
    expect(() => K.local_conv1d(K.placeholder([null, 7, 3]), K.placeholder([4, 6, 4]), 2, 2)).to.throw(ShapeError, /K\.local_conv1d: kernel shape \(4, 6, 4\) has 4 output positions on axis 0, but x, kernel_size and strides give 3/);
    expect(() => K.local_conv1d(K.placeholder([null, 7, 3]), K.placeholder([3, 5, 4]), 2, 2)).to.throw(ShapeError, /has 5 on axis 1, but kernel_size and x's 3 channels give 2 \* 3 = 6/);
    expect(() => K.local_conv2d(K.placeholder([null, 4, 5, 2]), K.placeholder([4, 8, 3]), 2, 2, [3, 2])).to.throw(ShapeError, /K\.local_conv2d: output_shape \[3,2\] needs 6 entries on axis 1/);
  });
});
