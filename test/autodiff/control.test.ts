// verify_grad through Scan (K.rnn in every form, map_fn, the folds, nested scans), through
// ctc_batch_cost, and second order; the gradient of an rnn is one reverse Scan, not T copies.
import { expect } from 'chai';
import { backend as K, debugprint, verify_grad } from '../../src/index.js';
import { NDArray } from '../../src/ir/ndarray.js';
import type { Node } from '../../src/ir/node.js';
import { topoSort } from '../../src/ir/graph.js';
import { evaluate } from '../../src/ir/interpret.js';
import type { ScanAttrs } from '../../src/ir/ops/control.js';
import { optimizeScans } from '../../src/passes/scan.js';
import { expectClose } from '../helpers/assert.js';
import { gradTable } from '../helpers/gradtable.js';
import { grid } from '../helpers/values.js';

const small = (a: NDArray, k = 4) => new NDArray(Array.from(a.data, (v) => v / k), a.shape, a.dtype);
const X = small(grid([2, 4, 3], 1)); // (samples, time, features)
const W = small(grid([3, 2], 2));
const U = small(grid([2, 2], 3));
const H0 = small(grid([2, 2], 4));
const MASK = [[1, 0, 1, 1], [1, 1, 0, 0]];

const tanhStep = (w: Node, u: Node) => (xt: Node, st: Node[]): [Node, Node[]] => {
  const h = K.tanh(K.add(K.dot(xt, w), K.dot(st[0]!, u)));
  return [h, [h]];
};
/** Every rnn result in one scalar-able output, so each item's cotangent is checked. */
const everything = ([last, outs, states]: [Node, Node, Node[]]) =>
  K.add(K.add(K.sum(outs, 1), last), states.reduce((p, s) => K.add(p, K.sum(s, -1, true)), K.zeros_like(last)));

const rnnCases = [false, true].flatMap((back) => [false, true].flatMap((masked) => [false, true].map((unroll) => ({
  name: `rnn go_backwards=${back} mask=${masked} unroll=${unroll}`,
  inputs: [X, W, U, H0],
  build: (x: Node, w: Node, u: Node, h: Node) => everything(K.rnn(tanhStep(w, u), x, [h], { go_backwards: back, mask: masked ? K.constant(MASK) : null, unroll })),
}))));

gradTable('gradients: K.rnn', [
  ...rnnCases,
  {
    name: 'rnn with a constant and a rank-3 state',
    inputs: [X, W, H0, small(grid([2, 2, 2], 5)), small(grid([2], 6))],
    build: (x, w, h, c, bias) => everything(K.rnn((xt, st) => {
      const hn = K.tanh(K.add(K.add(K.dot(xt, w), st[0]!), st[2]!));
      const cn = K.add(K.multiply(st[1]!, 0.5), K.expand_dims(hn, 1));
      return [hn, [hn, cn]];
    }, x, [h, c], false, K.constant(MASK), [bias])),
  },
  {
    name: 'rnn without states',
    inputs: [X, W],
    build: (x, w) => K.rnn((xt) => [K.sin(K.dot(xt, w)), []], x, [], { go_backwards: true })[1],
  },
]);

gradTable('gradients: map_fn and folds', [
  { name: 'map_fn', inputs: [grid([4, 3], 7)], build: (x) => K.map_fn((r) => K.sum(K.square(r)), x) },
  { name: 'map_fn reading a weight', inputs: [grid([4, 3], 8), grid([3], 9)], build: (x, v) => K.map_fn((r) => K.multiply(K.sin(r), v), x) },
  { name: 'foldl with initializer', inputs: [small(grid([5, 2], 10)), grid([2], 11)], build: (x, a0) => K.foldl((a, r) => K.add(K.multiply(a, r), r), x, a0) },
  { name: 'foldr with initializer', inputs: [small(grid([5, 2], 12)), grid([2], 13)], build: (x, a0) => K.foldr((a, r) => K.add(K.multiply(a, r), r), x, a0) },
  { name: 'foldl without initializer', inputs: [small(grid([4, 2], 14))], build: (x) => K.foldl((a, r) => K.add(K.sin(a), r), x) },
  { name: 'foldr without initializer', inputs: [small(grid([4, 2], 15))], build: (x) => K.foldr((a, r) => K.subtract(K.multiply(a, a), r), x) },
  { name: 'nested map_fn', inputs: [grid([3, 4], 16), grid([], 17)], build: (x, c) => K.map_fn((r) => K.map_fn((v) => K.multiply(K.sin(v), K.add(K.sum(r), c)), r), x) },
  { name: 'switch inside a step', inputs: [grid([4, 3], 18)], build: (x) => K.map_fn((r) => K.switch(K.greater(r, 0), K.square(r), K.negative(r)), x) },
]);

// Keras' CTC test inputs, which are probabilities (the blank last).
const CTC_PRED = [
  [[0.633766, 0.221185, 0.0917319, 0.0129757, 0.0142857, 0.0260553],
    [0.111121, 0.588392, 0.278779, 0.0055756, 0.00569609, 0.010436],
    [0.0357786, 0.633813, 0.321418, 0.00249248, 0.00272882, 0.0037688],
    [0.0663296, 0.643849, 0.280111, 0.00283995, 0.0035545, 0.00331533]],
  [[0.30176, 0.28562, 0.0831517, 0.0862751, 0.0816851, 0.161508],
    [0.24082, 0.397533, 0.0557226, 0.0546814, 0.0557528, 0.19549],
    [0.230246, 0.450868, 0.0389607, 0.038309, 0.0391602, 0.202456],
    [0.280884, 0.429522, 0.0326593, 0.0339046, 0.0326856, 0.190345]],
];

gradTable('gradients: ctc_batch_cost', [
  {
    name: 'ctc_batch_cost with respect to y_pred',
    inputs: [CTC_PRED],
    build: (yp) => K.ctc_batch_cost(K.constant([[0, 1, 2], [1, 1, -1]]), yp, K.constant([[4], [3]], 'int32'), K.constant([[3], [2]], 'int32')),
  },
  {
    name: 'ctc_batch_cost of a softmax',
    inputs: [grid([1, 5, 4], 19)],
    build: (z) => K.ctc_batch_cost(K.constant([[2, 0]]), K.softmax(z), K.constant([[5]], 'int32'), K.constant([[2]], 'int32')),
  },
]);

describe('gradients: Scan structure', () => {
  it('the gradient of a 50-step rnn is one reverse Scan and matches finite differences', () => {
    const x = small(grid([2, 50, 3], 20), 8);
    const build = (xs: Node, w: Node, u: Node, h: Node) => K.rnn(tanhStep(w, u), xs, [h])[0];
    verify_grad(build, [x, W, U, H0]);
    const ph = (a: NDArray, name: string) => K.placeholder(a.shape, null, 'float64', false, name);
    const [xs, w, u, h] = [ph(x, 'x'), ph(W, 'w'), ph(U, 'u'), ph(H0, 'h0')];
    const grads = K.gradients(K.sum(build(xs, w, u, h)), [w, u, h, xs]);
    // The forward scan the loss reads, the same scan also stacking the residual (the sum of the step's
    // two matrix products, which the pullback reads only through that sum) for the reverse scan, and
    // the reverse scan; the scan pass merges the first two.
    expect(topoSort(grads).filter((n) => n.op === 'scan')).to.have.length(3);
    const scans = topoSort(optimizeScans(grads)).filter((n) => n.op === 'scan');
    const reverse = scans.filter((n) => (n.attrs as unknown as ScanAttrs).go_backwards);
    expect(scans).to.have.length(2); // the forward scan and its reverse
    expect(reverse).to.have.length(1);
    const forward = scans.find((n) => !(n.attrs as unknown as ScanAttrs).go_backwards)!;
    expect((forward.attrs as unknown as ScanAttrs).body.outputs.map((o) => o.op)).to.deep.equal(['tanh', 'add']);
    expect((forward.attrs as unknown as ScanAttrs).body.outputs[1]!.inputs.map((i) => i.op)).to.deep.equal(['dot', 'dot']);
    // the reverse step reads them: its products are the pullback's (g u^T, x^T g, h^T g; g w^T for xs), none recomputes the forward's
    const revOps = topoSort((reverse[0]!.attrs as unknown as ScanAttrs).body.results);
    expect(revOps.filter((n) => n.op === 'dot')).to.have.length(4);
    expect(topoSort(grads).filter((n) => n.op === 'tanh').length).to.be.lessThan(5); // no unrolled copies
    expect(debugprint(grads)).to.match(/scan\{go_backwards=true/);
  });
  it('a product the pullback also reads on its own stays stacked beside the sum (gradients match finite differences)', () => {
    const x = small(grid([2, 20, 3], 23), 8); // long enough to stay a Scan (short ones are unrolled)
    // d(tanh(a + p) * p)/dp needs p itself: the sum a + p cannot stand for it
    const step = (w: Node, u: Node) => (xt: Node, st: Node[]): [Node, Node[]] => {
      const p = K.dot(st[0]!, u);
      const h = K.tanh(K.add(K.dot(xt, w), p)).mul(p);
      return [h, [h]];
    };
    const build = (xs: Node, w: Node, u: Node, h: Node) => K.rnn(step(w, u), xs, [h])[0];
    verify_grad(build, [x, W, U, H0]);
    const ph = (a: NDArray, name: string) => K.placeholder(a.shape, null, 'float64', false, name);
    const [xs, w, u, h] = [ph(x, 'x'), ph(W, 'w'), ph(U, 'u'), ph(H0, 'h0')];
    const grads = K.gradients(K.sum(build(xs, w, u, h)), [w, u, h, xs]);
    const forward = topoSort(optimizeScans(grads)).filter((n) => n.op === 'scan').find((n) => !(n.attrs as unknown as ScanAttrs).go_backwards)!;
    expect((forward.attrs as unknown as ScanAttrs).body.outputs.map((o) => o.op)).to.deep.equal(['mul', 'dot', 'dot']);
  });

  it('gradients of a lowered graph (only the last step kept) agree with the unlowered ones', () => {
    const ph = (a: NDArray, name: string) => K.placeholder(a.shape, null, 'float64', false, name);
    const x = small(grid([2, 20, 3], 21), 8);
    const [xs, w, u, h] = [ph(x, 'x'), ph(W, 'w'), ph(U, 'u'), ph(H0, 'h0')];
    const loss = K.sum(K.rnn(tanhStep(w, u), xs, [h], false, K.constant(new Array(2).fill(0).map((_, s) => Array.from({ length: 20 }, (_, t) => ((s + t) % 4 === 0 ? 0 : 1)))))[0]);
    const [lowered] = optimizeScans([loss]);
    const keep = (topoSort([lowered!]).find((n) => n.op === 'scan')!.attrs as unknown as ScanAttrs).keep;
    expect(keep).to.include('last');
    const feeds = new Map<Node, NDArray>([[xs, x], [w, W], [u, U], [h, H0]]);
    const want = evaluate(K.gradients(loss, [w, u, h, xs]), { feeds });
    const got = evaluate(K.gradients(lowered!, [w, u, h, xs]), { feeds });
    got.forEach((g, i) => expectClose(g, want[i]!, { atol: 1e-12, rtol: 1e-10 }, `gradient ${i}`));
  });

  it('second order: the gradient of a gradient through a Scan matches finite differences', () => {
    verify_grad((x, w, u, h) => {
      const loss = K.sum(K.rnn(tanhStep(w, u), x, [h])[1]);
      return K.gradients(loss, [w])[0]!;
    }, [X, W, U, H0]);
  });

  it('the Theano CTC helpers and a second derivative of the CTC loss say they have no gradient', () => {
    const p = K.placeholder([5, 6], null, 'float64');
    const cost = K.ctc_cost(p, K.constant([0, 1], 'int32'));
    expect(() => K.gradients(cost, [p])).to.throw(/cannot differentiate through ctc_path_probs: it is a Theano CTC helper without a derivative; differentiate K\.ctc_batch_cost instead/);
    const yp = K.placeholder([1, 4, 3], null, 'float64');
    const loss = K.sum(K.ctc_batch_cost(K.constant([[0]]), yp, K.constant([[4]], 'int32'), K.constant([[1]], 'int32')));
    const [g] = K.gradients(loss, [yp]);
    expect(() => K.gradients(K.sum(g!), [yp])).to.throw(/cannot differentiate through ctc_loss_grad: second derivatives of the CTC loss are not implemented/);
  });
});
