// Comparing values in checking mode (src/passes/check.ts, src/runtime/check.ts): the tolerance of
// each dtype, the first element two values differ in, and seeded test values of a node's type.
// PyTensor's DebugMode compares with per-dtype tolerances the same way (float32 looser than
// float64, integers exact); a NaN matches a NaN and equal infinities match.
import { allocate, isFloat, type DType } from './dtype.js';
import { NDArray, formatShape, stridesOf } from './ndarray.js';
import { mulberry32 } from './random.js';
import type { TensorType } from './types.js';

export interface Tolerance {
  /** |got - want| <= atol + rtol * |want|. */
  readonly atol: number;
  readonly rtol: number;
}

/** Unit roundoff of a float dtype (half the distance from 1 to the next float). */
export function unitRoundoff(dtype: DType): number {
  if (dtype === 'float64') return 2 ** -53;
  if (dtype === 'float32') return 2 ** -24;
  if (dtype === 'float16') return 2 ** -11;
  return 0;
}

/**
 * The tolerance of a dtype for a value computed in `depth` rounding steps (src/ir/rounding.ts).
 * Float atol is scaled by the largest magnitude of the expected value (a sum of large terms
 * rounds at that scale). The base: float32 1e-4 relative, 1e-5 of the scale; float16 1e-2;
 * float64 1e-9 of the scale, 1e-7 relative; integers and bools exact. A deeper computation (a
 * whole graph, a long reduction, a Scan) gets its forward error bound instead where that is
 * larger: both sides round, so 2 gamma_depth = 2 depth u / (1 - depth u) relative and of the
 * scale (Higham 3.1; u the dtype's unit roundoff), capped at 1 where the bound says nothing
 * (depth u near 1: a float16 reduction of thousands of terms).
 */
export function toleranceOf(dtype: DType, scale = 1, depth = 0): Tolerance {
  const s = Math.max(1, scale);
  const base =
    dtype === 'float64'
      ? { atol: 1e-9, rtol: 1e-7 }
      : dtype === 'float32'
        ? { atol: 1e-5, rtol: 1e-4 }
        : dtype === 'float16'
          ? { atol: 1e-2, rtol: 1e-2 }
          : { atol: 0, rtol: 0 };
  const du = depth * unitRoundoff(dtype);
  const bound = du <= 0 ? 0 : du < 1 / 3 ? (2 * du) / (1 - du) : 1;
  return { atol: Math.max(base.atol, bound) * s, rtol: Math.max(base.rtol, bound) };
}

/** The largest finite magnitude in `v` (0 when none). */
export function maxAbs(v: NDArray): number {
  let m = 0;
  for (let i = 0; i < v.data.length; i++) {
    const a = Math.abs(v.data[i]!);
    if (a > m && Number.isFinite(a)) m = a;
  }
  return m;
}

export interface Difference {
  /** The flat index and the multi-index of the first differing element (shape mismatch: -1, []). */
  readonly flat: number;
  readonly index: readonly number[];
  readonly got: number;
  readonly want: number;
  readonly tolerance: Tolerance;
  /** Set when the shapes or dtypes differ. */
  readonly why?: string;
}

/**
 * The first element where `got` differs from `want` beyond `want`'s dtype tolerance (or, for
 * float64 values, `float64As`'s: a target that computes float64 in float32) for a value computed
 * in `depth` rounding steps, or undefined.
 */
export function firstDifference(got: NDArray, want: NDArray, float64As?: DType, depth = 0): Difference | undefined {
  const tolerance = toleranceOf(
    want.dtype === 'float64' && float64As !== undefined ? float64As : want.dtype,
    isFloat(want.dtype) ? maxAbs(want) : 1,
    isFloat(want.dtype) ? depth : 0,
  );
  // Empty values have no element to differ in. (The reference's Scan of zero steps stacks its
  // outputs as (0, 0, ...) where compiled code keeps the batch dim: a shape, not a value.)
  if (got.size === 0 && want.size === 0) return undefined;
  if (got.shape.length !== want.shape.length || got.shape.some((d, i) => d !== want.shape[i])) {
    return {
      flat: -1,
      index: [],
      got: NaN,
      want: NaN,
      tolerance,
      why: `shape ${formatShape(got.shape)} instead of ${formatShape(want.shape)}`,
    };
  }
  for (let i = 0; i < want.data.length; i++) {
    const x = got.data[i]!;
    const y = want.data[i]!;
    if (x === y || (Number.isNaN(x) && Number.isNaN(y))) continue;
    if (Math.abs(x - y) <= tolerance.atol + tolerance.rtol * Math.abs(y)) continue;
    return { flat: i, index: unflatten(i, want.shape), got: x, want: y, tolerance };
  }
  return undefined;
}

function unflatten(i: number, shape: readonly number[]): number[] {
  const st = stridesOf(shape);
  return st.map((s, k) => Math.floor(i / s) % shape[k]!);
}

/** `element [1, 2] is 3.5, expected 3 (atol 1e-5, rtol 0.0001)`. */
export function formatDifference(d: Difference): string {
  if (d.why !== undefined) return d.why;
  return `element [${d.index.join(', ')}] is ${d.got}, expected ${d.want} (atol ${d.tolerance.atol.toPrecision(3)}, rtol ${d.tolerance.rtol})`;
}

/** Whether every element of `v` is finite (integers always are). */
export function allFinite(v: NDArray): boolean {
  if (!isFloat(v.dtype)) return true;
  const d = v.data;
  for (let i = 0; i < d.length; i++) if (!Number.isFinite(d[i]!)) return false;
  return true;
}

/** The first non-finite element of `v`, or -1. */
export function firstNonFinite(v: NDArray): number {
  if (!isFloat(v.dtype)) return -1;
  for (let i = 0; i < v.data.length; i++) if (!Number.isFinite(v.data[i]!)) return i;
  return -1;
}

/** A small seeded generator (mulberry32, random.ts): test values are the same in every run. */
export const seededRandom: (seed: number) => () => number = mulberry32;

/** The size a test value gives a dim unknown until call time. */
export const TEST_DIM = 3;

/**
 * A test value of type `t`: floats uniform in [-2, 2), integers in 0..4, bools 0 or 1; unknown
 * dims are TEST_DIM.
 */
export function testValue(t: TensorType, next: () => number): NDArray {
  const shape = t.shape.map((d) => d ?? TEST_DIM);
  const n = shape.reduce((a, b) => a * b, 1);
  const data = allocate(t.dtype, n);
  for (let i = 0; i < n; i++) {
    const u = next();
    data[i] = isFloat(t.dtype) ? 4 * u - 2 : t.dtype === 'bool' ? (u < 0.5 ? 0 : 1) : Math.floor(5 * u);
  }
  return new NDArray(data, shape, t.dtype);
}
