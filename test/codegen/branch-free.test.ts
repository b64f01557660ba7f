// max(x, 0) and min(x, 0) in the JavaScript kernels are the runtime's branch-free forms
// (rt.max0 / rt.min0, src/codegen/cpu/runtime.ts): equal to Math.max / Math.min for every value.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import { runtimeHelpers } from '../../src/codegen/cpu/runtime.js';

const EDGES = [0, -0, NaN, Infinity, -Infinity, 5e-324, -5e-324, 1e-310, -1e-310, 2 ** 1023, -(2 ** 1023), 2 ** 1023 * (1 - 2 ** -53),
  -(2 ** 1023) * (1 - 2 ** -53), 1.7976931348623157e308, -1.7976931348623157e308, 1, -1, 3.4e38, -3.4e38, 0.1, -0.1];

function values(n: number): number[] {
  const out = [...EDGES];
  let s = 7;
  while (out.length < n) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const u = s / 4294967296 - 0.5;
    out.push(u * 10 ** ((out.length % 61) * 10 - 300)); // magnitudes from 1e-300 to 1e300, both signs
  }
  return out;
}

describe('codegen/cpu branch-free max(x, 0) and min(x, 0)', () => {
  it('rt.max0 and rt.min0 equal Math.max(x, 0) and Math.min(x, 0) bit for bit (signed zeros, NaN, infinities, subnormals, near 2^1023)', () => {
    for (const x of values(20000)) {
      expect(Object.is(runtimeHelpers.max0(x), Math.max(x, 0)), `max0(${x})`).to.equal(true);
      expect(Object.is(runtimeHelpers.min0(x), Math.min(x, 0)), `min0(${x})`).to.equal(true);
    }
  });

  for (const dtype of ['float32', 'float64'] as const) {
    it(`K.relu and K.minimum(x, 0) over ${dtype} compile to them and equal the reference`, () => {
      const xs = values(1000);
      const arr = dtype === 'float32' ? Float32Array.from(xs) : Float64Array.from(xs);
      const x = K.placeholder([xs.length], null, dtype);
      const f = K.function([x], [K.relu(x), K.minimum(x, 0), K.maximum(K.constant(0, dtype), x.mul(2))]);
      const [r, m, d] = f([new NDArray(arr, [xs.length], dtype)]);
      const src = (f as unknown as { source(): string }).source();
      expect(src).to.contain('rt.max0(').and.to.contain('rt.min0(').and.not.contain('Math.max(');
      arr.forEach((v, i) => {
        expect(Object.is(r!.data[i], Math.max(v, 0)), `relu(${v})`).to.equal(true);
        expect(Object.is(m!.data[i], Math.min(v, 0)), `min(${v}, 0)`).to.equal(true);
        const twice = dtype === 'float32' ? Math.fround(v * 2) : v * 2;
        expect(Object.is(d!.data[i], Math.max(0, twice)), `max(0, 2 * ${v})`).to.equal(true);
      });
    });
  }
});
