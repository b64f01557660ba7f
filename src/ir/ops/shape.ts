// Structural ops: each output element is one input element (or a zero), chosen by index
// arithmetic. Codegen treats them as views (offsets, strides, clamps), so the Keras shape
// functions (reverse, stack, repeat, padding, resizing...) are compositions of these few.
import { promote } from '../dtype.js';
import { NDArray, formatShape, sizeOf, stridesOf } from '../ndarray.js';
import { defineOp } from '../op.js';
import { normAxis, tensorType, type Dim, type TensorType } from '../types.js';
import { InferError } from '../errors.js';
import { generate, offsetOf } from './util.js';

// ---------------------------------------------------------------------------------------------
// slice: Python's x[start:stop:step] on every axis.

/** One axis of a slice, with Python's meaning: null start/stop are the ends for the step's direction. */
export interface SliceAxis {
  readonly start: number | null;
  readonly stop: number | null;
  readonly step: number;
}
export interface SliceAttrs {
  readonly axes: readonly SliceAxis[];
}

/**
 * Python's slice.indices: negative bounds count from the end, then bounds are clamped to the
 * axis. Returns the first index and the number of elements taken.
 */
export function sliceRange(s: SliceAxis, d: number): { first: number; count: number } {
  const { step } = s;
  const lo = step > 0 ? 0 : -1;
  const hi = step > 0 ? d : d - 1;
  const clamp = (v: number | null, dflt: number): number => {
    if (v === null) return dflt;
    const r = v < 0 ? v + d : v;
    return Math.min(Math.max(r, lo), hi);
  };
  const first = clamp(s.start, step > 0 ? lo : hi);
  const stop = clamp(s.stop, step > 0 ? hi : lo);
  const count =
    step > 0 ? Math.max(0, Math.ceil((stop - first) / step)) : Math.max(0, Math.ceil((first - stop) / -step));
  return { first, count };
}

function checkSlice(x: TensorType, a: SliceAttrs): void {
  if (a.axes.length !== x.shape.length) {
    throw new InferError(`slice gives ${a.axes.length} axes for a tensor of shape ${formatShape(x.shape)}`, 'value');
  }
  a.axes.forEach((s, i) => {
    if (!Number.isInteger(s.step) || s.step === 0)
      throw new InferError(`slice step ${s.step} on axis ${i} is not a nonzero integer`, 'value');
    for (const v of [s.start, s.stop]) {
      if (v !== null && !Number.isInteger(v))
        throw new InferError(`slice bound ${v} on axis ${i} is not an integer`, 'value');
    }
  });
}

export const sliceOp = defineOp<SliceAttrs>({
  name: 'slice',
  kind: 'shape',
  arity: 1,
  infer: ([x], a) => {
    checkSlice(x!, a);
    // Clamping makes the length depend on the axis size, so an unknown axis stays unknown.
    return tensorType(
      x!.dtype,
      x!.shape.map((d, i) => (d === null ? null : sliceRange(a.axes[i]!, d).count)),
    );
  },
  impl: ([x], a) => {
    const ranges = a.axes.map((s, i) => sliceRange(s, x!.shape[i]!));
    const st = stridesOf(x!.shape);
    const base = ranges.reduce((o, r, i) => o + r.first * st[i]!, 0);
    const step = a.axes.map((s, i) => s.step * st[i]!);
    // out[j...] = x[first + j * step, ...] on every axis
    return generate(
      ranges.map((r) => r.count),
      x!.dtype,
      (idx) => x!.data[base + offsetOf(idx, step)]!,
    );
  },
});

// ---------------------------------------------------------------------------------------------
// pad: zeros before and after each axis.

export interface PadAttrs {
  /** `[before, after]` per axis, non-negative. */
  readonly pads: readonly (readonly [number, number])[];
}

export const padOp = defineOp<PadAttrs>({
  name: 'pad',
  kind: 'shape',
  arity: 1,
  infer: ([x], a) => {
    if (a.pads.length !== x!.shape.length)
      throw new InferError(`pad gives ${a.pads.length} axes for a tensor of shape ${formatShape(x!.shape)}`, 'value');
    a.pads.forEach((p, i) => {
      if (p.some((v) => !Number.isInteger(v) || v < 0))
        throw new InferError(`padding [${p.join(', ')}] on axis ${i} is not a pair of non-negative integers`, 'value');
    });
    return tensorType(
      x!.dtype,
      x!.shape.map((d, i) => (d === null ? null : d + a.pads[i]![0] + a.pads[i]![1])),
    );
  },
  impl: ([x], a) => {
    const shape = x!.shape.map((d, i) => d + a.pads[i]![0] + a.pads[i]![1]);
    const st = stridesOf(x!.shape);
    // out[j] = x[j - before] where that lies inside x, else 0
    return generate(shape, x!.dtype, (idx) => {
      let o = 0;
      for (let i = 0; i < idx.length; i++) {
        const k = idx[i]! - a.pads[i]![0];
        if (k < 0 || k >= x!.shape[i]!) return 0;
        o += k * st[i]!;
      }
      return x!.data[o]!;
    });
  },
});

// ---------------------------------------------------------------------------------------------
// concat: inputs joined along one axis; every other dim must agree.

/** Unifies two dims that must be equal: a known dim wins over an unknown one. */
/**
 * The row of a gather's reference an index names: negative indices count from the end (NumPy and
 * Theano); anything else outside is an error.
 */
export function gatherRow(raw: number, refShape: readonly number[]): number {
  const n = refShape[0]!;
  const k = raw < 0 ? raw + n : raw;
  if (k < 0 || k >= n) {
    throw new InferError(
      `index ${raw} is out of range for reference of shape ${formatShape(refShape)} (allowed: ${-n}..${n - 1})`,
      'value',
    );
  }
  return k;
}

export function unifyDim(p: Dim, q: Dim): Dim | undefined {
  if (p === null) return q;
  if (q === null || p === q) return p;
  return undefined;
}

export const concatOp = defineOp<{ readonly axis: number }>({
  name: 'concat',
  kind: 'shape',
  arity: 'variadic',
  infer: (ins, a) => {
    if (ins.length === 0) throw new InferError('concatenate needs at least one tensor', 'value');
    const first = ins[0]!;
    const r = first.shape.length;
    if (r === 0) throw new InferError('cannot concatenate scalars (rank 0); stack them instead', 'value');
    const axis = normAxis(a.axis, r);
    const out: Dim[] = [...first.shape];
    ins.forEach((t, j) => {
      if (t.shape.length !== r)
        throw new InferError(
          `all tensors must have the same rank: tensor 0 has shape ${formatShape(first.shape)} but tensor ${j} has ${formatShape(t.shape)}`,
        );
      if (j === 0) return;
      t.shape.forEach((d, i) => {
        if (i === axis) {
          out[i] = out[i] === null || d === null ? null : out[i]! + d;
          return;
        }
        const u = unifyDim(out[i]!, d);
        if (u === undefined)
          throw new InferError(
            `shapes ${formatShape(first.shape)} (tensor 0) and ${formatShape(t.shape)} (tensor ${j}) differ on axis ${i} (${out[i]} vs ${d}); only axis ${axis} may differ`,
          );
        out[i] = u;
      });
    });
    return tensorType(ins.map((t) => t.dtype).reduce(promote), out);
  },
  impl: (ins, a) => {
    const first = ins[0]!;
    const axis = a.axis < 0 ? a.axis + first.shape.length : a.axis;
    for (const t of ins) {
      if (t.shape.some((d, i) => i !== axis && d !== first.shape[i])) {
        throw new InferError(
          `shapes ${ins.map((u) => formatShape(u.shape)).join(', ')} differ off the concatenation axis ${axis}`,
        );
      }
    }
    const shape = [...first.shape];
    shape[axis] = ins.reduce((s, t) => s + t.shape[axis]!, 0);
    const outer = sizeOf(shape.slice(0, axis));
    const out = new Float64Array(sizeOf(shape));
    // each outer index contributes one contiguous block per input, in input order
    let o = 0;
    for (let i = 0; i < outer; i++) {
      for (const t of ins) {
        const block = t.size / (outer || 1);
        for (let k = 0; k < block; k++) out[o++] = t.data[i * block + k]!;
      }
    }
    return new NDArray(out, shape, ins.map((t) => t.dtype).reduce(promote));
  },
});

// ---------------------------------------------------------------------------------------------
// gather: rows of `reference` (axis 0) picked by an integer tensor of any rank.

export const gatherOp = defineOp<Record<string, never>>({
  name: 'gather',
  kind: 'shape',
  arity: 2,
  infer: ([ref, ind]) => {
    if (ref!.shape.length === 0)
      throw new InferError('reference must have rank >= 1 (a scalar has no rows to gather)', 'value');
    if (
      ind!.dtype !== 'int8' &&
      ind!.dtype !== 'int16' &&
      ind!.dtype !== 'int32' &&
      ind!.dtype !== 'int64' &&
      ind!.dtype !== 'uint8'
    ) {
      throw new InferError(`indices must be an integer tensor, got ${ind!.dtype}`, 'type');
    }
    return tensorType(ref!.dtype, [...ind!.shape, ...ref!.shape.slice(1)]);
  },
  impl: ([ref, ind]) => {
    const n = ref!.shape[0]!;
    const row = ref!.size / (n || 1);
    const out = new Float64Array(ind!.size * row);
    for (let j = 0; j < ind!.size; j++) {
      const k = gatherRow(ind!.data[j]!, ref!.shape);
      for (let t = 0; t < row; t++) out[j * row + t] = ref!.data[k * row + t]!;
    }
    return new NDArray(out, [...ind!.shape, ...ref!.shape.slice(1)], ref!.dtype);
  },
});

// ---------------------------------------------------------------------------------------------
// tile and repeat_elements: the two ways of repeating along an axis.

function checkCounts(x: TensorType, counts: readonly number[], what: string): void {
  if (counts.length !== x.shape.length)
    throw new InferError(`${what} has ${counts.length} entries for a tensor of shape ${formatShape(x.shape)}`, 'value');
  if (counts.some((r) => !Number.isInteger(r) || r < 0))
    throw new InferError(`${what} ${formatShape(counts)} must be non-negative integers`, 'value');
}

/**
 * Where tile and repeat_elements read: the offset into the source (of shape `shape`) of the
 * element at index `idx` of the repeated tensor. untile and unrepeat, their adjoints, sum back
 * into the same offsets.
 */
export function tiledFrom(shape: readonly number[]): (idx: readonly number[]) => number {
  const st = stridesOf(shape);
  return (idx) => idx.reduce((o, k, i) => o + (k % shape[i]!) * st[i]!, 0);
}

export function repeatedFrom(shape: readonly number[], axis: number, rep: number): (idx: readonly number[]) => number {
  const st = stridesOf(shape);
  return (idx) => idx.reduce((o, k, i) => o + (i === axis ? Math.floor(k / rep) : k) * st[i]!, 0);
}

/** The axis of a repeat (normalised), after checking `rep` is an integer of at least `least`. */
export function repeatAxis(a: RepeatAttrs, rank: number, least: 0 | 1): number {
  const axis = normAxis(a.axis, rank);
  if (!Number.isInteger(a.rep) || a.rep < least)
    throw new InferError(`rep ${a.rep} must be a ${least === 0 ? 'non-negative' : 'positive'} integer`, 'value');
  return axis;
}

/** The whole tensor repeated `reps[i]` times along axis i: out[j] = x[j mod d] (NumPy's tile). */
export const tileOp = defineOp<{ readonly reps: readonly number[] }>({
  name: 'tile',
  kind: 'shape',
  arity: 1,
  infer: ([x], a) => {
    checkCounts(x!, a.reps, 'reps');
    return tensorType(
      x!.dtype,
      x!.shape.map((d, i) => (d === null ? (a.reps[i] === 0 ? 0 : null) : d * a.reps[i]!)),
    );
  },
  impl: ([x], a) => {
    const from = tiledFrom(x!.shape);
    return generate(
      x!.shape.map((d, i) => d * a.reps[i]!),
      x!.dtype,
      (idx) => x!.data[from(idx)]!,
    );
  },
});

export interface RepeatAttrs {
  readonly axis: number;
  readonly rep: number;
}

/** Each element repeated `rep` times along `axis`: out[j] = x[floor(j / rep)] (NumPy's repeat). */
export const repeatElementsOp = defineOp<RepeatAttrs>({
  name: 'repeat_elements',
  kind: 'shape',
  arity: 1,
  infer: ([x], a) => {
    const axis = repeatAxis(a, x!.shape.length, 0);
    const d = x!.shape[axis]!;
    return tensorType(
      x!.dtype,
      x!.shape.map((e, i) => (i !== axis ? e : d === null ? (a.rep === 0 ? 0 : null) : d * a.rep)),
    );
  },
  impl: ([x], a) => {
    const axis = normAxis(a.axis, x!.shape.length);
    const from = repeatedFrom(x!.shape, axis, a.rep);
    return generate(
      x!.shape.map((d, i) => (i === axis ? d * a.rep : d)),
      x!.dtype,
      (idx) => x!.data[from(idx)]!,
    );
  },
});

export const shapeOps = {
  slice: sliceOp,
  pad: padOp,
  concat: concatOp,
  gather: gatherOp,
  tile: tileOp,
  repeat_elements: repeatElementsOp,
} as const;
