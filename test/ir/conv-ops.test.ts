// The conv and pool IR ops directly: grouped convolution, the adjoint ops (conv_transpose,
// conv_kernel_grad, pool_grad, pool_select) against TensorFlow.js' own gradients and against
// adjoint identities, both ways of giving a sized op its result size, and every inference error.
import { expect } from 'chai';
import { backend as K } from '../../src/index.js';
import { apply } from '../../src/ir/build.js';
import { ShapeError, ValueError } from '../../src/ir/errors.js';
import { NDArray } from '../../src/ir/ndarray.js';
import type { Node } from '../../src/ir/node.js';
import type { Attrs } from '../../src/ir/op.js';
import { opTable } from '../helpers/table.js';
import { rand, tf, tfReady, tfRow, viaTf } from '../api/conv-ref.js';

before(() => tfReady());

const T4 = (t: tf.Tensor) => t as tf.Tensor4D;
const win = (s: number[], pad: string, dil = s.map(() => 1)) => ({ strides: s, dilation: dil, padding: pad });
const conv = (x: Node, w: Node, a: Attrs) => apply('conv', [x, w], a, 'conv');

const x = rand([2, 5, 6, 4], 51);
const w = rand([3, 2, 4, 3], 52);
const dy = rand([2, 3, 3, 3], 53);

/** TensorFlow.js' gradient of sum(conv2d(x, w) * dy) in x or w. */
const tfConvGrad = (wrt: 0 | 1, s: number, pad: 'valid' | 'same') => (xa: NDArray, wa: NDArray, dya: NDArray) =>
  viaTf((p, q, r) => tf.grads((u: tf.Tensor, v: tf.Tensor) => tf.sum(tf.mul(tf.conv2d(T4(u), T4(v), s, pad), r)))([p, q])[wrt]!, xa, wa, dya);

opTable('conv ops: adjoints against TensorFlow.js gradients', [
  tfRow('conv_transpose = d/dx of conv (same, strides 2)', [x, w, dy], [[null, 5, 6, 4], [3, 2, 4, 3], [null, 3, 3, 3]],
    (_x, ww, d) => apply('conv_transpose', [d, ww], { ...win([2, 2], 'same'), groups: 1, size: [5, 6] }), tfConvGrad(0, 2, 'same'), [null, 5, 6, 4]),
  tfRow('conv_transpose with the size from a third input (unknown spatial dims)', [x, w, dy], [[null, null, null, 4], [3, 2, 4, 3], [null, 3, 3, 3]],
    (xx, ww, d) => apply('conv_transpose', [d, ww, xx], { ...win([2, 2], 'same'), groups: 1, size: null }), tfConvGrad(0, 2, 'same'), [null, null, null, 4]),
  tfRow('conv_kernel_grad = d/dw of conv (same, strides 2)', [x, w, dy], [[null, 5, 6, 4], [3, 2, 4, 3], [null, 3, 3, 3]],
    (xx, _w, d) => apply('conv_kernel_grad', [xx, d], { ...win([2, 2], 'same'), groups: 1, size: [3, 2] }), tfConvGrad(1, 2, 'same'), [3, 2, 4, 3]),
  tfRow('conv_kernel_grad with the size from a third input', [x, w, rand([2, 3, 5, 3], 55)], [[null, 5, 6, 4], [null, null, 4, 3], [null, 3, 5, 3]],
    (xx, ww, d) => apply('conv_kernel_grad', [xx, d, ww], { ...win([1, 1], 'valid'), groups: 1, size: null }), tfConvGrad(1, 1, 'valid'), [null, null, 4, 3]),
  tfRow('pool_grad max = d/dx of max pooling (same, pool 3, strides 2)', [x, rand([2, 3, 3, 4], 56)], [[null, 5, 6, 4], [null, 3, 3, 4]],
    (xx, d) => apply('pool_grad', [xx, d], { window: [3, 3], ...win([2, 2], 'same'), mode: 'max' }),
    (xa, d) => viaTf((p, r) => tf.grad((u: tf.Tensor) => tf.sum(tf.mul(tf.maxPool(T4(u), 3, 2, 'same'), r)))(p), xa, d), [null, 5, 6, 4]),
  tfRow('pool_grad avg = d/dx of average pooling (valid, pool (3, 2), strides (1, 2))', [x, rand([2, 3, 3, 4], 57)], [[null, 5, 6, 4], [null, 3, 3, 4]],
    (xx, d) => apply('pool_grad', [xx, d], { window: [3, 2], ...win([1, 2], 'valid'), mode: 'avg' }),
    (xa, d) => viaTf((p, r) => tf.grad((u: tf.Tensor) => tf.sum(tf.mul(tf.avgPool(T4(u), [3, 2], [1, 2], 'valid'), r)))(p), xa, d), [null, 5, 6, 4]),
  {
    // Forward [(x0+x1)/2, (x1+x2)/2, x2/1] (padding excluded), so d(sum)/dx = [1/2, 1, 3/2]. TensorFlow.js'
    // cpu gradient gives [0.5, 1, 1] here (it divides by the full window), so this row is by hand.
    name: "hand: pool_grad avg 'same' divides by the counted cells",
    inputs: [new NDArray([1, 2, 3], [1, 1, 3, 1]), new NDArray([1, 1, 1], [1, 1, 3, 1])],
    build: (xx, d) => apply('pool_grad', [xx, d], { window: [1, 2], ...win([1, 1], 'same'), mode: 'avg' }),
    expected: [[[[0.5], [1], [1.5]]]],
    staticShape: [1, 1, 3, 1],
  },
  {
    name: 'grouped conv (2 groups) = two convolutions on the channel halves',
    inputs: [x, rand([3, 2, 2, 6], 58)],
    shapes: [[null, 5, 6, 4], [3, 2, 2, 6]],
    build: (xx, ww) => conv(xx, ww, { ...win([1, 2], 'same'), groups: 2 }),
    expected: (xa, wa) => viaTf((p, q) => {
      const [p0, p1] = tf.split(p, 2, 3);
      const [q0, q1] = tf.split(q, 2, 3);
      return tf.concat([tf.conv2d(T4(p0!), T4(q0!), [1, 2], 'same'), tf.conv2d(T4(p1!), T4(q1!), [1, 2], 'same')], 3);
    }, xa, wa),
    staticShape: [null, 5, 3, 6],
    tol: { atol: 2e-5, rtol: 1e-4 },
  },
  {
    name: 'hand: pool_select picks g where x is maximal (first maximum on ties)',
    inputs: [new NDArray([1, 5, 5, 2], [1, 1, 4, 1]), new NDArray([10, 20, 30, 40], [1, 1, 4, 1])],
    build: (xx, g) => apply('pool_select', [xx, g], { window: [1, 2], ...win([1, 2], 'valid'), mode: 'max' }),
    expected: [[[[20], [30]]]],
    staticShape: [1, 1, 2, 1],
  },
]);

/** <a, b> over all elements. */
function dotAll(a: NDArray, b: NDArray): number {
  expect(a.shape).to.deep.equal(b.shape);
  let s = 0;
  for (let i = 0; i < a.size; i++) s += a.data[i]! * b.data[i]!;
  return s;
}

describe('conv ops: adjoint identities (1-d, groups, causal, dilation)', () => {
  const cases: [string, Attrs, number[], number[]][] = [
    ['causal, dilation 2, strides 2', { ...win([2], 'causal', [2]), groups: 1 }, [2, 9, 2], [3, 2, 3]],
    ['same, dilation 3, 2 groups', { ...win([1], 'same', [3]), groups: 2 }, [2, 9, 2], [2, 1, 4]],
    ['valid, strides 3, depthwise (2 groups, multiplier 3)', { ...win([3], 'valid'), groups: 2 }, [2, 9, 2], [2, 1, 6]],
  ];
  for (const [name, a, xs, ws] of cases) {
    it(name, () => {
      const xp = K.placeholder(xs, null, 'float64');
      const wp = K.placeholder(ws, null, 'float64');
      const y = conv(xp, wp, a);
      const d = rand(K.int_shape(y) as number[], 60);
      const dp = K.placeholder(d.shape, null, 'float64');
      const tx = apply('conv_transpose', [dp, wp], { ...a, size: [xs[1]!] });
      const tw = apply('conv_kernel_grad', [xp, dp], { ...a, size: [ws[0]!] });
      const xv = rand(xs, 61);
      const wv = rand(ws, 62);
      const [yv, txv, twv] = K.function([xp, wp, dp], [y, tx, tw])([xv, wv, d]);
      const lhs = dotAll(yv!, d);
      expect(dotAll(xv, txv!)).to.be.closeTo(lhs, 1e-9 * (1 + Math.abs(lhs)));
      expect(dotAll(wv, twv!)).to.be.closeTo(lhs, 1e-9 * (1 + Math.abs(lhs)));
    });
  }
  it("avg pool_grad is the adjoint of avg pool ('same', padding excluded)", () => {
    const a = { window: [3, 2], ...win([2, 2], 'same'), mode: 'avg' };
    const xp = K.placeholder([2, 5, 6, 4], null, 'float64');
    const dp = K.placeholder([2, 3, 3, 4], null, 'float64');
    const [xv, dv] = [rand([2, 5, 6, 4], 66), rand([2, 3, 3, 4], 67)];
    const [y, g] = K.function([xp, dp], [apply('pool', [xp], a), apply('pool_grad', [xp, dp], a)])([xv, dv]);
    expect(dotAll(y!, dv)).to.be.closeTo(dotAll(xv, g!), 1e-9);
  });
  it('pool_select is the adjoint of max pool_grad in dy', () => {
    const a = { window: [2, 3], ...win([2, 1], 'same'), mode: 'max' };
    const xp = K.placeholder([2, 5, 6, 4], null, 'float64');
    const gp = K.placeholder([2, 5, 6, 4], null, 'float64');
    const dp = K.placeholder([2, 3, 6, 4], null, 'float64');
    const sel = apply('pool_select', [xp, gp], a);
    const grad = apply('pool_grad', [xp, dp], a);
    const [xv, gv, dv] = [rand([2, 5, 6, 4], 63), rand([2, 5, 6, 4], 64), rand([2, 3, 6, 4], 65)];
    const [s, g] = K.function([xp, gp, dp], [sel, grad])([xv, gv, dv]);
    expect(dotAll(s!, dv)).to.be.closeTo(dotAll(gv, g!), 1e-9);
  });
});

describe('conv ops: inference errors', () => {
  const ph = (s: (number | null)[], dt = 'float32') => K.placeholder(s, null, dt as never);
  const c = { ...win([1, 1], 'valid'), groups: 1 };
  it('conv', () => {
    expect(() => conv(ph([2, 3]), ph([1, 3]), c)).to.throw(ShapeError, /conv: input must have rank >= 3 \(batch, spatial\.\.\., channels\); got shape \(2, 3\)/);
    expect(() => conv(ph([1, 4, 4, 3]), ph([1, 3, 2]), c)).to.throw(ShapeError, /input shape \(1, 4, 4, 3\) and kernel shape \(1, 3, 2\) must have the same rank/);
    expect(() => conv(ph([1, 4, 4, 3]), ph([1, 1, 3, 2]), { ...c, strides: [1] })).to.throw(ValueError, /strides \[1\] must be 2 positive integers/);
    expect(() => conv(ph([1, 4, 4, 3]), ph([1, 1, 3, 2]), { ...c, padding: 'full' })).to.throw(ValueError, /padding "full" is not one of valid, same, causal/);
    expect(() => conv(ph([1, 4, 4, 3]), ph([1, 1, 3, 2]), { ...c, groups: 0 })).to.throw(ValueError, /groups 0 must be a positive integer/);
    expect(() => conv(ph([1, 4, 4, 4]), ph([1, 1, 1, 2]), { ...c, groups: 2 })).to.throw(ShapeError, /axis 2 of the kernel \(input channels\) is 1 \(times 2 groups: 2\) but axis 3 of input \(channels\) is 4/);
    expect(() => conv(ph([1, 4, 4, 4]), ph([1, 1, 2, 3]), { ...c, groups: 2 })).to.throw(ShapeError, /output channels 3 are not divisible by groups 2/);
    expect(() => conv(ph([1, 2, 4, 3]), ph([3, 1, 3, 2]), c)).to.throw(ShapeError, /input shape \(1, 2, 4, 3\) is too small for window shape \(3, 1, 3, 2\) with valid padding: axis 1 has 2 but the window spans 3/);
    expect(() => conv(ph([1, 4, 4, 3], 'bool'), ph([1, 1, 3, 2], 'bool'), c)).to.throw(TypeError, /convolution needs numeric tensors, got bool/);
  });
  it('conv_transpose and conv_kernel_grad', () => {
    expect(() => apply('conv_transpose', [ph([1, 4, 4, 2]), ph([1, 1, 3, 2])], { ...c, size: null }, 'ct')).to.throw(ShapeError, /ct: without attrs.size a third input must give the result size/);
    expect(() => apply('conv_transpose', [ph([1, 4, 4, 2]), ph([1, 1, 3, 2]), ph([1, 4, 4, 3])], { ...c, size: [4, 4] }, 'ct')).to.throw(ShapeError, /give the result size as attrs.size or as a third input, not both/);
    expect(() => apply('conv_transpose', [ph([1, 4, 4, 2]), ph([1, 1, 3, 2])], { ...c, size: [4] }, 'ct')).to.throw(ValueError, /size \[4\] must be 2 positive integers/);
    expect(() => apply('conv_transpose', [ph([1, 4, 4, 2]), ph([1, 1, 3, 5])], { ...c, size: [4, 4] }, 'ct')).to.throw(ShapeError, /axis 3 of the kernel \(output channels\) is 5 but axis 3 of input is 2/);
    expect(() => apply('conv_transpose', [ph([1, 4, 4, 2]), ph([1, 1, 3, 2])], { ...c, size: [5, 4] }, 'ct')).to.throw(ShapeError, /input shape \(1, 4, 4, 2\) does not fit: along spatial axis 0, a valid convolution with window 1, stride 1 and dilation 1 maps size 5 to 5, not 4/);
    expect(() => apply('conv_kernel_grad', [ph([1, 4, 4, 3]), ph([1, 4, 4, 2])], { ...c, groups: 2, size: [1, 1] }, 'kg')).to.throw(ShapeError, /kg: input channels 3 \(shape \(1, 4, 4, 3\)\) are not divisible by groups 2/);
    expect(() => apply('conv_kernel_grad', [ph([1, 4, 4, 4]), ph([1, 4, 4, 3])], { ...c, groups: 2, size: [1, 1] }, 'kg')).to.throw(ShapeError, /output channels 3 \(shape \(1, 4, 4, 3\)\) are not divisible by groups 2/);
    expect(() => apply('conv_kernel_grad', [ph([1, 4, 4, 3]), ph([1, 3, 4, 2])], { ...c, size: [1, 1] }, 'kg')).to.throw(ShapeError, /output gradient shape \(1, 3, 4, 2\) does not fit: along spatial axis 0, .* maps size 4 to 4, not 3/);
    expect(() => apply('conv_kernel_grad', [ph([1, 2, 4, 3]), ph([1, 1, 4, 2])], { ...c, size: [3, 1] }, 'kg')).to.throw(ShapeError, /maps size 2 to nothing \(window too large\), not 1/);
  });
  it('pool, pool_grad, pool_select', () => {
    const p = { window: [2, 2], ...win([1, 1], 'valid'), mode: 'max' };
    expect(() => apply('pool', [ph([1, 4, 4])], p, 'pool')).to.throw(ShapeError, /pool: input of shape \(1, 4, 4\) must have rank 4 \(batch, 2 spatial, channels\) for a window of 2 dims/);
    expect(() => apply('pool', [ph([1, 4, 4, 1])], { ...p, window: [2, 0] }, 'pool')).to.throw(ValueError, /pool size \[2,0\] must be 2 positive integers/);
    expect(() => apply('pool', [ph([1, 4, 4, 1])], { ...p, mode: 'sum' }, 'pool')).to.throw(ValueError, /pool mode "sum" is not one of max, avg/);
    expect(() => apply('pool', [ph([1, 4, 4, 1], 'int32')], { ...p, mode: 'avg' }, 'pool')).to.throw(TypeError, /average pooling needs a float tensor, got int32/);
    expect(() => apply('pool_grad', [ph([1, 4, 4, 1]), ph([1, 4, 4, 1])], p, 'pg')).to.throw(ShapeError, /pg: output gradient shape \(1, 4, 4, 1\) does not match the pooled shape \(1, 3, 3, 1\) of input \(1, 4, 4, 1\)/);
    expect(() => apply('pool_select', [ph([1, 4, 4, 1]), ph([1, 4, 4, 1])], { ...p, mode: 'avg' }, 'ps')).to.throw(ValueError, /ps: pool_select is defined for max pooling only, got mode "avg"/);
    expect(() => apply('pool_select', [ph([1, 4, 4, 1]), ph([1, 4, 3, 1])], p, 'ps')).to.throw(ShapeError, /shapes \(1, 4, 4, 1\) \(input\) and \(1, 4, 3, 1\) \(selected values\) must match/);
  });
});
