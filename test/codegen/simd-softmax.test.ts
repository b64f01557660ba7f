// Softmax and its relatives on the cpu's SIMD row tier (src/codegen/cpu/wasm/reduce.ts, reduce-rows.ts,
// reduce-pair.ts): the pieces that make a row fast each give the value the slower piece gave
// (exp of a non-positive argument, the pmax row max with its exact recheck, the four-per-load row
// sum), and softmax, log-softmax, the softmax cross-entropy and attention's scaled, masked softmax
// stay within docs/numerics.md's bounds of the reference interpreter on every cpu tier (JavaScript
// kernels, the SIMD tier on 1 and 2 threads, row pairs off, float64 element lanes, float64
// approximations), over row counts that are odd, fewer than the threads, long enough for
// several parallel passes, rows of length 1, 3 and 4097, rows of -Infinity, NaN and huge values.
import { expect } from 'chai';
import { setHandoffModel } from '../../src/codegen/cpu/handoff.js';
import { backend as K, NDArray } from '../../src/index.js';
import { setFloat32Approximations, setSimdTier } from '../../src/codegen/cpu/wasm/elementwise.js';
import { setRowPairs } from '../../src/codegen/cpu/wasm/reduce-pair.js';
import { setReduceF32Elements } from '../../src/codegen/cpu/wasm/reduce.js';
import { APPROX32, Consts, EXP_NONPOSITIVE_CONSTS, expNonPositive32 } from '../../src/codegen/cpu/wasm/approx.js';
import { Body, I32, V128, VOID, WA, memarg, moduleBytes, op } from '../../src/codegen/cpu/wasm/encode.js';
import { setThreads } from '../../src/codegen/cpu/threads.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';
import type { Node } from '../../src/ir/node.js';

const ulp32 = (x: number) => {
  const a = Math.abs(Math.fround(x));
  if (a < 2 ** -126) return 2 ** -149;
  return 2 ** (Math.floor(Math.log2(a)) - 23);
};

/** A module whose run(bytes) applies `approx` to the float32 values at [0, bytes) and stores them at bytes + [0, bytes). */
function approxModule(approx: (b: Body, c: Consts, x: number, t: number) => void, consts: readonly number[]): (bytes: number) => void {
  const b = new Body(1, [[1, I32], [8 + consts.length, V128]]);
  const [BYTES, I, X, T] = [0, 1, 2, 3];
  const c = new Consts(b, 9, true);
  for (const x of consts) c.get(x).ops(op.drop);
  b.i32(0).set(I);
  b.ops(op.loop, VOID);
  b.get(I).get(BYTES).ops(op.i32Add);
  b.get(I).v(0x00, ...memarg(4, 0)).set(X);
  approx(b, c, X, T);
  b.v(0x0b, ...memarg(4, 0));
  b.addTo(I, 16);
  b.get(I).get(BYTES).ops(op.i32LtU, op.brIf, 0, op.end);
  const mem = memory();
  const inst = new WA!.Instance(new WA!.Module(moduleBytes([{ name: 'run', params: 1, body: b }])), { env: { mem } });
  return inst.exports['run'] as (bytes: number) => void;
}
let mem: { buffer: ArrayBuffer } | undefined;
const memory = () => (mem ??= new WA!.Memory({ initial: 256 }));

/** Deterministic values in [-scale, scale). */
function values(n: number, seed: number, scale = 4): Float32Array {
  const out = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = (s / 4294967296 - 0.5) * 2 * scale;
  }
  return out;
}

/** Bit-identical, NaN matching NaN. */
function expectSame(got: Float32Array, want: Float32Array, what: string): void {
  expect(got.length).to.equal(want.length);
  for (let i = 0; i < got.length; i++) if (!Object.is(got[i], want[i])) expect.fail(`${what}: element ${i} is ${got[i]}, expected ${want[i]}`);
}

interface Tier { readonly name: string; readonly set: () => void }
const reset = () => { setSimdTier(true); setThreads(undefined); setRowPairs(true); setReduceF32Elements(true); setFloat32Approximations(true); };
/** Every way the cpu device computes these rows. */
const TIERS: readonly Tier[] = [
  { name: 'JavaScript kernels', set: () => { setSimdTier(false); setThreads(1); } },
  { name: 'SIMD, 1 thread', set: () => setThreads(1) },
  { name: 'SIMD, 2 threads', set: () => setThreads(2) },
  { name: 'SIMD, row pairs off', set: () => { setThreads(2); setRowPairs(false); } },
  { name: 'SIMD, float64 element lanes', set: () => { setThreads(2); setReduceF32Elements(false); } },
  { name: 'SIMD, float64 approximations', set: () => { setThreads(2); setFloat32Approximations(false); } },
];

function run(f: (xs: readonly Node[]) => Node, shapes: readonly number[][], data: readonly Float32Array[], tier: Tier | 'reference'): Float32Array {
  if (tier !== 'reference') tier.set();
  clearCompileCache();
  try {
    const xs = shapes.map((s) => K.placeholder(s, null, 'float32'));
    const fn = K.function(xs, [f(xs)], [], tier === 'reference' ? { optimizer: 'none' } : {});
    return fn(data.map((d, i) => new NDArray(d, shapes[i]!, 'float32')))[0]!.data as Float32Array;
  } finally {
    reset();
    clearCompileCache();
  }
}

/**
 * Rows with the edge values: a row of -Infinity, one with a NaN, one of huge values, one with
 * -Infinity at every other place, one constant. `finite`: the NaN and constant rows only (the
 * cross-entropy: where a probability is 0 the reference clips it to 1e-7 and the compiled graph's
 * fused form gives Infinity, on every tier, JavaScript included).
 */
function withEdges(d: Float32Array, rows: number, L: number, finite = false): Float32Array {
  const put = (r: number, fill: (j: number) => number) => { if (r < rows) for (let j = 0; j < L; j++) d[r * L + j] = fill(j); };
  if (!finite) put(1, () => -Infinity);
  put(2, (j) => (j === L >> 1 ? NaN : d[2 * L + j]!));
  if (!finite) put(3, (j) => (j % 3 === 0 ? 3e38 : -3e38));
  if (!finite) put(4, (j) => (j % 2 === 0 ? -Infinity : d[4 * L + j]!));
  put(5, () => 7);
  return d;
}

describe('codegen/wasm softmax rows', () => {
  before(() => setHandoffModel(false));
  after(() => { setHandoffModel(undefined); reset(); });

  it('exp of a non-positive argument: the float32 exp bit for bit (every 61st float32 in [-Infinity, -0], NaN)', () => {
    const exp = APPROX32['exp']!;
    const general = approxModule(exp.render, exp.consts);
    const nonPositive = approxModule(expNonPositive32, EXP_NONPOSITIVE_CONSTS);
    const n = 1 << 20;
    const f = new Float32Array(memory().buffer);
    const bits = new Uint32Array(memory().buffer);
    const first = 0x80000000, last = 0xff800000; // -0 to -Infinity
    let checked = 0;
    for (let start = first; start <= last; start += n * 61) {
      let m = 0;
      for (let p = start; p <= last && m < n; p += 61) bits[m++] = p >>> 0;
      if (start === first) { bits[m - 3] = 0xff800000; bits[m - 2] = 0x7fc00000; bits[m - 1] = 0x80000001; }
      while (m % 4 !== 0) f[m++] = -1;
      general(m * 4);
      const want = f.slice(m, 2 * m);
      nonPositive(m * 4);
      for (let i = 0; i < m; i++) if (!Object.is(f[m + i], want[i])) expect.fail(`exp(${f[i]}): ${f[m + i]}, the float32 exp gives ${want[i]}`);
      checked += m;
    }
    expect(checked).to.be.greaterThan(2 ** 25);
    // arguments whose y log2(e) is a float32 half-integer: k rounds by ties to even in both forms
    const log2e = Math.fround(Math.LOG2E);
    const ties: number[] = [];
    const near = new Float32Array(1);
    const nearBits = new Uint32Array(near.buffer);
    for (let n = -150; n < 0; n++) {
      near[0] = (n + 0.5) / log2e;
      const b0 = nearBits[0]!;
      for (let d = -64; d <= 64; d++) {
        nearBits[0] = b0 + d;
        if (Math.fround(near[0]! * log2e) === n + 0.5) ties.push(near[0]!);
      }
    }
    expect(ties.length).to.be.greaterThan(20);
    let m = 0;
    for (const y of ties) f[m++] = y;
    while (m % 4 !== 0) f[m++] = -1;
    general(m * 4);
    const want = f.slice(m, 2 * m);
    nonPositive(m * 4);
    for (let i = 0; i < m; i++) if (!Object.is(f[m + i], want[i])) expect.fail(`exp(${f[i]}) (a tie): ${f[m + i]}, the float32 exp gives ${want[i]}`);
  });

  it('row max and min: bit-identical to the reference with NaN, zeros of both signs and infinities (the pmax pass and its recheck)', () => {
    for (const L of [5, 8, 1000]) {
      const rows = Math.ceil(8192 / L) + 3;
      const d = withEdges(values(rows * L, 11), rows, L);
      const zeroRow = (r: number, v: (j: number) => number) => { for (let j = 0; j < L; j++) d[r * L + j] = v(j); };
      zeroRow(6, (j) => (j === L - 1 ? 0 : -0)); // max +0, found last
      zeroRow(7, () => -0); // max -0
      zeroRow(8, (j) => (j === 0 ? -0 : -1)); // max -0 among negatives
      zeroRow(9, (j) => (j % 2 === 0 ? 0 : -0)); // min -0
      zeroRow(10, () => Infinity);
      for (const [what, f] of [['max', (x: Node) => K.max(x, 1)], ['min', (x: Node) => K.min(x, 1)]] as const) {
        const ref = run(([x]) => f(x!), [[rows, L]], [d], 'reference');
        const got = run(([x]) => f(x!), [[rows, L]], [d], TIERS[1]!);
        expectSame(got, ref, `${what} of rows of ${L}`);
      }
    }
  });

  it('row sum: four float32 values per load, the pair order of docs/numerics.md bit for bit', () => {
    for (const L of [2, 3, 4, 5, 6, 7, 8, 9, 13, 1000, 1001, 1002, 1003]) {
      const rows = Math.ceil(8192 / L) + 1;
      const d = values(rows * L, 5 + L, 3);
      const got = run(([x]) => K.sum(x!, 1), [[rows, L]], [d], TIERS[1]!);
      for (let r = 0; r < rows; r++) {
        // element pair i (elements 2i, 2i + 1) into the lanes of accumulator i mod 4, then ((a0 + a1) + (a2 + a3)), lane 0 + lane 1
        const acc = [[0, 0], [0, 0], [0, 0], [0, 0]];
        for (let i = 0; 2 * i < L; i++) {
          const a = acc[i % 4]!;
          a[0] = a[0]! + d[r * L + 2 * i]!;
          a[1] = a[1]! + (2 * i + 1 < L ? d[r * L + 2 * i + 1]! : 0);
        }
        const lane = (l: number) => (acc[0]![l]! + acc[1]![l]!) + (acc[2]![l]! + acc[3]![l]!);
        const want = Math.fround(lane(0) + lane(1));
        if (!Object.is(got[r], want)) expect.fail(`sum of row ${r} of ${L}: ${got[r]}, the pair order gives ${want}`);
      }
    }
  });

  // [rows, L]: fewer rows than threads, odd counts, several parallel passes (1087 rows of 1000 and
  // 349527 of 3 are past the tier's split threshold of 2^20 elements), rows the tier leaves to JavaScript (1, 4097)
  const SHAPES: readonly [number, number][] = [[1, 1000], [7, 1], [9, 3], [1087, 1000], [349527, 3], [5, 4097]];
  const FAMILY: readonly { name: string; inputs: number; f: (xs: readonly Node[]) => Node; bound: (ref: number, L: number, row: Float32Array) => number }[] = [
    // relative: exp's 2^-23 in the numerator and in the sum, the sum's and the quotient's roundings
    // (2^-24 each), the reference's own rounding (2^-24); the float64 sum's gamma_L
    { name: 'softmax', inputs: 1, f: ([x]) => K.softmax(x!), bound: (ref, L) => SOFTMAX_REL * Math.abs(ref) + 2 * gamma(L) * Math.abs(ref) * L },
    // (x - m) - log(s): log's 1 ulp of log(s), the subtraction's rounding
    { name: 'log-softmax', inputs: 1, f: ([x]) => K.log(K.softmax(x!)), bound: (ref, L) => 2 * ulp32(ref) + 2 * ulp32(Math.log(L)) },
    { name: 'scaled, masked softmax (attention)', inputs: 2, f: ([x, m]) => K.softmax(x!.mul(0.125).add(m!)), bound: (ref, L) => SOFTMAX_REL * Math.abs(ref) + 2 * gamma(L) * Math.abs(ref) * L },
    // a row's sum of t log p: each term within its p's 3 ulps (log: 3 ulps of p are 3 * 2^-23 absolute), then float32 roundings
    { name: 'softmax cross-entropy', inputs: 2, f: ([x, t]) => K.categorical_crossentropy(K.softmax(x!), t!), bound: (ref, L) => 4 * ulp32(ref) + L * 16 * 2 ** -23 },
  ];
  const gamma = (n: number) => (n * 2 ** -53) / (1 - n * 2 ** -53);
  const SOFTMAX_REL = 2 * 2 ** -23 + 4 * 2 ** -24;

  for (const fam of FAMILY) {
    it(`${fam.name}: every cpu tier within the stated bound of the reference interpreter, 1 and 2 threads bit-identical`, function () {
      this.timeout(120000);
      let worst = 0;
      let worstUlps = 0;
      for (const [rows, L] of SHAPES) {
        if (fam.inputs === 2 && L === 3 && rows > 1000) continue; // the two-input cases: the long rows of 1000 cover the parallel passes
        const shapes = Array.from({ length: fam.inputs }, () => [rows, L]);
        const data = shapes.map((_, i) => {
          if (i === 0) return withEdges(values(rows * L, 17 + rows), rows, L, fam.name.includes('cross'));
          // a mask (-1e9 at a spread of places) or targets (rows of nonnegative weights)
          const d = values(rows * L, 29 + rows, 1);
          for (let j = 0; j < d.length; j++) d[j] = fam.name.includes('mask') ? (j % 7 === 3 ? -1e9 : 0) : Math.abs(d[j]!);
          return d;
        });
        const ref = run(fam.f, shapes, data, 'reference');
        let one: Float32Array | undefined;
        for (const tier of TIERS) {
          const got = run(fam.f, shapes, data, tier);
          expect(got.length, `${fam.name} [${rows}, ${L}] on ${tier.name}`).to.equal(ref.length);
          for (let i = 0; i < ref.length; i++) {
            const g = got[i]!, w = ref[i]!;
            if (Number.isNaN(w) || !Number.isFinite(w)) { if (!Object.is(g, w)) expect.fail(`${fam.name} [${rows}, ${L}] on ${tier.name}: element ${i} is ${g}, the reference's ${w}`); continue; }
            const err = Math.abs(g - w);
            const bound = fam.bound(w, L, data[0]!);
            if (!(err <= bound)) expect.fail(`${fam.name} [${rows}, ${L}] on ${tier.name}: element ${i} is ${g}, the reference's ${w} (bound ${bound})`);
            if (fam.name === 'softmax' && tier.name.startsWith('SIMD') && w !== 0) { worst = Math.max(worst, err / Math.abs(w)); worstUlps = Math.max(worstUlps, err / ulp32(w)); }
          }
          if (tier.name === 'SIMD, 1 thread') one = got;
          if (tier.name === 'SIMD, 2 threads') expectSame(got, one!, `${fam.name} [${rows}, ${L}], 2 threads against 1`);
        }
      }
      // softmax on the SIMD tier: within 8 * 2^-24 relative (the bound above); measured on these
      // rows 5.3 * 2^-24, 4 float32 ulps of the reference's value at most
      if (fam.name === 'softmax') {
        expect(worst * 2 ** 24, 'softmax: largest relative error, units of 2^-24').to.be.at.most(8);
        expect(worstUlps, 'softmax: largest error in float32 ulps').to.be.at.most(4);
      }
    });
  }

  it('a division by a row value: by its reciprocal within one float32 ulp, and rows whose reciprocal is not normal (magnitudes below 2^-126 or above 2^126, zero, Infinity, NaN) divided exactly', function () {
    this.timeout(60000);
    // x / max(x): the row max is the reference's bit for bit, so a divided row equals the reference's
    const L = 1000;
    const scale = [1, 3e-39, 1e-45, 2e38, 1.5e-38, 9e37, 0.5, 1e-30, 1e30, 0, Infinity, NaN];
    const rows = scale.length;
    const d = values(rows * L, 5, 1);
    for (let r = 0; r < rows; r++) for (let j = 0; j < L; j++) d[r * L + j] = Math.abs(d[r * L + j]!) * scale[r]!;
    for (let r = 0; r < rows; r++) d[r * L + 7] = scale[r]!; // each row's max
    const f = ([x]: readonly Node[]) => x!.div(K.max(x!, 1, true));
    const ref = run(f, [[rows, L]], [d], 'reference');
    for (const tier of TIERS.slice(1)) {
      const got = run(f, [[rows, L]], [d], tier);
      for (let r = 0; r < rows; r++) {
        const m = Math.fround(Math.abs(scale[r]!));
        const divided = (m > 0 && m < 2 ** -126) || (m > 2 ** 126 && m < Infinity);
        for (let j = 0; j < L; j++) {
          const g = got[r * L + j]!, w = ref[r * L + j]!;
          if (divided || !Number.isFinite(w)) {
            if (!Object.is(g, w)) expect.fail(`${tier.name}, row of scale ${scale[r]}: element ${j} is ${g}, the reference's ${w}`);
          } else if (!(Math.abs(g - w) <= ulp32(w))) expect.fail(`${tier.name}, row of scale ${scale[r]}: element ${j} is ${g}, the reference's ${w} (more than 1 ulp)`);
        }
      }
    }
    reset();
  });
});
