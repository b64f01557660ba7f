// Float32 matrix products summed in float32 (matmul precision "float32", src/codegen/cpu/wasm-kernel.ts):
// every element within the bound of docs/numerics.md, |C - C_ref| <= gamma_K * sum_t |a_it||b_tj|
// with gamma_K = K u / (1 - K u), u = 2^-24, against the reference interpreter (float64 sums);
// the WebAssembly kernel without fused multiply-adds equal to the JavaScript one bit for bit; the
// fused (relaxed SIMD) form checked in a process that has relaxed SIMD; the same numbers with 1
// and N threads; and precision "float64" still equal to the reference bit for bit.
import { execFileSync } from 'node:child_process';
import { expect } from 'chai';
import { setHandoffModel } from '../../src/codegen/cpu/handoff.js';
import { backend as K, NDArray } from '../../src/index.js';
import { setEnvironment } from '../../src/api/config.js';
import { matmulFma, matmulPrecision, setMatmulFma, setWasmKernel, tile32 } from '../../src/codegen/cpu/wasm-kernel.js';
import { setThreads, threadPool } from '../../src/codegen/cpu/threads.js';
import { hasRelaxedSimd, WA } from '../../src/codegen/cpu/wasm/encode.js';
import { matmulModuleBytes } from '../../src/codegen/cpu/wasm/matmul.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';
import { mulberry32 } from '../../src/ir/random.js';
import { packStrided } from '../../src/codegen/cpu/microkernel.js';

const U = 2 ** -24;

/** Values in [-1, 1) with a spread of magnitudes, exactly float32. */
function fill(shape: number[], seed: number): NDArray {
  const r = mulberry32(seed);
  return new NDArray(Float32Array.from({ length: shape.reduce((p, d) => p * d, 1) }, () => (r() * 2 - 1) * (r() < 0.2 ? 64 : 1)), shape);
}

/** Each element of x (M x K) . w (K x N) within gamma_K * sum |x||w| of the reference's; returns the largest error / bound. */
function expectWithinBound(got: NDArray, want: NDArray, x: NDArray, w: NDArray, what: string): number {
  const [M, Kd] = x.shape as [number, number];
  const N = w.shape[1]!;
  const gamma = (Kd * U) / (1 - Kd * U);
  let worst = 0;
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let s = 0;
      for (let t = 0; t < Kd; t++) s += Math.abs(x.data[i * Kd + t]! * w.data[t * N + j]!);
      const err = Math.abs(got.data[i * N + j]! - want.data[i * N + j]!);
      // the float32 result of the reference is its float64 sum rounded once: half an ulp more
      const bound = gamma * s + U * Math.abs(want.data[i * N + j]!);
      if (!(err <= bound)) expect.fail(`${what}: element (${i}, ${j}) is ${got.data[i * N + j]}, the reference's ${want.data[i * N + j]}: error ${err} over the bound ${bound}`);
      if (bound > 0) worst = Math.max(worst, err / bound);
    }
  }
  return worst;
}

function withPrecision<T>(p: 'float32' | 'float64', f: () => T): T {
  setEnvironment({ THEANINE_MATMUL_PRECISION: p });
  clearCompileCache();
  try {
    return f();
  } finally {
    setEnvironment({ THEANINE_MATMUL_PRECISION: undefined });
    clearCompileCache();
  }
}

const SHAPES: [number, number, number][] = [[13, 37, 11], [9, 1, 5], [130, 129, 131], [67, 300, 70]];

function products(optimizer: 'fast_run' | 'none', M: number, Kd: number, N: number): { x: NDArray; w: NDArray; b: NDArray; outs: NDArray[]; source: string } {
  const x = fill([M, Kd], M), w = fill([Kd, N], Kd), b = fill([N], N);
  const px = K.placeholder([M, Kd], null, 'float32'), pw = K.placeholder([Kd, N], null, 'float32'), pb = K.placeholder([N], null, 'float32');
  // a product, the same with a bias + relu epilogue, and one with a transposed operand
  const f = K.function([px, pw, pb], [K.dot(px, pw), K.relu(K.dot(px, pw).add(pb)), K.dot(K.transpose(pw), K.transpose(px))], [], { optimizer });
  return { x, w, b, outs: f([x, w, b]), source: f.source() };
}

describe('codegen/cpu float32 matrix products (matmul precision "float32")', function () {
  this.timeout(120000);
  // the hand-off model (src/codegen/cpu/handoff.ts) off: the workers take part whatever the machine's load
  beforeEach(() => setHandoffModel(false));
  afterEach(() => { setWasmKernel(true); setMatmulFma(undefined); setThreads(undefined); setHandoffModel(undefined); });

  it('the precision is configured ("float64" unless keras.json or THEANINE_MATMUL_PRECISION says otherwise) and checked', () => {
    expect(withPrecision('float32', () => matmulPrecision())).to.equal('float32');
    expect(withPrecision('float64', () => matmulPrecision())).to.equal('float64');
    expect(() => setEnvironment({ THEANINE_MATMUL_PRECISION: 'highest' })).to.throw('environment variable THEANINE_MATMUL_PRECISION is "highest"; allowed: "float32", "float64"');
  });

  for (const wasm of [true, false]) {
    for (const [M, Kd, N] of SHAPES) {
      it(`${wasm ? 'WebAssembly' : 'JavaScript'} kernel, ${M}x${Kd}x${N}: within the bound of the reference's sums, the epilogue applied to the float32 sums`, () => {
        if (wasm) setMatmulFma(false);
        setWasmKernel(wasm);
        const want = withPrecision('float32', () => products('none', M, Kd, N));
        const got = withPrecision('float32', () => products('fast_run', M, Kd, N));
        expect(got.source).to.contain(wasm ? 'rt.arena.' : 'rt.rowPanel32(');
        expect(got.source).to.not.contain('rowPanel4x4');
        const { x, w, b } = got;
        expectWithinBound(got.outs[0]!, want.outs[0]!, x, w, 'x . w');
        // relu(x . w + b): the epilogue rounds the float32 sum plus the bias once, as the reference does
        const fused = Float32Array.from(got.outs[0]!.data, (s, i) => Math.max(0, Math.fround(s + b.data[i % N]!)));
        expect(Array.from(got.outs[1]!.data)).to.deep.equal(Array.from(fused));
        const wt = new NDArray(Float32Array.from({ length: N * Kd }, (_, i) => w.data[(i % Kd) * N + Math.floor(i / Kd)]!), [N, Kd]);
        const xt = new NDArray(Float32Array.from({ length: Kd * M }, (_, i) => x.data[(i % M) * Kd + Math.floor(i / M)]!), [Kd, M]);
        expectWithinBound(got.outs[2]!, want.outs[2]!, wt, xt, 'w^T . x^T');
      });
    }
  }

  it('the WebAssembly kernel without fused multiply-adds sums as the JavaScript kernel does, bit for bit (whole products and rows of tiles)', () => {
    setMatmulFma(false);
    for (const [M, Kd, N] of SHAPES) {
      setWasmKernel(false);
      const js = withPrecision('float32', () => products('fast_run', M, Kd, N).outs);
      setWasmKernel(true);
      const wa = withPrecision('float32', () => products('fast_run', M, Kd, N));
      // 130x129x131 is large enough to be summed whole, by the kernel that stores rows
      if (M === 130) {
        expect(wa.source).to.match(/rt\.arena\.tiles\([^;]*, 3\);/);
        // the plain product's rows are copied whole (rows of 131 sums padded to 132)
        expect(wa.source).to.contain('.set(acc.subarray(ao + r * 132, ao + r * 132 + 131), ip * 1048 + r * 131)');
      }
      wa.outs.forEach((g, i) => expect(Array.from(g.data), `${M}x${Kd}x${N} output ${i}`).to.deep.equal(Array.from(js[i]!.data)));
    }
  });

  it('products of 1 to 3 rows: of one matrix summed by rows32, of a batch of matrices by rowVec32 (A broadcast against B\'s panels): within the bound, the epilogue applied, equal to the JavaScript kernel bit for bit, at odd K and N', () => {
    setMatmulFma(false);
    for (const [M, Kd, N] of [[1, 784, 256], [1, 37, 13], [1, 1, 5], [2, 301, 29], [3, 129, 37], [3, 5, 1], [1, 256, 10]] as [number, number, number][]) {
      const what = `${M}x${Kd}x${N}`;
      setWasmKernel(true);
      const want = withPrecision('float32', () => products('none', M, Kd, N));
      const got = withPrecision('float32', () => products('fast_run', M, Kd, N));
      // rows32 (small-matmul.ts) over A's rows as they are (K floats apart) and the B panels, its sums row-major
      expect(got.source, `${what}: rows32`).to.contain(`rt.rows32(b`);
      // B a placeholder: copied row-major and read so (axpy32, the last argument 1)
      expect(got.source, `${what}: rows32's M and B panels, B row-major`).to.contain(`, ${M}, ${Math.ceil(N / 4)}, 1);`);
      const { x, w, b } = got;
      expectWithinBound(got.outs[0]!, want.outs[0]!, x, w, `${what} x . w`);
      const fused = Float32Array.from(got.outs[0]!.data, (v, i) => Math.max(0, Math.fround(v + b.data[i % N]!)));
      expect(Array.from(got.outs[1]!.data), `${what} relu(x . w + b)`).to.deep.equal(Array.from(fused));
      setWasmKernel(false);
      const js = withPrecision('float32', () => products('fast_run', M, Kd, N));
      expect(js.source).to.not.contain('rt.arena.blocks[');
      got.outs.forEach((g, i) => expect(Array.from(g.data), `${what} output ${i}, WebAssembly vs JavaScript`).to.deep.equal(Array.from(js.outs[i]!.data)));
    }
    // a batch of 2-row products (batch_dot): rowVec32_2 once per matrix, within the bound of each
    setWasmKernel(true);
    const [NB, Kb, Nb] = [3, 19, 7];
    const xa = fill([NB, 2, Kb], 31), xb = fill([NB, Kb, Nb], 32);
    const bd = (optimizer: 'fast_run' | 'none') => withPrecision('float32', () => {
      const pa = K.placeholder([NB, 2, Kb], null, 'float32'), pb = K.placeholder([NB, Kb, Nb], null, 'float32');
      const f = K.function([pa, pb], [K.batch_dot(pa, pb)], [], { optimizer });
      return { out: f([xa, xb])[0]!, source: f.source() };
    });
    const bg = bd('fast_run'), bw = bd('none');
    expect(bg.source).to.contain('rt.arena.blocks[10]');
    for (let i = 0; i < NB; i++) {
      const part = (x: NDArray, shape: number[]) => new NDArray(x.data.slice(i * shape[0]! * shape[1]!, (i + 1) * shape[0]! * shape[1]!), shape);
      expectWithinBound(part(bg.out, [2, Nb]), part(bw.out, [2, Nb]), part(xa, [2, Kb]), part(xb, [Kb, Nb]), `batch_dot matrix ${i}`);
    }
    // four rows: the tile kernel again
    setWasmKernel(true);
    const four = withPrecision('float32', () => products('fast_run', 4, 37, 13));
    expect(four.source).to.not.match(/rt\.arena\.blocks\[(9|10|11)\]/);
    expect(four.source).to.contain('rt.rows32(');
  });

  it('a whole product with its epilogue (bias, relu) fused: computed from the row-major sums by the SIMD tier, as the JavaScript kernel computes it', () => {
    setMatmulFma(false);
    const M = 130, Kd = 129, N = 131;
    const x = fill([M, Kd], 5), w = fill([Kd, N], 6), b = fill([N], 7);
    const run = () => withPrecision('float32', () => {
      const px = K.placeholder([M, Kd], null, 'float32'), pw = K.placeholder([Kd, N], null, 'float32'), pb = K.placeholder([N], null, 'float32');
      const f = K.function([px, pw, pb], [K.relu(K.dot(px, pw).add(pb))]);
      return { out: Array.from(f([x, w, b])[0]!.data), source: f.source() };
    });
    setWasmKernel(false);
    const js = run();
    setWasmKernel(true);
    const wa = run();
    expect(wa.source).to.match(/rt\.arena\.tiles\([^;]*, 3\);/);
    expect(wa.source).to.match(/WebAssembly SIMD( f32x4)?, 130 rows of 131: [\w,]+ epilogue/);
    expect(wa.out).to.deep.equal(js.out);
    expect(wa.out.some((v) => v > 0) && wa.out.some((v) => v === 0)).to.equal(true);
  });

  it('the row-major kernels (whole products) store the same sums as the tile-major ones, bit for bit, at the rows of the product', () => {
    // G = 3 A panels of K = 7 steps against n = 5 B panels, both float32 tiles (8 x 4 and 12 x 4), with and without fusing where the runtime can
    for (const fused of hasRelaxedSimd() ? [false, true] : [false]) {
      const mem = new WA!.Memory({ initial: 4 });
      const ex = new WA!.Instance(new WA!.Module(matmulModuleBytes(false, fused)), { env: { mem } }).exports as Record<string, (...a: number[]) => void>;
      const f = new Float32Array(mem.buffer);
      const r = mulberry32(7);
      for (const [tile, rows, mr] of [['panelBlock32', 'panelBlock32r', 8], ['panelBlock32w', 'panelBlock32wr', 12]] as const) {
        const G = 3, Kd = 7, n = 5, nr = 4, T = mr * nr * 4;
        const pa = 0, pb = 4096, acc = 8192, acc2 = 32768;
        for (let i = 0; i < 16384 / 4; i++) f[i] = Math.fround(r() * 2 - 1);
        f.fill(NaN, acc / 4, 65536 / 4);
        ex[tile]!(pa, Kd * mr * 4, G, pb, Kd, acc, n * T, n);
        ex[rows]!(pa, Kd * mr * 4, G, pb, Kd, acc2, n * T, n);
        const ldc = n * nr; // row-major: tile (g, q)'s row r at element (g mr + r) ldc + q nr
        for (let g = 0; g < G; g++) {
          for (let q = 0; q < n; q++) {
            for (let rr = 0; rr < mr; rr++) {
              for (let c = 0; c < nr; c++) {
                const want = f[acc / 4 + g * n * mr * nr + q * mr * nr + c * mr + rr]!;
                const got = f[acc2 / 4 + (g * mr + rr) * ldc + q * nr + c]!;
                if (!Object.is(got, want) || Number.isNaN(want)) expect.fail(`${rows} (fused ${fused}): tile (${g}, ${q}) element (${rr}, ${c}) is ${got}, ${tile}'s ${want}`);
              }
            }
          }
        }
        // nothing written past the product's G mr rows
        expect(Number.isNaN(f[acc2 / 4 + G * mr * ldc]!)).to.equal(true);
      }
    }
  });

  it('pack32 and packCols32 (operands packed on the worker threads) lay panels out as packStrided does, bit for bit, on every path', () => {
    // Full panels contiguous along t (transposed 4 x 4 blocks, K mod 4 steps element by element),
    // contiguous along the rows (copied 4 at a time), any other strides, and edge panels (rows < p,
    // zeros past them); NaN payloads and -0 come through (a bit copy).
    const mem = new WA!.Memory({ initial: 8 });
    const ex = new WA!.Instance(new WA!.Module(matmulModuleBytes(false, false)), { env: { mem } }).exports as Record<string, (...a: number[]) => void>;
    const f = new Float32Array(mem.buffer);
    const bits = new Uint32Array(mem.buffer);
    const r = mulberry32(11);
    const SRC = 0, DST = 65536; // element offsets
    for (const [rows, Kd, sr, st, p] of [
      [8, 13, 13, 1, 8], [12, 16, 20, 1, 12], [8, 3, 3, 1, 8], [4, 9, 1, 6, 4], [8, 5, 1, 8, 8], [12, 7, 1, 12, 12],
      [5, 11, 11, 1, 8], [3, 6, 1, 5, 4], [7, 4, 2, 17, 8], [1, 1, 1, 1, 4],
    ] as const) {
      for (let i = 0; i < 65536; i++) f[SRC + i] = Math.fround(r() * 2 - 1);
      f[SRC + 1] = -0;
      bits[SRC + 2] = 0x7fc00123;
      f.fill(7, DST, DST + 4096);
      ex['pack32']!(4 * SRC, 4 * sr, 4 * st, 4 * DST, Kd, rows, p);
      const want = new Float32Array(Kd * p);
      packStrided(want, f.subarray(SRC), 0, 0, sr, st, 1, rows, Kd, p);
      const wantBits = new Uint32Array(want.buffer);
      for (let i = 0; i < Kd * p; i++) {
        if (bits[DST + i] !== wantBits[i] && !(Number.isNaN(want[i]) && Number.isNaN(f[DST + i]))) expect.fail(`pack32 rows ${rows}, K ${Kd}, sr ${sr}, st ${st}, p ${p}: element ${i} is ${f[DST + i]}, packStrided's ${want[i]}`);
      }
      expect(f[DST + Kd * p], 'nothing written past the panel').to.equal(7);
    }
    // packCols32: np full panels of an operand contiguous along the rows, step by step across them
    for (const [np, Kd, st, p] of [[3, 9, 20, 4], [2, 5, 16, 8], [1, 1, 4, 4], [4, 6, 200, 12]] as const) {
      for (let i = 0; i < 65536; i++) f[SRC + i] = Math.fround(r() * 2 - 1);
      f.fill(7, DST, DST + 8192);
      ex['packCols32']!(4 * SRC, 4 * st, 4 * DST, Kd, p, np);
      const want = new Float32Array(np * Kd * p);
      packStrided(want, f.subarray(SRC), 0, 0, 1, st, 1, np * p, Kd, p);
      for (let i = 0; i < np * Kd * p; i++) {
        if (!Object.is(f[DST + i], want[i])) expect.fail(`packCols32 np ${np}, K ${Kd}, st ${st}, p ${p}: element ${i} is ${f[DST + i]}, packStrided's ${want[i]}`);
      }
      expect(f[DST + np * Kd * p], 'nothing written past the panels').to.equal(7);
    }
  });

  it('relaxed-SIMD fused multiply-adds where the runtime has them: used by default, detected by validating a module, within the bound (a process with relaxed SIMD)', () => {
    expect(matmulFma()).to.equal(hasRelaxedSimd());
    if (!hasRelaxedSimd()) expect(() => setMatmulFma(true)).to.throw('this runtime has no relaxed SIMD');
    // The same check in a Node started with relaxed SIMD on (Node 20 has it behind a flag): the
    // 8 x 4 tile with f32x4.relaxed_madd (row by row, blocks[1], or whole, tiles variant 3),
    // within the bound, and not the unfused sums.
    const script = `
      import { backend as K, NDArray } from './src/index.js';
      import { setEnvironment } from './src/api/config.js';
      import { matmulFma, tile32, setMatmulFma } from './src/codegen/cpu/wasm-kernel.js';
      import { clearCompileCache } from './src/runtime/cpu/compile.js';
      setEnvironment({ THEANINE_MATMUL_PRECISION: 'float32' });
      const M = 37, Kd = 301, N = 29;
      const x = new NDArray(Float32Array.from({ length: M * Kd }, (_, i) => Math.sin(i * 0.37)), [M, Kd]);
      const w = new NDArray(Float32Array.from({ length: Kd * N }, (_, i) => Math.cos(i * 0.11)), [Kd, N]);
      const run = (optimizer) => { clearCompileCache(); const px = K.placeholder([M, Kd], null, 'float32'), pw = K.placeholder([Kd, N], null, 'float32');
        const f = K.function([px, pw], [K.dot(px, pw)], [], { optimizer }); return { out: Array.from(f([x, w])[0].data), source: f.source() }; };
      const fused = run('fast_run'), tile = tile32(), fma = matmulFma();
      // one row of x: rows32 with the multiply-add
      const run1 = (optimizer) => { clearCompileCache(); const px = K.placeholder([1, Kd], null, 'float32'), pw = K.placeholder([Kd, N], null, 'float32');
        const f = K.function([px, pw], [K.dot(px, pw)], [], { optimizer }); return { out: Array.from(f([new NDArray(x.data.slice(0, Kd), [1, Kd]), w])[0].data), source: f.source() }; };
      const fused1 = run1('fast_run');
      setMatmulFma(false);
      const plain = run('fast_run');
      const ref = run('none');
      let worst = 0;
      const check = (got, M) => { for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) {
        let s = 0; for (let t = 0; t < Kd; t++) s += Math.abs(x.data[i * Kd + t] * w.data[t * N + j]);
        const bound = (Kd * 2 ** -24) / (1 - Kd * 2 ** -24) * s + 2 ** -24 * Math.abs(ref.out[i * N + j]);
        worst = Math.max(worst, Math.abs(got.out[i * N + j] - ref.out[i * N + j]) / bound);
      } };
      check(fused, M);
      check(fused1, 1);
      console.log(JSON.stringify({ fma, tile, worst, tiled: /rt\\.arena\\.(blocks\\[1\\]|tiles\\([^;]*, 3(, false)?\\);)/.test(fused.source),
        rowVec: fused1.source.includes('rt.rows32('),
        rowSame: fused1.out.every((v, j) => v === fused.out[j]), differs: fused.out.some((v, i) => v !== plain.out[i]) }));`;
    const out = execFileSync(process.execPath, ['--experimental-wasm-relaxed-simd', '--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', env: { ...process.env, THEANINE_MATMUL_PRECISION: '' } });
    const r = JSON.parse(out.trim().split('\n').pop()!) as { fma: boolean; tile: { mr: number; nr: number }; worst: number; tiled: boolean; rowVec: boolean; rowSame: boolean; differs: boolean };
    expect(r.fma, 'relaxed SIMD detected').to.equal(true);
    expect(r.tile).to.deep.equal({ mr: 8, nr: 4 });
    expect(r.tiled, 'the 8 x 4 kernel').to.equal(true);
    expect(r.rowVec, 'one row: rows32').to.equal(true);
    expect(r.rowSame, 'one row: the same sums as the 8 x 4 tile\'s first row, bit for bit').to.equal(true);
    expect(r.worst, 'largest error over its bound').to.be.at.most(1);
    expect(r.differs, 'fused sums differ from the unfused ones somewhere').to.equal(true);
  });

  it('the same numbers, bit for bit, with 1 and 2 threads (products split over the workers)', async () => {
    const M = 160, Kd = 161, N = 163;
    const run = () => withPrecision('float32', () => products('fast_run', M, Kd, N).outs.map((o) => Array.from(o.data)));
    setThreads(1);
    const one = run();
    setThreads(2);
    const before = threadPool()?.workerPanels ?? 0;
    let two = run();
    for (let i = 0; i < 200 && (threadPool()?.workerPanels ?? 0) === before; i++) {
      await new Promise((r) => setTimeout(r, 20));
      two = run();
    }
    expect(threadPool()!.workerPanels, 'panels summed by workers').to.be.greaterThan(before);
    two.forEach((g, i) => expect(g, `output ${i}`).to.deep.equal(one[i]));
    // products of few rows (rows32, on the calling thread) too
    for (const M of [1, 3, 32]) {
      const few = (n: number) => { setThreads(n); return withPrecision('float32', () => products('fast_run', M, 301, 29)); };
      const a = few(1), b = few(2);
      expect(b.source).to.contain('rt.rows32(');
      b.outs.forEach((g, i) => expect(Array.from(g.data), `${M} rows, output ${i}`).to.deep.equal(Array.from(a.outs[i]!.data)));
    }
  });

  it('precision "float64": float32 products equal the reference bit for bit; float64 products always do', () => {
    for (const [M, Kd, N] of SHAPES) {
      const want = products('none', M, Kd, N).outs;
      const got = withPrecision('float64', () => products('fast_run', M, Kd, N));
      expect(got.source).to.not.contain('rowPanel32');
      got.outs.forEach((g, i) => expect(Array.from(g.data), `${M}x${Kd}x${N} output ${i}`).to.deep.equal(Array.from(want[i]!.data)));
    }
    const x = K.placeholder([33, 45], null, 'float64'), w = K.placeholder([45, 17], null, 'float64');
    const xs = new NDArray(Float64Array.from({ length: 33 * 45 }, (_, i) => Math.sin(i)), [33, 45]);
    const ws = new NDArray(Float64Array.from({ length: 45 * 17 }, (_, i) => Math.cos(i)), [45, 17]);
    const want = K.function([x, w], [K.dot(x, w)], [], { optimizer: 'none' })([xs, ws])[0]!;
    const got = withPrecision('float32', () => K.function([x, w], [K.dot(x, w)])([xs, ws])[0]!);
    expect(Array.from(got.data)).to.deep.equal(Array.from(want.data));
  });

  it('a Scan body packs its step-invariant operand once per loop into float32 panels, within the bound per step', () => {
    // h_t = h_{t-1} . U + x_t (U the Scan's constant): its pack sits at step 0 only
    const T = 12, B = 9, H = 21;
    const xs = fill([B, T, H], 3);
    const r = mulberry32(4);
    const us = new NDArray(Float32Array.from({ length: H * H }, () => Math.fround((r() * 2 - 1) / H)), [H, H]); // a contraction: h stays bounded
    const build = (optimizer: 'fast_run' | 'none') => {
      const x = K.placeholder([null, T, H], null, 'float32');
      const u = K.placeholder([H, H], null, 'float32');
      const [, outs] = K.rnn((xt, [h]) => { const hn = K.dot(h!, u).mul(0.25).add(xt); return [hn, [hn]]; }, x, [K.tile(K.expand_dims(K.sum(K.zeros_like(x), [1, 2]), 1), [1, H])]);
      const f = K.function([x, u], [outs], [], { optimizer });
      return { out: f([xs, us])[0]!, source: f.source() };
    };
    const want = build('none');
    const got = withPrecision('float32', () => build('fast_run'));
    // u is an input (it may change between calls): its pack is kept between steps, made at step 0,
    // or, a few-row product's B, read row-major from a copy until packing pays (PackArena.rowsFirst)
    expect(got.source).to.match(/if \(p\d+ \|\| step === 0\) \{\n\s*if \(rt\.arena\.rowsFirst\([^\n]*\n\s*else \{ rt\.packStrided/);
    expect(got.source).to.contain('rt.arena.f32()');
    // each step's error (at most gamma_21 sum |h||u|, about 1e-6 |h|) is damped by 0.25 |U| < 1 in the next: far under 1e-5
    expect(got.out.shape).to.deep.equal(want.out.shape);
    let worst = 0;
    got.out.data.forEach((v, i) => { worst = Math.max(worst, Math.abs(v - want.out.data[i]!) / (1 + Math.abs(want.out.data[i]!))); });
    expect(worst).to.be.at.most(1e-5);
    expect(tile32().nr).to.equal(4);
  });
});
