// Memory on gpu:webgpu stays bounded by bytes over hundreds of input shapes, on the device (the
// worker's live buffers) and in the process (heap and RSS), and clear_session gives the device's
// back. Each shape is a specialisation with shaders of its own: the compile cache keeps 16 per
// program (their buffers freed as they leave) and the worker keeps the PIPELINES most recently
// dispatched shaders (each holds the driver's compiled code), collecting the ones it drops.
import { expect } from 'chai';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { backend as K, NDArray } from '../../src/index.js';
import { webgpuCounts } from '../../src/runtime/gpu/webgpu/session.js';
import { onWebgpu } from '../helpers/webgpu.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const MB = 2 ** 20;

describe('gpu:webgpu memory over many shapes', function () {
  this.timeout(600_000);
  onWebgpu();

  it('200 batch sizes: device bytes, heap and RSS level off, and clear_session gives the device\'s back', () => {
    K.clear_session();
    gc();
    const base = webgpuCounts();
    const heap0 = process.memoryUsage().heapUsed;
    const x = K.placeholder([null, 16]);
    const W = K.variable(NDArray.from(Array.from({ length: 16 * 8 }, (_, i) => Math.sin(i)), 'float32').reshape([16, 8]));
    const f = K.function([x], [K.softmax(K.dot(x, W)), K.sum(K.tanh(x), 1)], [], { device: 'gpu' });
    const at: { n: number; heap: number; rss: number; buffers: number; bytes: number }[] = [];
    const N = 200;
    for (let n = 1; n <= N; n++) {
      const got = f([NDArray.from(Array.from({ length: n * 16 }, (_, i) => Math.cos(i)), 'float32').reshape([n, 16])]);
      expect(got[1]!.shape).to.deep.equal([n]);
      if (n % 50 === 0) {
        gc();
        const c = webgpuCounts();
        at.push({ n, heap: process.memoryUsage().heapUsed, rss: process.memoryUsage().rss, buffers: c.buffers - base.buffers, bytes: c.bytes - base.bytes });
      }
    }
    const table = at.map((a) => `${a.n}: heap ${(a.heap / MB).toFixed(1)} MB, RSS ${(a.rss / MB).toFixed(1)} MB, device ${a.buffers} buffers ${(a.bytes / MB).toFixed(2)} MB`).join('; ');
    const [, second, , last] = at;
    // Device: the live buffers of at most 16 specialisations (and the variable's), whatever the count of shapes.
    expect(last!.buffers, table).to.equal(second!.buffers);
    expect(last!.bytes, table).to.be.at.most(16 * 4 * (N * 16 * 4) + 16 * 8 * 4);
    // Process: the heap holds 16 specialisations; RSS grows by under 100 MB over the last 150
    // shapes (about 4 MB a shape, 600 MB here, when every shape's pipelines stayed in the worker;
    // with them bounded, the allocator's own slack moves it by some tens of MB).
    expect(last!.heap - second!.heap, table).to.be.below(5 * MB);
    expect(last!.rss - at[0]!.rss, table).to.be.below(100 * MB);
    K.clear_session();
    gc();
    const after = webgpuCounts();
    expect(after.buffers - base.buffers, 'the variable\'s buffer stays until the variable goes').to.be.at.most(1);
    expect(after.bytes - base.bytes).to.be.at.most(16 * 8 * 4);
    expect(process.memoryUsage().heapUsed - heap0, 'the heap back within 2 MB').to.be.below(2 * MB);
    expect(process.memoryUsage().rss, 'RSS does not grow after clear_session').to.be.at.most(last!.rss + 5 * MB);
  });
});
