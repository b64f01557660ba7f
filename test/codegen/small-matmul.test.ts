// Products of few rows (src/codegen/cpu/small-matmul.ts, ../wasm/rows.ts' rows32): every element
// within the float32 bound of docs/numerics.md against the reference interpreter (float64 sums),
// |C - C_ref| <= gamma_K * sum_t |a_it||b_tj| + u |C_ref|, gamma_K = K u / (1 - K u), u = 2^-24;
// equal bit for bit to the JavaScript kernel (the cpu's other tier) and to the 8 x 4 tile's sums,
// with 1 and 2 threads; at 1, 2, 31, 32 rows (rows32) and 33 (the tiles), K and N not multiples
// of 4, with bias and relu epilogues and operands read through a prologue, a slice or a transpose.
// B read row-major (axpy32: a placeholder's B, and a kept B until packing pays) sums as rows32 on
// B's panels does, bit for bit.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import { setEnvironment } from '../../src/api/config.js';
import { packArena, setMatmulFma, setWasmKernel } from '../../src/codegen/cpu/wasm-kernel.js';
import { setThreads, threadPool } from '../../src/codegen/cpu/threads.js';
import { setHandoffModel } from '../../src/codegen/cpu/handoff.js';
import { WA } from '../../src/codegen/cpu/wasm/encode.js';
import { rowsModuleBytes, SMALL_ROWS_MAX } from '../../src/codegen/cpu/wasm/rows.js';
import { panelsAfter } from '../../src/codegen/cpu/small-matmul.js';
import { matmulModuleBytes } from '../../src/codegen/cpu/wasm/matmul.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';
import { mulberry32 } from '../../src/ir/random.js';
import type { Node } from '../../src/ir/node.js';

const U = 2 ** -24;

/** Values in [-1, 1) with a spread of magnitudes, exactly float32. */
function fill(shape: number[], seed: number): NDArray {
  const r = mulberry32(seed);
  return new NDArray(Float32Array.from({ length: shape.reduce((p, d) => p * d, 1) }, () => (r() * 2 - 1) * (r() < 0.2 ? 64 : 1)), shape);
}

/** Each element of a (M x K) . b (K x N) as computed (`got`) within the bound of the reference's (`want`). */
function expectWithinBound(got: ArrayLike<number>, want: ArrayLike<number>, a: ArrayLike<number>, b: ArrayLike<number>, M: number, Kd: number, N: number, what: string): void {
  const gamma = (Kd * U) / (1 - Kd * U);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let s = 0;
      for (let t = 0; t < Kd; t++) s += Math.abs(a[i * Kd + t]! * b[t * N + j]!);
      const err = Math.abs(got[i * N + j]! - want[i * N + j]!);
      const bound = gamma * s + U * Math.abs(want[i * N + j]!);
      if (!(err <= bound)) expect.fail(`${what}: element (${i}, ${j}) is ${got[i * N + j]}, the reference's ${want[i * N + j]}: error ${err} over the bound ${bound}`);
    }
  }
}

function float32<T>(f: () => T): T {
  setEnvironment({ THEANINE_MATMUL_PRECISION: 'float32' });
  clearCompileCache();
  try {
    return f();
  } finally {
    setEnvironment({ THEANINE_MATMUL_PRECISION: undefined });
    clearCompileCache();
  }
}

/**
 * The products of M rows of one case: x . w, relu(x . w + b), softmax(relu(x . w + b) . v + c)
 * (an MLP's inference: the second product's A is the first one's epilogue, read through its
 * prologue), relu(x) . w (A through a prologue), x[:, 1:K+1] . w (A a slice: rows K + 2 apart),
 * transpose(xt) . w (A strided along K) and x . transpose(wt).
 */
function run(optimizer: 'fast_run' | 'none', M: number, Kd: number, N: number): { outs: NDArray[]; source: string; x: NDArray; w: NDArray } {
  const x = fill([M, Kd], M + 1), w = fill([Kd, N], Kd + 2), b = fill([N], N + 3), v = fill([N, 7], 5), c = fill([7], 6);
  const xw = fill([M, Kd + 2], M + 7), xt = fill([Kd, M], M + 8), wt = fill([N, Kd], N + 9);
  const ph = (sh: number[]) => K.placeholder(sh, null, 'float32');
  const [px, pw, pb, pv, pc, pxw, pxt, pwt] = [[M, Kd], [Kd, N], [N], [N, 7], [7], [M, Kd + 2], [Kd, M], [N, Kd]].map(ph) as Node[];
  const h = K.relu(K.dot(px!, pw!).add(pb!));
  const f = K.function([px!, pw!, pb!, pv!, pc!, pxw!, pxt!, pwt!], [
    K.dot(px!, pw!), h, K.softmax(K.dot(h, pv!).add(pc!)), K.dot(K.relu(px!), pw!),
    K.dot(K.slice(pxw!, [0, 1], [M, Kd]), pw!), K.dot(K.transpose(pxt!), pw!), K.dot(px!, K.transpose(pwt!)),
  ], [], { optimizer });
  return { outs: f([x, w, b, v, c, xw, xt, wt]), source: f.source(), x, w };
}

const SHAPES: [number, number, number][] = [[1, 37, 13], [2, 301, 29], [31, 129, 37], [32, 784, 10], [33, 45, 17], [1, 1, 5], [3, 5, 1], [7, 66, 70]];

describe('codegen/cpu products of few rows (rows32)', function () {
  this.timeout(120000);
  beforeEach(() => { setHandoffModel(false); setMatmulFma(false); });
  afterEach(() => { setWasmKernel(true); setMatmulFma(undefined); setThreads(undefined); setHandoffModel(undefined); });

  for (const [M, Kd, N] of SHAPES) {
    it(`${M}x${Kd}x${N}: ${M <= SMALL_ROWS_MAX ? 'rows32' : 'the tile kernel'}, within the bound of the reference, equal to the JavaScript tier bit for bit, with 1 and 2 threads`, () => {
      setWasmKernel(true);
      const want = float32(() => run('none', M, Kd, N));
      const got = float32(() => run('fast_run', M, Kd, N));
      if (M <= SMALL_ROWS_MAX) {
        expect(got.source).to.contain('rt.rows32(');
        // A contiguous along K is copied row by row into the arena, not packed into panels
        expect(got.source).to.contain('rt.rowsA(');
        // x . w: B (a placeholder) copied row-major and read so (axpy32); x . transpose(wt): B's panels
        expect(got.source).to.contain('rt.rowsB(');
        expect(got.source).to.match(/rt\.rows32\(([^,;]*,){8} 1\);/);
        if (Kd > 1 && N > 1) expect(got.source).to.match(/rt\.rows32\(([^,;]*,){7}[^,;]*\);/);
        expect(got.source).to.not.contain('rt.arena.tiles(');
        // relu(x) . w: A's prologue evaluated into its rows by the SIMD tier where the loop is long enough
        if (M * Kd >= 8192) expect(got.source).to.match(/WebAssembly SIMD f32x4(, \d+ rows of \d+)?: pack A rows/);
      } else {
        expect(got.source).to.not.contain('rt.rows32(');
      }
      expectWithinBound(got.outs[0]!.data, want.outs[0]!.data, got.x.data, got.w.data, M, Kd, N, 'x . w');
      // the epilogue on the float32 sums: relu(x . w + b) rounded once after the bias, as the reference does
      const bias = fill([N], N + 3);
      const fused = Float32Array.from(got.outs[0]!.data, (s, i) => Math.max(0, Math.fround(s + bias.data[i % N]!)));
      expect(Array.from(got.outs[1]!.data), 'relu(x . w + b)').to.deep.equal(Array.from(fused));
      // the rest: the same sums whichever way the operand is read (prologue, slice, transpose)
      for (const i of [2, 3, 4, 5, 6]) {
        const g = got.outs[i]!.data, r = want.outs[i]!.data;
        for (let j = 0; j < g.length; j++) expect(Math.abs(g[j]! - r[j]!), `output ${i} element ${j}`).to.be.at.most(1e-4 * (1 + Math.abs(r[j]!)) * Math.sqrt(Kd));
      }
      expect(Array.from(got.outs[4]!.data), 'x[:, 1:K+1] . w').to.have.length(M * N);
      setWasmKernel(false);
      const js = float32(() => run('fast_run', M, Kd, N));
      expect(js.source).to.not.contain('rt.rows32(');
      got.outs.forEach((g, i) => expect(Array.from(g.data), `output ${i}: WebAssembly vs JavaScript`).to.deep.equal(Array.from(js.outs[i]!.data)));
      setWasmKernel(true);
      setThreads(2);
      const two = float32(() => run('fast_run', M, Kd, N));
      got.outs.forEach((g, i) => expect(Array.from(g.data), `output ${i}: 2 threads`).to.deep.equal(Array.from(two.outs[i]!.data)));
    });
  }

  it('rows32 sums every row group (4, 2, 1 rows) and panel pass (8, 4, 2, 1 panels) as the 8 x 4 tile does, bit for bit', () => {
    const mem = new WA!.Memory({ initial: 16 });
    const rows = new WA!.Instance(new WA!.Module(rowsModuleBytes(false, false)), { env: { mem } }).exports['rows32'] as (...a: number[]) => void;
    const mm = new WA!.Instance(new WA!.Module(matmulModuleBytes(false, false)), { env: { mem } }).exports['panelBlock32r'] as (...a: number[]) => void;
    const f = new Float32Array(mem.buffer);
    const r = mulberry32(3);
    for (const [M, Kd, NP] of [[7, 13, 15], [1, 3, 1], [32, 9, 9], [6, 1, 3], [5, 0, 2]] as [number, number, number][]) {
      const [pa, pb, acc, pt, acct] = [0, 65536, 131072, 196608, 262144].map((o) => o / 4) as [number, number, number, number, number];
      f.fill(0);
      for (let i = 0; i < M * Kd; i++) f[pa + i] = Math.fround(r() * 2 - 1);
      for (let i = 0; i < NP * Kd * 4; i++) f[pb + i] = Math.fround(r() * 2 - 1);
      rows(pa * 4, Kd * 4, pb * 4, Kd, acc * 4, NP * 16, M, NP);
      // the same rows packed into 8-row panels (row r of step t at 4(8t + r)) for the tile kernel
      const MP = Math.ceil(M / 8);
      for (let i = 0; i < M; i++) for (let t = 0; t < Kd; t++) f[pt + (Math.floor(i / 8) * Kd + t) * 8 + (i % 8)] = f[pa + i * Kd + t]!;
      mm(pt * 4, Kd * 32, MP, pb * 4, Kd, acct * 4, 8 * NP * 16, NP);
      for (let i = 0; i < M; i++) {
        for (let j = 0; j < NP * 4; j++) {
          let s = 0;
          for (let t = 0; t < Kd; t++) s = Math.fround(s + Math.fround(f[pa + i * Kd + t]! * f[pb + (Math.floor(j / 4) * Kd + t) * 4 + (j % 4)]!));
          expect(f[acc + i * NP * 4 + j], `${M}x${Kd}x${NP * 4}: (${i}, ${j})`).to.equal(s);
          expect(f[acct + i * NP * 4 + j], `${M}x${Kd}x${NP * 4}: (${i}, ${j}), the tile's`).to.equal(s);
        }
      }
    }
  });

  it('axpy32 (B row-major, rows as wide as the sums\') sums every row group and panel pass as rows32 on B\'s panels, bit for bit', () => {
    const mem = new WA!.Memory({ initial: 16 });
    const ex = new WA!.Instance(new WA!.Module(rowsModuleBytes(false, false)), { env: { mem } }).exports;
    const rows = ex['rows32'] as (...a: number[]) => void, axpy = ex['axpy32'] as (...a: number[]) => void;
    const f = new Float32Array(mem.buffer);
    const r = mulberry32(5);
    for (const [M, Kd, NP] of [[7, 13, 15], [1, 3, 1], [32, 9, 9], [6, 1, 3], [5, 0, 2], [3, 37, 17], [31, 5, 8]] as [number, number, number][]) {
      const [pa, pb, acc, pr, accr] = [0, 65536, 131072, 196608, 262144].map((o) => o / 4) as [number, number, number, number, number];
      f.fill(0);
      for (let i = 0; i < M * Kd; i++) f[pa + i] = Math.fround(r() * 2 - 1);
      for (let i = 0; i < NP * Kd * 4; i++) f[pb + i] = Math.fround(r() * 2 - 1);
      // B's panels (column 4q + c of step t at 4(qK + t) + c) as rows (step t at t*4NP)
      for (let q = 0; q < NP; q++) for (let t = 0; t < Kd; t++) for (let c = 0; c < 4; c++) f[pr + t * NP * 4 + 4 * q + c] = f[pb + (q * Kd + t) * 4 + c]!;
      f.fill(NaN, acc, acc + M * NP * 4);
      f.fill(NaN, accr, accr + M * NP * 4);
      rows(pa * 4, Kd * 4, pb * 4, Kd, acc * 4, NP * 16, M, NP);
      axpy(pa * 4, Kd * 4, pr * 4, Kd, accr * 4, NP * 16, M, NP);
      expect(Array.from(f.subarray(accr, accr + M * NP * 4)), `${M}x${Kd}x${NP * 4}`).to.deep.equal(Array.from(f.subarray(acc, acc + M * NP * 4)));
    }
  });

  it('B a slice (rows st apart, from an offset) read row-major: padded copies of its rows, the JavaScript tier\'s values bit for bit', () => {
    for (const [M, Kd, N] of [[1, 37, 13], [3, 64, 30], [32, 19, 5]] as [number, number, number][]) {
      const x = fill([M, Kd], 41), w = fill([Kd + 1, N + 3], 42);
      const go = () => float32(() => {
        const px = K.placeholder([M, Kd], null, 'float32'), pw = K.placeholder([Kd + 1, N + 3], null, 'float32');
        const f = K.function([px, pw], [K.dot(px, K.slice(pw, [1, 2], [Kd, N]))]);
        return { out: Array.from(f([x, w])[0]!.data), source: f.source() };
      });
      setWasmKernel(true);
      const got = go();
      expect(got.source).to.contain(`rt.rowsB(`);
      expect(got.source).to.contain(`, ${N + 3 + 2}, ${N + 3}, ${Kd}, ${N}, ${Math.ceil(N / 4) * 4});`);
      setWasmKernel(false);
      expect(got.out, `${M}x${Kd}x${N}`).to.deep.equal(go().out);
      setWasmKernel(true);
    }
  });

  it('a kept B (a variable) is read row-major until panelsAfter calls in a row, then packed into panels once; with reuse off, never packed: the same values at every call, 1 and 2 threads', () => {
    const [M, Kd, N] = [3, 45, 30];
    const x = fill([M, Kd], 31), w = fill([Kd, N], 32);
    for (const threads of [1, 2]) {
      setThreads(threads);
      float32(() => {
        const px = K.placeholder([M, Kd], null, 'float32');
        const f = K.function([px], [K.relu(K.dot(px, K.variable(w, 'float32')))]);
        const first = Array.from(f([x])[0]!.data);
        expect(f.source()).to.contain('rt.arena.rowsFirst(');
        const n = panelsAfter({ m: { size: M } } as Parameters<typeof panelsAfter>[0]);
        expect(n).to.equal(4);
        const made = packArena.packsMade;
        for (let i = 1; i < n; i++) expect(Array.from(f([x])[0]!.data), `call ${i + 1}`).to.deep.equal(first);
        expect(packArena.packsMade, 'packed while read row-major').to.equal(made);
        expect(Array.from(f([x])[0]!.data), 'the call that packs').to.deep.equal(first);
        expect(packArena.packsMade, 'packed once').to.equal(made + 1);
        for (let i = 0; i < 3; i++) expect(Array.from(f([x])[0]!.data), 'on the panels').to.deep.equal(first);
        expect(packArena.packsMade, 'kept').to.equal(made + 1);
        packArena.reuse = false;
        try {
          for (let i = 0; i < n + 2; i++) expect(Array.from(f([x])[0]!.data), 'reuse off').to.deep.equal(first);
          expect(packArena.packsMade, 'reuse off: never packed').to.equal(made + 1);
        } finally { packArena.reuse = true; }
        // the reference: the JavaScript tier
        setWasmKernel(false);
        try {
          const g = K.function([px], [K.relu(K.dot(px, K.variable(w, 'float32')))]);
          expect(Array.from(g([x])[0]!.data), 'JavaScript tier').to.deep.equal(first);
        } finally { setWasmKernel(true); }
      });
    }
  });

  it('a bias every row reads alike, written into the SIMD tier\'s memory once for all chunks: rows not a multiple of the chunk, the same values as the JavaScript tier', () => {
    for (const M of [257, 70]) {
      const x = fill([M, 48], 11), w = fill([48, 64], 12), b = fill([64], 13);
      const go = () => float32(() => {
        const px = K.placeholder([M, 48], null, 'float32'), pw = K.placeholder([48, 64], null, 'float32'), pb = K.placeholder([64], null, 'float32');
        const f = K.function([px, pw, pb], [K.relu(K.dot(px, pw).add(pb))]);
        return { out: Array.from(f([x, w, b])[0]!.data), source: f.source() };
      });
      setWasmKernel(true);
      const got = go();
      expect(got.source).to.contain('m.copyWithin(');
      setWasmKernel(false);
      expect(got.out, `${M} rows`).to.deep.equal(go().out);
    }
  });

  it('a product of 32 rows (B row-major) is split by columns over the worker threads where the hand-off model says (and every 16th kept job): the same sums as one thread, bit for bit', async () => {
    const [M, Kd, N] = [32, 301, 250];
    const x = fill([M, Kd], 21), w = fill([Kd, N], 22);
    const go = () => float32(() => {
      const px = K.placeholder([M, Kd], null, 'float32'), pw = K.placeholder([Kd, N], null, 'float32');
      const f = K.function([px, pw], [K.dot(px, pw)]);
      return { out: Array.from(f([x, w])[0]!.data), source: f.source() };
    });
    setThreads(1);
    const one = go();
    // w a placeholder: B read row-major (axpy32), its panels split alike (panel q at pb + 16 q)
    expect(one.source).to.match(/rt\.rows32\(([^,;]*,){8} 1\);/);
    setThreads(2);
    const before = threadPool()?.workerRowPanels ?? 0;
    let two = go();
    for (let i = 0; i < 200 && (threadPool()?.workerRowPanels ?? 0) === before; i++) {
      await new Promise((r) => setTimeout(r, 20)); // the workers start, then take claims
      two = go();
    }
    expect(threadPool()!.workerRowPanels, 'B panels summed by workers').to.be.greaterThan(before);
    expect(two.out).to.deep.equal(one.out);
  });
});
