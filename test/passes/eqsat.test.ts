import { expect } from 'chai';
import { backend as K, definePass, undefinePass } from '../../src/index.js';
import { apply } from '../../src/ir/build.js';
import type { Node } from '../../src/ir/node.js';
import { topoSort } from '../../src/ir/graph.js';
import { verify } from '../../src/ir/verify.js';
import { EGraph, costModel, eqsatPass, graphCost, lastEqsatReport, limitsFromEnv, optimizeGraph, builtinRules } from '../../src/passes/eqsat/index.js';
import { cpuFusion } from '../../src/runtime/cpu/fusion.js';
import { optimize } from '../../src/api/passes.js';
import { c, expectSameValues, op, show, values } from './helpers.js';

const ph = (shape: number[], name?: string) => K.placeholder(shape, null, 'float64', false, name);
const dot = (a: Node, b: Node) => op('dot', a, b);
const T = (a: Node) => apply('transpose', [a], { perm: [1, 0] });
const model = costModel(cpuFusion);
const pass = eqsatPass(cpuFusion);
const ops = (ns: readonly Node[]) => topoSort(ns).filter((n) => n.inputs.length > 0).map((n) => n.op);

describe('passes/eqsat: the e-graph', () => {
  it('hash-conses e-nodes: adding an equal term twice gives one class', () => {
    const eg = new EGraph();
    const a = ph([3]);
    const x = eg.addNode(a);
    const s1 = eg.addTerm('exp', {}, [x]);
    const s2 = eg.addTerm('exp', {}, [x]);
    expect(s1).to.equal(s2);
    expect(eg.size).to.equal(2);
  });

  it('restores congruence on rebuild: a = b makes f(a) = f(b)', () => {
    const eg = new EGraph();
    const a = eg.addNode(ph([3]));
    const b = eg.addNode(ph([3]));
    const fa = eg.addTerm('exp', {}, [a])!;
    const fb = eg.addTerm('exp', {}, [b])!;
    const gfa = eg.addTerm('neg', {}, [fa])!;
    const gfb = eg.addTerm('neg', {}, [fb])!;
    expect(eg.find(fa)).to.not.equal(eg.find(fb));
    expect(eg.union(a, b)).to.equal(true);
    eg.rebuild();
    expect(eg.find(fa)).to.equal(eg.find(fb));
    expect(eg.find(gfa)).to.equal(eg.find(gfb));
    expect(eg.size).to.equal(4); // two leaves, one exp, one neg
  });

  it('refuses to merge classes of different types and terms that cannot be built', () => {
    const eg = new EGraph();
    const a = eg.addNode(ph([3]));
    const b = eg.addNode(ph([4]));
    expect(eg.union(a, b)).to.equal(false);
    expect(eg.addTerm('add', {}, [a, b])).to.equal(undefined);
  });
});

describe('passes/eqsat: search beats greedy', () => {
  it('reassociates a matrix chain ending in a vector: (A·B)·v -> A·(B·v)', () => {
    const A = ph([64, 64]);
    const B = ph([64, 64]);
    const v = ph([64]);
    const before = [dot(dot(A, B), v)];
    const after = pass.run({ outputs: before }).outputs;
    verify(after);
    expect(after[0], show(after)).to.equal(dot(A, dot(B, v)));
    expect(lastEqsatReport!.chose).to.equal('eqsat');
    expect(lastEqsatReport!.extractedCost).to.be.lessThan(lastEqsatReport!.greedyCost);
    expectSameValues(before, after, { atol: 1e-10, rtol: 1e-10 });
  });

  it('factors x*y + x*z into x*(y + z) where every op is a kernel (no fusion)', () => {
    const [x, y, z] = [ph([100]), ph([100]), ph([100])];
    const before = [op('add', op('mul', x, y), op('mul', x, z))];
    const after = eqsatPass({ classify: () => 'opaque' }).run({ outputs: before }).outputs;
    expect(ops(after).sort()).to.deep.equal(['add', 'mul']);
    expectSameValues(before, after, { atol: 1e-12, rtol: 1e-12 });
  });

  it('keeps x*y + x*z on the cpu: both forms fuse into one loop over x, y, z, rated alike (memory-bound)', () => {
    const [x, y, z] = [ph([100]), ph([100]), ph([100])];
    const before = [op('add', op('mul', x, y), op('mul', x, z))];
    const after = pass.run({ outputs: before }).outputs;
    expect(after[0]).to.equal(before[0]);
    expect(lastEqsatReport!.chose).to.equal('greedy');
    expect(lastEqsatReport!.extractedCost).to.equal(lastEqsatReport!.greedyCost);
  });

  it('factors on the cpu where the fused loop is compute-bound: sin(a)*y + sin(a)*z', () => {
    const [a, y, z] = [ph([100]), ph([100]), ph([100])];
    const s = op('sin', a);
    const before = [op('add', op('mul', s, y), op('mul', s, z))];
    const after = pass.run({ outputs: before }).outputs;
    expect(ops(after).sort()).to.deep.equal(['add', 'mul', 'sin']);
    expect(lastEqsatReport!.chose).to.equal('eqsat');
    expectSameValues(before, after, { atol: 1e-12, rtol: 1e-12 });
  });

  it('turns a transposed-product chain (Bᵀ·Aᵀ)ᵀ·v into A·(B·v)', () => {
    const A = ph([32, 48]);
    const B = ph([48, 40]);
    const v = ph([40]);
    const before = [dot(T(dot(T(B), T(A))), v)];
    const after = pass.run({ outputs: before }).outputs;
    expect(after[0], show(after)).to.equal(dot(A, dot(B, v)));
    expectSameValues(before, after, { atol: 1e-10, rtol: 1e-10 });
  });

  it('returns the greedy graph when nothing is cheaper (the floor)', () => {
    const x = ph([8, 8]);
    const W = ph([8, 8]);
    const before = [op('tanh', dot(x, W))];
    const after = pass.run({ outputs: before }).outputs;
    expect(after[0]).to.equal(before[0]);
    expect(lastEqsatReport!.chose).to.equal('greedy');
    expect(lastEqsatReport!.extractedCost).to.be.at.least(lastEqsatReport!.greedyCost);
  });

  it('applies the greedy rules as equalities: log(1 + x) becomes log1p(x), x*1 goes', () => {
    const x = ph([5]);
    const before = [op('mul', op('log', op('add', c(1), x)), c(1))];
    const after = pass.run({ outputs: before }).outputs;
    expect(after[0]).to.equal(op('log1p', x));
  });

  it('keeps integer and mixed-dtype arithmetic out of reassociation', () => {
    const x = K.placeholder([4], null, 'int32');
    const y = K.placeholder([4], null, 'float64');
    const z = K.placeholder([4], null, 'float64');
    const before = [op('add', op('add', x, y), z)];
    const { report } = optimizeGraph({ outputs: before }, builtinRules(), model, limitsFromEnv(''));
    const fired = report.iterations.flatMap((i) => Object.keys(i.applied));
    expect(fired).to.not.include('add_assoc');
  });
});

describe('passes/eqsat: limits and the level', () => {
  it('stops at the node limit within one iteration, and says why', () => {
    const xs = Array.from({ length: 8 }, (_, i) => ph([4], `x${i}`));
    const sum = xs.slice(1).reduce((s, x) => op('add', s, op('mul', x, xs[0]!)), xs[0]!);
    const limits = { nodes: 60, iterations: 50, ms: 10_000, matchesPerRule: 2000, minGain: 0 };
    const { report } = optimizeGraph({ outputs: [sum] }, builtinRules(), model, limits);
    expect(report.stop).to.equal('nodes');
    for (const it of report.iterations) expect(it.startNodes).to.be.lessThan(limits.nodes);
  });

  it('reads THEANINE_EQSAT limits and rejects malformed ones', () => {
    expect(limitsFromEnv('nodes=100, ms=5')).to.include({ nodes: 100, ms: 5 });
    expect(() => limitsFromEnv('nodes=lots')).to.throw(/THEANINE_EQSAT.*nodes, iterations, ms, matches/);
  });

  it("K.function runs optimizer 'eqsat' and computes the reference's values", () => {
    const A = ph([16, 24]);
    const B = ph([24, 20]);
    const v = ph([20]);
    const y = K.dot(K.dot(A, B), v);
    const vals = [A, B, v].map((p, i) => values(p.shape as number[], 'float64', i + 1));
    const ref = K.function([A, B, v], [y], [], { optimizer: 'none' })(vals)[0]!;
    const f = K.function([A, B, v], [y], [], { optimizer: 'eqsat' });
    expect(f.optimizer).to.equal('eqsat');
    const got = f(vals)[0]!;
    for (let i = 0; i < ref.size; i++) expect(got.data[i]).to.be.closeTo(ref.data[i]!, 1e-10);
    expect(lastEqsatReport!.chose).to.equal('eqsat');
  });

  it("the tensorflow backend runs optimizer 'eqsat' (its cost model without fusion)", () => {
    const [A, B, C] = [ph([6, 6]), ph([6, 6]), ph([6, 6])];
    const y = K.dot(A, B).add(K.dot(A, C));
    const vals = [A, B, C].map((p, i) => values(p.shape as number[], 'float64', i + 3));
    const ref = K.function([A, B, C], [y], [], { optimizer: 'none' })(vals)[0]!;
    const got = K.function([A, B, C], [y], [], { optimizer: 'eqsat', backend: 'tensorflow' })(vals)[0]!;
    expect(lastEqsatReport!.chose).to.equal('eqsat');
    for (let i = 0; i < ref.size; i++) expect(got.data[i]).to.be.closeTo(ref.data[i]!, 1e-5);
  });

  it('a rule that matches too often backs off (egg\'s scheduler) instead of flooding the e-graph', () => {
    const xs = Array.from({ length: 10 }, (_, i) => ph([4], `s${i}`));
    const sum = xs.slice(1).reduce((s, x) => op('add', s, x), xs[0]!);
    const limits = { nodes: 100000, iterations: 4, ms: 10_000, matchesPerRule: 5, minGain: 0 };
    const { report } = optimizeGraph({ outputs: [sum] }, builtinRules(), model, limits);
    const assoc = report.iterations.map((i) => i.applied['add_assoc'] ?? 0);
    expect(assoc.some((n) => n === 0), `add_assoc per iteration: ${assoc.join(', ')}`).to.equal(true);
    expect(Math.max(...assoc)).to.be.at.most(limits.matchesPerRule * 2 ** 3);
  });

  it("optimize(..., { optimizer: 'eqsat' }) lists the eqsat pass with its line: growth, stop, costs, choice", () => {
    const [A, B, v] = [ph([20, 20]), ph([20, 20]), ph([20])];
    const r = optimize([dot(dot(A, B), v)], { optimizer: 'eqsat' });
    const eq = r.passes.find((p) => p.name === 'eqsat');
    expect(eq?.note).to.match(/^\d+ iterations \(e-nodes [0-9 >-]+\), stopped: saturated, .* extracted graph$/);
    expect(r.passes.map((p) => p.name)).to.deep.equal(['merge', 'canonicalize', 'stabilize', 'specialize', 'canonicalize', 'eqsat', 'scan', 'fusion']);
  });

  it('user rules join the e-graph unchanged', () => {
    // exp(x) * exp(y) -> exp(x + y) as a user pass; in the e-graph it meets x*1 inside.
    const p = definePass('exp_product', (n) => (n.op === 'mul' && n.inputs.every((i) => i.op === 'exp') ? apply('exp', [apply('add', [n.inputs[0]!.inputs[0]!, n.inputs[1]!.inputs[0]!])]) : null));
    try {
      const x = ph([50]);
      const y = ph([50]);
      const before = [op('mul', op('exp', x), op('exp', y))];
      const r = optimize(before, { optimizer: 'eqsat', passes: { add: [p] } });
      expect(r.passes.map((q) => q.name)).to.include.members(['eqsat', 'exp_product']);
      expect(lastEqsatReport!.iterations.flatMap((i) => Object.keys(i.applied))).to.include('exp_product');
    } finally {
      undefinePass('exp_product');
    }
  });

  it('rates a graph as the kernels it compiles to: a fused loop costs the larger of its arithmetic and its traffic', () => {
    const [x, y, z] = [ph([1000]), ph([1000]), ph([1000])];
    // Three muls or one: the same loop over the same three inputs.
    const three = graphCost([op('add', op('mul', x, y), op('mul', x, z))], model);
    const two = graphCost([op('mul', x, op('add', y, z))], model);
    expect(two).to.equal(three);
    // Without fusion each op reads and writes memory: the form with fewer ops is cheaper.
    const flat = costModel({ classify: () => 'opaque' });
    expect(graphCost([op('mul', x, op('add', y, z))], flat)).to.be.lessThan(graphCost([op('add', op('mul', x, y), op('mul', x, z))], flat));
  });

  it('rates graphs as DAGs: shared work once', () => {
    const x = ph([10]);
    const e = op('exp', x);
    expect(graphCost([op('add', e, e)], model)).to.be.lessThan(graphCost([op('add', e, op('exp', op('neg', op('neg', x))))], model));
  });
});

/** The kernels of a compiled function's graph and the bytes they read and write (each kernel's inputs once, its result once). */
function kernels(f: { readonly graph: readonly Node[] }): { count: number; bytes: number } {
  const ks = topoSort(f.graph).filter((n) => n.inputs.length > 0 && n.op !== 'constant');
  const bytes = (n: Node) => (n.shape as number[]).reduce((p, d) => p * d, 1) * (n.dtype === 'float64' ? 8 : 4);
  return { count: ks.length, bytes: ks.reduce((s, n) => s + bytes(n) + [...new Set(n.inputs)].reduce((t, i) => t + bytes(i), 0), 0) };
}

describe('passes/eqsat: the compiled function is never worse than greedy\'s', () => {
  const f32 = (shape: number[], name: string) => K.placeholder(shape, null, 'float32', false, name);
  const graphs: [string, () => { inputs: Node[]; outputs: Node[] }][] = [
    ['factoring x*y + x*z', () => {
      const [x, y, z] = [f32([1 << 12], 'x'), f32([1 << 12], 'y'), f32([1 << 12], 'z')];
      return { inputs: [x, y, z], outputs: [x.mul(y).add(x.mul(z))] };
    }],
    ['matrix chain ((A·B)·C)·v', () => {
      const [A, B, C, v] = [f32([32, 32], 'A'), f32([32, 32], 'B'), f32([32, 32], 'C'), f32([32], 'v')];
      return { inputs: [A, B, C, v], outputs: [K.dot(K.dot(K.dot(A, B), C), v)] };
    }],
    ['sum of products A·B + A·C', () => {
      const [A, B, C] = [f32([32, 32], 'A'), f32([32, 32], 'B'), f32([32, 32], 'C')];
      return { inputs: [A, B, C], outputs: [K.dot(A, B).add(K.dot(A, C))] };
    }],
    ['attention block', () => {
      const [X, Wq, Wk, Wv] = [f32([16, 8], 'X'), f32([8, 8], 'Wq'), f32([8, 8], 'Wk'), f32([8, 8], 'Wv')];
      const p = K.softmax(K.dot(K.dot(X, Wq), K.transpose(K.dot(X, Wk))));
      return { inputs: [X, Wq, Wk, Wv], outputs: [K.dot(p, K.dot(X, Wv))] };
    }],
  ];
  for (const [name, build] of graphs) {
    it(`${name}: no more kernels and no more bytes moved than fast_run's, same values`, () => {
      const g = build();
      const feeds = g.inputs.map((p, i) => values(p.shape as number[], 'float32', i + 7));
      const greedy = K.function(g.inputs, g.outputs, [], { optimizer: 'fast_run' });
      const eq = K.function(g.inputs, g.outputs, [], { optimizer: 'eqsat' });
      const a = kernels(greedy), b = kernels(eq);
      expect(b.count, `kernels\n${greedy.debugprint()}\n${eq.debugprint()}`).to.be.at.most(a.count);
      expect(b.bytes, 'bytes moved').to.be.at.most(a.bytes);
      const want = greedy(feeds)[0]!, got = eq(feeds)[0]!;
      for (let i = 0; i < want.size; i++) expect(got.data[i]).to.be.closeTo(want.data[i]!, 1e-4 * (1 + Math.abs(want.data[i]!)));
    });
  }

  it('factoring x*y + x*z compiles to the same code at both levels on the cpu (one loop, greedy\'s graph kept)', () => {
    const [x, y, z] = [f32([1 << 12], 'x'), f32([1 << 12], 'y'), f32([1 << 12], 'z')];
    const out = x.mul(y).add(x.mul(z));
    const greedy = K.function([x, y, z], [out], [], { optimizer: 'fast_run' });
    const eq = K.function([x, y, z], [out], [], { optimizer: 'eqsat' });
    expect(lastEqsatReport!.chose).to.equal('greedy');
    expect(eq.debugprint()).to.equal(greedy.debugprint());
    expect(kernels(eq)).to.deep.equal({ count: 1, bytes: 4 * 4 * (1 << 12) });
  });
});
