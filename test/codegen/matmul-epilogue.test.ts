// The epilogue of a whole float32 matrix product (its sums computed first, row-major) run by the
// WebAssembly SIMD tier (src/codegen/cpu/matmul.ts tierEpilogue): bias, relu's select, an SGD
// update of a weight read from a variable. The tier computes each node as the JavaScript epilogue
// does, so the results are equal bit for bit with the tier off, and with 1 or N threads. Small
// float32 products (an MLP's 10-class layer and its gradients) are summed whole too, on the
// calling thread.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import { setSimdTier } from '../../src/codegen/cpu/wasm/elementwise.js';
import { setThreads, threadPool } from '../../src/codegen/cpu/threads.js';
import { setWasmKernel } from '../../src/codegen/cpu/wasm-kernel.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';
import { mulberry32 } from '../../src/ir/random.js';
import type { Node } from '../../src/ir/node.js';

/** Values in [-1, 1), some large, with edge values (NaN, infinities, zeros of both signs) at the start. */
function fill(shape: number[], seed: number, edges = false): NDArray {
  const r = mulberry32(seed);
  const n = shape.reduce((p, d) => p * d, 1);
  const special = [NaN, Infinity, -Infinity, -0, 0, 3.4e38, -1e-40];
  return new NDArray(Float32Array.from({ length: n }, (_, i) => (edges && i < special.length ? special[i]! : (r() * 2 - 1) * (r() < 0.2 ? 64 : 1))), shape);
}

const bits = (a: NDArray): Int32Array => new Int32Array((a.data as Float32Array).slice().buffer);

interface Run { outs: NDArray[]; weight: NDArray; source: string }

/**
 * A forward product with bias and relu (x . w + b, relu), and the SGD step of w by the gradient
 * product x^T . g (M x K times K x N, large enough to be summed whole), run `calls` times.
 */
function run(simd: boolean, threads: number, calls = 2): Run {
  setSimdTier(simd);
  setThreads(threads);
  clearCompileCache();
  try {
    const [M, Kd, N] = [96, 200, 130]; // N not a multiple of the 4-column tiles: rows padded in the sums
    const x = K.placeholder([M, Kd], null, 'float32');
    const g = K.placeholder([M, N], null, 'float32');
    const w = K.variable(fill([Kd, N], 3), 'float32');
    const bias = K.variable(fill([N], 4, true), 'float32');
    const h = K.relu(K.dot(x, w).add(bias));
    const gw = K.dot(K.transpose(x), g);
    const f = K.function([x, g], [h], [K.update(w, (w as Node).sub(gw.mul(0.01)))]);
    const xs = [fill([M, Kd], 1, true), fill([M, N], 2)];
    let outs: NDArray[] = [];
    for (let c = 0; c < calls; c++) outs = f(xs);
    return { outs, weight: K.get_value(w), source: (f as unknown as { source(): string }).source() };
  } finally {
    setSimdTier(true);
    setThreads(undefined);
    clearCompileCache();
  }
}

describe('codegen/cpu matmul epilogues in the SIMD tier', () => {
  it('runs the epilogues of whole float32 products (bias + relu, W - lr g) in the tier', () => {
    const { source } = run(true, 1, 1);
    const tier = source.match(/WebAssembly SIMD( f32x4)?, \d+ rows of \d+: [\w,]+ epilogue/g) ?? [];
    // the forward product (bias, relu) and the weight's update
    expect(tier.length, source).to.equal(2);
    expect(source).to.match(/96 rows of 130: [\w,]*where epilogue/);
    expect(source).to.match(/200 rows of 130: transpose,dot,mul,sub epilogue/);
  });

  it('gives the JavaScript epilogue\'s results bit for bit, and the same with 1 or 2 threads', () => {
    const js = run(false, 1);
    expect(js.source).to.not.match(/WebAssembly SIMD/);
    for (const threads of [1, 2]) {
      const simd = run(true, threads);
      js.outs.forEach((o, i) => expect(bits(simd.outs[i]!), `output ${i}, ${threads} thread(s)`).to.deep.equal(bits(o)));
      expect(bits(simd.weight), `updated weight, ${threads} thread(s)`).to.deep.equal(bits(js.weight));
    }
    // the edge values reached the outputs (NaN and infinities through the bias and the select)
    expect(Array.from(js.outs[0]!.data).some(Number.isNaN)).to.equal(true);
  });

  it('sums small float32 products whole on the calling thread (the pool is not woken), with the same numbers as the JavaScript kernel', () => {
    // dh = (dlogits . W2^T) * (hPre >= 0), logits = h . W2 + b2, dW2 = h^T . dlogits: an MLP's 10-class products
    const make = () => {
      const [B, H, C] = [128, 256, 10];
      const d = K.placeholder([B, C], null, 'float32'), hp = K.placeholder([B, H], null, 'float32');
      const w2 = K.variable(fill([H, C], 5), 'float32');
      const b2 = K.variable(fill([C], 6), 'float32');
      const dh = K.dot(d, K.transpose(w2)).mul(K.cast(K.greater_equal(hp, 0), 'float32'));
      const logits = K.dot(K.relu(hp), w2).add(b2);
      const dw2 = K.dot(K.transpose(K.relu(hp)), d);
      const f = K.function([d, hp], [dh, logits, dw2]);
      return { f, xs: [fill([B, C], 7, true), fill([B, H], 8, true)] };
    };
    const pool = threadPool(true);
    if (pool === undefined) return expect.fail('no thread pool in this runtime');
    const runs = { n: 0 };
    const own = pool.run.bind(pool);
    try {
      setWasmKernel(false);
      clearCompileCache();
      const js = make();
      const want = js.f(js.xs);
      setWasmKernel(true);
      setThreads(2);
      clearCompileCache();
      const wa = make();
      const source = (wa.f as unknown as { source(): string }).source();
      expect(source.match(/rt\.arena\.tiles\([^;]*, false\);/g) ?? [], source).to.have.length(3);
      expect(source).to.match(/128 rows of 256: [\w,]*mul epilogue/);
      pool.run = (...a: Parameters<typeof pool.run>) => { runs.n++; own(...a); };
      const got = wa.f(wa.xs);
      expect(runs.n, 'jobs run on the pool').to.equal(0);
      got.forEach((g, i) => expect(bits(g), `output ${i}`).to.deep.equal(bits(want[i]!)));
    } finally {
      pool.run = own;
      setWasmKernel(true);
      setThreads(undefined);
      clearCompileCache();
    }
  });

  it('the bench\'s MLP training step (784-256-10, batch 128, K.gradients, SGD): the same loss and weights bit for bit with 1 and 2 threads over 3 steps, and the first loss near the reference interpreter\'s', () => {
    // values in [-k, k) (no large ones: the step must train, not diverge)
    const scaled = (shape: number[], seed: number, k: number) => { const r = mulberry32(seed); return new NDArray(Float32Array.from({ length: shape.reduce((p, d) => p * d, 1) }, () => (r() * 2 - 1) * k), shape); };
    const xs = [scaled([128, 784], 15, 0.5), new NDArray(Float32Array.from({ length: 1280 }, (_, i) => (i % 10 === (Math.floor(i / 10) * 7) % 10 ? 1 : 0)), [128, 10])];
    const train = (threads: number, optimizer: 'fast_run' | 'none') => {
      setThreads(threads);
      clearCompileCache();
      try {
        const x = K.placeholder([128, 784], null, 'float32'), t = K.placeholder([128, 10], null, 'float32');
        const params = [K.variable(scaled([784, 256], 11, 0.05), 'float32'), K.variable(scaled([256], 12, 0.01), 'float32'),
          K.variable(scaled([256, 10], 13, 0.1), 'float32'), K.variable(scaled([10], 14, 0.01), 'float32')];
        const [W1, b1, W2, b2] = params as [Node, Node, Node, Node];
        const logits = K.dot(K.relu(K.dot(x, W1).add(b1)), W2).add(b2);
        const e = K.exp(logits.sub(K.max(logits, -1, true)));
        const loss = K.mean(K.negative(K.sum(t.mul(K.log(e.div(K.sum(e, -1, true)))), -1)));
        const gs = (K as unknown as { gradients(l: Node, v: Node[]): Node[] }).gradients(loss, params);
        const f = K.function([x, t], [loss], params.map((v, i) => K.update(v, v.sub(gs[i]!.mul(0.1)))), { optimizer });
        const losses = [0, 1, 2].map(() => f(xs)[0]!.data[0]!);
        return { losses, weights: params.map((v) => K.get_value(v)) };
      } finally {
        setThreads(undefined);
        clearCompileCache();
      }
    };
    const one = train(1, 'fast_run'), two = train(2, 'fast_run');
    expect(two.losses).to.deep.equal(one.losses);
    two.weights.forEach((w, i) => expect(bits(w), `weight ${i}`).to.deep.equal(bits(one.weights[i]!)));
    expect(one.losses[2]!).to.be.below(one.losses[0]!); // it trains
    // float32 sums (K up to 784) against the reference's float64 ones: the loss agrees to about 1e-6 relative
    const ref = train(1, 'none');
    expect(Math.abs(one.losses[0]! - ref.losses[0]!)).to.be.at.most(1e-5 * Math.abs(ref.losses[0]!));
  });
});
