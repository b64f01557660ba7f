// The gpu device's webgpu mode (THEANINE_GPU_MODE=webgpu): WGSL kernels on Dawn's adapter, behind
// a synchronous call. Needs the `webgpu` package and an adapter (lavapipe from Mesa 25 on Linux);
// without them the tests skip with a line saying why (CI sets THEANINE_TEST_NO_SKIP=1). The op and
// gradient tables run on this mode through test/helpers/targets.ts (THEANINE_TEST_TARGETS=gpu).
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import { webgpu, webgpuCounts } from '../../src/runtime/gpu/webgpu/session.js';
import { simdAdapter } from '../../src/codegen/wgsl/strategy.js';
import { FallbackError } from '../../src/runtime/fallback.js';
import { setWarningSink } from '../../src/runtime/warn.js';
import { expectClose } from '../helpers/assert.js';
import { onWebgpu } from '../helpers/webgpu.js';

const GPU = { device: 'gpu' } as const;
const REF = { optimizer: 'none' } as const;

describe('gpu device, webgpu mode', function () {
  // lavapipe compiles each shader with LLVM on a loaded machine
  this.timeout(300_000);
  onWebgpu();

  const rand = (shape: number[], seed: number): NDArray => {
    const n = shape.reduce((a, b) => a * b, 1);
    return NDArray.from(Array.from({ length: n }, (_, i) => Math.sin(seed * 1000 + i * 1.7) * 0.8), 'float32').reshape(shape);
  };

  it('says gpu:webgpu and matches the reference interpreter on fused elementwise chains, reductions and products', () => {
    const x = K.placeholder([37, 70]);
    const w = K.placeholder([70, 45]);
    const graph = [
      K.softmax(K.dot(x, w)), // a product, then row max, exp and row sum
      K.sum(K.tanh(x).mul(2).sub(K.exp(x.neg())), 1), // a fused chain into a row reduction
      K.max(x, 0), // a column reduction
      K.mean(K.square(x)), // a reduction of everything
    ];
    const f = K.function([x, w], graph, [], GPU);
    expect(f.device).to.equal('gpu:webgpu');
    const vals = [rand([37, 70], 1), rand([70, 45], 2)];
    const got = f(vals);
    const want = K.function([x, w], graph, [], REF)(vals);
    got.forEach((g, k) => expectClose(g, want[k]!, { atol: 2e-5, rtol: 1e-4 }, `output ${k}`));
    // products in workgroup tiles (on a CPU-emulated adapter, register tiles of 8 rows), row reductions as trees in workgroup memory
    expect(f.source()).to.match(simdAdapter(webgpu().description) ? /var c7_0 = 0\.0;/ : /var<workgroup> tA/).and.to.match(/var<workgroup> red: array<f32, 64>/);
  });

  for (const simd of ['1', '0']) {
    it(`matches the reference on products over several tiles, transposed operands, and rows of 67 (THEANINE_WEBGPU_SIMD=${simd})`, () => {
      const saved = process.env['THEANINE_WEBGPU_SIMD'];
      process.env['THEANINE_WEBGPU_SIMD'] = simd;
      K.clear_session();
      try {
        productsAndRows(simd === '1');
      } finally {
        if (saved === undefined) delete process.env['THEANINE_WEBGPU_SIMD'];
        else process.env['THEANINE_WEBGPU_SIMD'] = saved;
        K.clear_session();
      }
    });
  }

  function productsAndRows(simd: boolean): void {
    const a = K.placeholder([67, 33]);
    const b = K.placeholder([33, 130]);
    const graph = [
      K.dot(a, b), // 9 blocks of 8 rows, 2 of 64 columns: the last of each part outside the product
      K.dot(K.transpose(b), K.transpose(a)), // operands read through transposed indices
      K.softmax(K.dot(a, b)), // 67 rows
      K.sum(K.exp(a), 1),
    ];
    const f = K.function([a, b], graph, [], GPU);
    const vals = [rand([67, 33], 3), rand([33, 130], 4)];
    const got = f(vals);
    const want = K.function([a, b], graph, [], REF)(vals);
    got.forEach((g, k) => expectClose(g, want[k]!, { atol: 2e-5, rtol: 1e-4 }, `output ${k}`));
    // SIMD lanes on CPU threads: register tiles and rows without barriers; a GPU: workgroup tiles and trees.
    if (simd) expect(f.source()).to.match(/var c7_1 = 0\.0;/).and.match(/@workgroup_size\(8\)\nfn main\(@builtin\(global_invocation_id\) gid: vec3u/).and.not.match(/workgroupBarrier/);
    else expect(f.source()).to.match(/var<workgroup> tA/).and.match(/var<workgroup> red: array<f32, 64>/).and.not.match(/var c7_1/);
  }

  it('runs batched products and int32 arithmetic exactly', () => {
    const a = K.placeholder([3, 5, 33]);
    const b = K.placeholder([3, 33, 17]);
    const i = K.placeholder([6], null, 'int32');
    const f = K.function([a, b, i], [K.batch_dot(a, b), i.mul(3).sub(7)], [], GPU);
    const va = rand([3, 5, 33], 3), vb = rand([3, 33, 17], 4);
    const [c, j] = f([va, vb, NDArray.from([0, 1, -2, 1000, 65536, -100000], 'int32')]);
    expectClose(c!, K.function([a, b], [K.batch_dot(a, b)], [], REF)([va, vb])[0]!, { atol: 2e-5, rtol: 1e-4 });
    expect(j!.dtype).to.equal('int32');
    expect(j!.toArray()).to.deep.equal([-7, -4, -13, 2993, 196601, -300007]);
  });

  it('keeps variables on the device: a training step uploads its inputs and reads back its loss only', () => {
    const W = K.variable(rand([4, 3], 5), 'float32', 'W');
    const bias = K.variable(NDArray.from([0.1, -0.2, 0.3], 'float32'), 'float32', 'b');
    const x = K.placeholder([8, 4]);
    const y = K.placeholder([8, 3]);
    const loss = K.mean(K.square(K.tanh(K.dot(x, W).add(bias)).sub(y)));
    const [gW, gb] = K.gradients(loss, [W, bias]);
    const step = K.function([x, y], [loss], [K.update_sub(W, gW!.mul(0.5)), K.update_sub(bias, gb!.mul(0.5))], GPU);
    const xs = rand([8, 4], 6), ys = rand([8, 3], 7);
    // The same steps on the cpu, from the same starting values.
    const W2 = K.variable(K.get_value(W), 'float32', 'W2');
    const b2 = K.variable(K.get_value(bias), 'float32', 'b2');
    const loss2 = K.mean(K.square(K.tanh(K.dot(x, W2).add(b2)).sub(y)));
    const [gW2, gb2] = K.gradients(loss2, [W2, b2]);
    const step2 = K.function([x, y], [loss2], [K.update_sub(W2, gW2!.mul(0.5)), K.update_sub(b2, gb2!.mul(0.5))], { device: 'cpu' });
    step([xs, ys]); // the first call uploads the variables
    step2([xs, ys]);
    const before = webgpuCounts();
    const losses = [0, 1, 2].map(() => step([xs, ys])[0]!.item());
    const after = webgpuCounts();
    expect(after.uploads - before.uploads, 'uploads: x and y per call').to.equal(6);
    expect(after.readbacks - before.readbacks, 'read-backs: the loss per call').to.equal(3);
    expect(after.submits - before.submits, 'one command buffer per call').to.equal(3);
    const want = [0, 1, 2].map(() => step2([xs, ys])[0]!.item());
    expectClose(losses, want, { rtol: 1e-4 });
    expectClose(K.get_value(W), K.get_value(W2), { atol: 1e-5, rtol: 1e-4 });
    expectClose(K.get_value(bias), K.get_value(b2), { atol: 1e-5, rtol: 1e-4 });
    // set_value replaces the device copy
    K.set_value(bias, NDArray.from([0, 0, 0], 'float32'));
    expect(K.get_value(bias).toArray()).to.deep.equal([0, 0, 0]);
  });

  it('runs a Scan on the device: every step in one command buffer, nothing read back between steps', () => {
    // 300 steps: short Scans are unrolled by the passes
    const xs = K.placeholder([2, 300, 3]);
    const w = K.variable(rand([3, 2], 9), 'float32');
    const u = K.variable(rand([2, 2], 10), 'float32');
    const [last, outs, states] = K.rnn((x, [h]) => {
      const hn = K.tanh(K.dot(x, w).add(K.dot(h!, u)));
      return [hn, [hn]];
    }, xs, [K.zeros([2, 2], 'float32')]);
    const graph = [last!, outs!, states![0]!];
    const v = rand([2, 300, 3], 8);
    const f = K.function([xs], graph, [], { ...GPU, fallback: 'error' });
    f([v]);
    const before = webgpuCounts();
    const got = f([v]);
    const after = webgpuCounts();
    expect(after.submits - before.submits, 'one command buffer').to.equal(1);
    expect(after.readbacks - before.readbacks, 'the three outputs').to.equal(3);
    expect(f.source()).to.match(/scan 300 steps, every step's kernels in the call's command buffer/);
    const want = K.function([xs], graph, [], REF)([v]);
    got.forEach((g, k) => expectClose(g, want[k]!, { atol: 1e-5, rtol: 1e-4 }, `output ${k}`));
  });

  it('warns naming what runs on the host, and fallback "error" refuses it (int64, not on the device)', () => {
    const x = K.placeholder([4], null, 'int64');
    const y = x.add(3);
    const v = NDArray.from([1, -2, 3, 2 ** 40], 'int64');
    expect(() => K.function([x], [y], [], { ...GPU, fallback: 'error' })([v])).to.throw(FallbackError, /runs on the host on gpu:webgpu: stores int64/);
    const warned: string[] = [];
    const orig = setWarningSink((m) => { warned.push(m); });
    try {
      const got = K.function([x], [y], [], { ...GPU, fallback: 'warn' })([v]);
      expect(Array.from(got[0]!.data, Number)).to.deep.equal([4, 1, 6, 2 ** 40 + 3]);
    } finally {
      setWarningSink(orig);
    }
    expect(warned.join('\n')).to.match(/stores int64/);
  });

  it('keeps device memory bounded over many input shapes, and clear_session gives it back', () => {
    K.clear_session(); // what is left are earlier tests' variables (their values live on the device)
    const base = webgpuCounts().buffers;
    const x = K.placeholder([null, 8]);
    const f = K.function([x], [K.sum(K.tanh(x).mul(2), 1)], [], GPU);
    const live: number[] = [];
    for (let n = 1; n <= 40; n++) {
      const v = rand([n, 8], n);
      const got = f([v])[0]!;
      expect(got.shape).to.deep.equal([n]);
      live.push(webgpuCounts().buffers - base);
    }
    // Specialisations past the compile cache's bound (16 per program) free their buffers.
    expect(live[39]!, `live device buffers ${live.join(' ')}`).to.be.at.most(live[19]!);
    expect(live[39]!).to.be.at.most(16 * 4);
    K.clear_session();
    expect(webgpuCounts().buffers).to.equal(base);
  });

  it("moves a call's uploads to the worker without detaching the caller's arrays, and rebinds buffers made again", () => {
    const x = K.placeholder([64, 50]);
    const v = K.variable(rand([64, 50], 4));
    const f = K.function([x], [K.sum(x.mul(v), 1)], [], GPU);
    const ref = K.function([x], [K.sum(x.mul(v), 1)], [], REF);
    const xs = rand([64, 50], 5);
    for (let round = 0; round < 3; round++) {
      expectClose(f([xs])[0]!, ref([xs])[0]!, { atol: 2e-5, rtol: 1e-4 }, `round ${round}`);
      // the input array is still the caller's, whole (a transfer would have detached it)
      expect(xs.data.length).to.equal(64 * 50);
      expect(xs.data[1]).to.equal(Math.fround(Math.sin(5000 + 1.7) * 0.8));
      // a new value frees the variable's device buffer: the next call binds the one made for it
      K.set_value(v, rand([64, 50], 6 + round));
    }
  });

  it('draws random numbers from the reference\'s Philox words', () => {
    const f = K.function([], [K.random_uniform([1000], 0, 1, 'float32', 7), K.random_binomial([1000], 0.3, 'float32', 9)], [], GPU);
    const want = K.function([], [K.random_uniform([1000], 0, 1, 'float32', 7), K.random_binomial([1000], 0.3, 'float32', 9)], [], REF)([]);
    const got = f([]);
    expectClose(got[0]!, want[0]!, { atol: 1e-7 });
    expect(got[1]!.toArray()).to.deep.equal(want[1]!.toArray());
  });
});
