// autodiff.scan_checkpoints (Theano's scan_checkpoints): K.rnn's values and gradients, with only
// every N-th state kept by the forward Scan the gradient reads; the reference is K.rnn itself
// (the stored policy) and finite differences.
import { expect } from 'chai';
import { autodiff, backend as K, verify_grad } from '../../src/index.js';
import { topoSort } from '../../src/ir/graph.js';
import { NDArray } from '../../src/ir/ndarray.js';
import type { Node } from '../../src/ir/node.js';
import { expectClose } from '../helpers/assert.js';
import { grid } from '../helpers/values.js';

const T = 7;
const small = (a: NDArray, k = 4) => new NDArray(Array.from(a.data, (v) => v / k), a.shape, a.dtype);
const X = small(grid([2, T, 3], 1));
const W = small(grid([3, 2], 2));
const U = small(grid([2, 2], 3));
const H0 = small(grid([2, 2], 4));
const B = small(grid([2], 5));

/** A tanh RNN with a second state (a running sum) and a constant (a bias). */
const step = (w: Node, u: Node) => (xt: Node, st: Node[]): [Node, Node[]] => {
  const h = K.tanh(K.add(K.add(K.dot(xt, w), K.dot(st[0]!, u)), st[2]!));
  return [K.square(h), [h, K.add(st[1]!, h)]];
};
type Rnn = (x: Node, w: Node, u: Node, h: Node, b: Node) => [Node, Node, Node[]];
const plain: Rnn = (x, w, u, h, b) => K.rnn(step(w, u), x, [h, K.zeros_like(h)], { constants: [b] });
const checkpointed = (n: number): Rnn => (x, w, u, h, b) => autodiff.scan_checkpoints(step(w, u), x, [h, K.zeros_like(h)], { save_every_N: n, constants: [b] });
/** Every result in one scalar, so each item's cotangent is exercised. */
const loss = ([last, outs, [h, s]]: [Node, Node, Node[]]) => K.add(K.add(K.sum(K.multiply(outs, outs)), K.sum(last)), K.add(K.sum(K.sin(h!)), K.sum(s!)));

function run(build: Rnn): NDArray[] {
  const phs = [X, W, U, H0, B].map((v, i) => K.placeholder(v.shape, null, 'float64', false, `in${i}`));
  const r = build(...(phs as [Node, Node, Node, Node, Node]));
  const grads = K.gradients(loss(r), phs);
  return K.function(phs, [r[0], r[1], ...r[2], ...grads], [], { device: 'cpu' })([X, W, U, H0, B]);
}

describe('autodiff.scan_checkpoints', function () {
  this.timeout(60000);
  const stored = run(plain);

  for (const n of [1, 2, 3, T]) {
    it(`save_every_N = ${n}: K.rnn's outputs, states and gradients (x, W, U, h0, the constant), to 1e-12`, () => {
      const got = run(checkpointed(n));
      expect(got.length).to.equal(stored.length);
      got.forEach((g, i) => {
        expect(g.shape, `result ${i}`).to.deep.equal(stored[i]!.shape);
        expectClose(g, stored[i]!, { atol: 1e-12, rtol: 1e-12 });
      });
    });
  }

  it('a batch of unknown size (placeholder (None, T, 3)): K.rnn\'s outputs and gradient', () => {
    const x = K.placeholder([null, T, 3], null, 'float64', false, 'x');
    const w = K.placeholder([3, 2], null, 'float64', false, 'w');
    const s = (xt: Node, st: Node[]): [Node, Node[]] => { const h = K.tanh(K.add(K.dot(xt, w), st[0]!)); return [h, [h]]; };
    const h0 = K.zeros_like(K.dot(K.sum(x, 1), w));
    const results = (r: [Node, Node, Node[]]) => [r[1], ...K.gradients(K.sum(K.square(r[1])), [w, x])];
    const want = K.function([x, w], results(K.rnn(s, x, [h0])))([X, W]);
    const got = K.function([x, w], results(autodiff.scan_checkpoints(s, x, [h0], { save_every_N: 3 })))([X, W]);
    got.forEach((g, i) => expectClose(g, want[i]!, { atol: 1e-12, rtol: 1e-12 }));
  });

  it('the gradient agrees with finite differences (verify_grad, float64)', () => {
    verify_grad((x, w, u, h, b) => loss(checkpointed(3)(x!, w!, u!, h!, b!)), [X, W, U, H0, B]);
  });

  it('the forward Scan the gradient reads walks T / N segments: only the segment starts are stacked', () => {
    const phs = [X, W, U, H0, B].map((v, i) => K.placeholder(v.shape, null, 'float64', false, `in${i}`));
    const x = K.placeholder([2, 8, 3], null, 'float64', false, 'x8');
    const grads = (build: Rnn) => K.gradients(loss(build(x, phs[1]!, phs[2]!, phs[3]!, phs[4]!)), [phs[1]!]);
    // Scans at the top level of the graph (not inside another Scan's body) and their step counts.
    const topSteps = (outs: Node[]) => topoSort(outs).filter((m) => m.op === 'scan').map((m) => m.inputs[0]!.shape[0]);
    expect(new Set(topSteps(grads(plain)))).to.deep.equal(new Set([8]));
    expect(new Set(topSteps(grads(checkpointed(4))))).to.deep.equal(new Set([2]));
    expect(new Set(topSteps(grads(checkpointed(8))))).to.deep.equal(new Set([1]));
  });

  it('clear errors: save_every_N out of range, unknown options, a time axis of unknown length', () => {
    const x = K.placeholder([2, T, 3], null, 'float64');
    const h = K.placeholder([2, 2], null, 'float64');
    const w = K.placeholder([3, 2], null, 'float64');
    const s = (xt: Node, st: Node[]): [Node, Node[]] => { const y = K.tanh(K.add(K.dot(xt, w), st[0]!)); return [y, [y]]; };
    expect(() => autodiff.scan_checkpoints(s, x, [h], { save_every_N: 0 })).to.throw(/autodiff.scan_checkpoints: save_every_N must be an integer from 1 to the 7 time steps of inputs, got number 0/);
    expect(() => autodiff.scan_checkpoints(s, x, [h], { save_every_N: 8 })).to.throw(/from 1 to the 7 time steps/);
    expect(() => autodiff.scan_checkpoints(s, x, [h], { save_every_N: 2, mask: null } as never)).to.throw(/unknown option "mask".*not supported/);
    expect(() => autodiff.scan_checkpoints(s, K.placeholder([2, null, 3], null, 'float64'), [h], { save_every_N: 2 })).to.throw(/number of time steps must be static/);
  });
});
