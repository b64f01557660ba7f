// The API edge: Keras' positional-or-options arguments, and conversion of user values to tensors.
import { NDArray, describe, formatShape } from '../ir/ndarray.js';
import { Node } from '../ir/node.js';
import { apply } from '../ir/build.js';
import type { OpName } from '../ir/registry.js';
import { coerce, isDType, isFloat, isInt, type DType } from '../ir/dtype.js';
import { ValueError } from '../ir/errors.js';
import { floatx } from './config.js';

/** Anything the API accepts where a tensor is expected. */
export type TensorLike = Node | NDArray | number | boolean | readonly unknown[];

/** An object literal (not an array, a Map, a tensor...): Keras' keyword arguments. */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const p = Object.getPrototypeOf(v);
  return p === Object.prototype || p === null;
}

/** The arguments without the trailing `undefined`s (parameters left out). */
function dropTrailingUndefined(given: readonly unknown[]): unknown[] {
  const args = [...given];
  while (args.length > 0 && args[args.length - 1] === undefined) args.pop();
  return args;
}

/**
 * Trailing optional parameters, given positionally or as one trailing plain object whose keys
 * must be among `allowed`. The positional ones are named by `namesFor(positional)` (a function
 * whose positional order depends on the arguments picks it there). Giving one parameter both
 * ways is an error.
 */
export function trailingOptions(
  fn: string,
  given: readonly unknown[],
  allowed: readonly string[],
  namesFor: (positional: readonly unknown[]) => readonly string[],
): Record<string, unknown> {
  let args = dropTrailingUndefined(given);
  const out: Record<string, unknown> = {};
  const last = args[args.length - 1];
  if (args.length > 0 && isPlainObject(last)) {
    args = args.slice(0, -1);
    for (const [k, v] of Object.entries(last)) {
      if (!allowed.includes(k))
        throw new ValueError(
          `${fn}: unknown option ${JSON.stringify(k)} (allowed: ${allowed.map((n) => JSON.stringify(n)).join(', ')})`,
        );
      out[k] = v;
    }
  }
  const names = namesFor(args);
  if (args.length > names.length)
    throw new ValueError(`${fn}: too many arguments (${args.length} optional given, at most ${names.length})`);
  args.forEach((v, i) => {
    const k = names[i]!;
    if (v === undefined) return;
    if (k in out) throw new ValueError(`${fn}: ${k} given both positionally and in the options object`);
    out[k] = v;
  });
  return out;
}

/**
 * Keras' trailing optional parameters, given positionally or as one trailing plain object
 * keyed by Keras' names. `given` are the arguments from position `first` on;
 * `names` are the parameter names from that position. Unknown keys are an error.
 */
export function options<T extends Record<string, unknown>>(
  fn: string,
  given: readonly unknown[],
  names: readonly (keyof T & string)[],
): Partial<T> {
  return trailingOptions(fn, given, names, () => names) as Partial<T>;
}

/**
 * Keras' keyword arguments for required parameters too: `K.random_normal({ shape: [b, d] })`.
 * `given` are all the arguments from the first parameter on; when the first is a plain object
 * holding one of `aliases[names[0]]` (or names[0] itself) and nothing else is given, it is read as the
 * options object for every parameter (`aliases` maps other spellings, such as Keras 2.3's renames,
 * to the name here). Otherwise the arguments are positional as usual (`options`).
 */
export function allOptions(
  fn: string,
  given: readonly unknown[],
  names: readonly string[],
  aliases: Readonly<Record<string, string>> = {},
): Record<string, unknown> {
  const args = dropTrailingUndefined(given);
  const first = args[0];
  const keyOf = (k: string): string => aliases[k] ?? k;
  if (args.length === 1 && isPlainObject(first) && Object.keys(first).some((k) => keyOf(k) === names[0])) {
    const out: Record<string, unknown> = {};
    const allowed = [...names, ...Object.keys(aliases)];
    for (const [k, v] of Object.entries(first)) {
      if (!allowed.includes(k))
        throw new ValueError(
          `${fn}: unknown option ${JSON.stringify(k)} (allowed: ${allowed.map((n) => JSON.stringify(n)).join(', ')})`,
        );
      const c = keyOf(k);
      if (c in out)
        throw new ValueError(
          `${fn}: give ${c} once (${Object.keys(aliases)
            .filter((a) => aliases[a] === c)
            .concat(c)
            .map((n) => JSON.stringify(n))
            .join(' and ')} name the same parameter)`,
        );
      out[c] = v;
    }
    return out;
  }
  return options(fn, args, names);
}

/** A required parameter: an error naming it when it is missing. */
export function need(fn: string, o: Record<string, unknown>, name: string): unknown {
  if (o[name] === undefined) throw new ValueError(`${fn}: ${name} is required`);
  return o[name];
}

export function isTensor(x: unknown): x is Node {
  return x instanceof Node;
}

/** Validates a dtype argument, naming the function. */
export function checkDType(fn: string, dtype: unknown, what = 'dtype'): DType {
  if (!isDType(dtype)) {
    // Keras raises TypeError here (TensorFlow's as_dtype: "Cannot convert ... to a TensorFlow DType")
    throw new TypeError(
      `${fn}: ${what} ${JSON.stringify(dtype)} is not a dtype (allowed: float16, float32, float64, int8, int16, int32, int64, uint8, bool)`,
    );
  }
  return dtype;
}

/** A constant node holding a copy of `value` (the caller's array may change later; nodes are immutable). */
export function constantNode(value: NDArray): Node {
  return apply('constant', [], { value: value.clone() });
}

/**
 * Converts a user value to a tensor. Plain numbers are weakly typed (JAX's rule): they take
 * the dtype of the tensor they meet (`like`), except that a fractional number meeting an
 * integer or bool tensor makes floatx.
 */
export function toTensor(fn: string, x: unknown, what = 'x', like?: DType): Node {
  if (x instanceof Node) return x;
  if (typeof x === 'number') {
    let dt: DType = like ?? floatx();
    if (like !== undefined && !isFloat(like) && !Number.isInteger(x)) dt = floatx();
    if (like === 'bool' && Number.isInteger(x)) dt = 'int32'; // JAX: True + 1 is 2, not True
    // An integer the other operand's int dtype cannot hold would wrap (int8 + 300 adding 44): widen instead.
    if (like !== undefined && isInt(like) && Number.isInteger(x) && coerce(like, x) !== x)
      dt = Math.abs(x) < 2 ** 31 ? 'int32' : 'int64';
    return constantNode(new NDArray([x], [], dt));
  }
  if (typeof x === 'boolean') return constantNode(new NDArray([x ? 1 : 0], [], 'bool'));
  if (x instanceof NDArray) return constantNode(x);
  if (Array.isArray(x) && holdsTensor(x)) return pack(fn, x, what, like);
  if (Array.isArray(x) || ArrayBuffer.isView(x)) {
    const nd = NDArray.from(x, undefined, `${fn}: ${what}`);
    return constantNode(nd.dtype === 'bool' ? nd : nd.astype(like !== undefined && isFloat(like) ? like : floatx()));
  }
  throw new TypeError(`${fn}: ${what} is ${describe(x)}; expected a tensor, number, boolean, nested array or NDArray`);
}

function holdsTensor(x: readonly unknown[]): boolean {
  return x.some((e) => e instanceof Node || (Array.isArray(e) && holdsTensor(e)));
}

/**
 * A list holding tensors (`K.prod([a, b])`, as Keras' BatchNormalization writes) packed into one
 * tensor along a new first axis, as TensorFlow's convert_to_tensor auto-packs: numbers take the
 * tensors' dtype, and every entry must have the same dtype and shape.
 */
function pack(fn: string, x: readonly unknown[], what: string, like?: DType): Node {
  if (x.length === 0) throw new ValueError(`${fn}: ${what} is an empty list`);
  const firstTensor = x.find((e): e is Node => e instanceof Node);
  const dt = firstTensor?.dtype ?? like;
  const parts = x.map((e, i) => toTensor(fn, e, `${what}[${i}]`, dt));
  const first = parts[0]!;
  parts.forEach((t, i) => {
    if (t.dtype !== first.dtype)
      throw new TypeError(
        `${fn}: ${what} is a list of tensors of different dtypes (${what}[0] is ${first.dtype}, ${what}[${i}] is ${t.dtype}); cast them to one dtype first`,
      );
    const same =
      t.ndim === first.ndim && t.shape.every((d, k) => d === null || first.shape[k] === null || d === first.shape[k]);
    if (!same)
      throw new ValueError(
        `${fn}: ${what} is a list of tensors of different shapes (${what}[0] is ${formatShape(first.shape)}, ${what}[${i}] is ${formatShape(t.shape)}); a list is packed into one tensor, so the shapes must agree`,
      );
  });
  const rows = parts.map((t) => apply('expand_dims', [t], { axis: 0 }, `K.${fn}`));
  return rows.length === 1 ? rows[0]! : apply('concat', rows, { axis: 0 }, `K.${fn}`);
}

/** Two operands, converting numbers by the other operand's dtype. */
export function operands(fn: string, x: unknown, y: unknown, names: [string, string] = ['x', 'y']): [Node, Node] {
  if (x instanceof Node) return [x, toTensor(fn, y, names[1], x.dtype)];
  if (y instanceof Node) return [toTensor(fn, x, names[0], y.dtype), y];
  return [toTensor(fn, x, names[0]), toTensor(fn, y, names[1])];
}

/** Validates an integer argument. */
export function checkInt(fn: string, v: unknown, what: string, min = -Infinity): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min) {
    throw new ValueError(`${fn}: ${what} must be an integer${min > -Infinity ? ` >= ${min}` : ''}, got ${describe(v)}`);
  }
  return v;
}

/** Axis argument: int, list of ints, or null/undefined for all axes; normalised and sorted. */
export function checkAxes(fn: string, axis: unknown, ndim: number): number[] {
  if (axis === null || axis === undefined) return Array.from({ length: ndim }, (_, i) => i);
  const list = Array.isArray(axis) ? axis : [axis];
  const out = list.map((a) => {
    const v = checkInt(fn, a, 'axis');
    const n = v < 0 ? v + ndim : v;
    if (n < 0 || n >= ndim)
      throw new ValueError(
        `${fn}: axis ${v} is out of range for a tensor of rank ${ndim} (allowed: ${-ndim}..${ndim - 1})`,
      );
    return n;
  });
  if (new Set(out).size !== out.length) throw new ValueError(`${fn}: axis ${JSON.stringify(axis)} repeats an axis`);
  return out.sort((a, b) => a - b);
}

export { isInt, isFloat };

/** A number as a constant of `like`'s dtype. */
export function lit(fn: string, v: number, like: Node): Node {
  return toTensor(fn, v, 'constant', like.dtype);
}

/** K.<fn>(x): op `op` of one tensor-like argument. */
export function unary(op: OpName, fn: string): (x: TensorLike) => Node {
  return (x) => apply(op, [toTensor(fn, x)], {}, `K.${fn}`);
}
