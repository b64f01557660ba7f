// Autotuning the order of a JavaScript loop kernel's output loops (src/codegen/cpu/loop-order.ts,
// src/runtime/tune.ts loopOrder): only kernels whose order cannot change a value are reordered
// (no scatter, no accumulation, no in-place read), every candidate order computes bit-identical
// results, the search's choice is stored under the kernel's key and a stored order reaches the
// generated loops.
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { backend as K, NDArray } from '../../src/index.js';
import type { Node } from '../../src/ir/node.js';
import { setEnvironment } from '../../src/api/config.js';
import { setDiskCacheDir } from '../../src/runtime/disk-cache.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';
import { lower } from '../../src/codegen/lower/lower.js';
import type { LoopKernel, Program } from '../../src/codegen/kernel/ir.js';
import { IExpr } from '../../src/codegen/kernel/index-expr.js';
import { runPasses } from '../../src/passes/pass.js';
import { pipeline } from '../../src/passes/pipeline.js';
import { CPU_TILE, cpuFusion } from '../../src/runtime/cpu/fusion.js';
import { LOOP_TIMED_ELEMENTS, loopOrders, loopRunner, reorderable, reorderLoops } from '../../src/codegen/cpu/loop-order.js';
import { LOOP_TUNED_FROM, loopAxes, loopTimer, tuneCache, tuneStats } from '../../src/runtime/tune.js';
import { TUNE_CACHE_FILE, type TunedEntry } from '../../src/runtime/tune-cache.js';

function program(inputs: Node[], outputs: Node[]): Program {
  const g = runPasses(pipeline('fast_run', cpuFusion), { outputs }, { verify: true });
  return lower({
    targets: g.outputs,
    inputSlot: new Map(inputs.map((n, i) => [n, i])),
    variableSlot: new Map(),
    inputShapes: inputs.map((n) => n.shape as number[]),
    tile: CPU_TILE,
  });
}
const loops = (p: Program): LoopKernel[] => p.steps.filter((s): s is LoopKernel => s.kind === 'loop');

describe('autotuning: loop order, which kernels', () => {
  it('a transpose (one read, one write per element) may be reordered; a one-loop kernel may not', () => {
    const x = K.placeholder([30, 40]);
    const t = loops(program([x], [K.permute_dimensions(x, [1, 0])]));
    expect(t.length).to.equal(1);
    expect(t[0]!.vars.length).to.equal(2);
    expect(reorderable(t[0]!)).to.equal(true);
    const e = loops(program([x], [K.exp(x)]));
    expect(e.map((k) => k.vars.length)).to.deep.equal([1]); // collapsed to one flat loop
    expect(reorderable(e[0]!)).to.equal(false);
  });

  it('a scatter (data-chosen rows, accumulated) may not be reordered: several iterations add into one element', () => {
    const w = K.placeholder([50, 8]);
    const ids = K.placeholder([64], null, 'int32');
    const [g] = K.gradients(K.sum(K.gather(w, ids).mul(K.gather(w, ids))), [w]);
    const ks = loops(program([w, ids], [g!]));
    const scatters = ks.filter((k) => k.stores.some((s) => s.accumulate === true || s.dyn !== undefined));
    expect(scatters.length, 'the gradient of gather scatters').to.be.greaterThan(0);
    for (const k of scatters) expect(reorderable(k), k.label).to.equal(false);
  });

  it('a store that writes one element from several iterations (its index misses a loop) may not be reordered', () => {
    const x = K.placeholder([30, 40]);
    const k = loops(program([x], [K.permute_dimensions(x, [1, 0])]))[0]!;
    const s = k.stores[0]!;
    // the same kernel, its store's index without the outer loop's term: 30 iterations write each element
    const outer = k.vars[0]!;
    const dropped = { ...s, index: new IExpr(s.index.terms.filter(([a]) => !(a.kind === 'var' && a.v.id === outer.id)), s.index.c) };
    expect(reorderable({ ...k, stores: [dropped] })).to.equal(false);
    // and a kernel that reads the buffer it writes (the transpose in place)
    const v = s.value;
    expect(v.t).to.equal('load');
    expect(reorderable({ ...k, stores: [{ ...s, buf: v.t === 'load' ? v.buf : -1 }] })).to.equal(false);
    // and two stores into one buffer (the transpose written twice)
    expect(reorderable({ ...k, stores: [s, s] })).to.equal(false);
  });

  it('candidates: every order up to 4 loops, each loop innermost and the reverse past that; reorderLoops checks its order', () => {
    expect(loopOrders(2)).to.deep.equal([[0, 1], [1, 0]]);
    expect(loopOrders(3).length).to.equal(6);
    expect(loopOrders(4).length).to.equal(24);
    const five = loopOrders(5);
    expect(five[0]).to.deep.equal([0, 1, 2, 3, 4]);
    expect(five.map((o) => o.at(-1)).sort()).to.deep.equal([0, 0, 1, 2, 3, 4]); // identity, four moved innermost, reversed
    expect(new Set(five.map((o) => o.join())).size).to.equal(five.length);
    const x = K.placeholder([30, 40]);
    const k = loops(program([x], [K.permute_dimensions(x, [1, 0])]))[0]!;
    expect(reorderLoops(k, [1, 0]).vars.map((v) => v.id)).to.deep.equal([k.vars[1]!.id, k.vars[0]!.id]);
    expect(() => reorderLoops(k, [0, 0])).to.throw(/not an order of 2 loops/);
    expect(loopAxes(k)[0]!.values).to.deep.equal([[0, 1], [1, 0]]);
  });
});

describe('autotuning: loop order, timing', () => {
  it('a long kernel is timed over its first outer rows, its share of the elements stated; a short one whole', () => {
    const x = K.placeholder([1024, 512]);
    const p = program([x], [K.permute_dimensions(x, [1, 0])]);
    const k = loops(p)[0]!;
    const r = loopRunner(k, p.buffers);
    for (const order of [[0, 1], [1, 0]]) {
      const { run, share } = r(order);
      const outer = k.vars[order[0]!]!.size;
      expect(share).to.equal(Math.ceil((outer * LOOP_TIMED_ELEMENTS) / (1024 * 512)) / outer);
      expect(share).to.be.lessThan(1);
      run();
    }
    const y = K.placeholder([40, 30]);
    const q = program([y], [K.permute_dimensions(y, [1, 0])]);
    expect(loopRunner(loops(q)[0]!, q.buffers)([1, 0]).share).to.equal(1);
  });

  it('a gather (rows read by data, integer buffers) is timed with its rows in range', () => {
    const w = K.placeholder([50, 64]);
    const ids = K.placeholder([512], null, 'int32');
    const p = program([w, ids], [K.tanh(K.gather(w, ids))]);
    const ks = loops(p).filter(reorderable);
    expect(ks.length).to.be.greaterThan(0);
    for (const k of ks) for (const order of loopOrders(k.vars.length)) expect(loopTimer(k, p.buffers)({ order })).to.be.finite;
  });
});

describe('autotuning: loop order, compiled', function () {
  this.timeout(120000);
  let dir: string;
  const file = () => path.join(dir, TUNE_CACHE_FILE);
  const stored = (): [string, TunedEntry][] => {
    const f = JSON.parse(fs.readFileSync(file(), 'utf8')) as { machines: Record<string, Record<string, TunedEntry>> };
    return Object.values(f.machines).flatMap((m) => Object.entries(m));
  };
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'theanine-tune-order-'));
    setEnvironment({ THEANINE_CACHE_DIR: dir });
    setDiskCacheDir(null);
    tuneCache.forget();
    clearCompileCache();
  });
  afterEach(() => {
    setEnvironment({ THEANINE_CACHE_DIR: undefined });
    setDiskCacheDir(undefined);
    tuneCache.forget();
    clearCompileCache();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  // Two kernels of three output loops each (every one of their 6 orders a candidate): a permutation
  // of float64 values with an elementwise function after it, and a float32 sum over a permuted
  // axis (its reduction's own loop keeps its order inside whichever output loop is innermost, so
  // its sums are the same).
  const x = K.placeholder([24, 20, 36], null, 'float64');
  const x4 = K.placeholder([16, 32, 8, 40]);
  const outs: Node[] = [K.tanh(K.permute_dimensions(x, [0, 2, 1])).mul(2), K.sum(K.permute_dimensions(x4, [3, 1, 0, 2]), 3)];
  const X = NDArray.from(Array.from({ length: 24 * 20 * 36 }, (_, i) => Math.sin(i * 0.37) * 3), 'float64').reshape([24, 20, 36]);
  const X4 = NDArray.from(Array.from({ length: 16 * 32 * 8 * 40 }, (_, i) => Math.cos(i * 0.13) * 2), 'float32').reshape([16, 32, 8, 40]);
  const feeds = [X, X4];
  const loopKeys = () => stored().filter(([k]) => k.startsWith('loop ')).map(([k]) => k);
  /** The generated kernels' sources, up to the numbering of generated names. */
  const kernels = (src: string) => src.split('"use strict"')[0]!.replace(/\b([a-z])\d+\b/g, '$1N');

  it('searches each reorderable kernel once, stores its order under the kernel\'s key, and a later compile reuses it', () => {
    expect(24 * 20 * 36).to.be.at.least(LOOP_TUNED_FROM);
    const before = tuneStats.searches;
    const plain = K.function([x, x4], outs)(feeds);
    const got = K.function([x, x4], outs, [], { tune: { beam: 2, budgetMs: 20000 } })(feeds);
    expect(tuneStats.searches - before, 'a search per loop kernel').to.equal(2);
    const entries = stored();
    expect(entries.map(([k]) => k.replace(/[0-9a-f]{8} \d+/, 'D'))).to.deep.equal(['loop D v3', 'loop D v3']);
    for (const [, e] of entries) {
      expect('order' in e && [...e.order].sort().join()).to.equal('0,1,2');
      expect(e.candidates, 'every order of its three loops timed').to.equal(6);
    }
    got.forEach((g, i) => expect(Array.from(g.data), `output ${i}`).to.deep.equal(Array.from(plain[i]!.data)));
    clearCompileCache();
    const s = tuneStats.searches;
    K.function([x, x4], outs, [], { tune: { beam: 2, budgetMs: 20000 } })(feeds);
    expect(tuneStats.searches, 'no new search: both orders read from the cache').to.equal(s);
  });

  it('every order reaches the generated loops and computes bit-identical results', () => {
    const base = K.function([x, x4], outs);
    const plain = base(feeds);
    K.function([x, x4], outs, [], { tune: { beam: 1, budgetMs: 20000 } })(feeds);
    const keys = loopKeys();
    expect(keys.length).to.equal(2);
    const seen = new Set<string>();
    for (const order of loopOrders(3)) {
      tuneCache.forget();
      for (const k of keys) tuneCache.set(k, { order, ms: 1, defaultMs: 1, searchMs: 1, candidates: 1 });
      clearCompileCache();
      const f = K.function([x, x4], outs, [], { tune: { beam: 1, budgetMs: 0 } });
      const got = f(feeds);
      const src = kernels(f.source());
      if (order.join() === '0,1,2') expect(src, 'the own order is the untuned code').to.equal(kernels(base.source()));
      seen.add(src);
      got.forEach((g, i) => expect(Array.from(g.data), `output ${i} in order ${order.join()}`).to.deep.equal(Array.from(plain[i]!.data)));
    }
    expect(seen.size, 'six orders, six loop nests').to.equal(6);
  });

  it('a stored order changes the loop nest: the transpose\'s outer loop follows it', () => {
    const y = K.placeholder([200, 120], null, 'float64');
    const Y = NDArray.from(Array.from({ length: 200 * 120 }, (_, i) => Math.cos(i * 0.11)), 'float64').reshape([200, 120]);
    const out = [K.permute_dimensions(y, [1, 0])];
    const plain = K.function([y], out);
    const ref = plain([Y])[0]!;
    K.function([y], out, [], { tune: { beam: 1, budgetMs: 20000 } })([Y]);
    const [key] = stored().filter(([k]) => k.startsWith('loop ')).map(([k]) => k);
    expect(key, 'the transpose searched').to.not.equal(undefined);
    const inner = (src: string) => [...src.matchAll(/for \(let i\d+ = 0; i\d+ < (\d+);/g)].map((m) => Number(m[1]));
    const own = inner(plain.source());
    for (const order of [[0, 1], [1, 0]]) {
      tuneCache.forget();
      tuneCache.set(key!, { order, ms: 1, defaultMs: 1, searchMs: 1, candidates: 1 });
      clearCompileCache();
      const f = K.function([y], out, [], { tune: { beam: 1, budgetMs: 0 } });
      const got = f([Y])[0]!;
      expect(Array.from(got.data)).to.deep.equal(Array.from(ref.data));
      const sizes = inner(f.source());
      if (order[0] === 0) expect(sizes).to.deep.equal(own);
      else expect(sizes).to.not.deep.equal(own);
    }
  });
});
