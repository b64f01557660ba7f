// Shape functions: reshapes, permutations, repetition and broadcasting patterns, each a thin
// composition of the structural ops (src/ir/ops/shape.ts) with Keras' argument rules.
import { apply } from '../ir/build.js';
import { ShapeError, ValueError } from '../ir/errors.js';
import { describe, formatShape } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import { NDArray } from '../ir/ndarray.js';
import { checkInt, constantNode, isTensor, options, toTensor, type TensorLike } from './args.js';
import { sizeArg, sizeList, type Size, type SizeList, type Sizes } from './sizes.js';

/** One axis argument, normalised against `ndim` (negative counts from the end). */
export function axisArg(fn: string, axis: unknown, ndim: number, what = 'axis'): number {
  const v = checkInt(fn, axis, what);
  const a = v < 0 ? v + ndim : v;
  if (a < 0 || a >= ndim)
    throw new ValueError(
      `${fn}: ${what} ${v} is out of range for a tensor of rank ${ndim} (allowed: ${-ndim}..${ndim - 1})`,
    );
  return a;
}

/** A list of integers (a Python tuple), each checked by `checkInt` with `min`. */
export function intList(fn: string, v: unknown, what: string, min = -Infinity): number[] {
  if (!Array.isArray(v)) throw new ValueError(`${fn}: ${what} must be an array of integers, got ${describe(v)}`);
  return v.map((d, i) => checkInt(fn, d, `${what}[${i}]`, min));
}

export function expandDims(fn: string, x: Node, axis: number): Node {
  return apply('expand_dims', [x], { axis }, fn);
}

/** Reverses the order of all axes. */
export function transpose(x: TensorLike): Node {
  const t = toTensor('K.transpose', x);
  if (t.ndim < 2) return t;
  return apply('transpose', [t], { perm: Array.from({ length: t.ndim }, (_, k) => t.ndim - 1 - k) }, 'K.transpose');
}

/** Axis i of the result is axis pattern[i] of x. */
export function permute_dimensions(x: TensorLike, pattern: readonly number[]): Node {
  const t = toTensor('K.permute_dimensions', x);
  const perm = intList('K.permute_dimensions', pattern, 'pattern');
  if (perm.length === t.ndim && perm.every((p, i) => p === i)) return t;
  return apply('transpose', [t], { perm }, 'K.permute_dimensions');
}

/**
 * Reshape to `shape`; one entry may be -1 (inferred from the size). Entries may be scalar int tensors
 * and `shape` a 1-D int tensor (`K.reshape(y, [-1, K.shape(x)[1], units])`, Keras' TimeDistributed).
 */
export function reshape(x: TensorLike, shape: SizeList): Node {
  const t = toTensor('K.reshape', x);
  const s = sizeList('K.reshape', 'shape', shape, -1);
  if ('static' in s) {
    if (s.static.filter((d) => d === -1).length > 1)
      throw new ValueError(`K.reshape: shape ${formatShape(s.static)} has more than one -1`);
    return apply('reshape', [t], { shape: s.static }, 'K.reshape');
  }
  if (s.known.filter((d) => d === -1).length > 1)
    throw new ValueError(`K.reshape: shape ${formatShape(s.known)} has more than one -1`);
  return apply('reshape_dims', [t, s.vector], { known: s.known }, 'K.reshape');
}

/** Keras' repeat: a 2-D (samples, dim) tensor becomes (samples, n, dim); n may be a scalar int tensor. */
export function repeat(x: TensorLike, n: Size): Node {
  const t = toTensor('K.repeat', x);
  if (t.ndim !== 2) throw new ShapeError(`K.repeat: x must be 2-D (samples, dim), got shape ${formatShape(t.shape)}`);
  const k = sizeArg('K.repeat', 'n', n, 0);
  return tileBy(
    'K.repeat',
    expandDims('K.repeat', t, 1),
    sizeList('K.repeat', 'n', [1, 'static' in k ? k.static : k.tensor, 1], 0),
  );
}

/** tile with checked reps of x's rank: static, or the sized op. */
function tileBy(fn: string, t: Node, reps: Sizes): Node {
  if ('static' in reps) return reps.static.every((r) => r === 1) ? t : apply('tile', [t], { reps: reps.static }, fn);
  return apply('tile_dims', [t, reps.vector], { known: reps.known }, fn);
}

/** NumPy's repeat: each element `rep` times along `axis`. */
export function repeat_elements(x: TensorLike, rep: number, axis: number): Node {
  const t = toTensor('K.repeat_elements', x);
  const r = checkInt('K.repeat_elements', rep, 'rep', 0);
  const a = axisArg('K.repeat_elements', axis, t.ndim);
  return r === 1 ? t : apply('repeat_elements', [t], { axis: a, rep: r }, 'K.repeat_elements');
}

/**
 * NumPy's tile: `n` an int or a list. A list shorter than x's rank repeats the trailing axes;
 * a longer one gives x leading axes of size 1 first.
 */
export function tile(x: TensorLike, n: Size | SizeList): Node {
  let t = toTensor('K.tile', x);
  const list = typeof n === 'number' ? [checkInt('K.tile', n, 'n', 0)] : isTensor(n) && n.ndim === 0 ? [n] : n;
  const s = sizeList('K.tile', 'n', list, 0);
  const len = 'static' in s ? s.static.length : s.known.length;
  while (t.ndim < len) t = expandDims('K.tile', t, 0);
  const pad = t.ndim - len;
  if ('static' in s) return tileBy('K.tile', t, { static: [...new Array<number>(pad).fill(1), ...s.static] });
  // a shorter list repeats the trailing axes: ones in front of the vector
  const vector =
    pad === 0
      ? s.vector
      : apply(
          'concat',
          [constantNode(new NDArray(new Array<number>(pad).fill(1), [pad], 'int32')), s.vector],
          { axis: 0 },
          'K.tile',
        );
  return tileBy('K.tile', t, { vector, known: [...new Array<number>(pad).fill(1), ...s.known] });
}

/** All elements as one axis, row-major. */
export function flatten(x: TensorLike): Node {
  const t = toTensor('K.flatten', x);
  return t.ndim === 1 ? t : apply('reshape', [t], { shape: [-1] }, 'K.flatten');
}

/** (batch, ...) -> (batch, product of the rest); unknown dims anywhere are fine. */
export function batch_flatten(x: TensorLike): Node {
  const t = toTensor('K.batch_flatten', x);
  if (t.ndim === 0) throw new ShapeError('K.batch_flatten: x must have a batch axis (rank >= 1), got a scalar');
  if (t.ndim === 1) return expandDims('K.batch_flatten', t, 1);
  if (t.ndim === 2) return t;
  return apply('merge_axes', [t], { start: 1, stop: t.ndim }, 'K.batch_flatten');
}

/** A new axis of size 1 at `axis` (-1: after the last; Keras 1 calls it `dim`). */
export function expand_dims(x: TensorLike, axis?: number | { axis?: number; dim?: number }): Node {
  const t = toTensor('K.expand_dims', x);
  const o = options<{ axis: number; dim: number }>('K.expand_dims', [axis], ['axis', 'dim']);
  if (o.axis !== undefined && o.dim !== undefined)
    throw new ValueError('K.expand_dims: give axis or its Keras 1 name dim, not both');
  const a = axisArg('K.expand_dims', o.axis ?? o.dim ?? -1, t.ndim + 1);
  return expandDims('K.expand_dims', t, a);
}

/** Removes `axis`, which must have size 1. */
export function squeeze(x: TensorLike, axis: number): Node {
  const t = toTensor('K.squeeze', x);
  return apply('squeeze', [t], { axis: axisArg('K.squeeze', axis, t.ndim) }, 'K.squeeze');
}

/**
 * Theano's broadcast pattern: axes marked true have size 1 (and are then known to be 1, so
 * they broadcast); a known size other than 1 there is an error.
 */
export function pattern_broadcast(
  x: TensorLike,
  broadcastable: readonly boolean[] | { broadcastable?: readonly boolean[]; broatcastable?: readonly boolean[] },
): Node {
  const t = toTensor('K.pattern_broadcast', x);
  // the seed page spells the parameter `broatcastable`; both names are accepted
  const o = options<{ broadcastable: readonly boolean[]; broatcastable: readonly boolean[] }>(
    'K.pattern_broadcast',
    [broadcastable],
    ['broadcastable', 'broatcastable'],
  );
  const pat: unknown = o.broadcastable ?? o.broatcastable;
  if (!Array.isArray(pat) || pat.some((b) => typeof b !== 'boolean')) {
    throw new ValueError(`K.pattern_broadcast: broadcastable must be an array of booleans, got ${describe(pat)}`);
  }
  if (pat.length !== t.ndim)
    throw new ValueError(
      `K.pattern_broadcast: broadcastable has ${pat.length} entries for a tensor of shape ${formatShape(t.shape)}`,
    );
  pat.forEach((b, i) => {
    const d = t.shape[i];
    if (b && d !== null && d !== 1)
      throw new ShapeError(
        `K.pattern_broadcast: axis ${i} of shape ${formatShape(t.shape)} is marked broadcastable but has size ${d}, not 1`,
      );
  });
  if (pat.every((b, i) => !b || t.shape[i] === 1)) return t;
  return apply('specify_shape', [t], { shape: t.shape.map((d, i) => (pat[i] ? 1 : d)) }, 'K.pattern_broadcast');
}
