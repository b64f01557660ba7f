// Packs kept across calls (src/codegen/cpu/wasm-kernel.ts' KeptPack): a matrix product operand
// that is a graph constant is packed once per compiled function; one that is a variable's value
// is packed again only when the variable holds another value. Every way a variable is written
// must be seen (set_value, batch_set_value, K.function updates, a function updating what it
// reads, a twin function over other variables); float64 products are checked bit for bit against
// the reference interpreter, float32 ones with 1 and N threads against each other.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import type { Tensor } from '../../src/index.js';
import { packArena, setWasmKernel } from '../../src/codegen/cpu/wasm-kernel.js';
import { setThreads } from '../../src/codegen/cpu/threads.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';
import { MAX_SHED_SPECIALIZATIONS as MAX_SPECIALIZATIONS } from '../../src/runtime/program-cache.js';
import { mulberry32 } from '../../src/ir/random.js';
import { expectClose } from '../helpers/assert.js';
import { FLOAT32_SUM_TOL } from '../helpers/targets.js';

function fill(shape: number[], seed: number, dtype: 'float32' | 'float64' = 'float64'): NDArray {
  const r = mulberry32(seed);
  const n = shape.reduce((p, d) => p * d, 1);
  return new NDArray(dtype === 'float32' ? Float32Array.from({ length: n }, () => r() * 2 - 1) : Float64Array.from({ length: n }, () => r() * 2 - 1), shape, dtype);
}

/** Kept operands made again while `f` runs: packed, or (a few-row product's B) copied row-major (PackArena.rowsFirst). */
function madeDuring(f: () => void): number {
  const before = packArena.packsMade + packArena.rowCopies;
  f();
  return packArena.packsMade + packArena.rowCopies - before;
}

/** Kept packs made (or made again) while `f` runs. */
function packsDuring(f: () => void): number {
  const before = packArena.packsMade;
  f();
  return packArena.packsMade - before;
}

const same = (a: NDArray, b: NDArray, what: string) => expect(Array.from(a.data), what).to.deep.equal(Array.from(b.data));

describe('codegen/cpu packs kept across calls', () => {
  beforeEach(() => clearCompileCache());
  after(() => clearCompileCache());

  /** x -> relu(x . W) . C + b: W a variable, C a constant (float64: sums equal to the reference's). */
  function model(seed: number, cSeed = seed + 1) {
    const x = K.placeholder([null, 7], null, 'float64', false, 'x');
    const W = K.variable(fill([7, 6], seed), 'float64', 'W');
    const C = K.constant(fill([6, 4], cSeed), 'float64');
    const b = K.variable(fill([4], seed + 2), 'float64', 'b');
    const y = K.dot(K.relu(K.dot(x, W)), C).add(b);
    return { x, W, b, y, f: K.function([x], [y]), ref: K.function([x], [y], [], { optimizer: 'none' }) };
  }

  it('packs a constant and a variable once, and sees every write of the variable', () => {
    const m = model(1);
    const xs = fill([5, 7], 9);
    const check = (what: string) => same(m.f([xs])[0]!, m.ref([xs])[0]!, what);
    expect(packsDuring(() => check('first call')), 'W and C packed at the first call').to.equal(2);
    expect(packsDuring(() => check('second call')), 'nothing packed again').to.equal(0);
    expect(m.f.source()).to.match(/q0 = rt\.arena\.pick\(kp\[0\], cells\[\d+\]\), p0 = rt\.arena\.stale\(q0, b\d+\)/);

    K.set_value(m.W, fill([7, 6], 20));
    expect(packsDuring(() => check('after set_value')), 'W packed again after set_value').to.equal(1);
    K.batch_set_value([[m.W, fill([7, 6], 21)], [m.b, fill([4], 22)]]);
    expect(packsDuring(() => check('after batch_set_value')), 'W packed again after batch_set_value').to.equal(1);
    // an update by another function (cpu), and K.update_add's
    const scale = K.function([], [], [K.update(m.W, m.W.mul(-0.5))]);
    scale([]);
    expect(packsDuring(() => check('after another function\'s update')), 'W packed again after an update').to.equal(1);
    K.function([], [], [K.update_add(m.W, K.ones([7, 6], 'float64'))])([]);
    expect(packsDuring(() => check('after update_add')), 'W packed again after update_add').to.equal(1);
    // a function that reads W and updates it: each call sees the value the previous one left
    const selfUpdating = K.function([m.x], [m.y], [K.update(m.W, m.W.mul(1.5))]);
    for (let c = 0; c < 3; c++) {
      const want = m.ref([xs])[0]!;
      same(selfUpdating([xs])[0]!, want, `self-updating call ${c}`);
    }
    check('after the self-updating calls');
  });

  it('sees updates made by functions on the gpu device and the tensorflow backend', function () {
    this.timeout(300000);
    const x = K.placeholder([null, 7], null, 'float32', false, 'x');
    const W = K.variable(fill([7, 6], 40, 'float32'), 'float32', 'W');
    const y = K.relu(K.dot(x, W));
    const f = K.function([x], [y]);
    const ref = K.function([x], [y], [], { optimizer: 'none' });
    const xs = fill([5, 7], 41, 'float32');
    const check = (what: string) => expectClose(f([xs])[0]!, ref([xs])[0]!, FLOAT32_SUM_TOL, what);
    check('first call');
    for (const options of [{ device: 'gpu' }, { backend: 'tensorflow' }] as const) {
      const before = Array.from(K.get_value(W).data);
      K.function([], [], [K.update(W, W.mul(-0.5).add(0.25))], options)([]);
      expect(Array.from(K.get_value(W).data), `${JSON.stringify(options)} changed W`).to.not.deep.equal(before);
      expect(madeDuring(() => check(`after an update by ${JSON.stringify(options)}`)), `W made again after ${JSON.stringify(options)}`).to.equal(1);
    }
  });

  it('twin functions (one compiled program over other variables) keep a pack each, and a third takes the least recently used', () => {
    // the same constant, other variables: one compiled program
    const a = model(1, 99);
    const b = model(31, 99);
    const c = model(61, 99);
    const xs = fill([3, 7], 5);
    for (let k = 0; k < 3; k++) {
      const made = packsDuring(() => {
        same(a.f([xs])[0]!, a.ref([xs])[0]!, `a, call ${k}`);
        same(b.f([xs])[0]!, b.ref([xs])[0]!, `b, call ${k}`);
      });
      // the first round packs C once and each W; later rounds nothing
      expect(made, `packs made in round ${k}`).to.equal(k === 0 ? 3 : 0);
    }
    K.set_value(b.W, fill([7, 6], 62));
    expect(packsDuring(() => same(b.f([xs])[0]!, b.ref([xs])[0]!, 'b after set_value')), 'b\'s W packed again').to.equal(1);
    expect(packsDuring(() => same(a.f([xs])[0]!, a.ref([xs])[0]!, 'a after b\'s set_value')), 'a\'s W still kept').to.equal(0);
    // a third twin: its W takes b's place (a was used last), then b takes c's... each result still right
    for (const m of [c, b, a, c]) same(m.f([xs])[0]!, m.ref([xs])[0]!, 'third twin, in turn');
  });

  it('keeps packs through a change of arena (a plain array to WebAssembly memory, shared memory for threads, growth) and gives them back with the function', () => {
    const xs = fill([4, 7], 3);
    const big = K.placeholder([300, 300], null, 'float64');
    let m: ReturnType<typeof model>;
    let want: NDArray;
    try {
      setWasmKernel(false); // compiled for the JavaScript kernel, the arena a Float64Array
      m = model(2);
      want = m.ref([xs])[0]!;
      same(m.f([xs])[0]!, want, 'first call');
      K.function([big], [K.sum(K.dot(big, big))])([fill([300, 300], 4)]); // grows the arena (a new array)
      expect(packsDuring(() => same(m.f([xs])[0]!, want, 'after growth')), 'kept through growth').to.equal(0);
    } finally {
      setWasmKernel(true);
    }
    // the arena becomes WebAssembly memory at the next product: the kept packs are copied into it
    const g = K.function([big], [K.sum(K.dot(big, big))]);
    g([fill([300, 300], 4)]);
    expect(packsDuring(() => same(m.f([xs])[0]!, want, 'WebAssembly memory')), 'kept through the switch').to.equal(0);
    try {
      setThreads(2); // a shared memory for the worker threads
      g([fill([300, 300], 4)]);
      expect(packsDuring(() => same(m.f([xs])[0]!, want, 'shared arena')), 'kept in the shared memory').to.equal(0);
    } finally {
      setThreads(undefined);
    }
    expect(packArena.keptDoubles).to.be.greaterThan(0);
    clearCompileCache(); // clear_session: the arena and its kept packs go
    expect(packArena.keptDoubles).to.equal(0);
    expect(packArena.base).to.equal(0);
    expect(packsDuring(() => same(m.f([xs])[0]!, want, 'after clear_session')), 'packed again').to.equal(2);
  });

  it('the compile cache gives a dropped specialisation\'s packs back', () => {
    const m = model(3);
    const per = () => packArena.keptDoubles;
    m.f([fill([1, 7], 1)]);
    const one = per();
    expect(one).to.be.greaterThan(0);
    // more batch sizes than the cache keeps: the oldest specialisations (and their packs) go
    for (let n = 2; n <= MAX_SPECIALIZATIONS + 6; n++) same(m.f([fill([n, 7], n)])[0]!, m.ref([fill([n, 7], n)])[0]!, `batch ${n}`);
    expect(per()).to.be.at.most(MAX_SPECIALIZATIONS * one);
  });

  it('float32 products split over threads: the same numbers with 1 and 2 threads, from one pack', () => {
    const x = K.placeholder([256, 384], null, 'float32');
    const W = K.variable(fill([384, 256], 6, 'float32'), 'float32');
    const f = K.function([x], [K.relu(K.dot(x, W))]);
    const xs = fill([256, 384], 7, 'float32');
    try {
      setThreads(1);
      const one = f([xs])[0]!;
      setThreads(2);
      let two: NDArray | undefined;
      expect(packsDuring(() => { two = f([xs])[0]!; }), 'W\'s pack kept').to.equal(0);
      same(two!, one, '2 threads against 1');
      K.set_value(W, fill([384, 256], 8, 'float32'));
      const three = f([xs])[0]!;
      setThreads(1);
      same(f([xs])[0]!, three, 'after set_value, 1 thread against 2');
      expect(Array.from(three.data)).to.not.deep.equal(Array.from(one.data));
    } finally {
      setThreads(undefined);
    }
  });

  it('a Scan body keeps the packs of a variable and a constant across calls, and packs an input again at the next call', () => {
    const T = 11, H = 6;
    const xs = fill([3, T, H], 1);
    const x = K.placeholder([null, T, H], null, 'float64');
    const u = K.placeholder([H, H], null, 'float64');
    const scaled = (seed: number) => new NDArray(fill([H, H], seed).data.map((v) => v / H), [H, H], 'float64');
    const U = K.variable(scaled(2), 'float64');
    const C = K.constant(scaled(3), 'float64');
    const step = (xt: Tensor, [h]: Tensor[]): [Tensor, Tensor[]] => {
      const hn = K.tanh(K.dot(h!, U).add(K.dot(h!, C)).add(K.dot(xt, u)));
      return [hn, [hn]];
    };
    const h0 = K.tile(K.expand_dims(K.sum(K.zeros_like(x), [1, 2]), 1), [1, H]);
    const [last] = K.rnn(step as never, x, [h0]);
    const f = K.function([x, u], [last]);
    const ref = K.function([x, u], [last], [], { optimizer: 'none' });
    const us = [fill([H, H], 4), fill([H, H], 5)];
    same(f([xs, us[0]!])[0]!, ref([xs, us[0]!])[0]!, 'first call');
    expect(f.source()).to.match(/if \(p\d+ \|\| step === 0\) \{/); // u: made at each loop's first step
    // the second call packs u again (once, at step 0), not U or C
    expect(packsDuring(() => same(f([xs, us[1]!])[0]!, ref([xs, us[1]!])[0]!, 'another u')), 'u packed once').to.equal(1);
    K.set_value(U, scaled(6));
    expect(packsDuring(() => same(f([xs, us[1]!])[0]!, ref([xs, us[1]!])[0]!, 'another U')), 'u and U packed again').to.equal(2);
  });

  it('products that pack the same view of a variable alike share one kept pack (an unrolled loop)', () => {
    const T = 6, H = 5;
    const x = K.placeholder([3, T, H], null, 'float64');
    const U = K.variable(new NDArray(fill([H, H], 2).data.map((v) => v / H), [H, H], 'float64'), 'float64');
    const h0 = K.tile(K.expand_dims(K.sum(K.zeros_like(x), [1, 2]), 1), [1, H]);
    const step = (xt: Tensor, [h]: Tensor[]): [Tensor, Tensor[]] => { const hn = K.tanh(K.dot(h!, U).add(xt)); return [hn, [hn]]; };
    const [last] = K.rnn(step as never, x, [h0], false, null, null, true);
    const f = K.function([x], [last]);
    const ref = K.function([x], [last], [], { optimizer: 'none' });
    const xs = fill([3, T, H], 3);
    expect(packsDuring(() => same(f([xs])[0]!, ref([xs])[0]!, 'first call')), 'U packed once for every copy of the step').to.equal(1);
    expect(f.source().match(/rt\.arena\.pick\(kp\[0\]/g)?.length ?? 0, 'copies of the step reading the pack').to.be.at.least(T - 1);
    K.set_value(U, new NDArray(fill([H, H], 4).data.map((v) => v / H), [H, H], 'float64'));
    expect(packsDuring(() => same(f([xs])[0]!, ref([xs])[0]!, 'after set_value')), 'U packed again, once').to.equal(1);
  });

  it('with reuse off every call packs (what bench/ compares), with the same results', () => {
    const m = model(4);
    const xs = fill([2, 7], 8);
    const want = m.f([xs])[0]!;
    try {
      packArena.reuse = false;
      expect(packsDuring(() => same(m.f([xs])[0]!, want, 'reuse off')), 'W and C packed').to.equal(2);
    } finally {
      packArena.reuse = true;
    }
  });
});
