// Creating and inspecting tensors: placeholders, variables, constants and their values.
import { MAX_ELEMENTS, apply, leaf } from '../ir/build.js';
import { coerce, type DType } from '../ir/dtype.js';
import { ValueError, ShapeError } from '../ir/errors.js';
import { NDArray, describe, formatShape, type NestedArray, sizeOf } from '../ir/ndarray.js';
import { Node } from '../ir/node.js';
import { leavesOf } from '../ir/graph.js';
import { evaluate } from '../ir/interpret.js';
import { staticSize, type Dim } from '../ir/types.js';
import { densify, isSparseValue } from '../runtime/values.js';
import type { TensorLike } from './args.js';
import { allOptions, checkDType, checkInt, constantNode, isTensor, need, options, toTensor } from './args.js';
import { floatx, get_uid } from './config.js';
import { currentLearningPhase, scopedName } from './state.js';
import { sizeArg, sizeList, type Size, type SizeList } from './sizes.js';

export type ShapeArg = readonly (number | null)[];

function checkShape(fn: string, shape: unknown, allowUnknown: boolean): Dim[] {
  if (!Array.isArray(shape)) throw new ValueError(`${fn}: shape must be an array of dims, got ${describe(shape)}`);
  return shape.map((d, i) => {
    if (d === null || d === undefined) {
      if (allowUnknown) return null;
      throw new ValueError(
        `${fn}: shape ${formatShape(shape)} has an unknown dim at index ${i}; a concrete shape is needed`,
      );
    }
    if (typeof d !== 'number' || !Number.isInteger(d) || d < 0)
      throw new ValueError(
        `${fn}: shape ${JSON.stringify(shape)} has a bad dim at index ${i} (dims are non-negative integers${allowUnknown ? ' or null' : ''})`,
      );
    return d;
  });
}

/** Keras' placeholder(shape, ndim, dtype, sparse, name). */
export function placeholder(
  shape?: ShapeArg | null | { shape?: ShapeArg | null; ndim?: number; dtype?: DType; sparse?: boolean; name?: string },
  ndim?: number | null | { ndim?: number; dtype?: DType; sparse?: boolean; name?: string },
  dtype?: DType | null,
  sparse?: boolean,
  name?: string | null,
): Node {
  const o = options<{
    shape: ShapeArg | null;
    ndim: number | null;
    dtype: DType | null;
    sparse: boolean;
    name: string | null;
  }>('placeholder', [shape, ndim, dtype, sparse, name], ['shape', 'ndim', 'dtype', 'sparse', 'name']);
  let dims: Dim[];
  if (o.shape !== undefined && o.shape !== null) {
    dims = checkShape('placeholder', o.shape, true);
    if (o.ndim !== undefined && o.ndim !== null && o.ndim !== dims.length)
      throw new ValueError(`placeholder: shape ${formatShape(dims)} has rank ${dims.length} but ndim is ${o.ndim}`);
  } else if (o.ndim !== undefined && o.ndim !== null) {
    dims = new Array<Dim>(checkInt('placeholder', o.ndim, 'ndim', 0)).fill(null);
  } else {
    dims = []; // unknown rank (Keras: shape=None, ndim=None)
  }
  const unknownRank = (o.shape === undefined || o.shape === null) && (o.ndim === undefined || o.ndim === null);
  const dt = o.dtype === undefined || o.dtype === null ? floatx() : checkDType('placeholder', o.dtype);
  const uid = get_uid('placeholder');
  const nm = scopedName(o.name ?? `placeholder_${uid}`);
  return leaf('placeholder', {
    uid,
    name: nm,
    dtype: dt,
    shape: dims,
    sparse: o.sparse === true,
    ...(unknownRank ? { unknownRank: true } : {}),
  });
}

/** A variable's constraint: what Keras' optimizers apply to its new value (`p.constraint(new_p)`). */
export type Constraint = (x: Node) => Node;
const constraints = new WeakMap<Node, Constraint>();

/** The constraint given to K.variable, or null (Keras' `getattr(p, 'constraint', None)`; also `v.constraint`). */
export function constraintOf(x: Node): Constraint | null {
  return constraints.get(x) ?? null;
}

/**
 * Sets (or, with null/undefined, clears) a variable's constraint: a function from tensor to tensor.
 * Only variables have one (Keras sets it on variables; TensorFlow's `Variable.constraint`).
 */
export function setConstraint(fn: string, x: Node, c: unknown): void {
  if (c !== undefined && c !== null && typeof c !== 'function') {
    throw new TypeError(`${fn}: constraint must be a function from tensor to tensor (or null), got ${describe(c)}`);
  }
  if (x.op !== 'variable')
    throw new TypeError(`${fn}: only a variable has a constraint; ${x.name} is a ${x.op} tensor`);
  if (typeof c === 'function') constraints.set(x, c as Constraint);
  else constraints.delete(x);
}

/**
 * Keras' variable(value, dtype, name, constraint): dtype defaults to floatx; `constraint` (Keras
 * 2.1+) is a function from tensor to tensor that optimizers apply to the variable's new value;
 * theanine keeps it on the variable (`v.constraint`, assignable) and applies it nowhere itself, as Keras' backend.
 */
export function variable(
  value: unknown,
  dtype?: DType | null | { dtype?: DType | null; name?: string | null; constraint?: Constraint | null },
  name?: string | null,
  constraint?: Constraint | null,
): Node {
  const o = options<{ dtype: DType | null; name: string | null; constraint: Constraint | null }>(
    'variable',
    [dtype, name, constraint],
    ['dtype', 'name', 'constraint'],
  );
  if (o.constraint !== undefined && o.constraint !== null && typeof o.constraint !== 'function') {
    throw new TypeError(
      `variable: constraint must be a function from tensor to tensor (or null), got ${describe(o.constraint)}`,
    );
  }
  const v = makeVariable(value, o);
  setConstraint('variable', v, o.constraint);
  return v;
}

function makeVariable(value: unknown, o: { dtype?: DType | null; name?: string | null }): Node {
  const dt = o.dtype === undefined || o.dtype === null ? floatx() : checkDType('variable', o.dtype);
  let nd: NDArray;
  if (isTensor(value)) nd = evalTensor('variable', value);
  else if (isSparseValue(value)) nd = densify('variable', value, dt);
  else nd = NDArray.from(value, value instanceof NDArray ? undefined : dt, 'variable: value');
  // The variable owns its value: a user's NDArray or typed array (or another tensor's value) may change later.
  nd = nd.astype(dt).clone();
  const uid = get_uid('variable');
  const nm = scopedName(o.name ?? `variable_${uid}`);
  return leaf('variable', { uid, name: nm, dtype: dt, shape: nd.shape }, { value: nd });
}

/** Keras' constant(value, dtype, shape, name): a scalar value with a shape is filled. */
export function constant(
  value: unknown,
  dtype?: DType | null | object,
  shape?: ShapeArg | null,
  name?: string | null,
): Node {
  const o = options<{ dtype: DType | null; shape: ShapeArg | null; name: string | null }>(
    'constant',
    [dtype, shape, name],
    ['dtype', 'shape', 'name'],
  );
  const dt = o.dtype === undefined || o.dtype === null ? floatx() : checkDType('constant', o.dtype);
  let nd = isTensor(value)
    ? evalTensor('constant', value)
    : NDArray.from(value, value instanceof NDArray ? undefined : dt, 'constant: value');
  if (o.shape !== undefined && o.shape !== null) {
    const dims = checkShape('constant', o.shape, false) as number[];
    if (nd.size === 1) nd = new NDArray(new Float64Array(sizeOf(dims)).fill(nd.data[0]!), dims, dt);
    else if (nd.size === sizeOf(dims)) nd = nd.reshape(dims);
    else
      throw new ShapeError(`constant: value of shape ${formatShape(nd.shape)} does not fit shape ${formatShape(dims)}`);
  }
  return constantNode(nd.astype(dt));
}

function filled(fn: string, shape: unknown, dtype: DType | null | undefined, v: number): NDArray {
  const dims = checkShape(fn, shape, false) as number[];
  const dt = dtype === undefined || dtype === null ? floatx() : checkDType(fn, dtype);
  const n = sizeOf(dims);
  // a huge shape failed with "Invalid typed array length", naming nothing
  if (n > MAX_ELEMENTS)
    throw new ValueError(
      `${fn}: shape ${formatShape(dims)} has ${n} elements; a typed array holds at most ${MAX_ELEMENTS} (2^32 - 1). Reduce the shape`,
    );
  return new NDArray(new Float64Array(n).fill(v), dims, dt);
}

type DTypeName = { dtype?: DType | null; name?: string | null };
const dtypeName = (fn: string, dtype: unknown, name: unknown) =>
  options<{ dtype: DType | null; name: string | null }>(fn, [dtype, name], ['dtype', 'name']);

/**
 * Keras' zeros/ones/eye return variables. With a size from tensors (`K.zeros([K.shape(x)[0], 3])`,
 * `K.eye(K.shape(x)[1])`) they return a tensor instead, as Keras' TensorFlow backend does when the
 * shape is not static.
 */
/** A shape argument: an int is a 1-d shape (TensorFlow's reading, as in Keras 2.2's `K.zeros(1)`). */
type ShapeOrInt = ShapeArg | number | SizeList;
const asShape = (shape: unknown): unknown => (typeof shape === 'number' ? [shape] : shape);

/** Keras' zeros or ones: a variable of `value`s, or a tensor where the shape has sizes known only at run time. */
function filledVariable(fn: 'zeros' | 'ones', value: number) {
  return (
    shape: ShapeOrInt | ({ shape: ShapeOrInt } & DTypeName),
    dtype?: DType | null | DTypeName,
    name?: string | null,
  ): Node => {
    const o = allOptions(fn, [shape, dtype, name], ['shape', 'dtype', 'name']) as DTypeName & { shape?: unknown };
    const s = asShape(need(fn, o, 'shape'));
    return (
      sizedFill(fn, s, o.dtype, value) ??
      variable(filled(fn, staticShape(fn, s), o.dtype, value), o.dtype ?? null, o.name ?? null)
    );
  };
}
export const zeros = filledVariable('zeros', 0);
export const ones = filledVariable('ones', 1);

const hasTensors = (shape: unknown) => isTensor(shape) || (Array.isArray(shape) && shape.some(isTensor));

/** A shape whose tensor entries the static shapes fix, as numbers (other shapes as given). */
function staticShape(fn: string, shape: unknown): unknown {
  if (!hasTensors(shape)) return shape;
  const s = sizeList(fn, 'shape', shape, 0);
  return 'static' in s ? s.static : shape;
}

/** A fill_dims tensor when the shape has sizes known only at run time; undefined otherwise. */
function sizedFill(fn: string, shape: unknown, dtype: DType | null | undefined, value: number): Node | undefined {
  if (!hasTensors(shape)) return undefined;
  const s = sizeList(fn, 'shape', shape, 0);
  const dt = dtype === undefined || dtype === null ? floatx() : checkDType(fn, dtype);
  if ('static' in s) return undefined;
  return apply('fill_dims', [s.vector], { known: s.known, value, dtype: dt }, `K.${fn}`);
}

/**
 * Keras' eye(size, dtype, name): size is n (n x n) or a pair [n, m] (Keras 2.3's `n, m = size`;
 * ones on the diagonal i == j). A size from tensors gives a tensor, as in zeros/ones.
 */
export function eye(
  size: Size | readonly [Size, Size] | ({ size: Size | readonly [Size, Size] } & DTypeName),
  dtype?: DType | null | DTypeName,
  name?: string | null,
): Node {
  const o = allOptions('eye', [size, dtype, name], ['size', 'dtype', 'name']) as DTypeName & { size?: unknown };
  const given = need('eye', o, 'size');
  if (Array.isArray(given) && given.length !== 2)
    throw new ValueError(`eye: size must be an integer or a pair [n, m], got an array of ${given.length} entries`);
  const [nGiven, mGiven] = Array.isArray(given) ? (given as [unknown, unknown]) : [given, given];
  const n = eyeSize(nGiven);
  const m = eyeSize(mGiven);
  if (typeof n !== 'number' || typeof m !== 'number') {
    // (i == j) over arange(n) against arange(m)
    const dt = o.dtype === undefined || o.dtype === null ? floatx() : checkDType('eye', o.dtype);
    const zero = constantNode(new NDArray([0], [], 'int32'));
    const one = constantNode(new NDArray([1], [], 'int32'));
    const range = (k: number | Node) =>
      apply(
        'arange_dims',
        [zero, typeof k === 'number' ? constantNode(new NDArray([k], [], 'int32')) : k, one],
        { dtype: 'int32' },
        'K.eye',
      );
    const eq = apply(
      'equal',
      [apply('expand_dims', [range(n)], { axis: 1 }, 'K.eye'), apply('expand_dims', [range(m)], { axis: 0 }, 'K.eye')],
      {},
      'K.eye',
    );
    return apply('cast', [eq], { dtype: dt }, 'K.eye');
  }
  const nd = filled('eye', [n, m], o.dtype, 0);
  for (let i = 0; i < Math.min(n, m); i++) nd.data[i * m + i] = 1;
  return variable(nd, o.dtype ?? null, o.name ?? null);
}

/** One of eye's sizes: a number, or a scalar int tensor (its value when the static shapes fix it). */
function eyeSize(given: unknown): number | Node {
  if (isTensor(given)) {
    const s = sizeArg('eye', 'size', given, 0);
    if ('tensor' in s) return s.tensor;
    return checkInt('eye', s.static, 'size', 0);
  }
  return checkInt('eye', given, 'size', 0);
}

/** zeros_like/ones_like: a tensor (not a variable) with x's runtime shape. */
export function zeros_like(x: TensorLike, dtype?: DType | null | DTypeName, name?: string | null): Node {
  return fillLike('zeros_like', x, dtypeName('zeros_like', dtype, name).dtype, 0);
}
export function ones_like(x: TensorLike, dtype?: DType | null | DTypeName, name?: string | null): Node {
  return fillLike('ones_like', x, dtypeName('ones_like', dtype, name).dtype, 1);
}
function fillLike(fn: string, x: TensorLike, dtype: DType | null | undefined, v: number): Node {
  const t = toTensor(fn, x);
  const dt = dtype === undefined || dtype === null ? t.dtype : checkDType(fn, dtype);
  // x * 0 + v would turn NaN into NaN; broadcasting a constant to x's shape is exact.
  return apply('fill_like', [t], { value: v, dtype: dt }, `K.${fn}`);
}

/** Keras' identity(x, name): a new tensor with x's value (names are not kept on tensors here). */
export function identity(x: TensorLike, name?: string | null | { name?: string | null }): Node {
  const o = options<{ name: string | null }>('identity', [name], ['name']);
  if (o.name !== undefined && o.name !== null && typeof o.name !== 'string')
    throw new ValueError(`identity: name must be a string, got ${describe(o.name)}`);
  return apply('identity', [toTensor('identity', x)], {}, 'K.identity');
}

export function cast(x: TensorLike, dtype: DType): Node {
  const t = toTensor('cast', x);
  const dt = checkDType('cast', dtype);
  return t.dtype === dt ? t : apply('cast', [t], { dtype: dt }, 'K.cast');
}

export function cast_to_floatx(x: unknown): NDArray {
  return NDArray.from(x, floatx(), 'cast_to_floatx: x');
}

function tensorArg(fn: string, x: unknown): Node {
  if (!isTensor(x)) throw new TypeError(`${fn}: x must be a tensor, got ${describe(x)}`);
  return x;
}

/** null for a tensor of unknown rank (Keras 2.3's TensorFlow backend). */
export function int_shape(x: Node | NDArray): (number | null)[] | null {
  if (x instanceof NDArray) return [...x.shape];
  const t = tensorArg('int_shape', x);
  return t.type.unknownRank === true ? null : [...t.shape];
}
/** null for a tensor of unknown rank (TensorFlow's `x.shape.rank`). */
export function ndim(x: Node | NDArray): number | null {
  if (x instanceof NDArray) return x.ndim;
  const t = tensorArg('ndim', x);
  return t.type.unknownRank === true ? null : t.ndim;
}
export function dtype(x: Node | NDArray): DType {
  return x instanceof NDArray ? x.dtype : tensorArg('dtype', x).dtype;
}
/** The runtime shape as a symbolic int32 vector. */
export function shape(x: TensorLike): Node {
  return apply('shape_of', [toTensor('shape', x)], {}, 'K.shape');
}
export function count_params(x: Node): number {
  const n = staticSize(tensorArg('count_params', x).shape);
  if (n === null) throw new ValueError(`count_params: ${x.name} has unknown dims ${formatShape(x.shape)}`);
  return n;
}
export function get_variable_shape(x: Node): number[] {
  return [...(variableArg('get_variable_shape', x).shape as number[])];
}

/**
 * Keras 2.3's rule: a tensor is a Keras tensor when a layer made it, i.e. it has `_keras_history`
 * (set by Keras' engine, or by ported layer code); placeholders, variables and op results are not.
 * An error for non-tensors.
 */
export function is_keras_tensor(x: unknown): boolean {
  if (!isTensor(x))
    throw new ValueError(`is_keras_tensor: unexpectedly found ${describe(x)}; expected a symbolic tensor`);
  return (x as { _keras_history?: unknown })._keras_history !== undefined;
}

export function is_sparse(x: unknown): boolean {
  return isTensor(x) && x.op === 'placeholder' && x.attrs['sparse'] === true;
}
/** Sparse inputs are densified when fed, so the tensor is already dense. */
export function to_dense(x: Node): Node {
  return tensorArg('to_dense', x);
}

function variableArg(fn: string, x: unknown): Node {
  if (!isTensor(x) || x.op !== 'variable')
    throw new TypeError(
      `${fn}: expected a variable (from K.variable), got ${isTensor(x) ? `the ${x.op} tensor ${x.name}` : describe(x)}`,
    );
  return x;
}

function evalTensor(fn: string, x: Node): NDArray {
  const ph = leavesOf([x], 'placeholder');
  if (ph.length > 0) {
    throw new ValueError(
      `${fn}: ${x.name} depends on placeholder ${JSON.stringify(ph[0]!.name)}; evaluate it with K.function and feed the placeholder`,
    );
  }
  return evaluate([x], { learningPhase: currentLearningPhase() })[0]!;
}

/** An initial value (random variables' draws): the reference interpreter's, as variable(tensor) computes it. */
export function initialValue(fn: string, x: Node): NDArray {
  return evalTensor(fn, x);
}

function convertForVariable(fn: string, x: Node, value: unknown): NDArray {
  const nd = NDArray.from(value, value instanceof NDArray ? undefined : x.dtype, `${fn}: value`).astype(x.dtype);
  const want = x.shape as number[];
  if (nd.shape.length !== want.length || nd.shape.some((d, i) => d !== want[i])) {
    throw new ShapeError(
      `${fn}: value of shape ${formatShape(nd.shape)} does not match variable ${JSON.stringify(x.name)} of shape ${formatShape(want)}`,
    );
  }
  return nd.clone(); // the variable owns its value, even when the user's array shares storage with `nd`
}

export function set_value(x: Node, value: NDArray | NestedArray): void {
  const v = variableArg('set_value', x);
  v.cell!.value = convertForVariable('set_value', v, value);
}

/** All values are converted and checked before any variable changes. */
export function batch_set_value(tuples: readonly (readonly [Node, NDArray | NestedArray])[]): void {
  if (!Array.isArray(tuples))
    throw new TypeError(`batch_set_value: expected an array of [variable, value] pairs, got ${describe(tuples)}`);
  const staged = tuples.map((t, i) => {
    if (!Array.isArray(t) || t.length !== 2)
      throw new TypeError(`batch_set_value: entry ${i} is not a [variable, value] pair`);
    const v = variableArg('batch_set_value', t[0]);
    return [v, convertForVariable('batch_set_value', v, t[1])] as const;
  });
  for (const [v, nd] of staged) v.cell!.value = nd;
}
