// Training steps on the gpu device's webgpu mode beside TensorFlow.js' WebGPU backend on the same
// adapter, in the same process (as bench/webgpu.ts): one step = upload the batch, forward,
// gradients, SGD updates of every parameter on the device, read back the loss. theanine runs one
// K.function (variables resident in device buffers); tfjs-webgpu runs `optimizer.minimize` and
// awaits the loss. Medians of REPS steps after WARM warm-ups, the two timed in turn.
//
//   THEANINE_WEBGPU_MODULE=<webgpu 0.6.2's index.js> BENCH_TFJS_DIR=<a node_modules holding
//   @tensorflow/tfjs-core and @tensorflow/tfjs-backend-webgpu 4.22> npx tsx bench/webgpu-steps.ts
//   (BENCH_CASES=matmul,mlp,lstm,cnn picks cases, default mlp,lstm,cnn; BENCH_SIZE=large: the sizes of bench/device/README.md)
//
// On lavapipe (software Vulkan) only the ratios mean anything, and only on a quiet machine.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { backend as K, NDArray } from '../src/index.js';
import type { Node } from '../src/ir/node.js';

const REPS = Number(process.env['BENCH_REPS'] ?? 10);
const WARM = 3;
const LR = 0.01;
const LARGE = process.env['BENCH_SIZE'] === 'large';

type Tf = typeof import('@tensorflow/tfjs-core');
type T = import('@tensorflow/tfjs-core').Tensor;

async function loadTfWebgpu(): Promise<Tf> {
  const dir = process.env['BENCH_TFJS_DIR'];
  const req = createRequire(dir !== undefined ? join(dir, 'x.js') : import.meta.url);
  const webgpuPath = process.env['THEANINE_WEBGPU_MODULE'] ?? req.resolve('webgpu');
  const dawn = await import(pathToFileURL(webgpuPath).href) as { create(o: string[]): unknown; globals: Record<string, unknown> };
  Object.assign(globalThis, dawn.globals);
  const options = (process.env['THEANINE_WEBGPU_OPTIONS'] ?? 'backend=vulkan').split(',').filter((s) => s !== '');
  Object.defineProperty(globalThis, 'navigator', { value: { gpu: dawn.create(options), userAgent: 'node' }, configurable: true });
  // BENCH_TFJS_BUNDLE: the three as one CommonJS file (bench/device/prepare.sh; their ESM gradient files need a bundler or tsx)
  const bundle = process.env['BENCH_TFJS_BUNDLE'];
  const tf = (bundle !== undefined ? req(bundle) : req('@tensorflow/tfjs-core')) as Tf;
  if (bundle === undefined) {
    req('@tensorflow/tfjs-core/dist/register_all_gradients');
    req('@tensorflow/tfjs-backend-webgpu');
  }
  await tf.setBackend('webgpu');
  await tf.ready();
  return tf;
}

function data(n: number, seed: number, lo = -1, hi = 1): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; out[i] = lo + (s / 4294967296) * (hi - lo); }
  return out;
}
const nd = (shape: number[], seed: number, lo = -1, hi = 1) => new NDArray(data(shape.reduce((a, d) => a * d, 1), seed, lo, hi), shape, 'float32');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function timePair(a: () => unknown, b: () => Promise<unknown>): Promise<[number, number]> {
  for (let i = 0; i < WARM; i++) { a(); await b(); }
  const ta: number[] = [], tb: number[] = [];
  for (let i = 0; i < REPS; i++) {
    let t0 = performance.now(); a(); ta.push(performance.now() - t0);
    t0 = performance.now(); await b(); tb.push(performance.now() - t0);
  }
  return [median(ta), median(tb)];
}

interface Step { name: string; theanine(): () => unknown; tf(tf: Tf): () => Promise<unknown> }

/** SGD updates of `params` on `loss`, and the step as one K.function of the inputs. */
function sgdFunction(inputs: Node[], loss: Node, params: Node[]): (xs: NDArray[]) => unknown {
  const gs = K.gradients(loss, params);
  const f = K.function(inputs, [loss], params.map((v, i) => K.update(v, v.sub(gs[i]!.mul(LR)))), { device: 'gpu' });
  return (xs) => f(xs);
}
function tfStep(tf: Tf, loss: () => T): () => Promise<unknown> {
  const opt = tf.train.sgd(LR);
  return async () => {
    const l = opt.minimize(() => loss() as import('@tensorflow/tfjs-core').Scalar, true)!;
    await l.data();
    l.dispose();
  };
}

const N = LARGE ? 4096 : 1024;
const matmul: Step = {
  name: `matmul ${N} float32, operands and result on the device (GFLOP/s = 2 N^3 / time)`,
  theanine: () => {
    const A = K.variable(nd([N, N], 51)), B = K.variable(nd([N, N], 52)), C = K.variable(nd([N, N], 0, 0, 0));
    // no output: the product goes to C on the device; the call returns when the device is done
    const f = K.function([], [], [K.update(C, K.dot(A, B))], { device: 'gpu' });
    return () => f([]);
  },
  tf: (tf) => {
    const A = tf.variable(tf.tensor2d(data(N * N, 51), [N, N])), B = tf.variable(tf.tensor2d(data(N * N, 52), [N, N]));
    return async () => {
      const c = tf.matMul(A, B);
      const one = tf.slice(c, [0, 0], [1, 1]);
      await one.data();
      one.dispose(); c.dispose();
    };
  },
};

const MB = LARGE ? 1024 : 128, MH = LARGE ? 1024 : 256;
const mlp: Step = {
  name: `MLP train step 784-${MH}-10 b${MB}, relu, softmax cross-entropy, SGD`,
  theanine: () => {
    const x = K.placeholder([MB, 784]), t = K.placeholder([MB, 10]);
    const W1 = K.variable(nd([784, MH], 1, -0.05, 0.05)), b1 = K.variable(nd([MH], 2, 0, 0));
    const W2 = K.variable(nd([MH, 10], 3, -0.05, 0.05)), b2 = K.variable(nd([10], 4, 0, 0));
    const p = K.softmax(K.dot(K.relu(K.dot(x, W1).add(b1)), W2).add(b2));
    const loss = K.mean(K.categorical_crossentropy(p, t));
    const f = sgdFunction([x, t], loss, [W1, b1, W2, b2]);
    const xs = [nd([MB, 784], 5, 0, 1), nd([MB, 10], 6, 0, 0.2)];
    return () => f(xs);
  },
  tf: (tf) => {
    const W1 = tf.variable(tf.tensor2d(data(784 * MH, 1, -0.05, 0.05), [784, MH])), b1 = tf.variable(tf.zeros([MH]));
    const W2 = tf.variable(tf.tensor2d(data(MH * 10, 3, -0.05, 0.05), [MH, 10])), b2 = tf.variable(tf.zeros([10]));
    const step = tfStep(tf, () => tf.losses.softmaxCrossEntropy(t, tf.add(tf.matMul(tf.relu(tf.add(tf.matMul(x, W1), b1)), W2), b2)));
    let x: T, t: T;
    return async () => {
      x = tf.tensor2d(data(MB * 784, 5, 0, 1), [MB, 784]); t = tf.tensor2d(data(MB * 10, 6, 0, 0.2), [MB, 10]);
      await step();
      x.dispose(); t.dispose();
    };
  },
};

const LB = LARGE ? 256 : 64, LT = 28, LI = 28, LU = LARGE ? 512 : 128;
const lstm: Step = {
  name: `LSTM Keras-style (one Scan) fwd+bwd b${LB} T${LT} ${LI}->${LU}, SGD`,
  theanine: () => {
    const x = K.placeholder([null, LT, LI]), y = K.placeholder([null, LU]);
    const Wx = K.variable(nd([LI, 4 * LU], 31, -0.1, 0.1)), Wh = K.variable(nd([LU, 4 * LU], 32, -0.1, 0.1));
    const b = K.variable(nd([4 * LU], 0, 0, 0));
    const gate = (z: Node, g: number) => K.slice(z, [0, g * LU], [-1, LU]);
    const h0 = K.tile(K.expand_dims(K.sum(K.zeros_like(x), [1, 2]), 1), [1, LU]);
    const [last] = K.rnn((xt, [h, c]) => {
      const z = K.dot(xt, Wx).add(K.dot(h!, Wh)).add(b);
      const c2 = K.sigmoid(gate(z, 1)).mul(c!).add(K.sigmoid(gate(z, 0)).mul(K.tanh(gate(z, 2))));
      const h2 = K.sigmoid(gate(z, 3)).mul(K.tanh(c2));
      return [h2, [h2, c2]];
    }, x, [h0, h0]);
    const f = sgdFunction([x, y], K.mean(K.square(last!.sub(y))), [Wx, Wh, b]);
    const xs = [nd([LB, LT, LI], 33), nd([LB, LU], 34, -0.5, 0.5)];
    return () => f(xs);
  },
  tf: (tf) => {
    const W = tf.variable(tf.concat([tf.tensor2d(data(LI * 4 * LU, 31, -0.1, 0.1), [LI, 4 * LU]), tf.tensor2d(data(LU * 4 * LU, 32, -0.1, 0.1), [LU, 4 * LU])], 0));
    const bias = tf.variable(tf.zeros([4 * LU]));
    const forget = tf.scalar(0);
    let xsT: T[] = [], y: T;
    const step = tfStep(tf, () => {
      let c = tf.zeros([LB, LU]) as import('@tensorflow/tfjs-core').Tensor2D;
      let h = c;
      for (const xt of xsT) [c, h] = tf.basicLSTMCell(forget, W as never, bias as never, xt as never, c, h);
      return tf.mean(tf.square(tf.sub(h, y)));
    });
    return async () => {
      const x = tf.tensor3d(data(LB * LT * LI, 33), [LB, LT, LI]);
      xsT = tf.unstack(x, 1); y = tf.tensor2d(data(LB * LU, 34, -0.5, 0.5), [LB, LU]);
      await step();
      [x, y, ...xsT].forEach((t) => t.dispose());
    };
  },
};

const CB = LARGE ? 256 : 32, CF = LARGE ? 64 : 16;
const cnn: Step = {
  name: `CNN train step b${CB} 28x28x1: conv 3x3 ${CF} relu, maxpool 2, dense 10, SGD`,
  theanine: () => {
    const x = K.placeholder([CB, 28, 28, 1]), t = K.placeholder([CB, 10]);
    const Wc = K.variable(nd([3, 3, 1, CF], 41, -0.3, 0.3)), bc = K.variable(nd([CF], 0, 0, 0));
    const Wd = K.variable(nd([14 * 14 * CF, 10], 42, -0.02, 0.02)), bd = K.variable(nd([10], 0, 0, 0));
    const h = K.pool2d(K.relu(K.bias_add(K.conv2d(x, Wc, [1, 1], 'same', 'channels_last'), bc, 'channels_last')), [2, 2], [2, 2], 'valid', 'channels_last', 'max');
    const p = K.softmax(K.dot(K.batch_flatten(h), Wd).add(bd));
    const f = sgdFunction([x, t], K.mean(K.categorical_crossentropy(p, t)), [Wc, bc, Wd, bd]);
    const xs = [nd([CB, 28, 28, 1], 43, 0, 1), nd([CB, 10], 44, 0, 0.2)];
    return () => f(xs);
  },
  tf: (tf) => {
    const Wc = tf.variable(tf.tensor4d(data(9 * CF, 41, -0.3, 0.3), [3, 3, 1, CF])), bc = tf.variable(tf.zeros([CF]));
    const Wd = tf.variable(tf.tensor2d(data(196 * CF * 10, 42, -0.02, 0.02), [196 * CF, 10])), bd = tf.variable(tf.zeros([10]));
    let x: T, t: T;
    const step = tfStep(tf, () => {
      const h = tf.maxPool(tf.relu(tf.add(tf.conv2d(x as never, Wc as never, 1, 'same'), bc)) as never, 2, 2, 'valid');
      return tf.losses.softmaxCrossEntropy(t, tf.add(tf.matMul(tf.reshape(h, [CB, 196 * CF]), Wd), bd));
    });
    return async () => {
      x = tf.tensor4d(data(CB * 784, 43, 0, 1), [CB, 28, 28, 1]); t = tf.tensor2d(data(CB * 10, 44, 0, 0.2), [CB, 10]);
      await step();
      x.dispose(); t.dispose();
    };
  },
};

async function main(): Promise<void> {
  process.env['THEANINE_GPU_MODE'] = 'webgpu';
  const tf = await loadTfWebgpu();
  const pick = (process.env['BENCH_CASES'] ?? 'mlp,lstm,cnn').split(',');
  const all: Record<string, Step> = { matmul, mlp, lstm, cnn };
  console.log(`REPS ${REPS}, medians in ms per training step; ratio = tfjs-webgpu / theanine (above 1: theanine faster)`);
  for (const name of pick) {
    const c = all[name];
    if (c === undefined) throw new Error(`BENCH_CASES: unknown case ${JSON.stringify(name)} (allowed: ${Object.keys(all).join(', ')})`);
    const [th, tfj] = await timePair(c.theanine(), c.tf(tf));
    const rate = name === 'matmul' ? ` (theanine ${(2 * N ** 3 / th / 1e6).toFixed(0)} GFLOP/s, tfjs-webgpu ${(2 * N ** 3 / tfj / 1e6).toFixed(0)} GFLOP/s)` : '';
    console.log(`${c.name}: theanine gpu:webgpu ${th.toFixed(1)}, tfjs-webgpu ${tfj.toFixed(1)}, ratio ${(tfj / th).toFixed(2)}${rate}`);
  }
  process.exit(0);
}

void main();
