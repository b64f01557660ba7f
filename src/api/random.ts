// Random tensors, random variables and dropout: with a seed the same numbers on every
// run and device; without one, a fresh draw on each evaluation.
import { apply } from '../ir/build.js';
import { isFloat, isInt, type DType } from '../ir/dtype.js';
import { ShapeError, ValueError } from '../ir/errors.js';
import { describe, formatShape } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import type { Dim } from '../ir/types.js';
import { allOptions, checkDType, isTensor, need, options, toTensor, type TensorLike } from './args.js';
import { floatx } from './config.js';
import { staticEntries, staticInt } from './sizes.js';
import { initialValue, variable } from './tensors.js';

/** Identifies unseeded random ops; never reset (clear_session must not make two ops share draws). */
let nextUid = 1;

export type RandomShape = readonly (number | Node)[] | Node | number;

/**
 * A shape: numbers, scalar integer tensors for dims known only at run time, or a 1-D integer
 * tensor of known length such as `K.shape(x)`. Returns the static dims and the run-time dim inputs.
 */
function parseShape(fn: string, shape: unknown): { dims: Dim[]; inputs: Node[] } {
  const F = `K.${fn}`;
  if (isTensor(shape)) {
    const n = shape.ndim === 1 ? shape.shape[0]! : null;
    if (n === null || !isInt(shape.dtype)) {
      throw new ValueError(
        `${fn}: a shape tensor must be a 1-D integer tensor of known length, got ${shape.dtype} ${formatShape(shape.shape)}`,
      );
    }
    const e = staticEntries(shape);
    const dims: Dim[] = [];
    const inputs: Node[] = [];
    for (let i = 0; i < n; i++) {
      const k = e?.[i] ?? null;
      dims.push(k);
      if (k === null) inputs.push(apply('index', [shape], { index: i }, F));
    }
    return { dims, inputs };
  }
  // An int is a 1-d shape, as TensorFlow reads it (Keras 2.2's optimizers write K.zeros(1)).
  if (typeof shape === 'number' && Number.isInteger(shape) && shape >= 0) return { dims: [shape], inputs: [] };
  if (!Array.isArray(shape))
    throw new ValueError(
      `${fn}: shape must be an array of dims, an integer or a 1-D integer tensor, got ${describe(shape)}`,
    );
  const dims: Dim[] = [];
  const inputs: Node[] = [];
  shape.forEach((d: unknown, i) => {
    if (isTensor(d)) {
      if (d.ndim !== 0 || !isInt(d.dtype))
        throw new ValueError(
          `${fn}: shape entry ${i} must be an integer scalar tensor, got ${d.dtype} ${formatShape(d.shape)}`,
        );
      // a size the static shapes already fix is static (K.shape(x)[1] with x's axis 1 known)
      const k = staticInt(d);
      if (k !== null && k >= 0) {
        dims.push(k);
        return;
      }
      dims.push(null);
      inputs.push(d);
    } else if (typeof d === 'number' && Number.isInteger(d) && d >= 0) {
      dims.push(d);
    } else {
      throw new ValueError(
        `${fn}: shape ${JSON.stringify(shape.map((x: unknown) => (isTensor(x) ? x.name : x)))} has a bad dim at index ${i} (dims are non-negative integers or integer scalar tensors)`,
      );
    }
  });
  return { dims, inputs };
}

function checkSeed(fn: string, seed: unknown): number | null {
  if (seed === null || seed === undefined) return null;
  if (typeof seed !== 'number' || !Number.isSafeInteger(seed))
    throw new ValueError(`${fn}: seed must be an integer, got ${describe(seed)}`);
  return seed;
}

function checkNumber(fn: string, v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v))
    throw new ValueError(`${fn}: ${what} must be a finite number, got ${describe(v)}`);
  return v;
}

function draw(
  op: string,
  fn: string,
  shape: unknown,
  dtype: unknown,
  seed: unknown,
  params: Record<string, number>,
): Node {
  const { dims, inputs } = parseShape(fn, shape);
  const dt: DType = dtype === undefined || dtype === null ? floatx() : checkDType(fn, dtype);
  const s = checkSeed(fn, seed);
  const attrs = { shape: dims, dtype: dt, seed: s, uid: s === null ? nextUid++ : null, ...params };
  return apply(op, inputs, attrs, `K.${fn}`);
}

type NormalOpts = { mean?: number; stddev?: number; dtype?: DType | null; seed?: number | null };

/** Keras' arguments of a normal draw: shape, mean, stddev, dtype, seed (or an options object). */
type NormalArgs = [
  shape: RandomShape | ({ shape: RandomShape } & NormalOpts),
  mean?: number | NormalOpts,
  stddev?: number,
  dtype?: DType | null,
  seed?: number | null,
];

function normalDraw(fn: 'random_normal' | 'truncated_normal', args: NormalArgs): Node {
  const o = allOptions(fn, args, ['shape', 'mean', 'stddev', 'dtype', 'seed']) as NormalOpts & { shape?: unknown };
  return draw(fn, fn, need(fn, o, 'shape'), o.dtype, o.seed, {
    mean: checkNumber(fn, o.mean ?? 0, 'mean'),
    stddev: checkNumber(fn, o.stddev ?? 1, 'stddev'),
  });
}

/** Normal draws with the given mean and standard deviation. */
export function random_normal(...args: NormalArgs): Node {
  return normalDraw('random_normal', args);
}

/** Normal draws redrawn until within 2 standard deviations of the mean. */
export function truncated_normal(...args: NormalArgs): Node {
  return normalDraw('truncated_normal', args);
}

type UniformOpts = { minval?: number; maxval?: number; dtype?: DType | null; seed?: number | null };

/** Uniform draws in [minval, maxval). */
export function random_uniform(
  shape: RandomShape | ({ shape: RandomShape } & UniformOpts),
  minval?: number | UniformOpts,
  maxval?: number,
  dtype?: DType | null,
  seed?: number | null,
): Node {
  const fn = 'random_uniform';
  const o = allOptions(
    fn,
    [shape, minval, maxval, dtype, seed],
    ['shape', 'minval', 'maxval', 'dtype', 'seed'],
  ) as UniformOpts & { shape?: unknown };
  return draw(fn, fn, need(fn, o, 'shape'), o.dtype, o.seed, {
    low: checkNumber(fn, o.minval ?? 0, 'minval'),
    high: checkNumber(fn, o.maxval ?? 1, 'maxval'),
  });
}

/** 1 with probability p, else 0 (Bernoulli draws, as Theano's binomial with n = 1). */
type BinomialOpts = { p?: number; dtype?: DType | null; seed?: number | null };
export function random_binomial(
  shape: RandomShape | ({ shape: RandomShape } & BinomialOpts),
  p?: number | BinomialOpts,
  dtype?: DType | null,
  seed?: number | null,
): Node {
  const fn = 'random_binomial';
  const o = allOptions(fn, [shape, p, dtype, seed], ['shape', 'p', 'dtype', 'seed']) as BinomialOpts & {
    shape?: unknown;
  };
  shape = need(fn, o, 'shape') as RandomShape;
  const pp = checkNumber(fn, o.p ?? 0, 'p');
  if (pp < 0 || pp > 1) throw new ValueError(`${fn}: p must be in [0, 1], got ${pp}`);
  return draw(fn, fn, shape, o.dtype, o.seed, { p: pp });
}

function concreteShape(fn: string, shape: unknown): number[] {
  if (typeof shape === 'number' && Number.isInteger(shape) && shape >= 0) return [shape];
  if (!Array.isArray(shape) || shape.some((d) => typeof d !== 'number' || !Number.isInteger(d) || d < 0)) {
    throw new ValueError(
      `${fn}: shape must be an array of non-negative integers, got ${isTensor(shape) ? 'a tensor' : (JSON.stringify(shape) ?? describe(shape))}`,
    );
  }
  return shape as number[];
}

type VarOpts = { dtype?: DType | null; name?: string | null; seed?: number | null };

/**
 * A variable holding one draw of `op` (the same numbers again for a seed). `given` are the
 * arguments from `shape` on; `params` are the two distribution parameters in Keras' order, each
 * with the attribute of `op` it sets.
 */
function randomVariable(
  fn: string,
  op: string,
  given: readonly unknown[],
  params: readonly (readonly [keras: string, attr: string])[],
): Node {
  const o = allOptions(fn, given, ['shape', ...params.map(([k]) => k), 'dtype', 'name', 'seed']) as VarOpts &
    Record<string, unknown>;
  const dims = concreteShape(fn, need(fn, o, 'shape'));
  const attrs = Object.fromEntries(params.map(([k, attr]) => [attr, checkNumber(fn, need(fn, o, k), k)]));
  const dt = o.dtype ?? floatx();
  return variable(initialValue(fn, draw(op, fn, dims, dt, o.seed, attrs)), dt, o.name ?? null);
}

/** A variable initialised with uniform draws in [low, high). */
export function random_uniform_variable(
  shape: readonly number[] | number | ({ shape: readonly number[] | number; low: number; high: number } & VarOpts),
  low?: number,
  high?: number,
  dtype?: DType | null | VarOpts,
  name?: string | null,
  seed?: number | null,
): Node {
  return randomVariable(
    'random_uniform_variable',
    'random_uniform',
    [shape, low, high, dtype, name, seed],
    [
      ['low', 'low'],
      ['high', 'high'],
    ],
  );
}

/** A variable initialised with normal draws (mean, standard deviation `scale`). */
export function random_normal_variable(
  shape: readonly number[] | number | ({ shape: readonly number[] | number; mean: number; scale: number } & VarOpts),
  mean?: number,
  scale?: number,
  dtype?: DType | null | VarOpts,
  name?: string | null,
  seed?: number | null,
): Node {
  return randomVariable(
    'random_normal_variable',
    'random_normal',
    [shape, mean, scale, dtype, name, seed],
    [
      ['mean', 'mean'],
      ['scale', 'stddev'],
    ],
  );
}

type NoiseShape = readonly (number | null | Node)[];
type DropoutOpts = { noise_shape?: NoiseShape | null; seed?: number | null };

/**
 * Zeroes each entry with probability `level` and scales the survivors by 1 / (1 - level), so the
 * expectation is unchanged. `noise_shape` (broadcastable to x; null entries take x's dim) shares
 * one keep/drop draw along its size-1 dims. level must be in [0, 1).
 */
export function dropout(
  x: TensorLike,
  level: number | ({ level: number } & DropoutOpts),
  noise_shape?: NoiseShape | null | DropoutOpts,
  seed?: number | null,
): Node {
  const fn = 'dropout';
  const F = 'K.dropout';
  const t = toTensor(fn, x);
  if (typeof level === 'object' && level !== null) {
    const named = allOptions(fn, [level], ['level', 'noise_shape', 'seed']);
    return dropout(
      t,
      need(fn, named, 'level') as number,
      (named['noise_shape'] ?? null) as NoiseShape | null,
      (named['seed'] ?? null) as number | null,
    );
  }
  if (typeof level !== 'number' || !(level >= 0 && level < 1)) {
    throw new ValueError(`${fn}: level must be in the interval [0, 1), got ${describe(level)}`);
  }
  const o = options<{ noise_shape: NoiseShape | null; seed: number | null }>(
    fn,
    [noise_shape, seed],
    ['noise_shape', 'seed'],
  );
  const r = t.ndim;
  let want: NoiseShape;
  if (o.noise_shape === undefined || o.noise_shape === null) want = new Array<null>(r).fill(null);
  else {
    const ns = o.noise_shape;
    const okTensor = (d: unknown) => isTensor(d) && d.ndim === 0 && isInt(d.dtype);
    if (
      !Array.isArray(ns) ||
      ns.some((d) => d !== null && !okTensor(d) && (typeof d !== 'number' || !Number.isInteger(d) || d < 0))
    ) {
      throw new ValueError(
        `${fn}: noise_shape must be an array of non-negative integers or nulls (or integer scalar tensors, such as K.shape(x)[0]), got ${describe(ns)}`,
      );
    }
    if (ns.length > r)
      throw new ShapeError(
        `${fn}: noise_shape ${formatShape(ns.map((d) => (isTensor(d) ? null : d)))} has more dims than x ${formatShape(t.shape)}`,
      );
    want = ns;
  }
  // Right-aligned against x: each noise dim is 1, x's dim, or null (= x's dim).
  const off = r - want.length;
  const dims: (number | Node)[] = want.map((d, i) => {
    const xd = t.shape[off + i]!;
    if (isTensor(d)) return d; // checked when the draw is broadcast against x
    if (d !== null && d !== 1 && xd !== null && d !== xd) {
      throw new ShapeError(
        `${fn}: noise_shape ${formatShape(want.map((e) => (isTensor(e) ? null : e)))} does not broadcast to x ${formatShape(t.shape)}: axis ${off + i} has ${d} and ${xd}`,
      );
    }
    if (d !== null) return d;
    return xd ?? apply('index', [apply('shape_of', [t], {}, F)], { index: off + i }, F);
  });
  const retain = 1 - level;
  const maskType: DType = isFloat(t.dtype) ? t.dtype : floatx();
  const mask = random_binomial(dims, retain, maskType, checkSeed(fn, o.seed));
  const kept = apply('mul', [t, mask], {}, F);
  return apply('div', [kept, toTensor(fn, retain, 'retain', kept.dtype)], {}, F);
}
