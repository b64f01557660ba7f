// User ops on the gpu device's webgpu mode: a `wgsl` template (src/codegen/wgsl/user.ts) becomes a
// helper the fused kernel calls, with fallback 'error', against closed forms and the cpu; an op
// without one runs on the host, saying which template is missing; templates that are not WGSL
// expressions are rejected by defineOp, and a WGSL compile error in one names the op.
import { expect } from 'chai';
import { backend as K, NDArray, defineOp } from '../../src/index.js';
import { FallbackError } from '../../src/runtime/fallback.js';
import { expectClose } from '../helpers/assert.js';
import { onWebgpu } from '../helpers/webgpu.js';

const ERROR = { device: 'gpu', fallback: 'error' } as const;

type GateAttrs = { beta: number; shift: number; flip: boolean };
/** (x0 + shift·x1)·sigmoid(βx0), negated where flip: two inputs (broadcast), number and boolean attrs. */
const gate = (a: number, b: number, { beta, shift, flip }: GateAttrs): number =>
  ((a + shift * b) / (1 + Math.exp(-beta * a))) * (flip ? -1 : 1);
const userGate = defineOp<GateAttrs>({
  name: 'wgsl_test_gate',
  arity: 2,
  infer: ([x, y]) => ({ dtype: x!.dtype, shape: x!.shape.length >= y!.shape.length ? x!.shape : y!.shape }),
  reference: ([x, y], at) => {
    const [r, c] = x!.shape as [number, number];
    return new NDArray(Float32Array.from({ length: r * c }, (_, i) => gate(x!.data[i]!, y!.data[i % c]!, at)), [r, c], 'float32');
  },
  cpu: '(x0 + shift * x1) / (1 + Math.exp(-beta * x0)) * (flip ? -1 : 1)',
  wgsl: '(x0 + shift * x1) / (1.0 + exp(-beta * x0)) * select(1.0, -1.0, flip != 0.0)',
});
const cpuOnly = defineOp({
  name: 'wgsl_test_cpu_only',
  arity: 1,
  infer: ([x]) => ({ dtype: x!.dtype, shape: x!.shape }),
  reference: ([x]) => new NDArray(Float32Array.from(x!.data, (v) => v + 1), x!.shape, 'float32'),
  cpu: 'x0 + 1',
});
const unresolved = defineOp({
  name: 'wgsl_test_unresolved',
  arity: 1,
  infer: ([x]) => ({ dtype: x!.dtype, shape: x!.shape }),
  reference: ([x]) => x!,
  cpu: 'x0',
  wgsl: 'no_such_function(x0)',
});

/** max(x, 0) as int32 through a bool-valued template, and where(x > 0, x, fill) with a non-finite attr. */
const positive = defineOp({
  name: 'wgsl_test_positive',
  arity: 1,
  infer: ([x]) => ({ dtype: x!.dtype, shape: x!.shape }),
  reference: ([x]) => new NDArray(Int32Array.from(x!.data, (v) => (v > 0 ? 1 : 0)), x!.shape, x!.dtype),
  cpu: 'x0 > 0 ? 1 : 0',
  wgsl: 'x0 > 0.0',
});
const fillNeg = defineOp<{ fill: number }>({
  name: 'wgsl_test_fill',
  arity: 1,
  infer: ([x]) => ({ dtype: x!.dtype, shape: x!.shape }),
  reference: ([x], { fill }) => new NDArray(Float32Array.from(x!.data, (v) => (v > 0 ? v : fill)), x!.shape, x!.dtype),
  cpu: 'x0 > 0 ? x0 : fill',
  wgsl: 'select(fill, x0, x0 > 0.0)',
});

const X = NDArray.from([[0, 1, -2], [3, -0.5, 2.5]], 'float32');
const Y = NDArray.from([0.25, -1, 2], 'float32');

describe('gpu device, webgpu mode: user ops with a wgsl template', function () {
  this.timeout(300_000);
  onWebgpu();

  it('fuse with their neighbours into one kernel with fallback "error", attrs in the template, as the closed form and the cpu', () => {
    const x = K.placeholder([2, 3]);
    const y = K.placeholder([3]);
    const a1: GateAttrs = { beta: 1.5, shift: 0.5, flip: false };
    const a2: GateAttrs = { beta: -0.75, shift: 2, flip: true };
    const out = K.exp(userGate(K.sin(x), y, { attrs: a1 }).mul(0.5)).add(userGate(x, y, { attrs: a2 }));
    const f = K.function([x, y], [out], [], ERROR);
    const got = f([X, Y])[0]!;
    const want = Array.from({ length: 6 }, (_, i) => {
      const [v, w] = [X.data[i]!, Y.data[i % 3]!];
      return Math.exp(0.5 * gate(Math.sin(v), w, a1)) + gate(v, w, a2);
    });
    expectClose(got, new NDArray(Float32Array.from(want), [2, 3]), { atol: 1e-5, rtol: 1e-5 });
    expectClose(got, K.function([x, y], [out])([X, Y])[0]!, { atol: 1e-5, rtol: 1e-5 }, 'against the cpu');
    const src = f.source();
    expect(src.match(/@compute/g), 'one kernel').to.have.length(1);
    expect(src).to.match(/\/\/ [^\n]*wgsl_test_gate[^\n]*: workgroups/).and.not.to.match(/on the host/);
    // One helper per attrs, the attrs as f32 constants.
    expect(src).to.match(/fn u_wgsl_test_gate_\d+\(x0: f32, x1: f32\) -> f32 \{ let beta: f32 = 1\.5f; let flip: f32 = 0\.0f; let shift: f32 = 0\.5f;/);
    expect(src).to.match(/let beta: f32 = -0\.75f; let flip: f32 = 1\.0f; let shift: f32 = 2\.0f;/);
  });

  it('take integer inputs as f32, a bool result as 1 or 0, and non-finite attrs', () => {
    const n = K.placeholder([5], null, 'int32');
    const x = K.placeholder([5]);
    const f = K.function([n, x], [positive(n).mul(3), fillNeg(x, { attrs: { fill: Number.NEGATIVE_INFINITY } })], [], ERROR);
    const [a, b] = f([NDArray.from([-2, 0, 1, 7, -9], 'int32'), NDArray.from([1.5, -1, 0, 2, -3], 'float32')]);
    expect(a!.dtype).to.equal('int32');
    expect(a!.toArray()).to.deep.equal([0, 0, 3, 3, 0]);
    expect(b!.toArray()).to.deep.equal([1.5, -Infinity, -Infinity, 2, -Infinity]);
    expect(f.source()).to.match(/let fill: f32 = t_bits\(0xff800000u\);/).and.not.to.match(/on the host/);
  });

  it('an op without one runs on the host, naming the missing wgsl template (an error under fallback "error")', () => {
    const x = K.placeholder([2, 3]);
    expect(() => K.function([x], [K.exp(cpuOnly(x))], [], ERROR)([X])).to.throw(
      FallbackError,
      /wgsl_test_cpu_only.*runs on the host on gpu:webgpu: calls the user op wgsl_test_cpu_only, which was defined without a wgsl template/,
    );
    const got = K.function([x], [K.exp(cpuOnly(x))], [], { device: 'gpu', fallback: 'warn' })([X])[0]!;
    expectClose(got, new NDArray(Float32Array.from(X.data, (v) => Math.exp(v + 1)), [2, 3]), { rtol: 1e-5 });
  });

  it('a template the shader compiler rejects names the op at the first call', () => {
    const x = K.placeholder([2, 3]);
    const f = K.function([x], [unresolved(x).mul(2)], [], ERROR);
    expect(() => f([X])).to.throw(/WGSL did not compile: in the wgsl template of user op wgsl_test_unresolved: .*no_such_function/);
  });
});

describe('defineOp: wgsl templates are checked when given', () => {
  const spec = (wgsl: unknown, more: object = {}) => ({
    name: `wgsl_test_bad_${Math.random().toString(36).slice(2)}`,
    arity: 1,
    infer: ([x]: readonly { dtype: 'float32'; shape: readonly (number | null)[] }[]) => ({ dtype: x!.dtype, shape: x!.shape }),
    reference: ([x]: readonly NDArray[]) => x!,
    cpu: 'x0',
    wgsl,
    ...more,
  });
  const bad = (wgsl: unknown, why: RegExp, more: object = {}) =>
    expect(() => defineOp(spec(wgsl, more) as never)).to.throw(why);

  it('accepts expressions: calls, conversions, template lists, members, comparisons, block comments', () => {
    for (const ok of ['x0 * 3', 'select(x0, -x0, x0 < 0.0)', 'f32(bitcast<u32>(x0) >> 1u) /* bits */', 'vec2<f32>(x0, 1.0).y + 1e-3f', '-(x0) % 2.0'])
      expect(() => defineOp(spec(ok) as never), ok).not.to.throw();
  });

  it('rejects statements, broken expressions, inputs past the arity, helper names and a missing cpu template', () => {
    bad('', /wgsl must be a WGSL expression string/);
    bad(3, /wgsl must be a WGSL expression string/);
    bad('let y = x0; y', /not a WGSL expression: unexpected "=" at 6 \(one expression, no statements\)/);
    bad('return x0', /not a WGSL expression: return begins a statement/);
    bad('x0 * 2.0;', /unexpected ";" at 8 \(one expression, no statements\)/);
    bad('{ x0 }', /unexpected "\{" at 0/);
    bad('x0 = 1.0', /unexpected "=" at 3/);
    bad('x0 *', /it ends where an operand was expected/);
    bad('x0 +* 2.0', /unexpected "\*"/);
    bad('exp(x0', /expected "\)", found the end/);
    bad('x0 x0', /unexpected "x0" after the expression/);
    bad('x1 * 2.0', /it reads x1, but the op has 1 input/);
    bad('t_pow(x0, 2.0)', /names t_\.\.\. and u_\.\.\. are the renderer's helpers/);
    bad('x0 // half', /line comments/);
    bad('x0', /a wgsl template needs a cpu template too/, { cpu: undefined });
  });
});
