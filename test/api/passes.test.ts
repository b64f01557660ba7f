// User passes: local and whole-graph rewrites in the pipeline, per-function pass
// lists, the optimized graph for inspection, and the compile cache keyed by the pass list.
import { expect } from 'chai';
import {
  backend as K, NDArray, debugprint, definePass, undefinePass, optimize, listPasses, passNames, optimizer, ValueError,
} from '../../src/index.js';
import type { Tensor } from '../../src/index.js';
import { clearCompileCache, compileStats } from '../../src/runtime/cpu/compile.js';
import { expectClose } from '../helpers/assert.js';

const expLog = definePass('exp_log_test', (n) => (n.op === 'exp' && n.inputs[0]!.op === 'log' ? n.inputs[0]!.inputs[0]! : null), {
  doc: 'exp(log(x)) -> x',
});

const kernels = (src: string) => (src.match(/^function k\d+\(/gm) ?? []).length;
const arr = (shape: number[], f: (i: number) => number) => new NDArray(Float32Array.from({ length: shape.reduce((p, d) => p * d, 1) }, (_, i) => f(i)), shape);

describe('user passes', () => {
  beforeEach(() => clearCompileCache());

  it('a local rewrite exp(log(x)) -> x shows in the optimized graph, its report and the pass list', () => {
    const x = K.placeholder([2, 3], null, 'float32', false, 'x');
    const y = K.exp(K.log(x)).mul(2);
    expect(debugprint(optimize(y))).to.match(/fused\{log,exp,mul\}/);
    const g = optimize(y, { passes: { add: [expLog] } });
    const text = debugprint(g);
    expect(text).to.equal(g.debugprint());
    expect(text).to.not.match(/log|exp/);
    expect(text).to.match(/^mul /);
    const report = g.passes.find((p) => p.name === 'exp_log_test')!;
    expect(report.nodesBefore - report.nodesAfter).to.equal(2);
    // It runs after the second canonicalize, before scan and fusion.
    expect(g.passes.map((p) => p.name)).to.deep.equal(['merge', 'canonicalize', 'stabilize', 'specialize', 'canonicalize', 'exp_log_test', 'scan', 'fusion']);
    expect(listPasses({ passes: { add: [expLog] } }).find((p) => p.name === 'exp_log_test')).to.deep.equal({ name: 'exp_log_test', doc: 'exp(log(x)) -> x', origin: 'user', enabled: true });
    // Registered but not added: listed, not enabled.
    expect(listPasses().find((p) => p.name === 'exp_log_test')!.enabled).to.equal(false);
    expect(passNames()).to.include.members(['merge', 'canonicalize', 'fusion', 'exp_log_test']);
  });

  it('K.function takes passes to add (objects or names) and the compiled function runs the rewritten graph', () => {
    const x = K.placeholder([2, 3], null, 'float32', false, 'x');
    const y = K.exp(K.log(x)).add(1);
    const f = K.function([x], [y], [], { passes: { add: ['exp_log_test'] } });
    expect(f.debugprint()).to.not.match(/log/);
    expect(f.source()).to.not.match(/Math\.(log|exp)/);
    const v = arr([2, 3], (i) => i + 1);
    expectClose(f([v])[0]!, [[2, 3, 4], [5, 6, 7]]);
    // Without the pass the numbers are the same up to rounding of exp(log(x)).
    expectClose(K.function([x], [y])([v])[0]!, [[2, 3, 4], [5, 6, 7]], { atol: 1e-5 });
  });

  // float64, where every kernel computes exactly what the reference does, so "the numbers" means bit for bit.
  it('removing fusion changes the kernel count and not the numbers', () => {
    const f64 = (shape: number[], f: (i: number) => number) => arr(shape, f).astype('float64');
    const x = K.placeholder([4, 3], null, 'float64', false, 'x');
    const W = K.variable(f64([3, 5], (i) => Math.sin(i)), 'float64', 'W');
    const b = K.variable(f64([5], (i) => i * 0.1), 'float64', 'b');
    const y = K.softmax(K.tanh(K.dot(x, W).add(b)));
    const v = f64([4, 3], (i) => Math.cos(i));
    const fused = K.function([x], [y]);
    const unfused = K.function([x], [y], [], { passes: { remove: ['fusion'] } });
    const a = fused([v])[0]!;
    const c = unfused([v])[0]!;
    expect(kernels(unfused.source())).to.be.greaterThan(kernels(fused.source()));
    expect(Array.from(c.data)).to.deep.equal(Array.from(a.data));
    expect(unfused.debugprint()).to.not.match(/fused/);
  });

  it('functions compiled with different pass lists never share a cache entry', () => {
    const x = K.placeholder([3], null, 'float32', false, 'x');
    const y = K.exp(K.log(x));
    const v = arr([3], (i) => i + 1);
    K.function([x], [y])([v]);
    const p0 = compileStats.programs;
    const f = K.function([x], [y], [], { passes: { add: [expLog] } });
    f([v]);
    expect(compileStats.programs).to.equal(p0 + 1);
    expect(f.debugprint()).to.match(/^fused\{identity\}|^placeholder/);
    K.function([x], [y], [], { passes: { remove: ['fusion'] } })([v]);
    expect(compileStats.programs).to.equal(p0 + 2);
    // The same selection again hits the cache.
    K.function([x], [y], [], { passes: { add: ['exp_log_test'] } })([v]);
    expect(compileStats.programs).to.equal(p0 + 2);
    // A redefinition of a pass under the same name is another pass: no stale code.
    const again = definePass('exp_log_again', () => null);
    K.function([x], [y], [], { passes: { add: [again] } })([v]);
    const again2 = definePass('exp_log_again', () => null);
    K.function([x], [y], [], { passes: { add: [again2] } })([v]);
    expect(compileStats.programs).to.equal(p0 + 4);
    undefinePass('exp_log_again');
  });

  it('a whole-graph pass maps { outputs } to { outputs }, and positions before/after pick its place', () => {
    const seen: string[] = [];
    const spy = definePass('spy_test', { graph: (g) => { seen.push(g.outputs.map((o) => o.op).join(',')); return g; } }, { after: 'fusion' });
    const first = definePass('first_test', { local: () => null }, { before: 'merge' });
    const x = K.placeholder([3], null, 'float32', false, 'x');
    const g = optimize(K.sqrt(x).add(1), { passes: { add: [spy, first] } });
    expect(g.passes.map((p) => p.name)[0]).to.equal('first_test');
    expect(g.passes.map((p) => p.name).at(-1)).to.equal('spy_test');
    expect(seen).to.deep.equal(['fused']);
    undefinePass('spy_test');
    undefinePass('first_test');
  });

  it('a global pass runs in every pipeline until it is removed by name or undefined', () => {
    const x = K.placeholder([3], null, 'float32', false, 'x');
    const y = K.exp(K.log(x));
    definePass('exp_log_global', (n) => (n.op === 'exp' && n.inputs[0]!.op === 'log' ? n.inputs[0]!.inputs[0]! : null), { global: true });
    try {
      expect(optimize(y).outputs[0]).to.equal(x);
      expect(optimize(y, { passes: { remove: ['exp_log_global'] } }).outputs[0]).to.not.equal(x);
      expect(optimize(y, { optimizer: 'fast_compile' }).passes.map((p) => p.name)).to.deep.equal(['merge', 'constant_fold', 'exp_log_global']);
    } finally {
      undefinePass('exp_log_global');
    }
    expect(optimize(y).outputs[0]).to.not.equal(x);
  });

  it('rewrites are applied to a fixed point: chains collapse in one pass', () => {
    const x = K.placeholder([3], null, 'float32', false, 'x');
    let y: Tensor = x;
    for (let i = 0; i < 5; i++) y = K.exp(K.log(y));
    expect(optimize(y, { passes: { add: [expLog], remove: ['fusion'] } }).outputs[0]).to.equal(x);
  });

  it('the optimizer record the CLI reads has one entry per pass', () => {
    const x = K.placeholder([3], null, 'float32', false, 'x');
    const r = optimizer.run([K.exp(K.log(x))], { passes: { add: [expLog] } });
    expect(r.passes.map((p) => p.name)).to.include('exp_log_test');
    expect(r.passes.every((p) => p.seconds >= 0 && p.nodes >= 1)).to.equal(true);
  });

  it('reports bad passes and bad selections clearly', () => {
    const x = K.placeholder([3], null, 'float32', false, 'x');
    const y = K.exp(x);
    expect(() => definePass('fusion', () => null)).to.throw(ValueError, /"fusion" is a built-in pass/);
    expect(() => definePass('bad name', () => null)).to.throw(ValueError, /letters, digits/);
    expect(() => definePass('bad_rewrite', 3 as never)).to.throw(TypeError, /\{ local: fn \} or \{ graph: fn \}/);
    expect(() => definePass('both', () => null, { before: 'merge', after: 'fusion' })).to.throw(ValueError, /not both/);
    const retype = definePass('retype_test', (n) => (n.op === 'exp' ? K.cast(n, 'float64') : null));
    expect(() => optimize(y, { passes: { add: [retype] } })).to.throw(ValueError, /pass "retype_test" replaced exp_\d+ \(exp, float32 \(3,\)\) with cast_\d+ \(cast, float64 \(3,\)\); a replacement must keep the node's dtype and static shape/);
    const thrower = definePass('thrower_test', (n) => { if (n.op === 'exp') throw new Error('boom'); return null; });
    expect(() => optimize(y, { passes: { add: [thrower] } })).to.throw(/pass "thrower_test" threw on node exp_\d+ \(exp, float32 \(3,\)\): boom/);
    const notNode = definePass('not_node_test', (n) => (n.op === 'exp' ? (42 as never) : null));
    expect(() => optimize(y, { passes: { add: [notNode] } })).to.throw(TypeError, /returned number .*expected a tensor/);
    const dropper = definePass('dropper_test', { graph: () => ({ outputs: [] }) });
    expect(() => optimize(y, { passes: { add: [dropper] } })).to.throw(TypeError, /must return \{ outputs \} with 1 tensors/);
    expect(() => optimize(y, { passes: { add: ['nope'] } })).to.throw(ValueError, /no user pass named "nope" \(defined: .*exp_log_test/);
    expect(() => optimize(y, { passes: { remove: ['nope'] } })).to.throw(ValueError, /passes.remove: no pass named "nope" in this pipeline \(fast_run: merge, canonicalize/);
    const late = definePass('late_test', () => null, { after: 'fusion' });
    expect(() => optimize(y, { optimizer: 'fast_compile', passes: { add: [late] } })).to.throw(ValueError, /runs after "fusion", which is not in this pipeline \(fast_compile: merge, constant_fold\)/);
    expect(() => K.function([x], [y], [], { optimizer: 'none', passes: { remove: ['fusion'] } })).to.throw(ValueError, /optimizer "none" runs no passes/);
    expect(() => optimize(y, { optimizer: 'none' as never })).to.throw(ValueError, /optimize: optimizer must be/);
    for (const n of ['retype_test', 'thrower_test', 'not_node_test', 'dropper_test', 'late_test', 'bad_rewrite', 'both']) undefinePass(n);
  });
});
