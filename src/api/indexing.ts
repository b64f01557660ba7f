// Slicing, reversing, joining, gathering, one-hot and ranges: compositions of the structural ops.
import { apply } from '../ir/build.js';
import { isInt, type DType } from '../ir/dtype.js';
import { ShapeError, ValueError } from '../ir/errors.js';
import { NDArray, describe, formatShape } from '../ir/ndarray.js';
import { Node } from '../ir/node.js';
import { sliceRange, unifyDim, type SliceAxis } from '../ir/ops/shape.js';
import type { Dim } from '../ir/types.js';
import { checkAxes, checkDType, checkInt, constantNode, options, toTensor, type TensorLike } from './args.js';
import { floatx } from './config.js';
import { axisArg, expandDims } from './shape.js';
import { sizeList, type Size, type SizeList } from './sizes.js';

const FULL: SliceAxis = { start: null, stop: null, step: 1 };

/**
 * A canonical form of one axis' slice where the axis size is known (so equal slices hash
 * equal): the first index, the smallest stop reaching the last taken element, the step.
 */
function canonical(s: SliceAxis, d: Dim): SliceAxis {
  if (d === null) return s;
  const { first, count } = sliceRange(s, d);
  if (count === 0) return { start: 0, stop: 0, step: 1 };
  if (count === 1) return { start: first, stop: first + 1, step: 1 };
  const last = first + (count - 1) * s.step;
  const stop = s.step > 0 ? last + 1 : last - 1;
  return { start: first, stop: stop < 0 ? null : stop, step: s.step };
}

function isFull(s: SliceAxis, d: Dim): boolean {
  return s.step === 1 && (s.start === null || s.start === 0) && (s.stop === null || (d !== null && s.stop === d));
}

/** Builds a slice of `x`, one `SliceAxis` per axis; a slice that keeps everything is x itself. */
export function sliceAxes(fn: string, x: Node, axes: readonly SliceAxis[]): Node {
  const canon = axes.map((s, i) => canonical(s, x.shape[i]!));
  if (canon.every((s, i) => isFull(s, x.shape[i]!))) return x;
  return apply('slice', [x], { axes: canon.map((s) => ({ ...s })) }, fn);
}

function bound(fn: string, v: unknown, what: string): number | null {
  return v === null || v === undefined ? null : checkInt(fn, v, what);
}

/** `x[start:stop:step]` along one axis, with Python's meaning (negative counts from the end, bounds clamp). */
export function slice_along(
  x: TensorLike,
  axis: number,
  start?: number | null | { start?: number | null; stop?: number | null; step?: number },
  stop?: number | null,
  step?: number,
): Node {
  const t = toTensor('K.slice_along', x);
  const a = axisArg('K.slice_along', axis, t.ndim);
  const o = options<{ start: number | null; stop: number | null; step: number }>(
    'K.slice_along',
    [start, stop, step],
    ['start', 'stop', 'step'],
  );
  const st = checkInt('K.slice_along', o.step ?? 1, 'step');
  if (st === 0) throw new ValueError('K.slice_along: step must not be zero');
  const s: SliceAxis = {
    start: bound('K.slice_along', o.start, 'start'),
    stop: bound('K.slice_along', o.stop, 'stop'),
    step: st,
  };
  return sliceAxes(
    'K.slice_along',
    t,
    t.shape.map((_, i) => (i === a ? s : FULL)),
  );
}

/**
 * Keras 2.3's slice (TensorFlow's): `size[i]` elements from `start[i]` on each axis, -1 meaning
 * to the end. Where an axis size is unknown the result is still known to have `size[i]`
 * elements there, checked when the value is computed.
 */
export function slice(x: TensorLike, start: SizeList, size: SizeList): Node {
  const t = toTensor('K.slice', x);
  const bs = sizeList('K.slice', 'start', start, 0);
  const ns = sizeList('K.slice', 'size', size, -1);
  const len = (v: typeof bs) => ('static' in v ? v.static.length : v.known.length);
  if (len(bs) !== t.ndim || len(ns) !== t.ndim) {
    throw new ValueError(
      `K.slice: start (${len(bs)} entries) and size (${len(ns)} entries) must each have one entry per axis of x of shape ${formatShape(t.shape)}`,
    );
  }
  if (!('static' in bs) || !('static' in ns)) {
    // Start or size from tensors: the sized op, checked against x when the values are known.
    const vec = (v: typeof bs) =>
      'static' in v ? constantNode(new NDArray(v.static, [v.static.length], 'int32')) : v.vector;
    const known = (v: typeof bs) => ('static' in v ? v.static : v.known);
    return apply('slice_dims', [t, vec(bs), vec(ns)], { start: known(bs), size: known(ns) }, 'K.slice');
  }
  const b = bs.static;
  const n = ns.static;
  t.shape.forEach((d, i) => {
    if (d === null) return;
    const end = n[i] === -1 ? d : b[i]! + n[i]!;
    if (b[i]! > d || end > d)
      throw new ShapeError(
        `K.slice: start ${b[i]} with size ${n[i]} runs past axis ${i} of shape ${formatShape(t.shape)}`,
      );
  });
  const out = sliceAxes(
    'K.slice',
    t,
    b.map((s, i) => ({ start: s, stop: n[i] === -1 ? null : s + n[i]!, step: 1 })),
  );
  const unknown = t.shape.some((d, i) => d === null && n[i] !== -1);
  return unknown
    ? apply('specify_shape', [out], { shape: out.shape.map((d, i) => (n[i] === -1 ? d : n[i]!)) }, 'K.slice')
    : out;
}

/** Reverses the order along each of `axes` (an int or a list). */
export function reverse(x: TensorLike, axes: number | readonly number[]): Node {
  const t = toTensor('K.reverse', x);
  if (axes === null || axes === undefined) throw new ValueError('K.reverse: axes must be an int or a list of ints');
  const set = checkAxes('K.reverse', axes, t.ndim);
  return sliceAxes(
    'K.reverse',
    t,
    t.shape.map((_, i) => (set.includes(i) ? { start: null, stop: null, step: -1 } : FULL)),
  );
}

function tensorList(fn: string, xs: unknown, what: string): Node[] {
  if (!Array.isArray(xs) || xs.length === 0)
    throw new ValueError(`${fn}: ${what} must be a non-empty array of tensors, got ${describe(xs)}`);
  const like = xs.find((v): v is Node => v instanceof Node)?.dtype;
  return xs.map((v, i) => toTensor(fn, v, `${what}[${i}]`, like));
}

/** Joins tensors along an existing axis (default the last). */
export function concatenate(tensors: readonly TensorLike[], axis?: number | { axis?: number }): Node {
  const ts = tensorList('K.concatenate', tensors, 'tensors');
  const o = options<{ axis: number }>('K.concatenate', [axis], ['axis']);
  const r = ts[0]!.ndim;
  if (r === 0) throw new ShapeError('K.concatenate: cannot concatenate scalars (rank 0); use K.stack');
  const a = axisArg('K.concatenate', o.axis ?? -1, r);
  return ts.length === 1 ? ts[0]! : apply('concat', ts, { axis: a }, 'K.concatenate');
}

/** Joins same-shaped tensors along a new axis (default the first). */
export function stack(x: readonly TensorLike[], axis?: number | { axis?: number }): Node {
  const ts = tensorList('K.stack', x, 'x');
  const o = options<{ axis: number }>('K.stack', [axis], ['axis']);
  const first = ts[0]!;
  ts.forEach((t, j) => {
    const ok = t.ndim === first.ndim && t.shape.every((d, i) => unifyDim(d, first.shape[i]!) !== undefined);
    if (!ok)
      throw new ShapeError(
        `K.stack: all tensors must have the same shape: x[0] has ${formatShape(first.shape)} but x[${j}] has ${formatShape(t.shape)}`,
      );
  });
  const a = axisArg('K.stack', o.axis ?? 0, first.ndim + 1);
  const parts = ts.map((t) => expandDims('K.stack', t, a));
  return parts.length === 1 ? parts[0]! : apply('concat', parts, { axis: a }, 'K.stack');
}

/** An integer tensor from a tensor or plain values (which must be integers). */
function intTensor(fn: string, v: unknown, what: string): Node {
  if (v instanceof Node) {
    if (!isInt(v.dtype)) throw new TypeError(`${fn}: ${what} must be an integer tensor, got ${v.dtype}`);
    return v;
  }
  const nd = v instanceof NDArray ? v : NDArray.from(v, 'float64', `${fn}: ${what}`);
  if (!isInt(nd.dtype) && !Array.from(nd.data).every((e) => Number.isInteger(e))) {
    throw new ValueError(`${fn}: ${what} must be integers, got ${describe(v)} holding non-integer values`);
  }
  return constantNode(isInt(nd.dtype) ? nd : nd.astype('int32'));
}

/** Rows of `reference` (along axis 0) at `indices`, an integer tensor of any rank. */
export function gather(reference: TensorLike, indices: TensorLike): Node {
  const ref = toTensor('K.gather', reference, 'reference');
  return apply('gather', [ref, intTensor('K.gather', indices, 'indices')], {}, 'K.gather');
}

/**
 * (..., ) integer indices -> (..., num_classes) of floatx: 1 where the class equals the index.
 * An index outside 0..num_classes-1 gives a row of zeros (TensorFlow's one_hot).
 */
export function one_hot(
  indices: TensorLike,
  num_classes?: number | { num_classes?: number; nb_classes?: number },
): Node {
  const idx = intTensor('K.one_hot', indices, 'indices');
  const o = options<{ num_classes: number; nb_classes: number }>(
    'K.one_hot',
    [num_classes],
    ['num_classes', 'nb_classes'],
  );
  if (o.num_classes !== undefined && o.nb_classes !== undefined)
    throw new ValueError('K.one_hot: give num_classes or its Keras 1 name nb_classes, not both');
  const n = checkInt('K.one_hot', o.num_classes ?? o.nb_classes, 'num_classes', 1);
  const classes = constantNode(rangeArray(0, n, 1, idx.dtype));
  const hit = apply('equal', [expandDims('K.one_hot', idx, idx.ndim), classes], {}, 'K.one_hot');
  return apply('cast', [hit], { dtype: floatx() }, 'K.one_hot');
}

/** start, start + step, ... below stop (above it for a negative step), NumPy's length rule. */
function rangeArray(start: number, stop: number, step: number, dtype: DType): NDArray {
  const n = Math.max(0, Math.ceil((stop - start) / step));
  const data = new Float64Array(n);
  for (let i = 0; i < n; i++) data[i] = start + i * step;
  return new NDArray(data, [n], dtype);
}

/**
 * Theano's arange: with one argument it is the stop (start 0). Values are start + i * step in
 * double precision, then converted to `dtype` (default int32), as NumPy's arange with a dtype.
 */
export function arange(
  start: Size,
  stop?: Size | null | { stop?: Size | null; step?: Size; dtype?: DType },
  step?: Size,
  dtype?: DType,
): Node {
  const o = options<{ stop: Size | null; step: Size; dtype: DType }>(
    'K.arange',
    [stop, step, dtype],
    ['stop', 'step', 'dtype'],
  );
  const dt = checkDType('K.arange', o.dtype ?? 'int32');
  const given: unknown[] =
    o.stop === undefined || o.stop === null ? [0, start, o.step ?? 1] : [start, o.stop, o.step ?? 1];
  if (given.some((v) => v instanceof Node)) {
    // Bounds from tensors (K.arange(K.shape(x)[1])): the sized op, resolved per specialisation.
    const parts = given.map((v, i) => {
      const what = ['start', 'stop', 'step'][i]!;
      if (v instanceof Node) {
        if (v.ndim !== 0)
          throw new ValueError(
            `K.arange: ${what} must be a number or a scalar tensor, got shape ${formatShape(v.shape)}`,
          );
        return v;
      }
      if (typeof v !== 'number' || !Number.isFinite(v))
        throw new ValueError(`K.arange: ${what} must be a finite number or a scalar tensor, got ${describe(v)}`);
      return constantNode(new NDArray([v], [], Number.isInteger(v) ? 'int32' : 'float64'));
    });
    return apply('arange_dims', parts, { dtype: dt }, 'K.arange');
  }
  const num = (v: unknown, what: string): number => {
    if (typeof v !== 'number' || !Number.isFinite(v))
      throw new ValueError(`K.arange: ${what} must be a finite number, got ${describe(v)}`);
    return v;
  };
  const lo = num(given[0], 'start');
  const hi = num(given[1], o.stop === undefined || o.stop === null ? 'start' : 'stop');
  const st = num(given[2], 'step');
  if (st === 0) throw new ValueError('K.arange: step must not be zero');
  return constantNode(rangeArray(lo, hi, st, dt));
}
