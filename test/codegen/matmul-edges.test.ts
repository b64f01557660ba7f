// Float32 products at the edges of the 8 x 4 tile and of its one-step K loop: M, N and K each
// taken from 1, 3, 5, 7, 8, 9, 63, 65, 257 (one under, at and over a tile's rows and columns, a
// panel's multiple of 8 and of 4, and sizes past the cache blocks), so every path of the float32
// product runs: rows32 (1 to 32 rows, ../../src/codegen/cpu/small-matmul.ts), rows of tiles, whole
// products on the calling thread and split over the workers; the tile's edge panels of 7 and 1
// rows come from M = 63, 65 and 257. Each product is checked against the reference interpreter within the
// bound of docs/numerics.md (gamma_K sum |a||b| + u |C|), and the WebAssembly kernel against the
// JavaScript one (microkernel.ts rowPanel32) bit for bit; the kernel itself (panelBlock32 and its
// row-major form) against rowPanel32 at every K of the list.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import { setEnvironment } from '../../src/api/config.js';
import { setHandoffModel } from '../../src/codegen/cpu/handoff.js';
import { setMatmulFma, setWasmKernel } from '../../src/codegen/cpu/wasm-kernel.js';
import { setThreads } from '../../src/codegen/cpu/threads.js';
import { WA } from '../../src/codegen/cpu/wasm/encode.js';
import { matmulModuleBytes, TILE32 } from '../../src/codegen/cpu/wasm/matmul.js';
import { rowPanel32 } from '../../src/codegen/cpu/microkernel.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';
import { mulberry32 } from '../../src/ir/random.js';

const U = 2 ** -24;
const SIZES = [1, 3, 5, 7, 8, 9, 63, 65, 257];

/**
 * Each size in each of M, N and K at least twice, in different company (two Latin squares' rows),
 * then M x K x N = 257 x 1030 x 9: 33 A panels of 32.2 KiB, in cache blocks of 15, 15 and 3
 * (wasm-kernel.ts BLOCK_BYTES) on one thread and of 5 with two.
 */
const SHAPES: [number, number, number][] = [...SIZES.flatMap((m, i) => [
  [m, SIZES[(i + 3) % 9]!, SIZES[(i + 6) % 9]!],
  [m, SIZES[(i + 7) % 9]!, SIZES[(i + 4) % 9]!],
] as [number, number, number][]), [257, 1030, 9]];

function fill(shape: number[], seed: number): NDArray {
  const r = mulberry32(seed);
  return new NDArray(Float32Array.from({ length: shape.reduce((p, d) => p * d, 1) }, () => Math.fround((r() * 2 - 1) * (r() < 0.2 ? 16 : 1))), shape);
}

function dot(M: number, Kd: number, N: number, optimizer: 'fast_run' | 'none'): { out: Float32Array; source: string } {
  setEnvironment({ THEANINE_MATMUL_PRECISION: 'float32' });
  clearCompileCache();
  try {
    const px = K.placeholder([M, Kd], null, 'float32'), pw = K.placeholder([Kd, N], null, 'float32');
    const f = K.function([px, pw], [K.dot(px, pw)], [], { optimizer });
    return { out: f([fill([M, Kd], M * 1000 + Kd), fill([Kd, N], Kd * 1000 + N)])[0]!.data as Float32Array, source: f.source() };
  } finally {
    setEnvironment({ THEANINE_MATMUL_PRECISION: undefined });
    clearCompileCache();
  }
}

describe('codegen/cpu float32 products at the tile\'s edges (M, N, K in 1, 3, 5, 7, 8, 9, 63, 65, 257)', function () {
  this.timeout(300000);
  beforeEach(() => { setHandoffModel(false); setMatmulFma(false); });
  afterEach(() => { setWasmKernel(true); setMatmulFma(undefined); setThreads(undefined); setHandoffModel(undefined); });

  it('the shapes take every size in every dimension', () => {
    for (let d = 0; d < 3; d++) expect(new Set(SHAPES.slice(0, -1).map((s) => s[d]))).to.deep.equal(new Set(SIZES));
  });

  for (const [M, Kd, N] of SHAPES) {
    it(`${M}x${Kd}x${N}: within the bound of the reference's sums; the WebAssembly kernel equal to the JavaScript one, with 1 and 2 threads`, () => {
      const x = fill([M, Kd], M * 1000 + Kd).data, w = fill([Kd, N], Kd * 1000 + N).data;
      const want = dot(M, Kd, N, 'none').out;
      setThreads(1);
      const wa = dot(M, Kd, N, 'fast_run');
      expect(wa.source).to.contain('rt.arena.');
      const gamma = (Kd * U) / (1 - Kd * U);
      for (let i = 0; i < M; i++) {
        for (let j = 0; j < N; j++) {
          let s = 0;
          for (let t = 0; t < Kd; t++) s += Math.abs(x[i * Kd + t]! * w[t * N + j]!);
          const bound = gamma * s + U * Math.abs(want[i * N + j]!);
          const err = Math.abs(wa.out[i * N + j]! - want[i * N + j]!);
          if (!(err <= bound)) expect.fail(`element (${i}, ${j}) is ${wa.out[i * N + j]}, the reference's ${want[i * N + j]}: error ${err} over the bound ${bound}`);
        }
      }
      setThreads(2);
      const two = dot(M, Kd, N, 'fast_run').out;
      expect(Array.from(two), '2 threads').to.deep.equal(Array.from(wa.out));
      setThreads(1);
      setWasmKernel(false);
      const js = dot(M, Kd, N, 'fast_run');
      expect(js.source).to.contain('rt.rowPanel32(');
      expect(Array.from(wa.out), 'WebAssembly vs JavaScript').to.deep.equal(Array.from(js.out));
    });
  }

  it('panelBlock32 and panelBlock32r sum each tile as rowPanel32 does, bit for bit, at every K of the list (with fused multiply-adds off)', () => {
    const { mr, nr } = TILE32;
    const G = 3, n = 5, T = mr * nr * 4;
    const Kmax = Math.max(...SIZES);
    const pa = 0, pb = G * Kmax * mr * 4, acc = pb + n * Kmax * nr * 4, acc2 = acc + G * n * T;
    const end = acc2 + G * n * T;
    const mem = new WA!.Memory({ initial: Math.ceil((end + 64) / 65536) });
    const ex = new WA!.Instance(new WA!.Module(matmulModuleBytes(false, false)), { env: { mem } }).exports as Record<string, (...a: number[]) => void>;
    const f = new Float32Array(mem.buffer);
    const r = mulberry32(5);
    for (const Kd of SIZES) {
      for (let i = 0; i < acc / 4; i++) f[i] = Math.fround((r() * 2 - 1) * (r() < 0.1 ? 1e3 : 1));
      f.fill(NaN, acc / 4, end / 4 + 16);
      ex['panelBlock32']!(pa, Kd * mr * 4, G, pb, Kd, acc, n * T, n);
      ex['panelBlock32r']!(pa, Kd * mr * 4, G, pb, Kd, acc2, n * T, n);
      const want = new Float32Array(n * mr * nr);
      for (let g = 0; g < G; g++) {
        rowPanel32(f, (pa / 4) + g * Kd * mr, f, pb / 4, Kd, want, n, mr, nr);
        for (let q = 0; q < n; q++) {
          for (let c = 0; c < nr; c++) {
            for (let rr = 0; rr < mr; rr++) {
              const w = want[q * mr * nr + c * mr + rr]!;
              const got = f[acc / 4 + g * n * mr * nr + q * mr * nr + c * mr + rr]!;
              const gotR = f[acc2 / 4 + (g * mr + rr) * n * nr + q * nr + c]!;
              if (!Object.is(got, w)) expect.fail(`K ${Kd}: panelBlock32 tile (${g}, ${q}) element (${rr}, ${c}) is ${got}, rowPanel32's ${w}`);
              if (!Object.is(gotR, w)) expect.fail(`K ${Kd}: panelBlock32r tile (${g}, ${q}) element (${rr}, ${c}) is ${gotR}, rowPanel32's ${w}`);
            }
          }
        }
      }
      expect(Number.isNaN(f[end / 4]!), `K ${Kd}: nothing written past the sums`).to.equal(true);
    }
  });
});
