// The gpu device's webgpu mode beside TensorFlow.js' WebGPU backend on the same adapter, in the
// same process: theanine's device runs Dawn in its worker (src/runtime/gpu/webgpu), tfjs-webgpu
// runs Dawn on the main thread with `navigator.gpu` set to Dawn's. Each timed run uploads the
// inputs, computes and reads the result back, for both, the two timed in turn. Medians of REPS
// runs after WARM warm-ups.
//
//   THEANINE_WEBGPU_MODULE=<webgpu 0.6.2's index.js> BENCH_TFJS_DIR=<a node_modules holding
//   @tensorflow/tfjs-core and @tensorflow/tfjs-backend-webgpu 4.22> npx tsx bench/webgpu.ts
//
// On lavapipe (software Vulkan) only the ratios mean anything, and only on a quiet machine.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { backend as K, NDArray } from '../src/index.js';

const REPS = Number(process.env['BENCH_REPS'] ?? 30);
const WARM = 5;

type Tf = typeof import('@tensorflow/tfjs-core');

async function loadTfWebgpu(): Promise<Tf> {
  const dir = process.env['BENCH_TFJS_DIR'];
  const req = createRequire(dir !== undefined ? join(dir, 'x.js') : import.meta.url);
  const webgpuPath = process.env['THEANINE_WEBGPU_MODULE'] ?? req.resolve('webgpu');
  const dawn = await import(pathToFileURL(webgpuPath).href) as { create(o: string[]): unknown; globals: Record<string, unknown> };
  Object.assign(globalThis, dawn.globals);
  Object.defineProperty(globalThis, 'navigator', { value: { gpu: dawn.create(['backend=vulkan']), userAgent: 'node' }, configurable: true });
  const tf = req('@tensorflow/tfjs-core') as Tf;
  req('@tensorflow/tfjs-backend-webgpu');
  await tf.setBackend('webgpu');
  await tf.ready();
  return tf;
}

function data(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; out[i] = (s / 4294967296) * 2 - 1; }
  return out;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Medians of two runs timed in turn (so that the machine's load drifts over both alike). */
async function timePair(a: () => unknown, b: () => Promise<unknown>): Promise<[number, number]> {
  for (let i = 0; i < WARM; i++) { a(); await b(); }
  const ta: number[] = [], tb: number[] = [];
  for (let i = 0; i < REPS; i++) {
    let t0 = performance.now(); a(); ta.push(performance.now() - t0);
    t0 = performance.now(); await b(); tb.push(performance.now() - t0);
  }
  return [median(ta), median(tb)];
}

interface BenchCase { name: string; shapes: number[][]; theanine: (...xs: ReturnType<typeof K.placeholder>[]) => ReturnType<typeof K.placeholder>; tf: (tf: Tf, ...xs: import('@tensorflow/tfjs-core').Tensor[]) => import('@tensorflow/tfjs-core').Tensor }

const cases: BenchCase[] = [
  { name: 'matmul 512', shapes: [[512, 512], [512, 512]], theanine: (a, b) => K.dot(a!, b!), tf: (tf, a, b) => tf.matMul(a!, b!) },
  { name: 'matmul 1024', shapes: [[1024, 1024], [1024, 1024]], theanine: (a, b) => K.dot(a!, b!), tf: (tf, a, b) => tf.matMul(a!, b!) },
  { name: 'softmax 512 x 1000', shapes: [[512, 1000]], theanine: (x) => K.softmax(x!), tf: (tf, x) => tf.softmax(x!) },
  { name: 'elementwise chain 1M: tanh(x) * 2 + exp(-x)', shapes: [[1 << 20]], theanine: (x) => K.tanh(x!).mul(2).add(K.exp(x!.neg())), tf: (tf, x) => tf.add(tf.mul(tf.tanh(x!), 2), tf.exp(tf.neg(x!))) },
  { name: 'row sums 4096 x 1024', shapes: [[4096, 1024]], theanine: (x) => K.sum(x!, 1), tf: (tf, x) => tf.sum(x!, 1) },
];

async function main(): Promise<void> {
  process.env['THEANINE_GPU_MODE'] = 'webgpu';
  const tf = await loadTfWebgpu();
  console.log(`REPS ${REPS}, medians in ms (upload, compute, read back); ratio = tfjs-webgpu / theanine (above 1: theanine faster)`);
  for (const c of cases) {
    const vals = c.shapes.map((s, i) => new NDArray(data(s.reduce((a, d) => a * d, 1), 7 + i), s, 'float32'));
    const phs = c.shapes.map((s) => K.placeholder(s));
    const f = K.function(phs, [c.theanine(...phs)], [], { device: 'gpu' });
    const [tTheanine, tTf] = await timePair(() => f(vals), async () => {
      const ins = vals.map((v) => tf.tensor(v.data as Float32Array, [...v.shape]));
      const out = c.tf(tf, ...ins);
      await out.data();
      out.dispose();
      ins.forEach((t) => t.dispose());
    });
    console.log(`${c.name}: theanine ${f.device} ${tTheanine.toFixed(2)}, tfjs-webgpu ${tTf.toFixed(2)}, ratio ${(tTf / tTheanine).toFixed(2)}`);
  }
  process.exit(0);
}

void main();
