// autodiff.grad on integers and in pieces, ported from Theano's tests/test_gradient.py (test_grad_int,
// test_dxdx, test_known_grads_integers, test_subgraph_grad): Theano's op contract for integers
// (an op with a float output differentiates its integer inputs as reals; integer-valued ops and
// casts from integers pass nothing), and subgraph_grad against one backward pass. K.gradients
// keeps Keras' rule (integers get zeros), checked here too.
import { expect } from 'chai';
import { autodiff, backend as K } from '../../src/index.js';
import { NDArray } from '../../src/ir/ndarray.js';
import { mulberry32 } from '../../src/ir/random.js';
import { expectClose } from '../helpers/assert.js';

type T = ReturnType<typeof K.placeholder>;
const normal = (r: () => number, shape: number[], scale = 1) => Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => (r() * 2 - 1) * scale);

describe('autodiff.grad and integers (Theano test_gradient.py)', () => {
  it('the gradient with respect to an integer matrix is the one with respect to the same values as float64 (test_grad_int)', () => {
    const W = K.placeholder([3, 4], null, 'float64', false, 'W');
    const b = K.placeholder([4], null, 'float64', false, 'b');
    const gradFor = (X: T) => {
      const cost = K.sum(K.sigmoid(K.add(K.dot(X, W), b)));
      return K.function([X, W, b], [autodiff.grad(cost, X)!]);
    };
    const Xi = K.placeholder([5, 3], null, 'int32', false, 'Xi');
    const Xf = K.placeholder([5, 3], null, 'float64', false, 'Xf');
    const r = mulberry32(2012);
    // Theano: X = int32(randn(5, 3) * 127), W = randn(3, 4), b = randn(4).
    const xs = normal(r, [5, 3], 127).map(Math.trunc);
    const wv = new NDArray(normal(r, [3, 4]), [3, 4], 'float64');
    const bv = new NDArray(normal(r, [4]), [4], 'float64');
    const intResult = gradFor(Xi)([new NDArray(xs, [5, 3], 'int32'), wv, bv])[0]!;
    const floatResult = gradFor(Xf)([new NDArray(xs, [5, 3], 'float64'), wv, bv])[0]!;
    expect(intResult.dtype).to.equal('float64');
    expectClose(intResult, floatResult, { atol: 1e-12, rtol: 1e-12 });
    expect(Math.max(...Array.from(floatResult.data as Float64Array, Math.abs)), 'not all zeros').to.be.above(0);
    // K.gradients keeps Keras' (TensorFlow's) rule: no gradient for integers, zeros of their dtype.
    const [kg] = K.gradients(K.sum(K.sigmoid(K.add(K.dot(Xi, W), b))), [Xi]);
    expect(kg!.dtype).to.equal('int32');
  });

  it('the gradient of an integer scalar with respect to itself is 1 (test_dxdx)', () => {
    const x = K.placeholder([], null, 'int32', false, 'x');
    const g = autodiff.grad(x, x)!;
    expect(g.dtype).to.equal('float64');
    expect(K.function([x], [g])([NDArray.from(12, 'int32')])[0]!.item()).to.equal(1);
  });

  it('known_grads on an integer gives that gradient back (test_known_grads_integers)', () => {
    const x = K.placeholder([], null, 'int32', false, 'x');
    const gExpected = K.placeholder([], null, 'float32', false, 'g');
    const g = autodiff.grad(null, x, { known_grads: [[x, gExpected]] })!;
    expect(K.function([gExpected], [g])([NDArray.from(0.6, 'float32')])[0]!.item()).to.be.closeTo(0.6, 1e-7);
  });

  it('integer-valued ops and casts from integers pass nothing: zeros of the integer dtype', () => {
    const i = K.placeholder([3], null, 'int32', false, 'i');
    const w = K.placeholder([3], null, 'float64', false, 'w');
    // mul(i, 2) is integer-valued (piecewise constant); the cast reads it.
    const viaInt = autodiff.grad(K.sum(K.multiply(K.cast(K.multiply(i, 2), 'float64'), w)), [i, w]) as T[];
    expect(viaInt[0]!.dtype).to.equal('int32');
    const [gi, gw] = K.function([i, w], viaInt)([NDArray.from([1, 2, 3], 'int32'), NDArray.from([0.5, 1, 2], 'float64')]);
    expect(Array.from(gi!.data)).to.deep.equal([0, 0, 0]);
    expect(Array.from(gw!.data)).to.deep.equal([2, 4, 6]);
  });

  it('rejects a boolean cost, naming the allowed dtypes', () => {
    const x = K.placeholder([], null, 'float64', false, 'x');
    expect(() => autodiff.grad(K.greater(x, 0), x)).to.throw(TypeError, /cost is bool; gradients need a float or integer cost/);
  });
});

describe('autodiff.subgraph_grad (Theano test_subgraph_grad)', () => {
  it('layer by layer, each with its own cost, the gradients of one backward pass', () => {
    const x = K.placeholder([3], null, 'float32', false, 'x');
    const t = K.placeholder([2], null, 'float32', false, 't');
    const r = mulberry32(2012);
    const w1 = K.variable(new NDArray(normal(r, [3, 4]), [3, 4], 'float32'), 'float32', 'w1');
    const w2 = K.variable(new NDArray(normal(r, [4, 2]), [4, 2], 'float32'), 'float32', 'w2');
    const row = (v: T) => K.expand_dims(v, 0);
    const a1 = K.tanh(K.dot(row(x), w1));
    const a2 = K.tanh(K.dot(a1, w2));
    const cost2 = K.add(K.sum(K.square(K.subtract(a2, row(t)))), K.square(K.sum(w2)));
    const cost1 = K.square(K.sum(w1));
    const values = [new NDArray(normal(r, [2]), [2], 'float32'), new NDArray(normal(r, [3]), [3], 'float32')];
    const truth = K.function([t, x], autodiff.grad(K.add(cost2, cost1), [w2, w1]) as T[])(values);

    const params = [[w2], [w1]];
    const costs = [cost2, cost1];
    const ends = [[a1], [x]];
    let next: [T, T][] | null = null;
    const pieces: T[] = [];
    for (let i = 0; i < 2; i++) {
      const [paramGrads, endGrads] = autodiff.subgraph_grad(params[i]!, ends[i]!, next, costs[i]!);
      next = ends[i]!.map((e, k) => [e, endGrads[k]!]);
      pieces.push(...paramGrads);
    }
    const got = K.function([t, x], pieces)(values);
    // Theano: sum |true - piecewise| < 1e-5 per parameter.
    got.forEach((g, i) => {
      const diff = Array.from(g.data as Float32Array).reduce((s, v, j) => s + Math.abs(v - Number(truth[i]!.data[j])), 0);
      expect(diff, `parameter ${i}`).to.be.below(1e-5);
    });
    expect(Math.max(...Array.from(got[1]!.data as Float32Array, Math.abs)), 'w1 gets the second piece').to.be.above(0);
  });

  it('needs arrays, and a cost or a start', () => {
    const x = K.placeholder([3], null, 'float32', false, 'x');
    expect(() => autodiff.subgraph_grad(x as never, [x])).to.throw(TypeError, /wrt and end must be arrays of tensors/);
    expect(() => autodiff.subgraph_grad([x], [x])).to.throw(/give a cost, start \(the cotangents of nodes above\), or both/);
  });
});
