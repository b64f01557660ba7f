// The fusion pass on the cpu target's classification: which nodes end up in one kernel.
import { expect } from 'chai';
import { backend as K } from '../../src/index.js';
import { apply } from '../../src/ir/build.js';
import type { FusedBody } from '../../src/ir/fused.js';
import { topoSort } from '../../src/ir/graph.js';
import type { Node } from '../../src/ir/node.js';
import { verify } from '../../src/ir/verify.js';
import { fusionPass } from '../../src/passes/fusion.js';
import { cpuFusion } from '../../src/runtime/cpu/fusion.js';
import { c, expectSameValues, op, show } from './helpers.js';

const pass = fusionPass(cpuFusion);
const fuse = (outs: Node[]) => {
  verify(outs);
  const after = pass.run({ outputs: outs }).outputs;
  verify(after);
  expectSameValues(outs, after, { atol: 0, rtol: 0 }); // fused bodies evaluate with the same reference ops
  return after;
};
/** Kernels of a fused graph: each fused node's ops, and each other computing node on its own. */
const kernels = (outs: readonly Node[]) => topoSort(outs).filter((n) => n.inputs.length > 0).map((n) =>
  n.op === 'fused' ? (n.attrs['body'] as FusedBody).ops().join(',') : n.op);

describe('passes/fusion', () => {
  const x = K.placeholder([8, 5], null, 'float64', false, 'x');
  const y = K.placeholder([8, 5], null, 'float64', false, 'y');
  const b = K.placeholder([5], null, 'float64', false, 'b');

  it('an elementwise chain is one kernel', () => {
    const after = fuse([op('sub', op('mul', op('tanh', op('add', op('mul', x, y), c(1))), x), y)]);
    expect(kernels(after), show(after)).to.deep.equal(['mul,add,tanh,mul,sub']);
    expect(after[0]!.inputs).to.deep.equal([x, y]);
  });

  it('a reduction takes its elementwise input and its elementwise epilogue', () => {
    const s = apply('sum', [op('exp', op('mul', x, c(2)))], { axes: [1], keepdims: false });
    const after = fuse([op('log', s)]);
    expect(kernels(after), show(after)).to.deep.equal(['mul,exp,sum,log']);
  });

  it('a node with two consumers is computed once, in its own kernel', () => {
    const t = op('exp', x);
    const after = fuse([op('mul', t, c(2)), op('add', t, c(1))]);
    expect(kernels(after).sort(), show(after)).to.deep.equal(['add', 'exp', 'mul']);
  });

  it('softmax: the row max joins the exp kernel (trailing broadcast), the row sum joins the division', () => {
    const m = apply('max', [x], { axes: [1], keepdims: true });
    const e = op('exp', op('sub', x, m));
    const after = fuse([op('div', e, apply('sum', [e], { axes: [1], keepdims: true }))]);
    expect(kernels(after), show(after)).to.deep.equal(['max,sub,exp', 'sum,div']);
  });

  it('a bias broadcast over the leading axis is loaded, not recomputed per row', () => {
    const after = fuse([op('add', x, op('exp', b))]);
    expect(kernels(after), show(after)).to.deep.equal(['exp', 'add']);
  });

  it('a matmul takes its elementwise epilogue and transposed operands', () => {
    const W = K.placeholder([5, 3], null, 'float64', false, 'W');
    const bias = K.placeholder([3], null, 'float64', false, 'bias');
    const relu = op('maximum', op('add', K.dot(x, W), bias), c(0));
    const after = fuse([relu, K.dot(x.T, y)]);
    expect(kernels(after), show(after)).to.deep.equal(['dot,add,maximum', 'transpose,dot']);
  });

  it('a matmul under a reshape keeps its own kernel (its epilogue runs at its own index)', () => {
    const W = K.placeholder([5, 3], null, 'float64');
    const after = fuse([apply('reshape', [op('neg', K.dot(x, W))], { shape: [24] })]);
    expect(kernels(after), show(after)).to.deep.equal(['dot', 'neg,reshape']);
  });

  it('a matmul takes an epilogue reading a view of a side input (a bias reshaped to broadcast), not one under a view of itself', () => {
    const xs = K.placeholder([2, 6, 6, 3], null, 'float64', false, 'xs');
    const w = K.placeholder([3, 3, 3, 4], null, 'float64', false, 'w');
    const bias = K.placeholder([4], null, 'float64', false, 'bias');
    const conv = K.conv2d(xs, w, [1, 1], 'valid');
    const after = fuse([op('add', conv, apply('reshape', [bias], { shape: [1, 1, 1, 4] }))]);
    expect(kernels(after), show(after)).to.deep.equal(['conv,reshape,add']);
    // A transpose of a square product has the product's shape, but reads it at other indices.
    const W = K.placeholder([5, 5], null, 'float64', false, 'W5');
    const sq = K.placeholder([5, 5], null, 'float64', false, 'sq');
    const after2 = fuse([op('add', op('neg', K.dot(sq, W)).T, sq)]);
    expect(kernels(after2), show(after2)).to.deep.equal(['dot', 'neg,transpose,add']);
  });

  it("relu's mask read by two kernels (the select and its gradient's) is computed again in both; a comparison of two tensors is stored", () => {
    const g = K.placeholder([8, 5], null, 'float64', false, 'g');
    const m = op('less_equal', op('exp', x), c(0));
    const after = fuse([op('where', m, c(0), x), op('where', m, c(0), g)]);
    // exp(x) is read by both kernels, so it stays a kernel of its own; the mask goes into both
    expect(kernels(after).sort(), show(after)).to.deep.equal(['exp', 'less_equal,where', 'less_equal,where']);
    const m2 = op('less_equal', x, y);
    const after2 = fuse([op('where', m2, c(0), x), op('where', m2, c(0), g)]);
    expect(kernels(after2).sort(), show(after2)).to.deep.equal(['less_equal', 'where', 'where']);
  });

  it('a view read by two kernels is folded into both', () => {
    const t = x.T;
    const after = fuse([op('exp', t), op('sin', t)]);
    expect(kernels(after).sort(), show(after)).to.deep.equal(['transpose,exp', 'transpose,sin']);
  });

  it('a reduction under an expanding view stays a kernel of its own', () => {
    const s = apply('sum', [x], { axes: [1], keepdims: true });
    const after = fuse([op('exp', apply('tile', [s], { reps: [1, 4] }))]);
    expect(kernels(after), show(after)).to.deep.equal(['sum', 'tile,exp']);
  });

  it('outputs are never folded into their consumers', () => {
    const t = op('exp', x);
    const after = fuse([t, op('neg', t)]);
    expect(kernels(after).sort(), show(after)).to.deep.equal(['exp', 'neg']);
  });

  it('ops without a template are boundaries', () => {
    const after = fuse([op('exp', apply('cumsum', [op('neg', x)], { axis: 1 }))]);
    expect(kernels(after), show(after)).to.deep.equal(['neg', 'cumsum', 'exp']);
  });

  it('equal groups give the same fused node (the body is hash-consed)', () => {
    const f1 = fuse([op('exp', op('neg', x))])[0]!;
    const f2 = fuse([op('exp', op('neg', x))])[0]!;
    expect(f1).to.equal(f2);
  });
  it('a read for the shape only (a gradient\'s sum_to_like(g, x)) does not keep x out of its consumer\'s kernel, and codegen computes x nowhere else', () => {
    const xs = K.placeholder([2, 5], null, 'float32', false, 'xs');
    const ys = K.placeholder([2, 5], null, 'float32', false, 'ys');
    const zs = K.placeholder([2, 5], null, 'float32', false, 'zs');
    const p = op('mul', xs, ys); // read for its value by tanh, for its shape by another kernel's sum_to_like
    const outs = [op('tanh', p), apply('sum_to_like', [op('exp', zs), p], {})];
    const after = fusionPass(cpuFusion).run({ outputs: outs }).outputs;
    // the mul joins tanh's kernel; the graph keeps a copy of it only as the shape the other kernel reads
    expect(kernels(after), show(after)).to.have.members(['mul,tanh', 'mul', 'exp,sum_to_like']);
    const f = K.function([xs, ys, zs], outs);
    const feeds = [[[0.5, -1, 2, 0, 3], [1, 1, 1, 1, 1]], [[2, 2, 2, 2, 2], [-1, 0.25, 3, 4, 5]], [[0, 1, 2, 3, 4], [-1, -2, -3, -4, -5]]].map((v) => K.eval(K.constant(v)));
    const got = f(feeds);
    const want = K.function([xs, ys, zs], outs, [], { optimizer: 'none' })(feeds);
    got.forEach((g, i) => expect(Array.from(g.data)).to.deep.equal(Array.from(want[i]!.data)));
    const src = (f as unknown as { source(): string }).source();
    expect(src.match(/^function k\d+/gm), src).to.have.length(2); // the copy of the mul is not computed
  });
});
