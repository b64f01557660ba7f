// autodiff.scan_checkpoints against K.rnn (every state stored): a tanh RNN's loss and gradients,
// batch 32, 128 time steps, 64 units, on the cpu. Per policy: the peak buffer memory of one call
// (the profiler's peakBytes) and the median time of a call, alternating rounds in one process.
//   npx tsx bench/scan-checkpoints.ts       (BENCH_ROUNDS=n, default 9)
import { autodiff, backend as K, NDArray, type Tensor } from '../src/index.js';
import { Rng } from '../src/examples/random.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 9);
const [B, T, F, H] = [32, 128, 16, 64];
const rng = new Rng(7);
const values = [[B, T, F], [F, H], [H, H]].map((s) => new NDArray(rng.uniform(s.reduce((p, q) => p * q, 1), 0.2), s));
const median = (a: number[]) => [...a].sort((p, q) => p - q)[a.length >> 1]!;

function build(n: number | null) {
  const x = K.placeholder([B, T, F], null, 'float32', false, 'x');
  const w = K.placeholder([F, H], null, 'float32', false, 'w');
  const u = K.placeholder([H, H], null, 'float32', false, 'u');
  const step = (xt: Tensor, st: Tensor[]): [Tensor, Tensor[]] => {
    const h = K.tanh(K.add(K.dot(xt, w), K.dot(st[0]!, u)));
    return [h, [h]];
  };
  const h0 = K.zeros([B, H]);
  const [, outs] = n === null ? K.rnn(step, x, [h0]) : autodiff.scan_checkpoints(step, x, [h0], { save_every_N: n });
  const loss = K.mean(K.square(outs));
  return K.function([x, w, u], [loss, ...K.gradients(loss, [w, u])], [], { device: 'cpu', profile: true });
}

const policies: [string, number | null][] = [['K.rnn (every state stored)', null], ['save_every_N = 8', 8], ['save_every_N = 16', 16], ['save_every_N = 128', 128]];
const fns = policies.map(([, n]) => build(n));
const ref = fns[0]!(values).map((a) => a.toArray());
for (const f of fns) {
  const got = f(values).map((a) => a.toArray());
  if (JSON.stringify(got.map((g) => (g as number[]).length ?? g)) !== JSON.stringify(ref.map((g) => (g as number[]).length ?? g))) throw new Error('results differ in structure');
}
const times = fns.map(() => [] as number[]);
for (let r = 0; r < ROUNDS; r++) {
  fns.forEach((f, i) => {
    const t0 = performance.now();
    f(values);
    times[i]!.push(performance.now() - t0);
  });
}
const base = median(times[0]!);
console.log(`tanh RNN loss + gradients, batch ${B}, ${T} steps, ${H} units, float32, cpu; medians of ${ROUNDS} alternating rounds (machine shared with other work: times are noisy)`);
policies.forEach(([name], i) => {
  const p = fns[i]!.profile();
  console.log(`  ${name.padEnd(28)} peak ${(p.peakBytes / 2 ** 20).toFixed(2).padStart(7)} MiB  ${median(times[i]!).toFixed(2).padStart(8)} ms  ${(median(times[i]!) / base).toFixed(2)}x K.rnn`);
});
