// Random draws in the WebAssembly SIMD tier: a random_binomial or float32 random_uniform loop
// kernel (lower-data.ts: out[i] = philoxDraw(kind, i, key...)) computed four elements at a time,
// one Philox-4x32-10 block per element in each i32x4 lane. The numbers are the reference's
// (src/ir/random.ts) bit for bit: the same counter (i, 0, 0, stream) and key per element, the
// 32x32 -> 64-bit products exact (i64x2.extmul of the unsigned lanes, the high words gathered by a
// shuffle; the low words by i32x4.mul), and the same transform of word 0: the Bernoulli draw's
// x0 * 2^-32 < p is x0 < ceil(p * 2^32) on the integers, and the uniform's
// low + (high - low) * ((x0 >>> 8) * 2^-24) is the same float64 arithmetic rounded once to float32.
// TensorFlow.js' WebAssembly backend is the speed anchor (its dropout is a JavaScript/XNNPACK mix);
// JAX's threefry_2x32 on XLA:CPU is the design anchor (a counter-based block per element, vectorised).
// The chunk wrapper is the elementwise tier's (elementwise.ts): CHUNK results at a time in its
// private memory, copied out with TypedArray.set.
import type { Expr } from '../../kernel/expr.js';
import type { LoopKernel } from '../../kernel/ir.js';
import type { DType } from '../../../ir/dtype.js';
import { DRAW, philoxDraw } from '../../lower/random-fn.js';
import { Body, I32, V128, VOID, memarg, moduleBytes, op } from './encode.js';
import { CHUNK, type EwPlan, ewKernelId, tierOn } from './elementwise.js';

/**
 * Loops shorter than this stay JavaScript. Measured (a compiled function of one seeded
 * random_binomial, medians of 10^5 calls, Node 20): 16 elements 1.6-1.9 us in the tier against
 * 2.3 us in JavaScript, 32 elements 3.1 against 3.7-3.8 us, 64 elements 2.7 against 4.9-5.0 us.
 */
export const PHILOX_MIN_ELEMENTS = 16;

const S = {
  v128Const: 0x0c,
  shuffle: 0x0d,
  i32Splat: 0x11,
  store: 0x0b,
  store64Lane: 0x5b,
  demote: 0x5e,
  and: 0x4e,
  or: 0x50,
  xor: 0x51,
  ltU: 0x3a,
  shrU: 0xad,
  i32Add: 0xae,
  i32Mul: 0xb5,
  extmulLowU: 0xde,
  extmulHighU: 0xdf,
  f64Add: 0xf0,
  f64Mul: 0xf2,
  convertLowS: 0xfe,
} as const;

// Philox's multipliers and key increments (src/ir/random.ts).
const M0 = 0xd2511f53,
  M1 = 0xcd9e8d57,
  W0 = 0x9e3779b9,
  W1 = 0xbb67ae85;

export interface PhiloxPlan {
  readonly n: number;
  /** The store's buffer and the offset of element i's store and of its counter. */
  readonly out: number;
  readonly outOff: number;
  readonly indexOff: number;
  readonly k0: number;
  /** Key word 1: a constant (seeded) or a buffer's element (the evaluation's epoch). */
  readonly k1: { readonly v: number } | { readonly buf: number; readonly at: number };
  readonly bytes: Uint8Array;
  readonly label: string;
}

const constOf = (e: Expr | undefined): number | undefined => (e?.t === 'const' ? e.v : undefined);

/**
 * The plan for a random draw's loop kernel, or undefined where it does not apply: one loop of at
 * least PHILOX_MIN_ELEMENTS, one float32 store at unit stride of cast(float32, philoxDraw(...)) with
 * the element's own index as the counter, a Bernoulli draw or a 24-bit uniform.
 */
export function planPhilox(k: LoopKernel, bufDType: (buf: number) => DType): PhiloxPlan | undefined {
  if (k.vars.length !== 1 || k.stores.length !== 1) return undefined;
  const v = k.vars[0]!;
  const n = v.size;
  const s = k.stores[0]!;
  if (n < PHILOX_MIN_ELEMENTS || s.accumulate === true || s.dyn !== undefined) return undefined;
  if (s.dtype !== 'float32' || bufDType(s.buf) !== 'float32') return undefined;
  const unit = (x: { terms: readonly (readonly [{ kind: string; v?: { id: number } }, number])[]; c: number }) =>
    x.terms.length === 1 && x.terms[0]![0].kind === 'var' && x.terms[0]![0].v!.id === v.id && x.terms[0]![1] === 1
      ? x.c
      : undefined;
  const outOff = unit(s.index as never);
  const c = s.value;
  if (outOff === undefined || c.t !== 'cast' || c.dtype !== 'float32' || c.x.t !== 'call' || c.x.fn !== philoxDraw)
    return undefined;
  const [kind, i, k0, k1, stream, a, b, bits] = [0, 1, 2, 3, 4, 5, 6, 7].map(
    (j) => (c.x as Expr & { t: 'call' }).args[j],
  );
  const [kv, k0v, sv, av, bv, bitsv] = [kind, k0, stream, a, b, bits].map(constOf);
  if (
    kv === undefined ||
    k0v === undefined ||
    sv === undefined ||
    av === undefined ||
    bv === undefined ||
    bitsv === undefined
  )
    return undefined;
  if (!(kv === DRAW.binomial || (kv === DRAW.uniform && bitsv === 24))) return undefined;
  if (i?.t !== 'index') return undefined;
  const indexOff = unit(i.i as never);
  // counters below 2^31: word 1 of the counter (the index's high half) is 0, and i32 arithmetic is exact
  if (indexOff === undefined || indexOff < 0 || indexOff + n >= 2 ** 31) return undefined;
  let key1: PhiloxPlan['k1'];
  if (k1?.t === 'const') key1 = { v: k1.v };
  else if (k1?.t === 'load' && k1.dyn === undefined && k1.index.terms.length === 0)
    key1 = { buf: k1.buf, at: k1.index.c };
  else return undefined;
  if (!tierOn()) return undefined;
  return { n, out: s.buf, outOff, indexOff, k0: k0v, k1: key1, bytes: philoxModule(kv, sv, av, bv), label: k.label };
}

function splat32(x: number): number[] {
  return Array.from(new Uint8Array(new Int32Array([x, x, x, x]).buffer));
}
function splat64(x: number): number[] {
  return Array.from(new Uint8Array(new Float64Array([x, x]).buffer));
}

/** Independent groups of four elements per loop iteration (two measured about 10% faster than one on the dropout case of bench/; three or four, no faster). */
const STREAMS = 2;

/** Lanes of two i64x2 products: the high 32-bit words (bytes 4-7 and 12-15 of each), as one i32x4. */
const HIGH_WORDS = [4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31];
/** Lanes 2, 3 of an i32x4 moved to lanes 0, 1. */
const UPPER_HALF = [8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15];

/**
 * run(n, base, i0, k0, k1): n draws (elements i0 .. i0 + n - 1) as float32 at byte offset base,
 * 4 STREAMS per iteration (the memory past n up to the next multiple of 4 STREAMS is written too).
 */
function philoxModule(kind: number, stream: number, a: number, b: number): Uint8Array {
  // params n, base, i0, k0, k1; i32 locals i (byte offset), end, j (element index); v128 locals:
  // the shared constants and key schedule, then per stream its counter offsets, state and scratch
  const [N, BASE, I0, K0, K1, I, END, J] = [0, 1, 2, 3, 4, 5, 6, 7];
  const [VM0, VM1, STREAM, C1, C2, C3] = [8, 9, 10, 11, 12, 13];
  const KEY0 = Array.from({ length: 10 }, (_, r) => 14 + r);
  const KEY1 = Array.from({ length: 10 }, (_, r) => 24 + r);
  const PER = 11;
  const L = Array.from({ length: STREAMS }, (_, st) => {
    const o = 34 + st * PER;
    return {
      IOTA: o,
      X: [o + 1, o + 2, o + 3, o + 4] as const,
      H0: o + 5,
      L0: o + 6,
      H1: o + 7,
      L1: o + 8,
      T1: o + 9,
      T2: o + 10,
    };
  });
  const f = new Body(5, [
    [3, I32],
    [34 + STREAMS * PER - 8, V128],
  ]);
  const vconst = (bytes: number[], l: number) => f.v(S.v128Const, ...bytes).set(l);
  vconst(splat32(M0 | 0), VM0);
  vconst(splat32(M1 | 0), VM1);
  vconst(splat32(stream | 0), STREAM);
  for (let st = 0; st < STREAMS; st++)
    vconst(Array.from(new Uint8Array(new Int32Array([0, 1, 2, 3].map((j) => 4 * st + j)).buffer)), L[st]!.IOTA);
  // the key schedule, once per call: round r uses (k0 + r W0, k1 + r W1) mod 2^32
  for (let r = 0; r < 10; r++) {
    f.get(K0).i32(Math.imul(r, W0)).ops(op.i32Add).v(S.i32Splat).set(KEY0[r]!);
    f.get(K1).i32(Math.imul(r, W1)).ops(op.i32Add).v(S.i32Splat).set(KEY1[r]!);
  }
  if (kind === DRAW.binomial) {
    // x0 * 2^-32 < p  <=>  x0 < ceil(p * 2^32) (x0 an integer; p * 2^32 is exact); every x0 passes from p * 2^32 > 2^32 - 1 on
    const t = a * 2 ** 32;
    const all = t > 2 ** 32 - 1;
    vconst(splat32(all || !(t > 0) ? 0 : Math.ceil(t) | 0), C1);
    vconst(splat32(all ? -1 : 0), C2);
    vconst(splat32(0x3f800000), C3); // float32 1
  } else {
    vconst(splat64(2 ** -24), C1);
    vconst(splat64(b - a), C2);
    vconst(splat64(a), C3);
  }
  f.get(BASE).set(I).get(I0).set(J);
  f.ops(op.block, VOID).get(N).ops(op.i32Eqz, op.brIf, 0);
  f.get(N).i32(4).ops(op.i32Mul).get(BASE).ops(op.i32Add).set(END);
  f.ops(op.loop, VOID);
  // counter (i, 0, 0, stream) for the elements i = J .. J + 4 STREAMS - 1
  for (const { IOTA, X } of L) {
    f.get(J).v(S.i32Splat).get(IOTA).v(S.i32Add).set(X[0]);
    f.vzero().set(X[1]).vzero().set(X[2]).get(STREAM).set(X[3]);
  }
  const mul = (x: number, m: number, hi: number, lo: number) => {
    f.get(x)
      .get(m)
      .v(S.extmulLowU)
      .get(x)
      .get(m)
      .v(S.extmulHighU)
      .v(S.shuffle, ...HIGH_WORDS)
      .set(hi);
    f.get(x).get(m).v(S.i32Mul).set(lo);
  };
  for (let r = 0; r < 10; r++) {
    // the streams' rounds interleaved: independent chains for the out-of-order core
    for (const { X, H0, L0, H1, L1 } of L) {
      mul(X[0], VM0, H0, L0);
      mul(X[2], VM1, H1, L1);
    }
    for (const { X, H0, L0, H1, L1 } of L) {
      f.get(H1).get(X[1]).v(S.xor).get(KEY0[r]!).v(S.xor).set(X[0]);
      f.get(L1).set(X[1]);
      f.get(H0).get(X[3]).v(S.xor).get(KEY1[r]!).v(S.xor).set(X[2]);
      f.get(L0).set(X[3]);
    }
  }
  L.forEach(({ X, T1, T2 }, st) => {
    if (kind === DRAW.binomial) {
      f.get(I)
        .get(X[0])
        .get(C1)
        .v(S.ltU)
        .get(C2)
        .v(S.or)
        .get(C3)
        .v(S.and)
        .v(S.store, ...memarg(4, 16 * st));
    } else {
      // u = x0 >>> 8 (exact in float64 and in a signed lane); low + (high - low) * (u * 2^-24), each half rounded to float32
      f.get(X[0]).i32(8).v(S.shrU).set(T1);
      f.get(T1)
        .get(T1)
        .v(S.shuffle, ...UPPER_HALF)
        .set(T2);
      for (const [half, at] of [
        [T1, 0],
        [T2, 8],
      ] as const) {
        f.get(I)
          .get(half)
          .v(S.convertLowS)
          .get(C1)
          .v(S.f64Mul)
          .get(C2)
          .v(S.f64Mul)
          .get(C3)
          .v(S.f64Add)
          .v(S.demote)
          .v(S.store64Lane, ...memarg(3, 16 * st + at), 0);
      }
    }
  });
  f.addTo(I, 16 * STREAMS).addTo(J, 4 * STREAMS);
  f.get(I).get(END).ops(op.i32LtU, op.brIf, 0, op.end, op.end);
  return moduleBytes([{ name: 'run', params: 5, body: f }], true);
}

/** The JavaScript side: chunks of the loop [lo, hi), each drawn into the tier's memory and copied out. */
export function renderPhilox(
  p: PhiloxPlan,
  bufName: (id: number) => string,
): { source: string; buffers: number[]; rows: number } {
  const id = ewKernelId(p.bytes);
  const buffers = [...new Set([p.out, ...('buf' in p.k1 ? [p.k1.buf] : [])])].sort((x, y) => x - y);
  const at = (x: string, off: number) => (off === 0 ? x : `${x} + ${off}`);
  const lines = [
    `  const w = rt.ew(${id});`,
    '  const m = w.mem;',
    `  const k1 = ${'buf' in p.k1 ? `${bufName(p.k1.buf)}[${p.k1.at}]` : String(p.k1.v)};`,
    `  for (let s = lo; s < hi; s += ${CHUNK}) {`,
    `    const e = hi < s + ${CHUNK} ? hi : s + ${CHUNK};`,
    `    w.run(e - s, 0, ${at('s', p.indexOff)}, ${p.k0 | 0}, k1);`,
    `    ${bufName(p.out)}.set(m.subarray(0, e - s), ${at('s', p.outOff)});`,
    '  }',
  ];
  const source = `function k(${[...buffers.map(bufName), 'lo', 'hi'].join(', ')}) { // WebAssembly SIMD Philox: ${p.label.replace(/[^\w,. -]/g, '')}\n${lines.join('\n')}\n}`;
  return { source, buffers, rows: p.n };
}

/**
 * A draw whose only reader is the next loop, an elementwise one over the same elements (dropout:
 * x * mask / retain): both in the tier, chunk by chunk, the draw written straight into the
 * region where the elementwise module reads the mask (the two modules share the tier's private
 * memory), so the mask never leaves it and the arithmetic runs in SIMD too.
 * `ew` is the elementwise tier's plan of the reader; undefined where the pair does not fit.
 */
export function fusablePair(p: PhiloxPlan, ew: EwPlan | undefined): EwPlan | undefined {
  if (ew === undefined || ew.shared || ew.cols !== undefined || ew.n !== p.n || p.outOff !== 0) return undefined;
  const at = ew.loads.filter((l) => l.buf === p.out);
  if (at.length !== 1 || at[0]!.off !== 0 || ew.stores.some((s) => s.buf === p.out)) return undefined;
  return ew;
}

/** The JavaScript side of a fused pair (fusablePair): per chunk, the other inputs copied in, the draw, the arithmetic, the results copied out. */
export function renderPhiloxPair(
  p: PhiloxPlan,
  ew: EwPlan,
  bufName: (id: number) => string,
): { source: string; buffers: number[]; rows: number } {
  const did = ewKernelId(p.bytes);
  const wid = ewKernelId(ew.bytes, false);
  const buffers = [
    ...new Set([
      ...('buf' in p.k1 ? [p.k1.buf] : []),
      ...ew.loads.filter((l) => l.buf !== p.out).map((l) => l.buf),
      ...ew.stores.map((s) => s.buf),
    ]),
  ].sort((x, y) => x - y);
  const at = (x: string, off: number) => (off === 0 ? x : `${x} + ${off}`);
  const region = ew.loads.findIndex((l) => l.buf === p.out);
  const lines = [
    `  const d = rt.ew(${did}), w = rt.ew(${wid});`,
    '  const m = w.mem;',
    `  const k1 = ${'buf' in p.k1 ? `${bufName(p.k1.buf)}[${p.k1.at}]` : String(p.k1.v)};`,
    `  for (let s = lo; s < hi; s += ${CHUNK}) {`,
    `    const e = hi < s + ${CHUNK} ? hi : s + ${CHUNK};`,
    ...ew.loads.flatMap((l, j) =>
      l.buf === p.out
        ? []
        : [`    m.set(${bufName(l.buf)}.subarray(${at('s', l.off)}, ${at('e', l.off)}), ${j * CHUNK});`],
    ),
    `    d.run(e - s, ${region * CHUNK * 4}, ${at('s', p.indexOff)}, ${p.k0 | 0}, k1);`,
    '    w.run(e - s, 0);',
    ...ew.stores.map(
      (x, j) =>
        `    ${bufName(x.buf)}.set(m.subarray(${(ew.loads.length + j) * CHUNK}, ${(ew.loads.length + j) * CHUNK} + e - s), ${at('s', x.off)});`,
    ),
    '  }',
  ];
  const source = `function k(${[...buffers.map(bufName), 'lo', 'hi'].join(', ')}) { // WebAssembly SIMD Philox into ${ew.label.replace(/[^\w,. -]/g, '')}: ${p.label.replace(/[^\w,. -]/g, '')}\n${lines.join('\n')}\n}`;
  return { source, buffers, rows: ew.n };
}
