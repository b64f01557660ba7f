// Rounding depth (src/ir/rounding.ts) and checking mode's tolerance that grows with it
// (src/ir/compare.ts): the counts per op kind, the longest path, and that the grown tolerance
// stays far below a planted bug's error while covering float32 rounding of a deep graph.
import { expect } from 'chai';
import { backend as K, NDArray, optimize } from '../../src/index.js';
import { depthOf, roundingSteps } from '../../src/ir/rounding.js';
import { firstDifference, toleranceOf, unitRoundoff } from '../../src/ir/compare.js';
import { evaluate } from '../../src/ir/interpret.js';
import type { Node } from '../../src/ir/node.js';

const u32 = 2 ** -24;
const arr = (shape: number[], f: (i: number) => number, dtype: 'float32' | 'float64' = 'float32') =>
  new NDArray(Float64Array.from({ length: shape.reduce((p, d) => p * d, 1) }, (_, i) => f(i)), shape, 'float64').astype(dtype);

describe('rounding depth', () => {
  it('counts an elementwise op 1, a reduction its length, a product its contracted length, views 0', () => {
    const x = K.placeholder([8, 100], null, 'float32', false, 'x');
    const w = K.placeholder([100, 5], null, 'float32', false, 'w');
    expect(roundingSteps(K.exp(x))).to.equal(1);
    expect(roundingSteps(K.sum(x, 1))).to.equal(100);
    expect(roundingSteps(K.sum(x, 0))).to.equal(8);
    expect(roundingSteps(K.dot(x, w))).to.equal(100);
    expect(roundingSteps(K.reshape(x, [800]))).to.equal(0);
    expect(roundingSteps(K.transpose(x))).to.equal(0);
    expect(roundingSteps(x)).to.equal(0);
    const k = K.placeholder([3, 3, 4, 6], null, 'float32', false, 'k');
    const img = K.placeholder([2, 8, 8, 4], null, 'float32', false, 'img');
    expect(roundingSteps(K.conv2d(img, k, [1, 1], 'same'))).to.equal(36);
  });

  it('is the longest path of steps, through products and reductions', () => {
    const x = K.placeholder([8, 100], null, 'float32', false, 'x');
    const w = K.placeholder([100, 5], null, 'float32', false, 'w');
    // dot (100) + tanh (1) + sum over 5 (5) + exp (1)
    const y = K.exp(K.sum(K.tanh(K.dot(x, w)), 1));
    expect(depthOf([y])).to.equal(107);
    // a shorter branch does not add
    expect(depthOf([K.add(y, K.sum(x, 1))])).to.equal(108);
  });

  it('a fused kernel counts its body; the fused graph has the depth of the unfused one', () => {
    const x = K.placeholder([4, 3], null, 'float32', false, 'x');
    const y = K.exp(K.sin(K.cos(x).mul(2)).add(x)); // cos, mul, sin, add, exp
    const g = optimize([y]).outputs;
    const fused = g.filter((n) => n.op === 'fused');
    expect(fused.length, 'one fused kernel').to.equal(1);
    expect(depthOf([y])).to.equal(5);
    expect(roundingSteps(fused[0]!)).to.equal(5);
    expect(depthOf(g)).to.equal(5);
  });

  it('a shape known only at call time is read from the call', () => {
    const x = K.placeholder([null, 64], null, 'float32', false, 'x');
    const s = K.sum(x, 0);
    expect(roundingSteps(s)).to.equal(1); // the unknown dim counts 1
    const shapes = new Map<Node, number[]>([[x, [50, 64]], [s, [64]]]);
    expect(roundingSteps(s, (n) => shapes.get(n))).to.equal(50);
  });
});

describe('the tolerance grows with depth', () => {
  it('keeps the base tolerance for shallow values and 2 gamma_d beyond it', () => {
    expect(toleranceOf('float32', 1, 0)).to.deep.equal({ atol: 1e-5, rtol: 1e-4 });
    expect(toleranceOf('float32', 1, 10)).to.deep.equal({ atol: 1e-5, rtol: 1e-4 });
    const d = 1000;
    const g = (2 * d * u32) / (1 - d * u32);
    const t = toleranceOf('float32', 2, d);
    expect(t.atol).to.be.closeTo(2 * g, 1e-12);
    expect(t.rtol).to.be.closeTo(g, 1e-12); // 2 gamma_1000 = 1.19e-4 > 1e-4
    expect(toleranceOf('float32', 1, 10000).rtol).to.be.closeTo((2e4 * u32) / (1 - 1e4 * u32), 1e-12);
    expect(unitRoundoff('float64')).to.equal(2 ** -53);
    expect(toleranceOf('int32', 5, 1e6)).to.deep.equal({ atol: 0, rtol: 0 });
    // beyond the bound's range (float16, thousands of terms) it is capped, not infinite
    expect(toleranceOf('float16', 1, 1e5).atol).to.equal(1);
  });

  it('covers float32 rounding of a deep product chain and still catches a planted 0.1% error', () => {
    // 6 products of 64-term sums in float32 against the same in float64
    const x = K.placeholder([4, 64], null, 'float64', false, 'x');
    const ws = Array.from({ length: 6 }, (_, l) => K.constant(arr([64, 64], (i) => Math.sin(i * (l + 1.3)) / 8, 'float64'), 'float64'));
    const y = ws.reduce<Node>((h, w) => K.tanh(K.dot(h, w)), x);
    const xv = arr([4, 64], (i) => Math.cos(i));
    const want = evaluate([y], { feeds: new Map([[x, xv]]) })[0]!;
    const x32 = K.placeholder([4, 64], null, 'float32', false, 'x32');
    const y32 = ws.reduce<Node>((h, w) => K.tanh(K.dot(h, K.cast(w, 'float32'))), x32);
    const got = evaluate([y32], { feeds: new Map([[x32, xv.astype('float32')]]) })[0]!;
    const depth = depthOf([y]);
    expect(depth).to.equal(6 * 65);
    expect(firstDifference(got, want.astype('float32'), undefined, depth)).to.equal(undefined);
    const planted = new NDArray(got.data.map((v, i) => (i === 5 ? v * 1.001 + 1e-3 : v)), got.shape, 'float32');
    const d = firstDifference(planted, want.astype('float32'), undefined, depth);
    expect(d?.flat).to.equal(5);
    expect(d!.tolerance.atol).to.be.below(1e-4);
  });

  it('covers a long float32 sum and still catches a planted 10% error', () => {
    const n = 100000;
    const x = K.placeholder([n], null, 'float32', false, 'x');
    const s = K.sum(x);
    expect(depthOf([s])).to.equal(n);
    // recursive summation rounded to float32 at every step (what a float32 loop does) against the float64 sum
    const terms = Float32Array.from({ length: n }, (_, i) => 0.1 + ((i * 7919) % 1000) / 1e4);
    let acc = 0;
    let exact = 0;
    for (const t of terms) {
      acc = Math.fround(acc + t);
      exact += t;
    }
    const got = new NDArray(Float32Array.of(acc), [], 'float32');
    const want = new NDArray(Float32Array.of(exact), [], 'float32');
    expect(firstDifference(got, want, undefined, depthOf([s]))).to.equal(undefined);
    const planted = new NDArray(Float32Array.of(acc * 1.1), [], 'float32');
    expect(firstDifference(planted, want, undefined, depthOf([s]))).to.not.equal(undefined);
  });
});
