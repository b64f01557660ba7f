import { expect } from 'chai';
import { backend as K } from '../../src/index.js';
import { apply } from '../../src/ir/build.js';
import { NDArray } from '../../src/ir/ndarray.js';
import type { Node } from '../../src/ir/node.js';
import { evaluate } from '../../src/ir/interpret.js';
import { stabilizePass } from '../../src/passes/stabilize.js';
import { specializePass } from '../../src/passes/specialize.js';
import { c, expectGraph, expectSameValues, op, show, values } from './helpers.js';
import { canonicalizePass } from '../../src/passes/canonicalize.js';
import { runPasses } from '../../src/passes/pass.js';
import { topoSort } from '../../src/ir/graph.js';

const ax = (x: Node, name: string, axes: number[], keepdims: boolean) => apply(name, [x], { axes, keepdims });
/** Softmax as src/api composes it: exp(x - max(x, -1, keepdims)) / sum(..., -1, keepdims). */
function softmax(x: Node): Node {
  const last = [x.ndim - 1];
  const e = op('exp', op('sub', x, ax(x, 'max', last, true)));
  return op('div', e, ax(e, 'sum', last, true));
}

describe('passes/stabilize', () => {
  const x = K.placeholder([2, 3], null, 'float64', false, 'x');

  const rules: [string, () => Node, () => Node][] = [
    ['log(1 + x) -> log1p(x)', () => op('log', op('add', c(1), x)), () => op('log1p', x)],
    ['log(x + 1) -> log1p(x)', () => op('log', op('add', x, c(1))), () => op('log1p', x)],
    ['exp(x) - 1 -> expm1(x)', () => op('sub', op('exp', x), c(1)), () => op('expm1', x)],
    ['log(exp(x)) -> x', () => op('log', op('exp', x)), () => x],
    ['log(sigmoid(x)) -> -softplus(-x)', () => op('log', op('sigmoid', x)), () => op('neg', op('softplus', op('neg', x)))],
    ['log(1 - sigmoid(x)) -> -softplus(x)', () => op('log', op('sub', c(1), op('sigmoid', x))), () => op('neg', op('softplus', x))],
  ];
  for (const [name, before, after] of rules) {
    it(name, () => {
      const b = [before()];
      const a = expectGraph(stabilizePass, b, [after()]);
      expectSameValues(b, a, { atol: 1e-12, rtol: 1e-9 });
    });
  }

  it('log(softmax(x)) -> (x - max x) - log(sum(exp(x - max x)))', () => {
    const before = [op('log', softmax(x))];
    const shifted = op('sub', x, ax(x, 'max', [1], true));
    const expected = op('sub', shifted, op('log', ax(op('exp', shifted), 'sum', [1], true)));
    const a = expectGraph(stabilizePass, before, [expected]);
    expectSameValues(before, a, { atol: 1e-12, rtol: 1e-12 });
  });

  it('log(softmax) of a softmax written without the max shift gets the shift', () => {
    const e = op('exp', x);
    const before = [op('log', op('div', e, ax(e, 'sum', [1], true)))];
    const shifted = op('sub', x, ax(x, 'max', [1], true));
    const expected = op('sub', shifted, op('log', ax(op('exp', shifted), 'sum', [1], true)));
    const a = expectGraph(stabilizePass, before, [expected]);
    expectSameValues(before, a, { atol: 1e-12, rtol: 1e-9 });
  });

  it('log-softmax stays finite where the composition gives -inf and NaN', () => {
    const big = K.placeholder([1, 3], null, 'float64');
    const before = [op('log', softmax(big))];
    const after = stabilizePass.run({ outputs: before }).outputs;
    const feeds = new Map([[big, new NDArray([0, 800, -800], [1, 3], 'float64')]]);
    const naive = evaluate(before, { feeds })[0]!.toArray() as number[][];
    const stable = evaluate(after, { feeds })[0]!.toArray() as number[][];
    expect(naive[0]![2]).to.equal(-Infinity);
    expect(stable[0]).to.deep.equal([-800, 0, -1600]);
  });

  it('softmax + categorical crossentropy -> one softmax_cross_entropy op', () => {
    const t = K.placeholder([2, 3], null, 'float64', false, 't');
    const before = [op('neg', ax(op('mul', t, op('log', softmax(x))), 'sum', [1], false))];
    const a = expectGraph(stabilizePass, before, [apply('softmax_cross_entropy', [x, t], { axis: 1 })]);
    expectSameValues(before, a, { atol: 1e-12, rtol: 1e-12 });
  });

  it("Keras' clipped crossentropy of a softmax uses the logits (TensorFlow's numbers)", () => {
    const t = K.placeholder([2, 3], null, 'float64', false, 't');
    const p = softmax(x);
    const rescaled = op('div', p, ax(p, 'sum', [1], true));
    const clipped = op('minimum', op('maximum', rescaled, c(1e-7)), c(1 - 1e-7));
    const before = [op('neg', ax(op('mul', t, op('log', clipped)), 'sum', [1], false))];
    const a = expectGraph(stabilizePass, before, [apply('softmax_cross_entropy', [x, t], { axis: 1 })]);
    expectSameValues(before, a, { atol: 1e-9, rtol: 1e-9 }); // moderate logits: the clip is inactive
  });

  it('max-shifts log(sum(exp(x))) (keepdims false) and stays finite for large x', () => {
    const before = [op('log', ax(op('exp', x), 'sum', [1], false))];
    const m = ax(x, 'max', [1], true);
    const safe = op('where', op('equal', op('sub', m, m), c(0)), m, c(0));
    const expected = op('add', ax(safe, 'sum', [1], false), op('log', ax(op('exp', op('sub', x, safe)), 'sum', [1], false)));
    const a = expectGraph(stabilizePass, before, [expected]);
    expectSameValues(before, a, { atol: 1e-12, rtol: 1e-12 });
    const feeds = new Map([[x, new NDArray([1e4, 1e-4, 0, -Infinity, -Infinity, -Infinity], [2, 3], 'float64')]]);
    expect(evaluate(a, { feeds })[0]!.toArray()).to.deep.equal([1e4, -Infinity]);
  });

  it('leaves an already shifted logsumexp alone', () => {
    const m = ax(x, 'max', [1], true);
    const before = [op('log', ax(op('exp', op('sub', x, m)), 'sum', [1], true))];
    expectGraph(stabilizePass, before, before);
  });
});

describe('passes/specialize', () => {
  const x = K.placeholder([4], null, 'float64');
  const rules: [string, () => Node, () => Node][] = [
    ['pow(x, 2) -> x*x', () => op('pow', x, c(2)), () => op('mul', x, x)],
    ['pow(x, 3) -> x*x*x', () => op('pow', x, c(3)), () => op('mul', op('mul', x, x), x)],
    ['pow(x, 0.5) -> sqrt(x)', () => op('pow', x, c(0.5)), () => op('sqrt', x)],
    ['pow(x, -1) -> 1/x', () => op('pow', x, c(-1)), () => op('reciprocal', x)],
    ['pow(x, -0.5) -> 1/sqrt(x)', () => op('pow', x, c(-0.5)), () => op('reciprocal', op('sqrt', x))],
  ];
  for (const [name, before, after] of rules) {
    it(name, () => {
      const b = [before()];
      expectGraph(specializePass, b, [after()]);
    });
  }

  describe('sum((a*b)^2) of an outer product as sum(a^2) * sum(b^2) (per-example gradient norms)', () => {
    const sq = (t: Node) => op('square', t);
    const sum = (t: Node, axes: number[], keepdims = false) => apply('sum', [t], { axes, keepdims });
    const a = K.placeholder([5, 4, 1], null, 'float64', false, 'a');
    const b = K.placeholder([5, 1, 3], null, 'float64', false, 'b');
    it('vmap\'s form: (B, m, 1) * (B, 1, n) summed over m and n', () => {
      const before = [sum(sq(op('mul', a, b)), [1, 2])];
      const after = expectGraph(specializePass, before, [
        apply('squeeze', [apply('squeeze', [op('mul', sum(sq(a), [1], true), sum(sq(b), [2], true))], { axis: 2 })], { axis: 1 }),
      ]);
      expectSameValues(before, after);
    });
    it('p*p for the square, axes unsorted, keepdims', () => {
      const p = op('mul', a, b);
      const before = [sum(op('mul', p, p), [2, 1], true)];
      const after = expectGraph(specializePass, before, [op('mul', sum(sq(a), [1], true), sum(sq(b), [2], true))]);
      expectSameValues(before, after);
    });
    it('a batch-1 gradient\'s form: dot((m, 1), (1, n)) summed over both axes', () => {
      const u = K.placeholder([4, 1], null, 'float64', false, 'u');
      const v = K.placeholder([1, 3], null, 'float64', false, 'v');
      const before = [sum(sq(op('dot', u, v)), [0, 1])];
      const after = expectGraph(specializePass, before, [
        apply('squeeze', [apply('squeeze', [op('mul', sum(sq(u), [0], true), sum(sq(v), [1], true))], { axis: 1 })], { axis: 0 }),
      ]);
      expectSameValues(before, after);
    });
    it('operands of lower rank broadcast from the right', () => {
      const r = K.placeholder([3], null, 'float64', false, 'r');
      const before = [sum(sq(op('mul', a, r)), [1, 2])];
      const after = expectGraph(specializePass, before, [
        apply('squeeze', [apply('squeeze', [op('mul', sum(sq(a), [1], true), sum(sq(r), [0], true))], { axis: 2 })], { axis: 1 }),
      ]);
      expectSameValues(before, after);
    });
    it('kept where a reduced axis varies in both factors, or only one factor varies, or the dtype is not float', () => {
      const full = K.placeholder([5, 4, 3], null, 'float64');
      const i = K.placeholder([5, 4, 1], null, 'int32');
      const j = K.placeholder([5, 1, 3], null, 'int32');
      for (const before of [
        [sum(sq(op('mul', full, b)), [1, 2])], // axis 2 varies in both
        [sum(sq(op('mul', a, b)), [1])], // only a varies along the reduced axis
        [sum(sq(op('mul', i, j)), [1, 2])],
        [sum(sq(op('dot', K.placeholder([4, 2]), K.placeholder([2, 3]))), [0, 1])], // a real contraction
      ]) expectGraph(specializePass, before, before);
    });
    it('float32 sums stay within the float32 bound of the unfactored sum (values against float64)', () => {
      const a32 = K.placeholder([2, 300, 1], null, 'float32', false, 'a');
      const b32 = K.placeholder([2, 1, 200], null, 'float32', false, 'b');
      const before = [sum(sq(op('mul', a32, b32)), [1, 2])];
      const after = specializePass.run({ outputs: before }).outputs;
      const feeds = new Map<Node, NDArray>([[a32, values([2, 300, 1], 'float32', 3)], [b32, values([2, 1, 200], 'float32', 4)]]);
      const exact = [0, 1].map((e) => {
        let sa = 0;
        let sb = 0;
        for (let k = 0; k < 300; k++) sa += Number(feeds.get(a32)!.data[e * 300 + k]) ** 2;
        for (let k = 0; k < 200; k++) sb += Number(feeds.get(b32)!.data[e * 200 + k]) ** 2;
        return sa * sb;
      });
      // gamma_{m+n+1} (m + n + 1 roundings, u = 2^-24) relative: the factored sum's bound
      const bound = ((300 + 200 + 1) * 2 ** -24) / (1 - (300 + 200 + 1) * 2 ** -24);
      const got = evaluate(after, { feeds })[0]!;
      exact.forEach((x, e) => expect(Math.abs(Number(got.data[e]) - x) / x).to.be.at.most(bound));
    });
  });

  it('keeps pow(x, -1) of an int tensor (reciprocal would make it float)', () => {
    const i = K.placeholder([4], null, 'int32');
    const before = [op('pow', i, apply('constant', [], { value: new NDArray([-1], [], 'int32') }))];
    expectGraph(specializePass, before, before);
  });
});

describe('passes/stabilize on the graphs src/api builds', () => {
  const run = (outs: Node[]) => runPasses([canonicalizePass, stabilizePass], { outputs: outs }, { verify: true }).outputs;
  const has = (outs: readonly Node[], op: string) => topoSort(outs).some((n) => n.op === op);

  it('K.categorical_crossentropy(K.softmax(x), t) becomes softmax_cross_entropy', () => {
    const x = K.placeholder([4, 5], null, 'float64');
    const t = K.placeholder([4, 5], null, 'float64');
    const before = [K.categorical_crossentropy(K.softmax(x), t)];
    const after = run(before);
    expect(has(after, 'softmax_cross_entropy'), show(after)).to.equal(true);
    expect(has(after, 'minimum'), 'the clip is gone').to.equal(false);
    expectSameValues(before, after, { atol: 1e-9, rtol: 1e-9 });
  });

  it('K.categorical_crossentropy(logits, t, true) becomes softmax_cross_entropy', () => {
    const x = K.placeholder([4, 5], null, 'float64');
    const t = K.placeholder([4, 5], null, 'float64');
    const before = [K.categorical_crossentropy(x, t, true)];
    const after = run(before);
    expect(after[0]!.op, show(after)).to.equal('softmax_cross_entropy');
    expectSameValues(before, after, { atol: 1e-12, rtol: 1e-12 });
  });

  it('log(K.softmax(x)) becomes the shifted log-softmax', () => {
    const x = K.placeholder([3, 4], null, 'float64');
    const before = [K.log(K.softmax(x))];
    const after = run(before);
    expect(has(after, 'div'), show(after)).to.equal(false);
    expectSameValues(before, after, { atol: 1e-12, rtol: 1e-12 });
  });
});
