// Compiled means compiled: the graphs Keras users write that used to run the reference
// interpreter, whole or for some ops, compile with no fallback and no extern step on the cpu
// and on the gpu device, and export. Each graph's values are checked against the reference
// interpreter (float64: within 1e-9 on the cpu; float32: within 1e-4 on the gpu), and its
// gradients against central finite differences of the compiled loss (float64, step 1e-6).
// The graphs: an LSTM with batch and time unknown and masked (one Scan, initial state from the
// input's shape); Embedding and its gradient; random ops and dropout with shapes from K.shape;
// cumsum / cumprod; max and average pooling's gradients; depthwise convolution; TimeDistributed's
// reshape K.reshape(y, [-1, K.shape(x)[1], units]); Conv2DTranspose with output_shape from K.shape;
// CTC loss (K.ctc_batch_cost, batch unknown) and its gradient.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import type { Tensor } from '../../src/index.js';
import { loadGpuJs } from '../../src/runtime/gpu/gpujs.js';
import { expectClose } from '../helpers/assert.js';
import { needs } from '../helpers/needs.js';

type Float = 'float32' | 'float64';
const size = (s: readonly number[]) => s.reduce((p, d) => p * d, 1);
const wave = (shape: number[], seed: number, dtype: Float, scale = 1) => {
  const data = Array.from({ length: size(shape) }, (_, i) => Math.sin(i * 0.73 + seed) * scale);
  return new NDArray(dtype === 'float64' ? Float64Array.from(data) : Float32Array.from(data), shape, dtype);
};

interface Built {
  readonly inputs: Tensor[];
  readonly feed: NDArray[];
  /** Values checked against the reference (gradients included). */
  readonly outputs: Tensor[];
  /** A scalar loss and the float inputs whose gradients (outputs[gradAt + k]) are checked by finite differences. */
  readonly loss?: { readonly value: Tensor; readonly wrt: readonly number[]; readonly gradAt: number };
}

interface Graph { readonly name: string; build(dt: Float): Built }

const ph = (shape: (number | null)[], dt: Float | 'bool' | 'int32', name: string) => K.placeholder(shape, null, dt, false, name);

/** outputs, then d loss / d inputs[wrt]. */
function withGrads(inputs: Tensor[], feed: NDArray[], outputs: Tensor[], loss: Tensor, wrt: number[]): Built {
  const grads = K.gradients(loss, wrt.map((k) => inputs[k]!));
  return { inputs, feed, outputs: [...outputs, loss, ...grads], loss: { value: loss, wrt, gradAt: outputs.length + 1 } };
}

const graphs: Graph[] = [
  {
    name: 'LSTM, batch and time unknown, masked (one Scan, K.rnn as Keras calls it)',
    build(dt) {
      const [F, u] = [3, 4];
      const x = ph([null, null, F], dt, 'x');
      const mask = ph([null, null], 'bool', 'mask');
      const W = ph([F, 4 * u], dt, 'W');
      const U = ph([u, 4 * u], dt, 'U');
      const bias = ph([4 * u], dt, 'b');
      // Gate k's columns of z, as a product with a constant selection matrix.
      const sel = (k: number) => K.constant(Array.from({ length: 4 * u }, (_, r) => Array.from({ length: u }, (_, c) => (r === k * u + c ? 1 : 0))), dt);
      const h0 = K.tile(K.expand_dims(K.sum(K.zeros_like(x), [1, 2]), 1), [1, u]);
      const step = (xt: Tensor, [h, c]: Tensor[]): [Tensor, Tensor[]] => {
        const z = K.bias_add(K.dot(xt, W).add(K.dot(h!, U)), bias);
        const [i, f, g, o] = [0, 1, 2, 3].map((k) => K.dot(z, sel(k)));
        const c2 = K.sigmoid(f!).mul(c!).add(K.sigmoid(i!).mul(K.tanh(g!)));
        const h2 = K.sigmoid(o!).mul(K.tanh(c2));
        return [h2, [h2, c2]];
      };
      const [last, seq] = K.rnn(step as never, x, [h0, h0], false, mask);
      const loss = K.sum(K.square(seq)).add(K.sum(last));
      const maskV = new NDArray(Uint8Array.from([1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0]), [3, 5], 'bool');
      return withGrads([x, mask, W, U, bias], [wave([3, 5, F], 1, dt), maskV, wave([F, 4 * u], 2, dt, 0.5), wave([u, 4 * u], 3, dt, 0.5), wave([4 * u], 4, dt, 0.1)], [last, seq], loss, [0, 2, 3, 4]);
    },
  },
  {
    name: 'Embedding and its gradient (gather, scatter_add_rows)',
    build(dt) {
      const E = ph([6, 3], dt, 'E');
      const ids = ph([null, 4], 'int32', 'ids');
      const y = K.gather(E, ids);
      const loss = K.sum(K.square(y).mul(K.constant([1, -2, 0.5], dt)));
      return withGrads([E, ids], [wave([6, 3], 5, dt), new NDArray(Int32Array.from([0, 5, 2, 2, -1, 3, 0, 4]), [2, 4], 'int32')], [y], loss, [0]);
    },
  },
  {
    name: 'random ops and dropout with shapes from K.shape (seeded)',
    build(dt) {
      const x = ph([null, 5], dt, 'x');
      const n = K.random_normal(K.shape(x), 0, 1, dt, 3);
      const u = K.random_uniform([K.shape(x).get(0), 2], -1, 1, dt, 4);
      const bi = K.random_binomial(K.shape(x), 0.3, dt, 5);
      const d = K.dropout(x, 0.4, [K.shape(x).get(0), 1], 6);
      const loss = K.sum(K.square(d).mul(n));
      return withGrads([x], [wave([3, 5], 6, dt)], [n, u, bi, d], loss, [0]);
    },
  },
  {
    name: 'cumsum and cumprod',
    build(dt) {
      const x = ph([null, 4], dt, 'x');
      const cs = K.cumsum(x, 1);
      const cp = K.cumprod(x.mul(0.5).add(1), 0);
      const loss = K.sum(K.square(cs)).add(K.sum(cp));
      return withGrads([x], [wave([3, 4], 7, dt)], [cs, cp], loss, [0]);
    },
  },
  {
    name: 'max and average pooling gradients',
    build(dt) {
      const x = ph([null, 5, 6, 2], dt, 'x');
      const mp = K.pool2d(x, [3, 3], [2, 2], 'same');
      const ap = K.pool2d(x, [2, 3], [1, 2], 'valid', null, 'avg');
      const loss = K.sum(K.square(mp)).add(K.sum(K.sin(ap)));
      return withGrads([x], [wave([2, 5, 6, 2], 8, dt)], [mp, ap], loss, [0]);
    },
  },
  {
    name: 'depthwise convolution and its gradients',
    build(dt) {
      const x = ph([null, 5, 5, 3], dt, 'x');
      const k = ph([3, 3, 3, 2], dt, 'k');
      const y = K.depthwise_conv2d(x, k, [2, 2], 'same');
      const loss = K.sum(K.square(y));
      return withGrads([x, k], [wave([2, 5, 5, 3], 9, dt), wave([3, 3, 3, 2], 10, dt)], [y], loss, [0, 1]);
    },
  },
  {
    name: "TimeDistributed's reshape K.reshape(y, [-1, K.shape(x)[1], units])",
    build(dt) {
      const x = ph([null, null, 4], dt, 'x');
      const W = ph([4, 3], dt, 'W');
      const y = K.reshape(K.dot(K.reshape(x, [-1, 4]), W), [-1, K.shape(x).get(1), 3]);
      const loss = K.sum(K.square(K.tanh(y)));
      return withGrads([x, W], [wave([2, 5, 4], 11, dt), wave([4, 3], 12, dt)], [y], loss, [0, 1]);
    },
  },
  {
    name: 'Conv2DTranspose with output_shape from K.shape',
    build(dt) {
      const x = ph([null, 3, 3, 2], dt, 'x');
      const k = ph([3, 3, 1, 2], dt, 'k');
      const y = K.conv2d_transpose(x, k, [K.shape(x).get(0), 6, 6, 1], [2, 2], 'same');
      const loss = K.sum(K.square(y));
      return withGrads([x, k], [wave([2, 3, 3, 2], 13, dt), wave([3, 3, 1, 2], 14, dt)], [y], loss, [0, 1]);
    },
  },
  {
    name: 'CTC loss and its gradient (K.ctc_batch_cost, batch unknown)',
    build(dt) {
      const [T, C, L] = [6, 4, 3];
      const yp = ph([null, T, C], dt, 'y_pred');
      const yt = ph([null, L], 'int32', 'y_true');
      const il = ph([null, 1], 'int32', 'input_length');
      const ll = ph([null, 1], 'int32', 'label_length');
      const loss = K.sum(K.ctc_batch_cost(yt, K.softmax(yp), il, ll));
      const labels = new NDArray(Int32Array.from([0, 1, 1, 2, 0, -1, 1, -1, -1]), [3, L], 'int32');
      const ints = (xs: number[]) => new NDArray(Int32Array.from(xs), [3, 1], 'int32');
      return withGrads([yp, yt, il, ll], [wave([3, T, C], 15, dt), labels, ints([6, 5, 4]), ints([3, 2, 1])], [], loss, [0]);
    },
  },
];

const NO_FALLBACK = { fallback: 'error' } as const;

describe('compiled means compiled: Keras graphs with no fallback and no extern step', () => {
  for (const g of graphs) {
    describe(g.name, () => {
      it('cpu (fast_run and fast_compile): no extern step, the reference interpreter\'s values within 1e-9', () => {
        const b = g.build('float64');
        const want = K.function(b.inputs, b.outputs, [], { optimizer: 'none' })(b.feed);
        for (const optimizer of ['fast_run', 'fast_compile'] as const) {
          const f = K.function(b.inputs, b.outputs, [], { ...NO_FALLBACK, optimizer, device: 'cpu' });
          const got = f(b.feed);
          expect(f.source(), optimizer).not.to.match(/extern|not compiled|reference interpreter/);
          got.forEach((v, k) => expectClose(v, want[k]!, { atol: 1e-9, rtol: 1e-9 }, `${optimizer} output ${k}`));
        }
      });

      it('gradients match central finite differences of the compiled loss (float64)', () => {
        const b = g.build('float64');
        const l = b.loss!;
        const f = K.function(b.inputs, b.outputs, [], { ...NO_FALLBACK, device: 'cpu' });
        const lossF = K.function(b.inputs, [l.value], [], { ...NO_FALLBACK, device: 'cpu' });
        const grads = f(b.feed).slice(l.gradAt);
        const h = 1e-6;
        l.wrt.forEach((input, j) => {
          const base = b.feed[input]!;
          const n = base.size;
          // up to 8 elements spread over the input
          for (const e of [...new Set(Array.from({ length: Math.min(8, n) }, (_, q) => Math.floor((q * n) / Math.min(8, n))))]) {
            const at = (d: number) => {
              const data = Float64Array.from(base.data as Float64Array);
              data[e] = data[e]! + d;
              const feed = b.feed.map((v, k) => (k === input ? new NDArray(data, base.shape, 'float64') : v));
              return Number(lossF(feed)[0]!.data[0]);
            };
            const fd = (at(h) - at(-h)) / (2 * h);
            const got = Number(grads[j]!.data[e]);
            expect(Math.abs(got - fd), `d loss / d input ${input}[${e}]: ${got} against ${fd}`).to.be.at.most(1e-5 + 1e-4 * Math.abs(fd));
          }
        });
      });

      it('gpu device: no extern step, the reference interpreter\'s values within float32 tolerances', function () {
        const loaded = loadGpuJs();
        needs(this, 'the gpu device (test/runtime/compiled.test.ts)', loaded instanceof Error ? loaded.message : undefined);
        const b = g.build('float32');
        const want = K.function(b.inputs, b.outputs, [], { optimizer: 'none' })(b.feed);
        const f = K.function(b.inputs, b.outputs, [], { ...NO_FALLBACK, device: 'gpu' });
        const got = f(b.feed);
        expect(f.source()).not.to.match(/extern|not compiled|reference interpreter/);
        got.forEach((v, k) => expectClose(v, want[k]!, { atol: 1e-4, rtol: 1e-4 }, `gpu output ${k}`));
      });

      it('exportModule accepts it', function () {
        this.timeout(120000);
        const b = g.build('float32');
        const f = K.function(b.inputs, b.outputs, [], NO_FALLBACK);
        const m = f.exportModule({ name: 'graph', shapes: b.feed.map((v) => [...v.shape]) });
        expect(m.source).to.match(/export function graph\(/);
        expect(m.source).not.to.match(/extern/);
      });
    });
  }
});

/** console.log's lines while `f` runs (print_tensor's default hook writes there). */
function captured(f: () => void): string[] {
  const lines: string[] = [];
  const orig = console.log;
  console.log = (m: string) => { lines.push(String(m)); };
  try { f(); } finally { console.log = orig; }
  return lines;
}

describe('print_tensor: a host callback in compiled code, not an extern step', () => {
  const graph = () => {
    const x = ph([null, 3], 'float32', 'x');
    const y = K.print_tensor(K.tanh(x), 'tanh: ');
    const z = K.print_tensor(K.greater(y, 0), 'positive: ');
    return { x, outs: [K.sum(y.mul(2)), K.cast(z, 'float32')], feed: [wave([2, 3], 16, 'float32')] };
  };

  it('cpu and gpu print what the reference interpreter prints, with no extern step; export prints to the console', function () {
    const g = graph();
    let want: NDArray[] = [];
    const wantLines = captured(() => { want = K.function([g.x], g.outs, [], { optimizer: 'none' })(g.feed); });
    expect(wantLines).to.have.length(2);
    expect(wantLines[1]).to.match(/^positive: {2}\[\[(True|False), /); // tf.print(message, x): a space after the message
    const devices: ('cpu' | 'gpu')[] = ['cpu'];
    if (!(loadGpuJs() instanceof Error)) devices.push('gpu');
    for (const device of devices) {
      const f = K.function([g.x], g.outs, [], { ...NO_FALLBACK, device });
      let got: NDArray[] = [];
      const lines = captured(() => { got = f(g.feed); });
      if (device === 'cpu') expect(lines, device).to.deep.equal(wantLines);
      else {
        // float32 on the device: the same lines, numbers within 1e-5
        const nums = (l: string) => (l.match(/-?\d[\d.e-]*/g) ?? []).map(Number);
        expect(lines.map((l) => l.replace(/-?\d[\d.e-]*/g, '#')), device).to.deep.equal(wantLines.map((l) => l.replace(/-?\d[\d.e-]*/g, '#')));
        lines.forEach((l, k) => expectClose(nums(l), nums(wantLines[k]!), { atol: 1e-5, rtol: 1e-5 }, `gpu line ${k}`));
      }
      expect(f.source(), device).to.match(/print: a host callback/).and.not.match(/extern|not compiled/);
      got.forEach((v, k) => expectClose(v, want[k]!, { atol: 1e-5, rtol: 1e-5 }, `${device} output ${k}`));
    }
    const m = K.function([g.x], g.outs, [], NO_FALLBACK).exportModule({ name: 'printing', shapes: [[2, 3]] });
    expect(m.source).to.match(/_print\("tanh: {2}" \+ rt\.fmt\(/);
  });
});
