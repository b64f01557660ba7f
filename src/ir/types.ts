// Static types: a dtype plus a shape whose dims may be unknown (null), as Theano's TensorType.
import type { DType } from './dtype.js';
import { formatShape } from './ndarray.js';
import { InferError } from './errors.js';

export type Dim = number | null;
export type StaticShape = readonly Dim[];

export interface TensorType {
  readonly dtype: DType;
  readonly shape: StaticShape;
  /**
   * Present only on tuple-valued nodes (a Scan): the types of its items. Such a node is never
   * seen by users; `tuple_get{index}` extracts one item as an ordinary tensor. The tuple's own
   * dtype and shape are those of items[0] (float32 () when empty) and mean nothing.
   */
  readonly items?: readonly TensorType[];
  /**
   * A tensor of unknown rank (Keras' placeholder with neither shape nor ndim): `shape` is empty
   * and means nothing. Only elementwise ops carry it (src/ir/build.ts); K.function fixes the rank
   * from the values fed (src/api/unknown-rank.ts).
   */
  readonly unknownRank?: true;
}

export function tensorType(dtype: DType, shape: StaticShape): TensorType {
  return { dtype, shape: Object.freeze([...shape]) };
}

/** The type of a tuple-valued node. */
export function tupleType(items: readonly TensorType[]): TensorType {
  const first = items[0];
  return {
    dtype: first?.dtype ?? 'float32',
    shape: first?.shape ?? Object.freeze([]),
    items: Object.freeze(items.map((t) => tensorType(t.dtype, t.shape))),
  };
}

export function isTupleType(t: TensorType): t is TensorType & { readonly items: readonly TensorType[] } {
  return t.items !== undefined;
}

export function typeToString(t: TensorType): string {
  if (t.items !== undefined) return '(' + t.items.map((i) => typeToString(i)).join(', ') + ')';
  return `${t.dtype} ${formatShape(t.shape)}`;
}

/** Same dtype and tuple structure, and every dim equal (null only matches null). */
export function sameType(a: TensorType, b: TensorType): boolean {
  if ((a.items === undefined) !== (b.items === undefined)) return false;
  if (a.items !== undefined) {
    return a.items.length === b.items!.length && a.items.every((t, i) => sameType(t, b.items![i]!));
  }
  return a.dtype === b.dtype && a.shape.length === b.shape.length && a.shape.every((d, i) => d === b.shape[i]);
}

/** Same rank, and dims equal where both are known. */
export function compatibleShapes(a: StaticShape, b: StaticShape): boolean {
  return a.length === b.length && a.every((d, i) => d === null || b[i] === null || d === b[i]);
}

/** A value of type `b` may flow where `a` is expected: same dtype and rank, dims equal where both are known. */
export function compatibleTypes(a: TensorType, b: TensorType): boolean {
  return a.items === undefined && b.items === undefined && a.dtype === b.dtype && compatibleShapes(a.shape, b.shape);
}

/** Known size, or null when any dim is unknown. */
export function staticSize(shape: StaticShape): number | null {
  let n = 1;
  for (const d of shape) {
    if (d === null) return null;
    n *= d;
  }
  return n;
}

export function isFullyKnown(shape: StaticShape): shape is readonly number[] {
  return shape.every((d) => d !== null);
}

/**
 * NumPy broadcasting of static shapes: trailing dims aligned; 1 stretches; an unknown dim
 * meeting a known dim k > 1 is taken to be k (a runtime check enforces it); two unknowns stay unknown.
 */
export function broadcastShapes(shapes: readonly StaticShape[], names: readonly string[] = []): Dim[] {
  const rank = Math.max(0, ...shapes.map((s) => s.length));
  const out: Dim[] = new Array<Dim>(rank).fill(1);
  for (let k = 1; k <= rank; k++) {
    let acc: Dim = 1;
    let from = -1;
    for (let j = 0; j < shapes.length; j++) {
      const s = shapes[j]!;
      const d: Dim = k <= s.length ? s[s.length - k]! : 1;
      if (d === 1) continue;
      if (acc === 1) {
        acc = d;
        from = j;
        continue;
      }
      if (d === null) continue;
      if (acc === null) {
        acc = d;
        from = j;
        continue;
      }
      if (acc !== d) {
        const a = names[from] ?? `operand ${from}`;
        const b = names[j] ?? `operand ${j}`;
        throw new InferError(
          `shapes ${formatShape(shapes[from]!)} (${a}) and ${formatShape(s)} (${b}) cannot be broadcast: axis -${k} has ${acc} and ${d}`,
        );
      }
    }
    out[rank - k] = acc;
  }
  return out;
}

/** Normalises a possibly negative axis against `ndim`, or throws naming the argument. */
export function normAxis(axis: number, ndim: number, what = 'axis'): number {
  if (!Number.isInteger(axis)) throw new InferError(`${what} ${axis} is not an integer`, 'value');
  const a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= ndim) {
    throw new InferError(
      `${what} ${axis} is out of range for a tensor of rank ${ndim} (allowed: ${-ndim}..${ndim - 1})`,
      'value',
    );
  }
  return a;
}
