// The WebAssembly SIMD tier for fused elementwise loops (src/codegen/cpu/wasm/elementwise.ts):
// arithmetic, comparisons, selects, max/min, abs, sqrt, float32 rounding and flag (bool) loads
// and stores are bit-identical to the JavaScript kernels (and so to the reference); tanh, exp, sigmoid and log, the vector
// approximations, are within 1 ulp of the reference's value in float32 (the bound stated in the tier's header).
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import { CHUNK, F32_MIN_ELEMENTS, MIN_ELEMENTS, nodeKind, setFloat32Approximations, setSimdTier } from '../../src/codegen/cpu/wasm/elementwise.js';
import { ExprBuilder, KERNEL_ROWS, type ScalarOp } from '../../src/codegen/kernel/expr.js';
import { ivar, newVar } from '../../src/codegen/kernel/index-expr.js';
import { elementwiseOps, type ElementwiseOp } from '../../src/ir/ops/elementwise.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';
import type { Node } from '../../src/ir/node.js';

/** Not a multiple of the chunk nor of the 8 elements one loop iteration takes: edge chunks are exercised. */
const N = 3 * CHUNK + 13;
const EDGES = [0, -0, NaN, Infinity, -Infinity, 1e-30, -1e-40, 1e-8, -1e-8, 0.5, -0.5, 9.01, -9.01, 19.9, 20.1, -25, 88, -100, 3.4e38];

function values(seed: number, scale: number): Float32Array {
  const out = new Float32Array(N);
  let s = seed;
  for (let i = 0; i < N; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const u = s / 4294967296 - 0.5;
    // a spread of magnitudes: tiny, small, moderate, saturating
    out[i] = i < EDGES.length ? EDGES[i]! : u * scale * 10 ** ((i % 9) - 6);
  }
  return out;
}

interface Built { out: NDArray; source: string }
function build(simd: boolean, f: (x: Node, y: Node) => Node, xs: Float32Array, ys: Float32Array): Built {
  setSimdTier(simd);
  clearCompileCache();
  try {
    const x = K.placeholder([N], null, 'float32');
    const y = K.placeholder([N], null, 'float32');
    const fn = K.function([x, y], [f(x, y)]);
    const out = fn([new NDArray(xs, [N]), new NDArray(ys, [N])])[0]!;
    return { out, source: (fn as unknown as { source(): string }).source() };
  } finally {
    setSimdTier(true);
    clearCompileCache();
  }
}

/** Distance in float32 ulps (NaN only matches NaN; -0 and 0 are 0 ulps apart). */
function ulps(a: number, b: number): number {
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b) ? 0 : Infinity;
  const ord = (v: number) => { const i = new Int32Array(new Float32Array([v]).buffer)[0]!; return i < 0 ? -(i & 0x7fffffff) : i; };
  return Math.abs(ord(a) - ord(b));
}

describe('codegen/cpu/wasm SIMD elementwise tier', () => {
  const sigmoidRef = (x: number) => (x >= 0 ? 1 / (1 + Math.exp(-x)) : Math.exp(x) / (1 + Math.exp(x)));
  const approximated: [string, (x: Node) => Node, (x: number) => number, number][] = [
    ['tanh', (x) => K.tanh(x), Math.tanh, 60],
    ['exp', (x) => K.exp(x), Math.exp, 300],
    ['sigmoid', (x) => K.sigmoid(x), sigmoidRef, 300],
    // negative inputs (NaN), zeros of both signs (-Infinity), Infinity and the float32 subnormal edge values included
    ['log', (x) => K.log(x), Math.log, 1e6],
  ];
  // The float32 form's own approximations (f32x4 arithmetic): the bounds of docs/numerics.md,
  // measured over every float32 input; most elements equal the reference's.
  const bound32: Record<string, number> = { tanh: 2, exp: 1, sigmoid: 2, log: 1 };
  for (const [name, op, ref, scale] of approximated) {
    for (const own of [true, false]) {
      const bound = own ? bound32[name]! : 1;
      const form = own ? 'float32 approximations' : 'float64 approximations on each half vector';
      it(`${name} (${form}) is within ${bound} ulp (float32) of the reference's value, and ${own ? 'equal for most elements' : 'rarely off at all'}`, () => {
        const xs = values(7, scale);
        setFloat32Approximations(own);
        let got: Built;
        try { got = build(true, (x) => op(x), xs, xs); } finally { setFloat32Approximations(true); }
        expect(got.source).to.contain('WebAssembly SIMD f32x4');
        let worst = 0;
        let off = 0;
        got.out.data.forEach((v, i) => {
          const want = Math.fround(ref(xs[i]!));
          const d = ulps(v, want);
          if (d > 0) off++;
          worst = Math.max(worst, d);
          if (want === 0) expect(Object.is(v, want), `${name}(${xs[i]}) keeps its zero's sign`).to.equal(true);
        });
        expect(worst, `${name}: worst ulp distance`).to.be.at.most(bound);
        expect(off, `${name}: elements not equal to the reference's`).to.be.below(own ? N / 2 : N / 1000);
      });
    }
  }

  it('exp over every 3rd float32 value of [1, 2) and (-2, -1] (every reduced argument r of |r| <= ln2/2 occurs) is within 1 ulp', () => {
    // exp's float32 q is a minimax polynomial (approx.ts EXPM1_MINIMAX): its error peaks at the ends
    // of r's range, which these inputs reach (k = 1..3 and -3..-1); every float32 input was
    // measured offline (docs/numerics.md)
    const M = Math.floor((1 << 23) / 3);
    const xs = new Float32Array(2 * M);
    const bits = new Uint32Array(xs.buffer);
    for (let i = 0; i < M; i++) { bits[i] = 0x3f800000 + 3 * i; bits[M + i] = 0xbf800000 + 3 * i; }
    clearCompileCache();
    const x = K.placeholder([2 * M], null, 'float32');
    const fn = K.function([x], [K.exp(x)]);
    expect((fn as unknown as { source(): string }).source()).to.contain('WebAssembly SIMD f32x4');
    const out = fn([new NDArray(xs, [2 * M])])[0]!.data as Float32Array;
    clearCompileCache();
    const want = xs.map((v) => Math.exp(v));
    // exp is positive here: the ulp distance is the distance of the bit patterns
    const a = new Int32Array(out.buffer, out.byteOffset, out.length);
    const b = new Int32Array(want.buffer);
    let worst = 0;
    let off = 0;
    for (let i = 0; i < a.length; i++) {
      const d = Math.abs(a[i]! - b[i]!);
      if (d > 0) off++;
      if (d > worst) worst = d;
    }
    expect(worst, 'worst ulp distance').to.be.at.most(1);
    expect(off, 'elements not equal to the reference\'s').to.be.below(xs.length / 5);
  });

  it('log over positive float32 values of every magnitude (subnormals to 3.4e38, and around 1) is within 1 ulp', () => {
    const xs = new Float32Array(N);
    const bits = new Uint32Array(xs.buffer);
    let s = 5;
    for (let i = 0; i < N; i++) {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      // a third: random bit patterns of positive floats; a third: close to 1; a third: random in (0, 4)
      if (i % 3 === 0) bits[i] = s % 0x7f800000;
      else xs[i] = i % 3 === 1 ? 1 + (s / 4294967296 - 0.5) * 2 ** -(s % 24) : (s / 4294967296) * 4;
    }
    xs[0] = 1; xs[1] = 2 ** -149; xs[2] = 3.4028234663852886e38; xs[3] = Math.fround(Math.SQRT2); xs[4] = Math.fround(Math.SQRT1_2);
    const got = build(true, (x) => K.log(x), xs, xs);
    expect(got.source).to.contain('WebAssembly SIMD');
    let worst = 0;
    let off = 0;
    got.out.data.forEach((v, i) => {
      const d = ulps(v, Math.fround(Math.log(xs[i]!)));
      if (d > 0) off++;
      worst = Math.max(worst, d);
    });
    expect(got.out.data[0]).to.equal(0);
    expect(worst, 'worst ulp distance').to.be.at.most(1);
    expect(off, 'elements not equal to the reference\'s').to.be.below(N / 1000);
  });

  it('the tier renders the kernel ops whose elementwise row names a lane instruction (its `wasm` spelling), comparisons as masks', () => {
    const b = new ExprBuilder(() => 'float32');
    const v = newVar(8);
    const [x, y] = [b.load(0, ivar(v)), b.load(1, ivar(v))];
    const named = Object.values(elementwiseOps as Record<string, ElementwiseOp>).filter((r) => r.spelling.wasm !== undefined);
    expect(named.map((r) => r.name)).to.include.members(['add', 'sub', 'mul', 'div', 'maximum', 'minimum', 'neg', 'abs', 'sqrt', 'equal', 'less']);
    for (const [op, row] of KERNEL_ROWS) {
      if (op === 'select' || ['tanh', 'exp', 'sigmoid', 'log'].includes(row.name)) continue; // selects and the approximated functions have renderings of their own
      const e = b.op(op as ScalarOp, ...(row.arity === 1 ? [x] : [x, y]));
      const want = row.spelling.wasm === undefined ? undefined : ['eq', 'ne', 'lt', 'gt', 'le', 'ge'].includes(row.spelling.wasm) ? 'branch' : 'plain';
      expect(nodeKind(e), `${row.name} (${op})`).to.equal(want);
    }
  });

  it('a fused chain of arithmetic, comparisons, selects, max, abs, sqrt is bit-identical to the JavaScript kernel', () => {
    const xs = values(11, 8);
    const ys = values(12, 8);
    // tanh(x*0 + 30) is exactly 1 (or NaN where x is not finite) on both tiers: it makes the kernel eligible without blurring the comparison
    const chain = (x: Node, y: Node) => K.switch(K.greater(x, 0), K.sqrt(K.abs(x)).div(y.sub(3)), K.maximum(x, y).mul(2).sub(K.minimum(x, 1)))
      .mul(K.tanh(x.mul(0).add(30))).add(K.relu(y.neg()));
    const js = build(false, chain, xs, ys);
    const simd = build(true, chain, xs, ys);
    expect(js.source).to.not.contain('WebAssembly SIMD');
    expect(simd.source).to.contain('WebAssembly SIMD');
    expect(Array.from(simd.out.data)).to.deep.equal(Array.from(js.out.data));
  });

  it('the benchmark chains relu(x*y + 1)*x - y and sqrt(abs((x*y + 1)/y)) (arithmetic alone) take the float32 form (f32x4) and equal the JavaScript kernel bit for bit', () => {
    const xs = values(15, 8);
    const ys = values(16, 8);
    for (const chain of [(x: Node, y: Node) => K.relu(x.mul(y).add(1)).mul(x).sub(y), (x: Node, y: Node) => K.sqrt(K.abs(x.mul(y).add(1).div(y)))]) {
      const js = build(false, chain, xs, ys);
      const simd = build(true, chain, xs, ys);
      expect(js.source).to.not.contain('WebAssembly SIMD');
      expect(simd.source).to.contain('WebAssembly SIMD f32x4');
      expect(Array.from(simd.out.data)).to.deep.equal(Array.from(js.out.data));
    }
  });

  it('a kernel with a float64 intermediate that is not rounded to float32 keeps two float64 lanes (f64x2), bit-identical', () => {
    const xs = values(17, 8);
    const ys = values(18, 8);
    // x * 0.1 + relu(y) in float64, rounded once at the end: in float32 lanes the sum would round twice
    const chain = (x: Node, y: Node) => K.cast(K.cast(x, 'float64').mul(0.1).add(K.cast(K.relu(y), 'float64')), 'float32');
    const js = build(false, chain, xs, ys);
    const simd = build(true, chain, xs, ys);
    expect(simd.source).to.contain('WebAssembly SIMD f64x2');
    expect(Array.from(simd.out.data)).to.deep.equal(Array.from(js.out.data));
    // and the float32 lanes would differ here: the same chain rounded after each op is another function
    const rounded = build(true, (x, y) => x.mul(0.1).add(K.relu(y)), xs, ys);
    expect(rounded.source).to.contain('WebAssembly SIMD f32x4');
    expect(Array.from(rounded.out.data)).to.not.deep.equal(Array.from(js.out.data));
  });

  it('a mask kernel (comparison stored as bool) and selects reading it, without a transcendental, take the tier, bit-identical', () => {
    const xs = values(13, 8);
    const ys = values(14, 8);
    const run = (simd: boolean) => {
      setSimdTier(simd);
      clearCompileCache();
      try {
        const x = K.placeholder([N], null, 'float32');
        const y = K.placeholder([N], null, 'float32');
        // relu as K.relu builds it and its gradient's select: the mask is read by two kernels, so it is stored
        const m = K.less_equal(x, 0);
        const fn = K.function([x, y], [m, K.switch(m, K.zeros_like(x), x), K.switch(m, y, y.mul(x))]);
        const outs = fn([new NDArray(xs, [N]), new NDArray(ys, [N])]);
        return { outs: outs.map((o) => Array.from(o.data)), dtype: outs[0]!.dtype, source: (fn as unknown as { source(): string }).source() };
      } finally {
        setSimdTier(true);
        clearCompileCache();
      }
    };
    const js = run(false);
    const simd = run(true);
    expect(js.source).to.not.contain('WebAssembly SIMD');
    expect(simd.source.match(/WebAssembly SIMD/g)?.length, simd.source).to.equal(3);
    expect(simd.dtype).to.equal('bool');
    expect(simd.outs).to.deep.equal(js.outs);
    expect(new Set(simd.outs[0])).to.deep.equal(new Set([0, 1]));
  });

  it('the benchmark chain tanh(x*y + 1)*x - y stays within a few ulps of the JavaScript kernel', () => {
    const xs = values(3, 2);
    const ys = values(4, 2);
    const chain = (x: Node, y: Node) => K.tanh(x.mul(y).add(1)).mul(x).sub(y);
    const js = build(false, chain, xs, ys);
    const simd = build(true, chain, xs, ys);
    expect(simd.source).to.contain('WebAssembly SIMD');
    // one ulp of tanh, scaled by x (|x| < 1 here or an edge value) and then an exact-rounded subtraction
    simd.out.data.forEach((v, i) => {
      const w = js.out.data[i]!;
      if (Number.isNaN(w)) { expect(Number.isNaN(v)).to.equal(true); return; }
      expect(Math.abs(v - w)).to.be.at.most(Math.max(Math.abs(w), Math.abs(xs[i]!)) * 2 ** -22, `element ${i}`);
    });
  });

  describe('kernels of two loops (rows at a stride, such as slices of a matrix)', () => {
    // 70 rows of 130: not a whole number of rows per chunk (31), and the last chunk is short.
    const R = 70, U = 130;
    const gates = (seed: number) => {
      const out = new Float32Array(R * 4 * U);
      let s = seed;
      for (let i = 0; i < out.length; i++) {
        s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
        out[i] = i < EDGES.length ? EDGES[i]! : (s / 4294967296 - 0.5) * 12;
      }
      return out;
    };
    const z = gates(21);
    const c = gates(22).subarray(0, R * U);
    const bias = gates(23).subarray(0, U);
    const run = (simd: boolean, f: (z: Node, c: Node, b: Node) => Node) => {
      setSimdTier(simd);
      clearCompileCache();
      try {
        const zs = K.placeholder([R, 4 * U], null, 'float32');
        const cs = K.placeholder([R, U], null, 'float32');
        const bs = K.placeholder([U], null, 'float32');
        const fn = K.function([zs, cs, bs], [f(zs, cs, bs)]);
        const out = fn([new NDArray(z, [R, 4 * U]), new NDArray(Float32Array.from(c), [R, U]), new NDArray(Float32Array.from(bias), [U])])[0]!;
        return { out, source: (fn as unknown as { source(): string }).source() };
      } finally {
        setSimdTier(true);
        clearCompileCache();
      }
    };
    const gate = (x: Node, g: number) => K.slice(x, [0, g * U], [R, U]);
    it('an LSTM cell update over gate slices (row stride 4 x units), a contiguous state and a broadcast row, each element within the bound', () => {
      const cell = (zs: Node, cs: Node, bs: Node) => K.sigmoid(gate(zs, 1)).mul(cs).add(K.sigmoid(gate(zs, 0)).mul(K.tanh(gate(zs, 2).add(bs))));
      const js = run(false, cell);
      const simd = run(true, cell);
      expect(js.source).to.not.contain('WebAssembly SIMD');
      expect(simd.source).to.contain(`WebAssembly SIMD f32x4, ${R} rows of ${U}`);
      // each of the three approximations is within 1 ulp once rounded; the products and the sum round exactly as in JavaScript
      simd.out.data.forEach((v, i) => {
        const w = js.out.data[i]!;
        if (!Number.isFinite(w)) { expect(Object.is(v, w), `element ${i}: ${v} against ${w}`).to.equal(true); return; }
        expect(Math.abs(v - w)).to.be.at.most((Math.abs(w) + Math.abs(c[i]!) + 1) * 2 ** -21, `element ${i}`);
      });
    });
    it('reads and writes the same elements as the JavaScript kernel: arithmetic over slices is bit-identical', () => {
      // tanh(x*0 + 30) is exactly 1 (NaN where x is not finite) on both tiers: it makes the kernel eligible without blurring the comparison
      const f = (zs: Node, cs: Node, bs: Node) => gate(zs, 3).mul(cs).sub(K.maximum(gate(zs, 1), bs)).mul(K.tanh(gate(zs, 2).mul(0).add(30)));
      const js = run(false, f);
      const simd = run(true, f);
      expect(simd.source).to.contain('WebAssembly SIMD');
      expect(Array.from(simd.out.data)).to.deep.equal(Array.from(js.out.data));
    });
  });

  it(`loops shorter than ${F32_MIN_ELEMENTS} elements stay JavaScript (and equal Math.tanh bit for bit)`, () => {
    const x = K.placeholder([100], null, 'float32');
    const fn = K.function([x], [K.tanh(x)]);
    const xs = Float32Array.from({ length: 100 }, (_, i) => (i - 50) / 7);
    const out = fn([new NDArray(xs, [100])])[0]!;
    expect((fn as unknown as { source(): string }).source()).to.not.contain('WebAssembly SIMD');
    out.data.forEach((v, i) => expect(v).to.equal(Math.fround(Math.tanh(xs[i]!))));
  });

  it(`the float32 form takes loops from ${F32_MIN_ELEMENTS} elements, the float64 form from ${MIN_ELEMENTS}`, () => {
    const n = F32_MIN_ELEMENTS + 3;
    const xs = Float32Array.from({ length: n }, (_, i) => Math.sin(i) * 4);
    const source = (f: (x: Node) => Node) => {
      const x = K.placeholder([n], null, 'float32');
      const fn = K.function([x], [f(x)]);
      fn([new NDArray(xs, [n])]);
      return (fn as unknown as { source(): string }).source();
    };
    expect(source((x) => K.tanh(x.mul(2)))).to.contain('WebAssembly SIMD f32x4');
    // a float64 intermediate (x * 0.1 rounded once, with the relu's select): the float64 form, which needs MIN_ELEMENTS
    expect(source((x) => K.cast(K.cast(x, 'float64').mul(0.1).add(K.cast(K.relu(x), 'float64')), 'float32'))).to.not.contain('WebAssembly SIMD');
  });
});
