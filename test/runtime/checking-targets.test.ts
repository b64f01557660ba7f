// Checking mode on every target, tensorflow and onnx included: a planted wrong rewrite is named on
// each; a planted wrong result of a deep function (a training step: its tolerance grows with its
// rounding depth, src/ir/rounding.ts) is still caught, the function unplanted passes; on onnx the
// kernels are checked in one ONNX Runtime session per function (checkKernelsTogether).
import { expect } from 'chai';
import { backend as K, BadKernel, BadOptimization, NDArray, defineOp, definePass, verify_grad } from '../../src/index.js';
import type { Tensor } from '../../src/index.js';
import type { Node } from '../../src/ir/node.js';
import { clearCompileCache, compileStats } from '../../src/runtime/cpu/compile.js';
import { checkedExecutor } from '../../src/runtime/check.js';
import type { Executor } from '../../src/runtime/function.js';
import type { Target, TargetRequest } from '../../src/runtime/target.js';
import { cpuTarget } from '../../src/runtime/cpu/compile.js';
import { gpuTarget } from '../../src/runtime/gpu/compile.js';
import { tfjsTarget } from '../../src/runtime/tfjs/executor.js';
import { onnxTarget } from '../../src/runtime/onnx/executor.js';
import { fallbackPolicy } from '../../src/runtime/fallback.js';
import { targets } from '../helpers/targets.js';

const arr = (shape: number[], f: (i: number) => number) =>
  new NDArray(Float32Array.from({ length: shape.reduce((p, d) => p * d, 1) }, (_, i) => f(i)), shape);

const wrongExp = definePass('wrong_exp_targets_test', (n) => (n.op === 'exp' ? n.inputs[0]! : null), { doc: 'exp(x) -> x (planted bug)' });

// reference: 2x; cpu kernel: 3x (planted bug).
const tripled = defineOp({
  name: 'planted_wrong_together', arity: 1,
  infer: ([v]) => ({ dtype: v!.dtype, shape: v!.shape }),
  reference: ([v]) => new NDArray(v!.data.map((a) => 2 * a), v!.shape, v!.dtype),
  cpu: 'x0 * 3',
});

const compiled = targets.filter((t) => t.options.optimizer !== 'none');

function targetOf(o: { backend?: string; device?: string }): Target {
  if (o.backend === 'tensorflow') return tfjsTarget;
  if (o.backend === 'onnx') return onnxTarget;
  return o.device === 'gpu' ? gpuTarget : cpuTarget;
}

/** An MLP's SGD step as graph outputs: the loss and the first layer's new weights (deep: forward and back). */
function mlpStep(): { inputs: Node[]; outputs: Node[]; values: NDArray[] } {
  const x = K.placeholder([16, 20], null, 'float32', false, 'x');
  const y = K.placeholder([16, 10], null, 'float32', false, 'y');
  const w1 = K.variable(arr([20, 32], (i) => Math.sin(i) / 4), 'float32', 'w1');
  const w2 = K.variable(arr([32, 10], (i) => Math.cos(i) / 4), 'float32', 'w2');
  const p = K.softmax(K.dot(K.relu(K.dot(x, w1)), w2));
  const loss = K.mean(K.categorical_crossentropy(p, y));
  const [g1] = K.gradients(loss, [w1]);
  const values = [arr([16, 20], (i) => Math.sin(i * 0.37)), arr([16, 10], (i) => (i % 10 === (Math.floor(i / 10) * 3) % 10 ? 1 : 0))];
  return { inputs: [x, y], outputs: [loss, (w1 as Tensor).sub(g1!.mul(0.5))], values };
}

describe('checking mode on every target: planted bugs', () => {
  beforeEach(() => clearCompileCache());

  for (const t of compiled) {
    it(`${t.name}: a wrong rewrite raises BadOptimization naming the rule`, () => {
      const x = K.placeholder([2, 3], null, 'float32', false, 'x');
      expect(() => K.function([x], [K.exp(x).add(1)], [], { ...t.options, mode: 'debug', passes: { add: [wrongExp] } }))
        .to.throw(BadOptimization)
        .with.property('rule', 'wrong_exp_targets_test');
    });

    it(`${t.name}: a deep function's results pass the whole-function check; a 0.1% error planted in one is caught`, () => {
      const { inputs, outputs, values } = mlpStep();
      const target = targetOf(t.options as { backend?: string; device?: string });
      const req: TargetRequest = {
        inputs,
        targets: outputs,
        updates: [],
        nOut: outputs.length,
        optimizer: t.options.optimizer ?? 'fast_run',
        name: 'planted',
        fallback: fallbackPolicy('planted', t.options.fallback ?? 'error'),
        mode: 'debug',
      };
      const inner = target.executor(req);
      const sound = checkedExecutor(target, req, t.name, inner);
      expect(sound.run(values, 0)).to.have.length(2);
      let plant = true;
      const wrong = Object.assign(Object.create(inner) as Executor, {
        run(v: readonly NDArray[], lp: number) {
          const r = inner.run(v, lp).map((a) => (a instanceof NDArray ? a.clone() : a));
          const w = r[1] as NDArray;
          if (plant) w.data[7] = w.data[7]! * 1.001 + 1e-3;
          return r;
        },
      });
      let err: unknown;
      try {
        checkedExecutor(target, req, t.name, wrong).run(values, 0);
      } catch (e) {
        err = e;
      }
      expect(err, 'BadKernel').to.be.instanceOf(BadKernel);
      const b = err as BadKernel;
      expect(b.kernel).to.equal('result 1 of the whole function');
      expect(b.difference.flat).to.equal(7);
      plant = false;
    });
  }

  for (const t of compiled) {
    it(`${t.name}: a Scan's gradient checks, its kernels run alone with the items the loop keeps none of`, () => {
      // test/autodiff/control.test.ts' "rnn with a constant and a rank-3 state"
      const build = (x: Node, w: Node, h: Node, c: Node, bias: Node): Node => {
        const [last, outs, states] = K.rnn((xt, st) => {
          const hn = K.tanh(K.add(K.add(K.dot(xt, w), st[0]!), st[2]!));
          const cn = K.add(K.multiply(st[1]!, 0.5), K.expand_dims(hn, 1));
          return [hn, [hn, cn]];
        }, x, [h, c], false, K.constant([[1, 0, 1, 1], [1, 1, 0, 0]]), [bias]);
        return K.add(K.add(K.sum(outs, 1), last), states.reduce((p, s) => K.add(p, K.sum(s, -1, true)), K.zeros_like(last)));
      };
      const vals = [arr([2, 4, 3], (i) => Math.cos(i) / 4), arr([3, 2], (i) => Math.sin(i) / 4), arr([2, 2], (i) => i / 8), arr([2, 2, 2], (i) => Math.sin(i) / 6), arr([2], (i) => i / 10)];
      verify_grad(build, vals, { functionOptions: { ...t.options, mode: 'debug' } });
    });
  }

  it('kernels checked in one program (as on onnx) are still named one by one: a planted wrong kernel on the cpu', () => {
    const x = K.placeholder([2, 3], null, 'float32', false, 'x');
    const y = K.sum(K.exp((tripled(K.sin(K.dot(x, K.ones([3, 3])))) as Tensor).add(1)), 1);
    const req: TargetRequest = {
      inputs: [x],
      targets: [y],
      updates: [],
      nOut: 1,
      optimizer: 'fast_run',
      name: 'planted together',
      fallback: fallbackPolicy('planted', 'error'),
      mode: 'debug',
    };
    const together: Target = { ...cpuTarget, checkKernelsTogether: true };
    const before = compileStats.programs;
    let err: unknown;
    try {
      checkedExecutor(together, req, 'cpu', cpuTarget.executor(req)).run([arr([2, 3], (i) => i / 5)], 0);
    } catch (e) {
      err = e;
    }
    expect(err, 'BadKernel').to.be.instanceOf(BadKernel);
    expect((err as BadKernel).nodes).to.include('planted_wrong_together');
    expect(compileStats.programs - before, 'the function and its kernels together').to.equal(2);
  });

  for (const t of compiled.filter((c) => c.options.backend === 'onnx')) {
    it(`${t.name}: the kernels of a function are checked in one ONNX Runtime session`, () => {
      const x = K.placeholder([null, 4], null, 'float32', false, 'x');
      const h = K.variable(arr([4, 4], (i) => Math.cos(i) / 2), 'float32', 'h');
      const y = K.sum(K.tanh(K.dot(x, h)), 1).mul(2);
      const before = compileStats.programs;
      const f = K.function([x], [y], [], { ...t.options, mode: 'debug' });
      f([arr([3, 4], (i) => i / 7)]);
      // the function's own program and one for its kernels (dot, tanh, sum, mul), not one per kernel
      expect(compileStats.programs - before).to.equal(2);
    });
  }
});
