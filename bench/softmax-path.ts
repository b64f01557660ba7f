// Where a softmax (or log-softmax, BENCH_LOG=1) of 4096x1000 float32 spends its time, in the
// bench's alternation (a theanine call, then a TensorFlow.js WebAssembly call, in turn): per
// theanine call its wall time, the CPU time of the calling thread and of the busiest other thread
// (Linux /proc/self/task/*/schedstat), the page faults of each (first writes to fresh memory), and
// the row blocks the worker computed; per tfjs-wasm call its wall time and page faults. Medians of
// BENCH_ROUNDS (31) rounds. Linux only (it reads /proc).
// `node --expose-gc --import tsx bench/softmax-path.ts`; THEANINE_THREADS sets theanine's threads.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import * as tf from '@tensorflow/tfjs';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import { backend as K, NDArray } from '../src/index.js';
import { threadCount, threadPool } from '../src/codegen/cpu/threads.js';

const LOG = process.env['BENCH_LOG'] === '1';
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 31);
const shape: [number, number] = [4096, 1000];

const ms = (t: string) => Number(fs.readFileSync(`/proc/self/task/${t}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
const faults = (t: string) => Number(fs.readFileSync(`/proc/self/task/${t}/stat`, 'utf8').split(') ')[1]!.split(' ')[7]);
const median = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1]!;

async function main(): Promise<void> {
  const require = createRequire(import.meta.url);
  setWasmPaths(`${path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json'))}/dist/`);
  await tf.setBackend('wasm');
  const n = shape[0] * shape[1];
  const d = new Float32Array(n);
  let s = 41;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    d[i] = -1 + (s / 4294967296) * 2;
  }
  const x = K.placeholder(shape, null, 'float32', false, 'x');
  const f = K.function([x], [LOG ? K.log(K.softmax(x)) : K.softmax(x)]);
  const xs = [new NDArray(d, shape, 'float32')];
  const tx = tf.tensor2d(d, shape);
  const peer = () => {
    const o = tf.tidy(() => (LOG ? tf.logSoftmax(tx) : tf.softmax(tx)));
    o.dataSync();
    o.dispose();
  };
  for (let i = 0; i < 5; i++) {
    f(xs);
    peer();
  }
  const self = String(process.pid);
  const r = { wall: [] as number[], cpu: [] as number[], other: [] as number[], flt: [] as number[], oflt: [] as number[] };
  const p = { wall: [] as number[], flt: [] as number[], blocks: [] as number[] };
  for (let k = 0; k < ROUNDS; k++) {
    const ts = fs.readdirSync('/proc/self/task');
    const c0 = new Map(ts.map((t) => [t, ms(t)]));
    const f0 = new Map(ts.map((t) => [t, faults(t)]));
    const w0 = threadPool()?.workerChunks ?? 0;
    const t0 = performance.now();
    f(xs);
    r.wall.push(performance.now() - t0);
    p.blocks.push((threadPool()?.workerChunks ?? 0) - w0);
    const c1 = new Map(ts.map((t) => [t, ms(t)]));
    const f1 = new Map(ts.map((t) => [t, faults(t)]));
    const others = ts.filter((t) => t !== self);
    r.cpu.push(c1.get(self)! - c0.get(self)!);
    r.other.push(Math.max(0, ...others.map((t) => c1.get(t)! - c0.get(t)!)));
    r.flt.push(f1.get(self)! - f0.get(self)!);
    r.oflt.push(others.reduce((a, t) => a + f1.get(t)! - f0.get(t)!, 0));
    const g0 = ts.reduce((a, t) => a + faults(t), 0);
    const t1 = performance.now();
    peer();
    p.wall.push(performance.now() - t1);
    p.flt.push(ts.reduce((a, t) => a + faults(t), 0) - g0);
  }
  const load = fs.readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
  const name = `${LOG ? 'log-softmax' : 'softmax'} of 4096x1000 f32`;
  console.log(`${name}, theanine ${threadCount()} threads vs tfjs-wasm, ${ROUNDS} rounds, load average ${load}`);
  console.log(
    `theanine: ${median(r.wall).toFixed(2)} ms; calling thread CPU ${median(r.cpu).toFixed(2)} ms, busiest other thread ${median(r.other).toFixed(2)} ms; page faults: calling thread ${median(r.flt)}, others ${median(r.oflt)}; row blocks by workers ${median(p.blocks)}`,
  );
  console.log(`tfjs-wasm: ${median(p.wall).toFixed(2)} ms; page faults ${median(p.flt)}`);
  console.log(`theanine vs tfjs-wasm: ${(median(p.wall) / median(r.wall)).toFixed(2)}x`);
  tx.dispose();
  process.exit(0);
}

void main();
