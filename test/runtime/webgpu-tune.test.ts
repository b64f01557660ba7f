// Autotuning on the gpu device's webgpu mode (src/runtime/gpu/webgpu/tune.ts): each loop kernel's
// workgroup size searched on the device and stored per kernel and adapter; a second compile reads
// the store and does not search; a tuned size computes elementwise values bit-identical to the
// default's and row folds within float32 rounding; a spent budget keeps the default and stores
// nothing.
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { backend as K, NDArray } from '../../src/index.js';
import { setEnvironment } from '../../src/api/config.js';
import { tuneStats } from '../../src/runtime/tune.js';
import { TUNE_CACHE_FILE, tuneCacheStats, type TunedEntry } from '../../src/runtime/tune-cache.js';
import { adapterKey, webTuneCache } from '../../src/runtime/gpu/webgpu/tune.js';
import { webgpu } from '../../src/runtime/gpu/webgpu/session.js';
import { expectClose } from '../helpers/assert.js';
import { onWebgpu } from '../helpers/webgpu.js';

describe('gpu device, webgpu mode: tuned workgroup sizes', function () {
  this.timeout(300_000);
  onWebgpu();
  let dir: string;
  const file = () => path.join(dir, TUNE_CACHE_FILE);
  const stored = (): Record<string, TunedEntry> => {
    if (!fs.existsSync(file())) return {};
    const f = JSON.parse(fs.readFileSync(file(), 'utf8')) as { machines: Record<string, Record<string, TunedEntry>> };
    return f.machines[adapterKey(webgpu())] ?? {};
  };
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'theanine-webgpu-tune-'));
    setEnvironment({ THEANINE_CACHE_DIR: dir });
    webTuneCache(webgpu()).forget();
  });
  afterEach(() => {
    setEnvironment({ THEANINE_CACHE_DIR: undefined });
    webTuneCache(webgpu()).forget();
    K.clear_session();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const n = 1 << 16;
  const v = K.placeholder([n]);
  const x = K.placeholder([64, 300]);
  const V = NDArray.from(Array.from({ length: n }, (_, i) => Math.sin(i * 0.37) * 3), 'float32');
  const X = NDArray.from(Array.from({ length: 64 * 300 }, (_, i) => Math.cos(i * 0.7) * 2), 'float32').reshape([64, 300]);
  const chain = K.tanh(v).mul(K.sigmoid(v)).add(K.exp(v.mul(v).neg())); // one invocation per element
  const rows = K.softmax(x); // one workgroup per row
  /** Source up to the numbering of generated names (t123, i45), which differ between two compiles of one graph. */
  const norm = (src: string) => src.replace(/\b([a-z])[0-9]+\b/g, '$1N');
  const run = (tune?: { beam: number; budgetMs: number }) => {
    K.clear_session(); // built again: the chooser is asked
    const f = K.function([v, x], [chain, rows], [], { device: 'gpu', ...(tune !== undefined ? { tune } : {}) });
    return { f, got: f([V, X]) };
  };

  it('searches each loop kernel once, stores the size per kernel and adapter, and a second compile reads it without searching', () => {
    const base = run();
    expect(base.f.device).to.equal('gpu:webgpu');
    const s0 = { ...tuneStats };
    const tuned = run({ beam: 1, budgetMs: 60_000 });
    expect(tuneStats.searches - s0.searches, 'a search per loop kernel').to.be.at.least(2);
    expect(tuneStats.candidates - s0.candidates, 'every size timed').to.be.at.least(2 * 5);
    const entries = Object.entries(stored());
    expect(entries.length, 'one entry per kernel searched').to.equal(tuneStats.searches - s0.searches);
    for (const [key, e] of entries) {
      expect(key).to.match(/^wgsl [0-9a-f]{8} \d+$/);
      // the sizes, and in the rows form on a CPU-emulated adapter (CI's lavapipe) also its default of one row per invocation
      expect([1, 16, 32, 64, 128, 256]).to.include((e as { workgroup: number }).workgroup);
      expect(e.candidates).to.be.oneOf([5, 6]);
    }
    expect(Array.from(tuned.got[0]!.data), 'elementwise values').to.deep.equal(Array.from(base.got[0]!.data));
    expectClose(tuned.got[1]!, base.got[1]!, { atol: 1e-6, rtol: 1e-5 }, 'softmax rows');

    webTuneCache(webgpu()).forget(); // as a new process: the file is read again
    const s1 = { ...tuneStats }, h1 = tuneCacheStats.hits;
    const again = run({ beam: 1, budgetMs: 60_000 });
    expect(tuneStats.searches - s1.searches, 'no search').to.equal(0);
    expect(tuneCacheStats.hits - h1, 'a hit per kernel').to.equal(entries.length);
    expect(norm(again.f.source()), 'the stored sizes').to.equal(norm(tuned.f.source()));
  });

  it('a stored size other than the default reaches the shader, elementwise values bit-identical, rows within rounding', () => {
    const base = run();
    run({ beam: 1, budgetMs: 60_000 }); // stores an entry per kernel
    for (const wg of [16, 256]) {
      // every kernel's stored size replaced by wg, read by the next compile
      const f = JSON.parse(fs.readFileSync(file(), 'utf8')) as { machines: Record<string, Record<string, { workgroup: number }>> };
      for (const e of Object.values(f.machines[adapterKey(webgpu())]!)) e.workgroup = wg;
      fs.writeFileSync(file(), JSON.stringify(f));
      webTuneCache(webgpu()).forget();
      const s = { ...tuneStats };
      const tuned = run({ beam: 1, budgetMs: 60_000 });
      expect(tuneStats.searches - s.searches).to.equal(0);
      expect(tuned.f.source()).to.include(`@workgroup_size(${wg})`).and.to.not.include('@workgroup_size(64)\n');
      expect(Array.from(tuned.got[0]!.data), `elementwise values, ${wg}`).to.deep.equal(Array.from(base.got[0]!.data));
      expectClose(tuned.got[1]!, base.got[1]!, { atol: 1e-6, rtol: 1e-5 }, `softmax rows, ${wg}`);
    }
  });

  it('a budget spent by the first kernel\'s default timing keeps every default and stores nothing', () => {
    const base = run();
    const s = { ...tuneStats };
    const tuned = run({ beam: 1, budgetMs: 1 });
    // The first kernel's search starts only if the 1 ms has not passed before it (a loaded machine
    // may spend it compiling): at most that search, and at most its default timed.
    expect(tuneStats.searches - s.searches, 'the first kernel only').to.be.at.most(1);
    expect(tuneStats.candidates - s.candidates, 'the default timed, no room for another').to.equal(tuneStats.searches - s.searches);
    expect(tuneStats.outOfBudget - s.outOfBudget, 'the kernels after it').to.be.at.least(1);
    expect(stored(), 'a search cut short is not stored').to.deep.equal({});
    expect(norm(tuned.f.source())).to.equal(norm(base.f.source()));
    const none = { ...tuneStats };
    run({ beam: 1, budgetMs: 0 });
    expect(tuneStats.candidates - none.candidates, 'a zero budget times nothing').to.equal(0);
  });

  it('tune on the gpu device tunes; THEANINE_BEAM reaches gpu:webgpu functions too', () => {
    setEnvironment({ THEANINE_BEAM: '1', THEANINE_BEAM_MS: '60000' });
    try {
      const s = { ...tuneStats };
      run();
      expect(tuneStats.searches - s.searches).to.be.at.least(2);
    } finally {
      setEnvironment({ THEANINE_BEAM: undefined, THEANINE_BEAM_MS: undefined });
    }
  });

  it('times by a submit per dispatch under THEANINE_WEBGPU_TIMING=submits, with the same values', () => {
    const base = run();
    setEnvironment({ THEANINE_WEBGPU_TIMING: 'submits' });
    try {
      const s = { ...tuneStats };
      const tuned = run({ beam: 1, budgetMs: 60_000 });
      expect(tuneStats.searches - s.searches).to.be.at.least(2);
      expect(Object.keys(stored()).length).to.equal(tuneStats.searches - s.searches);
      expect(Array.from(tuned.got[0]!.data)).to.deep.equal(Array.from(base.got[0]!.data));
      expectClose(tuned.got[1]!, base.got[1]!, { atol: 1e-6, rtol: 1e-5 }, 'softmax rows');
    } finally {
      setEnvironment({ THEANINE_WEBGPU_TIMING: undefined });
    }
  });
});
