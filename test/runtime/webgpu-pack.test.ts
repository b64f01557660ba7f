// Kernels reading more buffers than a shader binds (16 on lavapipe) on gpu:webgpu with fallback
// 'error': their smallest read-only buffers packed into one binding (src/codegen/wgsl/pack.ts),
// copied on the device before the dispatch, against the reference interpreter.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import { webgpuCounts } from '../../src/runtime/gpu/webgpu/session.js';
import { expectClose } from '../helpers/assert.js';
import { onWebgpu } from '../helpers/webgpu.js';

const ERROR = { device: 'gpu', fallback: 'error' } as const;
const REF = { optimizer: 'none' } as const;

describe('gpu device, webgpu mode: packed bindings', function () {
  this.timeout(300_000);
  onWebgpu();

  it('a sum of 24 inputs of three sizes runs in one kernel on the device, each call reading back its output only', () => {
    const xs = Array.from({ length: 24 }, (_, k) => K.placeholder(k % 3 === 0 ? [5, 7] : k % 3 === 1 ? [1, 7] : [5, 1]));
    const y = xs.slice(1).reduce((a, x, k) => (k % 2 === 0 ? K.add(a, K.multiply(x, k + 1)) : K.subtract(a, K.sin(x))), xs[0]!);
    const f = K.function(xs, [y], [], ERROR);
    const feed = xs.map((x, k) => NDArray.from(Array.from({ length: x.shape.reduce((a: number, d) => a * d!, 1) }, (_, i) => Math.cos(k * 3.1 + i)), 'float32').reshape(x.shape as number[]));
    const want = K.function(xs, [y], [], REF)(feed);
    expectClose(f(feed)[0]!, want[0]!, { atol: 2e-5, rtol: 1e-4 });
    expect(f.source()).to.match(/var<storage, read> pk: array<f32>;/).and.not.to.match(/on the host/);
    const before = webgpuCounts();
    expectClose(f(feed)[0]!, want[0]!, { atol: 2e-5, rtol: 1e-4 });
    const after = webgpuCounts();
    expect(after.readbacks - before.readbacks).to.equal(1);
    expect(after.submits - before.submits).to.equal(1);
  });

  it('the gradient of a nested map_fn (a kernel reading 19 buffers) matches the reference', () => {
    const x = K.placeholder([3, 4]);
    const c = K.placeholder([]);
    const y = K.map_fn((r) => K.map_fn((v) => K.multiply(K.sin(v), K.add(K.sum(r), c)), r), x);
    const outs = [y, ...K.gradients(K.sum(y), [x, c])];
    const feed = [NDArray.from(Array.from({ length: 12 }, (_, i) => i / 7), 'float32').reshape([3, 4]), NDArray.from([0.3], 'float32').reshape([])];
    const f = K.function([x, c], outs, [], ERROR);
    const want = K.function([x, c], outs, [], REF)(feed);
    f(feed).forEach((r, k) => expectClose(r, want[k]!, { atol: 2e-5, rtol: 1e-4 }, `output ${k}`));
    expect(f.source()).to.match(/ pk: array<f32>;/);
  });
});
