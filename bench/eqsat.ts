// "eqsat vs greedy": the same K graphs compiled with optimizer 'fast_run' (the greedy pipeline)
// and 'eqsat' (the greedy pipeline, then equality saturation), on the cpu device, in one process.
// Graphs where search should win (matrix-chain reassociation, factoring A·B + A·C, and x*y + x*z
// where ops are kernels of their own, a transposed product chain, an attention block with a
// linear readout) and the graphs where it must not lose (x*y + x*z fused on the cpu; the MLP, CNN,
// LSTM training steps from bench/cases.ts). Compile time is K.function plus the
// first call from empty caches; run time is the median over rounds that alternate between the
// two functions in ABBA order (machine noise and warm caches hit both alike), timed by the
// process's CPU time (every thread; BENCH_CLOCK=wall for wall time), which a shared machine's load
// disturbs less. Each timing starts from a collected heap (a full collection, not timed), so both
// functions start alike and neither pays for the other's garbage (without it, the collection of a
// 1M loop's 4 MiB results lands in whichever timing crosses the heap's limit: the factoring row
// read 0.60x to 1.2x for one loop against the same loop). Where eqsat keeps greedy's graph both
// functions run the same code, so their ratio shows the noise. `THEANINE_THREADS=1 node --import tsx bench/eqsat.ts [filter]`; BENCH_ROUNDS (default 15).
import * as os from 'node:os';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { backend as K } from '../src/index.js';
import type { Node } from '../src/ir/node.js';
import type { NDArray } from '../src/ir/ndarray.js';
import { clearCompileCache, compileTimes } from '../src/runtime/cpu/compile.js';
import { lastEqsatReport } from '../src/passes/eqsat/index.js';
import { cnnGraph, cnnOneHot, lstmGraph, mlpGraph, nd, oneHot } from './cases.js';

interface Graph {
  readonly inputs: Node[];
  readonly outputs: Node[];
  readonly updates: NonNullable<Parameters<typeof K.function>[2]>;
  readonly feeds: NDArray[];
}
interface BenchCase { readonly name: string; readonly expect: 'win' | 'no loss'; readonly backend?: 'tensorflow'; build(): Graph }

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 15);
const WALL = process.env['BENCH_CLOCK'] === 'wall';
const clock = (): number => {
  if (WALL) return performance.now();
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const ph = (shape: number[], name: string) => K.placeholder(shape, null, 'float32', false, name);
const leaves = (shapes: number[][]) => shapes.map((s, i) => ph(s, `in${i}`));
const feedsOf = (ins: Node[]) => ins.map((p, i) => nd(p.shape as number[], 100 + i, -1, 1));

const N = 256;
const cases: BenchCase[] = [
  {
    name: `matrix chain ((A·B)·C)·v, ${N}x${N}, f32`, expect: 'win',
    build: () => {
      const ins = leaves([[N, N], [N, N], [N, N], [N]]);
      const [A, B, C, v] = ins as [Node, Node, Node, Node];
      return { inputs: ins, outputs: [K.dot(K.dot(K.dot(A, B), C), v)], updates: [], feeds: feedsOf(ins) };
    },
  },
  {
    // On the cpu both forms fuse into one memory-bound loop over x, y, z: the cost model rates them alike and keeps greedy's graph.
    name: 'factoring x*y + x*z, 1M f32', expect: 'no loss',
    build: () => {
      const ins = leaves([[1 << 20], [1 << 20], [1 << 20]]);
      const [x, y, z] = ins as [Node, Node, Node];
      return { inputs: ins, outputs: [x.mul(y).add(x.mul(z))], updates: [], feeds: feedsOf(ins) };
    },
  },
  {
    // The tensorflow backend runs each op as its own kernel (no fusion), so its cost model counts every intermediate's bytes.
    name: 'factoring x*y + x*z, 1M f32, tensorflow backend (tfjs cpu)', expect: 'win', backend: 'tensorflow',
    build: () => {
      const ins = leaves([[1 << 20], [1 << 20], [1 << 20]]);
      const [x, y, z] = ins as [Node, Node, Node];
      return { inputs: ins, outputs: [x.mul(y).add(x.mul(z))], updates: [], feeds: feedsOf(ins) };
    },
  },
  {
    name: `sum of products A·B + A·C, ${N}x${N}, f32`, expect: 'win',
    build: () => {
      const ins = leaves([[N, N], [N, N], [N, N]]);
      const [A, B, C] = ins as [Node, Node, Node];
      return { inputs: ins, outputs: [K.dot(A, B).add(K.dot(A, C))], updates: [], feeds: feedsOf(ins) };
    },
  },
  {
    name: `transposed product chain (Bᵀ·Aᵀ)ᵀ·v, ${N}x${N}, f32`, expect: 'win',
    build: () => {
      const ins = leaves([[N, N], [N, N], [N]]);
      const [A, B, v] = ins as [Node, Node, Node];
      return { inputs: ins, outputs: [K.dot(K.transpose(K.dot(K.transpose(B), K.transpose(A))), v)], updates: [], feeds: feedsOf(ins) };
    },
  },
  {
    name: 'attention block n=256 d=64 + readout, f32', expect: 'win',
    build: () => {
      const n = 256, d = 64;
      const ins = leaves([[n, d], [d, d], [d, d], [d, d], [d, d], [d]]);
      const [X, Wq, Wk, Wv, Wo, u] = ins as [Node, Node, Node, Node, Node, Node];
      const s = K.dot(K.dot(X, Wq), K.transpose(K.dot(X, Wk))).mul(1 / Math.sqrt(d));
      const p = K.softmax(s);
      const out = K.dot(K.dot(K.dot(p, K.dot(X, Wv)), Wo), u);
      return { inputs: ins, outputs: [out], updates: [], feeds: feedsOf(ins) };
    },
  },
  {
    name: 'MLP train step 784-256-10 b128', expect: 'no loss',
    build: () => { const g = mlpGraph(); return { inputs: [g.x, g.t], outputs: [g.loss], updates: g.updates, feeds: [nd([128, 784], 9, 0, 1), oneHot(1)] }; },
  },
  {
    name: 'CNN train step conv 5x5x16 + pool + dense, b32', expect: 'no loss',
    build: () => { const g = cnnGraph(); return { inputs: [g.x, g.t], outputs: [g.loss], updates: g.updates, feeds: [nd([32, 28, 28, 1], 23, 0, 1), cnnOneHot()] }; },
  },
  {
    name: 'LSTM fwd+bwd b32 T28 28->128', expect: 'no loss',
    build: () => { const g = lstmGraph(); return { inputs: [g.x, g.y], outputs: [g.loss], updates: g.updates, feeds: [nd([32, 28, 28], 13, 0, 1), nd([32, 128], 14, -1, 1)] }; },
  },
];

/** Whether two compiled functions run the same code, up to the numbering of generated names (t123, i45). */
const sameCode = (a: { source(): string }, b: { source(): string }) => {
  const norm = (src: string) => src.replace(/\b([a-z])[0-9]+\b/g, '$1N');
  return a.source() !== '' && norm(a.source()) === norm(b.source());
};

const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]!; };

function compile(g: Graph, optimizer: 'fast_run' | 'eqsat', backend?: 'tensorflow') {
  clearCompileCache();
  const before = compileTimes.passes;
  const t0 = clock();
  const f = K.function(g.inputs, g.outputs, g.updates, { optimizer, ...(backend !== undefined ? { backend } : {}) });
  f(g.feeds);
  return { f, ms: clock() - t0, passesMs: compileTimes.passes - before };
}

function main(): void {
  const filter = process.argv[2] ?? '';
  console.log(`eqsat vs greedy, cpu device, ${ROUNDS} rounds, ${WALL ? 'wall' : 'CPU'} time; load average at start ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}, ${os.cpus().length} cores`);
  console.log('| graph | expect | greedy run ms | eqsat run ms | speedup | greedy compile ms | eqsat compile ms | eqsat pass ms (wall) | e-nodes | stop | graph run |');
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|');
  for (const c of cases) {
    if (!c.name.includes(filter)) continue;
    const g = c.build();
    const greedy = compile(g, 'fast_run', c.backend);
    const eq = compile(g, 'eqsat', c.backend);
    const rep = lastEqsatReport!;
    // Calls per timing so one timing lasts a few milliseconds.
    const t0 = performance.now();
    greedy.f(g.feeds);
    const reps = Math.max(1, Math.min(200, Math.round(10 / Math.max(0.01, performance.now() - t0))));
    for (let i = 0; i < 3; i++) { greedy.f(g.feeds); eq.f(g.feeds); }
    const tg: number[] = [];
    const te: number[] = [];
    const time = (f: (v: NDArray[]) => unknown, out: number[]) => {
      gc();
      const s = clock();
      for (let i = 0; i < reps; i++) f(g.feeds);
      out.push((clock() - s) / reps);
    };
    for (let r = 0; r < ROUNDS; r++) {
      if (r % 2 === 0) { time(greedy.f, tg); time(eq.f, te); } else { time(eq.f, te); time(greedy.f, tg); }
    }
    const mg = median(tg);
    const me = median(te);
    const nodes = rep.iterations.at(-1)?.nodes ?? 0;
    console.log(`| ${c.name} | ${c.expect} | ${mg.toFixed(3)} | ${me.toFixed(3)} | ${(mg / me).toFixed(2)}x | ${greedy.ms.toFixed(0)} | ${eq.ms.toFixed(0)} | ${rep.ms.toFixed(1)} | ${nodes} | ${rep.stop} | ${rep.chose === 'eqsat' ? 'rewritten' : "greedy's"}${sameCode(greedy.f, eq.f) ? ' (same code)' : ''} |`);
  }
  console.log(`load average at end ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
}

main();
