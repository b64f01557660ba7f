// The WebAssembly SIMD tier for elementwise loops over broadcast operands
// (src/codegen/cpu/wasm/broadcast.ts): per-example outer products and kernels like them are
// bit-identical to the JavaScript kernels (the tier turned off) and to a direct loop, for row
// lengths that are and are not multiples of 4, rows spanning several examples per chunk, examples
// spanning several chunks, rows shared by every example, two loops and three; and vmap(grad)'s
// per-example gradients, compiled through the tier, equal a loop of compiled gradients.
import { expect } from 'chai';
import { autodiff, backend as K, NDArray } from '../../src/index.js';
import { setSimdTier } from '../../src/codegen/cpu/wasm/elementwise.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';
import type { Node } from '../../src/ir/node.js';

const TIER = 'over broadcasts';
const EDGES = [0, -0, NaN, Infinity, -Infinity, 1e-30, -1e-40, 3.4e38, -2.5];

/** Values of magnitudes 1e-3 to 1e3, the edge values first (`edges`). */
function values(n: number, seed: number, edges = true): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = edges && i < EDGES.length ? EDGES[i]! : (s / 4294967296 - 0.5) * 10 ** ((i % 7) - 3);
  }
  return out;
}

interface Run { outs: Float32Array[]; source: string }
function run(simd: boolean, shapes: number[][], f: (...xs: Node[]) => Node[]): Run {
  setSimdTier(simd);
  clearCompileCache();
  try {
    const ph = shapes.map((s) => K.placeholder(s, null, 'float32'));
    const fn = K.function(ph, f(...ph));
    const outs = fn(shapes.map((s, j) => new NDArray(values(s.reduce((p, q) => p * q, 1), 11 + 7 * j), s, 'float32')));
    return { outs: outs.map((o) => o.data as Float32Array), source: (fn as unknown as { source(): string }).source() };
  } finally {
    setSimdTier(true);
    clearCompileCache();
  }
}

function expectSame(got: Float32Array, want: Float32Array, what: string): void {
  expect(got.length, `${what}: length`).to.equal(want.length);
  for (let i = 0; i < want.length; i++)
    if (!Object.is(got[i], want[i])) expect.fail(`${what}[${i}]: tier ${got[i]}, JavaScript ${want[i]}`);
}

describe('codegen/cpu/wasm SIMD broadcast tier', () => {
  // [A, U, V]: rows of 64 spanning examples at every phase (U = 37), rows of 10 (the last vector
  // overlaps), rows of 5 with 3 per example (a chunk holds hundreds of examples), an example of
  // 30000 elements over 8 chunks, rows of exactly 4
  const outer: [number, number, number][] = [[5, 37, 64], [128, 64, 10], [200, 3, 5], [3, 300, 100], [2, 700, 100], [40, 9, 4]];
  for (const [A, U, V] of outer) {
    it(`per-example outer products x (${A}, ${U}, 1) * y (${A}, 1, ${V}) equal the JavaScript kernel's and the definition bit for bit`, () => {
      const f = (x: Node, y: Node) => [x.mul(y)];
      const shapes = [[A, U, 1], [A, 1, V]];
      const got = run(true, shapes, f);
      expect(got.source).to.contain(TIER);
      const want = run(false, shapes, f);
      expect(want.source).not.to.contain(TIER);
      expectSame(got.outs[0]!, want.outs[0]!, 'x * y');
      const [x, y] = [values(A * U, 11), values(A * V, 18)];
      const def = new Float32Array(A * U * V);
      for (let a = 0; a < A; a++) for (let u = 0; u < U; u++) for (let v = 0; v < V; v++) def[(a * U + u) * V + v] = x[a * U + u]! * y[a * V + v]!;
      expectSame(got.outs[0]!, def, 'x * y against the definition');
    });
  }

  it('a fused kernel of a full operand, a per-example row, a row every example shares and a column (relu(x * y + z) * b, two results) matches', () => {
    const f = (x: Node, y: Node, z: Node, b: Node) => {
      const t = K.relu(x.mul(y).add(z));
      return [t.mul(b), t.sub(x)];
    };
    const shapes = [[6, 50, 1], [6, 1, 22], [6, 50, 22], [22]];
    const got = run(true, shapes, f);
    expect(got.source).to.contain(TIER);
    const want = run(false, shapes, f);
    got.outs.forEach((o, i) => expectSame(o, want.outs[i]!, `result ${i}`));
  });

  it('two loops: an outer product x (300, 1) * y (1, 33) and a column times a shared row matches', () => {
    const f = (x: Node, y: Node) => [x.mul(y), K.maximum(x, y)];
    const shapes = [[300, 1], [1, 33]];
    const got = run(true, shapes, f);
    expect(got.source).to.contain(TIER);
    const want = run(false, shapes, f);
    got.outs.forEach((o, i) => expectSame(o, want.outs[i]!, `result ${i}`));
  });

  it('a kernel with an approximated function (exp) stays JavaScript, its values unchanged', () => {
    const f = (x: Node, y: Node) => [K.exp(x.mul(y).mul(K.constant(1e-3)))];
    const shapes = [[8, 40, 1], [8, 1, 16]];
    const got = run(true, shapes, f);
    expect(got.source).not.to.contain(TIER);
    const [x, y] = [values(8 * 40, 11), values(8 * 16, 18)];
    got.outs[0]!.forEach((v, i) => {
      const [a, u, w] = [Math.floor(i / 640), Math.floor(i / 16) % 40, i % 16];
      const want = Math.fround(Math.exp(Math.fround(Math.fround(x[a * 40 + u]! * y[a * 16 + w]!) * Math.fround(1e-3))));
      if (!Object.is(v, want) && !(Number.isNaN(v) && Number.isNaN(want))) expect(v, `exp[${i}]`).to.be.closeTo(want, 1e-6 * Math.abs(want));
    });
  });

  it('vmap(grad) of an MLP, per-example gradients compiled through the tier, equals a loop of compiled gradients', () => {
    const [B, D, H, C] = [16, 12, 20, 6];
    const v = (shape: number[], seed: number, s: number) => K.variable(new NDArray(values(shape[0]! * (shape[1] ?? 1), seed, false).map((x) => Math.tanh(x) * s), shape, 'float32'));
    const W1 = v([D, H], 3, 0.5);
    const b1 = v([H], 4, 0.1);
    const W2 = v([H, C], 5, 0.5);
    const b2 = v([C], 6, 0.1);
    const params = [W1, b1, W2, b2];
    const loss = (x: Node, y: Node) => {
      const z = K.dot(K.relu(K.dot(x, W1).add(b1)), W2).add(b2);
      return K.logsumexp(z).sub(K.sum(y.mul(z)));
    };
    const grads = (x: Node, y: Node) => K.gradients(loss(x, y), params);
    clearCompileCache();
    const X = K.placeholder([B, D], null, 'float32');
    const Y = K.placeholder([B, C], null, 'float32');
    const per = K.function([X, Y], autodiff.vmap(grads)(X, Y) as Node[]);
    expect((per as unknown as { source(): string }).source()).to.contain(TIER);
    const x1 = K.placeholder([D], null, 'float32');
    const y1 = K.placeholder([C], null, 'float32');
    const one = K.function([x1, y1], grads(x1, y1));
    const xs = values(B * D, 9, false).map((x) => Math.tanh(x));
    const ys = new Float32Array(B * C);
    for (let i = 0; i < B; i++) ys[i * C + ((i * 5) % C)] = 1;
    const got = per([new NDArray(xs, [B, D], 'float32'), new NDArray(ys, [B, C], 'float32')]);
    for (let i = 0; i < B; i++) {
      const want = one([new NDArray(xs.slice(i * D, (i + 1) * D), [D], 'float32'), new NDArray(ys.slice(i * C, (i + 1) * C), [C], 'float32')]);
      want.forEach((w, k) => {
        const g = got[k]!.data.subarray(i * w.size, (i + 1) * w.size);
        w.data.forEach((wv, j) => expect(Math.abs(g[j]! - wv), `example ${i}, gradient ${k}[${j}]: ${g[j]} against ${wv}`).to.be.at.most(1e-6 + 1e-5 * Math.abs(wv)));
      });
    }
    clearCompileCache();
  });
});
