// f.exportOnnx round trips: the three example models with an unknown batch size exported, loaded
// by ONNX Runtime (which checks types and shapes), checked op by op against the ONNX operator
// list, and run at two batch sizes: the same numbers as the live function.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../../src/index.js';
import { buildModel, type ModelName } from '../../../src/examples/models.js';
import { Rng } from '../../../src/examples/random.js';
import { ortAvailable } from '../../../src/runtime/onnx/session.js';
import { expectClose } from '../../helpers/assert.js';
import { checkOperators, decoded, runOnnx } from '../../helpers/onnx.js';

const missing = ortAvailable();

function input(shape: number[], seed: number): NDArray {
  const n = shape.reduce((a, b) => a * b, 1);
  return new NDArray(Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37 + seed) * 0.5 + 0.5), shape, 'float32');
}

const small: Record<ModelName, (r: Rng) => ReturnType<typeof buildModel>> = {
  mlp: (r) => buildModel('mlp', r),
  cnn: (r) => buildModel('cnn', r),
  lstm: (r) => buildModel('lstm', r),
};

describe('exportOnnx: models with an unknown batch, through ONNX Runtime', () => {
  before(() => {
    if (missing !== undefined) throw new Error(missing);
  });
  for (const name of ['mlp', 'cnn', 'lstm'] as const) {
    it(`${name}: logits and the gradient of the loss, exported once, run at batch 2 and 3`, () => {
      const model = small[name](new Rng(7));
      const x = K.placeholder([null, ...model.exampleShape], null, 'float32', false, 'x');
      const y = K.placeholder([null, 10], null, 'float32', false, 'y');
      const logits = model.logits(x);
      const loss = K.mean(K.categorical_crossentropy(K.softmax(logits), y));
      const grads = K.gradients(loss, [model.params[0]!]);
      const f = K.function([x, y], [logits, loss, grads[0]!]);
      const bytes = f.exportOnnx({ name });
      const m = decoded(bytes);
      // inputs named after the placeholders, the batch dim symbolic; variables as initializers
      expect(m.graph.input.map((i) => i.name)).to.deep.equal(['x', 'y']);
      expect(m.graph.input[0]!.type!.tensorType!.shape!.dim![0]!.dimParam).to.be.a('string').and.not.equal('');
      expect(m.graph.initializer.map((t) => t.name)).to.include(model.params[0]!.name.replace(/[^A-Za-z0-9_.:-]/g, '_'));
      const used = checkOperators(m);
      if (name === 'lstm') expect(used.has('Loop'), 'K.rnn is an ONNX Loop').to.equal(true);
      if (name === 'cnn') expect([...used]).to.include.members(['Conv', 'MaxPool']);
      for (const batch of [2, 3]) {
        const xv = input([batch, ...model.exampleShape], batch);
        const yv = NDArray.from(Array.from({ length: batch }, (_, b) => Array.from({ length: 10 }, (_, k) => (k === b ? 1 : 0))), 'float32');
        const live = f([xv, yv]);
        const got = runOnnx(bytes, { x: xv, y: yv }, ['output_0', 'output_1', 'output_2']);
        got.forEach((g, i) => {
          expect(g.shape, `output ${i} shape at batch ${batch}`).to.deep.equal(live[i]!.shape);
          expectClose(g, live[i]!, { atol: 2e-5, rtol: 1e-4 }, `${name} output ${i} at batch ${batch}`);
        });
      }
    });
  }

  it('updates are exported as extra outputs named <variable>_new; opset 18 writes Reduce axes as inputs', () => {
    const x = K.placeholder([null, 3], null, 'float32', false, 'x');
    const w = K.variable(new NDArray([0.5, -1, 2], [3], 'float32'), 'float32', 'w');
    const loss = K.max(K.square(K.multiply(x, w)));
    const [g] = K.gradients(loss, [w]);
    const f = K.function([x], [loss], [K.update_sub(w, K.multiply(g!, 0.1))]);
    const bytes = f.exportOnnx({ opset: 18 });
    const m = decoded(bytes);
    expect(m.graph.output.map((o) => o.name)).to.deep.equal(['output_0', 'w_new']);
    checkOperators(m);
    const xv = new NDArray([1, 2, 3, -1, 0, 1], [2, 3], 'float32');
    const [l, wNew] = runOnnx(bytes, { x: xv }, ['output_0', 'w_new']);
    const before = K.get_value(w);
    const [live] = f([xv]);
    expectClose(l!, live!, { atol: 1e-6, rtol: 1e-6 }, 'loss');
    expectClose(wNew!, K.get_value(w), { atol: 1e-6, rtol: 1e-6 }, 'updated w');
    expect(Array.from(before.data)).to.not.deep.equal(Array.from(K.get_value(w).data));
  });

  it('an op ONNX cannot express is an error naming it; a bad opset names the allowed ones', () => {
    const yt = K.placeholder([2, 3], null, 'float32', false, 'y_true');
    const yp = K.placeholder([2, 4, 5], null, 'float32', false, 'y_pred');
    const il = K.placeholder([2, 1], null, 'int32', false, 'il');
    const ll = K.placeholder([2, 1], null, 'int32', false, 'll');
    const f = K.function([yt, yp, il, ll], [K.ctc_batch_cost(yt, yp, il, ll)]);
    expect(() => f.exportOnnx()).to.throw(/exportOnnx: op "ctc_\w+" cannot be expressed in ONNX/);
    const x = K.placeholder([2], null, 'float32', false, 'x');
    expect(() => K.function([x], [K.exp(x)]).exportOnnx({ opset: 12 })).to.throw(/opset 12 is not supported \(allowed: 17, 18, 19, 20, 21\)/);
  });

  it('seeded random ops map to ONNX random operators: same seed, same numbers run to run (not theanine\'s Philox numbers)', () => {
    const x = K.placeholder([null, 4], null, 'float32', false, 'x');
    const f = K.function([x], [K.add(x, K.random_normal(K.shape(x), 0, 1, 'float32', 5))]);
    const m = decoded(f.exportOnnx());
    expect(checkOperators(m).has('RandomNormalLike')).to.equal(true);
    const xv = NDArray.zeros([2, 4], 'float32');
    const a = runOnnx(f.exportOnnx(), { x: xv }, ['output_0'])[0]!;
    const b = runOnnx(f.exportOnnx(), { x: xv }, ['output_0'])[0]!;
    expect(Array.from(a.data)).to.deep.equal(Array.from(b.data));
    expect(a.shape).to.deep.equal([2, 4]);
  });
});
