// "tuned vs default": each graph compiled twice in one process on the cpu device, once with the
// default schedules and once with `tune` (src/runtime/tune.ts: a beam search over each whole
// product's cache blocks and thread split, each elementwise kernel's unroll and thread split and
// each JavaScript loop kernel's output loop order where no order changes a value,
// timed on this machine, a winner kept only when it beats the default in confirming rounds), from
// an empty tuning cache in a fresh folder, so the search's cost is this run's. Run time is the
// median over rounds that alternate between the two functions in ABBA order, each call from a
// collected heap (a full collection, not timed: neither pays for the other's garbage), by wall
// time (the thread split is among what is tuned; BENCH_CLOCK=cpu for process CPU time). The load average is printed at the start and the
// end: on a shared machine a ratio within a few percent of 1 is noise.
// The gpu:webgpu rows (where an adapter opens; src/runtime/gpu/webgpu/tune.ts: each loop kernel's
// workgroup size, timed on the device by timestamp queries) time each call as the user sees it:
// upload, the kernels and the read-back; "device kernels" is the kernels' own time on the device
// (default / tuned, mean per call, the profiler's timestamp queries).
// `node --import tsx bench/tune.ts [filter]`; BENCH_ROUNDS (default 21), BENCH_BEAM (default 2),
// BENCH_BUDGET_MS (default 4000, per specialisation); BENCH_WEBGPU=0 leaves the WebGPU rows out.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { backend as K } from '../src/index.js';
import { setEnvironment } from '../src/api/config.js';
import type { Node } from '../src/ir/node.js';
import type { NDArray } from '../src/ir/ndarray.js';
import { clearCompileCache } from '../src/runtime/cpu/compile.js';
import { tuneStats, tuneCache } from '../src/runtime/tune.js';
import { webgpu, webgpuMissing } from '../src/runtime/gpu/webgpu/session.js';
import { webTuneCache } from '../src/runtime/gpu/webgpu/tune.js';
import { mlpGraph, nd, oneHot } from './cases.js';

interface Graph { inputs: Node[]; outputs: Node[]; updates: NonNullable<Parameters<typeof K.function>[2]>; feeds: NDArray[] }

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 21);
const BEAM = Number(process.env['BENCH_BEAM'] ?? 2);
const BUDGET = Number(process.env['BENCH_BUDGET_MS'] ?? 4000);
const CPU = process.env['BENCH_CLOCK'] === 'cpu';
const clock = (): number => {
  if (!CPU) return performance.now();
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

const dot = (n: number) => (): Graph => {
  const a = K.placeholder([n, n], null, 'float32', false, 'a');
  const b = K.placeholder([n, n], null, 'float32', false, 'b');
  return { inputs: [a, b], outputs: [K.dot(a, b)], updates: [], feeds: [nd([n, n], 3), nd([n, n], 4)] };
};

const cases: { name: string; build: () => Graph; webgpu?: true }[] = [
  { name: 'dot 256x256x256', build: dot(256) },
  { name: 'dot 512x512x512', build: dot(512) },
  { name: 'dot 1024x1024x1024', build: dot(1024) },
  {
    name: 'conv2d 8x32x32x16 -> 32, 3x3 (igemm)',
    build: () => {
      const x = K.placeholder([8, 32, 32, 16], null, 'float32');
      const w = K.variable(nd([3, 3, 16, 32], 6, -0.1, 0.1));
      return { inputs: [x], outputs: [K.conv2d(x, w, [1, 1], 'same')], updates: [], feeds: [nd([8, 32, 32, 16], 5)] };
    },
  },
  {
    name: 'elementwise tanh(x)*sigmoid(x) + exp(-x*x), 1M f32',
    build: () => {
      const x = K.placeholder([1 << 20], null, 'float32', false, 'x');
      return { inputs: [x], outputs: [K.tanh(x).mul(K.sigmoid(x)).add(K.exp(x.mul(x).neg()))], updates: [], feeds: [nd([1 << 20], 7, -3, 3)] };
    },
  },
  {
    // a JavaScript loop kernel whose output loop order is searched (src/codegen/cpu/loop-order.ts)
    name: 'transpose 2048x2048',
    build: () => {
      const x = K.placeholder([2048, 2048], null, 'float32', false, 'x');
      return { inputs: [x], outputs: [K.transpose(x)], updates: [], feeds: [nd([2048, 2048], 10)] };
    },
  },
  {
    // attention's split into heads: (batch, time, heads, depth) to (batch, heads, time, depth)
    name: 'permute (0, 2, 1, 3) 32x64x16x64, then x2',
    build: () => {
      const x = K.placeholder([32, 64, 16, 64], null, 'float32', false, 'x');
      return { inputs: [x], outputs: [K.permute_dimensions(x, [0, 2, 1, 3]).mul(2)], updates: [], feeds: [nd([32, 64, 16, 64], 11)] };
    },
  },
  {
    name: 'permute (2, 1, 0) 256x256x8',
    build: () => {
      const x = K.placeholder([256, 256, 8], null, 'float32', false, 'x');
      return { inputs: [x], outputs: [K.permute_dimensions(x, [2, 1, 0])], updates: [], feeds: [nd([256, 256, 8], 12)] };
    },
  },
  {
    name: 'MLP train step 784-256-10 b128',
    build: () => {
      const { x, t, loss, updates } = mlpGraph();
      return { inputs: [x, t], outputs: [loss], updates, feeds: [nd([128, 784], 1), oneHot(0)] };
    },
  },
  {
    name: 'gpu:webgpu elementwise tanh(x)*sigmoid(x) + exp(-x*x), 1M f32',
    webgpu: true,
    build: () => {
      const x = K.placeholder([1 << 20], null, 'float32', false, 'x');
      return { inputs: [x], outputs: [K.tanh(x).mul(K.sigmoid(x)).add(K.exp(x.mul(x).neg()))], updates: [], feeds: [nd([1 << 20], 7, -3, 3)] };
    },
  },
  {
    name: 'gpu:webgpu row sums 4096x1024',
    webgpu: true,
    build: () => {
      const x = K.placeholder([4096, 1024], null, 'float32', false, 'x');
      return { inputs: [x], outputs: [K.sum(x, 1)], updates: [], feeds: [nd([4096, 1024], 8)] };
    },
  },
  {
    name: 'gpu:webgpu softmax 512x1000',
    webgpu: true,
    build: () => {
      const x = K.placeholder([512, 1000], null, 'float32', false, 'x');
      return { inputs: [x], outputs: [K.softmax(x)], updates: [], feeds: [nd([512, 1000], 9, -3, 3)] };
    },
  },
];

/** Generated source up to the numbering of generated names (t123, i45), which differ between two compiles of one graph. */
const norm = (src: string) => src.replace(/\b([a-z])[0-9]+\b/g, '$1N');

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}

function main(): void {
  const filter = process.argv[2];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'theanine-tune-bench-'));
  /** The loop orders stored in the tuning cache file so far, by kernel key. */
  const orderEntries = (): [string, number[]][] => {
    const file = path.join(dir, 'theanine-tune.json');
    if (!fs.existsSync(file)) return [];
    const f = JSON.parse(fs.readFileSync(file, 'utf8')) as { machines: Record<string, Record<string, { order?: number[] }>> };
    return Object.values(f.machines).flatMap((m) => Object.entries(m)).flatMap(([k, e]) => (e.order !== undefined ? [[k, e.order] as [string, number[]]] : []));
  };
  setEnvironment({ THEANINE_CACHE_DIR: dir });
  tuneCache.forget();
  const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');
  console.log(`tuned vs default, cpu device (and gpu:webgpu rows), beam ${BEAM}, budget ${BUDGET} ms, ${ROUNDS} rounds, ${CPU ? 'CPU' : 'wall'} time; ${os.cpus().length} cores (${os.cpus()[0]?.model.trim()}); load average at start ${load()}`);
  console.log('| graph | default ms | tuned ms | speedup | search ms | candidates | schedules kept | code |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |');
  const noWebgpu = process.env['BENCH_WEBGPU'] === '0' ? 'BENCH_WEBGPU=0' : webgpuMissing();
  if (noWebgpu === undefined) {
    process.env['THEANINE_GPU_MODE'] = 'webgpu';
    webTuneCache(webgpu()).forget();
    console.log(`gpu:webgpu adapter: ${webgpu().description}; kernels timed by ${webgpu().timestamps ? 'timestamp queries' : 'a submit each'}`);
  }
  for (const c of cases) {
    if (filter !== undefined && !c.name.includes(filter)) continue;
    if (c.webgpu === true && noWebgpu !== undefined) { console.log(`| ${c.name} | skipped: ${noWebgpu} |`); continue; }
    clearCompileCache();
    K.clear_session();
    const g = c.build();
    const device = c.webgpu === true ? { device: 'gpu' as const } : {};
    const base = K.function(g.inputs, g.outputs, g.updates, device);
    const before = { ...tuneStats };
    const ordersBefore = new Set(orderEntries().map(([k]) => k));
    const tuned = K.function(g.inputs, g.outputs, g.updates, { ...device, tune: { beam: BEAM, budgetMs: BUDGET } });
    tuned(g.feeds); // the search runs at the first call (the specialisation)
    const searchMs = tuneStats.searchMs - before.searchMs, candidates = tuneStats.candidates - before.candidates;
    const src = tuned.source();
    const kept = [...src.matchAll(/rt\.arena\.tiles\(([^;]*)\);/g)].map((m) => {
      const args = m[1]!.split(', ');
      return args.length > 12 ? `${args[11] === 'true' ? 'split' : 'alone'} ${Number(args[12]) / 1024}K/${args[13]}/${args[14]}` : 'default';
    });
    // elementwise kernels: a tuned unroll shows as "xN" in the kernel's comment, a tuned split as a threshold of two chunks
    const ew = [...src.matchAll(/WebAssembly SIMD f(?:32x4|64x2)( x\d)?[,:]/g)].map((m) => m[1]?.trim() ?? 'x4');
    const split = (src.match(/if \(hi - lo >= 8192\) \{ w\.par/g) ?? []).length;
    // JavaScript loop kernels whose output loop order was searched (stored in the cache file): the order kept, or the default
    const orders = orderEntries().filter(([k]) => !ordersBefore.has(k)).map(([, o]) => (o.every((x, i) => x === i) ? 'default' : o.join('')));
    if (ew.length > 0) kept.push(`elementwise ${ew.join(',')}${split > 0 ? ` (${split} split)` : ''}`);
    if (orders.length > 0) kept.push(`loop order ${orders.join(',')}`);
    // WebGPU loop kernels: each one's workgroup size (the default: 64; a steps kernel: 256, not tuned)
    const wgs = [...src.matchAll(/@workgroup_size\((\d+)\)/g)].map((m) => m[1]!);
    if (c.webgpu === true) kept.push(`workgroups ${wgs.join(',')}`);
    for (let i = 0; i < 3; i++) { base(g.feeds); tuned(g.feeds); }
    const tb: number[] = [], tt: number[] = [];
    const time = (f: (x: NDArray[]) => unknown, into: number[]) => { gc(); const t0 = clock(); f(g.feeds); into.push(clock() - t0); };
    for (let r = 0; r < ROUNDS; r++) {
      if (r % 2 === 0) { time(base, tb); time(tuned, tt); } else { time(tuned, tt); time(base, tb); }
    }
    const mb = median(tb), mt = median(tt);
    if (c.webgpu === true) {
      // the kernels' own time on the device (the profiler's timestamp queries), profiled copies of both functions in alternating calls
      const pb = K.function(g.inputs, g.outputs, g.updates, { ...device, profile: true });
      const pt = K.function(g.inputs, g.outputs, g.updates, { ...device, profile: true, tune: { beam: BEAM, budgetMs: BUDGET } });
      for (let i = 0; i < 3; i++) { pb(g.feeds); pt(g.feeds); }
      pb.profile({ reset: true }); pt.profile({ reset: true });
      for (let r = 0; r < ROUNDS; r++) { if (r % 2 === 0) { pb(g.feeds); pt(g.feeds); } else { pt(g.feeds); pb(g.feeds); } }
      const kms = (f: typeof pb) => { const p = f.profile(); return p.kernels.reduce((a, k) => a + k.totalMs, 0) / p.calls; };
      // (a search the budget cut short is not stored: the profiled copy searches again, and may keep other sizes)
      const pwgs = [...pt.source().matchAll(/@workgroup_size\((\d+)\)/g)].map((m) => m[1]!);
      kept.push(`device kernels ${kms(pb).toFixed(3)} / ${kms(pt).toFixed(3)} ms${pwgs.join(',') !== wgs.join(',') ? ` (profiled copy: workgroups ${pwgs.join(',')})` : ''}`);
    }
    console.log(`| ${c.name} | ${mb.toFixed(3)} | ${mt.toFixed(3)} | ${(mb / mt).toFixed(2)}x | ${searchMs.toFixed(0)} | ${candidates} | ${kept.join('; ') || 'no whole product'} | ${norm(src) === norm(base.source()) ? 'same as default' : 'tuned'} |`);
  }
  console.log(`load average at end ${load()}; searches ${tuneStats.searches}, out of budget ${tuneStats.outOfBudget}, untimed ${tuneStats.untimed}`);
  fs.rmSync(dir, { recursive: true, force: true });
}

main();
