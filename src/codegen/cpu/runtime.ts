// What generated code runs against: the helpers it calls, the matmul runtime of a
// specialisation (WebAssembly kernel and its memory), slot allocation, and extern steps (an
// op's reference implementation called from generated code).
import { roundHalf, coerce, type TypedArray } from '../../ir/dtype.js';
import { rethrow } from '../../ir/build.js';
import { ValueError } from '../../ir/errors.js';
import { NDArray, formatShape } from '../../ir/ndarray.js';
import type { EvalContext } from '../../ir/op.js';
import type { VariableCell } from '../../ir/node.js';
import { pyMod, roundHalfEven } from '../../ir/ops/elementwise.js';
import type { ExternStep } from '../kernel/ir.js';
import type { Plan, StorageClass } from '../transform/plan.js';
import { packRows, packStrided, rowPanel32, rowPanel4x4, tile4x4 } from './microkernel.js';
import { packArena, type KeptSlot } from './wasm-kernel.js';
import { igemmA, windowA, windowGradA } from './igemm.js';
import { rows32, rowsA, rowsB } from './small-matmul.js';
import { ewKernel } from './wasm/elementwise.js';
import { poolKernel } from './wasm/pool.js';
import { redKernel } from './wasm/reduce.js';

/** Helpers generated code calls (the reference's own functions, so results match it). */
export const runtimeHelpers = {
  f16: roundHalf,
  i64: (x: number) => coerce('int64', x),
  bool: (x: number) => (x !== 0 && x === x ? 1 : 0),
  mod: pyMod,
  round: roundHalfEven,
  sign: (a: number) => (a > 0 ? 1 : a < 0 ? -1 : a === 0 ? 0 : NaN),
  /**
   * Math.max(x, 0) and Math.min(x, 0) without a data-dependent branch (relu on random signs made
   * V8's Math.max mispredict about every other element): (x +- |x|) / 2 is exact below 2^1023 in
   * magnitude (and gives +0 for -0 in max, -0 in min, NaN for NaN, as Math does); the rare larger
   * or infinite values take Math's own path.
   */
  max0: (x: number) => {
    const a = Math.abs(x);
    return a < 8.98846567431158e307 ? (x + a) * 0.5 : Math.max(x, 0);
  },
  min0: (x: number) => {
    const a = Math.abs(x);
    return a < 8.98846567431158e307 ? (x - a) * 0.5 : Math.min(x, 0);
  },
  tile4x4,
  rowPanel4x4,
  rowPanel32,
  /** Where matmul operands are packed and summed (wasm-kernel.ts). */
  arena: packArena,
  /** A kernel of the WebAssembly SIMD elementwise tier (../wasm/elementwise.ts). */
  ew: ewKernel,
  /** A kernel of the WebAssembly SIMD pool tier (../wasm/pool.ts). */
  pool: poolKernel,
  /** A kernel of the WebAssembly SIMD reduction tier (../wasm/reduce.ts). */
  red: redKernel,
  /**
   * A typed array of n elements that the steps fill entirely before reading (driver.ts
   * freshTarget): in Node over an ArrayBuffer not filled with zeros first (Buffer.allocUnsafeSlow:
   * its own buffer, offset 0), elsewhere a zeroed one.
   */
  fresh<T>(
    C: new (b: ArrayBuffer | number, off?: number, n?: number) => T & { readonly BYTES_PER_ELEMENT?: number },
    n: number,
  ): T {
    const B = (globalThis as { Buffer?: { allocUnsafeSlow?: (bytes: number) => Uint8Array } }).Buffer;
    const bytes = (C as unknown as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT;
    if (B?.allocUnsafeSlow === undefined) return new C(n);
    const u = B.allocUnsafeSlow(n * bytes);
    return new C(u.buffer as ArrayBuffer, u.byteOffset, n);
  },
  /**
   * Buffer `id`'s result array kept by a driver instance (`held`, K.function's `borrow`): the one
   * it returned last call where the length and type match, else a new one; filled with zeros unless
   * `fresh` (its steps store every element before reading any).
   */
  held<T extends { readonly length: number; fill(v: number): unknown }>(
    held: (T | undefined)[],
    id: number,
    C: new (b: ArrayBuffer | number, off?: number, n?: number) => T,
    n: number,
    fresh: boolean,
  ): T {
    const a = held[id];
    if (a !== undefined && a.length === n && a.constructor === C) {
      if (!fresh) a.fill(0);
      return a;
    }
    const made = fresh ? runtimeHelpers.fresh(C, n) : new C(n);
    held[id] = made;
    return made;
  },
  packStrided,
  packRows,
  /** Products of few rows (small-matmul.ts): A's rows copied row-major, and their sums. */
  rowsA,
  rowsB,
  rows32,
  /** An indirect product's input cells and pointers (igemm.ts). */
  igemmA,
  windowA,
  windowGradA,
  /**
   * A row number read from data (gather, scatter_add_rows): negative counts from the end; outside
   * [-rows, rows) throws the reference's error, naming the op, before the step stores anything
   * more (a failed call updates no variable). exportModule writes its own copy (RangeError).
   */
  row(x: number, rows: number, op: string, shape: string): number {
    if (x >= 0 && x < rows) return x;
    if (x < 0 && x >= -rows) return x + rows;
    throw new ValueError(
      `${op}: index ${x} is out of range for reference of shape ${shape} (allowed: ${-rows}..${rows - 1})`,
    );
  },
  /**
   * A value as print_tensor writes it (the reference's formatValue: NumPy-like nested brackets,
   * bools as True/False). Self-contained, so exportModule copies it as it is.
   */
  fmt(data: ArrayLike<number>, shape: readonly number[], bool: boolean): string {
    const one = (v: number): string => (bool ? (v !== 0 ? 'True' : 'False') : String(v));
    if (shape.length === 0) return one(data[0]!);
    const strides: number[] = [];
    let acc = 1;
    for (let d = shape.length - 1; d >= 0; d--) {
      strides[d] = acc;
      acc *= shape[d]!;
    }
    const rec = (d: number, off: number): string => {
      const parts: string[] = [];
      for (let i = 0; i < shape[d]!; i++)
        parts.push(d === shape.length - 1 ? one(data[off + i]!) : rec(d + 1, off + i * strides[d]!));
      return `[${parts.join(', ')}]`;
    };
    return rec(0, 0);
  },
  /** dst[dOff .. dOff + n) = src[sOff .. sOff + n), without making a view (Scan steps copy slices with it). */
  copy(dst: TypedArray, dOff: number, src: TypedArray, sOff: number, n: number): void {
    for (let i = 0; i < n; i++) dst[dOff + i] = src[sOff + i]!;
  },
};

/** `step`: a Scan body's step number (0 first; step-invariant packs are made then). */
export type RunFn = (
  ins: readonly TypedArray[],
  cells: readonly VariableCell[],
  phase: number,
  ctx: EvalContext,
  outs?: readonly TypedArray[],
  step?: number,
) => TypedArray[];
/** A kernel function (buffers and loop bounds in, stores into buffers). */
export type KernelFn = (...args: unknown[]) => void;

export type Extern = (ctx: EvalContext, args: readonly TypedArray[]) => TypedArray[];
export type Factory = (
  rt: typeof runtimeHelpers,
  consts: readonly TypedArray[],
  slots: readonly TypedArray[],
  ext: readonly Extern[],
  kern: readonly KernelFn[],
  subs: readonly RunFn[],
  prof: { t: number; ms: Float64Array },
  /** The error a step raised, ending with the provenance of step `at` (src/ir/provenance.ts). */
  where: (e: unknown, at: number) => unknown,
  /** The function's packs kept in the packing arena (wasm-kernel.ts' KeptSlot). */
  kp: readonly KeptSlot[],
) => RunFn;

/** Allocates the planned arrays of a specialisation. */
export function allocateSlots(plan: Pick<Plan, 'slots'>): TypedArray[] {
  return plan.slots.map((s) => CTOR[s.cls](s.size));
}

export const CTOR: Record<StorageClass, (n: number) => TypedArray> = {
  f32: (n) => new Float32Array(n),
  f64: (n) => new Float64Array(n),
  i32: (n) => new Int32Array(n),
  i16: (n) => new Int16Array(n),
  i8: (n) => new Int8Array(n),
  u8: (n) => new Uint8Array(n),
};

export function externFn(s: ExternStep): Extern {
  const shapes = s.inputs.map((v) => v.shape);
  const dtypes = s.inputs.map((v) => v.dtype);
  const check = (r: NDArray, o: ExternStep['outs'][number], args: readonly TypedArray[]): TypedArray => {
    if (r.dtype !== o.dtype || r.shape.length !== o.shape.length || r.shape.some((d, i) => d !== o.shape[i])) {
      throw new Error(
        `internal: op ${s.def.name} produced ${r.dtype} ${formatShape(r.shape)} but its type is ${o.dtype} ${formatShape(o.shape)}`,
      );
    }
    // An impl may return (a view of) one of its inputs; results must not alias planned buffers or caller data.
    return args.some((a) => a.buffer === r.data.buffer) ? r.data.slice() : r.data;
  };
  return (ctx, args) => {
    const nds = args.map((a, i) => new NDArray(a, shapes[i]!, dtypes[i]!));
    try {
      if (s.tuple) return s.def.implTuple!(nds, s.attrs, ctx).map((r, i) => check(r, s.outs[i]!, args));
      return [check(s.def.impl(nds, s.attrs, ctx), s.outs[0]!, args)];
    } catch (e) {
      throw rethrow(e, s.def.name);
    }
  };
}
