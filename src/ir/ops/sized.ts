// Ops whose sizes come from tensors: Keras takes `K.shape(x)`, `K.shape(x)[i]`,
// their arithmetic, and lists mixing numbers and scalar int tensors wherever a shape or a size
// goes. Each op here is the sized twin of a static op: the same inputs, then int vectors with the
// sizes. Static inference keeps what it can (`attrs.known`, null where unknown). A compiled
// function is specialised per set of input shapes, and there the size vectors are usually known
// (they are computed from shapes and constants), so `resolve` replaces the node by its static op
// (src/codegen/lower/lower.ts): the kernels, the gpu and export see only static ops. Theano's Reshape
// takes its shape as an input the same way; its shape feature folds it per graph, XLA's dynamic
// dimensions per compilation.
import { isInt, type DType } from '../dtype.js';
import { NDArray, formatShape, sizeOf } from '../ndarray.js';
import type { OpDef, Resolved } from '../op.js';
import { InferError } from '../errors.js';
import { tensorType, type Dim, type TensorType } from '../types.js';
import { resolveReshape } from './core.js';
import { sliceOp, tileOp, type SliceAxis } from './shape.js';
import { unsliceOp, untileOp } from './shape-adjoint.js';

/** A sized op: an OpDef with `resolve`. */
export type SizedOpDef<A> = OpDef<A> & Required<Pick<OpDef<A>, 'resolve'>>;

/** Declares a sized op, its attribute type checked at the definition and `resolve` required. */
function defineSizedOp<A>(def: SizedOpDef<A>): SizedOpDef<A> {
  return def;
}

/** The static knowledge of a size vector: its length and the entries known at build time. */
export interface KnownDims {
  readonly known: readonly Dim[];
}

function checkVector(what: string, t: TensorType | undefined, n: number): void {
  if (t === undefined || t.shape.length !== 1 || !isInt(t.dtype) || (t.shape[0] !== null && t.shape[0] !== n)) {
    throw new InferError(
      `${what} must be a 1-D integer tensor of ${n} entries, got ${t === undefined ? 'nothing' : `${t.dtype} ${formatShape(t.shape)}`}`,
      'value',
    );
  }
}

const ints = (v: NDArray): number[] => Array.from(v.data, Number);

/** Values of the inputs from `from` on, or undefined while one is not known. */
function vectors(known: readonly (NDArray | undefined)[], from: number): number[][] | undefined {
  const vs = known.slice(from);
  return vs.every((v) => v !== undefined) ? vs.map((v) => ints(v!)) : undefined;
}

/** The `resolve` of a sized op (x, v): the static op `op` over x, with v's values as its attribute `attr`. */
function staticWith(op: string, attr: string): (known: readonly (NDArray | undefined)[]) => Resolved | undefined {
  return (known) => {
    const v = vectors(known, 1);
    return v === undefined ? undefined : { op, inputs: [0], attrs: { [attr]: v[0]! } };
  };
}

// ---------------------------------------------------------------------------------------------

/** reshape_dims(x, dims): reshape to the values of `dims` (one entry may be -1). */
export const reshapeDimsOp = defineSizedOp<KnownDims>({
  name: 'reshape_dims',
  kind: 'shape',
  arity: 2,
  infer: ([x, d], a) => {
    checkVector('the reshape size vector', d, a.known.length);
    const k = a.known;
    if (!k.includes(null)) return tensorType(x!.dtype, resolveReshape(x!.shape, k as number[]));
    // Entries known only at run time: the -1 entry is then unknown too.
    return tensorType(
      x!.dtype,
      k.map((d) => (d === -1 ? null : d)),
    );
  },
  impl: ([x, d]) => x!.reshape(resolveReshape(x!.shape, ints(d!)) as number[]),
  resolve: staticWith('reshape', 'shape'),
});

/** tile_dims(x, reps): tile with the values of `reps` (one per axis of x). */
export const tileDimsOp = defineSizedOp<KnownDims>({
  name: 'tile_dims',
  kind: 'shape',
  arity: 2,
  infer: ([x, r], a) => {
    checkVector('the tile reps vector', r, x!.shape.length);
    if (a.known.length !== x!.shape.length)
      throw new InferError(
        `reps has ${a.known.length} entries for a tensor of shape ${formatShape(x!.shape)}`,
        'value',
      );
    return tensorType(
      x!.dtype,
      x!.shape.map((d, i) => {
        const k = a.known[i]!;
        if (k === 0) return 0;
        return d === null || k === null ? null : d * k;
      }),
    );
  },
  impl: ([x, r], _a, ctx) => tileOp.impl([x!], { reps: ints(r!) }, ctx),
  resolve: staticWith('tile', 'reps'),
});

/** untile_dims(g, reps, x): tile_dims' adjoint, x's shape (zeros where a rep is 0). */
export const untileDimsOp = defineSizedOp<KnownDims>({
  name: 'untile_dims',
  kind: 'reduction',
  arity: 3,
  infer: ([g, r, x]) => {
    checkVector('the tile reps vector', r, x!.shape.length);
    return tensorType(g!.dtype, x!.shape);
  },
  impl: ([g, r, x], _a, ctx) => {
    const reps = ints(r!);
    if (reps.includes(0)) return NDArray.zeros(x!.shape, g!.dtype);
    return untileOp.impl([g!], { reps }, ctx);
  },
  resolve: (known, shapes): Resolved | undefined => {
    const v = vectors(known.slice(0, 2), 1);
    if (v === undefined) return undefined;
    if (v[0]!.includes(0))
      return { op: 'constant', inputs: [], attrs: { value: NDArray.zeros(shapes[2]!.shape, shapes[0]!.dtype) } }; // nothing was tiled
    return { op: 'untile', inputs: [0], attrs: { reps: v[0]! } };
  },
});

// ---------------------------------------------------------------------------------------------

export interface FillDimsAttrs extends KnownDims {
  readonly value: number;
  readonly dtype: DType;
}

function filled(shape: readonly number[], value: number, dtype: DType): NDArray {
  return new NDArray(new Float64Array(sizeOf(shape)).fill(value), shape, dtype);
}

/** fill_dims(dims): a tensor of the values of `dims` as its shape, every element `value` (zeros, ones). */
export const fillDimsOp = defineSizedOp<FillDimsAttrs>({
  name: 'fill_dims',
  kind: 'other',
  arity: 1,
  infer: ([d], a) => {
    checkVector('the shape vector', d, a.known.length);
    return tensorType(a.dtype, a.known);
  },
  impl: ([d], a) => {
    const s = ints(d!);
    if (s.some((k) => !Number.isInteger(k) || k < 0))
      throw new InferError(`shape ${formatShape(s)} has a negative dim`);
    return filled(s, a.value, a.dtype);
  },
  resolve: (known, _s, a) => {
    const v = vectors(known, 0);
    if (v === undefined || v[0]!.some((k) => k < 0)) return undefined;
    return { op: 'constant', inputs: [], attrs: { value: filled(v[0]!, a.value, a.dtype) } };
  },
});

/** arange_dims(start, stop, step): NumPy's arange from scalar tensors. */
export const arangeDimsOp = defineSizedOp<{ readonly dtype: DType }>({
  name: 'arange_dims',
  kind: 'other',
  arity: 3,
  infer: (ins, a) => {
    ins.forEach((t, i) => {
      if (t!.shape.length !== 0)
        throw new InferError(
          `arange's ${['start', 'stop', 'step'][i]} must be a scalar, got shape ${formatShape(t!.shape)}`,
          'value',
        );
    });
    return tensorType(a.dtype, [null]);
  },
  impl: (ins, a) =>
    arangeOf(
      ins.map((v) => Number(v.data[0])),
      a.dtype,
    ),
  resolve: (known, _s, a) => {
    if (!known.every((v) => v !== undefined)) return undefined;
    try {
      return {
        op: 'constant',
        inputs: [],
        attrs: {
          value: arangeOf(
            known.map((v) => Number(v!.data[0])),
            a.dtype,
          ),
        },
      };
    } catch {
      return undefined; // the reference reports a zero step
    }
  },
});

function arangeOf([start, stop, step]: number[], dtype: DType): NDArray {
  if (step === 0 || !Number.isFinite(step!)) throw new InferError(`arange step must be a nonzero number, got ${step}`);
  const n = Math.max(0, Math.ceil((stop! - start!) / step!));
  return new NDArray(
    Float64Array.from({ length: n }, (_, i) => start! + i * step!),
    [n],
    dtype,
  );
}

// ---------------------------------------------------------------------------------------------

/** K.slice's start and size per axis (size -1: to the end), as static knowledge. */
export interface SliceDimsAttrs {
  readonly start: readonly Dim[];
  readonly size: readonly Dim[];
}

export function sliceAxes(start: readonly number[], size: readonly number[], shape: readonly number[]): SliceAxis[] {
  return start.map((s, i) => {
    const n = size[i]!;
    if (!Number.isInteger(s) || s < 0 || !Number.isInteger(n) || n < -1)
      throw new InferError(
        `slice start ${formatShape(start)} and size ${formatShape(size)} must be integers (start >= 0, size >= -1)`,
      );
    if (n !== -1 && s + n > shape[i]!)
      throw new InferError(
        `slice of start ${formatShape(start)} and size ${formatShape(size)} runs past axis ${i} of ${formatShape(shape)}`,
      );
    return { start: s, stop: n === -1 ? null : s + n, step: 1 };
  });
}

/** slice_dims(x, start, size): K.slice with start and size from int vectors. */
export const sliceDimsOp = defineSizedOp<SliceDimsAttrs>({
  name: 'slice_dims',
  kind: 'shape',
  arity: 3,
  infer: ([x, st, sz], a) => {
    const r = x!.shape.length;
    checkVector('the slice start vector', st, r);
    checkVector('the slice size vector', sz, r);
    return tensorType(
      x!.dtype,
      x!.shape.map((d, i) => {
        const [s, n] = [a.start[i]!, a.size[i]!];
        if (n !== null && n !== -1) return n;
        return n === -1 && s !== null && d !== null ? d - s : null;
      }),
    );
  },
  impl: ([x, st, sz], _a, ctx) => sliceOp.impl([x!], { axes: sliceAxes(ints(st!), ints(sz!), x!.shape) }, ctx),
  resolve: (known, shapes) => {
    const v = vectors(known, 1);
    const axes = v === undefined ? undefined : checkedAxes(v[0]!, v[1]!, shapes[0]!.shape);
    return axes === undefined ? undefined : { op: 'slice', inputs: [0], attrs: { axes: axes.map((x) => ({ ...x })) } };
  },
});

/** unslice_dims(g, x, start, size): slice_dims' adjoint (zeros of x's shape, g where the slice read). */
export const unsliceDimsOp = defineSizedOp<SliceDimsAttrs>({
  name: 'unslice_dims',
  kind: 'shape',
  arity: 4,
  infer: ([g, x, st, sz]) => {
    const r = x!.shape.length;
    checkVector('the slice start vector', st, r);
    checkVector('the slice size vector', sz, r);
    return tensorType(g!.dtype, x!.shape);
  },
  impl: ([g, x, st, sz], _a, ctx) => unsliceOp.impl([g!, x!], { axes: sliceAxes(ints(st!), ints(sz!), x!.shape) }, ctx),
  resolve: (known, shapes) => {
    const v = vectors(known, 2);
    const axes = v === undefined ? undefined : checkedAxes(v[0]!, v[1]!, shapes[1]!.shape);
    return axes === undefined
      ? undefined
      : { op: 'unslice', inputs: [0, 1], attrs: { axes: axes.map((x) => ({ ...x })) } };
  },
});

/** Slice axes when the bounds fit x (otherwise undefined: the reference reports it at run time). */
function checkedAxes(
  start: readonly number[],
  size: readonly number[],
  shape: readonly number[],
): SliceAxis[] | undefined {
  try {
    return sliceAxes(start, size, shape);
  } catch {
    return undefined;
  }
}

export const sizedOps = {
  reshape_dims: reshapeDimsOp,
  tile_dims: tileDimsOp,
  untile_dims: untileDimsOp,
  fill_dims: fillDimsOp,
  arange_dims: arangeDimsOp,
  slice_dims: sliceDimsOp,
  unslice_dims: unsliceDimsOp,
} as const;
