// The kernel IR: what lowering produces for one concrete set of input shapes, and what each
// target renders. A program is a list of steps over numbered buffers: loop kernels (a loop nest
// over an output index space storing expressions), matmul kernels (a template with an
// epilogue expression), and extern steps (an op's reference implementation, for ops without
// a template). Everything here is target-neutral; src/codegen/cpu renders it as JavaScript.
import type { DType } from '../../ir/dtype.js';
import type { NDArray } from '../../ir/ndarray.js';
import type { Attrs, OpDef } from '../../ir/op.js';
import type { Dyn, Expr } from './expr.js';
import type { IExpr, Var } from './index-expr.js';
import type { Provenance } from '../../ir/provenance.js';

export type BufferRole =
  | 'input' // a function input, read from the call's arguments
  | 'variable' // a variable's current value, read from its cell at call time
  | 'phase' // the learning phase (one uint8)
  | 'epoch' // the evaluation's epoch (one float64: the key of unseeded random draws)
  | 'constant' // a constant's data, bound once
  | 'temp' // an intermediate: planned, reused across calls
  | 'target' // an output or update value: a fresh array per call (the caller owns it)
  | 'extern' // the array an extern step returned (fresh per call)
  | 'scratch' // working memory of one step
  | 'arena'; // matmul packing: the process-wide packing arena (where the WebAssembly kernel reads), during one step

export interface BufferDecl {
  readonly id: number;
  readonly dtype: DType;
  readonly size: number;
  readonly role: BufferRole;
  /** Input position, or variable slot. */
  readonly slot?: number;
  readonly value?: NDArray;
}

/** A value: elements [offset, offset + size) of a buffer, row-major in `shape`. */
export interface ValueRef {
  readonly buf: number;
  readonly offset: number;
  readonly shape: readonly number[];
  readonly dtype: DType;
}

export interface Store {
  readonly buf: number;
  readonly index: IExpr;
  readonly value: Expr;
  readonly dtype: DType;
  /** A row number read from data, added to the index (scatter_add_rows' destination row). */
  readonly dyn?: Dyn;
  /** buf[i] += value instead of buf[i] = value (scatters: several elements may land on one index). */
  readonly accumulate?: boolean;
}

export interface LoopKernel {
  readonly kind: 'loop';
  /** The provenance of the node it computes (set by lowering; src/ir/provenance.ts). */
  readonly origin?: readonly Provenance[];
  /** What it computes, for comments in generated code (op names only: never user strings). */
  readonly label: string;
  /** Output loops, outermost first. */
  readonly vars: readonly Var[];
  readonly stores: readonly Store[];
  /**
   * Set on the kernel of a pooling (the pool template alone) or of its adjoint (lower-pool.ts):
   * what it computes, for a target with a dedicated form of it (the cpu's WebAssembly SIMD pool
   * tier, wasm/pool.ts). The loops and stores above stay its meaning, and what other targets run.
   */
  readonly pool?: PoolSpec;
  /** A kernel whose only reader is the next one, a pool_grad kernel: left out where that one runs in the pool tier. */
  readonly poolAux?: true;
}

/** A pooling or its adjoint on channels-last data (N, S..., C) pooled to (N, O..., C): see LoopKernel.pool. */
export interface PoolSpec {
  readonly grad: boolean;
  readonly mode: 'max' | 'avg';
  readonly window: readonly number[];
  readonly strides: readonly number[];
  readonly dilation: readonly number[];
  /** Each spatial axis' padding before its first cell. */
  readonly pads: readonly number[];
  readonly inSize: readonly number[];
  readonly outSize: readonly number[];
  readonly batch: number;
  readonly channels: number;
  /** The pooled input (pool_grad: x). */
  readonly x: ValueRef;
  /** pool_grad: the pooled shape's cotangent. */
  readonly dy?: ValueRef;
  /** The result's buffer (at offset 0). */
  readonly out: number;
}

/** out[b, i, j] = epilogue(sum_t a(b, i, t) * b(b, t, j)); `a`, `b` are expressions in the kernel's vars. */
export interface MatmulKernel {
  readonly kind: 'matmul';
  /** The provenance of the node it computes (set by lowering; src/ir/provenance.ts). */
  readonly origin?: readonly Provenance[];
  readonly label: string;
  readonly batch: Var;
  readonly m: Var;
  readonly n: Var;
  readonly k: Var;
  readonly a: Expr;
  readonly b: Expr;
  readonly out: Store; // index in (batch, m, n); value: the epilogue, with `acc` for the dot product
  /** Packing buffers (of the `sum` dtype), sized by lowering. */
  readonly packA: number;
  readonly packB: number;
  readonly mr: number;
  readonly nr: number;
  /**
   * The dtype the products' sums are taken in: float64 (every dtype; equal to the reference's
   * sums) or float32 (float32 operands and result under matmul precision "float32": four-lane
   * SIMD, within the error bound of docs/architecture.md).
   */
  readonly sum: 'float32' | 'float64';
  /**
   * A convolution's A operand as cells of its input (float32 sums only): where the cpu's
   * WebAssembly tier has the igemm kernel (wasm/igemm.ts) it sums through an indirection buffer
   * of pointers to the input's cells instead of packing `a` (elsewhere `a` is packed as usual).
   */
  readonly indirect?: IndirectA;
}

/**
 * The geometry of a convolution whose A operand reads x[n, pos..., ch] (0 outside x), with
 * pos_k = o_k*step_k + tap_k*tapStep_k + start_k on each spatial axis: input 0 (buffer `buf`,
 * from element `offset`, channels_last with `channels` channels) read cell by cell. `over`
 * 'rows': A[i, t] with rows i = (n, o...) over `batch` x outSize and terms t = (tap..., ch)
 * over window x channels (conv: step = strides, tapStep = dilation, start = -padding before;
 * conv_transpose: tapStep = -dilation, start = its padding before, the cell pos / strides). 'terms':
 * the kernel gradient's A[i, t] with rows i = (tap..., ch) and terms t = (n, o...) (conv_kernel_grad).
 */
export interface IndirectA {
  readonly over: 'rows' | 'terms';
  readonly buf: number;
  readonly offset: number;
  readonly batch: number;
  readonly channels: number;
  readonly inSize: readonly number[];
  readonly outSize: readonly number[];
  readonly window: readonly number[];
  readonly step: readonly number[];
  readonly tapStep: readonly number[];
  readonly start: readonly number[];
  /** Over 'rows': the input cell is pos_k / div_k where that is whole, none (0) elsewhere (conv_transpose's strides; 1 for conv). */
  readonly div: readonly number[];
}

const prodOf = (xs: readonly number[]) => xs.reduce((p, v) => p * v, 1);

/**
 * The input copied with its padding made explicit (over 'terms'): per spatial axis the first
 * position any tap reads (lo, at most 0) and the copy's size, so that every window is inside it.
 */
export function paddedInput(a: Omit<IndirectA, 'buf' | 'offset'>): { lo: number[]; size: number[] } {
  const lo: number[] = [],
    size: number[] = [];
  a.inSize.forEach((n, k) => {
    const first = a.start[k]! + Math.min(0, (a.window[k]! - 1) * a.tapStep[k]!);
    const last = (a.outSize[k]! - 1) * a.step[k]! + a.start[k]! + Math.max(0, (a.window[k]! - 1) * a.tapStep[k]!);
    lo.push(Math.min(0, first));
    size.push(Math.max(n - 1, last) - Math.min(0, first) + 1);
  });
  return { lo, size };
}

/**
 * Whether a convolution's A over 'rows' is read through window origins (one word per output
 * cell and the terms' offsets from an origin: cpu/igemm.ts' windowA) rather than a pointer per
 * (cell, tap) (igemmA): a convolution (div 1) that reads no padding (its input is the padded
 * copy) of at most WINDOW_ROWS_MAX_CHANNELS input channels, where igemmA's per-tap pointers
 * cost as much as the terms they lead to (XNNPACK's direct convolution for few input channels
 * makes the same choice). Measured on the cpu tier, one thread: 5x5 from 1 channel 0.79x the
 * time, 3x3 from 1 or 2 channels 0.9-1.0x, from 4 1.0x, from 8 or 16 1.02-1.08x.
 */
export function windowRows(a: Omit<IndirectA, 'buf' | 'offset'>): boolean {
  if (a.over !== 'rows' || a.channels > WINDOW_ROWS_MAX_CHANNELS || a.div.some((v) => v !== 1)) return false;
  const { lo, size } = paddedInput(a);
  return lo.every((l) => l === 0) && size.every((n, k) => n === a.inSize[k]);
}
export const WINDOW_ROWS_MAX_CHANNELS = 2;

/**
 * An indirect product's geometry as the flat list cpu/igemm.ts' igemmA, windowA and windowGradA read:
 * batch, channels, rank, then the input sizes, output sizes, window, step, tap step, start and div per axis.
 */
export function indirectGeometry(a: Omit<IndirectA, 'buf' | 'offset'>): number[] {
  return [
    a.batch,
    a.channels,
    a.inSize.length,
    ...a.inSize,
    ...a.outSize,
    ...a.window,
    ...a.step,
    ...a.tapStep,
    ...a.start,
    ...a.div,
  ];
}

/**
 * Elements (4 bytes each) an indirect product's A takes. Over 'rows': the input's cells, a row of
 * zeros, and mr pointers per tap for each A panel. Over 'terms': the padded copy, the window
 * origin of each output cell, and per A panel the table's address and mr row offsets.
 */
export function indirectSize(a: Omit<IndirectA, 'buf' | 'offset'>, mr: number): number {
  const cellsOut = a.batch * prodOf(a.outSize);
  const taps = prodOf(a.window);
  if (windowRows(a))
    return a.batch * prodOf(paddedInput(a).size) * a.channels + taps * a.channels + Math.ceil(cellsOut / mr) * (mr + 1);
  if (a.over === 'terms')
    return (
      a.batch * prodOf(paddedInput(a).size) * a.channels + cellsOut + Math.ceil((taps * a.channels) / mr) * (mr + 1)
    );
  return a.batch * prodOf(a.inSize) * a.channels + a.channels + Math.ceil(cellsOut / mr) * mr * taps;
}

/** An op's reference implementation inside a compiled function (one result, or a tuple's items). */
export interface ExternStep {
  readonly kind: 'extern';
  /** The provenance of the node it computes (set by lowering; src/ir/provenance.ts). */
  readonly origin?: readonly Provenance[];
  readonly label: string;
  readonly def: OpDef;
  readonly attrs: Attrs;
  readonly inputs: readonly ValueRef[];
  /** Why it is not a kernel (for the fallback warning and f.source()). */
  readonly reason: string;
  /** Calls `implTuple` (a Scan) rather than `impl`; `outs` are then its items. */
  readonly tuple: boolean;
  readonly outs: readonly { readonly buf: number; readonly shape: readonly number[]; readonly dtype: DType }[];
}

/**
 * A Scan as a loop in the generated function: per step, run the body's own program on the
 * sequences' slice t, the current states and the constants, and store the step's outputs in
 * the stacked items; the state buffers are swapped (the cpu's loop, cpu/scan.ts, passes views
 * instead of copying into the step buffers, and updates some states in place).
 */
export interface ScanStep {
  readonly kind: 'scan';
  /** The provenance of the node it computes (set by lowering; src/ir/provenance.ts). */
  readonly origin?: readonly Provenance[];
  readonly label: string;
  readonly steps: number;
  readonly backwards: boolean;
  /** The body, compiled for one step's shapes: inputs are sequences' slices, states, constants (by slot); targets are outputs, then new states. */
  readonly body: Program;
  readonly seqs: readonly ValueRef[];
  readonly inits: readonly ValueRef[];
  readonly consts: readonly ValueRef[];
  /** Scratch: one step buffer per sequence, two buffers per state, one per output. */
  readonly seqStep: readonly number[];
  readonly stateA: readonly number[];
  readonly stateB: readonly number[];
  readonly outStep: readonly number[];
  /** Items of the scan's tuple: stacked outputs, final states, stacked state sequences; and how each stack keeps. */
  readonly outItems: readonly { readonly buf: number; readonly keep: 'all' | 'last' | 'none' }[];
  readonly finalItems: readonly number[];
  readonly stateItems: readonly { readonly buf: number; readonly keep: 'all' | 'last' | 'none' }[];
}

/**
 * print_tensor: the message and its input's value written through the evaluation's print hook
 * (`ctx.print`) when the step runs; the value passes through unchanged (the node's value is its
 * input's). A host callback inside generated code, as Theano's Print op is a host op with no
 * device code.
 */
export interface PrintStep {
  readonly kind: 'print';
  /** The provenance of the node it computes (set by lowering; src/ir/provenance.ts). */
  readonly origin?: readonly Provenance[];
  readonly label: string;
  readonly message: string;
  readonly input: ValueRef;
}

export type Step = LoopKernel | MatmulKernel | ExternStep | ScanStep | PrintStep;

/** A result handed to the caller: copied out of its buffer unless the step wrote a fresh target buffer. */
export interface TargetRef extends ValueRef {
  readonly copy: boolean;
}

export interface Program {
  readonly buffers: readonly BufferDecl[];
  readonly steps: readonly Step[];
  readonly targets: readonly TargetRef[];
}

/** Records which user calls a step computes (lowering sets it once, after building the step). */
export function setOrigin(s: Step, records: readonly Provenance[]): void {
  (s as { origin?: readonly Provenance[] }).origin = records;
}

/** Buffers a step reads and writes (for planning). */
export function stepBuffers(s: Step): { reads: number[]; writes: number[]; scratch: number[] } {
  switch (s.kind) {
    case 'extern':
      return { reads: s.inputs.map((v) => v.buf), writes: s.outs.map((o) => o.buf), scratch: [] };
    case 'print':
      return { reads: [s.input.buf], writes: [], scratch: [] };
    case 'loop': {
      const reads = new Set<number>();
      for (const st of s.stores) {
        collectLoads(st.value, reads);
        if (st.dyn !== undefined) collectLoads(st.dyn.row, reads);
        if (st.accumulate === true) reads.add(st.buf);
      }
      return { reads: [...reads], writes: s.stores.map((st) => st.buf), scratch: [] };
    }
    case 'scan':
      return {
        reads: [...s.seqs, ...s.inits, ...s.consts].map((v) => v.buf),
        writes: [...s.outItems.map((o) => o.buf), ...s.finalItems, ...s.stateItems.map((o) => o.buf)],
        scratch: [...s.seqStep, ...s.stateA, ...s.stateB, ...s.outStep],
      };
    case 'matmul': {
      const reads = new Set<number>();
      collectLoads(s.a, reads);
      collectLoads(s.b, reads);
      collectLoads(s.out.value, reads);
      return { reads: [...reads], writes: [s.out.buf], scratch: [s.packA, s.packB] };
    }
  }
}

function collectLoads(e: Expr, into: Set<number>, seen = new Set<Expr>()): void {
  if (seen.has(e)) return;
  seen.add(e);
  if (e.t === 'load') {
    into.add(e.buf);
    if (e.dyn !== undefined) collectLoads(e.dyn.row, into, seen);
  } else if (e.t === 'row') collectLoads(e.x, into, seen);
  else if (e.t === 'op' || e.t === 'call') for (const a of e.args) collectLoads(a, into, seen);
  else if (e.t === 'cast') collectLoads(e.x, into, seen);
  else if (e.t === 'reduce') collectLoads(e.body, into, seen);
}
