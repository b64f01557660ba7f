// Issue 30: where theanine differed from Keras 2.3.1 on TensorFlow, each checked on every target
// of targets.ts (cpu, gpu, tensorflow, onnx): K.eval / get_value / batch_get_value on the
// configured backend and device, compiled once per expression; K.eval of an update; K.eye of a
// pair; K.sqrt clipped at 0; is_keras_tensor; print_tensor's format; TypeError for a bad dtype;
// verify_grad at the precision the backend computes in; an assignable constraint.
// (ctc_decode's width and beam scores: ctc-decode.test.ts.)
import { expect } from 'chai';
import { backend as K, NDArray, ValueError, verify_grad } from '../../src/index.js';
import { device as configuredDevice, backend as configuredBackend, set_backend, set_device } from '../../src/api/config.js';
import { evalFunctionOf } from '../../src/api/eval.js';
import { computesInFloat32 } from '../../src/api/gradients.js';
import { compileStats } from '../../src/runtime/target.js';
import type { Node } from '../../src/ir/node.js';
import { expectClose } from '../helpers/assert.js';
import { runOn, targets, type Target } from '../helpers/targets.js';

/** The targets K.eval can be configured to: a backend and a device (K.eval takes no optimizer level). */
const configurable = targets.filter((t) => t.name !== 'reference' && t.options.optimizer !== 'fast_compile');

/** Runs `f` with keras.json's backend and device set to the target's, then restores them. */
function onTarget<T>(t: Target, f: () => T): T {
  const [b, d] = [configuredBackend(), configuredDevice()];
  set_backend(t.options.backend ?? 'theanine');
  set_device(t.options.device ?? 'cpu');
  try { return f(); } finally { set_backend(b); set_device(d); }
}

/** console.log's lines while `f` runs (print_tensor's default hook writes there). */
function captured(f: () => void): string[] {
  const lines: string[] = [];
  const orig = console.log;
  console.log = (...a: unknown[]) => { lines.push(a.map(String).join(' ')); };
  try { f(); } finally { console.log = orig; }
  return lines;
}

describe('K.eval, K.get_value, K.batch_get_value on the configured backend and device', () => {
  for (const t of configurable) {
    describe(`[${t.name}]`, () => {
      it('K.eval runs what K.function runs there, compiled once per expression', () => onTarget(t, () => {
        const v = K.variable([[0.1, -0.7], [2.5, 0.3]], 'float64');
        const loss = () => K.mean(K.square(K.tanh(K.dot(v, v))));
        const want = K.function([], [loss()], [], t.options)([])[0]!;
        const first = K.eval(loss());
        const f = evalFunctionOf(loss());
        expect(f, 'the function K.eval made').to.not.equal(undefined);
        expect(f!.backend).to.equal(t.options.backend ?? 'theanine');
        if (t.options.backend === undefined) expect(f!.device.split(':')[0]).to.equal(t.options.device);
        expect(first.toArray()).to.deep.equal(want.toArray());
        const programs = compileStats.programs;
        const specs = compileStats.specializations;
        for (let i = 0; i < 5; i++) expect(K.eval(loss()).toArray()).to.deep.equal(want.toArray());
        expect(evalFunctionOf(loss())).to.equal(f);
        expect([compileStats.programs - programs, compileStats.specializations - specs], 'nothing compiled again').to.deep.equal([0, 0]);
        // a new value of the variable is read at the next call
        K.set_value(v, [[0, 0], [0, 0]]);
        expect(K.eval(loss()).toArray()).to.equal(0);
      }));

      if (t.options.backend === 'tensorflow') {
        it('the tensorflow backend computes float64 in float32 for K.eval too', () => onTarget(t, () => {
          const third = K.divide(K.constant(1, 'float64'), K.constant(3, 'float64'));
          expect(K.eval(third).item()).to.equal(Math.fround(1 / 3));
        }));
      }

      it('get_value of an expression and batch_get_value of variables and expressions', () => onTarget(t, () => {
        const a = K.variable([1, 2, 3]);
        const b = K.variable(2);
        const e = K.multiply(a, b);
        const want = K.function([], [e], [], t.options)([])[0]!.toArray();
        expect(K.get_value(e).toArray()).to.deep.equal(want);
        const [va, ve, vb] = K.batch_get_value([a, e, b]);
        expect([va!.toArray(), ve!.toArray(), vb!.toArray()]).to.deep.equal([[1, 2, 3], want, 2]);
        expect(K.batch_get_value({ xs: [K.sum(a)] })[0]!.toArray()).to.equal(6);
        expect(() => K.eval(K.add(a, K.placeholder([3], { name: 'p' })))).to.throw(/eval: .* depends on placeholder "p"; evaluate it with K.function/);
      }));

      it('K.eval of update, update_add, update_sub performs the assignment and returns the new value', () => onTarget(t, () => {
        const v = K.variable([1, 2], 'float32');
        expect(K.eval(K.update(v, [5, 6])).toArray()).to.deep.equal([5, 6]);
        expect(K.get_value(v).toArray()).to.deep.equal([5, 6]);
        expect(K.eval(K.update_add(v, [1, 1])).toArray()).to.deep.equal([6, 7]);
        expect(K.eval(K.update_sub(v, K.constant([2, 3]))).toArray()).to.deep.equal([4, 4]);
        expect(K.get_value(v).toArray()).to.deep.equal([4, 4]);
        for (let i = 0; i < 3; i++) K.eval(K.update_add(v, [1, 1]));
        expect(K.get_value(v).toArray()).to.deep.equal([7, 7]);
        const m = K.variable([10], 'float32');
        expect(K.eval(K.moving_average_update(m, K.constant([0]), 0.5)).toArray()).to.deep.equal([5]);
      }));

      it('K.eye of a pair [n, m], static and from tensor sizes', () => onTarget(t, () => {
        expect(K.eval(K.eye([3, 2])).toArray()).to.deep.equal([[1, 0], [0, 1], [0, 0]]);
        expect(K.eval(K.eye({ size: [1, 3], dtype: 'int32' })).toArray()).to.deep.equal([[1, 0, 0]]);
        const x = K.placeholder([null, 2]);
        const e = K.eye([K.shape(x).get(0), 4]);
        expect(runOn(t, [x], [e], [NDArray.from([[0, 0], [0, 0]], 'float32')])[0]!.toArray()).to.deep.equal([[1, 0, 0, 0], [0, 1, 0, 0]]);
      }));

      it('K.sqrt is clipped at 0 (0 for negative inputs), with gradient 0 there', () => onTarget(t, () => {
        expect(K.eval(K.sqrt(K.variable([-1]))).toArray()).to.deep.equal([0]);
        const x = K.placeholder([4]);
        const [g] = K.gradients(K.sum(K.sqrt(x)), [x]);
        const [y, dy] = runOn(t, [x], [K.sqrt(x), g!], [NDArray.from([-1, -4, 4, 0.25], 'float32')]);
        expectClose(y!, [0, 0, 2, 0.5], { atol: 1e-6, rtol: 1e-6 }, 'sqrt');
        expectClose(dy!, [0, 0, 0.25, 1], { atol: 1e-6, rtol: 1e-6 }, 'gradient');
      }));

      it("print_tensor prints 'msg [[1]]', as TensorFlow's tf.print(message, x)", () => onTarget(t, () => {
        const x = K.placeholder([1, 1]);
        const f = K.function([x], [K.print_tensor(x, 'msg')], [], t.options);
        const lines = captured(() => { f([[[1]]]); });
        expect(lines).to.deep.equal(['msg [[1]]']);
      }));

      it('verify_grad follows the precision the backend computes in: float64 inputs pass, a wrong gradient fails', () => {
        const x = new NDArray([0.3, -1.2, 0.8], [3], 'float64');
        verify_grad((a) => K.sum(K.multiply(K.tanh(a), a)), [x], { functionOptions: t.options });
        // stop_gradient hides a term from the symbolic gradient: the finite differences see it
        expect(() => verify_grad((a) => K.sum(K.add(K.square(a), K.stop_gradient(K.multiply(a, 3)))), [x], { functionOptions: t.options }))
          .to.throw(/verify_grad: input 0, element 0/);
        expect(computesInFloat32(t.options)).to.equal(t.options.backend === 'tensorflow' || t.options.device === 'gpu');
      });
    });
  }
});

describe('placeholders of unknown rank', () => {
  it('K.placeholder({ shape: null, dtype: "int64" }): rank, shape unknown; elementwise ops carry it, others refuse naming it', () => {
    const x = K.placeholder({ shape: null, dtype: 'int64', name: 'ids' });
    expect([K.ndim(x), K.int_shape(x), K.dtype(x)]).to.deep.equal([null, null, 'int64']);
    const y = K.exp(K.multiply(K.cast(x, 'float32'), 0.5));
    expect([K.ndim(y), K.int_shape(y), K.dtype(y)]).to.deep.equal([null, null, 'float32']);
    expect(() => K.sum(x)).to.throw(ValueError, /K\.sum: sum needs the rank of its operands, but ids has unknown rank \(a placeholder made with neither shape nor ndim\); give it a shape or an ndim/);
    expect(() => K.dot(y, K.variable([[1]]))).to.throw(ValueError, /K\.dot: dot needs the rank of its operands, but ids|K\.dot: .* has unknown rank/);
  });
  for (const t of targets) {
    it(`K.function takes each call's rank from the value fed [${t.name}]`, () => {
      const x = K.placeholder({ shape: null, name: 'x' });
      const k = K.placeholder([2], null, 'float32', false, 'k');
      const f = K.function([x, k], [K.add(K.square(x), 1), K.multiply(k, 2)], [], t.options);
      expect(f.backend).to.equal(t.options.backend ?? 'theanine');
      const [a, b] = f([[1, 2], [1, 1]]);
      expect([a!.toArray(), b!.toArray()]).to.deep.equal([[2, 5], [2, 2]]);
      expect(f([[[3], [0.5]], [0, 1]])[0]!.toArray()).to.deep.equal([[10], [1.25]]);
      expect(f([2, [0, 0]])[0]!.toArray()).to.equal(5);
      expect(f.debugprint()).to.match(/square|mul|add|fused/);
      expect(() => f([[1]])).to.throw(ValueError, /expected 2 input values \(x, k\), got 1/);
    });
  }
});

describe('Keras 2.3.1 behaviour that needs no backend', () => {
  it('is_keras_tensor(placeholder([2, 4, 5])) is false; a tensor with _keras_history is one', () => {
    expect(K.is_keras_tensor(K.placeholder([2, 4, 5]))).to.equal(false);
    const h: Node = K.relu(K.placeholder([2, 4]));
    expect(K.is_keras_tensor(h)).to.equal(false);
    h._keras_history = ['Dense', 0, 0];
    expect(K.is_keras_tensor(h)).to.equal(true);
  });

  it("a dtype that is not a dtype is a TypeError (Keras: K.variable('', 'unsupported'))", () => {
    expect(() => K.variable('', 'unsupported' as never)).to.throw(TypeError, /variable: dtype "unsupported" is not a dtype/);
    expect(() => K.placeholder([1], null, 'float' as never)).to.throw(TypeError, /placeholder: dtype "float" is not a dtype/);
  });

  it("a variable's constraint is assignable, and K.variable's is read back", () => {
    const unit = (w: Node) => K.divide(w, K.sqrt(K.sum(K.square(w))));
    const nonneg = (w: Node) => K.relu(w);
    const v = K.variable([3, 4], null, null, unit);
    expect(v.constraint).to.equal(unit);
    v.constraint = nonneg;
    expect(v.constraint).to.equal(nonneg);
    v.constraint = null;
    expect(v.constraint).to.equal(null);
    expect(() => { v.constraint = 5 as never; }).to.throw(TypeError, /constraint: constraint must be a function from tensor to tensor \(or null\), got number 5/);
    expect(() => { K.placeholder([1]).constraint = nonneg; }).to.throw(TypeError, /constraint: only a variable has a constraint/);
  });

  it('K.eye: size must be an integer or a pair', () => {
    expect(() => K.eye([1, 2, 3] as never)).to.throw(/eye: size must be an integer or a pair \[n, m\], got an array of 3 entries/);
    expect(() => K.eye([2, -1])).to.throw(/eye: size must be an integer >= 0/);
  });
});
