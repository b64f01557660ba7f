// User ops: a swish op with its gradient, checked like a built-in one.
import { expect } from 'chai';
import { backend as K, defineOp, verify_grad, NDArray, debugprint, ValueError } from '../../src/index.js';
import { expectClose } from '../helpers/assert.js';
import { clearCompileCache, compileStats } from '../../src/runtime/cpu/compile.js';
import { userGpuHelper } from '../../src/codegen/lower/user.js';

const sig = (v: number) => 1 / (1 + Math.exp(-v));

// swish(x) = x * sigmoid(beta x); d/dx = s + beta x s (1 - s), s = sigmoid(beta x)
const swish = defineOp<{ beta: number }>({
  name: 'swish_test',
  arity: 1,
  infer: ([x]) => ({ dtype: x!.dtype, shape: x!.shape }),
  reference: ([x], { beta }) => new NDArray(Array.from(x!.data, (v) => v * sig(beta * v)), x!.shape, x!.dtype),
  grad: ([x], _out, g, { beta }) => {
    const s = K.sigmoid(K.multiply(x!, beta));
    return [K.multiply(g, K.add(s, K.multiply(K.multiply(x!, beta), K.multiply(s, K.subtract(1, s)))))];
  },
});

// The same op with a cpu template: an elementwise kernel that fuses with its neighbours.
const swishT = defineOp<{ beta: number }>({
  name: 'swish_tmpl_test',
  arity: 1,
  infer: ([x]) => ({ dtype: x!.dtype, shape: x!.shape }),
  reference: ([x], { beta }) => new NDArray(Array.from(x!.data, (v) => v * sig(beta * v)), x!.shape, x!.dtype),
  grad: ([x], _out, g, { beta }) => {
    const s = K.sigmoid(K.multiply(x!, beta));
    return [K.multiply(g, K.add(s, K.multiply(K.multiply(x!, beta), K.multiply(s, K.subtract(1, s)))))];
  },
  cpu: 'x0 / (1 + Math.exp(-beta * x0))',
  gpu: 'x0 / (1.0 + Math.exp(-beta * x0))',
});

describe('defineOp', () => {
  it('builds nodes with inferred static shapes and evaluates through the reference', () => {
    const x = K.placeholder([null, 3], null, 'float64');
    const y = swish(x, { attrs: { beta: 1.5 } });
    expect(K.int_shape(y)).to.deep.equal([null, 3]);
    expect(debugprint(y)).to.match(/^swish_test\{beta=1.5\}/);
    const v = [[0.5, -1, 2]];
    expectClose(K.function([x], [y])([v])[0]!, [v[0]!.map((a) => a * sig(1.5 * a))]);
  });

  it('hash-conses like a built-in op', () => {
    const x = K.placeholder([2]);
    expect(swish(x, { attrs: { beta: 1 } })).to.equal(swish(x, { attrs: { beta: 1 } }));
    expect(swish(x, { attrs: { beta: 1 } })).to.not.equal(swish(x, { attrs: { beta: 2 } }));
  });

  it('passes verify_grad in float64 and float32', () => {
    verify_grad((x) => swish(x, { attrs: { beta: 1.2 } }), [[[0.3, -1.1], [2.2, 0.05]]]);
    verify_grad((x) => swish(x, { attrs: { beta: 0.7 } }), [NDArray.from([[0.3, -1.1, 2]], 'float32')]);
  });

  it('trains in a small model exactly like the same model built from K.sigmoid', () => {
    const X = [[0.5, -0.2], [1.0, 0.3], [-0.7, 0.8], [0.1, -1.2]];
    const Y = [[1], [0], [1], [0]];
    const run = (act: (h: ReturnType<typeof K.placeholder>) => ReturnType<typeof K.placeholder>) => {
      const x = K.placeholder([4, 2], null, 'float64');
      const y = K.placeholder([4, 1], null, 'float64');
      const W = K.variable([[0.3, -0.4, 0.2], [0.1, 0.5, -0.3]], 'float64');
      const V = K.variable([[0.2], [-0.1], [0.4]], 'float64');
      const loss = K.mean(K.square(K.dot(act(K.dot(x, W)), V).sub(y)));
      const [gW, gV] = K.gradients(loss, [W, V]);
      const step = K.function([x, y], [loss], [K.update(W, W.sub(gW!.mul(0.5))), K.update(V, V.sub(gV!.mul(0.5)))], { optimizer: 'fast_run' });
      return Array.from({ length: 30 }, () => Number(step([X, Y])[0]!.item()));
    };
    const custom = run((h) => swish(h, { attrs: { beta: 1 } }));
    const templated = run((h) => swishT(h, { attrs: { beta: 1 } }));
    const builtin = run((h) => h.mul(K.sigmoid(h)));
    expect(custom[29]!).to.be.lessThan(custom[0]! * 0.8);
    expectClose(custom, builtin, { atol: 1e-12, rtol: 1e-10 });
    expectClose(templated, builtin, { atol: 1e-12, rtol: 1e-10 });
  });

  it('rejects bad specs and reports missing gradients and bad inference clearly', () => {
    expect(() => defineOp({ name: 'add', infer: () => ({ dtype: 'float32', shape: [] }), reference: (x) => x[0]! })).to.throw(ValueError, /built-in/);
    expect(() => defineOp({ name: 'bad name', infer: () => ({ dtype: 'float32', shape: [] }), reference: (x) => x[0]! })).to.throw(ValueError, /letters, digits/);
    expect(() => defineOp({ name: 'swish_test', infer: () => ({ dtype: 'float32', shape: [] }), reference: (x) => x[0]! })).to.throw(/already exists/);
    const nograd = defineOp({ name: 'nograd_test', infer: ([x]) => ({ dtype: x!.dtype, shape: x!.shape }), reference: ([x]) => x! });
    const v = K.variable([1, 2]);
    expect(() => K.gradients(K.sum(nograd(v)), [v])).to.throw(/nograd_test.*without a grad function/);
    const strict = defineOp({
      name: 'strict_test',
      infer: ([x]) => { if (x!.shape.length !== 2) throw new Error(`needs a matrix, got rank ${x!.shape.length}`); return { dtype: x!.dtype, shape: x!.shape }; },
      reference: ([x]) => x!,
    });
    expect(() => strict(K.placeholder([3]))).to.throw(/strict_test: needs a matrix, got rank 1/);
  });

  it('without a template compiles under fast_run as an extern step, and is cached like a built-in op', () => {
    clearCompileCache();
    const build = () => {
      const x = K.placeholder([2, 3], null, 'float32', false, 'x');
      return { x, y: K.exp(swish(x, { attrs: { beta: 1 } })).mul(2) };
    };
    const a = build();
    const f = K.function([a.x], [a.y], [], { optimizer: 'fast_run' });
    const v = [[0.5, -1, 2], [0, 1, -2]];
    const want = v.map((r) => r.map((q) => 2 * Math.exp(q * sig(q))));
    expectClose(f([v])[0]!, want, { rtol: 1e-6 });
    expect(f.source()).to.match(/extern swish_test/);
    const before = { ...compileStats };
    const b = build(); // new placeholders, same structure: the cache hits
    expectClose(K.function([b.x], [b.y])([v])[0]!, want, { rtol: 1e-6 });
    expect(compileStats).to.deep.equal(before);
    // Other attrs are another graph.
    const x = K.placeholder([2, 3], null, 'float32', false, 'x');
    K.function([x], [K.exp(swish(x, { attrs: { beta: 2 } })).mul(2)])([v]);
    expect(compileStats.programs).to.equal(before.programs + 1);
  });

  it('with a cpu template fuses into a kernel and matches its reference', () => {
    const x = K.placeholder([2, 3], null, 'float32', false, 'x');
    const y = K.exp(swishT(x, { attrs: { beta: 1.5 } })).mul(2);
    const f = K.function([x], [y]);
    expect(f.debugprint()).to.match(/^fused\{swish_tmpl_test,exp,mul\}/);
    expect(f.source()).to.not.match(/extern/);
    const v = [[0.5, -1, 2], [0, 1, -2.5]];
    const ref = K.function([x], [y], [], { optimizer: 'none' })([v])[0]!;
    expectClose(f([v])[0]!, ref, { atol: 0, rtol: 0 });
    // Broadcasting inputs: a two-input template.
    const hyp = defineOp({
      name: 'hypot_test', arity: 2, cpu: 'Math.sqrt(x0 * x0 + x1 * x1)',
      infer: ([a, b]) => ({ dtype: a!.dtype, shape: [a!.shape[0]!, b!.shape[1]!] }),
      reference: ([a, b]) => new NDArray(Array.from({ length: a!.shape[0]! * b!.shape[1]! }, (_, i) => Math.hypot(a!.data[Math.floor(i / b!.shape[1]!)]!, b!.data[i % b!.shape[1]!]!)), [a!.shape[0]!, b!.shape[1]!], a!.dtype),
    });
    const p = K.placeholder([3, 1], null, 'float64');
    const q = K.placeholder([1, 2], null, 'float64');
    expectClose(K.function([p, q], [hyp(p, q)])([[[3], [0], [5]], [[4, 0]]])[0]!, [[5, 3], [4, 0], [Math.hypot(5, 4), 5]]);
    verify_grad((t) => swishT(t, { attrs: { beta: 0.9 } }), [[[0.3, -1.1], [2.2, 0.05]]]);
  });

  it('on device gpu: a clear error for a user op without a gpu template, and a gpu.js helper for one with it', () => {
    const x = K.placeholder([3]);
    expect(() => K.function([x], [swish(x, { attrs: { beta: 1 } })], [], { device: 'gpu' }))
      .to.throw(ValueError, /device "gpu" cannot run the user op "swish_test": it was defined without a gpu template.*compile this function for device "cpu"/);
    const h = userGpuHelper(swishT(x, { attrs: { beta: 2 } }));
    expect(h.source).to.equal(`function ${h.name}(x0) { const beta = 2.0; return (x0 / (1.0 + Math.exp(-beta * x0))); }`);
    const run = new Function(`${h.source}; return ${h.name};`)() as (v: number) => number;
    expect(run(0.7)).to.be.closeTo(0.7 * sig(1.4), 1e-12);
  });

  it('rejects bad templates when the op is defined, and non-elementwise results when built', () => {
    const base = { infer: ([x]: readonly { dtype: 'float32'; shape: (number | null)[] }[]) => ({ dtype: x!.dtype, shape: x!.shape }), reference: (x: readonly NDArray[]) => x[0]! };
    expect(() => defineOp({ ...base, name: 'bad_tmpl_test', cpu: 'x0 +* 2' } as never)).to.throw(ValueError, /bad_tmpl_test.*cpu template "x0 \+\* 2" is not a JavaScript expression/);
    expect(() => defineOp({ ...base, name: 'bad_tmpl2_test', cpu: 3 } as never)).to.throw(TypeError, /cpu must be a JavaScript expression string/);
    const rowsum = defineOp({
      name: 'rowsum_tmpl_test', cpu: 'x0', infer: ([x]) => ({ dtype: x!.dtype, shape: [x!.shape[0]!] }), reference: ([x]) => x!,
    });
    expect(() => rowsum(K.placeholder([2, 3]))).to.throw(/rowsum_tmpl_test: an op with a cpu or gpu template is elementwise: its result shape must be its inputs' broadcast shape \(2, 3\), but infer gave \(2,\)/);
  });
});

// Issue 14 item 8: attrs a template would see under a JavaScript reserved word gave a raw SyntaxError.
describe('defineOp: attrs named by reserved words', () => {
  const kw = defineOp<Record<string, number>>({
    name: 'kw_attr_test', arity: 1, cpu: 'x0 * 2', gpu: 'x0 * 2.0',
    infer: ([t]) => ({ dtype: t!.dtype, shape: t!.shape }), reference: ([t]) => new NDArray(Array.from(t!.data, (v) => v * 2), t!.shape, t!.dtype),
  });
  for (const k of ['if', 'let', 'class']) {
    it(`attr "${k}" is refused when the node is built, naming the op, the attr and the fix`, () => {
      const x = K.placeholder([2]);
      expect(() => kw(x, { attrs: { [k]: 1 } })).to.throw(ValueError, new RegExp(`^kw_attr_test: attr "${k}" is a JavaScript reserved word, so the op's cpu template could not name it; rename the attr \\(for example "${k}_"\\)`));
    });
  }
  it('other attrs still reach the template', () => {
    const x = K.placeholder([2]);
    expect(Array.from(K.function([x], [kw(x, { attrs: { if_: 1 } })])([[1, 2]])[0]!.data)).to.deep.equal([2, 4]);
  });
});
