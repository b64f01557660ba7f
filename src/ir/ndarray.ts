// NDArray: a row-major typed array with a shape and a dtype. The value type of every
// interpreter, device and API boundary.
import { allocate, coerce, isDType, storeCoerces, type DType, type TypedArray } from './dtype.js';

export type Shape = readonly number[];
export type NestedArray = number | boolean | readonly NestedArray[];

export function sizeOf(shape: Shape): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

export function stridesOf(shape: Shape): number[] {
  const s = new Array<number>(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= shape[i]!;
  }
  return s;
}

export function formatShape(shape: readonly (number | null)[]): string {
  return '(' + shape.map((d) => (d === null ? 'None' : String(d))).join(', ') + (shape.length === 1 ? ',)' : ')');
}

function isTypedArray(x: unknown): x is TypedArray | Uint16Array | Uint32Array | Uint8ClampedArray {
  return ArrayBuffer.isView(x) && !(x instanceof DataView);
}

/** The typed array constructor of each dtype (allocate's), found once. */
const ARRAYS = new Map<DType, unknown>();
const arrayOf = (dt: DType): unknown => {
  let c = ARRAYS.get(dt);
  if (c === undefined) ARRAYS.set(dt, (c = allocate(dt, 0).constructor));
  return c;
};

export class NDArray {
  readonly data: TypedArray;
  readonly shape: readonly number[];
  readonly dtype: DType;

  /** Wraps `data` (copied and converted when its storage does not match `dtype`) with `shape`. */
  constructor(data: ArrayLike<number> | TypedArray, shape: Shape, dtype?: DType) {
    const dt: DType = dtype ?? inferTypedDType(data);
    if (!isDType(dt)) throw new TypeError(`NDArray: unknown dtype ${JSON.stringify(dt)}`);
    for (const d of shape) {
      if (!Number.isInteger(d) || d < 0)
        throw new RangeError(`NDArray: shape ${formatShape(shape)} has a dimension that is not a non-negative integer`);
    }
    const n = sizeOf(shape);
    if (data.length !== n) {
      throw new RangeError(`NDArray: ${data.length} values do not fill shape ${formatShape(shape)} (${n} elements)`);
    }
    const want = arrayOf(dt);
    if (data.constructor === want && storeCoerces(dt)) {
      this.data = data as TypedArray;
    } else {
      const out = allocate(dt, n);
      for (let i = 0; i < n; i++) out[i] = coerce(dt, Number(data[i]!));
      this.data = out;
    }
    // Frozen: a shape changed after the data was checked against it would let
    // compiled code read outside the data; NDArrays are immutable values.
    this.shape = Object.freeze([...shape]);
    this.dtype = dt;
  }

  get size(): number {
    return this.data.length;
  }
  get ndim(): number {
    return this.shape.length;
  }

  /** Zeros of the given shape and dtype. */
  static zeros(shape: Shape, dtype: DType): NDArray {
    return new NDArray(allocate(dtype, sizeOf(shape)), shape, dtype);
  }

  /** A new NDArray from a number, boolean, nested array, typed array or NDArray, converted to `dtype`. */
  static from(value: unknown, dtype?: DType, what = 'value'): NDArray {
    if (value instanceof NDArray) {
      return dtype === undefined || dtype === value.dtype ? value : value.astype(dtype);
    }
    if (typeof value === 'number' || typeof value === 'boolean') {
      const dt = dtype ?? (typeof value === 'boolean' ? 'bool' : 'float32');
      return new NDArray([Number(value)], [], dt);
    }
    if (isTypedArray(value)) {
      const dt = dtype ?? inferTypedDType(value as TypedArray);
      return new NDArray(value as ArrayLike<number>, [value.length], dt);
    }
    if (Array.isArray(value)) {
      const shape: number[] = [];
      let probe: unknown = value;
      while (Array.isArray(probe)) {
        shape.push(probe.length);
        probe = probe[0];
      }
      const flat: number[] = [];
      let sawBool = false;
      let sawNumber = false;
      const walk = (v: unknown, depth: number, path: number[]): void => {
        if (depth === shape.length) {
          if (typeof v === 'number') sawNumber = true;
          else if (typeof v === 'boolean') sawBool = true;
          else
            throw new TypeError(
              `${what}: element at index [${path.join(', ')}] is ${describe(v)}, expected a number or boolean`,
            );
          flat.push(Number(v));
          return;
        }
        if (!Array.isArray(v) || v.length !== shape[depth]) {
          throw new TypeError(
            `${what}: ragged nested array: index [${path.join(', ')}] has ${Array.isArray(v) ? `length ${v.length}` : describe(v)} where length ${shape[depth]} was expected (from index [${path.map(() => 0).join(', ')}])`,
          );
        }
        for (let i = 0; i < v.length; i++) walk(v[i], depth + 1, [...path, i]);
      };
      walk(value, 0, []);
      const dt = dtype ?? (sawBool && !sawNumber ? 'bool' : 'float32');
      return new NDArray(flat, shape, dt);
    }
    throw new TypeError(
      `${what}: cannot convert ${describe(value)} to an NDArray (give a number, boolean, nested array, typed array or NDArray)`,
    );
  }

  astype(dtype: DType): NDArray {
    if (dtype === this.dtype) return this;
    return new NDArray(this.data, this.shape, dtype);
  }

  reshape(shape: Shape): NDArray {
    return new NDArray(this.data, shape, this.dtype);
  }

  /** Nested arrays (a 0-d array gives a number; bool gives booleans). */
  toArray(): NestedArray {
    const conv = this.dtype === 'bool' ? (x: number) => x !== 0 : (x: number) => x;
    if (this.shape.length === 0) return conv(this.data[0]!);
    const build = (depth: number, offset: number): NestedArray[] => {
      const n = this.shape[depth]!;
      const out: NestedArray[] = new Array(n);
      if (depth === this.shape.length - 1) {
        for (let i = 0; i < n; i++) out[i] = conv(this.data[offset + i]!);
        return out;
      }
      const stride = sizeOf(this.shape.slice(depth + 1));
      for (let i = 0; i < n; i++) out[i] = build(depth + 1, offset + i * stride);
      return out;
    };
    return build(0, 0);
  }

  /** The single element of a size-1 array. */
  item(): number | boolean {
    if (this.data.length !== 1)
      throw new RangeError(
        `NDArray.item: array of shape ${formatShape(this.shape)} has ${this.data.length} elements, not 1`,
      );
    return this.dtype === 'bool' ? this.data[0] !== 0 : this.data[0]!;
  }

  /** Element at a full index (negative indices count from the end). */
  get(...index: number[]): number {
    if (index.length !== this.shape.length)
      throw new RangeError(`NDArray.get: ${index.length} indices for ${this.shape.length} dims`);
    let off = 0;
    for (let i = 0; i < index.length; i++) {
      const d = this.shape[i]!;
      let k = index[i]!;
      if (k < 0) k += d;
      if (k < 0 || k >= d)
        throw new RangeError(`NDArray.get: index ${index[i]} out of range for axis ${i} of size ${d}`);
      off = off * d + k;
    }
    return this.data[off]!;
  }

  clone(): NDArray {
    return new NDArray(this.data.slice(), this.shape, this.dtype);
  }

  toString(): string {
    return `NDArray(${this.dtype}, ${formatShape(this.shape)}, ${JSON.stringify(this.toArray())})`;
  }
}

function inferTypedDType(data: ArrayLike<number>): DType {
  if (data instanceof Float64Array) return 'float64';
  if (data instanceof Int32Array) return 'int32';
  if (data instanceof Int16Array) return 'int16';
  if (data instanceof Int8Array) return 'int8';
  if (data instanceof Uint8Array) return 'uint8';
  return 'float32';
}

export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  if (Array.isArray(v)) return `an array of length ${v.length}`;
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v)}`;
  if (typeof v === 'object') return `an object (${(v as object).constructor?.name ?? 'Object'})`;
  return `${typeof v} ${String(v)}`;
}
