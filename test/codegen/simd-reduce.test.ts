// The WebAssembly SIMD tier for reductions (src/codegen/cpu/wasm/reduce.ts), against the reference
// interpreter: column reductions (folded row by row, in the reference's order) and row max/min
// are bit-identical; row sums and products fold in another order, within the bound of
// docs/numerics.md ("Reduction precision"): |got - ref| <= ulp32(ref) + 2 gamma_L(2^-53) sum |terms|.
import { expect } from 'chai';
import { setHandoffModel } from '../../src/codegen/cpu/handoff.js';
import { backend as K, NDArray } from '../../src/index.js';
import { setSimdTier } from '../../src/codegen/cpu/wasm/elementwise.js';
import { COL_BLOCK, PARALLEL_MIN_ELEMENTS, setReduceF32Elements } from '../../src/codegen/cpu/wasm/reduce.js';
import { setThreads, threadPool } from '../../src/codegen/cpu/threads.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';
import type { Node } from '../../src/ir/node.js';

const EDGES = [NaN, Infinity, -Infinity, -0, 0, 3.4e38, -3.4e38, 1e-40];

/** Deterministic values in [-scale, scale), with a spread of magnitudes; `edges`: special values at a few scattered places. */
function values(n: number, seed: number, scale = 2, edges = false): Float32Array {
  const out = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = (s / 4294967296 - 0.5) * 2 * scale * 10 ** ((i % 5) - 2);
  }
  if (edges) EDGES.forEach((v, j) => { out[(j * 7919 + 13) % n] = v; });
  return out;
}

interface Run { out: Float32Array; source: string }
function run(f: (x: Node) => Node, shape: number[], xs: Float32Array, how: 'tier' | 'js' | 'reference'): Run {
  setSimdTier(how === 'tier');
  clearCompileCache();
  try {
    const x = K.placeholder(shape, null, 'float32');
    const fn = K.function([x], [f(x)], [], how === 'reference' ? { optimizer: 'none' } : {});
    const out = fn([new NDArray(xs, shape, 'float32')])[0]!;
    return { out: out.data as Float32Array, source: how === 'reference' ? '' : (fn as unknown as { source(): string }).source() };
  } finally {
    setSimdTier(true);
    clearCompileCache();
  }
}

const ulp32 = (x: number) => {
  const a = Math.abs(Math.fround(x));
  if (a < 2 ** -126) return 2 ** -149;
  return 2 ** (Math.floor(Math.log2(a)) - 23);
};
/** Cases whose terms or results go through exp's float32 approximation (softmax's rows of elements, logsumexp). */
const APPROXIMATED = /softmax|logsumexp/;
const gamma = (n: number) => (n * 2 ** -53) / (1 - n * 2 ** -53);

/** Bit-identical, NaN matching NaN. */
function expectSame(got: Float32Array, ref: Float32Array, what: string): void {
  expect(got.length).to.equal(ref.length);
  for (let i = 0; i < got.length; i++) {
    if (!Object.is(got[i], ref[i])) expect.fail(`${what}: element ${i} is ${got[i]}, the reference's ${ref[i]}`);
  }
}

describe('codegen/cpu/wasm SIMD reduction tier', () => {
  // the hand-off model (src/codegen/cpu/handoff.ts) off: the workers take part whatever the machine's load
  before(() => setHandoffModel(false));
  after(() => setHandoffModel(undefined));
  // [name, graph, shape, bit-identical to the reference?]
  const exact: [string, (x: Node) => Node, number[]][] = [
    ['sum over axis 0 (columns)', (x) => K.sum(x, 0), [300, 77]],
    ['sum over axis 0, more columns than a block', (x) => K.sum(x, 0), [5, COL_BLOCK * 2 + 5]],
    ['mean over axis 0 of squares (a fused body)', (x) => K.mean(K.square(x), 0), [1000, 33]],
    ['sum over the middle axis of [6, 500, 37] (columns of each outer index)', (x) => K.sum(x, 1), [6, 500, 37]],
    ['mean over the middle axis, more columns than a block', (x) => K.mean(x, 1), [3, 5, COL_BLOCK + 3]],
    ['max over the middle axis with NaN, infinities and signed zeros', (x) => K.max(x, 1), [5, 200, 13]],
    ['prod over axis 0', (x) => K.prod(x.mul(0.001).add(1), 0), [200, 65]],
    ['max over axis 0, with NaN, infinities and signed zeros', (x) => K.max(x, 0), [401, 31]],
    ['max over axis 1 (rows of 301)', (x) => K.max(x, 1), [77, 301]],
    ['min over axis 1, rows of 3 (fewer pairs than accumulators)', (x) => K.min(x, 1), [4001, 3]],
    ['max over axis 1 with NaN, infinities and signed zeros', (x) => K.max(x, 1), [64, 257]],
    ['min over axis 1, rows of 66 (two values past the last f32x4)', (x) => K.min(x, 1), [200, 66]],
    ['max over axis 1 of a computed body (float64 lanes)', (x) => K.max(K.abs(x).mul(3), 1), [100, 99]],
    ['min over axis 1 with NaN, infinities and signed zeros, rows of 1024', (x) => K.min(x, 1), [16, 1024]],
  ];
  for (const [name, f, shape] of exact) {
    it(`${name}: WebAssembly, bit-identical to the reference`, () => {
      const n = shape.reduce((a, b) => a * b, 1);
      const xs = values(n, 11, 2, name.includes('NaN'));
      const got = run(f, shape, xs, 'tier');
      expect(got.source).to.include('rt.red(');
      expectSame(got.out, run(f, shape, xs, 'reference').out, name);
    });
  }

  // Row folds of sums: within the bound; `terms` gives each output's sum of |terms| (the body's values).
  const bounded: [string, (x: Node) => Node, number[], ((xs: Float32Array, shape: number[]) => number[]) | undefined][] = [
    ['sum over axis 1 (rows of 1024)', (x) => K.sum(x, 1), [100, 1024], rowAbs((v) => v)],
    ['sum over axis 1, odd rows of 301', (x) => K.sum(x, 1), [77, 301], rowAbs((v) => v)],
    ['mean over axis 1, rows of 7', (x) => K.mean(x, 1), [3000, 7], rowAbs((v) => v / 7)],
    ['prod over axis 1', (x) => K.prod(x.mul(0.01).add(1), 1), [100, 129], undefined],
    ['softmax over rows of 1000', (x) => K.softmax(x), [40, 1000], undefined],
    ['softmax over odd rows of 333', (x) => K.softmax(x), [50, 333], undefined],
    ['logsumexp over rows', (x) => K.logsumexp(x, 1), [64, 255], undefined],
  ];
  for (const [name, f, shape, abs] of bounded) {
    it(`${name}: WebAssembly, within the stated bound of the reference`, () => {
      const n = shape.reduce((a, b) => a * b, 1);
      const xs = values(n, 5);
      const got = run(f, shape, xs, 'tier');
      expect(got.source).to.include('rt.red(');
      const ref = run(f, shape, xs, 'reference').out;
      const sums = abs?.(xs, shape);
      const L = shape[1]!;
      // exp's float32 approximation (within 1 ulp of e) then a division: e's 1 ulp is up to 2 of
      // e / s (a relative 2^-23), plus the quotient's rounding: 3 ulps
      const ulps = APPROXIMATED.test(name) ? 3 : 1;
      let same = 0;
      for (let i = 0; i < ref.length; i++) {
        const bound = ulps * ulp32(ref[i]!) + 2 * gamma(L) * (sums?.[i] ?? Math.abs(ref[i]!) * L);
        const d = Math.abs(got.out[i]! - ref[i]!);
        if (!(d <= bound)) expect.fail(`${name}: element ${i} is ${got.out[i]}, the reference's ${ref[i]} (bound ${bound})`);
        if (Object.is(got.out[i], ref[i])) same++;
      }
      // float64 folds of float32 terms differ from the reference only near float32 rounding midpoints
      expect(same / ref.length).to.be.greaterThan(APPROXIMATED.test(name) ? 0.9 : 0.99);
    });
  }

  it('a column sum fused with an update that reads a vector (a bias gradient and its SGD step): bit-identical', () => {
    const [R, C] = [128, 257];
    const xs = values(R * C, 21);
    const bs = values(C, 22);
    const f = (simd: boolean, options: object) => {
      setSimdTier(simd);
      clearCompileCache();
      try {
        const x = K.placeholder([R, C], null, 'float32');
        const b = K.placeholder([C], null, 'float32');
        const fn = K.function([x, b], [b.sub(K.sum(x.mul(x), 0).mul(0.01))], [], options);
        const out = fn([new NDArray(xs, [R, C], 'float32'), new NDArray(bs, [C], 'float32')])[0]!.data as Float32Array;
        return { out, source: (fn as unknown as { source(): string }).source() };
      } finally {
        setSimdTier(true);
        clearCompileCache();
      }
    };
    const got = f(true, {});
    expect(got.source).to.include('rt.red(');
    expectSame(got.out, f(false, { optimizer: 'none' }).out, 'bias gradient step');
  });

  it('row and column max/min of signed zeros: +0 is the larger, as Math.max has it', () => {
    const [R, C] = [128, 130];
    const xs = new Float32Array(R * C);
    for (let r = 0; r < R; r++) for (let j = 0; j < C; j++) {
      // negatives (max) then zeros of both signs at places that vary by row, order included
      xs[r * C + j] = (j === r % C ? (r % 2 === 0 ? -0 : 0) : j === (r * 7 + 3) % C ? (r % 2 === 0 ? 0 : -0) : -1 - j);
    }
    for (const f of [(x: Node) => K.max(x, 1), (x: Node) => K.max(x, 0), (x: Node) => K.min(K.negative(x), 1), (x: Node) => K.min(x.mul(-1), 0)]) {
      const got = run(f, [R, C], xs, 'tier');
      expect(got.source).to.include('rt.red(');
      expectSame(got.out, run(f, [R, C], xs, 'reference').out, 'signed zeros');
    }
  });

  it('softmax and logsumexp of the same rows (one shared row max: kernels reading a value per row) within the bound', () => {
    const [R, L] = [300, 257];
    const xs = values(R * L, 17);
    const f = (how: 'tier' | 'reference') => {
      setSimdTier(how === 'tier');
      clearCompileCache();
      try {
        const x = K.placeholder([R, L], null, 'float32');
        const fn = K.function([x], [K.softmax(x), K.logsumexp(x, 1)], [], how === 'reference' ? { optimizer: 'none' } : {});
        const outs = fn([new NDArray(xs, [R, L], 'float32')]).map((o) => o.data as Float32Array);
        return { outs, source: how === 'tier' ? (fn as unknown as { source(): string }).source() : '' };
      } finally {
        setSimdTier(true);
        clearCompileCache();
      }
    };
    const got = f('tier');
    const ref = f('reference').outs;
    // every kernel of both in the tier (max; exp(x - max) with the max read per row; sum and division; logsumexp's folds)
    expect(got.source.match(/function k\d+/g)!.length).to.equal(got.source.match(/rt\.red\(/g)!.length);
    got.outs.forEach((g, k) => {
      let same = 0;
      for (let i = 0; i < g.length; i++) {
        const d = Math.abs(g[i]! - ref[k]![i]!);
        if (!(d <= 3 * ulp32(ref[k]![i]!) + 2 * gamma(L) * Math.abs(ref[k]![i]!) * L)) expect.fail(`output ${k}, element ${i}: ${g[i]} against ${ref[k]![i]}`);
        if (Object.is(g[i], ref[k]![i])) same++;
      }
      expect(same / g.length).to.be.greaterThan(0.9);
    });
  });

  // folds of a whole vector: chunks of the tier folded into float64 partials, then the partials in order
  const whole: [string, (x: Node) => Node, number[], boolean][] = [
    ['sum of every element, a last chunk of 9', (x) => K.sum(x), [3, 4099], false],
    ['mean of squares of every element, whole chunks only', (x) => K.mean(K.square(x)), [4, 4096], false],
    ['max of every element, with NaN, infinities and signed zeros', (x) => K.max(x), [5, 3001], true],
    ['min of every element', (x) => K.min(x), [7, 2001], true],
    ['sum and max of every element in one kernel (sum minus max)', (x) => K.sum(x).sub(K.max(x)), [9, 1001], false],
  ];
  for (const [name, f, shape, identical] of whole) {
    it(`${name}: WebAssembly, ${identical ? 'bit-identical to' : 'within the stated bound of'} the reference`, () => {
      const n = shape.reduce((a, b) => a * b, 1);
      const xs = values(n, 19, 2, name.includes('NaN'));
      const got = run(f, shape, xs, 'tier');
      expect(got.source).to.include('rt.red(');
      const ref = run(f, shape, xs, 'reference').out;
      if (identical) { expectSame(got.out, ref, name); return; }
      let abs = 0;
      for (const v of xs) abs += name.includes('squares') ? v * v / n : Math.abs(v);
      const d = Math.abs(got.out[0]! - ref[0]!);
      expect(d, `${got.out[0]} against ${ref[0]}`).to.be.at.most(ulp32(ref[0]!) + 2 * gamma(n) * abs + (name.includes('max') ? ulp32(ref[0]!) : 0));
    });
  }

  it('rows of elements in float64 lanes (the float32 form off): softmax within 1 ulp, and the float32 form within 3', () => {
    const shape = [60, 1001];
    const xs = values(60 * 1001, 23);
    const ref = run((x) => K.softmax(x), shape, xs, 'reference').out;
    for (const [f32, ulps] of [[false, 1], [true, 3]] as const) {
      setReduceF32Elements(f32);
      try {
        const got = run((x) => K.softmax(x), shape, xs, 'tier');
        expect(got.source).to.include('rt.red(');
        for (let i = 0; i < ref.length; i++) {
          if (!(Math.abs(got.out[i]! - ref[i]!) <= ulps * ulp32(ref[i]!) + 1e-12 * Math.abs(ref[i]!))) expect.fail(`float32 form ${f32}: element ${i} is ${got.out[i]}, the reference's ${ref[i]}`);
        }
      } finally {
        setReduceF32Elements(true);
      }
    }
  });

  it('a row sum whose exact value needs the float64 fold: cancellation stays within the bound', () => {
    const L = 1024;
    const xs = new Float32Array(16 * L);
    for (let r = 0; r < 16; r++) for (let j = 0; j < L; j++) xs[r * L + j] = (j % 2 === 0 ? 1e8 : -1e8) + (j % 3) * 0.25;
    const got = run((x) => K.sum(x, 1), [16, L], xs, 'tier');
    const ref = run((x) => K.sum(x, 1), [16, L], xs, 'reference').out;
    expect(got.source).to.include('rt.red(');
    // the exact sums are representable; both fold in float64 without error here
    expectSame(got.out, ref, 'cancelling row sums');
  });

  // 2 threads only: the pool is the process's, and test/codegen/threads.test.ts counts the workers it starts
  it('splits long row kernels with an approximation over the threads: the same numbers with 1 and 2 threads', async () => {
    const L = 333;
    const rows = Math.ceil(PARALLEL_MIN_ELEMENTS / L) + 77; // past the split threshold, an edge block
    const xs = values(rows * L, 13);
    const bias = values(L, 14);
    const build = () => {
      const x = K.placeholder([rows, L], null, 'float32');
      const b = K.placeholder([L], null, 'float32');
      // softmax's two kernels (max + exp: split; sum + division: no approximation, not split) and a
      // row kernel reading a broadcast row (x + b) with one value per row (logsumexp)
      const f = K.function([x, b], [K.softmax(x), K.logsumexp(x.add(b), 1)]);
      return { run: () => f([new NDArray(xs, [rows, L], 'float32'), new NDArray(bias, [L], 'float32')]).map((r) => r.data as Float32Array), source: (f as unknown as { source(): string }).source() };
    };
    try {
      setThreads(1);
      clearCompileCache();
      const one = build();
      expect(one.source).to.contain('rt.red(');
      expect(one.source).to.not.contain('w.par(');
      const want = one.run();
      for (const t of [2]) {
        setThreads(t);
        clearCompileCache();
        const many = build();
        expect(many.source).to.contain('w.par(');
        const pool = () => threadPool() as unknown as { workerChunks: number } | undefined;
        const before = pool()?.workerChunks ?? 0;
        let got = many.run();
        for (let i = 0; i < 200 && (pool()?.workerChunks ?? 0) === before; i++) {
          await new Promise((r) => setTimeout(r, 20));
          got = many.run();
        }
        expect(pool()!.workerChunks, `${t} threads: blocks computed by workers`).to.be.greaterThan(before);
        got.forEach((g, i) => expectSame(g, want[i]!, `output ${i}, ${t} threads`));
      }
    } finally {
      setThreads(undefined);
      clearCompileCache();
    }
  });

  it('leaves short reductions and float64 ones to JavaScript', () => {
    const small = run((x) => K.sum(x, 1), [10, 10], values(100, 3), 'tier');
    expect(small.source).to.not.include('rt.red(');
    setSimdTier(true);
    clearCompileCache();
    const x = K.placeholder([256, 256], null, 'float64');
    const fn = K.function([x], [K.sum(x, 0)]);
    expect((fn as unknown as { source(): string }).source()).to.not.include('rt.red(');
  });

  it('gives the same values as the JavaScript kernels when the tier is off', () => {
    const shape = [513, 129];
    const xs = values(513 * 129, 9);
    for (const f of [(x: Node) => K.sum(x, 0), (x: Node) => K.max(x, 1), (x: Node) => K.softmax(x)]) {
      const on = run(f, shape, xs, 'tier');
      const off = run(f, shape, xs, 'js');
      expect(off.source).to.not.include('rt.red(');
      const d = on.out.reduce((m, v, i) => Math.max(m, Math.abs(v - off.out[i]!)), 0);
      expect(d).to.be.at.most(1e-6);
    }
  });
});

/** Per row of a [rows, cols] input: the sum of |term(x)| over the row. */
function rowAbs(term: (v: number) => number): (xs: Float32Array, shape: number[]) => number[] {
  return (xs, [rows, cols]) => Array.from({ length: rows! }, (_, r) => {
    let s = 0;
    for (let j = 0; j < cols!; j++) s += Math.abs(term(xs[r * cols! + j]!));
    return s;
  });
}
