// Checking mode (mode: 'debug'): a planted wrong rewrite (local and whole-graph user passes, and a
// built-in rule made wrong) raises BadOptimization naming the rule; a planted wrong kernel (a user
// op whose cpu/gpu template disagrees with its reference) raises BadKernel naming the kernel, its
// nodes and the first differing element, on every target that compiles it; correct functions run
// unchanged. The NaN guard names the first kernel writing NaN from finite inputs.
import { expect } from 'chai';
import { backend as K, BadKernel, BadOptimization, NDArray, NonFiniteError, defineOp, definePass, setEnvironment } from '../../src/index.js';
import type { Tensor } from '../../src/index.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';
import { reloadConfig } from '../../src/api/config.js';
import { expectClose } from '../helpers/assert.js';
import { targets } from '../helpers/targets.js';

const arr = (shape: number[], f: (i: number) => number) => new NDArray(Float32Array.from({ length: shape.reduce((p, d) => p * d, 1) }, (_, i) => f(i)), shape);

// exp(x) -> x: wrong, same type.
const wrongLocal = definePass('wrong_exp_test', (n) => (n.op === 'exp' ? n.inputs[0]! : null), { doc: 'exp(x) -> x (planted bug)' });
// Whole graph: every output negated.
const wrongGraph = definePass('wrong_graph_test', { graph: (g) => ({ outputs: g.outputs.map((o) => (o as Tensor).mul(-1)) }) }, { doc: 'negates outputs (planted bug)' });
// A correct rule: x * 1 -> x.
const rightLocal = definePass('right_mul_one_test', (n) => (n.op === 'mul' && n.inputs[1]!.op === 'constant' && (n.inputs[1]!.attrs['value'] as NDArray).data.every((v) => v === 1) && n.inputs[0]!.dtype === n.dtype && n.inputs[0]!.shape.join() === n.shape.join() ? n.inputs[0]! : null));

// reference: 2x; kernels: 3x (planted bug).
const triple = defineOp({
  name: 'planted_wrong_kernel', arity: 1,
  infer: ([x]) => ({ dtype: x!.dtype, shape: x!.shape }),
  reference: ([x]) => new NDArray(x!.data.map((v) => 2 * v), x!.shape, x!.dtype),
  cpu: 'x0 * 3', gpu: 'x0 * 3', wgsl: 'x0 * 3.0',
});
const double = defineOp({
  name: 'planted_right_kernel', arity: 1,
  infer: ([x]) => ({ dtype: x!.dtype, shape: x!.shape }),
  reference: ([x]) => new NDArray(x!.data.map((v) => 2 * v), x!.shape, x!.dtype),
  cpu: 'x0 * 2', gpu: 'x0 * 2', wgsl: 'x0 * 2.0',
});

describe('checking mode: rewrites', () => {
  beforeEach(() => clearCompileCache());

  it('a wrong local user rewrite raises BadOptimization naming the rule, the nodes, the values and the provenance', () => {
    const x = K.placeholder([2, 3], null, 'float32', false, 'x');
    const y = K.exp(x).add(1);
    let err: unknown;
    try {
      K.function([x], [y], [], { mode: 'debug', passes: { add: [wrongLocal] } });
    } catch (e) { err = e; }
    expect(err).to.be.instanceOf(BadOptimization);
    const b = err as BadOptimization;
    expect(b.rule).to.equal('wrong_exp_test');
    expect(b.before.op).to.equal('exp');
    expect(b.after.op).to.equal('placeholder');
    expect(b.tolerance.rtol).to.equal(1e-4);
    expect(b.message).to.match(/rewrite "wrong_exp_test" replaced exp_\d+ \(exp, float32 \(2, 3\)\) with x \(placeholder/);
    expect(b.message).to.match(/element \[0, 0\] is -?[\d.]+, expected [\d.]+/);
    expect(b.message).to.match(/built by K\.exp at checking\.test\.ts:\d+/);
    // Outside checking mode the same pass compiles (and computes the wrong value).
    const f = K.function([x], [y], [], { mode: 'default', passes: { add: [wrongLocal] } });
    expectClose(f([arr([2, 3], () => 0)])[0]!, [[1, 1, 1], [1, 1, 1]]);
  });

  it('a wrong whole-graph pass raises BadOptimization naming the pass', () => {
    const x = K.placeholder([4], null, 'float32', false, 'x');
    expect(() => K.function([x], [K.sin(x)], [], { mode: 'debug', passes: { add: [wrongGraph] } }))
      .to.throw(BadOptimization, /pass "wrong_graph_test" replaced/).with.property('rule', 'wrong_graph_test');
  });

  it('correct rules, built-in and user, compile and run in checking mode with the same results', () => {
    const x = K.placeholder([null, 3], null, 'float32', false, 'x');
    const w = K.variable(arr([3, 2], (i) => (i - 2) / 3), 'float32', 'w');
    const y = K.softmax(K.dot(K.exp(K.log(K.abs(x).add(1))).mul(1), w)).mul(1);
    const loss = K.mean(K.log(y));
    const [g] = K.gradients(loss, [w]);
    const f = K.function([x], [y, g!], [], { mode: 'debug', passes: { add: [rightLocal] } });
    const ref = K.function([x], [y, g!], [], { optimizer: 'none' });
    const v = arr([5, 3], (i) => Math.sin(i));
    const got = f([v]);
    ref([v]).forEach((r, i) => expectClose(got[i]!, r, { atol: 1e-5, rtol: 1e-4 }));
  });

  it('THEANINE_MODE=debug and keras.json "mode" turn it on for every function; the option wins', () => {
    const x = K.placeholder([3], null, 'float32', false, 'x');
    const y = K.exp(x);
    setEnvironment({ THEANINE_MODE: 'debug' });
    try {
      expect(() => K.function([x], [y], [], { passes: { add: [wrongLocal] } })).to.throw(BadOptimization);
      K.function([x], [y], [], { mode: 'default', passes: { add: [wrongLocal] } });
    } finally {
      setEnvironment({ THEANINE_MODE: undefined });
    }
    expect(() => setEnvironment({ THEANINE_MODE: 'loud' })).to.throw(/THEANINE_MODE is "loud"; allowed: "default", "debug"/);
    setEnvironment({ THEANINE_MODE: undefined });
    const suite = process.env['THEANINE_MODE'] !== undefined ? { THEANINE_MODE: process.env['THEANINE_MODE'] } : {};
    expect(reloadConfig({ env: { THEANINE_MODE: 'debug', KERAS_HOME: process.env['KERAS_HOME'] } }).mode).to.equal('debug');
    reloadConfig({ env: { KERAS_HOME: process.env['KERAS_HOME'], ...suite } }); // as test/helpers/setup.ts left it
    expect(() => K.function([x], [y], [], { mode: 'loud' as 'debug' })).to.throw(/function: unknown mode "loud"/);
  });
});

describe('checking mode: kernels', () => {
  beforeEach(() => clearCompileCache());
  const compiled = targets.filter((t) => t.options.optimizer !== 'none' && (t.options.backend === undefined || t.options.backend === 'theanine'));

  it('there is a compiled theanine target to plant the kernel on', () => {
    expect(compiled.map((t) => t.name)).to.not.deep.equal([]);
  });

  for (const t of compiled) {
    it(`${t.name}: a wrong kernel raises BadKernel naming the kernel, its nodes and the first differing element`, () => {
      const x = K.placeholder([2, 3], null, 'float32', false, 'x');
      const y = (triple(K.sin(x)) as Tensor).add(1);
      const f = K.function([x], [y], [], { ...t.options, mode: 'debug' });
      let err: unknown;
      try {
        f([arr([2, 3], (i) => i + 1)]);
      } catch (e) { err = e; }
      expect(err, 'BadKernel').to.be.instanceOf(BadKernel);
      const b = err as BadKernel;
      expect(b.nodes).to.include('planted_wrong_kernel');
      expect(b.kernel).to.match(/planted_wrong_kernel/);
      expect(b.difference.index).to.deep.equal([0, 0]);
      // 3 sin(1) where the reference has 2 sin(1) (+ 1 where the add is fused into the same kernel)
      expect(b.difference.got - b.difference.want).to.be.closeTo(Math.sin(1), 1e-5);
      expect(b.message).to.match(/kernel (fused\{[^}]*)?planted_wrong_kernel.* element \[0, 0\] is [\d.]+, expected [\d.]+/);
      expect(b.message).to.match(/built by .*checking\.test\.ts:\d+/);
    });

    it(`${t.name}: correct kernels pass and give the same results as outside checking mode`, () => {
      const x = K.placeholder([null, 4], null, 'float32', false, 'x');
      const h = K.variable(arr([4, 4], (i) => Math.cos(i) / 2), 'float32', 'h');
      const y = K.sum(K.tanh(K.dot(double(x) as Tensor, h)), 1);
      const f = K.function([x], [y], [K.update_add(h, K.ones([4, 4]).mul(0.5))], { ...t.options, mode: 'debug' });
      const v = arr([3, 4], (i) => i / 7);
      const want = K.function([x], [y], [], { optimizer: 'none' })([v])[0]!;
      expectClose(f([v])[0]!, want, { atol: 1e-4, rtol: 1e-4 });
      expectClose(K.get_value(h), arr([4, 4], (i) => Math.cos(i) / 2 + 0.5), { atol: 1e-6 });
    });
  }
});

describe('checking mode on every compiled target', () => {
  beforeEach(() => clearCompileCache());
  for (const t of targets.filter((t) => t.options.optimizer !== 'none')) {
    it(`${t.name}: a product, a reduction and an update pass every kernel check, with the reference's results`, () => {
      const x = K.placeholder([null, 4], null, 'float32', false, 'x');
      const h = K.variable(arr([4, 4], (i) => Math.cos(i) / 2), 'float32', 'h');
      const y = K.sum(K.tanh(K.dot(x, h)), 1);
      const f = K.function([x], [y], [K.update_sub(h, K.ones([4, 4]).mul(0.25))], { ...t.options, mode: 'debug' });
      const v = arr([3, 4], (i) => i / 7);
      const want = K.function([x], [y], [], { optimizer: 'none' })([v])[0]!;
      expectClose(f([v])[0]!, want, { atol: 1e-4, rtol: 1e-4 });
      expectClose(K.get_value(h), arr([4, 4], (i) => Math.cos(i) / 2 - 0.25), { atol: 1e-6 });
    });
  }
});

describe('NaN guard', () => {
  beforeEach(() => clearCompileCache());

  it('names the first kernel writing NaN from finite inputs, its K call and the user line', () => {
    const x = K.placeholder([3], null, 'float32', false, 'x');
    const y = K.log(x.sub(1)).mul(2); // log of a negative: NaN from finite inputs
    const f = K.function([x], [K.exp(y)], [], { nanGuard: true });
    expectClose(f([arr([3], (i) => i + 2)])[0]!, arr([3], (i) => Math.exp(2 * Math.log(i + 1))), { rtol: 1e-5 });
    let err: unknown;
    try {
      f([arr([3], (i) => i)]);
    } catch (e) { err = e; }
    expect(err).to.be.instanceOf(NonFiniteError);
    const e = err as NonFiniteError;
    expect(e.kernel).to.match(/log/);
    expect(e.index).to.equal(0);
    expect(e.message).to.match(/wrote NaN at element 0 from finite inputs; the K call is K\.log, at .*checking\.test\.ts:\d+:\d+/);
  });

  it('does not blame a kernel for NaN the inputs bring, and THEANINE_NAN_GUARD=1 turns it on', () => {
    const x = K.placeholder([2], null, 'float32', false, 'x');
    setEnvironment({ THEANINE_NAN_GUARD: '1' });
    try {
      const f = K.function([x], [K.exp(x)]);
      expect(Number.isNaN(f([arr([2], (i) => (i === 0 ? NaN : 1))])[0]!.data[0]!)).to.equal(true);
      expect(() => f([arr([2], () => -1)].map((v) => v)) && K.function([x], [K.log(x)])([arr([2], () => -1)])).to.throw(NonFiniteError, /kernel .*log/);
      setEnvironment({ THEANINE_NAN_GUARD: 'yes' });
      expect(() => K.function([x], [K.exp(x)])).to.throw(/THEANINE_NAN_GUARD is "yes"; allowed: "0", "1"/);
      expect(() => K.function([x], [K.exp(x)], [], { nanGuard: 'on' as unknown as boolean })).to.throw(TypeError, /nanGuard must be true or false, got/);
    } finally {
      setEnvironment({ THEANINE_NAN_GUARD: undefined });
    }
  });
});
