// Memory of the gpu device's gpu.js modes over hundreds of input shapes (issue 28 item 3; the
// webgpu mode's own test is webgpu-memory.test.ts): one function called with 200 batch sizes,
// heap and process RSS measured after full collections every 50 sizes, then after clear_session.
// Each shape compiles its own gpu.js kernels (gpu.js bakes output sizes into a kernel); the
// kernel cache keeps at most MAX_GPU_KERNELS (src/runtime/gpu/kernels.ts), destroying the ones
// it drops, and the compile cache 16 specialisations per program. Runs in whatever gpu.js mode
// this machine gives (headless GL under xvfb-run in CI, webasm without a display).
import { expect } from 'chai';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { backend as K, NDArray } from '../../src/index.js';
import { _setMaxGpuKernels, gpuKernelCount, MAX_GPU_KERNELS } from '../../src/runtime/gpu/kernels.js';
import { gpuDevice, webgpuRequested } from '../../src/runtime/gpu/device.js';
import { loadGpuJs } from '../../src/runtime/gpu/gpujs.js';
import { needs } from '../helpers/needs.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const MB = 2 ** 20;

/** Full collections, and a moment for the GL driver's deferred frees. */
async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('gpu device (gpu.js modes): memory over many shapes', function () {
  this.timeout(600_000);

  it('200 batch sizes: kernels capped, heap and RSS level off, clear_session gives the kernels and the heap back', async function () {
    const loaded = loadGpuJs();
    needs(this, 'the gpu device\'s gpu.js modes', loaded instanceof Error ? loaded.message : webgpuRequested() ? 'THEANINE_GPU_MODE=webgpu (webgpu-memory.test.ts covers that mode)' : undefined);
    // the device (its GL context and gpu.js' objects) opened first: it stays for the process
    const y = K.placeholder([2]);
    K.function([y], [K.exp(y)], [], { device: 'gpu' })([NDArray.from([1, 2], 'float32')]);
    K.clear_session();
    await settle();
    const heap0 = process.memoryUsage().heapUsed;
    const x = K.placeholder([null, 16]);
    const W = K.variable(NDArray.from(Array.from({ length: 16 * 8 }, (_, i) => Math.sin(i)), 'float32').reshape([16, 8]));
    const f = K.function([x], [K.softmax(K.dot(x, W)), K.sum(K.tanh(x), 1)], [], { device: 'gpu' });
    expect(f.device).to.equal(gpuDevice().name);
    const at: { n: number; heap: number; rss: number; kernels: number }[] = [];
    const N = 200;
    for (let n = 1; n <= N; n++) {
      const got = f([NDArray.from(Array.from({ length: n * 16 }, (_, i) => Math.cos(i)), 'float32').reshape([n, 16])]);
      expect(got[1]!.shape).to.deep.equal([n]);
      expect(got[1]!.data[0]).to.be.closeTo(Array.from({ length: 16 }, (_, i) => Math.tanh(Math.cos(i))).reduce((a, b) => a + b, 0), 1e-4);
      if (n % 50 === 0) {
        await settle();
        at.push({ n, heap: process.memoryUsage().heapUsed, rss: process.memoryUsage().rss, kernels: gpuKernelCount() });
        if (process.env['THEANINE_TEST_VERBOSE'] === '1') console.log(`      ${n} sizes: heap ${(at.at(-1)!.heap / MB).toFixed(1)} MB, RSS ${(at.at(-1)!.rss / MB).toFixed(1)} MB`);
      }
    }
    const table = at.map((a) => `${a.n}: heap ${(a.heap / MB).toFixed(1)} MB, RSS ${(a.rss / MB).toFixed(1)} MB, ${a.kernels} kernels`).join('; ');
    console.log(`      ${f.device}, ${table}`);
    const [, second, , last] = at;
    expect(last!.kernels, table).to.be.at.most(MAX_GPU_KERNELS);
    // Heap: 16 specialisations and the capped kernels' JavaScript objects, whatever the count of shapes.
    expect(last!.heap - second!.heap, table).to.be.below(8 * MB);
    // RSS: four kernels a shape (about 1.2 MB each on Mesa's llvmpipe GL) until the cap is reached
    // (64 shapes here), then level: under 60 MB over the last 100 shapes (the allocator's slack;
    // measured 34 MB, 553 -> 587 MB, on headless GL).
    expect(last!.rss - second!.rss, table).to.be.below(60 * MB);
    K.clear_session();
    await settle();
    const heapAfter = process.memoryUsage().heapUsed;
    const rssAfter = process.memoryUsage().rss;
    console.log(`      after clear_session: heap ${(heapAfter / MB).toFixed(1)} MB (${(heap0 / MB).toFixed(1)} MB before), RSS ${(rssAfter / MB).toFixed(1)} MB`);
    expect(gpuKernelCount()).to.equal(0);
    expect(heapAfter - heap0, 'the heap back within 3 MB').to.be.below(3 * MB);
    expect(rssAfter, 'RSS does not grow after clear_session').to.be.at.most(last!.rss + 5 * MB);
  });

  it('evicted kernels give their memory back: with a cap of 32 kernels, RSS stays level over 160 more shapes', async function () {
    const loaded = loadGpuJs();
    needs(this, 'the gpu device\'s gpu.js modes', loaded instanceof Error ? loaded.message : webgpuRequested() ? 'THEANINE_GPU_MODE=webgpu (webgpu-memory.test.ts covers that mode)' : undefined);
    _setMaxGpuKernels(32);
    try {
      K.clear_session();
      const x = K.placeholder([null, 16]);
      const f = K.function([x], [K.sum(K.tanh(x), 1)], [], { device: 'gpu' });
      const rss: number[] = [];
      for (let n = 1; n <= 200; n++) {
        f([NDArray.from(Array.from({ length: n * 16 }, (_, i) => Math.cos(i)), 'float32').reshape([n, 16])]);
        expect(gpuKernelCount()).to.be.at.most(32);
        if (n === 40 || n === 200) {
          await settle();
          rss.push(process.memoryUsage().rss);
        }
      }
      // 160 kernels compiled and destroyed after the cap was reached: their programs and textures are reused (measured: under 20 MB)
      expect((rss[1]! - rss[0]!) / MB, `RSS ${rss.map((r) => (r / MB).toFixed(1)).join(' -> ')} MB`).to.be.below(30);
    } finally {
      _setMaxGpuKernels(undefined);
      K.clear_session();
    }
  });
});
