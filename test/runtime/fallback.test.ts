// The fallback rule: a compiled function that runs the reference interpreter,
// whole or for one step, warns once per function naming the op and the reason; fallback "error"
// (K.function's option or THEANINE_FALLBACK=error) makes it an error at the first call, before any
// variable changes; f.source() says what was not compiled.
import { expect } from 'chai';
import { backend as K, FallbackError, NDArray } from '../../src/index.js';
import { apply } from '../../src/ir/build.js';
import { defineOp } from '../../src/api/extend.js';
import { setWarningSink, warningSink } from '../../src/runtime/warn.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';
import { targets } from '../helpers/targets.js';
import { expectClose } from '../helpers/assert.js';

const f32 = (shape: number[], f: (i: number) => number = (i) => i) =>
  new NDArray(Float32Array.from({ length: shape.reduce((p, d) => p * d, 1) }, (_, i) => f(i)), shape, 'float32');

/** Warnings printed while `fn` runs. */
function capture(fn: () => void): string[] {
  const got: string[] = [];
  const before = warningSink();
  setWarningSink((m) => { got.push(m); });
  try { fn(); } finally { setWarningSink(before); }
  return got;
}

function withEnv(value: string | undefined, fn: () => void): void {
  const before = process.env['THEANINE_FALLBACK'];
  if (value === undefined) delete process.env['THEANINE_FALLBACK'];
  else process.env['THEANINE_FALLBACK'] = value;
  try { fn(); } finally {
    if (before === undefined) delete process.env['THEANINE_FALLBACK'];
    else process.env['THEANINE_FALLBACK'] = before;
  }
}

// An op with no code template: it runs as an extern step (its reference implementation).
const noKernel = defineOp({
  name: 'fallback_test_no_kernel',
  infer: ([t]) => ({ dtype: t!.dtype, shape: t!.shape }),
  reference: ([v]) => v!,
  arity: 1,
});

/** A draw whose length is an input's value: its shape is not fixed by the input shapes. */
function valueShaped() {
  const n = K.placeholder([], null, 'int32', false, 'n');
  return { n, y: apply('random_uniform', [n], { shape: [null], dtype: 'float32', seed: 3, uid: null, low: 0, high: 1 }).mul(2) };
}

describe('runtime: the fallback rule', () => {
  beforeEach(() => clearCompileCache());

  it('an extern step warns once per function, naming the op and why; the source says so too', () => {
    withEnv(undefined, () => {
      const x = K.placeholder([3], null, 'float32');
      const f = K.function([x], [K.exp(noKernel(x))]);
      const w = capture(() => { f([f32([3])]); f([f32([3])]); });
      expect(w).to.have.length(1);
      expect(w[0]).to.match(/op fallback_test_no_kernel \(no kernel: the op has no code template\)/);
      expect(f.source()).to.match(/extern fallback_test_no_kernel: not compiled, runs its reference implementation \(no kernel/);
      // a second function over the same graph warns again (once per function)
      const g = K.function([x], [K.exp(noKernel(x))]);
      expect(capture(() => g([f32([3])]))).to.have.length(1);
    });
  });

  it('fallback "error" (option) refuses at the first call and changes no variable', () => {
    const x = K.placeholder([3], null, 'float32');
    const v = K.variable(f32([3]), 'float32', 'v');
    const f = K.function([x], [noKernel(x)], [[v, K.add(v, 1)]], { fallback: 'error' });
    expect(() => f([f32([3])])).to.throw(FallbackError, /function "function" would run the reference interpreter instead of generated code for op fallback_test_no_kernel \(no kernel/);
    expect(K.get_value(v).toArray()).to.deep.equal([0, 1, 2]);
  });

  it('THEANINE_FALLBACK=error applies to every function; the option wins over it; a bad value is an error', () => {
    const x = K.placeholder([3], null, 'float32');
    withEnv('error', () => {
      const f = K.function([x], [noKernel(x)]);
      expect(() => f([f32([3])])).to.throw(FallbackError);
      expect(capture(() => K.function([x], [noKernel(x)], [], { fallback: 'warn' })([f32([3])]))).to.have.length(1);
    });
    withEnv('loud', () => {
      expect(() => K.function([x], [noKernel(x)])).to.throw(/THEANINE_FALLBACK: unknown mode "loud" \(allowed: "warn", "error"\)/);
    });
    expect(() => K.function([x], [noKernel(x)], [], { fallback: 'never' as never })).to.throw(/fallback must be "warn", "error" or \{ mode, allow: op names \}/);
  });

  it('{ mode: "error", allow } accepts extern steps of the named ops only, without a warning', () => {
    const x = K.placeholder([3], null, 'float32');
    const f = K.function([x], [noKernel(x)], [], { fallback: { mode: 'error', allow: ['fallback_test_no_kernel'] } });
    expect(capture(() => expect(f([f32([3])])[0]!.toArray()).to.deep.equal([0, 1, 2]))).to.deep.equal([]);
  });

  it('a shape that depends on input values runs the interpreter: the warning and the error say so', () => {
    const { n, y } = valueShaped();
    const f = K.function([n], [y]);
    let got: NDArray | undefined;
    const w = capture(() => { got = f([new NDArray([4], [], 'int32')])[0]; });
    expect(w).to.have.length(1);
    expect(w[0]).to.match(/the whole function \(random_uniform: shape \(None,\) is not known from the input shapes \(it depends on the values of placeholder n, not only on shapes\)\)/);
    expect(f.source()).to.match(/^\/\/ not compiled: random_uniform: shape \(None,\)/);
    expectClose(got!, K.function([n], [y], [], { optimizer: 'none' })([new NDArray([4], [], 'int32')])[0]!);
    expect(() => K.function([n], [y], [], { fallback: 'error' })([new NDArray([4], [], 'int32')])).to.throw(FallbackError, /depends on the values of placeholder n/);
  });

  it('shapes that do not fit report the interpreter\'s error, not a fallback, even with fallback "error"', () => {
    const a = K.placeholder([null], null, 'float32');
    const b = K.placeholder([null], null, 'float32');
    const f = K.function([a, b], [a.add(b)], [], { fallback: 'error' });
    expect(() => f([f32([2]), f32([3])])).to.throw(/cannot be broadcast/);
  });

  for (const t of targets.filter((t) => t.name.startsWith('gpu'))) {
    it(`${t.name}: the same rule (a whole-function fallback is refused with fallback "error", and warned about otherwise)`, () => {
      const { n, y } = valueShaped();
      expect(() => K.function([n], [y], [], { device: 'gpu', fallback: 'error' })([new NDArray([4], [], 'int32')])).to.throw(FallbackError, /depends on the values/);
      const f = K.function([n], [y], [], { device: 'gpu', fallback: 'warn' });
      const w = capture(() => { f([new NDArray([4], [], 'int32')]); });
      expect(w.filter((m) => m.includes('reference interpreter'))).to.have.length(1);
      expect(f.source()).to.match(/^\/\/ not compiled: the whole function \(random_uniform/);
    });
  }
});
