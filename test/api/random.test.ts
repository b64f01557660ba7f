// Random ops (SPEC §5): the numbers are defined per element by Philox (src/ir/random.ts), so a
// seeded op is tabled against that definition (every target must reproduce it exactly); the
// distributions are checked statistically on 1e5 draws; seeds and fresh draws are checked.
import { expect } from 'chai';
import { backend as K } from '../../src/index.js';
import { ShapeError, ValueError } from '../../src/ir/errors.js';
import { NDArray } from '../../src/ir/ndarray.js';
import type { Node } from '../../src/ir/node.js';
import { elementBits, normalFromBits, seededKey, truncatedNormal, unit32, unitFloat } from '../../src/ir/random.js';
import { opTable } from '../helpers/table.js';

/** Element i of a seeded draw, straight from the generator's definition. */
function byIndex(shape: number[], seed: number, f: (key: ReturnType<typeof seededKey>, i: number, w: Uint32Array) => number): NDArray {
  const n = shape.reduce((p, d) => p * d, 1);
  const w = new Uint32Array(4);
  const key = seededKey(seed);
  return new NDArray(Float64Array.from({ length: n }, (_, i) => f(key, i, w)), shape, 'float64');
}

opTable('random ops reproduce Philox by element index', [
  { name: 'random_uniform float64', inputs: [], build: () => K.random_uniform([3, 4], -2, 3, 'float64', 7), expected: byIndex([3, 4], 7, (k, i, w) => -2 + 5 * unitFloat(elementBits(k, i, 0, w), 53)), staticShape: [3, 4] },
  { name: 'random_uniform float32', inputs: [], build: () => K.random_uniform([5], 0, 1, 'float32', 7), expected: byIndex([5], 7, (k, i, w) => unitFloat(elementBits(k, i, 0, w), 24)), expectedDType: 'float32' },
  { name: 'random_normal', inputs: [], build: () => K.random_normal([2, 3], 1, 2, 'float64', 99), expected: byIndex([2, 3], 99, (k, i, w) => 1 + 2 * normalFromBits(elementBits(k, i, 0, w))) },
  { name: 'truncated_normal', inputs: [], build: () => K.truncated_normal([50], 0, 1, 'float64', 5), expected: byIndex([50], 5, (k, i, w) => truncatedNormal(k, i, w)) },
  { name: 'random_binomial', inputs: [], build: () => K.random_binomial([20], 0.4, 'float64', 3), expected: byIndex([20], 3, (k, i, w) => (unit32(elementBits(k, i, 0, w)) < 0.4 ? 1 : 0)) },
  { name: 'shape from K.shape of an input', inputs: [[[1, 2, 3], [4, 5, 6]]], shapes: [[null, null]], build: (x) => K.random_normal(K.shape(x), 0, 1, 'float64', 11), expected: byIndex([2, 3], 11, (k, i, w) => normalFromBits(elementBits(k, i, 0, w))), staticShape: [null, null] },
  { name: 'shape with a run-time dim', inputs: [[[1, 2, 3], [4, 5, 6]]], shapes: [[null, 3]], build: (x) => K.random_uniform([K.shape(x).get(0), 4], { seed: 2, dtype: 'float64' }), expected: byIndex([2, 4], 2, (k, i, w) => unitFloat(elementBits(k, i, 0, w), 53)), staticShape: [null, 4] },
]);

function values(x: Node): number[] {
  return Array.from(K.eval(x).data);
}
function stats(v: number[]): { mean: number; std: number; min: number; max: number } {
  const mean = v.reduce((a, b) => a + b, 0) / v.length;
  const std = Math.sqrt(v.reduce((a, b) => a + (b - mean) ** 2, 0) / v.length);
  return { mean, std, min: Math.min(...v), max: Math.max(...v) };
}

const N = 100000;

describe('random distributions (1e5 draws)', () => {
  // tolerances are about 4 standard errors
  it('random_normal: mean and std', () => {
    const s = stats(values(K.random_normal([N], 3, 2, 'float64', 1)));
    expect(s.mean).to.be.closeTo(3, 4 * 2 / Math.sqrt(N));
    expect(s.std).to.be.closeTo(2, 0.02);
  });
  it('random_normal: one-sigma mass is 68.3%', () => {
    const v = values(K.random_normal([N], 0, 1, 'float64', 2));
    expect(v.filter((z) => Math.abs(z) <= 1).length / N).to.be.closeTo(0.6827, 0.006);
  });
  it('random_uniform: bounds, mean, std', () => {
    const s = stats(values(K.random_uniform([N], 2, 5, 'float32', 3)));
    expect(s.min).to.be.at.least(2);
    expect(s.max).to.be.below(5);
    expect(s.mean).to.be.closeTo(3.5, 4 * Math.sqrt(0.75 / N));
    expect(s.std).to.be.closeTo(Math.sqrt(0.75), 0.01);
  });
  it('truncated_normal: within 2 stddev, truncated moments', () => {
    const s = stats(values(K.truncated_normal([N], -1, 0.5, 'float64', 4)));
    expect(s.min).to.be.at.least(-1 - 2 * 0.5);
    expect(s.max).to.be.at.most(-1 + 2 * 0.5);
    expect(s.mean).to.be.closeTo(-1, 4 * 0.5 / Math.sqrt(N));
    // std of N(0, 1) truncated to [-2, 2]: sqrt(1 - 4 phi(2) / (2 Phi(2) - 1)) = 0.87962
    expect(s.std).to.be.closeTo(0.5 * 0.87962, 0.005);
  });
  it('random_binomial: frequency of ones', () => {
    const v = values(K.random_binomial([N], 0.3, 'float32', 5));
    expect(new Set(v)).to.deep.equal(new Set([0, 1]));
    expect(stats(v).mean).to.be.closeTo(0.3, 4 * Math.sqrt(0.21 / N));
  });
  it('random_binomial: p = 0 and p = 1', () => {
    expect(values(K.random_binomial([100]))).to.deep.equal(new Array(100).fill(0));
    expect(values(K.random_binomial([100], 1))).to.deep.equal(new Array(100).fill(1));
  });
  it('unseeded draws have the right distribution too', () => {
    const s = stats(values(K.random_normal([N])));
    expect(s.mean).to.be.closeTo(0, 4 / Math.sqrt(N));
    expect(s.std).to.be.closeTo(1, 0.02);
  });
  it('float16 uniforms stay below maxval', () => {
    const s = stats(values(K.random_uniform([10000], 0, 1, 'float16', 6)));
    expect(s.max).to.be.below(1);
    expect(s.min).to.be.at.least(0);
  });
});

describe('random seeds (SPEC §5)', () => {
  it('the same seed gives the same numbers, evaluation after evaluation and graph after graph', () => {
    const a = values(K.random_normal([6], 0, 1, null, 42));
    expect(values(K.random_normal([6], 0, 1, null, 42))).to.deep.equal(a);
    const x = K.random_normal([6], 0, 1, null, 42);
    expect(values(x)).to.deep.equal(values(x));
  });
  it('pinned numbers: a seed means the same numbers in every version', () => {
    // Philox-4x32-10 with key (1234, 0), counters (i, 0, 0, 0): fixed forever so saved experiments replay
    expect(values(K.random_uniform([3], 0, 1, 'float64', 1234))).to.deep.equal([0.127207956116415, 0.620832332315112, 0.24917273956895958]);
    expect(values(K.random_normal([3], 0, 1, 'float32', 1234))).to.deep.equal([-0.051208239048719406, 1.3783677816390991, 0.22136668860912323]);
  });
  it('different seeds give different numbers', () => {
    expect(values(K.random_uniform([4], 0, 1, null, 1))).to.not.deep.equal(values(K.random_uniform([4], 0, 1, null, 2)));
  });
  it('element i does not depend on the shape (fusion and layout cannot change the numbers)', () => {
    const flat = values(K.random_normal([12], 0, 1, 'float64', 8));
    expect(values(K.random_normal([3, 4], 0, 1, 'float64', 8))).to.deep.equal(flat);
    expect(values(K.random_normal([5], 0, 1, 'float64', 8))).to.deep.equal(flat.slice(0, 5));
  });
  it('without a seed each evaluation draws afresh', () => {
    const x = K.random_uniform([8]);
    expect(values(x)).to.not.deep.equal(values(x));
  });
  it('without a seed each compiled-function call draws afresh; with one, each call repeats', () => {
    const f = K.function([], [K.random_normal([5]), K.random_normal([5], 0, 1, null, 3)]);
    const [a1, s1] = f([]);
    const [a2, s2] = f([]);
    expect(Array.from(a1!.data)).to.not.deep.equal(Array.from(a2!.data));
    expect(Array.from(s1!.data)).to.deep.equal(Array.from(s2!.data));
  });
  it('two unseeded ops are distinct nodes with different numbers in one evaluation', () => {
    const a = K.random_uniform([6]);
    const b = K.random_uniform([6]);
    expect(a).to.not.equal(b);
    const [va, vb] = K.function([], [a, b])([]);
    expect(Array.from(va!.data)).to.not.deep.equal(Array.from(vb!.data));
  });
  it('unseeded ops stay distinct after clear_session', () => {
    const a = K.random_uniform([6]);
    K.clear_session();
    const b = K.random_uniform([6]);
    expect(a.attrs['uid']).to.not.equal(b.attrs['uid']);
  });
  it('an unseeded op used twice in one evaluation gives one draw', () => {
    const x = K.random_uniform([4]);
    const [d] = K.function([], [K.subtract(x, x)])([]);
    expect(Array.from(d!.data)).to.deep.equal([0, 0, 0, 0]);
  });
  it('dtypes', () => {
    expect(K.dtype(K.random_normal([2]))).to.equal('float32');
    expect(K.dtype(K.random_normal([2], 0, 1, 'float64'))).to.equal('float64');
    expect(K.dtype(K.random_binomial([2], 0.5, 'int32'))).to.equal('int32');
    expect(K.eval(K.random_binomial([3], 1, 'bool')).toArray()).to.deep.equal([true, true, true]);
  });
});

describe('random variables', () => {
  it('random_uniform_variable is a variable with the drawn values', () => {
    const v = K.random_uniform_variable([3, 4], -1, 1, null, 'w', 17);
    expect(v.op).to.equal('variable');
    expect(v.name).to.equal('w');
    expect(K.int_shape(v)).to.deep.equal([3, 4]);
    expect(K.dtype(v)).to.equal('float32');
    expect(Array.from(K.get_value(v).data)).to.deep.equal(values(K.random_uniform([3, 4], -1, 1, null, 17)));
    // a variable: its value does not change between evaluations
    expect(values(v)).to.deep.equal(values(v));
  });
  it('random_normal_variable: statistics and options object', () => {
    const v = K.random_normal_variable([200, 500], 1, 0.1, { dtype: 'float64', seed: 5 });
    expect(K.dtype(v)).to.equal('float64');
    const s = stats(Array.from(K.get_value(v).data));
    expect(s.mean).to.be.closeTo(1, 0.002);
    expect(s.std).to.be.closeTo(0.1, 0.002);
  });
  it('unseeded random variables differ', () => {
    expect(Array.from(K.get_value(K.random_normal_variable([4], 0, 1)).data)).to.not.deep.equal(Array.from(K.get_value(K.random_normal_variable([4], 0, 1)).data));
  });
});

describe('random errors', () => {
  it('bad shapes', () => {
    expect(() => K.random_normal('3' as never)).to.throw(ValueError, /random_normal: shape must be an array of dims, an integer or a 1-D integer tensor, got the string "3"/);
    expect(() => K.random_normal([2, -1])).to.throw(ValueError, /random_normal: shape \[2,-1\] has a bad dim at index 1/);
    expect(() => K.random_uniform([2, null as never])).to.throw(ValueError, /random_uniform: shape \[2,null\] has a bad dim at index 1/);
    expect(() => K.random_uniform(K.placeholder([2]))).to.throw(ValueError, /random_uniform: a shape tensor must be a 1-D integer tensor of known length, got float32 \(2,\)/);
    expect(() => K.random_uniform(K.placeholder([null], null, 'int32'))).to.throw(ValueError, /of known length/);
    expect(() => K.random_uniform([K.placeholder([2], null, 'int32')])).to.throw(ValueError, /random_uniform: shape entry 0 must be an integer scalar tensor, got int32 \(2,\)/);
    expect(() => K.random_uniform_variable(K.shape(K.placeholder([2])) as never, 0, 1)).to.throw(ValueError, /random_uniform_variable: shape must be an array of non-negative integers, got a tensor/);
    expect(() => K.random_normal_variable([1.5], 0, 1)).to.throw(ValueError, /random_normal_variable: shape must be an array of non-negative integers, got \[1.5\]/);
  });
  it('a negative run-time dim', () => {
    const n = K.placeholder([], null, 'int32');
    const f = K.function([n], [K.random_normal([n])]);
    expect(() => f([-3])).to.throw(ValueError, /run-time dim 0 is -3, not a non-negative integer/);
    expect(f([3])[0]!.shape).to.deep.equal([3]);
  });
  it('bad dtype, seed, parameters', () => {
    expect(() => K.random_normal([2], 0, 1, 'int32')).to.throw(ValueError, /K.random_normal: dtype int32 is not a float dtype \(allowed: float16, float32, float64\)/);
    expect(() => K.random_uniform([2], 0, 1, 'float8' as never)).to.throw(TypeError, /random_uniform: dtype "float8" is not a dtype/);
    expect(() => K.truncated_normal([2], 0, 1, null, 1.5)).to.throw(ValueError, /truncated_normal: seed must be an integer, got number 1.5/);
    expect(() => K.random_normal([2], 'a' as never)).to.throw(ValueError, /random_normal: mean must be a finite number/);
    expect(() => K.random_uniform([2], 0, Infinity)).to.throw(ValueError, /random_uniform: maxval must be a finite number/);
    expect(() => K.random_binomial([2], 1.5)).to.throw(ValueError, /random_binomial: p must be in \[0, 1\], got 1.5/);
    expect(() => K.random_normal_variable([2], 0, NaN)).to.throw(ValueError, /random_normal_variable: scale must be a finite number/);
    expect(() => K.random_uniform_variable([2], 0, 1, 'int32')).to.throw(ValueError, /dtype int32 is not a float dtype/);
  });
});

describe('K.dropout', () => {
  it('keeps about 1 - level of the entries and scales them by 1 / (1 - level)', () => {
    const v = values(K.dropout(K.ones([N]), 0.25, null, 9));
    expect(new Set(v)).to.deep.equal(new Set([0, Math.fround(1 / 0.75)]));
    expect(v.filter((x) => x !== 0).length / N).to.be.closeTo(0.75, 4 * Math.sqrt(0.1875 / N));
    expect(stats(v).mean).to.be.closeTo(1, 0.01);
  });
  it('level 0 keeps everything', () => {
    const x = K.variable([[1, 2], [3, 4]]);
    expect(K.eval(K.dropout(x, 0)).toArray()).to.deep.equal([[1, 2], [3, 4]]);
  });
  it('noise_shape shares one draw along its size-1 dims', () => {
    const d = K.eval(K.dropout(K.ones([40, 6]), 0.5, [40, 1], 4)).toArray() as number[][];
    for (const row of d) expect(new Set(row).size).to.equal(1);
    expect(new Set(d.map((r) => r[0]))).to.deep.equal(new Set([0, 2]));
  });
  it('noise_shape with null takes x\'s dim, and a shorter noise_shape aligns right', () => {
    const a = K.eval(K.dropout(K.ones([3, 50, 4]), 0.5, { noise_shape: [1, null, 1], seed: 1 })).toArray() as number[][][];
    for (let j = 0; j < 50; j++) expect(new Set([a[0]![j]![0], a[1]![j]![3], a[2]![j]![2]]).size).to.equal(1);
    const b = K.eval(K.dropout(K.ones([3, 50]), 0.5, [50], 1)).toArray() as number[][];
    expect(b[0]).to.deep.equal(b[2]);
  });
  it('x with unknown dims draws a mask of its run-time shape', () => {
    const x = K.placeholder([null, null]);
    const f = K.function([x], [K.dropout(x, 0.5, null, 3)]);
    const [y] = f([[[1, 1, 1], [1, 1, 1]]]);
    expect(y!.shape).to.deep.equal([2, 3]);
    expect(Array.from(y!.data).every((v) => v === 0 || v === 2)).to.equal(true);
    // seeded: each call gives the same mask
    expect(Array.from(f([[[1, 1, 1], [1, 1, 1]]])[0]!.data)).to.deep.equal(Array.from(y!.data));
  });
  it('same seed, same mask; no seed, a fresh mask each evaluation', () => {
    expect(values(K.dropout(K.ones([64]), 0.5, null, 7))).to.deep.equal(values(K.dropout(K.ones([64]), 0.5, null, 7)));
    const d = K.dropout(K.ones([64]), 0.5);
    expect(values(d)).to.not.deep.equal(values(d));
  });
  it('int x gives a float result', () => {
    expect(K.dtype(K.dropout(K.variable([1, 2], 'int32'), 0.5))).to.equal('float32');
  });
  it('errors: level outside [0, 1), bad noise_shape, bad seed', () => {
    const x = K.placeholder([4, 3]);
    expect(() => K.dropout(x, 1)).to.throw(ValueError, /dropout: level must be in the interval \[0, 1\), got number 1/);
    expect(() => K.dropout(x, -0.1)).to.throw(ValueError, /level must be in the interval \[0, 1\), got number -0.1/);
    expect(() => K.dropout(x, NaN)).to.throw(ValueError, /level must be in the interval/);
    expect(() => K.dropout(x, '0.5' as never)).to.throw(ValueError, /got the string "0.5"/);
    expect(() => K.dropout(x, 0.5, [4, 2])).to.throw(ShapeError, /dropout: noise_shape \(4, 2\) does not broadcast to x \(4, 3\): axis 1 has 2 and 3/);
    expect(() => K.dropout(x, 0.5, [1, 4, 3])).to.throw(ShapeError, /dropout: noise_shape \(1, 4, 3\) has more dims than x \(4, 3\)/);
    expect(() => K.dropout(x, 0.5, 'all' as never)).to.throw(ValueError, /dropout: noise_shape must be an array of non-negative integers or nulls/);
    expect(() => K.dropout(x, 0.5, null, 0.5)).to.throw(ValueError, /dropout: seed must be an integer/);
  });
});
