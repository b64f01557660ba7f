// verify_grad (SPEC §4) on every conv and pool op and K function form, first and second order,
// and gradients through unknown spatial dims (the sized ops' third-input form).
import { expect } from 'chai';
import { backend as K } from '../../src/index.js';
import { apply } from '../../src/ir/build.js';
import { NDArray } from '../../src/ir/ndarray.js';
import type { Node } from '../../src/ir/node.js';
import { topoSort } from '../../src/ir/graph.js';
import { gradTable } from '../helpers/gradtable.js';
import { expectClose } from '../helpers/assert.js';
import { rand } from '../api/conv-ref.js';

/** Distinct values (a shuffled multiple of 0.07), so max pooling has no ties near the finite-difference step. */
function distinct(shape: number[], seed: number): NDArray {
  const n = shape.reduce((p, d) => p * d, 1);
  const order = Array.from(rand([n], seed).data).map((v, i) => [v, i] as const).sort((a, b) => a[0] - b[0]);
  const out = new Float64Array(n);
  order.forEach(([, i], rank) => { out[i] = (rank - n / 2) * 0.07; });
  return new NDArray(out, shape, 'float64');
}

const win = (s: number[], pad: string, dil = s.map(() => 1)) => ({ strides: s, dilation: dil, padding: pad });

gradTable('gradients: convolutions', [
  { name: 'conv1d valid', inputs: [rand([2, 5, 2], 1), rand([2, 2, 3], 2)], build: (x, k) => K.conv1d(x, k) },
  { name: 'conv1d causal, strides 2, dilation 2', inputs: [rand([1, 7, 2], 3), rand([3, 2, 2], 4)], build: (x, k) => K.conv1d(x, k, 2, 'causal', null, 2) },
  { name: 'conv2d same, strides 2', inputs: [rand([1, 5, 4, 2], 5), rand([3, 2, 2, 2], 6)], build: (x, k) => K.conv2d(x, k, 2, 'same') },
  { name: 'conv2d channels_first, valid, dilation 2', inputs: [rand([1, 2, 5, 5], 7), rand([2, 2, 2, 1], 8)], build: (x, k) => K.conv2d(x, k, 1, 'valid', 'channels_first', 2) },
  { name: 'conv3d same, strides (2, 1, 2)', inputs: [rand([1, 3, 3, 4, 1], 9), rand([2, 2, 2, 1, 2], 10)], build: (x, k) => K.conv3d(x, k, [2, 1, 2], 'same') },
  { name: 'conv2d_transpose same, strides 2', inputs: [rand([1, 2, 3, 2], 11), rand([3, 3, 1, 2], 12)], build: (x, k) => K.conv2d_transpose(x, k, [1, 4, 5, 1], 2, 'same') },
  { name: 'conv2d_transpose valid, channels_first, dilation 2', inputs: [rand([1, 2, 2, 2], 13), rand([2, 2, 1, 2], 14)], build: (x, k) => K.conv2d_transpose(x, k, [1, 1, 4, 4], 1, 'valid', 'channels_first', 2) },
  { name: "deconv2d valid, strides 2, 'th'", inputs: [rand([1, 2, 2, 2], 15), rand([2, 2, 2, 1], 16)], build: (x, k) => K.deconv2d(x, k, [1, 1, 5, 5], [2, 2], 'valid', 'th') },
  { name: 'separable_conv2d same, strides 2', inputs: [rand([1, 4, 4, 2], 17), rand([2, 2, 2, 2], 18), rand([1, 1, 4, 2], 19)], build: (x, d, p) => K.separable_conv2d(x, d, p, 2, 'same') },
  { name: 'separable_conv2d valid, dilation 2, channels_first', inputs: [rand([1, 2, 5, 5], 20), rand([2, 2, 2, 1], 21), rand([1, 1, 2, 3], 22)], build: (x, d, p) => K.separable_conv2d(x, d, p, 1, 'valid', 'channels_first', 2) },
]);

gradTable('gradients: pooling', [
  { name: 'pool2d max same, pool 3, strides 2', inputs: [distinct([1, 5, 4, 2], 23)], build: (x) => K.pool2d(x, 3, 2, 'same') },
  { name: 'pool2d max valid, channels_first', inputs: [distinct([1, 2, 4, 5], 24)], build: (x) => K.pool2d(x, [2, 3], [2, 1], 'valid', 'channels_first') },
  { name: 'pool2d avg same (padding excluded), pool 3, strides 2', inputs: [rand([1, 5, 4, 2], 25)], build: (x) => K.pool2d(x, 3, 2, 'same', null, 'avg') },
  { name: 'pool3d max same, pool 2, strides 2', inputs: [distinct([1, 3, 4, 3, 1], 26)], build: (x) => K.pool3d(x, 2, 2, 'same') },
  { name: 'pool3d avg valid, pool (2, 1, 2)', inputs: [rand([1, 3, 2, 3, 2], 27)], build: (x) => K.pool3d(x, [2, 1, 2], 1, 'valid', null, 'avg') },
]);

const cA = { ...win([2, 1], 'same'), groups: 1 };
const gA = { ...win([1, 2], 'valid', [2, 1]), groups: 2 };
gradTable('gradients: the adjoint ops themselves (second-order building blocks)', [
  { name: 'conv with 2 groups of 4 channels (a batched matmul)', inputs: [rand([1, 2, 4, 8], 56), rand([1, 2, 4, 8], 57)], build: (x, w) => apply('conv', [x, w], { ...win([1, 2], 'same'), groups: 2 }) },
  { name: 'conv with 2 groups', inputs: [rand([1, 5, 6, 4], 28), rand([2, 2, 2, 4], 29)], build: (x, w) => apply('conv', [x, w], gA) },
  { name: 'conv_transpose (size in attrs)', inputs: [rand([1, 3, 4, 2], 30), rand([3, 2, 3, 2], 31)], build: (d, w) => apply('conv_transpose', [d, w], { ...cA, size: [5, 4] }) },
  { name: 'conv_transpose (size from a third input)', inputs: [rand([1, 3, 4, 2], 32), rand([3, 2, 3, 2], 33), rand([1, 5, 4, 3], 34)], build: (d, w, x) => apply('conv_transpose', [d, w, x], { ...cA, size: null }) },
  { name: 'conv_kernel_grad (size in attrs)', inputs: [rand([1, 5, 4, 3], 35), rand([1, 3, 4, 2], 36)], build: (x, d) => apply('conv_kernel_grad', [x, d], { ...cA, size: [3, 2] }) },
  { name: 'conv_kernel_grad with 2 groups (size from a third input)', inputs: [rand([1, 5, 6, 4], 37), rand([1, 3, 3, 4], 38), rand([2, 2, 2, 4], 39)], build: (x, d, w) => apply('conv_kernel_grad', [x, d, w], { ...gA, size: null }) },
  { name: 'pool_grad max', inputs: [distinct([1, 4, 5, 2], 40), rand([1, 2, 3, 2], 41)], build: (x, d) => apply('pool_grad', [x, d], { window: [2, 2], ...win([2, 2], 'same'), mode: 'max' }) },
  { name: 'pool_grad avg', inputs: [rand([1, 4, 5, 2], 42), rand([1, 2, 3, 2], 43)], build: (x, d) => apply('pool_grad', [x, d], { window: [2, 2], ...win([2, 2], 'same'), mode: 'avg' }) },
  { name: 'pool_select', inputs: [distinct([1, 4, 5, 2], 44), rand([1, 4, 5, 2], 45)], build: (x, v) => apply('pool_select', [x, v], { window: [3, 2], ...win([1, 2], 'valid'), mode: 'max' }) },
]);

const sq = (t: Node) => K.sum(K.square(t));
// The conv rows' cost is of degree 4 in the inputs: its curvature times float32's 3e-4 step, plus
// float32 rounding of a cost in the hundreds, exceeds 1e-2 on some elements; float64 checks them.
const QUARTIC = 'degree-4 cost: float32 finite differences (step 3e-4) are too coarse for it';
gradTable('gradients of gradients', [
  {
    name: 'conv2d: |d/dx|^2 + |d/dk|^2 of |conv2d|^2',
    inputs: [rand([1, 4, 5, 2], 46), rand([2, 3, 2, 2], 47)],
    build: (x, k) => { const [gx, gk] = K.gradients(sq(K.conv2d(x, k, 2, 'same')), [x, k]); return K.add(sq(gx!), sq(gk!)); },
    float64Only: QUARTIC,
  },
  {
    name: 'conv2d_transpose: |d/dx|^2 + |d/dk|^2',
    inputs: [rand([1, 2, 3, 2], 48), rand([3, 3, 1, 2], 49)],
    build: (x, k) => { const [gx, gk] = K.gradients(sq(K.conv2d_transpose(x, k, [1, 4, 5, 1], 2, 'same')), [x, k]); return K.add(sq(gx!), sq(gk!)); },
    float64Only: QUARTIC,
  },
  { name: 'pool2d max: |d/dx|^2', inputs: [distinct([1, 4, 5, 2], 50)], build: (x) => sq(K.gradients(sq(K.pool2d(x, 2, 2, 'same')), [x])[0]!) },
  { name: 'pool2d avg: |d/dx|^2', inputs: [rand([1, 4, 5, 2], 51)], build: (x) => sq(K.gradients(sq(K.pool2d(x, 3, 2, 'same', null, 'avg')), [x])[0]!) },
]);

describe('gradients through unknown spatial dims', () => {
  it('conv2d and its second derivative match the static-shape graph', () => {
    const loss = (x: Node, k: Node) => {
      const [gx, gk] = K.gradients(sq(K.conv2d(x, k, 2, 'same')), [x, k]);
      return [gx!, gk!, ...K.gradients(K.add(sq(gx!), sq(gk!)), [x, k])];
    };
    const xd = K.placeholder([null, null, null, 2], null, 'float64');
    const kd = K.placeholder([null, null, 2, 3], null, 'float64');
    const xs = K.placeholder([1, 5, 4, 2], null, 'float64');
    const ks = K.placeholder([3, 2, 2, 3], null, 'float64');
    const dyn = loss(xd, kd);
    expect(dyn.map((t) => K.int_shape(t))).to.deep.equal([[null, null, null, 2], [null, null, 2, 3], [null, null, null, 2], [null, null, 2, 3]]);
    const sized = topoSort(dyn).filter((n) => n.op === 'conv_transpose' || n.op === 'conv_kernel_grad');
    expect(sized.length).to.be.greaterThan(0);
    expect(sized.every((n) => n.inputs.length === 3)).to.equal(true);
    const vals = [rand([1, 5, 4, 2], 52), rand([3, 2, 2, 3], 53)];
    const got = K.function([xd, kd], dyn)(vals);
    const want = K.function([xs, ks], loss(xs, ks))(vals);
    got.forEach((g, i) => expectClose(g, want[i]!, { atol: 1e-12, rtol: 1e-12 }));
  });
});
