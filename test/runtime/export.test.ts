// Ahead-of-time export: compiled functions as standalone TypeScript modules. Each
// module is type-checked by `tsc --strict --noEmit`, run from an empty folder (no theanine to
// import), and compared with the live function.
import { expect } from 'chai';
import { backend as K, NDArray, defineOp, ValueError } from '../../src/index.js';
import type { Tensor } from '../../src/index.js';
import { ExportError } from '../../src/runtime/export/module.js';
import { setEnvironment } from '../../src/api/config.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';
import { expectClose } from '../helpers/assert.js';
import { emptyFolder, runCalls, typecheck, writeModules } from '../helpers/exported.js';

let seed = 7;
const rnd = () => { seed = (seed * 16807) % 2147483647; return seed / 2147483647 - 0.5; };
const arr = (shape: number[], dtype: 'float32' | 'float64' = 'float32') =>
  NDArray.from(new NDArray(Float64Array.from({ length: shape.reduce((p, d) => p * d, 1) }, rnd), shape, 'float64'), dtype);

function mlp() {
  const x = K.placeholder([null, 6], null, 'float32', false, 'x');
  const W1 = K.variable(arr([6, 8]), 'float32', 'W1');
  const b1 = K.variable(arr([8]), 'float32', 'b1');
  const W2 = K.variable(arr([8, 3]), 'float32', 'W2');
  const b2 = K.variable(arr([3]), 'float32', 'b2');
  const probs = K.softmax(K.dot(K.relu(K.dot(x, W1).add(b1)), W2).add(b2));
  return { x, probs };
}

// An LSTM over 12 steps: more than the scan pass unrolls, so the module has the Scan as a loop.
const LB = 3, LT = 12, LI = 4, LU = 5;
function lstm() {
  const x = K.placeholder([LB, LT, LI], null, 'float32', false, 'x');
  const Wx = K.variable(arr([LI, 4 * LU]), 'float32', 'Wx');
  const Wh = K.variable(arr([LU, 4 * LU]), 'float32', 'Wh');
  const b = K.variable(arr([4 * LU]), 'float32', 'b');
  const gate = (z: Tensor, k: number) => K.slice(z, [0, k * LU], [-1, LU]);
  const step = (xt: Tensor, states: Tensor[]): [Tensor, Tensor[]] => {
    const [h, c] = states as [Tensor, Tensor];
    const z = K.dot(xt, Wx).add(K.dot(h, Wh)).add(b);
    const c2 = K.sigmoid(gate(z, 1)).mul(c).add(K.sigmoid(gate(z, 0)).mul(K.tanh(gate(z, 2))));
    const h2 = K.sigmoid(gate(z, 3)).mul(K.tanh(c2));
    return [h2, [h2, c2]];
  };
  const h0 = K.zeros([LB, LU]);
  const [last, outputs] = K.rnn(step, x, [h0, h0]);
  return { x, last, outputs };
}

const sig = (v: number) => 1 / (1 + Math.exp(-v));
const swishT = defineOp<{ beta: number }>({
  name: 'swish_export_test', arity: 1, cpu: 'x0 / (1 + Math.exp(-beta * x0))',
  infer: ([x]) => ({ dtype: x!.dtype, shape: x!.shape }),
  reference: ([x], { beta }) => new NDArray(Array.from(x!.data, (v) => v * sig(beta * v)), x!.shape, x!.dtype),
});

describe('exportModule', function () {
  this.timeout(120000);

  it('exports an MLP and an LSTM (Scan as a loop) that type-check under tsc --strict, run without theanine and match the live functions', () => {
    const a = mlp();
    const fm = K.function([a.x], [a.probs]);
    const xm = arr([5, 6]);
    const liveM = fm([xm]);
    const mm = fm.exportModule({ name: 'mlp' }); // batch 5: the shape of the latest call
    expect(mm.source).to.match(/@param x - input 0 \(x\): float32, shape \(5, 6\)/);
    expect(mm.source).to.match(/@returns \[0\] float32, shape \(5, 3\)/);
    expect(mm.source).to.match(/export function mlp\(x: Float32Array\): \[Float32Array\]/);
    expect(mm.source, 'x packed row by row (contiguous along the summed axis)').to.match(/packRows\(/);
    // The weights are never updated by the module: each product packs them at its first call only.
    expect(mm.source.match(/if \(_mm\dbpacked\[0\]!? === 0\)/g), 'W1 and W2 packed once').to.have.length(2);
    const xm2 = arr([5, 6]);
    const liveM2 = fm([xm2]);

    const l = lstm();
    const fl = K.function([l.x], [l.last, l.outputs]);
    const xl = arr([LB, LT, LI]);
    const liveL = fl([xl]);
    const ml = fl.exportModule({ name: 'lstm' });
    expect(ml.source).to.match(/for \(let k = 0; k < 12; k\+\+\)/); // one loop, not 12 copies of the step
    expect(ml.source).to.match(/function _s0\(/);

    for (const m of [mm, ml]) {
      expect(m.source).to.not.match(/from ['"](theanine|\.\.?\/)|require\(/);
      expect(m.source).to.not.match(/^import /m);
      expect(m.binary).to.equal(undefined);
    }
    const dir = emptyFolder();
    writeModules(dir, [mm, ml]);
    typecheck(dir, [mm, ml]);
    const [outM, outL, outM2] = runCalls(dir, [{ module: 'mlp', inputs: [xm] }, { module: 'lstm', inputs: [xl] }, { module: 'mlp', inputs: [xm2] }]);
    expectClose(outM![0]!, Array.from(liveM[0]!.data), { atol: 1e-6, rtol: 0 });
    expectClose(outM2![0]!, Array.from(liveM2[0]!.data), { atol: 1e-6, rtol: 0 }, 'a second call, from the kept packs');
    expectClose(outL![0]!, Array.from(liveL[0]!.data), { atol: 1e-6, rtol: 0 });
    expectClose(outL![1]!, Array.from(liveL[1]!.data), { atol: 1e-6, rtol: 0 });
  });

  it('writes the data beside the module as a .bin file above the threshold', () => {
    const a = mlp();
    const f = K.function([a.x], [a.probs]);
    const x = arr([2, 6]);
    const live = f([x])[0]!;
    const m = f.exportModule({ name: 'mlpBin', binThreshold: 64, shapes: [[2, 6]] });
    expect(m.binary!.fileName).to.equal('mlpBin.bin');
    expect(m.binary!.bytes.byteLength).to.be.at.least((6 * 8 + 8 * 3) * 4);
    expect(m.source).to.match(/import \{ readFileSync \} from "node:fs";/);
    expect(m.source).to.match(/new URL\("\.\/mlpBin\.bin", import\.meta\.url\)/);
    expect(m.source).to.not.match(/_b64\(/);
    const dir = emptyFolder();
    writeModules(dir, [m]);
    typecheck(dir, [m], true);
    const [out] = runCalls(dir, [{ module: 'mlpBin', inputs: [x] }]);
    expectClose(out![0]!, Array.from(live.data), { atol: 1e-6, rtol: 0 });
  });

  it('keeps variable updates, the learning phase, every runtime helper and user-op templates working', () => {
    // A training step: the module updates its own copy of the weights, call after call.
    const x = K.placeholder([4, 3], null, 'float64', false, 'x');
    const y = K.placeholder([4, 1], null, 'float64', false, 'y');
    const W = K.variable(arr([3, 1], 'float64'), 'float64', 'W');
    const loss = K.mean(K.square(K.dot(x, W).sub(y)));
    const [g] = K.gradients(loss, [W]);
    const train = K.function([x, y], [loss], [K.update(W, W.sub(g!.mul(0.1)))]);
    const mTrain = train.exportModule({ name: 'train' });
    expect(mTrain.source, 'W, which the module updates, is packed at every call').to.not.match(/packed\[0\]!? === 0/);
    const xv = arr([4, 3], 'float64');
    const yv = arr([4, 1], 'float64');
    const liveLoss = [0, 1, 2].map(() => Number(train([xv, yv])[0]!.item()));
    expect(liveLoss[2]!).to.be.lessThan(liveLoss[0]!);

    // The learning phase as an optional last parameter.
    const p = K.placeholder([3], null, 'float32', false, 'p');
    const phased = K.function([p], [K.in_train_phase(p.mul(2), p.mul(3))]);
    const mPhase = phased.exportModule({ name: 'phased' });
    expect(mPhase.source).to.match(/export function phased\(p: Float32Array, learningPhase: number = 0\)/);

    // Every runtime helper: float16 rounding, int64, bool, Python modulo, round half to even, sign; a user op's template.
    const h = K.placeholder([6], null, 'float32', false, 'h');
    const helpers = K.function([h], [
      K.cast(h.mul(3), 'float16'), K.cast(h.mul(7), 'int64').add(1), K.cast(h, 'bool'), K.mod(h.mul(10), 3), K.round(h.mul(4)), K.sign(h),
      K.cast(K.cast(h.mul(100), 'int32'), 'int8'), swishT(h, { attrs: { beta: 1.5 } }), K.softplus(h), K.sigmoid(h),
    ]);
    const hv = new NDArray(new Float32Array([-1.25, -0.5, 0, 0.375, 0.625, 2.5]), [6]);
    const liveH = helpers([hv]);
    const mHelpers = helpers.exportModule({ name: 'helpers' });
    expect(mHelpers.source).to.match(/return \(x0 \/ \(1 \+ Math\.exp\(-beta \* x0\)\)\)/);

    const dir = emptyFolder();
    const mods = [mTrain, mPhase, mHelpers];
    writeModules(dir, mods);
    typecheck(dir, mods);
    const out = runCalls(dir, [
      { module: 'train', inputs: [xv, yv] }, { module: 'train', inputs: [xv, yv] }, { module: 'train', inputs: [xv, yv] },
      { module: 'phased', inputs: [new NDArray(new Float32Array([1, 2, 3]), [3])] },
      { module: 'phased', inputs: [new NDArray(new Float32Array([1, 2, 3]), [3])], learningPhase: 1 },
      { module: 'helpers', inputs: [hv] },
    ]);
    expectClose(out.slice(0, 3).map((o) => o[0]![0]!), liveLoss, { atol: 1e-12, rtol: 1e-12 });
    expect(out[3]![0]).to.deep.equal([3, 6, 9]);
    expect(out[4]![0]).to.deep.equal([2, 4, 6]);
    liveH.forEach((r, k) => expectClose(out[5]![k]!, Array.from(r.data, Number), { atol: 0, rtol: 0 }, `helpers output ${k}`));
  });

  it('exports convolutions and pooling, and a backwards, masked RNN', () => {
    const img = K.placeholder([2, 8, 8, 1], null, 'float32', false, 'img');
    const k = K.variable(arr([3, 3, 1, 4]), 'float32', 'k');
    const W = K.variable(arr([64, 3]), 'float32', 'W');
    const h = K.pool2d(K.relu(K.conv2d(img, k, { padding: 'same' })), [2, 2], [2, 2]);
    const cnn = K.function([img], [K.softmax(K.dot(K.batch_flatten(h), W))]);
    const iv = arr([2, 8, 8, 1]);
    const liveC = cnn([iv]);

    const s = K.placeholder([3, 10, 2], null, 'float32', false, 's');
    const mask = K.placeholder([3, 10], null, 'float32', false, 'mask');
    const U = K.variable(arr([2, 4]), 'float32', 'U');
    const V = K.variable(arr([4, 4]), 'float32', 'V');
    const step = (xt: Tensor, st: Tensor[]): [Tensor, Tensor[]] => {
      const h2 = K.tanh(K.dot(xt, U).add(K.dot(st[0]!, V)));
      return [h2, [h2]];
    };
    const [last, outs, states] = K.rnn(step, s, [K.zeros([3, 4])], { go_backwards: true, mask });
    const rnn = K.function([s, mask], [last, outs, states[0]!]);
    const sv = arr([3, 10, 2]);
    const mv = new NDArray(Float32Array.from({ length: 30 }, (_, i) => (i % 7 === 3 ? 0 : 1)), [3, 10]);
    const liveR = rnn([sv, mv]);

    const mods = [cnn.exportModule({ name: 'cnn' }), rnn.exportModule({ name: 'brnn' })];
    expect(mods[1]!.source).to.match(/const t = 9 - k;/); // walks the steps backwards
    const dir = emptyFolder();
    writeModules(dir, mods);
    typecheck(dir, mods);
    const [c, r] = runCalls(dir, [{ module: 'cnn', inputs: [iv] }, { module: 'brnn', inputs: [sv, mv] }]);
    expectClose(c![0]!, Array.from(liveC[0]!.data), { atol: 1e-6, rtol: 0 });
    liveR.forEach((o, i) => expectClose(r![i]!, Array.from(o.data), { atol: 1e-6, rtol: 0 }, `rnn output ${i}`));
  });

  it('exports an RNN training step: the reverse Scan updates its gradient accumulators in place and reads the stacked states', () => {
    const x = K.placeholder([4, 12, 5], null, 'float32', false, 'x');
    const W = K.variable(arr([5, 7]), 'float32', 'W');
    const U = K.variable(arr([7, 7]), 'float32', 'U');
    const [last] = K.rnn((xt, [h]) => { const hn = K.tanh(K.dot(xt, W).add(K.dot(h!, U))); return [hn, [hn]]; }, x, [K.zeros([4, 7])]);
    const loss = K.mean(K.square(last));
    const gs = K.gradients(loss, [W, U]);
    const train = K.function([x], [loss, ...gs], [W, U].map((v, i) => K.update(v, v.sub(gs[i]!.mul(0.5)))));
    const m = train.exportModule({ name: 'rnnTrain' });
    // One Scan body's call passes a state as its own next state (an accumulator updated in place).
    expect(m.source).to.match(/_s\d+\([^;]*\b(c\d+_\d+)\b[^;]*, \1[,)]/);
    const xv = arr([4, 12, 5]);
    const live = [train([xv]), train([xv])];
    const dir = emptyFolder();
    writeModules(dir, [m]);
    typecheck(dir, [m]);
    const out = runCalls(dir, [{ module: 'rnnTrain', inputs: [xv] }, { module: 'rnnTrain', inputs: [xv] }]);
    live.forEach((call, c) => call.forEach((o, i) => expectClose(out[c]![i]!, Array.from(o.data), { atol: 1e-6, rtol: 1e-5 }, `call ${c} output ${i}`)));
    expect(out[1]![0]).to.not.deep.equal(out[0]![0]); // the module's own weights were updated
  });

  it('exports matrix products summed in float32 (matmul precision "float32"): packs and tile sums are Float32Arrays', () => {
    setEnvironment({ THEANINE_MATMUL_PRECISION: 'float32' });
    clearCompileCache();
    try {
      const x = K.placeholder([8, 12], null, 'float32', false, 'x');
      const W = K.variable(arr([12, 6]), 'float32', 'W');
      const f = K.function([x], [K.relu(K.dot(x, W))]);
      const xv = arr([8, 12]);
      const live = f([xv]);
      const m = f.exportModule({ name: 'dense32' });
      expect(m.source).to.match(/function _k\d+\(acc: Float32Array/);
      const dir = emptyFolder();
      writeModules(dir, [m]);
      typecheck(dir, [m]);
      const [out] = runCalls(dir, [{ module: 'dense32', inputs: [xv] }]);
      // float32 sums in the same order; a runtime with relaxed SIMD may fuse the compiled function's multiply-adds
      expectClose(out![0]!, Array.from(live[0]!.data), { atol: 1e-6, rtol: 1e-6 });
    } finally {
      setEnvironment({ THEANINE_MATMUL_PRECISION: undefined });
      clearCompileCache();
    }
  });

  it('refuses what a module cannot hold, naming it, and checks its options', () => {
    const x = K.placeholder([2], null, 'float32', false, 'x');
    const plain = defineOp({ name: 'no_template_export_test', arity: 1, infer: ([t]) => ({ dtype: t!.dtype, shape: t!.shape }), reference: ([t]) => t! });
    const withExtern = K.function([x], [plain(x).mul(2)]);
    expect(() => withExtern.exportModule({ name: 'm' })).to.throw(ExportError, /exportModule\(m\): op "no_template_export_test" has no code template: .*reference implementation.*Give the user op "no_template_export_test" a cpu template/);
    // Built-in ops that still run on the host, saying why: ctc_decode's searches (greedy and beam)...
    const yp = K.placeholder([1, 4, 3], null, 'float32', false, 'yp');
    const decode = K.function([yp], [K.ctc_decode(yp, K.constant([4], 'int32'), false)[1]]); // the scores: the labels' width is data-dependent (ctc_trim)
    expect(() => decode.exportModule({ name: 'm' })).to.throw(ExportError, /op "ctc_decode" has no code template: .*The built-in op "ctc_decode" has no kernel \(beam search \(greedy: false\) is a search on the host, as TensorFlow runs its CTC decoders on the CPU: .*\): export a function without it/);
    // ...and ops whose result sizes depend on input values
    const lab = K.placeholder([2, 3], null, 'int32', false, 'lab');
    const sparse = K.function([lab], [K.ctc_label_dense_to_sparse(lab, K.constant([2, 3], 'int32')).indices]);
    expect(() => sparse.exportModule({ name: 'm' })).to.throw(ExportError, /^exportModule\(m\): ctc_label_dense_to_sparse: shape \(None, 2\) is not known from the input shapes.*; an exported module is compiled for fixed input shapes, so every size must follow from them: export a function without ctc_label_dense_to_sparse/);
    const y = K.placeholder([3], null, 'int32', false, 'y');
    const skips = K.function([y], [K.ctc_create_skip_idxs(K.ctc_interleave_blanks(y))]);
    expect(() => skips.exportModule({ name: 'm' })).to.throw(ExportError, /^exportModule\(m\): ctc_create_skip_idxs: shape \(None,\) is not known from the input shapes \(it depends on the values of placeholder y, not only on shapes\)/);
    // A template that reads a global the module would not have: it runs live, but its module would not type-check.
    const leaky = defineOp({ name: 'leaky_export_test', arity: 1, cpu: 'x0 * process.pid', infer: ([t]) => ({ dtype: t!.dtype, shape: t!.shape }), reference: ([t]) => t! });
    const fl = K.function([x], [leaky(x)]);
    expect(fl([[1, 2]])[0]!.toArray()).to.deep.equal([process.pid, 2 * process.pid].map(Math.fround));
    expect(() => fl.exportModule({ name: 'leaky' })).to.throw(/does not type-check, so it was not written[\s\S]*Cannot find name 'process'/);

    const f = K.function([x], [x.mul(2)]);
    expect(() => f.exportModule({ name: 'class' })).to.throw(ValueError, /^exportModule: option name "class" is a reserved word or a built-in name; pick another name \(for example "classFn"\)/);
    expect(() => f.exportModule({ name: '_hidden' })).to.throw(ValueError, /name "_hidden" is a name the generated module uses itself \(names starting with '_'.*"hiddenFn"/);
    expect(() => f.exportModule({ name: 'tile4x4' })).to.throw(ValueError, /name "tile4x4" is a name the generated module uses itself \(.*the runtime helpers .*tile4x4/);
    // globals and imports the module uses were "does not type-check ... a bug in theanine"
    for (const g of ['Float32Array', 'RangeError', 'readFileSync']) {
      expect(() => f.exportModule({ name: g }), g).to.throw(ValueError, new RegExp(`^exportModule: option name "${g}" (would shadow the global|is a name the generated module uses itself).*pick another name \\(for example "${g}Fn"\\)`));
    }
    expect(() => f.exportModule({ name: '1x' })).to.throw(ValueError, /name "1x" is not a JavaScript identifier/);
    expect(() => f.exportModule({ name: 3 as unknown as string })).to.throw(TypeError, /option name must be a string .*got number 3/);
    expect(() => f.exportModule({ name: 'm', binFile: '../x.bin' })).to.throw(ValueError, /binFile must be a plain file name/);
    expect(() => f.exportModule({ name: 'm', shapes: [[3]] })).to.throw(ValueError, /shapes\[0\] = \[3\] does not fit input 0 \("x"\) of shape \(2,\)/);
    expect(() => K.function([x], [x.mul(2)], [], { optimizer: 'none' }).exportModule({ name: 'm' })).to.throw(ValueError, /optimizer "none"/);
    const open = K.placeholder([null, 2], null, 'float32', false, 'open');
    expect(() => K.function([open], [open.mul(2)]).exportModule({ name: 'm' })).to.throw(ValueError, /input 0 \("open"\) has shape \(None, 2\) with unknown dims; give the shapes/);
    expect(K.function([open], [open.mul(2)]).exportModule({ name: 'm', shapes: [[3, 2]] }).source).to.match(/shape \(3, 2\)/);
  });
});
