// Index-set splitting (src/codegen/transform/split.ts): a kernel whose selects choose by its inner loop's
// index (a concatenation, the adjoint of slices) is rendered as one block per column range, and
// computes the same values bit for bit as the reference interpreter.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import type { Node } from '../../src/ir/node.js';

const R = 6, U = 5;
function data(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; out[i] = (s / 4294967296 - 0.5) * 4; }
  out[0] = -0; out[1] = NaN; out[2] = Infinity;
  return out;
}

function both(build: (x: Node, y: Node) => Node[]): { got: NDArray[]; want: NDArray[]; source: string } {
  const x = K.placeholder([R, 4 * U], null, 'float32', false, 'x');
  const y = K.placeholder([R, U], null, 'float32', false, 'y');
  const feeds = [new NDArray(data(R * 4 * U, 3), [R, 4 * U]), new NDArray(data(R * U, 4), [R, U])];
  const f = K.function([x, y], build(x, y));
  const got = f(feeds);
  const want = K.function([x, y], build(x, y), [], { optimizer: 'none' })(feeds);
  return { got, want, source: (f as unknown as { source(): string }).source() };
}

describe('codegen: index-set splitting of the inner loop', () => {
  it('a concatenation of four differently computed column blocks: one block per range, equal to the reference', () => {
    const gate = (x: Node, g: number) => K.slice(x, [0, g * U], [R, U]);
    const { got, want, source } = both((x, y) => [K.concatenate([K.sigmoid(gate(x, 1)).mul(y), K.tanh(gate(x, 0)), gate(x, 3).sub(y), K.exp(gate(x, 2))], -1).mul(2)]);
    expect(source).to.contain(`// columns 0 to ${U}`).and.to.contain(`// columns ${3 * U} to ${4 * U}`);
    expect(Array.from(got[0]!.data)).to.deep.equal(Array.from(want[0]!.data));
  });

  it('the gradient of gate slices (sum of unslices into one row) splits and equals the reference, with a column shared by no gate', () => {
    const x = K.placeholder([R, 4 * U + 1], null, 'float32', false, 'x');
    const y = K.placeholder([R, U], null, 'float32', false, 'y');
    const gate = (z: Node, g: number) => K.slice(z, [0, g * U], [R, U]);
    const loss = K.sum(K.sigmoid(gate(x, 0)).mul(y).add(K.tanh(gate(x, 2)).mul(gate(x, 3))).add(K.square(gate(x, 1))));
    const [g] = K.gradients(loss, [x]);
    const feeds = [new NDArray(data(R * (4 * U + 1), 5), [R, 4 * U + 1]), new NDArray(data(R * U, 6), [R, U])];
    const f = K.function([x, y], [g!]);
    const got = f(feeds)[0]!;
    const want = K.function([x, y], [g!], [], { optimizer: 'none' })(feeds)[0]!;
    expect((f as unknown as { source(): string }).source()).to.contain('// columns');
    expect(Array.from(got.data)).to.deep.equal(Array.from(want.data));
  });

  it('a select on the outer loop\'s index, or on no index, is left whole', () => {
    const { got, want, source } = both((_x, y) => [K.concatenate([y, y.mul(3)], 0)]);
    expect(source).to.not.contain('// columns');
    expect(Array.from(got[0]!.data)).to.deep.equal(Array.from(want[0]!.data));
  });
});
