// Worker threads for large matrix products (src/codegen/cpu/threads.ts): the same numbers, bit
// for bit, with one thread and with several (and as the JavaScript kernel, which sums as the
// reference does), and the workers really take part.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import { setThreads, threadCount, PARALLEL_MIN_MACS } from '../../src/codegen/cpu/threads.js';
import { packArena, setMatmulFma, setWasmKernel, threadPool } from '../../src/codegen/cpu/wasm-kernel.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';
import { setHandoffModel } from '../../src/codegen/cpu/handoff.js';
import { PARALLEL_MIN_ELEMENTS } from '../../src/codegen/cpu/wasm/elementwise.js';
import { reloadConfig } from '../../src/api/config.js';
import { threadPool as pool } from '../../src/codegen/cpu/threads.js';

const fill = (shape: number[], k: number) => new NDArray(Float32Array.from({ length: shape.reduce((p, d) => p * d, 1) }, (_, i) => Math.sin(i * 0.37 + k) * (1 + (i % 7))), shape);

/** A dense layer with bias and relu (edge tiles: 130 x 129 x 131), a transposed product, and a batched one. */
function build() {
  const x = K.placeholder([130, 129], null, 'float32');
  const w = K.placeholder([129, 131], null, 'float32');
  const b = K.placeholder([131], null, 'float32');
  const p = K.placeholder([4, 70, 90], null, 'float32');
  const q = K.placeholder([4, 90, 110], null, 'float32');
  const f = K.function([x, w, b, p, q], [K.relu(K.dot(x, w).add(b)), K.dot(K.transpose(w), K.transpose(x)), K.batch_dot(p, q)]);
  const vals = [fill([130, 129], 0), fill([129, 131], 1), fill([131], 2), fill([4, 70, 90], 3), fill([4, 90, 110], 4)];
  return () => f(vals).map((r) => Array.from(r.data));
}

describe('codegen/cpu worker threads', function () {
  this.timeout(120000);
  // The JavaScript kernels sum as the WebAssembly ones do without fused multiply-adds (a runtime with relaxed SIMD fuses float32 sums).
  // The hand-off model (src/codegen/cpu/handoff.ts) may keep these products on the calling thread on a loaded machine: off, so the workers take part.
  beforeEach(() => { setMatmulFma(false); setHandoffModel(false); });
  afterEach(() => { setThreads(undefined); setMatmulFma(undefined); setHandoffModel(true); clearCompileCache(); });

  it('the products of the test are large enough to be split', () => {
    expect(130 * 129 * 131).to.be.greaterThan(PARALLEL_MIN_MACS);
    expect(4 * 70 * 90 * 110).to.be.greaterThan(PARALLEL_MIN_MACS);
  });

  it('defaults to the configured or available cores; setThreads checks its argument', () => {
    expect(threadCount()).to.be.at.least(1);
    const home = process.env['KERAS_HOME'];
    try {
      reloadConfig({ env: { KERAS_HOME: home, THEANINE_THREADS: '3' } });
      expect(threadCount(), 'THEANINE_THREADS').to.equal(3);
      setThreads(1);
      expect(threadCount(), 'setThreads over the configuration').to.equal(1);
      setThreads(undefined);
      expect(threadCount()).to.equal(3);
    } finally {
      reloadConfig({ env: { KERAS_HOME: home } });
    }
    setThreads(3);
    expect(threadCount()).to.equal(3);
    expect(() => setThreads(0)).to.throw(RangeError, 'setThreads: argument n is 0; allowed: an integer from 1 to 256, or undefined');
    expect(() => setThreads(1.5)).to.throw(RangeError, 'argument n is 1.5');
  });

  it('sums whole products (cache blocks) as the JavaScript kernel does, bit for bit', () => {
    setThreads(1);
    setWasmKernel(false);
    clearCompileCache();
    let js: number[][];
    try {
      js = build()();
    } finally {
      setWasmKernel(true);
    }
    clearCompileCache();
    build()().forEach((g, i) => expect(g, `output ${i}`).to.deep.equal(js[i]));
  });

  it('gives the same numbers, bit for bit, with 1, 2 and 3 threads, with the workers summing panels', async () => {
    setThreads(1);
    clearCompileCache();
    const one = build()();
    for (const n of [2, 3]) {
      setThreads(n);
      clearCompileCache();
      const run = build();
      // Workers start asynchronously: until one is ready the calling thread sums every panel.
      // Call until workers have taken panels (they run on their own threads; waiting lets them start).
      const before = threadPool()?.workerPanels ?? 0, packed = threadPool()?.workerPacked ?? 0;
      let got = run();
      for (let i = 0; i < 200 && ((threadPool()?.workerPanels ?? 0) === before || (threadPool()?.workerPacked ?? 0) === packed); i++) {
        await new Promise((r) => setTimeout(r, 20));
        got = run();
      }
      expect(threadPool()!.size, 'workers started').to.equal(n - 1);
      expect(threadPool()!.workerPanels, 'panels summed by workers').to.be.greaterThan(before);
      expect(threadPool()!.workerPacked, 'operand panels packed by workers').to.be.greaterThan(packed);
      got.forEach((g, i) => expect(g, `output ${i}, ${n} threads`).to.deep.equal(one[i]));
    }
  });

  it('convolutions (forward with bias and relu, and both gradients) give the same numbers, bit for bit, with 1 and 2 threads, in both matmul precisions', async () => {
    // A conv layer's training step: 'same' padding and strides 2 (masked im2col panels), products
    // of 8 * 16 * 16 * 72 x 16 and 144 x 2048 x 16 multiply-adds, each split over the threads.
    const buildConv = () => {
      const x = K.placeholder([8, 32, 32, 8], null, 'float32');
      const w = K.placeholder([3, 3, 8, 16], null, 'float32');
      const b = K.placeholder([16], null, 'float32');
      const y = K.relu(K.bias_add(K.conv2d(x, w, [2, 2], 'same'), b));
      const [gx, gw] = K.gradients(K.sum(K.square(y)), [x, w]);
      const f = K.function([x, w, b], [y, gx!, gw!]);
      const vals = [fill([8, 32, 32, 8], 5), fill([3, 3, 8, 16], 6), fill([16], 7)];
      return () => f(vals).map((r) => Array.from(r.data));
    };
    expect(8 * 16 * 16 * 72 * 16).to.be.greaterThan(PARALLEL_MIN_MACS);
    const home = process.env['KERAS_HOME'];
    try {
      for (const precision of ['float64', 'float32']) {
        reloadConfig({ env: { KERAS_HOME: home, THEANINE_MATMUL_PRECISION: precision } });
        setThreads(1);
        clearCompileCache();
        const one = buildConv()();
        setThreads(2);
        clearCompileCache();
        const run = buildConv();
        const before = threadPool()?.workerPanels ?? 0;
        let got = run();
        for (let i = 0; i < 200 && (threadPool()?.workerPanels ?? 0) === before; i++) {
          await new Promise((r) => setTimeout(r, 20));
          got = run();
        }
        expect(threadPool()!.workerPanels, `${precision}: panels summed by workers`).to.be.greaterThan(before);
        got.forEach((g, i) => expect(g, `${precision}, output ${i}`).to.deep.equal(one[i]));
      }
    } finally {
      reloadConfig({ env: { KERAS_HOME: home } });
    }
  });

  it('stays correct after clear_session hands the workers a new memory', async () => {
    setThreads(1);
    clearCompileCache();
    const one = build()();
    setThreads(2);
    for (let round = 0; round < 3; round++) {
      clearCompileCache();
      const run = build();
      const before = threadPool()?.workerPanels ?? 0;
      let got = run();
      for (let i = 0; i < 200 && (threadPool()?.workerPanels ?? 0) === before; i++) {
        await new Promise((r) => setTimeout(r, 20));
        got = run();
      }
      expect(threadPool()!.workerPanels, `round ${round}: panels summed by workers`).to.be.greaterThan(before);
      got.forEach((g, i) => expect(g, `round ${round}, output ${i}`).to.deep.equal(one[i]));
    }
  });

  it('splits long elementwise loops of the SIMD tier over the threads, with the same numbers bit for bit', async () => {
    const n = PARALLEL_MIN_ELEMENTS + 5 * 4096 + 7; // past the split threshold, an edge chunk
    const xs = fill([n], 5), ys = fill([n], 6);
    const build = () => {
      const x = K.placeholder([n], null, 'float32');
      const y = K.placeholder([n], null, 'float32');
      const f = K.function([x, y], [K.tanh(x.mul(y).add(1)).mul(x).sub(y), K.log(K.exp(y.mul(0.25)).add(x.mul(x)))]);
      return { run: () => f([xs, ys]).map((r) => Array.from(r.data)), source: (f as unknown as { source(): string }).source() };
    };
    setThreads(1);
    clearCompileCache();
    const one = build();
    expect(one.source).to.contain('WebAssembly SIMD');
    expect(one.source).to.not.contain('w.par(');
    const want = one.run();
    for (const t of [2, 3]) {
      setThreads(t);
      clearCompileCache();
      const many = build();
      expect(many.source).to.contain('w.par(');
      const before = pool()?.workerChunks ?? 0;
      let got = many.run();
      for (let i = 0; i < 200 && (pool()?.workerChunks ?? 0) === before; i++) {
        await new Promise((r) => setTimeout(r, 20));
        got = many.run();
      }
      expect(pool()!.workerChunks, `${t} threads: chunks computed by workers`).to.be.greaterThan(before);
      got.forEach((g, i) => expect(g, `output ${i}, ${t} threads`).to.deep.equal(want[i]));
    }
  });

  it('whole float32 products stage their float32 operands for packing on the threads; columns of a wider buffer pack on the calling thread', () => {
    const x = K.placeholder([130, 129], null, 'float32');
    const w = K.placeholder([129, 131], null, 'float32');
    const big = K.placeholder([130, 400], null, 'float32');
    const f = K.function([x, w, big], [K.dot(x, w), K.dot(K.slice(big, [0, 10], [130, 129]), w)]);
    const src = (f as unknown as { source(): string }).source();
    // first product: both operands staged; second: w staged, 129 of 400 columns read where they are (staging would copy 3x the operand)
    expect(src.match(/rt\.arena\.stage\(/g)?.length, src).to.equal(3);
    expect(src).to.match(/rt\.packRows\(/);
    const vals = [fill([130, 129], 0), fill([129, 131], 1), fill([130, 400], 2)];
    setThreads(1);
    const got = f(vals).map((r) => Array.from(r.data));
    setWasmKernel(false);
    clearCompileCache();
    try {
      const js = K.function([x, w, big], [K.dot(x, w), K.dot(K.slice(big, [0, 10], [130, 129]), w)])(vals).map((r) => Array.from(r.data));
      got.forEach((g, i) => expect(g, `output ${i}`).to.deep.equal(js[i]));
    } finally {
      setWasmKernel(true);
    }
  });

  it('operands staged by a product that never reached its sums (an error in between) are dropped when the next product starts', () => {
    setThreads(1);
    packArena.f64(4096);
    let a32 = packArena.f32();
    let z = 2 * packArena.base;
    a32.fill(0, z, z + 64);
    // an 8 x 4 operand of ones staged to pack into the first 32 elements, then no tiles() call
    packArena.stage(new Float32Array(32).fill(1), 0, 32, 4 * (z + 1024), 0, 0, 4, 1, 4 * z, 1, 8, 4, 8);
    packArena.f64(4096); // the next product's step
    a32 = packArena.f32();
    z = 2 * packArena.base;
    packArena.tiles(4 * z, 128, 4 * z + 256, 64, 0, 4, 4 * z + 512, 1, 1, 64, 3); // no blocks, so only staged operands would be packed
    expect(Array.from(a32.subarray(z, z + 32))).to.deep.equal(new Array(32).fill(0));
    // the same staging followed by its own tiles() call packs it
    packArena.stage(new Float32Array(32).fill(1), 0, 32, 4 * (z + 1024), 0, 0, 4, 1, 4 * z, 1, 8, 4, 8);
    packArena.tiles(4 * z, 128, 4 * z + 256, 64, 0, 4, 4 * z + 512, 1, 1, 64, 3);
    expect(Array.from(a32.subarray(z, z + 32))).to.deep.equal(new Array(32).fill(1));
  });

  it('a product of more claims than the claim word holds (5000 small batches) runs on the calling thread, as the JavaScript kernel sums', () => {
    const build = () => {
      const p = K.placeholder([5000, 8, 64], null, 'float32');
      const q = K.placeholder([5000, 64, 8], null, 'float32');
      const f = K.function([p, q], [K.batch_dot(p, q)]);
      const vals = [fill([5000, 8, 64], 7), fill([5000, 64, 8], 8)];
      return () => Array.from(f(vals)[0]!.data);
    };
    setThreads(2);
    setWasmKernel(false);
    clearCompileCache();
    let js: number[];
    try {
      js = build()();
    } finally {
      setWasmKernel(true);
    }
    clearCompileCache();
    expect(build()()).to.deep.equal(js);
  });
});
