// Random draws. Element i of the result is a pure function of (key, i) through Philox
// (src/ir/random.ts), so any device reproduces it from the index. The shape is an attr; dims
// that are only known at run time (null in `shape`) come from scalar integer inputs, in order,
// so `random_normal(K.shape(x))` works on tensors with unknown dims.
import { isFloat, isInt, type DType } from '../dtype.js';
import { NDArray, formatShape, sizeOf } from '../ndarray.js';
import { defineOp, type EvalContext, type OpDef } from '../op.js';
import { tensorType, type Dim, type TensorType } from '../types.js';
import { InferError } from '../errors.js';
import type { RandomKey } from '../random.js';
import { elementBits, seededKey, truncatedNormal, unit32, unitFloat, unseededKey, normalFromBits } from '../random.js';

export interface RandomAttrs {
  readonly shape: readonly Dim[];
  readonly dtype: DType;
  /** The user's seed, or null: then `uid` identifies the op and each evaluation draws afresh. */
  readonly seed: number | null;
  readonly uid: number | null;
}
export interface UniformAttrs extends RandomAttrs {
  readonly low: number;
  readonly high: number;
}
export interface NormalAttrs extends RandomAttrs {
  readonly mean: number;
  readonly stddev: number;
}
export interface BinomialAttrs extends RandomAttrs {
  readonly p: number;
}

function inferRandom(ins: readonly TensorType[], a: RandomAttrs, floatOnly: boolean): TensorType {
  if (floatOnly && !isFloat(a.dtype))
    throw new InferError(`dtype ${a.dtype} is not a float dtype (allowed: float16, float32, float64)`, 'value');
  const holes = a.shape.filter((d) => d === null).length;
  if (ins.length !== holes)
    throw new InferError(
      `shape ${formatShape(a.shape)} has ${holes} run-time dims but ${ins.length} dim inputs were given`,
      'value',
    );
  ins.forEach((t, i) => {
    if (t.shape.length !== 0 || !isInt(t.dtype))
      throw new InferError(
        `run-time dim ${i} must be an integer scalar, got ${t.dtype} ${formatShape(t.shape)}`,
        'type',
      );
  });
  if (a.seed === null && a.uid === null) throw new InferError('an unseeded random op needs a uid', 'value');
  return tensorType(a.dtype, a.shape);
}

/** The concrete shape: attr dims, with the run-time dims read from the inputs. */
function concreteShape(ins: readonly NDArray[], a: RandomAttrs): number[] {
  let k = 0;
  return a.shape.map((d) => {
    if (d !== null) return d;
    const v = ins[k++]!.data[0]!;
    if (!Number.isInteger(v) || v < 0)
      throw new InferError(
        `shape ${formatShape(a.shape)}: run-time dim ${k - 1} is ${v}, not a non-negative integer`,
        'value',
      );
    return v;
  });
}

function keyOf(a: RandomAttrs, ctx: EvalContext): RandomKey {
  return a.seed !== null ? seededKey(a.seed) : unseededKey(a.uid!, ctx.epoch);
}

/** Mantissa bits a uniform gets so that it is exact in `dtype` and stays below 1. */
function unitBits(dtype: DType): number {
  return dtype === 'float64' ? 53 : dtype === 'float16' ? 11 : 24;
}

function randomOp<A extends RandomAttrs>(
  name: string,
  floatOnly: boolean,
  draw: (key: RandomKey, i: number, a: A, w: Uint32Array) => number,
): OpDef<A> {
  return defineOp<A>({
    name,
    // not a leaf: run-time dims may come in as inputs
    kind: 'other',
    arity: 'variadic',
    impure: true,
    infer: (ins, a) => inferRandom(ins, a, floatOnly),
    impl: (ins, a, ctx) => {
      const shape = concreteShape(ins, a);
      const key = keyOf(a, ctx);
      const w = new Uint32Array(4);
      const out = new Float64Array(sizeOf(shape));
      for (let i = 0; i < out.length; i++) out[i] = draw(key, i, a, w);
      return new NDArray(out, shape, a.dtype);
    },
  });
}

export const randomOps = {
  /** low + (high - low) * u, u uniform in [0, 1) with the dtype's mantissa bits (words 0-1 of attempt 0). */
  random_uniform: randomOp<UniformAttrs>(
    'random_uniform',
    true,
    (key, i, a, w) => a.low + (a.high - a.low) * unitFloat(elementBits(key, i, 0, w), unitBits(a.dtype)),
  ),
  /** mean + stddev * z, z standard normal by Box–Muller from the four words of attempt 0. */
  random_normal: randomOp<NormalAttrs>(
    'random_normal',
    true,
    (key, i, a, w) => a.mean + a.stddev * normalFromBits(elementBits(key, i, 0, w)),
  ),
  /** mean + stddev * z, z standard normal redrawn (attempt 1, 2, ...) until |z| <= 2. */
  truncated_normal: randomOp<NormalAttrs>(
    'truncated_normal',
    true,
    (key, i, a, w) => a.mean + a.stddev * truncatedNormal(key, i, w),
  ),
  /** 1 where word 0 / 2^32 < p, else 0 (Bernoulli(p)); any dtype. */
  random_binomial: randomOp<BinomialAttrs>('random_binomial', false, (key, i, a, w) =>
    unit32(elementBits(key, i, 0, w)) < a.p ? 1 : 0,
  ),
} as const;
