// importOnnx: models exported by theanine and a hand-built model in the style of PyTorch's
// exporter (Gemm, Conv, BatchNormalization, Relu, MaxPool, GlobalAveragePool, Flatten, Softmax,
// Reshape, Transpose, Concat, Gather) give ONNX Runtime's numbers; an imported model trains with
// K.function updates, prints, and exports again.
import { expect } from 'chai';
import { backend as K, NDArray, debugprint, importOnnx } from '../../../src/index.js';
import { buildModel } from '../../../src/examples/models.js';
import { Rng } from '../../../src/examples/random.js';
import { GraphBuilder, ModelState, F, valueInfo } from '../../../src/runtime/onnx/builder.js';
import { encodeModel } from '../../../src/runtime/onnx/schema.js';
import { ortAvailable } from '../../../src/runtime/onnx/session.js';
import { expectClose } from '../../helpers/assert.js';
import { runOnnx } from '../../helpers/onnx.js';

function input(shape: number[], seed: number): NDArray {
  const n = shape.reduce((a, b) => a * b, 1);
  return new NDArray(Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37 + seed) * 0.5 + 0.5), shape, 'float32');
}

describe('importOnnx', () => {
  before(() => {
    const missing = ortAvailable();
    if (missing !== undefined) throw new Error(missing);
  });

  for (const name of ['mlp', 'cnn'] as const) {
    it(`${name} exported by theanine: ORT's numbers; then fine-tuned with K.function updates, printed and exported again`, () => {
      const model = buildModel(name, new Rng(3));
      const x = K.placeholder([null, ...model.exampleShape], null, 'float32', false, 'x');
      const bytes = K.function([x], [model.logits(x)]).exportOnnx();
      const m = importOnnx(bytes);
      expect(m.inputs.map((p) => p.name)).to.deep.equal(['x']);
      expect(K.int_shape(m.inputs[0]!)).to.deep.equal([null, ...model.exampleShape]);
      expect(m.variables.length).to.equal(model.params.length);
      const xv = input([3, ...model.exampleShape], 1);
      const [ort] = runOnnx(bytes, { x: xv }, ['output_0']);
      const f = K.function(m.inputs, m.outputs);
      expectClose(f([xv])[0]!, ort!, { atol: 1e-5, rtol: 1e-4 }, `${name} imported vs ORT`);
      // fine-tuning: crossentropy on fixed targets, plain SGD through K.function updates
      const y = K.placeholder([null, 10], null, 'float32', false, 'y');
      const loss = K.mean(K.categorical_crossentropy(K.softmax(m.outputs[0]!), y));
      const grads = K.gradients(loss, m.variables);
      const step = K.function([m.inputs[0]!, y], [loss], m.variables.map((v, i) => K.update_sub(v, K.multiply(grads[i]!, 0.05))));
      const yv = NDArray.from([[1, 0, 0, 0, 0, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0, 0, 0, 0, 0]], 'float32');
      const first = step([xv, yv])[0]!.item() as number;
      let last = first;
      for (let i = 0; i < 15; i++) last = step([xv, yv])[0]!.item() as number;
      expect(last, 'loss after 16 steps').to.be.lessThan(first * 0.95);
      expect(debugprint(m.outputs[0]!)).to.include(name === 'cnn' ? 'conv' : 'dot');
      // exported again: the fine-tuned weights as initializers, the same numbers as the imported function
      const again = K.function(m.inputs, m.outputs).exportOnnx();
      const [ort2] = runOnnx(again, { x: xv }, ['output_0']);
      expectClose(f([xv])[0]!, ort2!, { atol: 1e-5, rtol: 1e-4 }, `${name} re-exported`);
      expect(Array.from(ort2!.data)).to.not.deep.equal(Array.from(ort!.data));
    });
  }

  it("PyTorch-style operators (Conv with bias and pads, BatchNormalization, Relu, MaxPool, GlobalAveragePool, Flatten, Gemm, Softmax, Reshape, Transpose, Concat, Gather): ORT's numbers", () => {
    const ms = new ModelState(17);
    const b = new GraphBuilder(ms);
    const rnd = (shape: number[], seed: number) => new NDArray(Float32Array.from({ length: shape.reduce((p, q) => p * q, 1) }, (_, i) => Math.cos(i * 1.3 + seed) * 0.4), shape, 'float32');
    b.define('img', { dtype: 'float32', shape: [null, 2, 6, 6] });
    const w = b.constant(rnd([4, 2, 3, 3], 1));
    const bias = b.constant(rnd([4], 2));
    const conv = b.op('Conv', ['img', w, bias], { kernel_shape: [3, 3], pads: [1, 1, 1, 1], strides: [1, 1] }, { dtype: 'float32', shape: [null, 4, 6, 6] });
    const bn = b.op('BatchNormalization', [conv, b.constant(rnd([4], 3)), b.constant(rnd([4], 4)), b.constant(rnd([4], 5)), b.constant(new NDArray([0.5, 1, 1.5, 2], [4], 'float32'))], { epsilon: new F(1e-5) }, { dtype: 'float32', shape: [null, 4, 6, 6] });
    const relu = b.op('Relu', [bn], {}, { dtype: 'float32', shape: [null, 4, 6, 6] });
    const mp = b.op('MaxPool', [relu], { kernel_shape: [2, 2], strides: [2, 2] }, { dtype: 'float32', shape: [null, 4, 3, 3] });
    const gap = b.op('GlobalAveragePool', [mp], {}, { dtype: 'float32', shape: [null, 4, 1, 1] });
    const flat = b.op('Flatten', [gap], { axis: 1 }, { dtype: 'float32', shape: [null, 4] });
    const t = b.op('Transpose', [mp], { perm: [0, 2, 3, 1] }, { dtype: 'float32', shape: [null, 3, 3, 4] });
    const rs = b.op('Reshape', [t, b.i64([0, -1])], {}, { dtype: 'float32', shape: [null, 36] });
    const cat = b.op('Concat', [flat, rs], { axis: 1 }, { dtype: 'float32', shape: [null, 40] });
    const gemm = b.op('Gemm', [cat, b.constant(rnd([5, 40], 6)), b.constant(rnd([5], 7))], { transB: 1, alpha: new F(0.5) }, { dtype: 'float32', shape: [null, 5] });
    const sm = b.op('Softmax', [gemm], { axis: 1 }, { dtype: 'float32', shape: [null, 5] });
    const picked = b.op('Gather', [sm, b.i64([4, 0])], { axis: 1 }, { dtype: 'float32', shape: [null, 2] });
    b.nodes.push({ input: [picked], output: ['probs'], opType: 'Identity' });
    const bytes = encodeModel({
      irVersion: 8, opsetImport: [{ domain: '', version: 17 }], producerName: 'pytorch-like', producerVersion: '0',
      graph: {
        name: 'g', node: b.nodes, initializer: ms.initializers,
        input: [valueInfo('img', { dtype: 'float32', shape: [null, 2, 6, 6] }, () => 'batch')],
        output: [valueInfo('probs', { dtype: 'float32', shape: [null, 2] }, () => 'batch')],
      },
    });
    const m = importOnnx(bytes);
    const xv = input([2, 2, 6, 6], 4);
    const [ort] = runOnnx(bytes, { img: xv }, ['probs']);
    const [got] = K.function(m.inputs, m.outputs)([xv]);
    expectClose(got!, ort!, { atol: 1e-5, rtol: 1e-4 }, 'pytorch-style model');
  });

  const cases = [['LSTM', 'forward', 0, undefined], ['LSTM', 'reverse', 0, undefined], ['GRU', 'forward', 1, undefined], ['GRU', 'reverse', 0, undefined],
    ['LSTM', 'forward', 0, ['Sigmoid', 'Relu', 'Softplus']], ['GRU', 'forward', 0, ['Softplus', 'Relu']]] as const;
  for (const [kind, dir, lbr, acts] of cases) {
    it(`${kind} ${dir}${kind === 'GRU' ? `, linear_before_reset ${lbr}` : ''}${acts === undefined ? '' : `, activations ${acts.join(' ')}`} with an unknown batch: ORT's numbers (Y, Y_h)`, () => {
      const ms = new ModelState(17);
      const b = new GraphBuilder(ms);
      const T = 4, I = 3, H = 5, G = kind === 'LSTM' ? 4 : 3;
      const rnd = (shape: number[], seed: number) => new NDArray(Float32Array.from({ length: shape.reduce((p, q) => p * q, 1) }, (_, i) => Math.cos(i * 0.7 + seed) * 0.5), shape, 'float32');
      b.define('X', { dtype: 'float32', shape: [T, null, I] });
      const outs = b.opN(kind, ['X', b.constant(rnd([1, G * H, I], 1)), b.constant(rnd([1, G * H, H], 2)), b.constant(rnd([1, 2 * G * H], 3))],
        { hidden_size: H, direction: dir, ...(kind === 'GRU' ? { linear_before_reset: lbr } : {}), ...(acts === undefined ? {} : { activations: { strings: acts } }) },
        [{ dtype: 'float32', shape: [T, 1, null, H] }, { dtype: 'float32', shape: [1, null, H] }]);
      b.nodes.push({ input: [outs[0]!], output: ['Y'], opType: 'Identity' }, { input: [outs[1]!], output: ['Y_h'], opType: 'Identity' });
      const bytes = encodeModel({
        irVersion: 8, opsetImport: [{ domain: '', version: 17 }], producerName: 'p', producerVersion: '0',
        graph: {
          name: 'g', node: b.nodes, initializer: ms.initializers,
          input: [valueInfo('X', { dtype: 'float32', shape: [T, null, I] }, () => 'batch')],
          output: [valueInfo('Y', { dtype: 'float32', shape: [T, 1, null, H] }, () => 'batch'), valueInfo('Y_h', { dtype: 'float32', shape: [1, null, H] }, () => 'batch')],
        },
      });
      const m = importOnnx(bytes);
      const xv = input([T, 2, I], 5);
      const ort = runOnnx(bytes, { X: xv }, ['Y', 'Y_h']);
      const got = K.function(m.inputs, m.outputs)([xv]);
      expectClose(got[0]!, ort[0]!, { atol: 1e-5, rtol: 1e-4 }, `${kind} Y`);
      expectClose(got[1]!, ort[1]!, { atol: 1e-5, rtol: 1e-4 }, `${kind} Y_h`);
    });
  }

  it('an RNN activation without a translation is an error naming it and the supported ones', () => {
    const ms = new ModelState(17);
    const b = new GraphBuilder(ms);
    b.define('X', { dtype: 'float32', shape: [2, 1, 3] });
    const w = (shape: number[]) => b.constant(NDArray.zeros(shape, 'float32'));
    b.opN('GRU', ['X', w([1, 6, 3]), w([1, 6, 2])], { hidden_size: 2, activations: { strings: ['Sigmoid', 'HardSigmoid'] } }, [{ dtype: 'float32', shape: [2, 1, 1, 2] }]);
    const bytes = encodeModel({
      irVersion: 8, opsetImport: [{ domain: '', version: 17 }], producerName: 'p', producerVersion: '0',
      graph: { name: 'g', node: b.nodes, initializer: ms.initializers, input: [valueInfo('X', { dtype: 'float32', shape: [2, 1, 3] }, () => '')], output: [] },
    });
    expect(() => importOnnx(bytes)).to.throw(/importOnnx: GRU activation HardSigmoid has no translation yet; supported: Relu, Sigmoid, Softplus, Tanh/);
  });

  it('an operator without a translation is an error naming it', () => {
    const ms = new ModelState(17);
    const b = new GraphBuilder(ms);
    b.define('x', { dtype: 'float32', shape: [2, 3] });
    b.op('Hardmax', ['x'], {}, { dtype: 'float32', shape: [2, 3] });
    const bytes = encodeModel({
      irVersion: 8, opsetImport: [{ domain: '', version: 17 }], producerName: 'p', producerVersion: '0',
      graph: { name: 'g', node: b.nodes, initializer: [], input: [valueInfo('x', { dtype: 'float32', shape: [2, 3] }, () => '')], output: [] },
    });
    expect(() => importOnnx(bytes)).to.throw(/importOnnx: operator Hardmax .* is not supported; supported: .*Gemm/);
    expect(() => importOnnx(new Uint8Array([1, 2, 3]))).to.throw(/importOnnx: the bytes are not an ONNX model/);
  });
});
