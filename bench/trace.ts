// npm run bench:trace: what recording provenance costs when a graph is built (src/ir/provenance.ts).
// Builds the training graph of the MLP and of the LSTM (Scan and unrolled) of `theanine train`
// (logits, softmax crossentropy, K.gradients, SGD updates) again and again, alternating tracing on
// and off (setTrace, as THEANINE_TRACE=0 does) so that machine noise hits both, and prints the
// median build time (CPU time of the process) of each and their ratio. Graph building only: no K.function, no compile.
// `npm run bench:trace -- <filter>` runs the cases whose name contains <filter>.
import { backend as K, setTrace, type Tensor } from '../src/index.js';
import { lstm, mlp, type Model } from '../src/examples/models.js';
import { Rng } from '../src/examples/random.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 15);
/** Builds per round and setting (a build takes about a millisecond: one sample is several builds). */
const BUILDS = Number(process.env['BENCH_BUILDS'] ?? 20);
const filter = process.argv[2] ?? '';

/** The whole training graph on a fresh placeholder, so every node is new (hash-consing cannot reuse one). */
function buildStep(m: Model): number {
  const x = K.placeholder({ shape: [null, ...m.exampleShape], name: 'x' });
  const t = K.placeholder({ shape: [null, 10], name: 't' });
  const loss = K.mean(K.categorical_crossentropy(K.softmax(m.logits(x)), t));
  const grads = K.gradients(loss, [...m.params]);
  const updates = m.params.map((p, i) => K.update_sub(p, K.multiply(grads[i]!, 0.01)));
  return updates.length;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const k = s.length >> 1;
  return s.length % 2 === 1 ? s[k]! : (s[k - 1]! + s[k]!) / 2;
}

/** CPU time of this process per build (user + system): on a shared machine, wall time mostly measures the neighbours. */
function measure(m: Model, on: boolean, builds: number): number {
  setTrace(on);
  // Each sample starts from a collected heap (node --expose-gc), so neither setting pays for the other's garbage.
  (globalThis as { gc?: () => void }).gc?.();
  const t0 = process.cpuUsage();
  for (let i = 0; i < builds; i++) buildStep(m);
  const d = process.cpuUsage(t0);
  return (d.user + d.system) / 1000 / builds;
}

const cases: { name: string; model: () => Model; builds: number }[] = [
  { name: 'MLP 784-256-10 train graph', model: () => mlp(new Rng(1)), builds: BUILDS },
  { name: 'LSTM 28x28 units 64 (Scan) train graph', model: () => lstm(new Rng(1), 64, false), builds: Math.ceil(BUILDS / 4) },
  { name: 'LSTM 28x28 units 64 (unrolled) train graph', model: () => lstm(new Rng(1), 64, true), builds: Math.ceil(BUILDS / 10) },
];

console.log(`${'graph build (CPU ms per build)'.padEnd(44)} ${'trace on'.padStart(10)} ${'trace off'.padStart(10)} ${'cost'.padStart(8)}`);
for (const c of cases) {
  if (!c.name.includes(filter)) continue;
  const m = c.model();
  for (let w = 0; w < 3; w++) { measure(m, true, c.builds); measure(m, false, c.builds); } // warm-up: V8 compiles both paths
  const on: number[] = [];
  const off: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate which goes first, so neither always follows a garbage collection of the other's nodes.
    if (r % 2 === 0) { on.push(measure(m, true, c.builds)); off.push(measure(m, false, c.builds)); }
    else { off.push(measure(m, false, c.builds)); on.push(measure(m, true, c.builds)); }
  }
  const a = median(on);
  const b = median(off);
  console.log(`${c.name.padEnd(44)} ${a.toFixed(3).padStart(10)} ${b.toFixed(3).padStart(10)} ${`${((a / b - 1) * 100).toFixed(1)}%`.padStart(8)}`);
}
setTrace(true);
