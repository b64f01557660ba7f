// The benchmark cases: each builds the same computation in theanine and in TensorFlow.js.
import * as tf from '@tensorflow/tfjs';
import { backend as K, NDArray } from '../src/index.js';
import type { Node } from '../src/ir/node.js';
import { packArena } from '../src/codegen/cpu/wasm-kernel.js';
import { autodiffCases } from './cases-autodiff.js';

/** `tensorflow`, `onnx` and `theanine-gpu` are the theanine impl compiled with the tensorflow backend, the onnx backend and the gpu device (bench/run.ts makes them). */
export type ImplName = 'theanine' | 'tensorflow' | 'onnx' | 'theanine-gpu' | 'tfjs-cpu' | 'tfjs-wasm';
export interface Impl {
  run(): void;
  dispose?(): void;
}
export interface Case {
  readonly name: string;
  readonly flops?: number;
  readonly note?: string;
  /** Why the case cannot run in this build (an op not on main yet). */
  readonly skip?: string;
  /** Why the onnx column leaves the case out (an op with no ONNX translation). */
  readonly noOnnx?: string;
  readonly impls: Partial<Record<ImplName, () => Promise<Impl>>>;
  /** Builds the theanine graph and its function (for compile times). */
  readonly compile?: () => { firstCall(): void; recompile(): void };
  /** A training step to call 1000 times (heap growth). */
  readonly heap?: () => () => void;
}

/** Deterministic uniform values in [lo, hi). */
function data(n: number, seed: number, lo = -1, hi = 1): Float32Array {
  let s = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = lo + (s / 4294967296) * (hi - lo);
  }
  return out;
}

/** Input data, made once per (shape, seed, range): compile-time figures must not include making it. */
const ndCache = new Map<string, NDArray>();
export function nd(shape: number[], seed: number, lo = -1, hi = 1): NDArray {
  const key = `${shape.join('x')}:${seed}:${lo}:${hi}`;
  let v = ndCache.get(key);
  if (v === undefined) { v = new NDArray(data(shape.reduce((p, d) => p * d, 1), seed, lo, hi), shape, 'float32'); ndCache.set(key, v); }
  return v;
}

function tfImpl(make: () => { run: () => tf.Tensor | tf.Scalar | void; keep: tf.Tensor[] }): () => Promise<Impl> {
  return async () => {
    const { run, keep } = make();
    return {
      run: () => {
        const out = tf.tidy(run);
        if (out instanceof tf.Tensor) { out.dataSync(); out.dispose(); }
      },
      dispose: () => keep.forEach((t) => t.dispose()),
    };
  };
}

// --- elementwise chains over 1M floats, 5 ops each ---
// The headline chain is arithmetic with a relu, the common case in training graphs; the second
// one has a transcendental in it (tanh), where TensorFlow.js' WebAssembly backend has SIMD
// approximations that scalar JavaScript (Math.tanh) cannot match.
const EW = 1 << 20;
type EwBuild = (x: Node, y: Node) => Node;
type EwTf = (x: tf.Tensor, y: tf.Tensor) => tf.Tensor;
function ewCase(name: string, build: EwBuild, tfBuild: EwTf): Case {
  const graph = () => {
    const x = K.placeholder([EW], null, 'float32', false, 'x');
    const y = K.placeholder([EW], null, 'float32', false, 'y');
    return { x, y, out: build(x, y) };
  };
  const tfMake = () => {
    const x = tf.tensor1d(data(EW, 1));
    const y = tf.tensor1d(data(EW, 2));
    return { run: () => tfBuild(x, y), keep: [x, y] };
  };
  return {
    name,
    impls: {
      theanine: async () => {
        const { x, y, out } = graph();
        const f = K.function([x, y], [out]);
        const xs = [nd([EW], 1), nd([EW], 2)];
        return { run: () => { f(xs); } };
      },
      'tfjs-cpu': tfImpl(tfMake),
      'tfjs-wasm': tfImpl(tfMake),
    },
    compile: () => {
      const { x, y, out } = graph();
      const f = K.function([x, y], [out]);
      const xs = [nd([EW], 1), nd([EW], 2)];
      return { firstCall: () => { f(xs); }, recompile: () => { K.function([x, y], [out]); } };
    },
  };
}
const ewRelu = ewCase('elementwise relu(x*y+1)*x-y, 1M f32',
  (x, y) => K.relu(x.mul(y).add(1)).mul(x).sub(y),
  (x, y) => tf.relu(x.mul(y).add(1)).mul(x).sub(y));
const ewTanh = ewCase('elementwise tanh(x*y+1)*x-y, 1M f32',
  (x, y) => K.tanh(x.mul(y).add(1)).mul(x).sub(y),
  (x, y) => x.mul(y).add(1).tanh().mul(x).sub(y));

// --- dot ---
function dotCase(n: number): Case {
  const graph = () => {
    const a = K.placeholder([n, n], null, 'float32', false, 'a');
    const b = K.placeholder([n, n], null, 'float32', false, 'b');
    return { a, b, out: K.dot(a, b) };
  };
  const tfMake = () => {
    const a = tf.tensor2d(data(n * n, 3), [n, n]);
    const b = tf.tensor2d(data(n * n, 4), [n, n]);
    return { run: () => tf.matMul(a, b), keep: [a, b] };
  };
  return {
    name: `dot ${n}x${n}x${n}`,
    flops: 2 * n * n * n,
    impls: {
      theanine: async () => {
        const { a, b, out } = graph();
        const f = K.function([a, b], [out]);
        const xs = [nd([n, n], 3), nd([n, n], 4)];
        return { run: () => { f(xs); } };
      },
      'tfjs-cpu': tfImpl(tfMake),
      'tfjs-wasm': tfImpl(tfMake),
    },
    compile: () => {
      const { a, b, out } = graph();
      const f = K.function([a, b], [out]);
      const xs = [nd([n, n], 3), nd([n, n], 4)];
      return { firstCall: () => { f(xs); }, recompile: () => { K.function([a, b], [out]); } };
    },
  };
}

// --- conv2d: batch 8, 32x32x16 -> 32 filters, 3x3, same ---
const k = K as unknown as Record<string, unknown>;
const convCase: Case = typeof k['conv2d'] !== 'function'
  ? { name: 'conv2d 8x32x32x16 -> 32, 3x3', skip: 'K.conv2d is not on main yet', impls: {} }
  : {
    name: 'conv2d 8x32x32x16 -> 32, 3x3',
    flops: 2 * 8 * 32 * 32 * 32 * 3 * 3 * 16,
    note: 'conv as an indirect product (igemm: pointers to the input cells, no im2col panels)',
    impls: {
      theanine: async () => {
        const x = K.placeholder([8, 32, 32, 16], null, 'float32');
        const w = K.variable(nd([3, 3, 16, 32], 6, -0.1, 0.1));
        const conv = k['conv2d'] as (x: Node, w: Node, o: object) => Node;
        const f = K.function([x], [conv(x, w, { padding: 'same' })]);
        const xs = [nd([8, 32, 32, 16], 5)];
        return { run: () => { f(xs); } };
      },
      'tfjs-cpu': tfImpl(convTf),
      'tfjs-wasm': tfImpl(convTf),
    },
  };
function convTf() {
  const x = tf.tensor4d(data(8 * 32 * 32 * 16, 5), [8, 32, 32, 16]);
  const w = tf.tensor4d(data(3 * 3 * 16 * 32, 6, -0.1, 0.1), [3, 3, 16, 32]);
  return { run: () => tf.conv2d(x, w, 1, 'same'), keep: [x, w] };
}

// --- MLP training step: 784-256-10, batch 128, relu, softmax crossentropy, SGD ---
const B = 128;
const LR = 0.1;
export function oneHot(seed: number): NDArray {
  const t = new Float32Array(B * 10);
  for (let i = 0; i < B; i++) t[i * 10 + ((i * 7 + seed) % 10)] = 1;
  return new NDArray(t, [B, 10], 'float32');
}
export function mlpGraph() {
  const x = K.placeholder([B, 784], null, 'float32', false, 'x');
  const t = K.placeholder([B, 10], null, 'float32', false, 't');
  const W1 = K.variable(nd([784, 256], 7, -0.05, 0.05), 'float32', 'W1');
  const b1 = K.variable(new NDArray(new Float32Array(256), [256]), 'float32', 'b1');
  const W2 = K.variable(nd([256, 10], 8, -0.1, 0.1), 'float32', 'W2');
  const b2 = K.variable(new NDArray(new Float32Array(10), [10]), 'float32', 'b2');
  const hPre = K.dot(x, W1).add(b1);
  const h = K.maximum(hPre, 0);
  const logits = K.dot(h, W2).add(b2);
  const m = K.max(logits, -1, true);
  const e = K.exp(logits.sub(m));
  const p = e.div(K.sum(e, -1, true));
  const loss = K.mean(K.negative(K.sum(t.mul(K.log(p)), -1)));
  const params = [W1, b1, W2, b2];
  const grads = (K as unknown as { gradients?: (l: Node, v: Node[]) => Node[] }).gradients;
  let gs: Node[];
  if (typeof grads === 'function') gs = grads(loss, params);
  else {
    // Written out by hand until K.gradients is on main: the backward pass autodiff would build.
    const dlogits = p.sub(t).div(B);
    const gW2 = K.dot(h.T, dlogits);
    const gb2 = K.sum(dlogits, 0);
    const dh = K.dot(dlogits, W2.T).mul(K.cast(K.greater(hPre, 0), 'float32'));
    gs = [K.dot(x.T, dh), K.sum(dh, 0), gW2, gb2];
  }
  const updates = params.map((v, i) => K.update(v, v.sub(gs[i]!.mul(LR))));
  return { x, t, loss, updates, handGrads: typeof grads !== 'function' };
}
const mlpCase: Case = {
  name: 'MLP train step 784-256-10 b128',
  note: typeof (K as unknown as { gradients?: unknown }).gradients === 'function' ? 'K.gradients' : 'backward written by hand until K.gradients lands',
  impls: {
    theanine: async () => {
      const { x, t, loss, updates } = mlpGraph();
      const f = K.function([x, t], [loss], updates);
      const xs = [nd([B, 784], 9, 0, 1), oneHot(1)];
      return { run: () => { f(xs); } };
    },
    'tfjs-cpu': mlpTf,
    'tfjs-wasm': mlpTf,
  },
  compile: () => {
    const { x, t, loss, updates } = mlpGraph();
    const f = K.function([x, t], [loss], updates);
    const xs = [nd([B, 784], 9, 0, 1), oneHot(1)];
    return { firstCall: () => { f(xs); }, recompile: () => { K.function([x, t], [loss], updates); } };
  },
  heap: () => {
    const { x, t, loss, updates } = mlpGraph();
    const f = K.function([x, t], [loss], updates);
    const xs = [nd([B, 784], 9, 0, 1), oneHot(1)];
    return () => { f(xs); };
  },
};
async function mlpTf(): Promise<Impl> {
  const x = tf.tensor2d(data(B * 784, 9, 0, 1), [B, 784]);
  const t = tf.tensor2d(oneHot(1).data as Float32Array, [B, 10]);
  const W1 = tf.variable(tf.tensor2d(data(784 * 256, 7, -0.05, 0.05), [784, 256]));
  const b1 = tf.variable(tf.zeros([256]));
  const W2 = tf.variable(tf.tensor2d(data(256 * 10, 8, -0.1, 0.1), [256, 10]));
  const b2 = tf.variable(tf.zeros([10]));
  const opt = tf.train.sgd(LR);
  return {
    run: () => {
      const l = opt.minimize(() => {
        const h = tf.relu(tf.add(tf.matMul(x, W1), b1));
        const logits = tf.add(tf.matMul(h, W2), b2);
        return tf.losses.softmaxCrossEntropy(t, logits) as tf.Scalar;
      }, true);
      l!.dataSync();
      l!.dispose();
    },
    dispose: () => [x, t, W1, b1, W2, b2].forEach((v) => v.dispose()),
  };
}

// --- MLP inference: 784-256-10, relu, softmax, fixed weights (a predict-style K.function) ---
// The weights are variables nothing writes between calls, so their packs are kept across calls
// (src/codegen/cpu/wasm-kernel.ts' KeptPack; XNNPACK packs static weights once, at operator
// creation); the "packs each call" rows turn that reuse off (packArena.reuse) to show what it saves.
function inferenceCase(batch: number, reuse: boolean): Case {
  return {
    name: `MLP inference 784-256-10 b${batch}${reuse ? '' : ', packs each call'}`,
    ...(reuse ? {} : { note: 'theanine with its packs of constant operands made at every call' }),
    impls: {
      theanine: async () => {
        const x = K.placeholder([batch, 784], null, 'float32', false, 'x');
        const W1 = K.variable(nd([784, 256], 7, -0.05, 0.05), 'float32', 'W1');
        const b1 = K.variable(nd([256], 10, -0.1, 0.1), 'float32', 'b1');
        const W2 = K.variable(nd([256, 10], 8, -0.1, 0.1), 'float32', 'W2');
        const b2 = K.variable(nd([10], 11, -0.1, 0.1), 'float32', 'b2');
        const f = K.function([x], [K.softmax(K.dot(K.relu(K.dot(x, W1).add(b1)), W2).add(b2))]);
        const xs = [nd([batch, 784], 9, 0, 1)];
        if (reuse) return { run: () => { f(xs); } };
        return { run: () => { packArena.reuse = false; try { f(xs); } finally { packArena.reuse = true; } } };
      },
      'tfjs-cpu': () => inferenceTf(batch),
      'tfjs-wasm': () => inferenceTf(batch),
    },
  };
}
async function inferenceTf(batch: number): Promise<Impl> {
  const x = tf.tensor2d(data(batch * 784, 9, 0, 1), [batch, 784]);
  const W1 = tf.variable(tf.tensor2d(data(784 * 256, 7, -0.05, 0.05), [784, 256]));
  const b1 = tf.variable(tf.tensor1d(data(256, 10, -0.1, 0.1)));
  const W2 = tf.variable(tf.tensor2d(data(256 * 10, 8, -0.1, 0.1), [256, 10]));
  const b2 = tf.variable(tf.tensor1d(data(10, 11, -0.1, 0.1)));
  return {
    run: () => {
      const p = tf.tidy(() => tf.softmax(tf.add(tf.matMul(tf.relu(tf.add(tf.matMul(x, W1), b1)), W2), b2)));
      p.dataSync();
      p.dispose();
    },
    dispose: () => [x, W1, b1, W2, b2].forEach((v) => v.dispose()),
  };
}

// --- LSTM forward + backward: batch 32, 28 steps, 28 inputs, 128 units, SGD on a regression loss ---
const LB = 32, LT = 28, LI = 28, LU = 128;
export function lstmGraph() {
  const Kr = K as unknown as { rnn: (...a: unknown[]) => [Node, Node, Node[]]; gradients: (l: Node, v: Node[]) => Node[] };
  const x = K.placeholder([LB, LT, LI], null, 'float32', false, 'x');
  const y = K.placeholder([LB, LU], null, 'float32', false, 'y');
  const Wx = K.variable(nd([LI, 4 * LU], 11, -0.1, 0.1), 'float32', 'Wx');
  const Wh = K.variable(nd([LU, 4 * LU], 12, -0.1, 0.1), 'float32', 'Wh');
  const b = K.variable(new NDArray(new Float32Array(4 * LU), [4 * LU]), 'float32', 'b');
  const gate = (z: Node, k: number) => K.slice(z, [0, k * LU], [-1, LU]);
  const step = (xt: Node, states: Node[]): [Node, Node[]] => {
    const [h, c] = states as [Node, Node];
    const z = K.dot(xt, Wx).add(K.dot(h, Wh)).add(b);
    const i = K.sigmoid(gate(z, 0));
    const f = K.sigmoid(gate(z, 1));
    const g = K.tanh(gate(z, 2));
    const o = K.sigmoid(gate(z, 3));
    const c2 = f.mul(c).add(i.mul(g));
    const h2 = o.mul(K.tanh(c2));
    return [h2, [h2, c2]];
  };
  const h0 = K.zeros_like(K.sum(x, 1).dot(K.constant(new NDArray(new Float32Array(LI * LU), [LI, LU]))));
  const [last] = Kr.rnn(step, x, [h0, h0]);
  const loss = K.mean(K.square(last.sub(y)));
  const params = [Wx, Wh, b];
  const gs = Kr.gradients(loss, params);
  const updates = params.map((v, i) => K.update(v, v.sub(gs[i]!.mul(LR))));
  return { x, y, loss, updates };
}
const lstmCase: Case = typeof k['rnn'] !== 'function' || typeof k['gradients'] !== 'function'
  ? { name: 'LSTM fwd+bwd b32 T28 28->128', skip: 'needs K.rnn and K.gradients (not on main yet)', impls: {} }
  : {
    name: 'LSTM fwd+bwd b32 T28 28->128',
    note: 'K.rnn (one Scan) and K.gradients (a reverse Scan), SGD updates',
    impls: {
      theanine: async () => {
        const { x, y, loss, updates } = lstmGraph();
        const f = K.function([x, y], [loss], updates);
        const xs = [nd([LB, LT, LI], 13), nd([LB, LU], 14, -0.5, 0.5)];
        return { run: () => { f(xs); } };
      },
      'tfjs-cpu': lstmTf,
      'tfjs-wasm': lstmTf,
    },
    compile: () => {
      const { x, y, loss, updates } = lstmGraph();
      const f = K.function([x, y], [loss], updates);
      const xs = [nd([LB, LT, LI], 13), nd([LB, LU], 14, -0.5, 0.5)];
      return { firstCall: () => { f(xs); }, recompile: () => { K.function([x, y], [loss], updates); } };
    },
  };
async function lstmTf(): Promise<Impl> {
  const x = tf.tensor3d(data(LB * LT * LI, 13), [LB, LT, LI]);
  const xsT = tf.unstack(x, 1);
  const y = tf.tensor2d(data(LB * LU, 14, -0.5, 0.5), [LB, LU]);
  // tf.basicLSTMCell takes one kernel over [x, h]: rows LI + LU, gates i, j(g), f, o.
  const W = tf.variable(tf.concat([tf.tensor2d(data(LI * 4 * LU, 11, -0.1, 0.1), [LI, 4 * LU]), tf.tensor2d(data(LU * 4 * LU, 12, -0.1, 0.1), [LU, 4 * LU])], 0));
  const bias = tf.variable(tf.zeros([4 * LU]));
  const opt = tf.train.sgd(LR);
  const forget = tf.scalar(0);
  return {
    run: () => {
      const l = opt.minimize(() => {
        let c = tf.zeros([LB, LU]) as tf.Tensor2D;
        let h = tf.zeros([LB, LU]) as tf.Tensor2D;
        for (const xt of xsT) [c, h] = tf.basicLSTMCell(forget, W as unknown as tf.Tensor2D, bias as unknown as tf.Tensor1D, xt as tf.Tensor2D, c, h);
        return tf.mean(tf.square(tf.sub(h, y))) as tf.Scalar;
      }, true);
      l!.dataSync();
      l!.dispose();
    },
    dispose: () => [x, y, W, bias, forget, ...xsT].forEach((t) => t.dispose()),
  };
}

// --- LSTM as Keras writes it (issue 13): batch and initial state unknown until the call, one Scan
// (Keras' unroll=False), fwd + bwd + SGD update; batch 64, 28 steps of 28 features, 128 units.
// The same graph with unroll=true is the Scan-vs-unroll row.
export const KB = 64, KT = 28, KI = 28, KU = 128;
export function kerasLstmGraph(unroll: boolean) {
  const x = K.placeholder([null, KT, KI], null, 'float32', false, 'x');
  const y = K.placeholder([null, KU], null, 'float32', false, 'y');
  const Wx = K.variable(nd([KI, 4 * KU], 31, -0.1, 0.1), 'float32', 'Wx');
  const Wh = K.variable(nd([KU, 4 * KU], 32, -0.1, 0.1), 'float32', 'Wh');
  const b = K.variable(new NDArray(new Float32Array(4 * KU), [4 * KU]), 'float32', 'b');
  const gate = (z: Node, g: number) => K.slice(z, [0, g * KU], [-1, KU]);
  const step = (xt: Node, states: Node[]): [Node, Node[]] => {
    const [h, c] = states as [Node, Node];
    const z = K.dot(xt, Wx).add(K.dot(h, Wh)).add(b);
    const c2 = K.sigmoid(gate(z, 1)).mul(c).add(K.sigmoid(gate(z, 0)).mul(K.tanh(gate(z, 2))));
    const h2 = K.sigmoid(gate(z, 3)).mul(K.tanh(c2));
    return [h2, [h2, c2]];
  };
  // Keras' RNN.get_initial_state: zeros of (samples, units) built from the input's shape.
  const h0 = K.tile(K.expand_dims(K.sum(K.zeros_like(x), [1, 2]), 1), [1, KU]);
  const [last] = K.rnn(step, x, [h0, h0], { unroll });
  const loss = K.mean(K.square(last.sub(y)));
  const params = [Wx, Wh, b];
  const gs = K.gradients(loss, params);
  return { x, y, loss, updates: params.map((v, i) => K.update(v, v.sub(gs[i]!.mul(LR)))) };
}
function kerasLstmCase(unroll: boolean): Case {
  const build = () => {
    const { x, y, loss, updates } = kerasLstmGraph(unroll);
    const f = K.function([x, y], [loss], updates);
    return { f, xs: [nd([KB, KT, KI], 33), nd([KB, KU], 34, -0.5, 0.5)] };
  };
  return {
    name: `LSTM Keras-style ${unroll ? 'unrolled' : 'Scan'}, batch unknown, fwd+bwd b64 T28 28->128`,
    note: unroll ? 'K.rnn(..., unroll=true): 28 copies of the step; the Scan row over this one is the Scan-vs-unroll ratio'
      : "K.rnn as Keras calls it (unroll=False): one Scan, its reverse Scan for the gradients; initial state from K.shape",
    impls: {
      theanine: async () => { const { f, xs } = build(); return { run: () => { f(xs); } }; },
      ...(unroll ? {} : { 'tfjs-cpu': () => lstmTfSized(KB, KT, KI, KU, 33, 34), 'tfjs-wasm': () => lstmTfSized(KB, KT, KI, KU, 33, 34) }),
    },
    compile: () => {
      const { x, y, loss, updates } = kerasLstmGraph(unroll);
      const f = K.function([x, y], [loss], updates);
      const xs = [nd([KB, KT, KI], 33), nd([KB, KU], 34, -0.5, 0.5)];
      return { firstCall: () => { f(xs); }, recompile: () => { K.function([x, y], [loss], updates); } };
    },
  };
}
async function lstmTfSized(B: number, T: number, I: number, U: number, sx: number, sy: number): Promise<Impl> {
  const x = tf.tensor3d(data(B * T * I, sx), [B, T, I]);
  const xsT = tf.unstack(x, 1);
  const y = tf.tensor2d(data(B * U, sy, -0.5, 0.5), [B, U]);
  const W = tf.variable(tf.concat([tf.tensor2d(data(I * 4 * U, 31, -0.1, 0.1), [I, 4 * U]), tf.tensor2d(data(U * 4 * U, 32, -0.1, 0.1), [U, 4 * U])], 0));
  const bias = tf.variable(tf.zeros([4 * U]));
  const opt = tf.train.sgd(LR);
  const forget = tf.scalar(0);
  return {
    run: () => {
      const l = opt.minimize(() => {
        let c = tf.zeros([B, U]) as tf.Tensor2D;
        let h = tf.zeros([B, U]) as tf.Tensor2D;
        for (const xt of xsT) [c, h] = tf.basicLSTMCell(forget, W as unknown as tf.Tensor2D, bias as unknown as tf.Tensor1D, xt as tf.Tensor2D, c, h);
        return tf.mean(tf.square(tf.sub(h, y))) as tf.Scalar;
      }, true);
      l!.dataSync();
      l!.dispose();
    },
    dispose: () => [x, y, W, bias, forget, ...xsT].forEach((t) => t.dispose()),
  };
}

// --- Embedding: gather 32x20 rows of a 1000x32 table, its gradient (scatter_add_rows) and an SGD update ---
// Small because tfjs-cpu's gather gradient (unsortedSegmentSum) compares every id with every row, and
// tfjs-wasm has no unsortedSegmentSum kernel (no wasm column).
const EV = 1000, ED = 32, EB = 32, ET = 20;
const embIndices = () => new NDArray(Int32Array.from({ length: EB * ET }, (_, i) => (Math.imul(i, 2654435761) >>> 0) % EV), [EB, ET], 'int32');
function embGraph() {
  const ind = K.placeholder([EB, ET], null, 'int32', false, 'ind');
  const table = K.variable(nd([EV, ED], 21, -0.05, 0.05), 'float32', 'table');
  const loss = K.mean(K.square(K.gather(table, ind)));
  const [g] = K.gradients(loss, [table]);
  return { ind, loss, updates: [K.update(table, table.sub(g!.mul(LR)))] };
}
const embeddingCase: Case = {
  name: 'Embedding train step 1000x32, 32x20 ids',
  note: 'gather, its gradient (scatter_add_rows) and an SGD update of the table; tfjs-wasm has no gather gradient',
  impls: {
    theanine: async () => {
      const { ind, loss, updates } = embGraph();
      const f = K.function([ind], [loss], updates);
      const xs = [embIndices()];
      return { run: () => { f(xs); } };
    },
    'tfjs-cpu': embTf,
  },
};
async function embTf(): Promise<Impl> {
  const ind = tf.tensor2d(embIndices().data as Int32Array, [EB, ET], 'int32');
  const table = tf.variable(tf.tensor2d(data(EV * ED, 21, -0.05, 0.05), [EV, ED]));
  const opt = tf.train.sgd(LR);
  return {
    run: () => {
      const l = opt.minimize(() => tf.mean(tf.square(tf.gather(table, ind))) as tf.Scalar, true);
      l!.dataSync();
      l!.dispose();
    },
    dispose: () => [ind, table].forEach((t) => t.dispose()),
  };
}

// --- depthwise conv + max pool, forward and gradients: batch 8, 32x32x16, 3x3 depthwise, 2x2 pool ---
const DN = 8, DS = 32, DC = 16;
const depthwiseCase: Case = {
  name: 'depthwise conv 3x3 + max pool 2x2 fwd+bwd b8 32x32x16',
  note: 'depthwise conv and its two adjoints as reductions per output element, the max pool gradient as a gather over taps; tfjs-wasm has no depthwise conv gradient',
  impls: {
    theanine: async () => {
      const x = K.placeholder([DN, DS, DS, DC], null, 'float32', false, 'x');
      const w = K.variable(nd([3, 3, DC, 1], 31, -0.3, 0.3), 'float32', 'w');
      const loss = K.sum(K.square(K.pool2d(K.depthwise_conv2d(x, w, 1, 'same'), 2, 2)));
      const grads = K.gradients(loss, [x, w]);
      const f = K.function([x], [loss, ...grads]);
      const xs = [nd([DN, DS, DS, DC], 32)];
      return { run: () => { f(xs); } };
    },
    'tfjs-cpu': depthwiseTf,
  },
};
async function depthwiseTf(): Promise<Impl> {
  const x = tf.tensor4d(data(DN * DS * DS * DC, 32), [DN, DS, DS, DC]);
  const w = tf.tensor4d(data(9 * DC, 31, -0.3, 0.3), [3, 3, DC, 1]);
  const g = tf.grads((a: tf.Tensor, b: tf.Tensor) => tf.sum(tf.square(tf.maxPool(tf.depthwiseConv2d(a as tf.Tensor4D, b as tf.Tensor4D, 1, 'same'), 2, 2, 'valid'))));
  return {
    run: () => { const [gx, gw] = g([x, w]); gx!.dataSync(); gw!.dataSync(); gx!.dispose(); gw!.dispose(); },
    dispose: () => [x, w].forEach((t) => t.dispose()),
  };
}

// --- pooling alone, forward and gradient: 8x64x64x32 float32, max 2x2 (tiling) and avg 3x3 stride 1 same (overlapping, padded) ---
const PN = 8, PS = 64, PC = 32;
function poolCase(mode: 'max' | 'avg'): Case {
  const [size, stride, padding] = mode === 'max' ? [2, 2, 'valid' as const] : [3, 1, 'same' as const];
  return {
    name: `${mode} pool ${size}x${size} stride ${stride} ${padding} fwd+bwd 8x64x64x32`,
    note: 'the loss sum(square(pool(x))) and its gradient in x',
    impls: {
      theanine: async () => {
        const x = K.placeholder([PN, PS, PS, PC], null, 'float32', false, 'x');
        const loss = K.sum(K.square(K.pool2d(x, size, stride, padding, null, mode)));
        const f = K.function([x], [loss, ...K.gradients(loss, [x])]);
        const xs = [nd([PN, PS, PS, PC], 41)];
        return { run: () => { f(xs); } };
      },
      'tfjs-cpu': () => poolTf(mode, size, stride, padding),
      'tfjs-wasm': () => poolTf(mode, size, stride, padding),
    },
  };
}
async function poolTf(mode: 'max' | 'avg', size: number, stride: number, padding: 'valid' | 'same'): Promise<Impl> {
  const x = tf.tensor4d(data(PN * PS * PS * PC, 41), [PN, PS, PS, PC]);
  const pool = (a: tf.Tensor4D) => (mode === 'max' ? tf.maxPool(a, size, stride, padding) : tf.avgPool(a, size, stride, padding));
  const g = tf.valueAndGrad((a: tf.Tensor) => tf.sum(tf.square(pool(a as tf.Tensor4D))));
  return {
    run: () => { const { value, grad } = g(x); value.dataSync(); grad.dataSync(); value.dispose(); grad.dispose(); },
    dispose: () => x.dispose(),
  };
}

// --- dropout of 1M float32 (seeded: the same mask every call; Philox per element) ---
const dropoutCase: Case = {
  name: 'dropout 0.5 of 1M f32',
  impls: {
    theanine: async () => {
      const x = K.placeholder([1024, 1024], null, 'float32', false, 'x');
      const f = K.function([x], [K.dropout(x, 0.5)]);
      const xs = [nd([1024, 1024], 22)];
      return { run: () => { f(xs); } };
    },
    'tfjs-cpu': dropoutTf,
    'tfjs-wasm': dropoutTf,
  },
};
async function dropoutTf(): Promise<Impl> {
  const x = tf.tensor2d(data(1024 * 1024, 22), [1024, 1024]);
  return {
    run: () => { const y = tf.dropout(x, 0.5); y.dataSync(); y.dispose(); },
    dispose: () => x.dispose(),
  };
}

// --- CNN training step: 28x28x1 -> conv 5x5x16 (valid) + relu -> max pool 2x2 -> dense 10, batch 32, SGD ---
// TensorFlow.js' wasm backend has no Conv2DBackpropFilter kernel, so only its cpu backend runs it.
const NB = 32;
export function cnnGraph() {
  const x = K.placeholder([NB, 28, 28, 1], null, 'float32', false, 'x');
  const t = K.placeholder([NB, 10], null, 'float32', false, 't');
  const Wc = K.variable(nd([5, 5, 1, 16], 21, -0.2, 0.2), 'float32', 'Wc');
  const bc = K.variable(new NDArray(new Float32Array(16), [16]), 'float32', 'bc');
  const Wd = K.variable(nd([12 * 12 * 16, 10], 22, -0.05, 0.05), 'float32', 'Wd');
  const bd = K.variable(new NDArray(new Float32Array(10), [10]), 'float32', 'bd');
  const h = K.relu(K.bias_add(K.conv2d(x, Wc, [1, 1], 'valid'), bc));
  const p = K.pool2d(h, [2, 2], [2, 2], 'valid', null, 'max');
  const logits = K.dot(K.batch_flatten(p), Wd).add(bd);
  const loss = K.mean(K.categorical_crossentropy(logits, t, true));
  const params = [Wc, bc, Wd, bd];
  const gs = (K as unknown as { gradients: (l: Node, v: Node[]) => Node[] }).gradients(loss, params);
  return { x, t, loss, updates: params.map((v, i) => K.update(v, v.sub(gs[i]!.mul(LR)))) };
}
export function cnnOneHot(): NDArray {
  const out = new Float32Array(NB * 10);
  for (let i = 0; i < NB; i++) out[i * 10 + ((i * 3) % 10)] = 1;
  return new NDArray(out, [NB, 10], 'float32');
}
const cnnCase: Case = {
  name: 'CNN train step conv 5x5x16 + pool + dense, b32',
  note: 'tfjs-wasm: no Conv2DBackpropFilter kernel',
  impls: {
    theanine: async () => {
      const { x, t, loss, updates } = cnnGraph();
      const f = K.function([x, t], [loss], updates);
      const xs = [nd([NB, 28, 28, 1], 23, 0, 1), cnnOneHot()];
      return { run: () => { f(xs); } };
    },
    'tfjs-cpu': async () => {
      const x = tf.tensor4d(data(NB * 28 * 28, 23, 0, 1), [NB, 28, 28, 1]);
      const t = tf.tensor2d(cnnOneHot().data as Float32Array, [NB, 10]);
      const Wc = tf.variable(tf.tensor4d(data(5 * 5 * 16, 21, -0.2, 0.2), [5, 5, 1, 16]));
      const bc = tf.variable(tf.zeros([16]));
      const Wd = tf.variable(tf.tensor2d(data(12 * 12 * 16 * 10, 22, -0.05, 0.05), [12 * 12 * 16, 10]));
      const bd = tf.variable(tf.zeros([10]));
      const opt = tf.train.sgd(LR);
      return {
        run: () => {
          const l = opt.minimize(() => {
            const h = tf.relu(tf.add(tf.conv2d(x, Wc, 1, 'valid'), bc));
            const p = tf.maxPool(h as tf.Tensor4D, 2, 2, 'valid');
            const logits = tf.add(tf.matMul(tf.reshape(p, [NB, 12 * 12 * 16]), Wd), bd);
            return tf.losses.softmaxCrossEntropy(t, logits) as tf.Scalar;
          }, true);
          l!.dataSync();
          l!.dispose();
        },
        dispose: () => [x, t, Wc, bc, Wd, bd].forEach((v) => v.dispose()),
      };
    },
  },
};

// --- CTC: K.ctc_batch_cost and its gradient, 16 samples of 50 steps over 20 classes, labels of up to 10 ---
// TensorFlow.js has no CTC op: its columns run the same forward recursion in log space written
// with tf ops (a loop over time of shifts, logSumExp and masks, -1e30 standing for -inf), and
// tf.grad differentiates it, as a user of TensorFlow.js would have to.
const CB = 16, CT = 50, CC = 20, CL = 10, CS = 2 * CL + 1;
const ctcLabels = () => Array.from({ length: CB }, (_, b) => Array.from({ length: CL }, (_, j) => (j < CL - (b % 4) ? (b * 7 + j * 3 + (j % 3 === 0 ? 0 : 1)) % (CC - 1) : -1)));
const ctcLengths = () => ({ il: Array.from({ length: CB }, (_, b) => CT - (b % 5) * 3), ll: Array.from({ length: CB }, (_, b) => CL - (b % 4)) });
const ctcCase: Case = {
  name: 'CTC loss + gradient b16 T50 C20 L10',
  note: 'K.ctc_batch_cost and its gradient with respect to y_pred; TensorFlow.js has no CTC op, so its columns are the recursion written in tf ops, differentiated by tf.grad',
  noOnnx: 'ctc_loss has no ONNX translation',
  impls: {
    theanine: async () => {
      const yp = K.placeholder([CB, CT, CC], null, 'float32', false, 'yp');
      const { il, ll } = ctcLengths();
      const loss = K.ctc_batch_cost(K.constant(ctcLabels(), 'int32'), yp, K.constant(il.map((v) => [v]), 'int32'), K.constant(ll.map((v) => [v]), 'int32'));
      const [g] = K.gradients(K.sum(loss), [yp]);
      const f = K.function([yp], [loss, g!]);
      const xs = [nd([CB, CT, CC], 31, 0.01, 1)];
      return { run: () => { f(xs); } };
    },
    'tfjs-cpu': ctcTf,
    'tfjs-wasm': ctcTf,
  },
};
async function ctcTf(): Promise<Impl> {
  const NEG = -1e30;
  const labels = ctcLabels();
  const { il, ll } = ctcLengths();
  const blank = CC - 1;
  const ext = labels.map((row, b) => Array.from({ length: CS }, (_, s) => (s % 2 === 1 && (s - 1) / 2 < ll[b]! ? row[(s - 1) / 2]! : blank)));
  // one-hot of the extended labels (B, C, S): emissions E = logp x onehot
  const onehot = tf.tensor3d(ext.flatMap((row) => Array.from({ length: CC }, (_, c) => row.map((v) => (v === c ? 1 : 0)))).flat(), [CB, CC, CS]);
  const add = (f: (b: number, s: number) => boolean) => tf.tensor2d(ext.map((row, b) => row.map((_, s) => (f(b, s) ? 0 : NEG))), [CB, CS]);
  const skipMask = add((b, s) => s >= 2 && ext[b]![s] !== blank && ext[b]![s] !== ext[b]![s - 2]);
  const validMask = add((b, s) => s < 2 * ll[b]! + 1);
  const initMask = add((_, s) => s <= 1);
  const endMask = tf.tensor3d(Array.from({ length: CT }, (_, t) => ext.map((_, b) => Array.from({ length: CS }, (_, s) => (t === il[b]! - 1 && s >= 2 * ll[b]! - 1 && s <= 2 * ll[b]! ? 0 : NEG)))), [CT, CB, CS]);
  const y = tf.tensor3d(data(CB * CT * CC, 31, 0.01, 1), [CB, CT, CC]);
  const shift = (a: tf.Tensor2D, k: number) => tf.concat([tf.fill([CB, k], NEG), a.slice([0, 0], [CB, CS - k])], 1) as tf.Tensor2D;
  const lossOf = (yp: tf.Tensor3D): tf.Scalar => {
    const z = tf.add(yp, 1e-7);
    const logp = tf.sub(tf.log(z), tf.log(tf.sum(z, 2, true))) as tf.Tensor3D;
    const E = tf.matMul(logp, onehot); // (B, T, S)
    const alphas: tf.Tensor2D[] = [];
    let a = tf.add(tf.add(initMask, validMask), E.slice([0, 0, 0], [CB, 1, CS]).reshape([CB, CS])) as tf.Tensor2D;
    alphas.push(a);
    for (let t = 1; t < CT; t++) {
      const prev = tf.stack([a, shift(a, 1), tf.add(shift(a, 2), skipMask)]);
      a = tf.add(tf.add(tf.logSumExp(prev, 0), validMask), E.slice([0, t, 0], [CB, 1, CS]).reshape([CB, CS])) as tf.Tensor2D;
      alphas.push(a);
    }
    const all = tf.add(tf.stack(alphas), endMask); // (T, B, S)
    return tf.neg(tf.sum(tf.logSumExp(tf.transpose(all, [1, 0, 2]).reshape([CB, CT * CS]), 1))) as tf.Scalar;
  };
  const grad = tf.valueAndGrad(lossOf);
  return {
    run: () => {
      const { value, grad: g } = tf.tidy(() => grad(y));
      value.dataSync();
      g.dataSync();
      value.dispose();
      g.dispose();
    },
    dispose: () => [onehot, skipMask, validMask, initMask, endMask, y].forEach((t) => t.dispose()),
  };
}

// --- reductions: a sum over each axis of a 1024x1024 float32, a row softmax and log-softmax of 4096x1000 ---
// The sum over axis 0 (columns, as a bias gradient sums over the batch) reads rows at a stride;
// the sum over axis 1 and the softmax's row max and sum read each row in order.
// The "borrowed output" rows compile with K.function's `borrow` (Theano's Out(borrow=True)): the
// result is an array the function keeps and writes again at its next call, so a call makes no
// fresh 16 MB array (whose first writes are page faults); tfjs-wasm's dataSync makes one each call.
const BORROW_NOTE = "theanine's K.function with borrow: true (its output array kept and written again at the next call); tfjs-wasm makes a fresh array per call";
function reduceCase(name: string, shape: [number, number], build: (x: Node) => Node, tfBuild: (x: tf.Tensor2D) => tf.Tensor, borrow = false): Case {
  const graph = () => {
    const x = K.placeholder(shape, null, 'float32', false, 'x');
    return { x, out: build(x) };
  };
  const tfMake = () => {
    const x = tf.tensor2d(data(shape[0] * shape[1], 41), shape);
    return { run: () => tfBuild(x), keep: [x] };
  };
  return {
    name: borrow ? `${name}, borrowed output` : name,
    ...(borrow ? { note: BORROW_NOTE } : {}),
    impls: {
      theanine: async () => {
        const { x, out } = graph();
        const f = K.function([x], [out], [], { borrow });
        const xs = [nd(shape, 41)];
        return { run: () => { f(xs); } };
      },
      'tfjs-cpu': tfImpl(tfMake),
      'tfjs-wasm': tfImpl(tfMake),
    },
  };
}
const sumAxis0 = reduceCase('reduce sum over axis 0 of 1024x1024 f32', [1024, 1024], (x) => K.sum(x, 0), (x) => tf.sum(x, 0));
const sumAxis1 = reduceCase('reduce sum over axis 1 of 1024x1024 f32', [1024, 1024], (x) => K.sum(x, 1), (x) => tf.sum(x, 1));
const sumAll = reduceCase('reduce sum of every element of 1024x1024 f32', [1024, 1024], (x) => K.sum(x), (x) => tf.sum(x));
const softmaxRows = reduceCase('reduce softmax of 4096x1000 f32', [4096, 1000], (x) => K.softmax(x), (x) => tf.softmax(x));
const logSoftmaxRows = reduceCase('reduce log-softmax of 4096x1000 f32', [4096, 1000], (x) => K.log(K.softmax(x)), (x) => tf.logSoftmax(x));
const softmaxBorrowed = reduceCase('reduce softmax of 4096x1000 f32', [4096, 1000], (x) => K.softmax(x), (x) => tf.softmax(x), true);
const logSoftmaxBorrowed = reduceCase('reduce log-softmax of 4096x1000 f32', [4096, 1000], (x) => K.log(K.softmax(x)), (x) => tf.logSoftmax(x), true);

export function cases(): Case[] {
  return [ewRelu, ewTanh, dotCase(256), dotCase(512), dotCase(1024), convCase, mlpCase, inferenceCase(32, true), inferenceCase(32, false), inferenceCase(1, true), inferenceCase(1, false), cnnCase, lstmCase, kerasLstmCase(false), kerasLstmCase(true), embeddingCase, depthwiseCase, poolCase('max'), poolCase('avg'), dropoutCase, ctcCase, sumAxis0, sumAxis1, sumAll, softmaxRows, logSoftmaxRows, softmaxBorrowed, logSoftmaxBorrowed, ...autodiffCases()];
}
