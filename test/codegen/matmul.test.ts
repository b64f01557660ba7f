// The two float64 matmul micro-kernels (WebAssembly SIMD, and the JavaScript one used where that
// is missing) give the reference's numbers bit for bit: float64 sums in the same order (matmul
// precision "float64"; float32 sums: matmul-f32.test.ts).
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import { setWasmKernel, wasmTileModule } from '../../src/codegen/cpu/wasm-kernel.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';
import { expectClose } from '../helpers/assert.js';
import { setEnvironment } from '../../src/api/config.js';

function run(optimizer: 'fast_run' | 'none', wasm: boolean): NDArray[] {
  setWasmKernel(wasm);
  setEnvironment({ THEANINE_MATMUL_PRECISION: 'float64' });
  clearCompileCache();
  try {
    const x = K.placeholder([13, 37], null, 'float32');
    const w = K.placeholder([37, 11], null, 'float32');
    const b = K.placeholder([11], null, 'float32');
    const vals = [[13, 37], [37, 11], [11]].map((s, k) => new NDArray(Float32Array.from({ length: s.reduce((p, d) => p * d, 1) }, (_, i) => Math.sin(i * 0.37 + k)), s));
    return K.function([x, w, b], [K.relu(K.dot(x, w).add(b)), K.dot(x.T, K.dot(x, w))], [], { optimizer })(vals);
  } finally {
    setWasmKernel(true);
    setEnvironment({ THEANINE_MATMUL_PRECISION: undefined });
  }
}

describe('codegen/cpu matmul kernels', () => {
  it('the WebAssembly SIMD kernel is available on this runtime', () => {
    expect(wasmTileModule()).to.not.equal(null);
  });
  for (const wasm of [true, false]) {
    it(`${wasm ? 'WebAssembly' : 'JavaScript'} float64 kernel: bit-identical to the reference (edge tiles, transposed operand, epilogue)`, () => {
      const want = run('none', false);
      const got = run('fast_run', wasm);
      got.forEach((g, i) => expect(Array.from(g.data)).to.deep.equal(Array.from(want[i]!.data)));
    });
  }
});

describe('codegen/cpu packing arena', () => {
  it('thousands of compiled functions share one packing memory (no WebAssembly memory per function)', () => {
    // One memory per function would fail near 13k live functions (V8 reserves address space per memory).
    const fs: unknown[] = [];
    for (let i = 0; i < 300; i++) {
      const x = K.placeholder([2, 3 + (i % 7)], null, 'float32');
      const w = K.placeholder([3 + (i % 7), 2], null, 'float32');
      const f = K.function([x, w], [K.dot(x, w)]);
      f([new NDArray(new Float32Array(2 * (3 + (i % 7))).fill(1), [2, 3 + (i % 7)]), new NDArray(new Float32Array(2 * (3 + (i % 7))).fill(2), [3 + (i % 7), 2])]);
      fs.push(f);
    }
    expect(fs.length).to.equal(300);
  });

  it('grows with the largest product and stays correct after growing', () => {
    const small = K.placeholder([4, 4], null, 'float64');
    const f = K.function([small], [K.dot(small, small)]);
    const eye = new NDArray(Float64Array.from({ length: 16 }, (_, i) => (i % 5 === 0 ? 1 : 0)), [4, 4]);
    expect(Array.from(f([eye])[0]!.data)).to.deep.equal(Array.from(eye.data));
    const big = K.placeholder([300, 300], null, 'float64');
    const g = K.function([big], [K.sum(K.dot(big, big))]);
    expect(g([new NDArray(new Float64Array(90000).fill(1), [300, 300])])[0]!.item()).to.equal(300 * 300 * 300);
    expect(Array.from(f([eye])[0]!.data)).to.deep.equal(Array.from(eye.data)); // the small function after growth
  });
});

describe('codegen/cpu matmul in a Scan body', () => {
  /** A tanh RNN (batch unknown, 12 steps) with its gradients and SGD updates: two calls, the weights changing in between. */
  function rnnSteps(optimizer: 'fast_run' | 'none', wasm: boolean): { outs: NDArray[][]; source: string } {
    setWasmKernel(wasm);
    clearCompileCache();
    try {
      const vals = (s: number[], k: number) => new NDArray(Float32Array.from({ length: s.reduce((p, d) => p * d, 1) }, (_, i) => 0.5 * Math.sin(i * 0.37 + k)), s);
      const x = K.placeholder([null, 12, 5], null, 'float32');
      const W = K.variable(vals([5, 7], 1), 'float32');
      const U = K.variable(vals([7, 7], 2), 'float32');
      const h0 = K.tile(K.expand_dims(K.sum(K.zeros_like(x), [1, 2]), 1), [1, 7]);
      const [last] = K.rnn((xt, [h]) => { const hn = K.tanh(K.dot(xt, W).add(K.dot(h!, U))); return [hn, [hn]]; }, x, [h0]);
      const loss = K.mean(K.square(last));
      const gs = K.gradients(loss, [W, U]);
      const f = K.function([x], [loss, ...gs], [W, U].map((v, i) => K.update(v, v.sub(gs[i]!.mul(0.5)))), { optimizer });
      const xs = [vals([9, 12, 5], 3)];
      return { outs: [f(xs), f(xs), [K.get_value(W), K.get_value(U)]], source: f.source() };
    } finally {
      setWasmKernel(true);
    }
  }
  for (const wasm of [true, false]) {
    it(`${wasm ? 'WebAssembly' : 'JavaScript'} kernel: operands that are the same at every step are packed once per loop, and repacked at the next call; accumulators updated in place`, () => {
      const want = rnnSteps('none', false);
      const got = rnnSteps('fast_run', wasm);
      // U's pack (forward), U's and W's packs in the reverse Scan: kept packs, made again when the variable's
      // value is another array (the updates between the calls make it so), or at step 0 when the Scan's
      // constant is a value the function computes
      expect(got.source.match(/const q\d+ = rt\.arena\.pick\(kp\[\d+\], [^)]*\), p\d+ = rt\.arena\.stale\(q\d+, b\d+\)/g)?.length ?? 0).to.be.greaterThanOrEqual(2);
      expect(got.source, 'a variable\'s pack').to.match(/if \(p\d+\) \{/);
      expect(got.source, 'a computed constant\'s pack').to.match(/if \(p\d+ \|\| step === 0\) \{/);
      // the reverse Scan's weight-gradient accumulators are updated in place: the step's output is its current state's buffer
      expect(got.source.match(/so\d+\[\d+\] = c\d+_\d+;/g)?.length ?? 0).to.be.greaterThanOrEqual(2);
      got.outs.forEach((call, c) => call.forEach((g, i) => expectClose(g, want.outs[c]![i]!, { atol: 1e-6, rtol: 1e-5 }, `call ${c} output ${i}`)));
      expect(Array.from(got.outs[1]![0]!.data)).to.not.deep.equal(Array.from(got.outs[0]![0]!.data)); // the update changed the loss
    });
  }
});
