// Keras 2.3.1 layers' `call` ported line by line (BatchNormalization on channels_first data,
// LocallyConnected1D, DepthwiseConv2D, Conv2DTranspose with a batch from K.shape, UpSampling2D
// bilinear, ReLU, Softmax), checked against numbers computed by hand or by TensorFlow.js.
import { expect } from 'chai';
import * as tf from '@tensorflow/tfjs';
import { backend as K, NDArray, type Tensor } from '../../src/index.js';
import type { Update } from '../../src/api/function.js';
import { expectClose } from '../helpers/assert.js';

type T = Tensor;
before(() => tf.setBackend('cpu'));

const toTf = (a: NDArray) => tf.tensor(Array.from(a.data), [...a.shape], 'float32');
const fromTf = (t: tf.Tensor) => new NDArray(Array.from(t.dataSync()), t.shape, 'float64');

/** Keras 2.3.1 BatchNormalization (center, scale), its call() as written, updates collected as add_update does. */
class BatchNormalization {
  readonly updates: Update[] = [];
  gamma: T; beta: T; moving_mean: T; moving_variance: T;
  constructor(readonly axis: number, channels: number, readonly momentum = 0.99, readonly epsilon = 1e-3) {
    this.gamma = K.variable(Array.from({ length: channels }, (_, i) => 1 + 0.5 * i), null, 'gamma');
    this.beta = K.variable(Array.from({ length: channels }, (_, i) => 0.1 * i - 0.1), null, 'beta');
    this.moving_mean = K.zeros([channels], null, 'moving_mean');
    this.moving_variance = K.ones([channels], null, 'moving_variance');
  }
  call(inputs: T, training?: 0 | 1): T {
    const input_shape = K.int_shape(inputs)!; // null only for unknown rank
    const ndim = input_shape.length;
    const reduction_axes = Array.from({ length: ndim }, (_, i) => i).filter((i) => i !== (this.axis + ndim) % ndim);
    const broadcast_shape = new Array<number>(ndim).fill(1);
    broadcast_shape[this.axis] = input_shape[this.axis] as number;
    const needs_broadcasting = JSON.stringify(reduction_axes) !== JSON.stringify(Array.from({ length: ndim - 1 }, (_, i) => i));
    const normalize_inference = (): T => {
      if (needs_broadcasting) {
        const [m, v, b, g] = [this.moving_mean, this.moving_variance, this.beta, this.gamma].map((p) => K.reshape(p, broadcast_shape));
        return K.batch_normalization(inputs, m!, v!, b, g, { axis: this.axis, epsilon: this.epsilon });
      }
      return K.batch_normalization(inputs, this.moving_mean, this.moving_variance, this.beta, this.gamma, { axis: this.axis, epsilon: this.epsilon });
    };
    if (training === 0) return normalize_inference();
    const [normed_training, mean, v0] = K.normalize_batch_in_training(inputs, this.gamma, this.beta, reduction_axes, { epsilon: this.epsilon });
    let variance = v0;
    // sample_size = K.prod([K.shape(inputs)[axis] for axis in reduction_axes])
    let sample_size = K.prod(reduction_axes.map((a) => K.shape(inputs).get(a)));
    sample_size = K.cast(sample_size, K.dtype(inputs));
    variance = K.multiply(variance, K.divide(sample_size, K.subtract(sample_size, 1.0 + this.epsilon)));
    this.updates.push(K.moving_average_update(this.moving_mean, mean, this.momentum), K.moving_average_update(this.moving_variance, variance, this.momentum));
    return K.in_train_phase(normed_training, normalize_inference, training);
  }
}

describe('Keras 2.3.1 layers, call() ported', () => {
  // channels_first (2, 3, 2, 2) with unknown batch
  const xv = new NDArray(Array.from({ length: 24 }, (_, i) => Math.sin(1.3 * i) * 2 + (i % 3)), [2, 3, 2, 2], 'float32');
  const stats = (c: number) => {
    const vals: number[] = [];
    for (let n = 0; n < 2; n++) for (let s = 0; s < 4; s++) vals.push(Number(xv.data[(n * 3 + c) * 4 + s]));
    const mean = vals.reduce((a, b) => a + b) / vals.length;
    const varPop = vals.reduce((a, b) => a + (b - mean) ** 2, 0) / vals.length;
    return { mean, varPop };
  };
  const gamma = [1, 1.5, 2];
  const beta = [-0.1, 0, 0.1];

  it('BatchNormalization(axis=1), training: batch statistics, K.prod of K.shape entries, moving averages with the unbiased variance', () => {
    const bn = new BatchNormalization(1, 3);
    const x = K.placeholder([null, 3, 2, 2]);
    const y = bn.call(x);
    const f = K.function([x, K.learning_phase()], [y], bn.updates);
    const out = f([xv, 1])[0]!;
    const want = new Float64Array(24);
    for (let i = 0; i < 24; i++) {
      const c = Math.floor(i / 4) % 3;
      const { mean, varPop } = stats(c);
      want[i] = (Number(xv.data[i]) - mean) / Math.sqrt(varPop + 1e-3) * gamma[c]! + beta[c]!;
    }
    expectClose(out, new NDArray(want, [2, 3, 2, 2], 'float64'), { atol: 1e-5, rtol: 1e-5 });
    expectClose(K.get_value(bn.moving_mean), [0, 1, 2].map((c) => 0.01 * stats(c).mean), { atol: 1e-6, rtol: 1e-5 });
    expectClose(K.get_value(bn.moving_variance), [0, 1, 2].map((c) => 0.99 + 0.01 * stats(c).varPop * 8 / (8 - 1.001)), { atol: 1e-6, rtol: 1e-5 });
  });

  it('BatchNormalization(axis=1), inference: the moving statistics, broadcast as Keras does (batch_normalization with axis)', () => {
    const bn = new BatchNormalization(1, 3);
    K.set_value(bn.moving_mean, [0.5, -1, 2]);
    K.set_value(bn.moving_variance, [4, 0.25, 1]);
    const x = K.placeholder([null, 3, 2, 2]);
    const out = K.function([x], [bn.call(x, 0)])([xv])[0]!;
    const mm = [0.5, -1, 2];
    const mv = [4, 0.25, 1];
    const want = Array.from(xv.data, (v, i) => { const c = Math.floor(i / 4) % 3; return (Number(v) - mm[c]!) / Math.sqrt(mv[c]! + 1e-3) * gamma[c]! + beta[c]!; });
    expectClose(out, new NDArray(want, [2, 3, 2, 2], 'float64'), { atol: 1e-5, rtol: 1e-5 });
  });

  it('LocallyConnected1D: K.local_conv1d + K.bias_add + relu, against the definition', () => {
    const inp = new NDArray(Array.from({ length: 2 * 5 * 2 }, (_, i) => Math.cos(i)), [2, 5, 2], 'float32');
    const kern = new NDArray(Array.from({ length: 2 * 4 * 3 }, (_, i) => Math.sin(i * 0.3)), [2, 4, 3], 'float32'); // kernel 2, stride 3: 2 outputs
    const bias = new NDArray([0.1, -0.2, 0.3, 0, 0.5, -0.5], [2, 3], 'float32');
    const x = K.placeholder([null, 5, 2]);
    let output = K.local_conv1d(x, K.variable(kern), [2], [3]);
    output = K.bias_add(output, K.variable(bias));
    output = K.relu(output);
    const got = K.function([x], [output])([inp])[0]!;
    const want: number[] = [];
    for (let n = 0; n < 2; n++) for (let o = 0; o < 2; o++) for (let f = 0; f < 3; f++) {
      let acc = Number(bias.data[o * 3 + f]);
      for (let k = 0; k < 2; k++) for (let c = 0; c < 2; c++) acc += Number(inp.data[(n * 5 + o * 3 + k) * 2 + c]) * Number(kern.data[(o * 4 + k * 2 + c) * 3 + f]);
      want.push(Math.max(acc, 0));
    }
    expectClose(got, new NDArray(want, [2, 2, 3], 'float64'), { atol: 1e-5, rtol: 1e-5 });
  });

  it('DepthwiseConv2D: K.depthwise_conv2d(inputs, kernel, strides=, padding=, dilation_rate=, data_format=) against TensorFlow.js', () => {
    const inp = new NDArray(Array.from({ length: 2 * 5 * 5 * 2 }, (_, i) => Math.sin(i * 0.7)), [2, 5, 5, 2], 'float32');
    const kern = new NDArray(Array.from({ length: 3 * 3 * 2 * 2 }, (_, i) => Math.cos(i * 0.4)), [3, 3, 2, 2], 'float32');
    const x = K.placeholder([null, 5, 5, 2]);
    const y = K.depthwise_conv2d(x, K.variable(kern), { strides: [2, 2], padding: 'same', dilation_rate: [1, 1], data_format: 'channels_last' });
    const got = K.function([x], [y])([inp])[0]!;
    const want = fromTf(tf.depthwiseConv2d(toTf(inp) as tf.Tensor4D, toTf(kern) as tf.Tensor4D, 2, 'same'));
    expectClose(got, want, { atol: 2e-5, rtol: 1e-4 });
  });

  it('Conv2DTranspose (2.3, dilation_rate): output_shape (K.shape(inputs)[0], h, w, filters) against TensorFlow.js', () => {
    const inp = new NDArray(Array.from({ length: 2 * 3 * 3 * 2 }, (_, i) => Math.sin(i * 0.9)), [2, 3, 3, 2], 'float32');
    const kern = new NDArray(Array.from({ length: 3 * 3 * 4 * 2 }, (_, i) => Math.cos(i * 0.2)), [3, 3, 4, 2], 'float32');
    const x = K.placeholder([null, 3, 3, 2]);
    const batch_size = K.shape(x).get(0);
    // deconv_length(3, stride 2, kernel 3, 'same') = 3 * 2
    const output_shape = [batch_size, 6, 6, 4];
    const y = K.conv2d_transpose(x, K.variable(kern), output_shape, [2, 2], 'same', 'channels_last', [1, 1]);
    const got = K.function([x], [y])([inp])[0]!;
    const want = fromTf(tf.conv2dTranspose(toTf(inp) as tf.Tensor4D, toTf(kern) as tf.Tensor4D, [2, 6, 6, 4], 2, 'same'));
    expectClose(got, want, { atol: 2e-5, rtol: 1e-4 });
  });

  it('UpSampling2D(interpolation="bilinear") against TensorFlow.js resizeBilinear', () => {
    const inp = new NDArray(Array.from({ length: 1 * 3 * 2 * 2 }, (_, i) => i * i * 0.1), [1, 3, 2, 2], 'float32');
    const x = K.placeholder([null, 3, 2, 2]);
    const y = K.resize_images(x, 2, 2, 'channels_last', { interpolation: 'bilinear' });
    const got = K.function([x], [y])([inp])[0]!;
    expectClose(got, fromTf(tf.image.resizeBilinear(toTf(inp) as tf.Tensor4D, [6, 4])), { atol: 1e-5, rtol: 1e-5 });
  });

  it('ReLU(max_value=6, negative_slope=0.1, threshold=0.5) and Softmax(axis=1)', () => {
    const v = [[-2, 0.2, 0.5, 1, 7], [3, -0.5, 0.6, 10, -10]];
    const x = K.placeholder([null, 5]);
    const [r, s] = K.function([x], [K.relu(x, { alpha: 0.1, max_value: 6, threshold: 0.5 }), K.softmax(K.reshape(x, [-1, 5, 1]), 1)])([v]);
    const relu = (e: number) => (e > 0.5 ? Math.min(e, 6) : 0) - (e <= 0.5 ? 0.1 * (0.5 - e) : 0);
    expectClose(r!, v.map((row) => row.map(relu)), { atol: 1e-6 });
    const sm = v.map((row) => { const m = Math.max(...row); const e = row.map((q) => Math.exp(q - m)); const t = e.reduce((a, b) => a + b); return e.map((q) => [q / t]); });
    expectClose(s!, sm, { atol: 1e-6 });
    expect(K.int_shape(K.softmax(K.reshape(x, [-1, 5, 1]), 1))).to.deep.equal([null, 5, 1]);
  });

  /** Keras 2.3.1 Dropout.call with _get_noise_shape (entries from K.shape(inputs)), and SpatialDropout1D/2D's. */
  const dropoutCall = (inputs: T, rate: number, noise_shape: (number | null)[] | null, spatial: 0 | 1 | 2, seed: number): T => {
    let ns: (number | T)[] | null = null;
    const symbolic_shape = K.shape(inputs);
    if (spatial === 1) ns = [symbolic_shape.get(0), 1, symbolic_shape.get(2)];
    else if (spatial === 2) ns = [symbolic_shape.get(0), 1, 1, symbolic_shape.get(3)];
    else if (noise_shape !== null) ns = noise_shape.map((d, axis) => (d === null ? symbolic_shape.get(axis) : d));
    const dropped_inputs = () => K.dropout(inputs, rate, ns, seed);
    return K.in_train_phase(dropped_inputs, inputs, 1);
  };

  it('Dropout(0.5, noise_shape=(None, 1, None)): one draw per (sample, channel), shared along time; survivors scaled by 2', () => {
    const x = K.placeholder([null, null, 4]);
    const y = dropoutCall(x, 0.5, [null, 1, null], 0, 7);
    const xv = new NDArray(Array.from({ length: 5 * 6 * 4 }, (_, i) => 1 + (i % 7)), [5, 6, 4], 'float32');
    const out = K.function([x], [y])([xv])[0]!;
    let kept = 0;
    for (let n = 0; n < 5; n++) for (let c = 0; c < 4; c++) {
      const ratios = Array.from({ length: 6 }, (_, t) => Number(out.data[(n * 6 + t) * 4 + c]) / Number(xv.data[(n * 6 + t) * 4 + c]));
      expect(new Set(ratios).size, `sample ${n} channel ${c}`).to.equal(1);
      expect([0, 2]).to.include(ratios[0]);
      if (ratios[0] === 2) kept++;
    }
    expect(kept).to.be.within(1, 19); // 20 draws at p = 0.5: neither none nor all kept
  });

  it('SpatialDropout2D (channels_last): whole feature maps dropped; with the batch and size unknown', () => {
    const x = K.placeholder([null, null, null, 3]);
    const y = dropoutCall(x, 0.3, null, 2, 11);
    expect(K.int_shape(y)).to.deep.equal([null, null, null, 3]);
    const xv = new NDArray(Array.from({ length: 4 * 3 * 2 * 3 }, (_, i) => 0.5 + i), [4, 3, 2, 3], 'float32');
    const out = K.function([x], [y])([xv])[0]!;
    for (let n = 0; n < 4; n++) for (let c = 0; c < 3; c++) {
      const r = new Set<number>();
      for (let s = 0; s < 6; s++) r.add(Math.round(Number(out.data[(n * 6 + s) * 3 + c]) / Number(xv.data[(n * 6 + s) * 3 + c]) * 1e5) / 1e5);
      expect(r.size).to.equal(1);
      expect([0, Math.round(1e5 / 0.7) / 1e5]).to.include([...r][0]);
    }
  });

  it('SpatialDropout1D in the test phase is the identity', () => {
    const x = K.placeholder([null, null, 2]);
    const sd = K.in_train_phase(() => K.dropout(x, 0.5, [K.shape(x).get(0), 1, K.shape(x).get(2)]), x);
    expectClose(K.function([x, K.learning_phase()], [sd])([[[[1, 2], [3, 4]]], 0])[0]!, [[[1, 2], [3, 4]]]);
  });
});

