// The cost of checking mode, the NaN guard and the profiler (docs/debugging.md), as ratios against
// the same function without them in the same process, medians of alternating rounds:
// an MLP training step (784-256-10, batch 128, SGD updates) on the cpu.
//   npx tsx bench/checking.ts            (BENCH_ROUNDS=n, default 15)
// Per call: default; nanGuard off (explicitly); nanGuard on; profile on; mode debug. Compile
// (K.function + first call, from an empty cache): default against mode debug.
import { backend as K, NDArray, type Tensor } from '../src/index.js';
import { clearCompileCache } from '../src/runtime/cpu/compile.js';
import { mlp } from '../src/examples/models.js';
import { Rng } from '../src/examples/random.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 15);
const B = 128;

function build(opts: Record<string, unknown>) {
  const model = mlp(new Rng(1), 256);
  const x = K.placeholder([null, 784], null, 'float32', false, 'x');
  const y = K.placeholder([null, 10], null, 'float32', false, 'y');
  const loss = K.mean(K.categorical_crossentropy(model.logits(x), y, true));
  const gs = K.gradients(loss, model.params);
  const ups = model.params.map((p, i) => K.update(p, (p as Tensor).sub(gs[i]!.mul(0.01))));
  return K.function([x, y], [loss], ups, opts);
}

const rng = new Rng(3);
const xs = [new NDArray(rng.uniform(B * 784, 1), [B, 784]), new NDArray(Float32Array.from({ length: B * 10 }, (_, i) => (i % 10 === (i / 10 | 0) % 10 ? 1 : 0)), [B, 10])];
const median = (a: number[]) => [...a].sort((p, q) => p - q)[a.length >> 1]!;

const variants: Record<string, Record<string, unknown>> = {
  default: {}, 'nanGuard: false': { nanGuard: false }, 'nanGuard: true': { nanGuard: true }, 'profile: true': { profile: true }, "mode: 'debug'": { mode: 'debug' },
};
const fns = Object.fromEntries(Object.entries(variants).map(([k, o]) => [k, build(o)]));
for (const f of Object.values(fns)) { f(xs); f(xs); }
const calls: Record<string, number[]> = Object.fromEntries(Object.keys(fns).map((k) => [k, []]));
for (let r = 0; r < ROUNDS; r++) {
  for (const [k, f] of Object.entries(fns)) {
    const n = k === "mode: 'debug'" ? 1 : 5;
    const t0 = performance.now();
    for (let i = 0; i < n; i++) f(xs);
    calls[k]!.push((performance.now() - t0) / n);
  }
}
const base = median(calls['default']!);
console.log(`MLP train step 784-256-10 b${B}, cpu, medians of ${ROUNDS} alternating rounds (machine shared with other work: figures are noisy)`);
for (const [k, ts] of Object.entries(calls)) console.log(`  call, ${k.padEnd(16)} ${median(ts).toFixed(3).padStart(9)} ms  ${(median(ts) / base).toFixed(2)}x default`);

const compile: Record<string, number[]> = { default: [], "mode: 'debug'": [] };
for (let r = 0; r < Math.max(3, ROUNDS / 3); r++) {
  for (const k of Object.keys(compile)) {
    clearCompileCache();
    const t0 = performance.now();
    build(variants[k]!)(xs);
    compile[k]!.push(performance.now() - t0);
  }
}
const cbase = median(compile['default']!);
for (const [k, ts] of Object.entries(compile)) console.log(`  build + K.function + first call, ${k.padEnd(14)} ${median(ts).toFixed(1).padStart(8)} ms  ${(median(ts) / cbase).toFixed(2)}x default`);
