// Buffer planning, lowering and loop merging on small graphs (kernel IR level).
import { expect } from 'chai';
import { backend as K } from '../../src/index.js';
import { apply } from '../../src/ir/build.js';
import type { Node } from '../../src/ir/node.js';
import { lower } from '../../src/codegen/lower/lower.js';
import { planBuffers } from '../../src/codegen/transform/plan.js';
import { runPasses } from '../../src/passes/pass.js';
import { pipeline } from '../../src/passes/pipeline.js';
import { CPU_TILE, cpuFusion } from '../../src/runtime/cpu/fusion.js';
import type { Program } from '../../src/codegen/kernel/ir.js';

function program(inputs: Node[], outputs: Node[], level: 'fast_run' | 'fast_compile' = 'fast_run'): Program {
  const g = runPasses(pipeline(level, cpuFusion), { outputs }, { verify: true });
  return lower({
    targets: g.outputs, inputSlot: new Map(inputs.map((n, i) => [n, i])), variableSlot: new Map(),
    inputShapes: inputs.map((n) => n.shape as number[]), tile: CPU_TILE,
  });
}

describe('codegen/lower and plan', () => {
  it('an elementwise chain over a contiguous array is one kernel with one flat loop', () => {
    const x = K.placeholder([4, 5, 6], null, 'float32');
    const p = program([x], [K.exp(x.mul(2)).add(1)]);
    expect(p.steps.length).to.equal(1);
    const s = p.steps[0]!;
    expect(s.kind).to.equal('loop');
    if (s.kind === 'loop') expect(s.vars.map((v) => v.size)).to.deep.equal([120]);
  });

  it('a bias add keeps two loops (the bias is reused along the rows)', () => {
    const x = K.placeholder([8, 5], null, 'float32');
    const b = K.placeholder([5], null, 'float32');
    const s = program([x, b], [x.add(b)]).steps[0]!;
    if (s.kind !== 'loop') throw new Error('expected a loop kernel');
    expect(s.vars.map((v) => v.size)).to.deep.equal([8, 5]);
  });

  it('reshape and index of a computed value are aliases, not copies', () => {
    const x = K.placeholder([4, 6], null, 'float32');
    const e = K.exp(x);
    const p = program([x], [K.sum(apply('reshape', [e], { shape: [24] }), 0), K.sum(apply('index', [e], { index: 2 }), 0)], 'fast_compile');
    expect(p.steps.map((s) => s.kind)).to.deep.equal(['loop', 'loop', 'loop']); // exp, and the two sums
  });

  it('intermediates of a long fast_compile chain share two arrays', () => {
    const x = K.placeholder([1000], null, 'float32');
    let y: Node = x;
    for (let i = 0; i < 8; i++) y = K.sin(y.add(i));
    const p = program([x], [y], 'fast_compile');
    const plan = planBuffers(p);
    expect(p.steps.length).to.equal(16);
    expect(plan.slots.length).to.be.at.most(2);
    expect(plan.inPlace.size).to.be.greaterThan(0);
  });

  it('a value still needed later is not overwritten in place', () => {
    const x = K.placeholder([100], null, 'float32');
    const a = K.exp(x);
    const b = K.sin(a);
    const c = K.cos(b);
    const p = program([x], [c.add(a)], 'fast_compile');
    const plan = planBuffers(p);
    // exp's array lives until the final add: sin may not write over it
    const expBuf = p.steps[0]!.kind === 'loop' ? p.steps[0]!.stores[0]!.buf : -1;
    const sinBuf = p.steps[1]!.kind === 'loop' ? p.steps[1]!.stores[0]!.buf : -1;
    expect(plan.slotOf.get(sinBuf)).to.not.equal(plan.slotOf.get(expBuf));
  });

  it('results handed to the caller are fresh arrays, never pooled', () => {
    const x = K.placeholder([10], null, 'float32');
    const p = program([x], [K.exp(x), K.exp(x).add(1)], 'fast_compile');
    const plan = planBuffers(p);
    for (const t of p.targets) expect(plan.slotOf.has(t.buf)).to.equal(false);
  });

  it('a dot with a bias epilogue is one matmul step with packing scratch', () => {
    const x = K.placeholder([6, 7], null, 'float32');
    const W = K.placeholder([7, 5], null, 'float32');
    const b = K.placeholder([5], null, 'float32');
    const p = program([x, W, b], [K.dot(x, W).add(b)]);
    expect(p.steps.map((s) => s.kind)).to.deep.equal(['matmul']);
  });
});
