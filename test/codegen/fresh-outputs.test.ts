// Result arrays made without zeros (src/codegen/cpu/driver.ts freshTarget, runtime rt.fresh): only
// where the first step using the array stores every element before any is read (a padding's kernel
// stores its zeros itself, a fused concatenation every column range). A matrix product's result
// (not a loop kernel's) and short results stay zeroed.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import { runtimeHelpers } from '../../src/codegen/cpu/runtime.js';
import type { Node } from '../../src/ir/node.js';

function compile(f: (x: Node) => Node, shape: number[]): { source: string; run: (d: Float32Array) => Float32Array; ref: (d: Float32Array) => Float32Array } {
  const x = K.placeholder(shape, null, 'float32');
  const fn = K.function([x], [f(x)]);
  const ref = K.function([x], [f(x)], [], { optimizer: 'none' });
  const call = (g: typeof fn) => (d: Float32Array) => g([new NDArray(d, shape, 'float32')])[0]!.data as Float32Array;
  return { source: (fn as unknown as { source(): string }).source(), run: call(fn), ref: call(ref) };
}

function data(n: number): Float32Array {
  const d = new Float32Array(n);
  for (let i = 0; i < n; i++) d[i] = Math.sin(i * 0.37) * 3;
  return d;
}

describe('codegen/cpu results made without zeros', () => {
  it('rt.fresh: an array of the length asked for, over a buffer of its own', () => {
    const a = runtimeHelpers.fresh(Float32Array, 70000);
    expect(a).to.be.instanceOf(Float32Array);
    expect(a.length).to.equal(70000);
    expect(a.byteOffset).to.equal(0);
    expect(a.buffer.byteLength).to.equal(280000);
    const b = runtimeHelpers.fresh(Float64Array, 3);
    expect(b.length).to.equal(3);
  });

  it('a softmax and an elementwise chain writing every element: made fresh, the reference\'s values', () => {
    for (const f of [(x: Node) => K.softmax(x), (x: Node) => K.tanh(x).mul(2).add(1)]) {
      const c = compile(f, [300, 300]);
      expect(c.source).to.contain('rt.fresh(Float32Array, 90000)');
      // called twice: the second array's memory may be the first's, freed
      const d = data(90000);
      for (let k = 0; k < 2; k++) {
        const got = c.run(d), want = c.ref(d);
        for (let i = 0; i < want.length; i++) if (!(Math.abs(got[i]! - want[i]!) <= 1e-6 * Math.max(1, Math.abs(want[i]!)))) expect.fail(`element ${i}: ${got[i]}, the reference's ${want[i]}`);
      }
    }
  });

  it('a padding and a concatenation made fresh; a product and short results zeroed; the reference\'s values over memory left dirty', () => {
    const cases: [string, (x: Node) => Node, number[], boolean][] = [
      ['temporal padding', (x) => K.temporal_padding(x, [3, 5]), [20, 300, 30], true],
      ['concatenation', (x) => K.concatenate([x, K.exp(x)], 1), [300, 300], true],
      ['product', (x) => K.dot(x, x), [300, 300], false],
      ['short softmax', (x) => K.softmax(x), [100, 100], false],
    ];
    for (const [name, f, shape, fresh] of cases) {
      const n = shape.reduce((a, b) => a * b, 1);
      const c = compile(f, shape);
      if (fresh) expect(c.source, name).to.contain('rt.fresh(');
      else expect(c.source, name).to.not.contain('rt.fresh(');
      const d = data(n);
      // garbage left in freed memory would show here: fill some first
      for (let k = 0; k < 3; k++) runtimeHelpers.fresh(Float32Array, 4 * n).fill(12345);
      const got = c.run(d), want = c.ref(d);
      expect(got.length, name).to.equal(want.length);
      for (let i = 0; i < want.length; i++) if (!(Math.abs(got[i]! - want[i]!) <= 1e-4 * Math.max(1, Math.abs(want[i]!)))) expect.fail(`${name}: element ${i}: ${got[i]}, the reference's ${want[i]}`);
    }
  });
});
