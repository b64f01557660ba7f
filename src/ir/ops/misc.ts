// Ops that fit no elementwise or reduction table: running sums/products along an axis,
// `in_top_k`, and the impure `print`.
import { isInt, promote, isFloat, type DType } from '../dtype.js';
import { NDArray, formatShape, stridesOf } from '../ndarray.js';
import { defineOp, type OpDef } from '../op.js';
import { normAxis, tensorType } from '../types.js';
import { InferError } from '../errors.js';

export interface AxisAttrs {
  readonly axis: number;
}

// As `sum`: bool and small ints accumulate in int32; floats and int64 keep their dtype.
const accType = (d: DType): DType => (isFloat(d) || d === 'int64' ? d : promote(d, 'int32'));

/**
 * out[..., k, ...] = x[..., 0, ...] (op) ... (op) x[..., k, ...] along `axis` (inclusive scan,
 * left to right, accumulated in float64 then stored).
 */
function cumulative(name: string, init: number, step: (acc: number, v: number) => number): OpDef<AxisAttrs> {
  return defineOp<AxisAttrs>({
    name,
    kind: 'other',
    arity: 1,
    infer: ([x], a) => {
      if (x!.shape.length === 0) throw new InferError(`needs a tensor of rank >= 1, got a scalar`, 'value');
      normAxis(a.axis, x!.shape.length);
      return tensorType(accType(x!.dtype), x!.shape);
    },
    impl: ([x], a) => {
      const n = x!.shape[a.axis]!;
      const inner = stridesOf(x!.shape)[a.axis]!;
      const outer = n * inner === 0 ? 0 : x!.size / (n * inner);
      const out = new Float64Array(x!.size);
      for (let o = 0; o < outer; o++) {
        for (let i = 0; i < inner; i++) {
          let acc = init;
          for (let k = 0; k < n; k++) {
            const off = (o * n + k) * inner + i;
            acc = step(acc, x!.data[off]!);
            out[off] = acc;
          }
        }
      }
      return new NDArray(out, x!.shape, accType(x!.dtype));
    },
  });
}

export const cumulativeOps = {
  cumsum: cumulative('cumsum', 0, (a, v) => a + v),
  cumprod: cumulative('cumprod', 1, (a, v) => a * v),
} as const;

/**
 * in_top_k(predictions (batch, classes), targets (batch,) ints; k): row i is true when fewer
 * than k classes score strictly higher than class targets[i], so ties at the boundary all count
 * as in the top k (TensorFlow's rule). k < 1, a target outside [0, classes), or a NaN score at
 * the target give false.
 */
export const inTopKOp = defineOp<{ readonly k: number }>({
  name: 'in_top_k',
  kind: 'other',
  arity: 2,
  infer: ([p, t]) => {
    if (p!.shape.length !== 2)
      throw new InferError(`predictions must have rank 2 (batch_size, classes), got shape ${formatShape(p!.shape)}`);
    if (t!.shape.length !== 1)
      throw new InferError(`targets must have rank 1 (batch_size,), got shape ${formatShape(t!.shape)}`);
    if (!isInt(t!.dtype)) throw new InferError(`targets must be an integer tensor, got ${t!.dtype}`, 'type');
    const b1 = p!.shape[0]!;
    const b2 = t!.shape[0]!;
    if (b1 !== null && b2 !== null && b1 !== b2) {
      throw new InferError(
        `predictions ${formatShape(p!.shape)} and targets ${formatShape(t!.shape)} disagree on the batch size: axis 0 has ${b1} and ${b2}`,
      );
    }
    return tensorType('bool', [b1 ?? b2]);
  },
  impl: ([p, t], a) => {
    const [b, c] = p!.shape as [number, number];
    if (t!.shape[0] !== b)
      throw new InferError(
        `predictions ${formatShape(p!.shape)} and targets ${formatShape(t!.shape)} disagree on the batch size`,
      );
    const out = new Float64Array(b);
    for (let i = 0; i < b; i++) {
      const target = t!.data[i]!;
      if (a.k < 1 || target < 0 || target >= c) continue;
      const v = p!.data[i * c + target]!;
      if (Number.isNaN(v)) continue;
      let higher = 0;
      for (let j = 0; j < c; j++) if (p!.data[i * c + j]! > v) higher++;
      out[i] = higher < a.k ? 1 : 0;
    }
    return new NDArray(out, [b], 'bool');
  },
});

/** A value as nested brackets, NumPy-like: `[[1, 2], [3, 4]]`; NaN and infinities spelled out. */
export function formatValue(x: NDArray): string {
  const one = (v: number): string => (x.dtype === 'bool' ? (v !== 0 ? 'True' : 'False') : String(v));
  if (x.shape.length === 0) return one(x.data[0]!);
  const strides = stridesOf(x.shape);
  const rec = (d: number, off: number): string => {
    const parts: string[] = [];
    for (let i = 0; i < x.shape[d]!; i++) {
      parts.push(d === x.shape.length - 1 ? one(x.data[off + i]!) : rec(d + 1, off + i * strides[d]!));
    }
    return `[${parts.join(', ')}]`;
  };
  return rec(0, 0);
}

/** print_tensor: passes x through unchanged and writes `message` + x's value each time it is evaluated. */
export const printOp = defineOp<{ readonly message: string }>({
  name: 'print',
  kind: 'other',
  arity: 1,
  impure: true,
  infer: ([x]) => x!,
  impl: ([x], a, ctx) => {
    ctx.print(`${a.message}${formatValue(x!)}`);
    return x!;
  },
});
