// Element types (Keras' dtype names) and how they are stored and promoted.

export const DTYPES = ['float16', 'float32', 'float64', 'int8', 'int16', 'int32', 'int64', 'uint8', 'bool'] as const;
export type DType = (typeof DTYPES)[number];
export type FloatDType = 'float16' | 'float32' | 'float64';

export type TypedArray = Float32Array | Float64Array | Int8Array | Int16Array | Int32Array | Uint8Array;

export function isDType(x: unknown): x is DType {
  return typeof x === 'string' && (DTYPES as readonly string[]).includes(x);
}

export function isFloat(d: DType): d is FloatDType {
  return d === 'float16' || d === 'float32' || d === 'float64';
}
export function isInt(d: DType): boolean {
  return d === 'int8' || d === 'int16' || d === 'int32' || d === 'int64' || d === 'uint8';
}

/**
 * Storage: float16 lives in a Float32Array rounded to half precision on every store;
 * int64 lives in a Float64Array (exact to 2^53); bool in a Uint8Array of 0/1.
 */
export function allocate(dtype: DType, size: number): TypedArray {
  switch (dtype) {
    case 'float16':
    case 'float32':
      return new Float32Array(size);
    case 'float64':
    case 'int64':
      return new Float64Array(size);
    case 'int8':
      return new Int8Array(size);
    case 'int16':
      return new Int16Array(size);
    case 'int32':
      return new Int32Array(size);
    case 'uint8':
    case 'bool':
      return new Uint8Array(size);
  }
}

const f32 = new Float32Array(1);

/** Rounds a number to the nearest IEEE half-precision value (ties to even), as a JS number. */
export function roundHalf(x: number): number {
  if (!Number.isFinite(x) || x === 0) return x;
  const a = Math.abs(x);
  if (a >= 65520) return x > 0 ? Infinity : -Infinity; // past the largest half (65504) + half an ulp
  // Half has an 11-bit significand; exponent floor -14 (subnormals below 2^-14 share the 2^-24 step).
  const e = Math.max(Math.floor(Math.log2(a)), -14);
  const step = 2 ** (e - 10);
  let q = a / step;
  const r = Math.round(q);
  q = Math.abs(r - q) === 0.5 ? 2 * Math.round(q / 2) : r; // ties to even
  return Math.sign(x) * q * step;
}

/** Converts a JS number to the value a store of `dtype` keeps (the cast semantics of NumPy/Theano). */
export function coerce(dtype: DType, x: number): number {
  switch (dtype) {
    case 'float64':
      return x;
    case 'float32':
      f32[0] = x;
      return f32[0]!;
    case 'float16':
      return roundHalf(x);
    case 'bool':
      return x !== 0 && !Number.isNaN(x) ? 1 : 0;
    case 'int64':
      return Number.isFinite(x) ? Math.trunc(x) + 0 : 0; // + 0: integers have no -0 (1 / -x must stay +inf for x = 0)
    default: {
      const t = Number.isFinite(x) ? Math.trunc(x) : 0;
      switch (dtype) {
        case 'int8':
          return (t << 24) >> 24;
        case 'int16':
          return (t << 16) >> 16;
        case 'int32':
          return t | 0;
        case 'uint8':
          return t & 255;
      }
    }
  }
  return x;
}

/** Whether storing into the dtype's typed array already performs `coerce` (all but float16, bool, int64). */
export function storeCoerces(dtype: DType): boolean {
  return dtype !== 'float16' && dtype !== 'bool' && dtype !== 'int64';
}

// Promotion follows JAX's lattice, simplified: bool < ints < floats; within a kind the wider wins;
// an int meeting a float takes the float; uint8 with a signed int takes the next signed width.
const RANK: Record<DType, number> = {
  bool: 0,
  uint8: 1,
  int8: 1,
  int16: 2,
  int32: 3,
  int64: 4,
  float16: 10,
  float32: 11,
  float64: 12,
};

export function promote(a: DType, b: DType): DType {
  if (a === b) return a;
  if ((a === 'uint8' && b === 'int8') || (a === 'int8' && b === 'uint8')) return 'int16';
  return RANK[a] >= RANK[b] ? a : b;
}

export function itemsize(d: DType): number {
  switch (d) {
    case 'float64':
    case 'int64':
      return 8;
    case 'float32':
    case 'int32':
      return 4;
    case 'float16':
    case 'int16':
      return 2;
    default:
      return 1;
  }
}
