// Leaves (placeholders, variables, constants, the learning phase) and the structural
// primitives every other family builds on: cast, identity, reshape, transpose, dot.
import { isDType, promote, type DType } from '../dtype.js';
import { NDArray, formatShape, sizeOf, stridesOf } from '../ndarray.js';
import { defineOp } from '../op.js';
import { staticSize, tensorType, type Dim, type StaticShape } from '../types.js';
import { InferError } from '../errors.js';
import { forEachIndex, offsetOf } from './util.js';

export interface LeafAttrs {
  readonly uid: number;
  readonly name: string;
  readonly dtype: DType;
  readonly shape: StaticShape;
  /** A placeholder of unknown rank (shape is empty). */
  readonly unknownRank?: boolean;
}

const leafInfer = (_: unknown, a: LeafAttrs) =>
  a.unknownRank === true ? { ...tensorType(a.dtype, []), unknownRank: true as const } : tensorType(a.dtype, a.shape);

export const placeholderOp = defineOp<LeafAttrs & { readonly sparse: boolean }>({
  name: 'placeholder',
  kind: 'leaf',
  arity: 0,
  infer: leafInfer,
  impl: (_, a) => {
    throw new InferError(
      `placeholder ${JSON.stringify(a.name)} was not given a value: list it in the function's inputs`,
      'value',
    );
  },
});

/** A variable's value is not an attr: it lives in the node's cell and is read by the runtime. */
export const variableOp = defineOp<LeafAttrs>({
  name: 'variable',
  kind: 'leaf',
  arity: 0,
  infer: leafInfer,
  impl: () => {
    throw new Error('variable: the interpreter reads variables from their cells');
  },
});

export const constantOp = defineOp<{ readonly value: NDArray }>({
  name: 'constant',
  kind: 'leaf',
  arity: 0,
  infer: (_, a) => tensorType(a.value.dtype, a.value.shape),
  impl: (_, a) => a.value,
});

/** Keras' learning phase: 0 (test) or 1 (train); fed like a placeholder or read from the context. */
export const learningPhaseOp = defineOp<{ readonly name: string }>({
  name: 'learning_phase',
  kind: 'leaf',
  arity: 0,
  infer: () => tensorType('uint8', []),
  impl: (_, __, ctx) => new NDArray([ctx.learningPhase], [], 'uint8'),
});

export const castOp = defineOp<{ readonly dtype: DType }>({
  name: 'cast',
  kind: 'elementwise',
  arity: 1,
  infer: ([x], a) => {
    if (!isDType(a.dtype)) throw new InferError(`unknown dtype ${JSON.stringify(a.dtype)}`, 'value');
    return tensorType(a.dtype, x!.shape);
  },
  impl: ([x], a) => x!.astype(a.dtype),
});

/** An op whose value is its input's (identity, and stop_gradient, which differs only to autodiff). */
export function forwardingOp(name: string) {
  return defineOp<Record<string, never>>({
    name,
    kind: 'elementwise',
    arity: 1,
    infer: ([x]) => x!,
    impl: ([x]) => x!,
  });
}

export const identityOp = forwardingOp('identity');

/** Target dims with at most one -1; the -1 is resolved from the input's size. */
export interface ReshapeAttrs {
  readonly shape: readonly number[];
}

export function resolveReshape(from: StaticShape, to: readonly number[]): Dim[] {
  const holes = to.filter((d) => d === -1).length;
  if (holes > 1) throw new InferError(`target shape ${formatShape(to)} has more than one -1`, 'value');
  if (to.some((d) => !Number.isInteger(d) || d < -1))
    throw new InferError(
      `target shape ${formatShape(to)} has a dimension that is not a non-negative integer or -1`,
      'value',
    );
  const n = staticSize(from);
  const known = to.filter((d) => d !== -1).reduce((p, d) => p * d, 1);
  if (holes === 0) {
    if (n !== null && n !== known)
      throw new InferError(
        `cannot reshape ${formatShape(from)} (${n} elements) to ${formatShape(to)} (${known} elements)`,
      );
    return [...to];
  }
  if (n === null) return to.map((d) => (d === -1 ? null : d));
  if (known === 0 || n % known !== 0)
    throw new InferError(`cannot reshape ${formatShape(from)} (${n} elements) to ${formatShape(to)}`);
  return to.map((d) => (d === -1 ? n / known : d));
}

export const reshapeOp = defineOp<ReshapeAttrs>({
  name: 'reshape',
  kind: 'shape',
  arity: 1,
  infer: ([x], a) => tensorType(x!.dtype, resolveReshape(x!.shape, a.shape)),
  impl: ([x], a) => x!.reshape(resolveReshape(x!.shape, a.shape) as number[]),
});

export interface PermuteAttrs {
  readonly perm: readonly number[];
}

export const transposeOp = defineOp<PermuteAttrs>({
  name: 'transpose',
  kind: 'shape',
  arity: 1,
  infer: ([x], a) => {
    const r = x!.shape.length;
    const sorted = [...a.perm].sort((p, q) => p - q);
    if (a.perm.length !== r || sorted.some((p, i) => p !== i)) {
      throw new InferError(
        `pattern ${formatShape(a.perm)} is not a permutation of the ${r} axes of a tensor of shape ${formatShape(x!.shape)}`,
        'value',
      );
    }
    return tensorType(
      x!.dtype,
      a.perm.map((p) => x!.shape[p]!),
    );
  },
  impl: ([x], a) => {
    const shape = a.perm.map((p) => x!.shape[p]!);
    const st = stridesOf(x!.shape);
    const pst = a.perm.map((p) => st[p]!);
    const out = new Float64Array(sizeOf(shape));
    forEachIndex(shape, (idx, i) => {
      out[i] = x!.data[offsetOf(idx, pst)]!;
    });
    return new NDArray(out, shape, x!.dtype);
  },
});

/** Axis of `y` that `dot` contracts: the second-to-last, or the only one (Theano's tensordot rule). */
export function dotAxisOfY(yRank: number): number {
  return yRank >= 2 ? yRank - 2 : 0;
}

/** x's last axis against y's second-to-last; result dims: x's without the last, then y's without that axis. */
export const dotOp = defineOp<Record<string, never>>({
  name: 'dot',
  kind: 'other',
  arity: 2,
  infer: ([x, y]) => {
    if (x!.shape.length === 0 || y!.shape.length === 0) {
      throw new InferError(
        `dot needs tensors of rank >= 1; got shapes ${formatShape(x!.shape)} and ${formatShape(y!.shape)}`,
      );
    }
    const ya = dotAxisOfY(y!.shape.length);
    const k1 = x!.shape[x!.shape.length - 1]!;
    const k2 = y!.shape[ya]!;
    if (k1 !== null && k2 !== null && k1 !== k2) {
      throw new InferError(
        `shapes ${formatShape(x!.shape)} (x) and ${formatShape(y!.shape)} (y) are not aligned: axis ${x!.shape.length - 1} of x has ${k1} but axis ${ya} of y has ${k2}`,
      );
    }
    const dtype = promote(x!.dtype, y!.dtype);
    return tensorType(dtype, [...x!.shape.slice(0, -1), ...y!.shape.filter((_, i) => i !== ya)]);
  },
  impl: ([x, y]) => {
    const ya = dotAxisOfY(y!.shape.length);
    const k = x!.shape[x!.shape.length - 1]!;
    if (y!.shape[ya] !== k)
      throw new InferError(`shapes ${formatShape(x!.shape)} and ${formatShape(y!.shape)} are not aligned`);
    const m = sizeOf(x!.shape.slice(0, -1)); // not x.size / k, which is 0 when k is 0 (the sums are then 0)
    const yOuter = y!.shape.slice(0, ya);
    const yInner = y!.shape.slice(ya + 1);
    const po = sizeOf(yOuter);
    const pi = sizeOf(yInner);
    const out = new Float64Array(m * po * pi);
    for (let i = 0; i < m; i++) {
      for (let o = 0; o < po; o++) {
        for (let j = 0; j < pi; j++) {
          let s = 0;
          for (let t = 0; t < k; t++) s += x!.data[i * k + t]! * y!.data[(o * k + t) * pi + j]!;
          out[(i * po + o) * pi + j] = s;
        }
      }
    }
    const shape = [...x!.shape.slice(0, -1), ...yOuter, ...yInner];
    const dtype = promote(x!.dtype, y!.dtype);
    return new NDArray(out, shape, dtype);
  },
});

/** The runtime shape of a tensor as a 1-D int32 tensor (Keras' `K.shape`). */
export const shapeOfOp = defineOp<Record<string, never>>({
  name: 'shape_of',
  kind: 'shape',
  arity: 1,
  infer: ([x]) => tensorType('int32', [x!.shape.length]),
  impl: ([x]) => new NDArray(x!.shape, [x!.shape.length], 'int32'),
});

/** A tensor of x's runtime shape filled with one value (zeros_like, ones_like). */
export const fillLikeOp = defineOp<{ readonly value: number; readonly dtype: DType }>({
  name: 'fill_like',
  kind: 'elementwise',
  arity: 1,
  infer: ([x], a) => tensorType(a.dtype, x!.shape),
  impl: ([x], a) => new NDArray(new Float64Array(x!.size).fill(a.value), x!.shape, a.dtype),
});

/** `x[i]`: one index along the first axis, dropping it; negative i counts from the end. */
export const indexOp = defineOp<{ readonly index: number }>({
  name: 'index',
  kind: 'shape',
  arity: 1,
  infer: ([x], a) => {
    if (x!.shape.length === 0) throw new InferError('cannot index a scalar', 'value');
    const d = x!.shape[0]!;
    if (d !== null && (a.index >= d || a.index < -d)) {
      throw new InferError(
        `index ${a.index} is out of range for axis 0 of size ${d} (shape ${formatShape(x!.shape)})`,
        'value',
      );
    }
    return tensorType(x!.dtype, x!.shape.slice(1));
  },
  impl: ([x], a) => {
    const d = x!.shape[0]!;
    const i = a.index < 0 ? a.index + d : a.index;
    if (i < 0 || i >= d) throw new InferError(`index ${a.index} is out of range for axis 0 of size ${d}`, 'value');
    const inner = x!.size / d;
    return new NDArray(x!.data.slice(i * inner, (i + 1) * inner), x!.shape.slice(1), x!.dtype);
  },
});

/** The leaves and structural ops, by name. */
export const coreOps = {
  placeholder: placeholderOp,
  variable: variableOp,
  constant: constantOp,
  learning_phase: learningPhaseOp,
  cast: castOp,
  identity: identityOp,
  reshape: reshapeOp,
  transpose: transposeOp,
  dot: dotOp,
  shape_of: shapeOfOp,
  fill_like: fillLikeOp,
  index: indexOp,
} as const;
