// Correctness of the gpu device's webgpu mode on the machine it runs on: each graph below is
// compiled twice, for gpu:webgpu and for the cpu device, run on the same seeded inputs, and every
// result compared elementwise: |gpu - cpu| <= ATOL + RTOL |cpu| (float32 sums in other orders;
// a wrong kernel is off by far more). Fallback 'error': a step that would leave the device fails
// its case. Prints one line per case (the worst element's error as a fraction of its tolerance)
// and exits 1 if any case fails. Bundled and run by bench/device/run-check.sh on a GPU machine;
// here: THEANINE_GPU_MODE=webgpu XDG_RUNTIME_DIR=/tmp/xdg npx tsx bench/device/check.ts (lavapipe).
import { backend as K, NDArray } from '../../src/index.js';
import type { Node } from '../../src/ir/node.js';

const ATOL = 2e-4;
const RTOL = 2e-3;

function data(shape: number[], seed: number, lo = -1, hi = 1): NDArray {
  const n = shape.reduce((a, b) => a * b, 1);
  const d = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    d[i] = lo + ((hi - lo) * s) / 4294967296;
  }
  return new NDArray(d, shape, 'float32');
}

interface Case {
  readonly name: string;
  readonly inputs: readonly number[][];
  readonly build: (xs: readonly Node[]) => Node[];
  /** Integer inputs (indices): input k's values in [0, max). */
  readonly ints?: Readonly<Record<number, number>>;
}

const dense = (x: Node, w: Node, b: Node) => K.dot(x, w).add(b);

const CASES: Case[] = [
  {
    name: 'elementwise chain (tanh, sigmoid, exp, abs) 1000x257',
    inputs: [[1000, 257], [1000, 257]],
    build: ([x, y]) => [K.tanh(x!.mul(y!).add(1)).mul(K.sigmoid(x!)).sub(K.exp(K.abs(y!).neg()))],
  },
  { name: 'dot 513x257 . 257x129', inputs: [[513, 257], [257, 129]], build: ([a, b]) => [K.dot(a!, b!)] },
  { name: 'batch_dot 8x33x17 . 8x17x9', inputs: [[8, 33, 17], [8, 17, 9]], build: ([a, b]) => [K.batch_dot(a!, b!)] },
  {
    name: 'batch_dot 16x500x520 . 16x520x510 (the large tiles)',
    inputs: [[16, 500, 520], [16, 520, 510]],
    build: ([a, b]) => [K.batch_dot(a!, b!)],
  },
  {
    name: 'reductions of 1024x1000: sum axis 0, max axis 1, mean, logsumexp axis 1',
    inputs: [[1024, 1000]],
    build: ([x]) => [K.sum(x!, 0), K.max(x!, 1), K.mean(x!), K.logsumexp(x!, 1)],
  },
  { name: 'softmax and log-softmax of 4096x1000', inputs: [[4096, 1000]], build: ([x]) => [K.softmax(x!), K.log(K.softmax(x!))] },
  {
    name: 'conv2d 8x32x32x16 -> 32, 3x3 same; 5x5 valid stride 2',
    inputs: [[8, 32, 32, 16], [3, 3, 16, 32], [5, 5, 16, 8]],
    build: ([x, w, v]) => [K.conv2d(x!, w!, [1, 1], 'same'), K.conv2d(x!, v!, [2, 2], 'valid')],
  },
  {
    name: 'pool2d max 2x2 valid, avg 3x3 same, of 8x64x64x32',
    inputs: [[8, 64, 64, 32]],
    build: ([x]) => [K.pool2d(x!, [2, 2], [2, 2], 'valid', null, 'max'), K.pool2d(x!, [3, 3], [1, 1], 'same', null, 'avg')],
  },
  {
    name: 'MLP 784-256-10 b64: loss and gradients',
    inputs: [[64, 784], [64, 10], [784, 256], [256], [256, 10], [10]],
    build: ([x, t, w1, b1, w2, b2]) => {
      const p = K.softmax(dense(K.relu(dense(x!, w1!, b1!)), w2!, b2!));
      const loss = K.mean(K.categorical_crossentropy(K.softmax(t!), p));
      return [loss, ...K.gradients(loss, [w1!, b1!, w2!, b2!])];
    },
  },
  {
    name: 'LSTM (K.rnn, one Scan) b16 T12 8->32: last output and gradients',
    inputs: [[16, 12, 8], [8, 128], [32, 128], [128]],
    build: ([x, wx, wh, b]) => {
      const U = 32;
      const gate = (z: Node, g: number) => K.slice(z, [0, g * U], [-1, U]);
      const step = (xt: Node, states: Node[]): [Node, Node[]] => {
        const [h, c] = states as [Node, Node];
        const z = K.dot(xt, wx!).add(K.dot(h, wh!)).add(b!);
        const c2 = K.sigmoid(gate(z, 1)).mul(c).add(K.sigmoid(gate(z, 0)).mul(K.tanh(gate(z, 2))));
        return [K.sigmoid(gate(z, 3)).mul(K.tanh(c2)), [K.sigmoid(gate(z, 3)).mul(K.tanh(c2)), c2]];
      };
      const h0 = K.zeros([16, U]);
      const last = K.rnn(step, x!, [h0, h0])[0];
      const loss = K.sum(K.square(last));
      return [last, ...K.gradients(loss, [wx!, wh!, b!])];
    },
  },
  {
    name: 'CNN b16: conv 5x5x16 + relu + max pool + dense, gradients',
    inputs: [[16, 28, 28, 1], [5, 5, 1, 16], [12 * 12 * 16, 10]],
    build: ([x, wc, wd]) => {
      const p = K.pool2d(K.relu(K.conv2d(x!, wc!, [1, 1], 'valid')), [2, 2], [2, 2], 'valid', null, 'max');
      const loss = K.sum(K.square(K.dot(K.batch_flatten(p), wd!)));
      return [loss, ...K.gradients(loss, [wc!, wd!])];
    },
  },
  {
    name: 'gather 1000x32 by 300 ids and its gradient (scatter-add)',
    inputs: [[1000, 32], [300]],
    ints: { 1: 1000 },
    build: ([w, ids]) => {
      const g = K.gather(w!, ids!);
      return [g, ...K.gradients(K.sum(K.square(g)), [w!])];
    },
  },
  { name: 'cumsum axis 1 and axis 0 of 512x300', inputs: [[512, 300]], build: ([x]) => [K.cumsum(x!, 1), K.cumsum(x!, 0)] },
];

function values(c: Case, k: number): NDArray {
  const shape = c.inputs[k]!;
  const max = c.ints?.[k];
  if (max === undefined) return data(shape, 11 + 7 * k);
  const d = data(shape, 11 + 7 * k, 0, max);
  return new NDArray(Int32Array.from(d.data as Float32Array, (v) => Math.floor(v)), shape, 'int32');
}

function main(): void {
  process.env['THEANINE_GPU_MODE'] ??= 'webgpu';
  let failed = 0;
  let device = '';
  for (const c of CASES) {
    try {
      const xs = c.inputs.map((s, k) => K.placeholder(s, null, c.ints?.[k] !== undefined ? 'int32' : 'float32', false, `x${k}`));
      const outs = c.build(xs);
      const gpu = K.function(xs, outs, [], { device: 'gpu', fallback: 'error' });
      const cpu = K.function(xs, outs, [], { device: 'cpu' });
      const vals = c.inputs.map((_, k) => values(c, k));
      const got = gpu(vals);
      const want = cpu(vals);
      device = gpu.device;
      let worst = 0;
      for (let o = 0; o < want.length; o++) {
        const a = got[o]!.data,
          b = want[o]!.data;
        if (a.length !== b.length) throw new Error(`output ${o}: ${a.length} elements, cpu ${b.length}`);
        for (let i = 0; i < b.length; i++) {
          const e = Math.abs(Number(a[i]) - Number(b[i])) / (ATOL + RTOL * Math.abs(Number(b[i])));
          if (!(e <= worst)) worst = Number.isNaN(e) ? Infinity : Math.max(worst, e);
        }
      }
      const ok = worst <= 1;
      if (!ok) failed++;
      console.log(`${ok ? 'ok  ' : 'FAIL'} ${c.name}: worst error ${worst.toFixed(3)} of the tolerance (${gpu.device})`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${c.name}: ${(e as Error).message.split('\n')[0]}`);
    }
  }
  console.log(`${CASES.length - failed} of ${CASES.length} cases agree with the cpu device on ${device} (|gpu - cpu| <= ${ATOL} + ${RTOL} |cpu|)`);
  process.exit(failed === 0 ? 0 : 1);
}

main();
