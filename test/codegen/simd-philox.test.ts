// Random draws in the WebAssembly SIMD tier (src/codegen/cpu/wasm/philox.ts): random_binomial (dropout's
// mask) and float32 random_uniform, four Philox blocks per i32x4 step, must give the reference's
// numbers (src/ir/random.ts) bit for bit: every element, seeded and unseeded keys, edge chunks,
// thresholds at the ends of [0, 1], and the same values as the JavaScript kernels with the tier off.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import { CHUNK, setSimdTier } from '../../src/codegen/cpu/wasm/elementwise.js';
import { PHILOX_MIN_ELEMENTS } from '../../src/codegen/cpu/wasm/philox.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';
import { nextEpoch } from '../../src/ir/interpret.js';
import { elementBits, seededKey, unit32, unitFloat, unseededKey, type RandomKey } from '../../src/ir/random.js';
import type { Node } from '../../src/ir/node.js';

/** Not a multiple of the chunk nor of the 4 lanes: the last chunk and the last partial vector are exercised. */
const N = 3 * CHUNK + 13;

function run(simd: boolean, make: () => Node[]): { out: Float32Array[]; source: string; nodes: Node[]; epoch: number } {
  setSimdTier(simd);
  clearCompileCache();
  try {
    const nodes = make();
    const f = K.function([], nodes);
    const epoch = nextEpoch() + 1; // the call's own epoch (the counter is process-wide and synchronous)
    const out = f([]).map((a) => a.data as Float32Array);
    return { out, source: (f as unknown as { source(): string }).source(), nodes, epoch };
  } finally {
    setSimdTier(true);
    clearCompileCache();
  }
}

const w = new Uint32Array(4);
const bernoulli = (key: RandomKey, p: number, n: number) => Float32Array.from({ length: n }, (_, i) => (unit32(elementBits(key, i, 0, w)) < p ? 1 : 0));
const uniform = (key: RandomKey, lo: number, hi: number, n: number) => Float32Array.from({ length: n }, (_, i) => lo + (hi - lo) * unitFloat(elementBits(key, i, 0, w), 24));

describe('WebAssembly SIMD tier: Philox draws', () => {
  it('seeded random_binomial and float32 random_uniform are the reference\'s numbers bit for bit', () => {
    const ps = [0.5, 0.3, 0.9, 0, 1, 1e-12, 1 - 2 ** -40, 2 ** -32, 3 * 2 ** -32 + 1e-15];
    const seeds = [9, 2 ** 40 + 7, 0];
    const r = run(true, () => [
      ...ps.map((p, j) => K.random_binomial([N], p, 'float32', seeds[j % seeds.length]!)),
      K.random_uniform([N], -1, 3, 'float32', 5), K.random_uniform([3, N], 0, 1, 'float32', 2 ** 33 + 1),
    ]);
    expect(r.source.match(/WebAssembly SIMD Philox/g)?.length).to.equal(ps.length + 2);
    ps.forEach((p, j) => expect(r.out[j], `p = ${p}`).to.deep.equal(bernoulli(seededKey(seeds[j % seeds.length]!), p, N)));
    expect(r.out[ps.length]).to.deep.equal(uniform(seededKey(5), -1, 3, N));
    expect(r.out[ps.length + 1]).to.deep.equal(uniform(seededKey(2 ** 33 + 1), 0, 1, 3 * N));
  });

  it('unseeded draws use the op\'s id and the call\'s epoch, as the reference', () => {
    const r = run(true, () => [K.random_binomial([N], 0.5, 'float32'), K.random_uniform([N], -2, 2, 'float32')]);
    expect(r.source.match(/WebAssembly SIMD Philox/g)?.length).to.equal(2);
    const uid = (n: Node) => (n.attrs as { uid: number }).uid;
    expect(r.out[0]).to.deep.equal(bernoulli(unseededKey(uid(r.nodes[0]!), r.epoch), 0.5, N));
    expect(r.out[1]).to.deep.equal(uniform(unseededKey(uid(r.nodes[1]!), r.epoch), -2, 2, N));
  });

  it('dropout draws its mask inside the scaling loop, the same values as with the tier off; short draws and other dtypes stay JavaScript', () => {
    const x = Float32Array.from({ length: 3 * N }, (_, i) => Math.sin(i) * 3);
    const make = () => [
      K.dropout(K.variable(new NDArray(x, [N * 3], 'float32')), 0.3, null, 17), // fused: one kernel draws and scales
      K.dropout(K.variable(new NDArray(x, [3, N], 'float32')), 0.5, [1, N], 19), // the mask broadcast over rows: drawn on its own
      K.random_binomial([PHILOX_MIN_ELEMENTS - 1], 0.5, 'float32', 3), K.random_binomial([N], 0.5, 'float64', 3),
    ];
    const on = run(true, make);
    const off = run(false, make);
    expect(on.source.match(/WebAssembly SIMD Philox into mul,div/g)?.length).to.equal(1);
    expect(on.source.match(/WebAssembly SIMD Philox: random_binomial/g)?.length).to.equal(1);
    expect(off.source).not.to.match(/WebAssembly/);
    on.out.forEach((o, j) => expect(Array.from(o), `output ${j}`).to.deep.equal(Array.from(off.out[j]!)));
    // the reference's mask, scaled as the graph computes it (float32 product, then the division by 0.7 rounded to float32)
    const keep = bernoulli(seededKey(17), 0.7, 3 * N);
    const retain = Math.fround(0.7);
    expect(on.out[0]).to.deep.equal(Float32Array.from(x, (v, i) => Math.fround(v * keep[i]!) / retain));
    expect(on.out[0]!.some((v) => v === 0) && on.out[0]!.some((v) => v !== 0)).to.equal(true);
  });
});
