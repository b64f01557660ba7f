// The adjoints of the structural ops, needed by their gradient rules: each sends a cotangent back
// to where the forward op read it from (zeros elsewhere, sums where it read an element twice).
// Those taking a reference tensor match its runtime shape, so unknown static dims are fine.
import { NDArray, formatShape, sizeOf, stridesOf } from '../ndarray.js';
import { defineOp } from '../op.js';
import { normAxis, tensorType, type Dim } from '../types.js';
import { InferError } from '../errors.js';
import { forEachIndex, offsetOf } from './util.js';
import type { RepeatAttrs, SliceAttrs } from './shape.js';
import {
  concatOp,
  gatherOp,
  gatherRow,
  repeatAxis,
  repeatedFrom,
  sliceOp,
  sliceRange,
  tiledFrom,
  unifyDim,
} from './shape.js';

/** The adjoint of a repeat: zeros of `shape`, each element of g added where the repeat read it from. */
function sumInto(
  g: NDArray,
  shape: readonly number[],
  readFrom: (shape: readonly number[]) => (idx: readonly number[]) => number,
): NDArray {
  const from = readFrom(shape);
  const out = new Float64Array(sizeOf(shape));
  forEachIndex(g.shape, (idx, j) => {
    const o = from(idx);
    out[o] = out[o]! + g.data[j]!;
  });
  return new NDArray(out, shape, g.dtype);
}

function sameShape(what: string, got: readonly Dim[], want: readonly Dim[]): void {
  if (got.length !== want.length || got.some((d, i) => unifyDim(d, want[i]!) === undefined)) {
    throw new InferError(`${what} has shape ${formatShape(got)} where ${formatShape(want)} is expected`);
  }
}

/** unslice(g, x): zeros of x's shape, with g written where slice(x) read (the adjoint of slice). */
export const unsliceOp = defineOp<SliceAttrs>({
  name: 'unslice',
  kind: 'shape',
  arity: 2,
  infer: ([g, x], a) => {
    sameShape('the cotangent', g!.shape, sliceOp.infer([x!], a).shape);
    return tensorType(g!.dtype, x!.shape);
  },
  impl: ([g, x], a) => {
    const ranges = a.axes.map((s, i) => sliceRange(s, x!.shape[i]!));
    const st = stridesOf(x!.shape);
    const base = ranges.reduce((o, r, i) => o + r.first * st[i]!, 0);
    const step = a.axes.map((s, i) => s.step * st[i]!);
    const out = new Float64Array(x!.size);
    forEachIndex(g!.shape, (idx, j) => {
      out[base + offsetOf(idx, step)] = g!.data[j]!;
    });
    return new NDArray(out, x!.shape, g!.dtype);
  },
});

export interface ConcatPartAttrs {
  readonly axis: number;
  /** Which of the concatenated inputs (after the cotangent) this part belongs to. */
  readonly index: number;
}

/** concat_part(g, x0, x1, ...): the part of g that concat(x0, x1, ...) took from x[index]. */
export const concatPartOp = defineOp<ConcatPartAttrs>({
  name: 'concat_part',
  kind: 'shape',
  arity: 'variadic',
  infer: ([g, ...xs], a) => {
    if (g === undefined || a.index < 0 || a.index >= xs.length)
      throw new InferError(`concat_part: no input ${a.index} among ${xs.length}`, 'value');
    sameShape('the cotangent', g.shape, concatOp.infer(xs, { axis: a.axis }).shape);
    const part = xs[a.index]!;
    return tensorType(
      g.dtype,
      part.shape.map((d, i) => (i === a.axis ? d : unifyDim(d, g.shape[i]!)!)),
    );
  },
  impl: ([g, ...xs], a) => {
    const before = xs.slice(0, a.index).reduce((s, t) => s + t.shape[a.axis]!, 0);
    const d = xs[a.index]!.shape[a.axis]!;
    const shape = g!.shape.map((e, i) => (i === a.axis ? d : e));
    const st = stridesOf(g!.shape);
    const out = new Float64Array(sizeOf(shape));
    forEachIndex(shape, (idx, j) => {
      out[j] = g!.data[offsetOf(idx, st) + before * st[a.axis]!]!;
    });
    return new NDArray(out, shape, g!.dtype);
  },
});

/** scatter_add_rows(g, indices, ref): zeros of ref's shape plus each row g[j] at row indices[j] (the adjoint of gather). */
export const scatterAddRowsOp = defineOp<Record<string, never>>({
  name: 'scatter_add_rows',
  kind: 'other',
  arity: 3,
  infer: ([g, ind, ref]) => {
    sameShape('the cotangent', g!.shape, gatherOp.infer([ref!, ind!], {}).shape);
    return tensorType(g!.dtype, ref!.shape);
  },
  impl: ([g, ind, ref]) => {
    const n = ref!.shape[0]!;
    const row = ref!.size / (n || 1);
    const out = new Float64Array(ref!.size);
    for (let j = 0; j < ind!.size; j++) {
      const k = gatherRow(ind!.data[j]!, ref!.shape);
      for (let t = 0; t < row; t++) out[k * row + t] = out[k * row + t]! + g!.data[j * row + t]!;
    }
    return new NDArray(out, ref!.shape, g!.dtype);
  },
});

function divided(d: Dim, r: number, axis: number, shape: readonly Dim[]): Dim {
  if (d === null) return null;
  if (d % r !== 0) throw new InferError(`axis ${axis} of ${formatShape(shape)} is not a multiple of ${r}`);
  return d / r;
}

/** untile(g): the adjoint of tile with `reps` (all >= 1): the sum of the tiles, x[i] = sum_k g[i + k d]. */
export const untileOp = defineOp<{ readonly reps: readonly number[] }>({
  name: 'untile',
  kind: 'reduction',
  arity: 1,
  infer: ([g], a) => {
    if (a.reps.length !== g!.shape.length || a.reps.some((r) => !Number.isInteger(r) || r < 1))
      throw new InferError(
        `reps ${formatShape(a.reps)} must be one positive integer per axis of ${formatShape(g!.shape)}`,
        'value',
      );
    return tensorType(
      g!.dtype,
      g!.shape.map((d, i) => divided(d, a.reps[i]!, i, g!.shape)),
    );
  },
  impl: ([g], a) =>
    sumInto(
      g!,
      g!.shape.map((d, i) => d / a.reps[i]!),
      tiledFrom,
    ),
});

/** unrepeat(g): the adjoint of repeat_elements (rep >= 1): x[i] = sum_k g[i rep + k] along `axis`. */
export const unrepeatOp = defineOp<RepeatAttrs>({
  name: 'unrepeat',
  kind: 'reduction',
  arity: 1,
  infer: ([g], a) => {
    const axis = repeatAxis(a, g!.shape.length, 1);
    return tensorType(
      g!.dtype,
      g!.shape.map((d, i) => (i === axis ? divided(d, a.rep, i, g!.shape) : d)),
    );
  },
  impl: ([g], a) => {
    const axis = normAxis(a.axis, g!.shape.length);
    return sumInto(
      g!,
      g!.shape.map((d, i) => (i === axis ? d / a.rep : d)),
      (shape) => repeatedFrom(shape, axis, a.rep),
    );
  },
});

export const shapeGradOps = {
  unslice: unsliceOp,
  concat_part: concatPartOp,
  scatter_add_rows: scatterAddRowsOp,
  untile: untileOp,
  unrepeat: unrepeatOp,
} as const;
