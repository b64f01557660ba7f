// npm run bench:eval: K.eval of the MLP's loss (784-256-10, batch 128, data in variables) in a
// loop of 100, against 100 calls of the K.function of the same graph, on each backend (theanine's
// cpu device, tensorflow, onnx where onnxruntime-node is installed). K.eval compiles once per
// expression and backend (src/api/eval.ts), so the loop should cost about what the function's
// calls cost: the target is at most 1.5x. A third column rebuilds the expression at every
// iteration (hash-consing gives back the same nodes, so the same compiled function).
// Rounds alternate between the three loops; each figure is the median of BENCH_ROUNDS (9);
// BENCH_CLOCK=cpu times by the process's CPU time.
import { backend as K, NDArray, set_backend } from '../src/index.js';
import type { Node } from '../src/ir/node.js';
import { ortAvailable } from '../src/runtime/onnx/session.js';
import { set_device } from '../src/api/config.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 9);
/** BENCH_CLOCK=cpu: the process's CPU time (every thread) instead of wall time, as bench/run.ts. */
const CPU_CLOCK = process.env['BENCH_CLOCK'] === 'cpu';
const clock = (): number => {
  if (!CPU_CLOCK) return performance.now();
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const LOOP = 100;
const B = 128;

/** Deterministic uniform values in [lo, hi). */
function data(n: number, seed: number, lo: number, hi: number): Float32Array {
  let s = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = lo + ((s >>> 8) / 16777216) * (hi - lo);
  }
  return out;
}

const X = K.variable(new NDArray(data(B * 784, 9, 0, 1), [B, 784], 'float32'), 'float32', 'x');
const T = K.variable(new NDArray(Float32Array.from({ length: B * 10 }, (_, i) => (i % 10 === (Math.floor(i / 10) * 7) % 10 ? 1 : 0)), [B, 10], 'float32'), 'float32', 't');
const W1 = K.variable(new NDArray(data(784 * 256, 7, -0.05, 0.05), [784, 256], 'float32'), 'float32', 'W1');
const b1 = K.variable(new NDArray(new Float32Array(256), [256], 'float32'), 'float32', 'b1');
const W2 = K.variable(new NDArray(data(256 * 10, 8, -0.1, 0.1), [256, 10], 'float32'), 'float32', 'W2');
const b2 = K.variable(new NDArray(new Float32Array(10), [10], 'float32'), 'float32', 'b2');

/** The MLP's loss, as bench/cases.ts' MLP train step computes it. */
function mlpLoss(): Node {
  const h = K.relu(K.dot(X, W1).add(b1));
  const p = K.softmax(K.dot(h, W2).add(b2));
  return K.mean(K.negative(K.sum(T.mul(K.log(p)), -1)));
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const backends: [string, () => void][] = [
  ['theanine cpu', () => { set_backend('theanine'); set_device('cpu'); }],
  ['tensorflow', () => { set_backend('tensorflow'); }],
];
if (ortAvailable() === undefined) backends.push(['onnx', () => { set_backend('onnx'); }]);

console.log(`K.eval of the MLP loss (784-256-10, b${B}) x${LOOP} vs K.function x${LOOP}; medians of ${ROUNDS} rounds, ms per loop (${CPU_CLOCK ? 'CPU' : 'wall'} time)`);
console.log(`${'backend'.padEnd(14)} ${'K.function'.padStart(11)} ${'K.eval'.padStart(11)} ${'K.eval, rebuilt'.padStart(16)} ${'eval/function'.padStart(14)} ${'rebuilt/function'.padStart(17)}`);
for (const [name, select] of backends) {
  select();
  const loss = mlpLoss();
  const f = K.function([], [loss]);
  const loops: [string, () => void][] = [
    ['function', () => { for (let i = 0; i < LOOP; i++) f([]); }],
    ['eval', () => { for (let i = 0; i < LOOP; i++) K.eval(loss); }],
    ['rebuilt', () => { for (let i = 0; i < LOOP; i++) K.eval(mlpLoss()); }],
  ];
  const same = Math.abs(Number(f([])[0]!.item()) - Number(K.eval(loss).item()));
  if (!(same <= 1e-6)) throw new Error(`${name}: K.eval and K.function disagree (${same})`);
  for (const [, run] of loops) run(); // warm-up: compile, V8
  const times = new Map<string, number[]>(loops.map(([n]) => [n, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (let k = 0; k < loops.length; k++) {
      const [n, run] = loops[(k + r) % loops.length]!;
      const t0 = clock();
      run();
      times.get(n)!.push(clock() - t0);
    }
  }
  const [fn, ev, rb] = ['function', 'eval', 'rebuilt'].map((n) => median(times.get(n)!)) as [number, number, number];
  console.log(`${name.padEnd(14)} ${fn.toFixed(1).padStart(11)} ${ev.toFixed(1).padStart(11)} ${rb.toFixed(1).padStart(16)} ${`${(ev / fn).toFixed(2)}x`.padStart(14)} ${`${(rb / fn).toFixed(2)}x`.padStart(17)}`);
}
set_backend('theanine');
