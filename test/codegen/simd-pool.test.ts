// Pooling and its adjoint in the WebAssembly SIMD tier (src/codegen/cpu/wasm/pool.ts): max pooling
// and every adjoint equal the reference interpreter bit for bit (ties and NaN broken as it breaks
// them: the first maximal tap in row-major order), average pooling within 1 float32 ulp of it
// (the tier sums in float64 and divides once, the reference divides every term), the same with
// the tier off (JavaScript kernels), and the same with 1 or 2 threads.
import { expect } from 'chai';
import { setHandoffModel } from '../../src/codegen/cpu/handoff.js';
import { backend as K, NDArray } from '../../src/index.js';
import { setSimdTier } from '../../src/codegen/cpu/wasm/elementwise.js';
import { setThreads, threadPool } from '../../src/codegen/cpu/threads.js';
import { setPoolParallelMin } from '../../src/codegen/cpu/wasm/pool.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';

interface Geometry {
  readonly name: string;
  readonly shape: number[];
  readonly pool: number[];
  readonly strides: number[];
  readonly padding: 'valid' | 'same';
  readonly mode: 'max' | 'avg';
  /** Values: small integers (many ties), or spread floats; `special`: NaN, infinities and signed zeros among them. */
  readonly ties: boolean;
  readonly special?: boolean;
  /** -Infinity in every cell of the first two rows (windows over padding whose cells inside the input are all -Infinity). */
  readonly infRows?: boolean;
}

const GEOMETRIES: Geometry[] = [
  { name: 'max 2x2 tiling, ties', shape: [7, 8, 10, 8], pool: [2, 2], strides: [2, 2], padding: 'valid', mode: 'max', ties: true },
  { name: 'max 2x2 tiling', shape: [2, 12, 12, 16], pool: [2, 2], strides: [2, 2], padding: 'valid', mode: 'max', ties: false },
  { name: 'max 3x3 stride 1 same (overlapping, padded), ties', shape: [6, 9, 11, 8], pool: [3, 3], strides: [1, 1], padding: 'same', mode: 'max', ties: true },
  { name: 'max 3x3 stride 2 same, 20 channels', shape: [2, 13, 12, 20], pool: [3, 3], strides: [2, 2], padding: 'same', mode: 'max', ties: false },
  { name: 'max 2x3 stride 2x1 valid, ties', shape: [4, 10, 9, 12], pool: [2, 3], strides: [2, 1], padding: 'valid', mode: 'max', ties: true },
  { name: 'max 3x3x3 stride 2 same (3d), ties', shape: [4, 7, 8, 6, 4], pool: [3, 3, 3], strides: [2, 2, 2], padding: 'same', mode: 'max', ties: true },
  { name: 'max 3x3 stride 1 same, NaN, infinities and zeros', shape: [6, 9, 11, 8], pool: [3, 3], strides: [1, 1], padding: 'same', mode: 'max', ties: true, special: true },
  { name: 'max 3x3 stride 1 same, -Infinity along the border', shape: [6, 9, 11, 8], pool: [3, 3], strides: [1, 1], padding: 'same', mode: 'max', ties: false, infRows: true },
  { name: 'max 2x2 tiling, NaN, infinities and zeros', shape: [7, 8, 10, 8], pool: [2, 2], strides: [2, 2], padding: 'valid', mode: 'max', ties: true, special: true },
  { name: 'avg 3x3 stride 2 same, NaN, infinities and zeros', shape: [6, 9, 11, 8], pool: [3, 3], strides: [2, 2], padding: 'same', mode: 'avg', ties: true, special: true },
  { name: 'avg 2x2 tiling', shape: [7, 8, 10, 8], pool: [2, 2], strides: [2, 2], padding: 'valid', mode: 'avg', ties: false },
  { name: 'avg 3x3 stride 1 same', shape: [6, 9, 11, 8], pool: [3, 3], strides: [1, 1], padding: 'same', mode: 'avg', ties: false },
  { name: 'avg 3x3 stride 2 same, 20 channels', shape: [2, 13, 12, 20], pool: [3, 3], strides: [2, 2], padding: 'same', mode: 'avg', ties: false },
  { name: 'avg 2x2x2 tiling (3d)', shape: [3, 6, 8, 4, 8], pool: [2, 2, 2], strides: [2, 2, 2], padding: 'valid', mode: 'avg', ties: false },
];

const SPECIAL = [NaN, -Infinity, Infinity, -0, 0];

function values(n: number, seed: number, ties: boolean, special = false): Float32Array {
  const out = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const u = s / 4294967296;
    out[i] = special && u < 0.3 ? SPECIAL[Math.floor(u * 100) % SPECIAL.length]! : ties ? Math.floor(u * 4) - 2 : (u - 0.5) * 10 ** ((i % 5) - 2);
  }
  return out;
}

interface Run { y: Float32Array; dx: Float32Array; source: string }

/** y = pool(x), dx = the gradient of sum(y * g) (g fixed: the adjoint applied to g). */
function run(geo: Geometry, xs: Float32Array, gs: Float32Array, how: 'tier' | 'js' | 'reference', threads = 1): Run {
  setSimdTier(how !== 'js');
  setThreads(threads);
  clearCompileCache();
  try {
    const x = K.placeholder(geo.shape, null, 'float32');
    const d = geo.pool.length;
    const y = d === 2 ? K.pool2d(x, geo.pool, geo.strides, geo.padding, 'channels_last', geo.mode) : K.pool3d(x, geo.pool, geo.strides, geo.padding, 'channels_last', geo.mode);
    const g = K.placeholder(y.shape as number[], null, 'float32');
    const [dx] = K.gradients(K.sum(y.mul(g)), [x]);
    const f = K.function([x, g], [y, dx!], [], how === 'reference' ? { optimizer: 'none' } : {});
    const [yv, dxv] = f([new NDArray(xs, geo.shape), new NDArray(gs, y.shape as number[])]);
    return { y: yv!.data as Float32Array, dx: dxv!.data as Float32Array, source: how === 'reference' ? '' : (f as unknown as { source(): string }).source() };
  } finally {
    setSimdTier(true);
    setThreads(undefined);
    clearCompileCache();
  }
}

/** Distance in float32 ulps (NaN only matches NaN; -0 and 0 are 0 ulps apart). */
function ulps(a: number, b: number): number {
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b) ? 0 : Infinity;
  const ord = (v: number) => { const i = new Int32Array(new Float32Array([v]).buffer)[0]!; return i < 0 ? -(i & 0x7fffffff) : i; };
  return Math.abs(ord(a) - ord(b));
}

function sameBits(got: Float32Array, want: Float32Array, what: string): void {
  expect(got.length, what).to.equal(want.length);
  for (let i = 0; i < got.length; i++) {
    if (!Object.is(got[i], want[i])) expect.fail(`${what}: element ${i} is ${got[i]}, want ${want[i]}`);
  }
}

/** The output shape of a geometry's pooling. */
function pooledShape(geo: Geometry): number[] {
  const d = geo.pool.length;
  const out = geo.shape.slice(1, d + 1).map((s, i) => (geo.padding === 'same' ? Math.ceil(s / geo.strides[i]!) : Math.floor((s - geo.pool[i]!) / geo.strides[i]!) + 1));
  return [geo.shape[0]!, ...out, geo.shape[d + 1]!];
}

describe('WebAssembly SIMD tier: pooling and its adjoint', () => {
  // split over the worker threads from 2^18 input elements (the default threshold is higher), and
  // the hand-off model (src/codegen/cpu/handoff.ts) off: the workers take part whatever the machine's load
  const PARALLEL_MIN = 1 << 18;
  before(() => { setPoolParallelMin(PARALLEL_MIN); setHandoffModel(false); });
  after(() => { setPoolParallelMin(undefined); setHandoffModel(true); });
  const LARGE: Geometry[] = [
    { name: 'max 3x3 stride 1 same, ties', shape: [5, 32, 32, 64], pool: [3, 3], strides: [1, 1], padding: 'same', mode: 'max', ties: true, infRows: true },
    { name: 'max 2x2 tiling, ties', shape: [4, 32, 32, 64], pool: [2, 2], strides: [2, 2], padding: 'valid', mode: 'max', ties: true },
    { name: 'avg 3x3 stride 2 same', shape: [3, 33, 31, 96], pool: [3, 3], strides: [2, 2], padding: 'same', mode: 'avg', ties: false },
  ];
  for (const geo of LARGE) {
    it(`${geo.name}, ${geo.shape.join('x')}: the images split over 2 threads give the same values as 1 thread, and workers compute some`, async () => {
      const n = geo.shape.reduce((a, b) => a * b, 1);
      expect(n).to.be.at.least(PARALLEL_MIN);
      const xs = values(n, 3, geo.ties);
      if (geo.infRows === true) {
        const img = n / geo.shape[0]!;
        for (let b = 0; b < geo.shape[0]!; b++) xs.fill(-Infinity, b * img, b * img + (img / geo.shape[1]!) * 2);
      }
      const gs = values(pooledShape(geo).reduce((a, b) => a * b, 1), 9, false);
      const one = run(geo, xs, gs, 'tier', 1);
      expect(one.source).not.to.contain('images over the threads');
      const ref = run(geo, xs, gs, 'reference');
      sameBits(one.dx, ref.dx, 'dx (1 thread) against the reference');
      const before = threadPool()?.workerChunks ?? 0;
      let two = run(geo, xs, gs, 'tier', 2);
      for (let i = 0; i < 100 && (threadPool()?.workerChunks ?? 0) === before; i++) {
        await new Promise((r) => setTimeout(r, 20));
        two = run(geo, xs, gs, 'tier', 2);
      }
      expect(two.source.match(/images over the threads/g)?.length, 'pool and pool_grad split over the threads').to.equal(2);
      expect(threadPool()!.workerChunks, 'images computed by workers').to.be.greaterThan(before);
      sameBits(two.y, one.y, 'y, 2 threads against 1');
      sameBits(two.dx, one.dx, 'dx, 2 threads against 1');
    });
  }

  for (const geo of GEOMETRIES) {
    it(`${geo.name}: the reference's values, with the tier and without, with 1 and 2 threads`, () => {
      const n = geo.shape.reduce((a, b) => a * b, 1);
      const xs = values(n, 11, geo.ties, geo.special);
      if (geo.infRows === true) {
        const img = n / geo.shape[0]!;
        const rows = img / geo.shape[1]! * 2;
        for (let b = 0; b < geo.shape[0]!; b++) xs.fill(-Infinity, b * img, b * img + rows);
      }
      const d = geo.pool.length;
      const outCells = geo.shape.slice(1, d + 1).reduce((a, s, i) => a * (geo.padding === 'same' ? Math.ceil(s / geo.strides[i]!) : Math.floor((s - geo.pool[i]!) / geo.strides[i]!) + 1), 1);
      const gs = values(geo.shape[0]! * outCells * geo.shape[d + 1]!, 5, false);
      const ref = run(geo, xs, gs, 'reference');
      const tier = run(geo, xs, gs, 'tier');
      const js = run(geo, xs, gs, 'js');
      const two = run(geo, xs, gs, 'tier', 2);
      expect(tier.source.match(/WebAssembly SIMD: pool/g)?.length, 'pool and pool_grad in the tier').to.equal(2);
      expect(js.source).not.to.contain('WebAssembly SIMD: pool');
      sameBits(tier.dx, ref.dx, 'dx against the reference');
      sameBits(two.dx, tier.dx, 'dx with 2 threads');
      sameBits(two.y, tier.y, 'y with 2 threads');
      if (geo.mode === 'max') {
        sameBits(tier.y, js.y, 'y against the JavaScript kernel');
        let worst = 0;
        tier.y.forEach((v, i) => { worst = Math.max(worst, ulps(v, ref.y[i]!)); });
        expect(worst, 'y against the reference').to.equal(0);
      } else {
        let worst = 0;
        tier.y.forEach((v, i) => { worst = Math.max(worst, ulps(v, ref.y[i]!)); });
        expect(worst, 'y: worst ulp distance from the reference').to.be.at.most(1);
      }
    });
  }
});
