// The WebAssembly SIMD tier for pooling and its adjoint: a kernel that lowering marked as a
// pooling alone or as pool_grad (kernel.ts, LoopKernel.pool), over float32 channels-last data
// with a multiple of 4 channels, becomes a module whose loops run over the output cells of one
// image, four channels per f32x4 vector, the window's taps unrolled with their offsets as
// constants. The JavaScript wrapper copies each image into the kernel's own memory (padded: the
// border cells hold -Infinity for max, 0 for avg, written once when the memory is made, so no tap
// is ever tested against the input's bounds), calls the module, and copies the result out.
// XNNPACK's pooling micro-kernels (channels innermost, taps unrolled) are the anchor.
//
//   max pool       the maximum of the taps (f32x4.max: NaN wins, as Math.max in the JavaScript
//                  kernel): equal to it bit for bit.
//   avg pool       the taps summed in float64 (f64x2, two lanes per half vector), divided once by
//                  the count of the window's cells inside the input, rounded to float32. The
//                  reference divides each term before adding: both float64 values are within
//                  K 2^-53 mean|x| of the exact mean (K taps), so the float32 results are equal
//                  except near a rounding midpoint, then 1 ulp apart (more only where the terms
//                  cancel to far below mean|x|): the bound of test/codegen/simd-pool.test.ts.
//   pool_grad      windows that tile the input (stride = window, no padding or dilation): each
//   (tiled)        window's first maximal tap found by masks (a tap equal to the maximum, or NaN
//                  where the maximum is NaN, and no earlier tap so), which receives 0 + dy, the
//                  other taps 0; avg: 0 + dy / count (float64, rounded once) at every tap.
//   pool_grad      other windows (overlapping, padded, dilated): dy scattered into a float64
//   (scatter)      accumulator of the padded image in row-major order of the output cells, which
//                  is the reference's order of addition (src/ir/ops/pool.ts), then rounded to
//                  float32 as it is copied out: equal to the reference bit for bit. max: only
//                  the taps inside the input may be chosen (a mask per output cell, so a padding
//                  -Infinity never takes a gradient from an input cell holding -Infinity).
// Unselected taps add +0, which changes no sum (an accumulator that starts at +0 never holds -0).
import type { LoopKernel, PoolSpec } from '../../kernel/ir.js';
import type { Node } from '../../../ir/node.js';
import type { DType } from '../../../ir/dtype.js';
import { sizeOf } from '../../../ir/ndarray.js';
import {
  Body,
  I32,
  MISC,
  V128,
  VOID,
  WA,
  memarg,
  misc,
  moduleBytes,
  op,
  type WasmMemory,
  type WasmModule,
} from './encode.js';
import { ewKernel, ewKernelId, runBlocks, sharedMem, sharedTier, tierOn } from './elementwise.js';

/** Poolings whose input has fewer elements stay JavaScript (the copies and the call cost more than they save). */
export const POOL_MIN_ELEMENTS = 4096;

/**
 * Whether the fusion pass should leave pooling node `n` alone (FusionTarget.alone): a float32
 * pooling of channels-last data with a multiple of 4 channels and at least POOL_MIN_ELEMENTS input
 * elements (unknown dims counted as large), which this tier runs four channels per vector where
 * a fused JavaScript loop would compute it a value at a time. Its elementwise producers (bias, relu)
 * go to the convolution's epilogue instead.
 */
export function poolAlone(n: Node): boolean {
  if (n.op !== 'pool' || n.dtype !== 'float32' || !tierOn()) return false;
  const x = n.inputs[0]!;
  const c = x.shape[x.shape.length - 1];
  const known = x.shape.every((d) => d !== null);
  return (
    typeof c === 'number' &&
    c % 4 === 0 &&
    (!known || x.shape.reduce<number>((a, d) => a * (d as number), 1) >= POOL_MIN_ELEMENTS)
  );
}
/** Largest memory a pool kernel makes (bytes): larger images stay JavaScript. */
const MAX_BYTES = 256 * 1024 * 1024;
/**
 * Poolings of at least this many input elements (and two images) are split over the worker
 * threads where more than one is configured, an image per claim: at the bench's size (8x64x64x32)
 * the split form measured slower than one thread, so only poolings twice that size take it, the
 * same bound as the elementwise tier's PARALLEL_MIN_ELEMENTS.
 */
export const POOL_PARALLEL_MIN_ELEMENTS = 1 << 22;
let parallelMin = POOL_PARALLEL_MIN_ELEMENTS;

/** Sets the size from which poolings are split over the threads (undefined: POOL_PARALLEL_MIN_ELEMENTS); tests split small ones. */
export function setPoolParallelMin(n: number | undefined): void {
  if (n !== undefined && !(Number.isInteger(n) && n >= 0))
    throw new RangeError(`setPoolParallelMin: argument n is ${n}; allowed: a non-negative integer, or undefined`);
  parallelMin = n ?? POOL_PARALLEL_MIN_ELEMENTS;
}
/** The size from which poolings are split over the threads (setPoolParallelMin; the disk cache's key). */
export function poolParallelMin(): number {
  return parallelMin;
}
/** Bytes of the shared memory one pass over the images may use (passes of fewer images beyond). */
const PASS_BYTES = 64 * 1024 * 1024;
/** Most taps of a window whose adjoint the tier scatters (one bit per tap in each output cell's mask). */
const MAX_SCATTER_TAPS = 32;

// SIMD opcodes used here (after the 0xfd prefix).
const S = {
  load: 0x00,
  store: 0x0b,
  v128Const: 0x0c,
  shuffle: 0x0d,
  i32x4Splat: 0x11,
  f64x2Splat: 0x14,
  f32Eq: 0x41,
  f32Ne: 0x42,
  and: 0x4e,
  andnot: 0x4f,
  or: 0x50,
  load64Zero: 0x5d,
  demote: 0x5e,
  promote: 0x5f,
  f32Add: 0xe4,
  f32Max: 0xe9,
  f64Add: 0xf0,
  f64Div: 0xf3,
} as const;
/** Shuffle lanes: the low halves of two vectors (two float32 each, after demote) as one. */
const LOW_HALVES = [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23];
/** The high half of a vector in its low half (to promote lanes 2 and 3). */
const HIGH_TO_LOW = [8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15];
const ZERO16 = new Array<number>(16).fill(0);

type Form = 'forward' | 'tiled' | 'scatter';

/** Byte offsets of the regions of a kernel's memory. */
interface Layout {
  /** The image (padded where the form reads padding), float32. */
  readonly x: number;
  /** pool_grad: one image's dy, float32. */
  readonly dy: number;
  /** forward: the pooled image; pool_grad: dx; float32. */
  readonly out: number;
  /** avg: each output cell's count of cells inside the input, float64. */
  readonly cnt: number;
  /** scatter, max: each output cell's taps inside the input, one bit per tap (int32). */
  readonly mask: number;
  /** scatter: dx of the padded image, float64. */
  readonly acc: number;
  readonly bytes: number;
}

export interface PoolPlan {
  readonly spec: PoolSpec;
  readonly form: Form;
  /** The padded image's extent along each spatial axis. */
  readonly ext: readonly number[];
  readonly layout: Layout;
  readonly bytes: Uint8Array;
  /** What makes the kernel (module and initial memory) what it is. */
  readonly key: string;
  /**
   * Over the tier's shared memory (./elementwise.ts), each image in a block of its own, the
   * images split over the worker threads: run(n, base) computes the image in the block at byte
   * `base`. Otherwise the kernel has a memory of its own and run() computes the one image in it.
   */
  readonly shared: boolean;
  /** Bytes of one image's block. */
  readonly blockBytes: number;
}

/** Whether the windows tile the input: every input cell in exactly one window. */
function tiles(p: PoolSpec): boolean {
  return p.window.every(
    (k, i) => p.strides[i] === k && p.dilation[i] === 1 && p.pads[i] === 0 && p.outSize[i]! * k === p.inSize[i],
  );
}

/**
 * The tier's plan for a loop kernel, or undefined where it does not apply (then it is rendered as
 * JavaScript): a kernel carrying a PoolSpec, float32 input, cotangent and result, channels a
 * multiple of 4, at least POOL_MIN_ELEMENTS input elements.
 */
export function planPool(k: LoopKernel, bufDType: (buf: number) => DType): PoolPlan | undefined {
  const p = k.pool;
  if (p === undefined || !tierOn()) return undefined;
  const f32 = (v: { buf: number; dtype: DType }) => v.dtype === 'float32' && bufDType(v.buf) === 'float32';
  if (!f32(p.x) || (p.dy !== undefined && !f32(p.dy)) || bufDType(p.out) !== 'float32') return undefined;
  if (p.channels % 4 !== 0 || p.batch * sizeOf(p.inSize) * p.channels < POOL_MIN_ELEMENTS || sizeOf(p.outSize) === 0)
    return undefined;
  const form: Form = !p.grad ? 'forward' : tiles(p) ? 'tiled' : 'scatter';
  if (form === 'scatter' && sizeOf(p.window) > MAX_SCATTER_TAPS) return undefined;
  const ext = p.inSize.map((s, i) =>
    Math.max(s + p.pads[i]!, (p.outSize[i]! - 1) * p.strides[i]! + (p.window[i]! - 1) * p.dilation[i]! + 1),
  );
  const C = p.channels;
  const cells = sizeOf(p.outSize);
  const padded = sizeOf(ext) * C;
  let at = 0;
  const region = (bytes: number) => {
    const r = at;
    at += Math.ceil(bytes / 16) * 16;
    return r;
  };
  const needX = !(form === 'scatter' && p.mode === 'avg');
  const x = needX ? region(padded * 4) : 0;
  const dy = p.grad ? region(cells * C * 4) : 0;
  const out = form === 'forward' ? region(cells * C * 4) : region(sizeOf(p.inSize) * C * 4);
  const cnt = p.mode === 'avg' && form !== 'tiled' ? region(cells * 8) : 0;
  const mask = form === 'scatter' && p.mode === 'max' ? region(cells * 4) : 0;
  const acc = form === 'scatter' ? region(padded * 8) : 0;
  if (at > MAX_BYTES) return undefined;
  const layout: Layout = { x, dy, out, cnt, mask, acc, bytes: at };
  const shared = p.batch >= 2 && p.batch * sizeOf(p.inSize) * C >= parallelMin && sharedTier();
  const plan = { spec: p, form, ext, layout, shared, blockBytes: Math.ceil(at / 64) * 64 };
  const bytes = moduleBytes([{ name: 'run', params: shared ? 2 : 0, body: poolBody(plan) }], shared ? 'shared' : true);
  const key = JSON.stringify([shared, form, p.mode, p.window, p.strides, p.dilation, p.pads, p.inSize, p.outSize, C]);
  return { ...plan, bytes, key };
}

/** Elements between neighbours along each spatial axis of the padded image. */
function axisStrides(ext: readonly number[], C: number): number[] {
  const st = new Array<number>(ext.length);
  let s = C;
  for (let i = ext.length - 1; i >= 0; i--) {
    st[i] = s;
    s *= ext[i]!;
  }
  return st;
}

/** Each tap's element offset from its window's origin in the padded image (row-major taps). */
function tapOffsets(p: PoolSpec, st: readonly number[]): number[] {
  const out: number[] = [];
  const t = new Array<number>(p.window.length).fill(0);
  for (let f = 0; f < sizeOf(p.window); f++) {
    out.push(t.reduce((a, ti, i) => a + ti * p.dilation[i]! * st[i]!, 0));
    for (let i = t.length - 1; i >= 0; i--) {
      if (++t[i]! < p.window[i]!) break;
      t[i] = 0;
    }
  }
  return out;
}

/** Vector groups of 4 channels per iteration of the channel loop: the largest divisor of C/4 up to 4. */
function unrollOf(groups: number): number {
  for (let u = Math.min(4, groups); u > 1; u--) if (groups % u === 0) return u;
  return 1;
}

function poolBody(plan: Omit<PoolPlan, 'bytes' | 'key'>): Body {
  const { spec: p, form, ext, layout: L } = plan;
  const d = p.window.length;
  const C = p.channels;
  const T = sizeOf(p.window);
  const st = axisStrides(form === 'tiled' ? p.inSize : ext, C);
  const taps = tapOffsets(p, st).map((e) => e * 4);
  // i32 locals: P_i (window origin, bytes) and N_i (count down) per axis, then J, PO, A, B, CC, PA, MK
  // the shared form's parameters: n (unused) and base, the byte offset of the image's block
  const q = plan.shared ? 2 : 0;
  const BASE = 1;
  const P = (i: number) => q + i,
    N = (i: number) => q + d + i;
  const [J, PO, A, B, CC, PA, MK] = [2 * d, 2 * d + 1, 2 * d + 2, 2 * d + 3, 2 * d + 4, 2 * d + 5, 2 * d + 6].map(
    (x) => q + x,
  ) as [number, number, number, number, number, number, number];
  const vbase = q + 2 * d + 7;
  /** Pushes the block's base (adds it to the value on the stack in the shared form). */
  const plusBase = () => {
    if (plan.shared) b.get(BASE).ops(op.i32Add);
  };
  // v128 locals: one per tap, one mask per tap, then M, NANM, TAKEN, DYV, LO, HI, SEL, CNTV
  const V = (t: number) => vbase + t,
    VT = (t: number) => vbase + T + t;
  const [M, NANM, TAKEN, DYV, LO, HI, SEL, CNTV] = Array.from({ length: 8 }, (_, i) => vbase + 2 * T + i) as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const b = new Body(q, [
    [7 + 2 * d, I32],
    [2 * T + 8, V128],
  ]);
  const f32 = (o: number) => memarg(2, o),
    f64 = (o: number) => memarg(3, o);
  /** PA: the float64 sums' address of the cell at A (twice its offset in the block). */
  const toAcc = () => {
    b.get(A).i32(1).ops(op.i32Shl);
    if (plan.shared) b.get(BASE).ops(op.i32Sub);
    b.set(PA);
  };
  const zero = () => b.v(S.v128Const, ...ZERO16);
  // the float64 pair at accumulator byte o (from PA) += the pair `value` pushes
  const addAt = (o: number, value: () => void) => {
    b.get(PA)
      .get(PA)
      .v(S.load, ...f64(o));
    value();
    b.v(S.f64Add).v(S.store, ...f64(o));
  };

  const group = (cg: number) => {
    if (form === 'forward' && p.mode === 'max') {
      b.get(B);
      taps.forEach((o, t) => {
        b.get(A).v(S.load, ...f32(L.x + o + cg));
        if (t > 0) b.v(S.f32Max);
      });
      b.v(S.store, ...f32(L.out + cg));
    } else if (form === 'forward') {
      b.get(B);
      for (const half of [0, 8]) {
        taps.forEach((o, t) => {
          b.get(A)
            .v(S.load64Zero, ...f64(L.x + o + cg + half))
            .v(S.promote);
          if (t > 0) b.v(S.f64Add);
        });
        b.get(CNTV).v(S.f64Div).v(S.demote);
      }
      b.v(S.shuffle, ...LOW_HALVES).v(S.store, ...f32(L.out + cg));
    } else if (p.mode === 'max') {
      taps.forEach((o, t) => {
        b.get(A)
          .v(S.load, ...f32(L.x + o + cg))
          .set(V(t));
      });
      b.get(V(0));
      for (let t = 1; t < T; t++) b.get(V(t)).v(S.f32Max);
      b.set(M);
      b.get(M).get(M).v(S.f32Ne).set(NANM);
      b.get(B).v(S.load, ...f32(L.dy + cg));
      if (form === 'tiled') zero().v(S.f32Add); // 0 + dy: -0 becomes +0, as the reference's sum gives
      b.set(DYV);
      if (form === 'scatter') toAcc();
      for (let t = 0; t < T; t++) {
        // hit: the tap holds the maximum (or NaN where the maximum is NaN); chosen: hit by no earlier tap
        b.get(V(t)).get(M).v(S.f32Eq).get(NANM).get(V(t)).get(V(t)).v(S.f32Ne).v(S.and).v(S.or);
        if (form === 'scatter') b.get(VT(t)).v(S.and);
        if (t === 0) {
          if (T > 1) b.tee(TAKEN);
          b.set(SEL);
        } else {
          b.tee(HI).get(TAKEN).v(S.andnot).set(SEL);
          if (t < T - 1) b.get(TAKEN).get(HI).v(S.or).set(TAKEN);
        }
        if (form === 'tiled') {
          b.get(A)
            .get(DYV)
            .get(SEL)
            .v(S.and)
            .v(S.store, ...f32(L.out + taps[t]! + cg));
        } else {
          b.get(DYV).get(SEL).v(S.and).set(SEL);
          const o = L.acc + 2 * (taps[t]! + cg);
          addAt(o, () => b.get(SEL).v(S.promote));
          addAt(o + 16, () =>
            b
              .get(SEL)
              .get(SEL)
              .v(S.shuffle, ...HIGH_TO_LOW)
              .v(S.promote),
          );
        }
      }
    } else if (form === 'tiled') {
      // avg over tiling windows: 0 + dy / count at every tap
      for (const half of [0, 8]) {
        b.get(B)
          .v(S.load64Zero, ...f64(L.dy + cg + half))
          .v(S.promote);
        b.ops(op.f64Const, ...new Uint8Array(new Float64Array([T]).buffer))
          .v(S.f64x2Splat)
          .v(S.f64Div);
        zero().v(S.f64Add).v(S.demote);
      }
      b.v(S.shuffle, ...LOW_HALVES).set(DYV);
      for (let t = 0; t < T; t++)
        b.get(A)
          .get(DYV)
          .v(S.store, ...f32(L.out + taps[t]! + cg));
    } else {
      // avg, scattered: dy / count (float64) added at every tap
      b.get(B)
        .v(S.load64Zero, ...f64(L.dy + cg))
        .v(S.promote)
        .get(CNTV)
        .v(S.f64Div)
        .set(LO);
      b.get(B)
        .v(S.load64Zero, ...f64(L.dy + cg + 8))
        .v(S.promote)
        .get(CNTV)
        .v(S.f64Div)
        .set(HI);
      toAcc();
      for (let t = 0; t < T; t++) {
        const o = L.acc + 2 * (taps[t]! + cg);
        addAt(o, () => b.get(LO));
        addAt(o + 16, () => b.get(HI));
      }
    }
  };

  const cell = () => {
    // per output cell J: its output pointer, its count or tap mask
    b.get(J)
      .i32(C * 4)
      .ops(op.i32Mul);
    plusBase();
    b.set(PO);
    if (p.mode === 'avg' && form !== 'tiled') {
      b.get(J).i32(3).ops(op.i32Shl);
      plusBase();
      b.ops(op.f64Load, ...memarg(3, L.cnt))
        .v(S.f64x2Splat)
        .set(CNTV);
    }
    if (form === 'scatter' && p.mode === 'max') {
      b.get(J).i32(2).ops(op.i32Shl);
      plusBase();
      b.ops(op.i32Load, ...memarg(2, L.mask)).set(MK);
      for (let t = 0; t < T; t++)
        b.i32(0).get(MK).i32(t).ops(op.i32ShrU).i32(1).ops(op.i32And).ops(op.i32Sub).v(S.i32x4Splat).set(VT(t));
    }
    const groups = C / 4;
    const u = unrollOf(groups);
    const inner = () => {
      b.get(P(d - 1))
        .get(CC)
        .ops(op.i32Add)
        .set(A);
      b.get(PO).get(CC).ops(op.i32Add).set(B);
      for (let g = 0; g < u; g++) group(16 * g);
    };
    b.i32(0).set(CC);
    if (groups === u) inner();
    else {
      b.ops(op.loop, VOID);
      inner();
      b.addTo(CC, 16 * u);
      b.get(CC)
        .i32(C * 4)
        .ops(op.i32LtU, op.brIf, 0, op.end);
    }
    b.addTo(J, 1);
  };

  const pst = axisStrides(ext, C);
  if (form === 'scatter') {
    b.i32(L.acc);
    plusBase();
    b.i32(0)
      .i32(sizeOf(ext) * C * 8)
      .ops(MISC, misc.memoryFill, 0);
  } // the sums start at +0 (memory 0)
  // loops over the output cells, outermost axis first
  b.i32(0);
  plusBase();
  b.set(P(0)).i32(0).set(J);
  const axis = (i: number) => {
    b.i32(p.outSize[i]!).set(N(i));
    b.ops(op.loop, VOID);
    if (i + 1 < d) {
      b.get(P(i)).set(P(i + 1));
      axis(i + 1);
    } else cell();
    b.addTo(P(i), p.strides[i]! * st[i]! * 4);
    b.get(N(i)).i32(1).ops(op.i32Sub).tee(N(i)).ops(op.brIf, 0, op.end);
  };
  axis(0);
  if (form === 'scatter') {
    // the sums of the image's cells (inside the padding) rounded to float32, in row-major order into dx
    const row = p.inSize[d - 1]! * C;
    b.i32(8 * pst.reduce((a, x, i) => a + p.pads[i]! * x, 0));
    plusBase();
    b.set(P(0)).i32(0);
    plusBase();
    b.set(A);
    const rows = (i: number) => {
      if (i < d - 1) {
        b.i32(p.inSize[i]!).set(N(i)).ops(op.loop, VOID);
        if (i + 1 < d - 1) {
          b.get(P(i)).set(P(i + 1));
          rows(i + 1);
        } else rowCopy(P(i));
        b.addTo(P(i), pst[i]! * 8);
        b.get(N(i)).i32(1).ops(op.i32Sub).tee(N(i)).ops(op.brIf, 0, op.end);
      } else rowCopy(P(0));
    };
    const rowCopy = (from: number) => {
      b.get(from)
        .set(B)
        .i32(row / 4)
        .set(CC)
        .ops(op.loop, VOID);
      b.get(A)
        .get(B)
        .v(S.load, ...f64(L.acc))
        .v(S.demote)
        .get(B)
        .v(S.load, ...f64(L.acc + 16))
        .v(S.demote)
        .v(S.shuffle, ...LOW_HALVES)
        .v(S.store, ...f32(L.out));
      b.addTo(B, 32).addTo(A, 16);
      b.get(CC).i32(1).ops(op.i32Sub).tee(CC).ops(op.brIf, 0, op.end);
    };
    rows(0);
  }
  return b;
}

// --- runtime: each kernel with a memory of its own, or blocks of the shared one ---

export interface PoolKernel {
  /** The private form: one image, from the regions of x (and dy) to the result's region. */
  run(): void;
  /** The private form's memory. */
  readonly f32: Float32Array;
  readonly f64: Float64Array;
  /** The shared form: the shared memory, grown to hold `images` blocks (a new view after it grows). */
  block(images: number): Float32Array;
  /** The shared form: images 0..images-1 of the blocks, split over the threads. */
  par(images: number): void;
  /** The shared form: the counts and tap masks each block gets (the shared memory's other kernels overwrite them). */
  readonly cnt: Float64Array;
  readonly mask: Int32Array;
}

const ids = new Map<string, number>();
const kernels: PoolKernel[] = [];

/** Each output cell's count of window cells inside the input (float64), or Infinity where there is none (avg of nothing is 0). */
function cellCounts(p: PoolSpec): { cnt: Float64Array; mask: Int32Array } {
  const cells = sizeOf(p.outSize);
  const cnt = new Float64Array(cells);
  const mask = new Int32Array(cells);
  const d = p.window.length;
  const o = new Array<number>(d).fill(0);
  for (let j = 0; j < cells; j++) {
    const t = new Array<number>(d).fill(0);
    for (let f = 0; f < sizeOf(p.window); f++) {
      let inside = true;
      for (let i = 0; i < d; i++) {
        const s = o[i]! * p.strides[i]! + t[i]! * p.dilation[i]! - p.pads[i]!;
        if (s < 0 || s >= p.inSize[i]!) inside = false;
      }
      if (inside) {
        cnt[j] = cnt[j]! + 1;
        if (f < 32) mask[j] = mask[j]! | (1 << f);
      }
      for (let i = d - 1; i >= 0; i--) {
        if (++t[i]! < p.window[i]!) break;
        t[i] = 0;
      }
    }
    if (cnt[j] === 0) cnt[j] = Infinity;
    for (let i = d - 1; i >= 0; i--) {
      if (++o[i]! < p.outSize[i]!) break;
      o[i] = 0;
    }
  }
  return { cnt, mask };
}

const noRun = (): never => {
  throw new Error('internal: a pool kernel called in the other form');
};

/** The id of the plan's kernel (compiled, with its memory made and its constant regions written, once per process). */
export function poolKernelId(plan: PoolPlan): number {
  let id = ids.get(plan.key);
  if (id !== undefined) return id;
  const p = plan.spec;
  const L = plan.layout;
  const { cnt, mask } = cellCounts(p);
  id = kernels.length;
  if (plan.shared) {
    const sid = ewKernel(ewKernelId(plan.bytes, true, 0)).sid!;
    kernels.push({
      run: noRun,
      f32: new Float32Array(0),
      f64: new Float64Array(0),
      cnt,
      mask,
      block: (images) => sharedMem(images * plan.blockBytes),
      par: (images) => runBlocks(sid, images, plan.blockBytes, 1, 1),
    });
  } else {
    const module = new WA!.Module(plan.bytes) as WasmModule;
    const memory: WasmMemory = new WA!.Memory({ initial: Math.max(1, Math.ceil(L.bytes / 65536)) });
    const f32 = new Float32Array(memory.buffer);
    const f64 = new Float64Array(memory.buffer);
    if (padded(plan)) f32.fill(p.mode === 'max' ? -Infinity : 0, L.x / 4, L.x / 4 + sizeOf(plan.ext) * p.channels);
    if (plan.form !== 'tiled' && p.mode === 'avg') f64.set(cnt, L.cnt / 8);
    if (plan.form === 'scatter' && p.mode === 'max') new Int32Array(memory.buffer).set(mask, L.mask / 4);
    const inst = new WA!.Instance(module, { env: { mem: memory } });
    kernels.push({ run: inst.exports['run'] as () => void, f32, f64, cnt, mask, block: noRun, par: noRun });
  }
  ids.set(plan.key, id);
  return id;
}

/** Whether the image's region has cells outside the input (padding: -Infinity for max, 0 for avg). */
function padded(plan: PoolPlan): boolean {
  return (
    plan.form !== 'tiled' &&
    !(plan.form === 'scatter' && plan.spec.mode === 'avg') &&
    sizeOf(plan.ext) !== sizeOf(plan.spec.inSize)
  );
}

/** The kernel with this id (runtime helper `rt.pool`). */
export function poolKernel(id: number): PoolKernel {
  return kernels[id]!;
}

/**
 * The JavaScript side: each image of [lo, hi) (its input, and cotangent) copied into the
 * kernel's memory, the module called, the result copied out; in the shared form, every image of
 * a pass into a block of its own, the blocks computed over the threads, the results copied out.
 * Same parameters as renderLoopKernel's function.
 */
export function renderPool(
  plan: PoolPlan,
  bufName: (id: number) => string,
): { source: string; buffers: number[]; rows: number } {
  const id = poolKernelId(plan);
  const { spec: p, form, ext, layout: L } = plan;
  const C = p.channels;
  const d = p.window.length;
  const inImg = sizeOf(p.inSize) * C;
  const outImg = sizeOf(p.outSize) * C;
  const X = bufName(p.x.buf),
    OUT = bufName(p.out);
  const sh = plan.shared;
  const BF = plan.blockBytes / 4;
  const per = Math.max(1, Math.min(p.batch, Math.floor(PASS_BYTES / plan.blockBytes)));
  const ind = sh ? '      ' : '    ';
  const lines = sh
    ? [
        `  const w = rt.pool(${id});`,
        `  for (let n0 = lo; n0 < hi; n0 += ${per}) {`,
        `    const n1 = hi < n0 + ${per} ? hi : n0 + ${per};`,
        '    const m = w.block(n1 - n0);',
        '    for (let n = n0; n < n1; n++) {',
        `      const o = (n - n0) * ${BF};`,
      ]
    : [`  const w = rt.pool(${id});`, '  const m = w.f32;', '  for (let n = lo; n < hi; n++) {'];
  const at = (base: string, off: number) => (off === 0 ? base : `${base} + ${off}`);
  /** A float32 offset in the image's region (plus the block's in the shared form). */
  const mo = (off: number) => (sh ? at('o', off) : String(off));
  // rows of the image (the innermost spatial axis times the channels, contiguous) into the padded layout
  const pst = axisStrides(ext, C);
  const rows = (body: (src: string, dst: string) => string, srcBase: string, dstBase: number) => {
    const outer = p.inSize.slice(0, d - 1);
    const vars = outer.map((_, i) => `i${i}`);
    const src = [srcBase, ...vars.map((v, i) => `${v} * ${sizeOf(p.inSize.slice(i + 1)) * C}`)].join(' + ');
    const dst = [mo(dstBase + p.pads[d - 1]! * C), ...vars.map((v, i) => `(${v} + ${p.pads[i]!}) * ${pst[i]!}`)].join(
      ' + ',
    );
    let line = `${ind}${'  '.repeat(outer.length)}${body(src, dst)}`;
    for (let i = outer.length - 1; i >= 0; i--)
      line = `${ind}${'  '.repeat(i)}for (let ${vars[i]} = 0; ${vars[i]} < ${outer[i]}; ${vars[i]}++)\n${line}`;
    lines.push(line);
  };
  if (sh) {
    // the block's constant regions: other kernels of the shared memory write over them between calls
    const typed = [
      ...(padded(plan) ? ['m'] : []),
      ...(form !== 'tiled' && p.mode === 'avg' ? ['m64'] : []),
      ...(form === 'scatter' && p.mode === 'max' ? ['mi'] : []),
    ];
    if (typed.includes('m64')) lines.splice(4, 0, '    const m64 = new Float64Array(m.buffer);');
    if (typed.includes('mi')) lines.splice(4, 0, '    const mi = new Int32Array(m.buffer);');
    if (padded(plan))
      lines.push(
        `${ind}m.fill(${p.mode === 'max' ? '-Infinity' : '0'}, ${mo(L.x / 4)}, ${mo(L.x / 4 + sizeOf(ext) * C)});`,
      );
    if (typed.includes('m64')) lines.push(`${ind}m64.set(w.cnt, (o + ${L.cnt / 4}) / 2);`);
    if (typed.includes('mi')) lines.push(`${ind}mi.set(w.mask, ${mo(L.mask / 4)});`);
  }
  const flat = form === 'tiled' || (p.pads.every((x) => x === 0) && ext.every((e, i) => i === 0 || e === p.inSize[i]));
  if (form === 'tiled' || !(form === 'scatter' && p.mode === 'avg')) {
    const xs = at(`n * ${inImg}`, p.x.offset);
    if (flat) lines.push(`${ind}m.set(${X}.subarray(${xs}, ${xs} + ${inImg}), ${mo(L.x / 4)});`);
    else {
      const row = p.inSize[d - 1]! * C;
      rows((src, dst) => `m.set(${X}.subarray(${src}, ${src} + ${row}), ${dst});`, xs, L.x / 4);
    }
  }
  if (p.dy !== undefined) {
    const ds = at(`n * ${outImg}`, p.dy.offset);
    lines.push(`${ind}m.set(${bufName(p.dy.buf)}.subarray(${ds}, ${ds} + ${outImg}), ${mo(L.dy / 4)});`);
  }
  const result = form === 'forward' ? outImg : inImg;
  const copyOut = `${ind}${OUT}.set(m.subarray(${mo(L.out / 4)}, ${mo(L.out / 4 + result)}), n * ${result});`;
  if (sh)
    lines.push(
      '    }',
      '    w.par(n1 - n0);',
      '    for (let n = n0; n < n1; n++) {',
      `      const o = (n - n0) * ${BF};`,
      copyOut,
      '    }',
      '  }',
    );
  else lines.push('    w.run();', copyOut, '  }');
  const what = `${p.grad ? 'pool_grad' : 'pool'} ${p.mode} ${p.window.join('x')} stride ${p.strides.join('x')}${form === 'scatter' ? ', scattered' : ''}${sh ? ', images over the threads' : ''}`;
  const buffers = [...new Set([p.x.buf, ...(p.dy !== undefined ? [p.dy.buf] : []), p.out])].sort((a, c) => a - c);
  const source = `function k(${[...buffers.map(bufName), 'lo', 'hi'].join(', ')}) { // WebAssembly SIMD: ${what}\n${lines.join('\n')}\n}`;
  return { source, buffers, rows: p.batch };
}
