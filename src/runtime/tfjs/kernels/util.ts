// Shared pieces of the tfjs kernels: dtype conversions and the runtime checks that the
// reference implementations make (so both backends fail with the same errors).
import type { DType } from '../../../ir/dtype.js';
import { broadcastConcrete } from '../../../ir/ops/util.js';
import { collapsedBroadcast } from './rank.js';
import type { TF } from '../load.js';
import { tfDType, type Tensor, type TfDType } from '../types.js';

/** The tfjs dtype arithmetic on `d` runs in: bool arithmetic runs in int32 (then back to 0/1). */
export function arithDType(d: DType): TfDType {
  return d === 'bool' ? 'int32' : tfDType(d);
}

export function castTo(tf: TF, t: Tensor, dt: TfDType): Tensor {
  return t.dtype === dt ? t : tf.cast(t, dt);
}

/** Two's-complement wrap of an int32 tensor into a narrower integer type (NumPy's cast). */
function wrap(tf: TF, t: Tensor, bits: number, signed: boolean): Tensor {
  const span = 2 ** bits;
  const half = span / 2;
  // floor modulo keeps the result in [0, span) for negative inputs too
  const i = (v: number) => tf.scalar(v, 'int32');
  return signed ? tf.sub(tf.mod(tf.add(t, i(half)), i(span)), i(half)) : tf.mod(t, i(span));
}

/**
 * A kernel's result converted to the representation of `dtype`: its tfjs dtype, and for
 * int8/int16/uint8 the wrap-around a store into that type performs. float16 stays float32
 * (rounded to half precision only when the value leaves the executor).
 */
export function fit(tf: TF, t: Tensor, dtype: DType): Tensor {
  const c = castTo(tf, t, tfDType(dtype));
  switch (dtype) {
    case 'int8':
      return wrap(tf, c, 8, true);
    case 'int16':
      return wrap(tf, c, 16, true);
    case 'uint8':
      return wrap(tf, c, 8, false);
    default:
      return c;
  }
}

/** Float values to an integer dtype: truncation toward zero, NaN and infinities to 0 (coerce's rule). */
export function floatToInt(tf: TF, t: Tensor): Tensor {
  return tf.cast(tf.where(tf.isFinite(t), t, tf.zerosLike(t)), 'int32');
}

/** Any values to bool: nonzero and not NaN. */
export function toBool(tf: TF, t: Tensor): Tensor {
  if (t.dtype === 'bool') return t;
  const nz = tf.notEqual(t, tf.scalar(0, t.dtype));
  return t.dtype === 'float32' ? tf.logicalAnd(nz, tf.logicalNot(tf.isNaN(t))) : nz;
}

/**
 * A scalar of t's dtype. tfjs types a bare JS number as float32 and upcasts the other operand,
 * so integer arithmetic with constants goes through this.
 */
export function scalarLike(tf: TF, v: number, t: Tensor): Tensor {
  return tf.scalar(v, t.dtype as TfDType);
}

/**
 * t broadcast to `shape` (NumPy rules) as a multiplication by ones: tf.broadcastTo runs the Tile
 * kernel, which on wasm is about 20 times slower than a broadcasting multiply (and x * 1 keeps
 * NaN, infinities and -0).
 */
export function expandTo(tf: TF, t: Tensor, shape: readonly number[]): Tensor {
  if (t.shape.length === shape.length && t.shape.every((d, i) => d === shape[i])) return t;
  if (t.dtype === 'bool') return tf.cast(expandTo(tf, tf.cast(t, 'int32'), shape), 'bool');
  return collapsedBroadcast(tf, [t, tf.ones([...shape], t.dtype)], ([a, b]) => tf.mul(a!, b!), 'broadcast');
}

/** The runtime broadcast check of the reference (`mapBroadcast`), with its message. */
export function checkBroadcast(ins: readonly Tensor[]): number[] {
  return broadcastConcrete(ins.map((t) => t.shape));
}
