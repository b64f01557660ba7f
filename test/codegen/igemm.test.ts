// Float32 convolutions summed through an indirection buffer (src/codegen/cpu/wasm/igemm.ts,
// src/codegen/cpu/igemm.ts): the compiled function runs the igemm kernel (no im2col panels
// packed), and its sums are those of the im2col product through the JavaScript kernel, bit for
// bit (the same float32 sums in the same order), for every geometry the indirection handles:
// strides, dilation, 'same' and 'valid' padding, 1 to 3 spatial axes, odd channel counts, edge
// tiles in both directions, an epilogue, and conv_transpose (the input gradient, strides dividing);
// a conv of few input channels that reads no padding through a table of window origins (windowA);
// the kernel gradient (conv_kernel_grad) through a table of window origins over the input copied
// with its padding as zeros; the same numbers with 1 and 2 threads, the workers taking part.
import { expect } from 'chai';
import { setHandoffModel } from '../../src/codegen/cpu/handoff.js';
import { backend as K, NDArray } from '../../src/index.js';
import type { Node } from '../../src/ir/node.js';
import { setEnvironment } from '../../src/api/config.js';
import { setMatmulFma, setWasmKernel } from '../../src/codegen/cpu/wasm-kernel.js';
import { IGEMM_VARIANT, setThreads, threadPool, WINDOW_GRAD_VARIANT } from '../../src/codegen/cpu/threads.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';
import { mulberry32 } from '../../src/ir/random.js';

function fill(shape: readonly number[], seed: number): NDArray {
  const r = mulberry32(seed);
  return new NDArray(Float32Array.from({ length: shape.reduce((p, d) => p * d, 1) }, () => (r() * 2 - 1) * (r() < 0.2 ? 16 : 1)), [...shape]);
}

/** `uses`: the runtime helpers the compiled function calls (igemmA: conv and conv_transpose; windowA: a conv of few channels reading no padding; windowGradA: conv_kernel_grad). */
interface Case { name: string; x: number[]; w: number[]; build: (x: Node, w: Node) => Node[]; uses?: string[] }

const gradW = (y: Node, w: Node) => K.gradients(K.sum(K.square(y)), [w]) as Node[];

const CASES: Case[] = [
  { name: 'conv2d 3x3 same (the bench layer, smaller)', x: [2, 12, 12, 16], w: [3, 3, 16, 32], build: (x, w) => [K.conv2d(x, w, 1, 'same')] },
  { name: 'conv2d strides (2, 1), odd channels, features not a multiple of 8, rows not a multiple of 4', x: [3, 9, 11, 5], w: [3, 2, 5, 7], build: (x, w) => [K.conv2d(x, w, [2, 1], 'same')] },
  { name: 'conv2d valid, dilation (2, 1), one channel (window origins)', x: [2, 13, 12, 1], w: [3, 3, 1, 10], build: (x, w) => [K.conv2d(x, w, 1, 'valid', null, [2, 1])], uses: ['windowA'] },
  {
    name: 'the CNN layer, smaller: conv2d 5x5 valid from one channel + bias + relu + max pool (window origins)', x: [3, 14, 13, 1], w: [5, 5, 1, 16],
    build: (x, w) => [K.pool2d(K.relu(K.bias_add(K.conv2d(x, w, 1, 'valid'), K.sum(w, [0, 1, 2]))), [2, 2], [2, 2], 'valid', null, 'max')], uses: ['windowA'],
  },
  { name: 'conv2d valid, strides (2, 3), two channels, features not a multiple of 8 (window origins)', x: [3, 11, 14, 2], w: [3, 4, 2, 7], build: (x, w) => [K.conv2d(x, w, [2, 3], 'valid')], uses: ['windowA'] },
  { name: 'conv1d valid, dilation 3, one channel (window origins)', x: [5, 31, 1], w: [4, 1, 9], build: (x, w) => [K.conv1d(x, w, 1, 'valid', null, 3)], uses: ['windowA'] },
  { name: 'conv3d valid, strides 2, two channels (window origins)', x: [2, 7, 6, 9, 2], w: [2, 3, 2, 2, 5], build: (x, w) => [K.conv3d(x, w, 2, 'valid')], uses: ['windowA'] },
  { name: 'conv2d valid, three channels (pointers: more channels than window origins pay for)', x: [2, 9, 9, 3], w: [3, 3, 3, 8], build: (x, w) => [K.conv2d(x, w, 1, 'valid')] },
  { name: 'conv2d with bias and relu fused into the epilogue', x: [2, 10, 10, 6], w: [3, 3, 6, 9], build: (x, w) => [K.relu(K.bias_add(K.conv2d(x, w, 1, 'same'), K.sum(w, [0, 1, 2])))] },
  { name: 'conv1d causal', x: [3, 40, 7], w: [4, 7, 12], build: (x, w) => [K.conv1d(x, w, 1, 'causal')] },
  { name: 'conv3d same, strides 2', x: [2, 6, 7, 5, 3], w: [3, 2, 3, 3, 8], build: (x, w) => [K.conv3d(x, w, 2, 'same')] },
  {
    name: 'the input gradient of a strides-1 conv (conv_transpose) and the kernel gradient', x: [2, 9, 10, 6], w: [3, 3, 6, 11],
    build: (x, w) => K.gradients(K.sum(K.square(K.conv2d(x, w, 1, 'same'))), [x, w]) as Node[], uses: ['igemmA', 'windowGradA'],
  },
  { name: 'kernel gradient of conv2d strides 2, same (the padding copied as zeros)', x: [2, 11, 10, 3], w: [3, 3, 3, 6], build: (x, w) => gradW(K.conv2d(x, w, 2, 'same'), w), uses: ['igemmA', 'windowGradA'] },
  { name: 'kernel gradient of conv2d valid, one channel (the CNN step\'s layer, smaller)', x: [4, 12, 12, 1], w: [5, 5, 1, 16], build: (x, w) => gradW(K.relu(K.conv2d(x, w, 1, 'valid')), w), uses: ['windowGradA'] },
  { name: 'kernel gradient of conv2d dilation (2, 3), same, two channels', x: [2, 10, 11, 2], w: [3, 2, 2, 5], build: (x, w) => gradW(K.conv2d(x, w, 1, 'same', null, [2, 3]), w), uses: ['igemmA', 'windowGradA'] },
  { name: 'kernel gradient of conv1d dilation 3, causal', x: [3, 30, 5], w: [3, 5, 9], build: (x, w) => gradW(K.conv1d(x, w, 1, 'causal', null, 3), w), uses: ['windowGradA'] },
  { name: 'kernel gradient of conv3d strides (1, 2, 1), same', x: [2, 5, 7, 4, 3], w: [2, 3, 2, 3, 5], build: (x, w) => gradW(K.conv3d(x, w, [1, 2, 1], 'same'), w), uses: ['windowGradA'] },
  {
    name: 'the input gradient of a conv of strides (2, 3), same (conv_transpose reading dy where the strides divide)', x: [2, 11, 13, 4], w: [3, 4, 4, 6],
    build: (x, w) => K.gradients(K.sum(K.square(K.conv2d(x, w, [2, 3], 'same'))), [x]) as Node[],
  },
  { name: 'conv1d_transpose-like: the input gradient of conv1d strides 2, dilation 2, valid', x: [3, 21, 3], w: [3, 3, 5], build: (x, w) => K.gradients(K.sum(K.square(K.conv1d(x, w, 2, 'valid', null, 2))), [x]) as Node[] },
  { name: 'conv2d_transpose strides 2, same', x: [2, 6, 5, 7], w: [3, 3, 4, 7], build: (x, w) => [K.conv2d_transpose(x, w, [2, 12, 10, 4], 2, 'same')] },
  { name: 'conv2d_transpose strides 1, valid', x: [2, 7, 8, 9], w: [3, 3, 5, 9], build: (x, w) => [K.conv2d_transpose(x, w, [2, 9, 10, 5], 1, 'valid')] },
];

function run(c: Case): { outs: Float32Array[]; source: string } {
  const x = K.placeholder(c.x, null, 'float32');
  const w = K.placeholder(c.w, null, 'float32');
  const f = K.function([x, w], c.build(x, w));
  const outs = f([fill(c.x, 1), fill(c.w, 2)]).map((r) => r.data as Float32Array);
  return { outs, source: f.source() };
}

describe('codegen/cpu convolutions through an indirection buffer (igemm)', function () {
  this.timeout(120000);
  // The JavaScript kernel sums as the WebAssembly ones do without fused multiply-adds.
  // the hand-off model (src/codegen/cpu/handoff.ts) off: the workers take part whatever the machine's load
  beforeEach(() => { setMatmulFma(false); setHandoffModel(false); setEnvironment({ THEANINE_MATMUL_PRECISION: 'float32' }); clearCompileCache(); });
  afterEach(() => { setWasmKernel(true); setThreads(undefined); setMatmulFma(undefined); setHandoffModel(true); setEnvironment({ THEANINE_MATMUL_PRECISION: undefined }); clearCompileCache(); });

  for (const c of CASES) {
    it(`${c.name}: the igemm kernel, bit for bit the im2col product's sums`, () => {
      setThreads(1);
      const got = run(c);
      for (const h of c.uses ?? ['igemmA']) expect(got.source, 'the compiled function').to.include(`rt.${h}(`);
      if ((c.uses ?? ['igemmA']).includes('igemmA')) expect(got.source).to.include(`, ${IGEMM_VARIANT});`);
      if (c.uses?.some((h) => h.startsWith('window')) === true) expect(got.source).to.include(`, ${WINDOW_GRAD_VARIANT});`);
      if (c.uses?.includes('windowA') === true) expect(got.source).to.not.include('rt.igemmA(');
      setWasmKernel(false);
      clearCompileCache();
      const want = run(c);
      expect(want.source, 'the JavaScript kernel packs the im2col panels').to.not.include('rt.igemmA(').and.not.include('rt.windowGradA(').and.not.include('rt.windowA(');
      expect(got.outs.length).to.equal(want.outs.length);
      got.outs.forEach((g, i) => {
        expect(g.length, `output ${i}`).to.equal(want.outs[i]!.length);
        for (let k = 0; k < g.length; k++) if (!Object.is(g[k], want.outs[i]![k])) expect.fail(`output ${i}, element ${k}: ${g[k]} against ${want.outs[i]![k]}`);
      });
    });
  }

  it('float64 products (matmul precision "float64") keep the packed float64 kernel', () => {
    setEnvironment({ THEANINE_MATMUL_PRECISION: 'float64' });
    clearCompileCache();
    expect(run(CASES[6]!).source).to.not.include('rt.igemmA(').and.not.include('rt.windowGradA(');
  });

  it('the same numbers, bit for bit, with 1 and 2 threads, the workers summing panels', async () => {
    const c: Case = { name: 'a layer', x: [8, 32, 32, 8], w: [3, 3, 8, 16], build: (x, w) => [K.relu(K.conv2d(x, w, 1, 'same')), ...gradW(K.relu(K.conv2d(x, w, 1, 'same')), w)] };
    setThreads(1);
    const one = run(c).outs;
    setThreads(2);
    clearCompileCache();
    const before = threadPool()?.workerPanels ?? 0;
    let got = run(c);
    expect(got.source).to.include('rt.igemmA(').and.include('rt.windowGradA(');
    for (let i = 0; i < 200 && (threadPool()?.workerPanels ?? 0) === before; i++) {
      await new Promise((r) => setTimeout(r, 20));
      got = run(c);
    }
    expect(threadPool()!.workerPanels, 'panels summed by workers').to.be.greaterThan(before);
    got.outs.forEach((g, i) => expect(Array.from(g), `output ${i}`).to.deep.equal(Array.from(one[i]!)));
  });

  it('a conv through window origins: the same numbers, bit for bit, with 1 and 2 threads, the workers summing panels', async () => {
    const c: Case = { name: 'the CNN layer', x: [16, 28, 28, 1], w: [5, 5, 1, 16], build: (x, w) => [K.relu(K.conv2d(x, w, 1, 'valid'))] };
    setThreads(1);
    const one = run(c).outs;
    setThreads(2);
    clearCompileCache();
    const before = threadPool()?.workerPanels ?? 0;
    let got = run(c);
    expect(got.source).to.include('rt.windowA(');
    for (let i = 0; i < 200 && (threadPool()?.workerPanels ?? 0) === before; i++) {
      await new Promise((r) => setTimeout(r, 20));
      got = run(c);
    }
    expect(threadPool()!.workerPanels, 'panels summed by workers').to.be.greaterThan(before);
    got.outs.forEach((g, i) => expect(Array.from(g), `output ${i}`).to.deep.equal(Array.from(one[i]!)));
  });
});
