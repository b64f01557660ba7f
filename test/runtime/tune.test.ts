// Kernel autotuning (src/runtime/tune.ts, tune-cache.ts): the beam search picks the fastest
// candidate and keeps the default unless beaten, stops at its budget, a search's result is
// stored on disk and read back by a later process (simulated: the process's copy is forgotten
// and the file read again), a corrupt file is discarded, and a product under any schedule
// computes bit-identical results to the untuned one (a schedule only blocks and splits work).
import { expect } from 'chai';
import { setDiskCacheDir } from '../../src/runtime/disk-cache.js';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { backend as K, NDArray } from '../../src/index.js';
import { setEnvironment } from '../../src/api/config.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';
import { setThreads } from '../../src/codegen/cpu/threads.js';
import { DEFAULT_MATMUL_SCHEDULE, type MatmulSchedule } from '../../src/codegen/cpu/strategy.js';
import { beamSearch, CONFIRM, confirmWin, ewAxes, MIN_GAIN, tuneCache, tuneOptions, tuneStats, type Axis } from '../../src/runtime/tune.js';
import { TUNE_CACHE_FILE, tuneCacheStats, type TunedEntry } from '../../src/runtime/tune-cache.js';
import type { Node } from '../../src/ir/node.js';
import { CHUNK, DEFAULT_STREAMS, EW_STREAMS, type EwPlan } from '../../src/codegen/cpu/wasm/elementwise.js';

const AXES: Axis[] = [
  { field: 'blockBytes', values: [65536, 131072, 262144, 524288] },
  { field: 'maxPanels', values: [4, 8, 16, 32] },
  { field: 'split', values: [true, false] },
  { field: 'perThread', values: [2, 4, 8] },
];

/** A made-up cost landscape: fastest at 128 KiB, 8 panels, unsplit, 4 blocks per thread. */
const landscape = (s: MatmulSchedule): number => 10 + Math.abs(Math.log2(s.blockBytes / 131072)) + Math.abs(Math.log2(s.maxPanels / 8)) + (s.split ? 0.5 : 0) + (s.perThread === 4 ? 0 : 0.2);

describe('autotuning: the beam search', () => {
  it('picks the fastest candidate, timing each schedule once and the default first', () => {
    const seen: string[] = [];
    const r = beamSearch(AXES, 2, (s) => { seen.push(JSON.stringify(s)); return landscape(s); }, Infinity);
    expect(r.best).to.deep.equal({ blockBytes: 131072, maxPanels: 8, split: false, perThread: 4 });
    expect(r.complete).to.equal(true);
    expect(seen[0]).to.equal(JSON.stringify(DEFAULT_MATMUL_SCHEDULE));
    expect(r.candidates, 'distinct schedules timed').to.equal(new Set(seen).size);
    // every schedule timed once in the search; the winner and the default CONFIRM times more, in alternating pairs
    const counts = new Map<string, number>();
    for (const k of seen) counts.set(k, (counts.get(k) ?? 0) + 1);
    expect(counts.get(JSON.stringify(r.best))).to.equal(1 + CONFIRM);
    expect(counts.get(JSON.stringify(DEFAULT_MATMUL_SCHEDULE))).to.equal(1 + CONFIRM);
    const pairs = seen.slice(r.candidates).map((k) => (k === JSON.stringify(r.best) ? 'W' : 'D')).join('');
    expect(pairs, 'ABBA: the default first in even pairs').to.equal('DWWD'.repeat(CONFIRM / 2));
    expect([...counts.values()].filter((n) => n > 1).length).to.equal(2);
    expect(r.defaultMs).to.equal(landscape(DEFAULT_MATMUL_SCHEDULE));
  });

  it('a wider beam times more candidates', () => {
    const one = beamSearch(AXES, 1, landscape, Infinity);
    const three = beamSearch(AXES, 3, landscape, Infinity);
    expect(three.candidates).to.be.greaterThan(one.candidates);
  });

  it('keeps the default when the winner of the search loses the confirming timings (a noisy low first timing)', () => {
    const times = new Map<string, number>();
    const noisy = (s: MatmulSchedule) => {
      const k = JSON.stringify(s);
      times.set(k, (times.get(k) ?? 0) + 1);
      // 64 KiB blocks look 20% faster the first time they are timed, and are 5% slower after
      return s.blockBytes === 65536 ? (times.get(k) === 1 ? 8 : 10.5) : 10;
    };
    const r = beamSearch(AXES, 1, noisy, Infinity);
    expect(r.best).to.deep.equal(DEFAULT_MATMUL_SCHEDULE);
  });

  it('keeps the default unless a candidate beats it by MIN_GAIN', () => {
    const flat = (s: MatmulSchedule) => (s === DEFAULT_MATMUL_SCHEDULE || JSON.stringify(s) === JSON.stringify(DEFAULT_MATMUL_SCHEDULE) ? 10 : 10 * (1 - MIN_GAIN / 2));
    const r = beamSearch(AXES, 2, flat, Infinity);
    expect(r.best).to.deep.equal(DEFAULT_MATMUL_SCHEDULE);
    expect(r.ms).to.equal(10);
  });

  it('a winner is kept only when faster in every confirming pair and beyond the default\'s own spread', () => {
    const d = [10, 10.2, 9.9, 10.1];
    expect(confirmWin(d.map((x) => x * 0.9), d), '10% faster, default spread 3%').to.equal(true);
    expect(confirmWin(d.map((x) => x * (1 - MIN_GAIN / 2)), d), 'within MIN_GAIN').to.equal(false);
    const wide = [10, 12, 9, 11];
    expect(confirmWin(wide.map((x) => x * 0.8), wide), '20% faster, spread 30%').to.equal(false);
    expect(confirmWin(wide.map((x) => x * 0.6), wide), '40% faster, spread 30%').to.equal(true);
    expect(confirmWin([5, 5, 11, 5], [10, 10, 10, 10]), 'slower in one pair').to.equal(false);
    expect(confirmWin([5], [10]), 'one pair is no confirmation').to.equal(false);
  });

  it('keeps the default when its timings are as noisy as the gain: a winner 10% faster against a default whose timings spread 25%', () => {
    let k = 0;
    const spread = [10, 12.5, 10.5, 11];
    const noisy = (s: MatmulSchedule) => (JSON.stringify(s) === JSON.stringify(DEFAULT_MATMUL_SCHEDULE) ? spread[k++ % 4]! : s.blockBytes === 131072 ? 9.4 : 11);
    const r = beamSearch(AXES, 1, noisy, Infinity);
    expect(r.best).to.deep.equal(DEFAULT_MATMUL_SCHEDULE);
  });

  it('keeps room in the budget for the confirmation: the budget is exceeded by one pair of timings at most', () => {
    let clock = 0;
    const cost = 7;
    const r = beamSearch(AXES, 2, (s) => { clock += cost; return landscape(s); }, 100, () => clock);
    expect(r.complete).to.equal(false);
    expect(r.searchMs).to.be.at.most(100 + 2 * cost);
    // new candidates stop once the 2 * CONFIRM confirming timings (as long as the default's) would not fit
    expect(r.candidates).to.equal(1 + Math.ceil((100 - 2 * CONFIRM * cost - cost) / cost));
    expect(r.best, 'the winner, confirmed within the budget').to.not.deep.equal(DEFAULT_MATMUL_SCHEDULE);
    const none = beamSearch(AXES, 2, (s) => { clock += cost; return landscape(s); }, clock, () => clock);
    expect(none.candidates, 'a spent budget times the default only').to.equal(1);
    expect(none.best).to.deep.equal(DEFAULT_MATMUL_SCHEDULE);
  });

  it('keeps the default when the budget ends before every confirming pair ran', () => {
    let clock = 0;
    let n = 0;
    // the default's first timing is fast (so the search reserves little), the rest are slow
    const r = beamSearch(AXES, 1, (s) => { n++; clock += n === 1 ? 1 : 20; return landscape(s); }, 60, () => clock);
    expect(r.candidates).to.be.greaterThan(1);
    expect(r.best).to.deep.equal(DEFAULT_MATMUL_SCHEDULE);
  });
});

describe('autotuning: options', () => {
  afterEach(() => setEnvironment({ THEANINE_BEAM: undefined, THEANINE_BEAM_MS: undefined }));

  it('reads tune and THEANINE_BEAM, and rejects bad values naming them', () => {
    expect(tuneOptions(undefined)).to.equal(undefined);
    expect(tuneOptions(3)).to.deep.equal({ beam: 3, budgetMs: 2000 });
    expect(tuneOptions({ budgetMs: 10 })).to.deep.equal({ beam: 2, budgetMs: 10 });
    setEnvironment({ THEANINE_BEAM: '4', THEANINE_BEAM_MS: '150' });
    expect(tuneOptions(undefined)).to.deep.equal({ beam: 4, budgetMs: 150 });
    expect(tuneOptions(false)).to.equal(undefined);
    setEnvironment({ THEANINE_BEAM: 'x' });
    expect(() => tuneOptions(undefined)).to.throw(/THEANINE_BEAM is "x"/);
    expect(() => tuneOptions(0)).to.throw(/tune must be true, false, a beam width/);
    expect(() => tuneOptions({ beam: 2, width: 3 })).to.throw(/unknown field "width"/);
    setEnvironment({ THEANINE_BEAM: undefined });
    const x = K.placeholder([4, 4]);
    setEnvironment({ THEANINE_GPU_MODE: 'webasm' });
    try {
      expect(() => K.function([x], [K.dot(x, x)], [], { tune: true, device: 'gpu' })).to.throw(/tune applies to the theanine backend's cpu device and the gpu device's webgpu mode only, got backend "theanine", device "gpu" in its gpu.js mode/);
    } finally {
      setEnvironment({ THEANINE_GPU_MODE: undefined });
    }
  });
});

describe('autotuning: compiled products', function () {
  this.timeout(60000);
  let dir: string;
  const file = () => path.join(dir, TUNE_CACHE_FILE);
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'theanine-tune-'));
    setEnvironment({ THEANINE_CACHE_DIR: dir });
    // the compile cache on disk, which the same folder turns on, would hand back tuned code without a search
    setDiskCacheDir(null);
    tuneCache.forget();
    clearCompileCache();
    setThreads(2);
  });
  afterEach(() => {
    setEnvironment({ THEANINE_CACHE_DIR: undefined });
    setDiskCacheDir(undefined);
    tuneCache.forget();
    clearCompileCache();
    setThreads(undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  // Two whole float32 products (an MLP layer and its batched form) and a convolution (igemm).
  const x = K.placeholder([96, 160]);
  const W = K.variable(NDArray.from(Array.from({ length: 160 }, (_, i) => Array.from({ length: 200 }, (_, j) => Math.sin(i * 7 + j) * 0.1)), 'float32'));
  const img = K.placeholder([2, 18, 18, 8]);
  const kern = K.variable(NDArray.from(Array.from({ length: 3 * 3 * 8 * 16 }, (_, i) => Math.cos(i) * 0.2), 'float32').reshape([3, 3, 8, 16]));
  const outs: Node[] = [K.relu(K.dot(x, W)), K.conv2d(img, kern, [1, 1], 'same')];
  const X = Array.from({ length: 96 }, (_, i) => Array.from({ length: 160 }, (_, j) => Math.cos(i * 160 + j)));
  const IMG = NDArray.from(Array.from({ length: 2 * 18 * 18 * 8 }, (_, i) => Math.sin(i * 0.37)), 'float32').reshape([2, 18, 18, 8]);
  const run = (opts: object) => K.function([x, img], outs, [], opts)([X, IMG]);

  it('searches once, stores the result on disk, and a later process reuses it without searching', () => {
    const before = { ...tuneStats };
    run({ tune: { beam: 1, budgetMs: 20000 } });
    expect(tuneStats.searches - before.searches, 'both products searched').to.equal(2);
    const stored = JSON.parse(fs.readFileSync(file(), 'utf8')) as { machines: Record<string, Record<string, TunedEntry>> };
    const entries = Object.values(stored.machines).flatMap((m) => Object.entries(m));
    expect(entries.map(([k]) => k).sort().join('\n')).to.match(/igemm/);
    for (const [, e] of entries) expect(e.candidates).to.be.greaterThan(5);
    expect(fs.readdirSync(dir).filter((f) => f.endsWith('.tmp')), 'no temporary file left').to.deep.equal([]);
    // a later process: its cache is read from the file
    tuneCache.forget();
    clearCompileCache();
    const hits = tuneCacheStats.hits, searches = tuneStats.searches;
    run({ tune: { beam: 1, budgetMs: 20000 } });
    expect(tuneStats.searches, 'no new search').to.equal(searches);
    expect(tuneCacheStats.hits - hits).to.equal(2);
  });

  it('searches a convolution read through window origins (one channel, no padding) and keeps its numbers', () => {
    const im = K.placeholder([4, 20, 20, 1]);
    const kw = K.variable(NDArray.from(Array.from({ length: 5 * 5 * 16 }, (_, i) => Math.cos(i * 0.7) * 0.2), 'float32').reshape([5, 5, 1, 16]));
    const IM = NDArray.from(Array.from({ length: 4 * 20 * 20 }, (_, i) => Math.sin(i * 0.29)), 'float32').reshape([4, 20, 20, 1]);
    const y = [K.relu(K.conv2d(im, kw, [1, 1], 'valid'))];
    const plain = K.function([im], y)([IM])[0]!.data;
    clearCompileCache();
    const before = tuneStats.searches;
    const f = K.function([im], y, [], { tune: { beam: 1, budgetMs: 20000 } });
    const got = f([IM])[0]!.data;
    expect(f.source()).to.include('rt.windowA(');
    expect(tuneStats.searches - before, 'the convolution searched').to.equal(1);
    expect(Array.from(got)).to.deep.equal(Array.from(plain));
  });

  it('a new process reads the stored schedules and does not search', () => {
    run({ tune: { beam: 1, budgetMs: 20000 } });
    const src = new URL('../../src/', import.meta.url).href;
    const code = `
      const { backend: K, NDArray } = await import('${src}index.js');
      const { tuneStats } = await import('${src}runtime/tune.js');
      const { tuneCacheStats } = await import('${src}runtime/tune-cache.js');
      const x = K.placeholder([96, 160]);
      const W = K.variable(NDArray.from(Array.from({ length: 160 }, (_, i) => Array.from({ length: 200 }, (_, j) => Math.sin(i * 7 + j) * 0.1)), 'float32'));
      K.function([x], [K.relu(K.dot(x, W))], [], { tune: { beam: 1, budgetMs: 20000 } })([Array.from({ length: 96 }, () => new Array(160).fill(0.5))]);
      console.log(JSON.stringify({ searches: tuneStats.searches, hits: tuneCacheStats.hits }));`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
      env: { ...process.env, THEANINE_CACHE_DIR: dir, THEANINE_THREADS: '2' }, encoding: 'utf8', timeout: 60000,
    });
    expect(r.status, r.stderr).to.equal(0);
    expect(JSON.parse(r.stdout.trim().split('\n').pop()!)).to.deep.equal({ searches: 0, hits: 1 });
  });

  it('discards a corrupt cache file, searches again and writes a good one', () => {
    for (const bad of ['{not json', JSON.stringify({ format: 'theanine-tune/3', machines: { m: { k: { blockBytes: -1 } } } })]) {
      fs.writeFileSync(file(), bad);
      tuneCache.forget();
      clearCompileCache();
      const discarded = tuneCacheStats.discarded, searches = tuneStats.searches;
      run({ tune: { beam: 1, budgetMs: 20000 } });
      expect(tuneCacheStats.discarded).to.be.greaterThan(discarded);
      expect(tuneStats.searches - searches).to.equal(2);
      expect(() => JSON.parse(fs.readFileSync(file(), 'utf8')) as unknown).not.to.throw();
    }
  });

  it('a spent budget leaves the default schedule and stores nothing', () => {
    const before = tuneStats.outOfBudget;
    const src = K.function([x, img], outs, [], { tune: { beam: 1, budgetMs: 0 } });
    src([X, IMG]);
    expect(tuneStats.outOfBudget - before).to.equal(2);
    expect(fs.existsSync(file())).to.equal(false);
    expect(src.source()).not.to.match(/rt\.arena\.tiles\([^)]*, (true|false), \d+, \d+, \d+\);/);
  });

  it('tunes the products of a Scan body, with bit-identical results', () => {
    const seq = K.placeholder([64, 40, 32]);
    const h0 = K.placeholder([64, 256]);
    const Wx = K.variable(NDArray.from(Array.from({ length: 32 * 256 }, (_, i) => Math.sin(i) * 0.1), 'float32').reshape([32, 256]));
    const Wh = K.variable(NDArray.from(Array.from({ length: 256 * 256 }, (_, i) => Math.cos(i) * 0.05), 'float32').reshape([256, 256]));
    const step = (xt: Node, st: Node[]): [Node, Node[]] => {
      const h = K.tanh(K.add(K.dot(xt, Wx), K.dot(st[0]!, Wh)));
      return [h, [h]];
    };
    const [last] = K.rnn(step, seq, [h0]);
    const feeds = [NDArray.from(Array.from({ length: 64 * 40 * 32 }, (_, i) => Math.sin(i * 0.11)), 'float32').reshape([64, 40, 32]), NDArray.from(Array.from({ length: 64 * 256 }, (_, i) => Math.cos(i * 0.3)), 'float32').reshape([64, 256])];
    const plain = K.function([seq, h0], [last!])(feeds);
    const searches = tuneStats.searches;
    run({ tune: { beam: 1, budgetMs: 20000 } }); // other products first: the body's must be searched on its own
    const before = tuneStats.searches;
    expect(before).to.be.greaterThan(searches);
    const productKeys = () => {
      const f = JSON.parse(fs.readFileSync(file(), 'utf8')) as { machines: Record<string, Record<string, TunedEntry>> };
      return Object.values(f.machines).flatMap((m) => Object.keys(m)).filter((k) => k.startsWith('tiles '));
    };
    const keysBefore = productKeys().length;
    const tuned = K.function([seq, h0], [last!], [], { tune: { beam: 1, budgetMs: 20000 } });
    const got = tuned(feeds);
    // (the sequence's transpose to time-major is a loop kernel whose order is searched too)
    expect(productKeys().length - keysBefore, 'the body\'s two products searched (a scan of 40 steps is not unrolled)').to.equal(2);
    expect(tuneStats.searches - before).to.be.at.least(2);
    expect(Array.from(got[0]!.data)).to.deep.equal(Array.from(plain[0]!.data));
    // forced to an extreme schedule: the same values
    const stored = JSON.parse(fs.readFileSync(file(), 'utf8')) as { machines: Record<string, Record<string, TunedEntry>> };
    tuneCache.forget();
    const s: MatmulSchedule = { blockBytes: 4096, maxPanels: 1, split: false, perThread: 4 };
    for (const m of Object.values(stored.machines)) for (const k of Object.keys(m)) tuneCache.set(k, { ...s, ms: 1, defaultMs: 1, searchMs: 1, candidates: 1 });
    clearCompileCache();
    const forced = K.function([seq, h0], [last!], [], { tune: { beam: 1, budgetMs: 0 } });
    const again = forced(feeds);
    expect(forced.source().split(', false, 4096, 1, 4);').length - 1, 'both of the body\'s products').to.equal(2);
    expect(Array.from(again[0]!.data)).to.deep.equal(Array.from(plain[0]!.data));
  });

  it('every schedule computes bit-identical results to the untuned function', () => {
    const plain = run({});
    run({ tune: { beam: 1, budgetMs: 20000 } }); // fills the cache with this machine's keys
    const schedules: MatmulSchedule[] = [
      { blockBytes: 4096, maxPanels: 1, split: true, perThread: 1 },
      { blockBytes: 4096, maxPanels: 1, split: false, perThread: 4 },
      { blockBytes: 1 << 22, maxPanels: 64, split: true, perThread: 16 },
    ];
    for (const s of schedules) {
      const stored = JSON.parse(fs.readFileSync(file(), 'utf8')) as { machines: Record<string, Record<string, TunedEntry>> };
      tuneCache.forget();
      for (const m of Object.values(stored.machines)) for (const k of Object.keys(m)) tuneCache.set(k, { ...s, ms: 1, defaultMs: 1, searchMs: 1, candidates: 1 });
      clearCompileCache();
      const f = K.function([x, img], outs, [], { tune: { beam: 1, budgetMs: 0 } });
      const got = f([X, IMG]);
      expect(f.source(), 'the schedule reaches the generated call').to.include(`, ${s.split}, ${s.blockBytes}, ${s.maxPanels}, ${s.perThread});`);
      got.forEach((g, i) => expect(Array.from(g.data), `output ${i} under ${JSON.stringify(s)}`).to.deep.equal(Array.from(plain[i]!.data)));
    }
  });

  it('searches an elementwise kernel\'s split only with worker threads, for one loop of two chunks or more', () => {
    const plan = (n: number, cols?: number) => ({ n, ...(cols !== undefined ? { cols } : {}) }) as EwPlan;
    const fields = (p: EwPlan) => ewAxes(p).map((a) => a.field);
    expect(fields(plan(1 << 15))).to.deep.equal(['streams', 'split']); // two threads (beforeEach)
    expect(fields(plan(CHUNK))).to.deep.equal(['streams']);
    expect(fields(plan(1 << 15, 64))).to.deep.equal(['streams']);
    setThreads(1);
    expect(fields(plan(1 << 15))).to.deep.equal(['streams']);
  });

  it('tunes the elementwise tier\'s unroll and thread split: searched, stored under the kernel\'s key, bit-identical under every schedule', () => {
    const v = K.placeholder([1 << 15]);
    const y = K.tanh(v).mul(K.sigmoid(v)).add(K.exp(v.mul(v).neg()));
    const V = NDArray.from(Array.from({ length: 1 << 15 }, (_, i) => Math.sin(i * 0.013) * 3), 'float32');
    const plain = K.function([v], [y])([V]);
    const before = tuneStats.searches;
    K.function([v], [y], [], { tune: { beam: 1, budgetMs: 20000 } })([V]);
    expect(tuneStats.searches - before, 'one elementwise kernel searched').to.equal(1);
    const stored = JSON.parse(fs.readFileSync(file(), 'utf8')) as { machines: Record<string, Record<string, TunedEntry>> };
    const keys = Object.values(stored.machines).flatMap((m) => Object.keys(m));
    expect(keys.length).to.equal(1);
    expect(keys[0]).to.match(/^ew [0-9a-f]{8} \d+ n32768$/);
    const schedules = [...EW_STREAMS.map((streams) => ({ streams, split: false })), { streams: DEFAULT_STREAMS, split: true }, { streams: 8, split: true }];
    for (const sch of schedules) {
      tuneCache.forget();
      tuneCache.set(keys[0]!, { ...sch, ms: 1, defaultMs: 1, searchMs: 1, candidates: 1 });
      clearCompileCache();
      const f = K.function([v], [y], [], { tune: { beam: 1, budgetMs: 0 } });
      const got = f([V]);
      const src = f.source();
      expect(src.includes(`SIMD f32x4 x${sch.streams}:`), `the unroll ${sch.streams} reaches the kernel`).to.equal(sch.streams !== DEFAULT_STREAMS);
      // two threads (beforeEach): a split schedule sends loops of two chunks and more to them
      expect(src.includes(`if (hi - lo >= ${2 * CHUNK}) { w.par(`), 'the split reaches the kernel').to.equal(sch.split);
      expect(Array.from(got[0]!.data), JSON.stringify(sch)).to.deep.equal(Array.from(plain[0]!.data));
    }
  });
});
