// theanine's cpu device against the WebAssembly inference engines in one Node process: ONNX
// Runtime Web's wasm backend (onnxruntime-web: MLAS and XNNPACK compiled to WebAssembly SIMD) on
// the graph of the same function's f.exportOnnx(), and TensorFlow.js' WebAssembly backend on the
// same ops. Each case is built once per implementation and warmed up; then rounds alternate
// between them (a few calls each, timed together) and every figure is the median of the rounds.
// The threads of each engine are printed: theanine's THEANINE_THREADS (default the cores),
// ONNX Runtime Web's ORT_THREADS (default 1; more need its proxy worker setup), tfjs-wasm's one.
//
//   node --import tsx bench/ort-web.ts [filter]      (BENCH_ROUNDS, default 9; BENCH_CLOCK=cpu)
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import * as tf from '@tensorflow/tfjs';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import { backend as K, NDArray } from '../src/index.js';
import type { Node } from '../src/ir/node.js';
import { threadCount } from '../src/codegen/cpu/threads.js';
import { measurePeak } from '../src/codegen/cpu/wasm/peak.js';
import { hasRelaxedSimd } from '../src/codegen/cpu/wasm/encode.js';
import { matmulFma } from '../src/codegen/cpu/wasm-kernel.js';

const require = createRequire(import.meta.url);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 9);
const CPU_CLOCK = process.env['BENCH_CLOCK'] === 'cpu';
const ORT_THREADS = Number(process.env['ORT_THREADS'] ?? 1);

interface OrtTensor { readonly data: unknown }
interface OrtSession { run(feeds: Record<string, OrtTensor>): Promise<Record<string, OrtTensor>>; readonly inputNames: readonly string[] }
interface Ort {
  env: { wasm: { numThreads: number; simd?: boolean; wasmPaths?: string } };
  InferenceSession: { create(bytes: Uint8Array, opts: object): Promise<OrtSession> };
  Tensor: new (type: string, data: Float32Array, dims: readonly number[]) => OrtTensor;
}

function data(n: number, seed: number, lo = -1, hi = 1): Float32Array {
  const out = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = lo + ((hi - lo) * s) / 4294967296;
  }
  return out;
}
const size = (sh: readonly number[]) => sh.reduce((a, b) => a * b, 1);
const nd = (sh: number[], seed: number, lo?: number, hi?: number) => new NDArray(data(size(sh), seed, lo, hi), sh, 'float32');

/** A case: its inputs (shape, seed), theanine's graph over placeholders, the same in tfjs ops. */
interface Case {
  readonly name: string;
  readonly inputs: readonly (readonly [number[], number])[];
  readonly graph: (xs: readonly Node[]) => Node;
  readonly tf: (xs: readonly tf.Tensor[]) => tf.Tensor;
  /** Calls per timed round (short cases are timed over several calls). */
  readonly calls: number;
  /** Floating-point operations per call (matrix products): the rate and its fraction of the measured peak are printed. */
  readonly flops?: number;
}

/** The MLP inference of bench/cases.ts: 784-256-10, relu, softmax, fixed weights (variables, initializers in ONNX). */
function mlp(batch: number): Case {
  const w = { W1: nd([784, 256], 7, -0.05, 0.05), b1: nd([256], 10, -0.1, 0.1), W2: nd([256, 10], 8, -0.1, 0.1), b2: nd([10], 11, -0.1, 0.1) };
  let tw: tf.Tensor[] | undefined;
  return {
    name: `MLP inference 784-256-10 b${batch}`,
    inputs: [[[batch, 784], 9]],
    calls: batch === 1 ? 50 : 10,
    graph: ([x]) => {
      const [W1, b1, W2, b2] = [K.variable(w.W1), K.variable(w.b1), K.variable(w.W2), K.variable(w.b2)];
      return K.softmax(K.dot(K.relu(K.dot(x!, W1).add(b1)), W2).add(b2));
    },
    tf: ([x]) => {
      tw ??= [w.W1, w.b1, w.W2, w.b2].map((v) => tf.keep(tf.tensor(v.data as Float32Array, v.shape as number[])));
      const [W1, b1, W2, b2] = tw as [tf.Tensor2D, tf.Tensor1D, tf.Tensor2D, tf.Tensor1D];
      return tf.softmax(tf.add(tf.matMul(tf.relu(tf.add(tf.matMul(x as tf.Tensor2D, W1), b1)), W2), b2));
    },
  };
}

const dot = (n: number): Case => ({
  name: `dot ${n}`, inputs: [[[n, n], 1], [[n, n], 2]], calls: n <= 256 ? 10 : 1, flops: 2 * n * n * n,
  graph: ([a, b]) => K.dot(a!, b!), tf: ([a, b]) => tf.matMul(a as tf.Tensor2D, b as tf.Tensor2D),
});

/** Variables of a case's graph, and the same values as tfjs tensors kept across calls (made once, outside tf.tidy). */
function weights(specs: readonly (readonly [number[], number, number, number])[]): { vars: () => Node[]; tf: () => tf.Tensor[] } {
  const vals = specs.map(([sh, seed, lo, hi]) => nd(sh, seed, lo, hi));
  let t: tf.Tensor[] | undefined;
  return { vars: () => vals.map((v) => K.variable(v)), tf: () => (t ??= vals.map((v) => tf.keep(tf.tensor(v.data as Float32Array, v.shape as number[])))) };
}

/** conv2d of bench/cases.ts: batch 8, 32x32x16 -> 32 filters, 3x3, same padding. */
function conv(): Case {
  const w = weights([[[3, 3, 16, 32], 6, -0.1, 0.1]]);
  return {
    name: 'conv2d 8x32x32x16 -> 32, 3x3', inputs: [[[8, 32, 32, 16], 5]], calls: 2, flops: 2 * 8 * 32 * 32 * 32 * 3 * 3 * 16,
    graph: ([x]) => K.conv2d(x!, w.vars()[0]!, [1, 1], 'same'),
    tf: ([x]) => tf.conv2d(x as tf.Tensor4D, w.tf()[0] as tf.Tensor4D, 1, 'same'),
  };
}

/** The CNN of bench/cases.ts at inference, batch 32: conv 5x5 to 16 (valid) + bias + relu, 2x2 max pool, dense 10, softmax. */
function cnn(): Case {
  const w = weights([[[5, 5, 1, 16], 21, -0.2, 0.2], [[16], 23, -0.1, 0.1], [[12 * 12 * 16, 10], 22, -0.05, 0.05], [[10], 24, -0.1, 0.1]]);
  return {
    name: 'CNN inference b32', inputs: [[[32, 28, 28, 1], 25]], calls: 5,
    graph: ([x]) => {
      const [Wc, bc, Wd, bd] = w.vars() as [Node, Node, Node, Node];
      const p = K.pool2d(K.relu(K.bias_add(K.conv2d(x!, Wc, [1, 1], 'valid'), bc)), [2, 2], [2, 2], 'valid', null, 'max');
      return K.softmax(K.dot(K.batch_flatten(p), Wd).add(bd));
    },
    tf: ([x]) => {
      const [Wc, bc, Wd, bd] = w.tf() as [tf.Tensor4D, tf.Tensor1D, tf.Tensor2D, tf.Tensor1D];
      const p = tf.maxPool(tf.relu<tf.Tensor4D>(tf.add(tf.conv2d(x as tf.Tensor4D, Wc, 1, 'valid'), bc)), 2, 2, 'valid');
      return tf.softmax(tf.add(tf.matMul(tf.reshape(p, [32, 12 * 12 * 16]), Wd), bd));
    },
  };
}

/** An LSTM at inference: batch 32, 28 steps of 28 inputs, 128 units, K.rnn (one Scan), the last output (tfjs: basicLSTMCell in a loop). */
function lstm(): Case {
  const [T, I, U] = [28, 28, 128];
  const w = weights([[[I, 4 * U], 31, -0.1, 0.1], [[U, 4 * U], 32, -0.1, 0.1], [[4 * U], 33, -0.1, 0.1]]);
  return {
    name: 'LSTM inference b32 T28 28->128', inputs: [[[32, T, I], 34]], calls: 2,
    graph: ([x]) => {
      const [Wx, Wh, b] = w.vars() as [Node, Node, Node];
      const gate = (z: Node, g: number) => K.slice(z, [0, g * U], [-1, U]);
      const step = (xt: Node, states: Node[]): [Node, Node[]] => {
        const [h, c] = states as [Node, Node];
        const z = K.dot(xt, Wx).add(K.dot(h, Wh)).add(b);
        const c2 = K.sigmoid(gate(z, 1)).mul(c).add(K.sigmoid(gate(z, 0)).mul(K.tanh(gate(z, 2))));
        const h2 = K.sigmoid(gate(z, 3)).mul(K.tanh(c2));
        return [h2, [h2, c2]];
      };
      const h0 = K.zeros([32, U]);
      return K.rnn(step, x!, [h0, h0])[0];
    },
    tf: ([x]) => {
      const [Wx, Wh, b] = w.tf() as [tf.Tensor2D, tf.Tensor2D, tf.Tensor1D];
      const W = tf.concat([Wx, Wh], 0);
      let c = tf.zeros([32, U]) as tf.Tensor2D;
      let h = tf.zeros([32, U]) as tf.Tensor2D;
      for (const xt of tf.unstack(x!, 1)) [c, h] = tf.basicLSTMCell(tf.scalar(1), W, b, xt as tf.Tensor2D, c, h);
      return h;
    },
  };
}

const CASES: readonly Case[] = [
  mlp(1), mlp(32), cnn(), lstm(), conv(),
  { name: 'softmax of 4096x1000', inputs: [[[4096, 1000], 41]], calls: 1, graph: ([x]) => K.softmax(x!), tf: ([x]) => tf.softmax(x!) },
  { name: 'log-softmax of 4096x1000', inputs: [[[4096, 1000], 41]], calls: 1, graph: ([x]) => K.log(K.softmax(x!)), tf: ([x]) => tf.logSoftmax(x!) },
  dot(256), dot(512), dot(1024),
];

type Run = () => void | Promise<void>;

async function impls(c: Case, ort: Ort): Promise<Record<string, Run>> {
  const xs = c.inputs.map(([sh], i) => K.placeholder(sh, null, 'float32', false, `x${i}`));
  const f = K.function(xs, [c.graph(xs)]);
  const vals = c.inputs.map(([sh, seed]) => nd(sh, seed, 0, 1));
  const tx = vals.map((v) => tf.tensor(v.data as Float32Array, v.shape as number[]));
  const session = await ort.InferenceSession.create(f.exportOnnx(), { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
  const feeds = Object.fromEntries(session.inputNames.map((n, i) => [n, new ort.Tensor('float32', vals[i]!.data as Float32Array, c.inputs[i]![0])]));
  return {
    theanine: () => { f(vals); },
    'tfjs-wasm': () => { const o = tf.tidy(() => c.tf(tx)); o.dataSync(); o.dispose(); },
    'ort-web': async () => { const out = await session.run(feeds); void Object.values(out)[0]!.data; },
  };
}

function clock(): () => number {
  if (!CPU_CLOCK) { const t = performance.now(); return () => performance.now() - t; }
  const u = process.cpuUsage();
  return () => { const d = process.cpuUsage(u); return (d.user + d.system) / 1000; };
}

async function main(): Promise<void> {
  const filter = process.argv[2];
  setWasmPaths(path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json')) + '/dist/');
  await tf.setBackend('wasm');
  const ort = require('onnxruntime-web') as Ort;
  ort.env.wasm.numThreads = ORT_THREADS;
  const load0 = os.loadavg()[0]!;
  console.log(`ort-web bench: ${os.cpus()[0]?.model ?? 'cpu'} x${os.cpus().length}, node ${process.version}, ${ROUNDS} rounds, clock ${CPU_CLOCK ? 'process CPU time' : 'wall'}; threads: theanine ${threadCount()}, onnxruntime-web ${ORT_THREADS}, tfjs-wasm 1; load average ${load0.toFixed(1)}`);
  // item 5 of issue 33: each product's rate as a fraction of one core's measured multiply-add peak times the threads it may use
  const peak = measurePeak(hasRelaxedSimd());
  const f32Peak = peak === undefined ? undefined : matmulFma() ? peak.f32x4Fused ?? peak.f32x4 : peak.f32x4;
  if (f32Peak !== undefined) console.log(`measured peak of one core: f32x4 ${f32Peak.toFixed(1)} GFLOP/s${matmulFma() ? ' (relaxed FMA)' : ''}; products: GFLOP/s, % of the peak times the threads`);
  console.log(`${'case'.padEnd(30)} ${'theanine'.padStart(10)} ${'tfjs-wasm'.padStart(10)} ${'ort-web'.padStart(10)} ${'vs wasm'.padStart(8)} ${'vs ort'.padStart(8)}`);
  for (const c of CASES) {
    if (filter !== undefined && !new RegExp(filter).test(c.name)) continue;
    const runs = await impls(c, ort);
    const times: Record<string, number[]> = {};
    // Warm-up: at least 3 rounds' calls and 300 ms per engine, so that each is timed in its steady
    // state (WebAssembly tiered up from its baseline compiler, JavaScript optimised): the b1 row's
    // 150 calls took 5 ms, before tier-up ended, which left its rounds 2-4x slow on any side.
    for (const r of Object.values(runs)) {
      const t0 = performance.now();
      for (let i = 0; i < 3 * c.calls || performance.now() - t0 < 300; i++) await r();
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, r] of Object.entries(runs)) {
        const t = clock();
        for (let i = 0; i < c.calls; i++) await r();
        (times[name] ??= []).push(t() / c.calls);
      }
    }
    const med = (n: string) => { const s = [...times[n]!].sort((a, b) => a - b); return s[s.length >> 1]!; };
    const th = med('theanine');
    const fmt = (x: number) => `${x < 1 ? x.toFixed(3) : x.toFixed(2)} ms`.padStart(10);
    const rate = (n: string, threads: number) => (c.flops === undefined || f32Peak === undefined ? ''
      : ` ${n} ${(c.flops / med(n) / 1e6).toFixed(1)} GF/s ${((100 * c.flops) / med(n) / 1e6 / (f32Peak * threads)).toFixed(0)}%`);
    const rates = c.flops === undefined || CPU_CLOCK ? '' : `  ${rate('theanine', threadCount())},${rate('tfjs-wasm', 1)},${rate('ort-web', ORT_THREADS)}`;
    console.log(`${c.name.padEnd(30)} ${fmt(th)} ${fmt(med('tfjs-wasm'))} ${fmt(med('ort-web'))} ${`${(med('tfjs-wasm') / th).toFixed(2)}x`.padStart(8)} ${`${(med('ort-web') / th).toFixed(2)}x`.padStart(8)}${rates}`);
  }
  console.log(`load average at the end ${os.loadavg()[0]!.toFixed(1)}`);
  process.exit(0);
}

void main();
