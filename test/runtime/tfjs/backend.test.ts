// The tensorflow backend beyond the op tables: selection, loading, tensor memory, variables
// shared with the theanine backend, errors, and the tfjs backend the caller had active.
import { expect } from 'chai';
import * as tf from '@tensorflow/tfjs';
import { backend as K, NDArray, ShapeError, ValueError, defineOp, definePass, set_backend } from '../../../src/index.js';
import { getConfig, reloadConfig } from '../../../src/api/config.js';
import { apply } from '../../../src/ir/build.js';
import { _setTfjsLoader, defaultLoader, loadTfjs, tfjsRuntime, type ModuleLoader } from '../../../src/runtime/tfjs/load.js';
import { expectClose } from '../../helpers/assert.js';

const TF = { backend: 'tensorflow' } as const;

/** A loader on which the listed packages are not installed (Node's MODULE_NOT_FOUND error). */
function without(...missing: string[]): ModuleLoader {
  const absent = (id: string) => missing.some((m) => id === m || id.startsWith(`${m}/`));
  const notFound = (id: string) => Object.assign(new Error(`Cannot find module '${id}'`), { code: 'MODULE_NOT_FOUND' });
  return {
    require: (id) => { if (absent(id)) throw notFound(id); return defaultLoader.require(id); },
    resolve: (id) => { if (absent(id)) throw notFound(id); return defaultLoader.resolve(id); },
  };
}

describe('runtime/tfjs: the tensorflow backend', () => {
  describe('selection', () => {
    const saved = getConfig();
    afterEach(() => reloadConfig({ env: { KERAS_HOME: process.env['KERAS_HOME'] } }));

    it('KERAS_BACKEND=tensorflow makes K.backend() "tensorflow" and K.function run on TensorFlow.js', () => {
      reloadConfig({ env: { KERAS_HOME: process.env['KERAS_HOME'], KERAS_BACKEND: 'tensorflow' } });
      expect(K.backend()).to.equal('tensorflow');
      const x = K.placeholder([2]);
      const f = K.function([x], [x.mul(2)]);
      expect(f.backend).to.equal('tensorflow');
      expect(f([[1, 2]])[0]!.toArray()).to.deep.equal([2, 4]);
      expect(saved.backend).to.equal('theanine');
    });

    it('set_backend switches functions compiled afterwards; a bad name throws and keeps the old one', () => {
      set_backend('tensorflow');
      expect(K.backend()).to.equal('tensorflow');
      expect(() => set_backend('torch' as never)).to.throw(ValueError, /set_backend: unknown backend "torch" \(allowed: "theanine", "tensorflow", "onnx"\)/);
      expect(K.backend()).to.equal('tensorflow');
      const x = K.placeholder([]);
      expect(K.function([x], [x]).backend).to.equal('tensorflow');
      set_backend('theanine');
      expect(K.function([x], [x]).backend).to.equal('theanine');
    });

    it('the backend option overrides the configured backend per function, and is checked', () => {
      const x = K.placeholder([]);
      expect(K.function([x], [x], [], TF).backend).to.equal('tensorflow');
      expect(() => K.function([x], [x], [], { backend: 'jax' as never })).to.throw(ValueError, /function: unknown backend "jax" \(allowed: "theanine", "tensorflow", "onnx"\)/);
    });
  });

  describe('loading TensorFlow.js', () => {
    afterEach(() => _setTfjsLoader(undefined));

    it('names the package to install when no TensorFlow.js package is present', () => {
      _setTfjsLoader(without('@tensorflow/tfjs-node', '@tensorflow/tfjs', '@tensorflow/tfjs-backend-wasm'));
      const x = K.placeholder([]);
      expect(() => K.function([x], [x], [], TF)).to.throw(/backend "tensorflow" needs TensorFlow.js.*npm install @tensorflow\/tfjs`/);
      // the theanine backend does not need it
      expect(K.function([x], [x.add(1)])([1])[0]!.item()).to.equal(2);
    });

    it('uses @tensorflow/tfjs-node when present, else the wasm backend, else the cpu backend, saying why', () => {
      const wasm = loadTfjs(without('@tensorflow/tfjs-node'));
      expect(wasm.flavour).to.equal('wasm');
      expect(wasm.notes).to.deep.equal(['@tensorflow/tfjs-node is not installed']);
      const cpu = loadTfjs(without('@tensorflow/tfjs-node', '@tensorflow/tfjs-backend-wasm'));
      expect(cpu.flavour).to.equal('cpu');
      expect(cpu.notes).to.deep.equal(['@tensorflow/tfjs-node is not installed', '@tensorflow/tfjs-backend-wasm is not installed']);
    });

    it('THEANINE_TFJS_BACKEND asks for one flavour, with a clear error when it is missing or unknown', () => {
      expect(() => loadTfjs(without('@tensorflow/tfjs-node'), 'node')).to.throw(/THEANINE_TFJS_BACKEND=node needs @tensorflow\/tfjs-node; install it with `npm install @tensorflow\/tfjs-node`/);
      expect(() => loadTfjs(without('@tensorflow/tfjs-backend-wasm'), 'wasm')).to.throw(/THEANINE_TFJS_BACKEND=wasm needs @tensorflow\/tfjs-backend-wasm/);
      expect(loadTfjs(defaultLoader, 'cpu').flavour).to.equal('cpu');
      const old = process.env['THEANINE_TFJS_BACKEND'];
      process.env['THEANINE_TFJS_BACKEND'] = 'gpu';
      try {
        _setTfjsLoader(defaultLoader);
        expect(() => tfjsRuntime()).to.throw(/THEANINE_TFJS_BACKEND is "gpu"; allowed: "node", "wasm", "cpu"/);
      } finally {
        if (old === undefined) delete process.env['THEANINE_TFJS_BACKEND'];
        else process.env['THEANINE_TFJS_BACKEND'] = old;
      }
    });

    it('runs the same function on the cpu and the wasm flavour alike', () => {
      const x = K.placeholder([2, 2]);
      const f = K.function([x], [K.exp(K.dot(x, x))], [], TF);
      const got = f([[[0.1, 0.2], [0.3, 0.4]]])[0]!;
      const cpu = loadTfjs(defaultLoader, 'cpu');
      const want = cpu.withBackend(() => tf.exp(tf.matMul(tf.tensor2d([[0.1, 0.2], [0.3, 0.4]]), tf.tensor2d([[0.1, 0.2], [0.3, 0.4]]))).arraySync() as number[][]);
      expectClose(got, want, { atol: 1e-6, rtol: 1e-6 });
    });
  });

  describe('tensor memory', () => {
    it('tf.memory().numTensors does not grow across calls (outputs, updates, gradients)', () => {
      const x = K.placeholder([null, 3]);
      const W = K.variable([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]);
      const b = K.variable([0, 0]);
      const loss = K.sum(K.square(K.add(K.dot(x, W), b)), null);
      const [gW, gb] = K.gradients(loss, [W, b]);
      const step = K.function([x], [loss], [K.update_sub(W, gW!.mul(0.01)), K.update_sub(b, gb!.mul(0.01))], TF);
      const batch = [[1, 2, 3], [4, 5, 6]];
      step([batch]);
      const baseline = tf.memory().numTensors;
      for (let i = 0; i < 20; i++) step([batch]);
      expect(tf.memory().numTensors).to.be.at.most(baseline);
    });

    it('constants are uploaded once and survive being outputs themselves', () => {
      const c = K.constant([[1, 2], [3, 4]]);
      const x = K.placeholder([2, 2]);
      const f = K.function([x], [c, K.add(x, c), K.identity(c)], [], TF);
      f([[[0, 0], [0, 0]]]);
      const baseline = tf.memory().numTensors;
      for (let i = 0; i < 5; i++) {
        const [a, b, d] = f([[[1, 1], [1, 1]]]);
        expect(a!.toArray()).to.deep.equal([[1, 2], [3, 4]]);
        expect(b!.toArray()).to.deep.equal([[2, 3], [4, 5]]);
        expect(d!.toArray()).to.deep.equal([[1, 2], [3, 4]]);
      }
      expect(tf.memory().numTensors).to.be.at.most(baseline);
    });

    it('a failing call frees what it had computed', () => {
      const x = K.placeholder([null]);
      const y = K.placeholder([null]);
      const f = K.function([x, y], [K.exp(x).add(y)], [], TF);
      f([[1, 2], [3, 4]]);
      const baseline = tf.memory().numTensors;
      expect(() => f([[1, 2, 3], [1, 2]])).to.throw(ShapeError, /add: shapes \([23],\) and \([23],\) cannot be broadcast/);
      expect(tf.memory().numTensors).to.be.at.most(baseline);
    });
  });

  describe('variables', () => {
    it('set_value and get_value stay consistent with the values functions read and write', () => {
      const v = K.variable([1, 2, 3]);
      const inc = K.function([], [K.sum(v, null)], [K.update_add(v, 1)], TF);
      expect(inc([])[0]!.item()).to.equal(6);
      expect(K.get_value(v).toArray()).to.deep.equal([2, 3, 4]);
      K.set_value(v, [10, 20, 30]);
      expect(inc([])[0]!.item()).to.equal(60);
      expect(K.get_value(v).toArray()).to.deep.equal([11, 21, 31]);
    });

    it('a variable updated by both backends in turn is seen by each', () => {
      const v = K.variable(0);
      const onTf = K.function([], [v], [K.update_add(v, 1)], TF);
      const onRef = K.function([], [v], [K.update_add(v, 10)], { backend: 'theanine' });
      expect(onTf([])[0]!.item()).to.equal(0);
      expect(onRef([])[0]!.item()).to.equal(1);
      expect(onTf([])[0]!.item()).to.equal(11);
      expect(onTf([])[0]!.item()).to.equal(12);
      expect(K.eval(v).item()).to.equal(13);
    });

    it('outputs read the values from before the call; all updates are applied together (Theano)', () => {
      const a = K.variable(1);
      const b = K.variable(2);
      const swap = K.function([], [a, b], [K.update(a, b), K.update(b, a)], TF);
      expect(swap([]).map((r) => r.item())).to.deep.equal([1, 2]);
      expect(swap([]).map((r) => r.item())).to.deep.equal([2, 1]);
      expect([K.get_value(a).item(), K.get_value(b).item()]).to.deep.equal([1, 2]);
    });

    it('an update whose runtime shape contradicts the variable changes nothing', () => {
      const v = K.variable([0, 0]);
      const x = K.placeholder([null]);
      const f = K.function([x], [K.sum(v, null)], [K.update(v, K.add(v, x))], TF);
      expect(() => f([[1, 2, 3]])).to.throw(ShapeError);
      expect(K.get_value(v).toArray()).to.deep.equal([0, 0]);
      f([[1, 2]]);
      expect(K.get_value(v).toArray()).to.deep.equal([1, 2]);
    });

    it('int and bool variables keep their dtype through updates', () => {
      const n = K.variable(new NDArray([1, 2], [2], 'int32'), 'int32');
      const flag = K.variable(new NDArray([0, 1], [2], 'bool'), 'bool');
      const f = K.function([], [n, flag], [K.update_add(n, 5), K.update(flag, apply('logical_not', [flag]))], TF);
      f([]);
      const [nv, fv] = f([]);
      expect(nv!.dtype).to.equal('int32');
      expect(nv!.toArray()).to.deep.equal([6, 7]);
      expect(fv!.toArray()).to.deep.equal([true, false]);
      expect(K.get_value(flag).toArray()).to.deep.equal([false, true]);
    });
  });

  describe('semantics shared with the theanine backend', () => {
    it('the learning phase, fed or set', () => {
      const x = K.placeholder([2]);
      const y = apply('where', [K.cast(K.learning_phase(), 'bool'), x.mul(2), x]);
      const fed = K.function([x, K.learning_phase()], [y], [], TF);
      expect(fed([[1, 2], 1])[0]!.toArray()).to.deep.equal([2, 4]);
      expect(fed([[1, 2], 0])[0]!.toArray()).to.deep.equal([1, 2]);
      const set = K.function([x], [y], [], TF);
      K.set_learning_phase(1);
      try {
        expect(set([[1, 2]])[0]!.toArray()).to.deep.equal([2, 4]);
      } finally {
        K.set_learning_phase(0);
      }
    });

    it('input errors are K.function\'s own, before anything runs', () => {
      const x = K.placeholder([null, 2], null, 'float32', false, 'x');
      const f = K.function([x], [x], [], TF);
      expect(() => f([[[1, 2, 3]]])).to.throw(ShapeError, /function: input 0 \("x"\): value of shape \(1, 3\) does not fit the placeholder's shape \(None, 2\)/);
      expect(() => f([])).to.throw(ValueError, /expected 1 input values/);
    });

    it('a user op (defineOp) runs through its reference implementation, gradient included', () => {
      const cube = defineOp({
        name: 'tfjs_test_cube',
        arity: 1,
        infer: ([t]) => ({ dtype: t!.dtype, shape: t!.shape }),
        reference: ([a]) => new NDArray(Array.from(a!.data, (v) => v ** 3), a!.shape, a!.dtype),
        grad: ([a], _out, g) => [K.multiply(g, K.multiply(3, K.square(a!)))],
      });
      const x = K.placeholder([3]);
      const y = cube(K.exp(x));
      const [g] = K.gradients(K.sum(y, null), [x]);
      const f = K.function([x], [y, g!], [], TF);
      const [yv, gv] = f([[0, 1, -1]]);
      expectClose(yv!, [1, Math.exp(3), Math.exp(-3)], { atol: 1e-5, rtol: 1e-5 });
      expectClose(gv!, [3, 3 * Math.exp(3), 3 * Math.exp(-3)], { atol: 1e-5, rtol: 1e-5 });
    });

    it('runs the optimized graph (log(1 + exp x) -> log1p); THEANINE_DEBUG=passes prints the passes', () => {
      const x = K.placeholder([3]);
      const y = K.log(K.add(1, K.exp(x)));
      const written: string[] = [];
      const write = process.stderr.write;
      const old = process.env['THEANINE_DEBUG'];
      process.env['THEANINE_DEBUG'] = 'passes';
      process.stderr.write = ((chunk: string) => { written.push(String(chunk)); return true; }) as typeof process.stderr.write;
      let f;
      try {
        f = K.function([x], [y], [], { backend: 'tensorflow', optimizer: 'fast_run' });
      } finally {
        process.stderr.write = write;
        if (old === undefined) delete process.env['THEANINE_DEBUG'];
        else process.env['THEANINE_DEBUG'] = old;
      }
      expect(f.debugprint()).to.match(/^log1p /);
      expect(written.join('')).to.match(/\[theanine passes\] stabilize: /);
      expectClose(f([[1, 2, 3]])[0]!, [1, 2, 3].map((v) => Math.log1p(Math.exp(v))), { atol: 1e-5, rtol: 1e-6 });
      expect(K.function([x], [y], [], { backend: 'tensorflow', optimizer: 'none' }).debugprint()).to.match(/^log /);
    });

    it('takes user passes (passes.add) and passes.remove like the theanine backend', () => {
      // a pass whose effect shows in the values: exp(x) becomes x * 2
      const twice = definePass('tfjs_test_exp_to_double', (n) => (n.op === 'exp' ? K.multiply(n.inputs[0]!, 2) : null));
      const x = K.placeholder([3]);
      const y = K.exp(x);
      const f = K.function([x], [y], [], { backend: 'tensorflow', passes: { add: [twice] } });
      expect(f([[1, 2, 3]])[0]!.toArray()).to.deep.equal([2, 4, 6]);
      const g = K.function([x], [K.log(K.add(1, K.exp(x)))], [], { backend: 'tensorflow', passes: { remove: ['stabilize'] } });
      expect(g.debugprint()).to.match(/^log /);
      expect(() => K.function([x], [y], [], { backend: 'tensorflow', optimizer: 'none', passes: { add: [twice] } })).to.throw(ValueError, /passes were given but optimizer "none"/);
    });

    it('leaves the caller\'s active tfjs backend in place', async () => {
      await tf.setBackend('cpu');
      const x = K.placeholder([]);
      K.function([x], [x.add(1)], [], TF)([1]);
      expect(tf.getBackend()).to.equal('cpu');
    });
  });
});
