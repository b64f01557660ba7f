// Keras 1's Theano CTC helpers, one sample at a time, with their Theano meaning: labels are
// interleaved with blanks written -1 (Python's index of the last class), and the recursion
// tracks how many leading positions are reachable (`active`) instead of using -inf.
import { isInt, promote } from '../dtype.js';
import { NDArray, formatShape } from '../ndarray.js';
import { defineOp } from '../op.js';
import { InferError } from '../errors.js';
import { tensorType, tupleType, type Dim, type TensorType } from '../types.js';
import { extend } from './ctc.js';

function checkLabels(t: TensorType, what: string): void {
  if (t.shape.length !== 1) throw new InferError(`${what} must be a vector, got shape ${formatShape(t.shape)}`);
  if (!isInt(t.dtype) || t.dtype === 'uint8')
    throw new InferError(`${what} must be a signed integer vector (blanks are -1), got ${t.dtype}`, 'type');
}

/** An attribute-free op of one label vector Y (checked first), its result's type and its values. */
function labelOp(name: string, out: (y: TensorType) => TensorType, impl: (y: NDArray) => NDArray) {
  return defineOp<Record<string, never>>({
    name,
    kind: 'other',
    arity: 1,
    infer: ([y]) => {
      checkLabels(y!, 'Y');
      return out(y!);
    },
    impl: ([y]) => impl(y!),
  });
}

/** [b, y1, b, y2, ..., b] with b = -1. */
export const ctcInterleaveBlanksOp = labelOp(
  'ctc_interleave_blanks',
  (y) => tensorType(y.dtype, [y.shape[0] === null ? null : 2 * y.shape[0]! + 1]),
  (y) => new NDArray(extend(Array.from(y.data), -1), [2 * y.size + 1], y.dtype),
);

/** Theano's skip indices: the odd positions i < n - 2 of an interleaved label with Y[i] != Y[i + 2]. */
export function skipIdxs(y: readonly number[]): number[] {
  const out: number[] = [];
  for (let k = 0; k < Math.floor((y.length - 3) / 2); k++) {
    const i = 2 * k + 1;
    if (y[i] !== y[i + 2]) out.push(i);
  }
  return out;
}

export const ctcCreateSkipIdxsOp = labelOp(
  'ctc_create_skip_idxs',
  () => tensorType('int64', [null]), // how many depends on the values
  (y) => {
    const s = skipIdxs(Array.from(y.data));
    return new NDArray(s, [s.length], 'int64');
  },
);

/**
 * One step of the Theano forward recursion over an interleaved label of length n. Only the
 * first `active` entries of log_p_prev are reachable; they are rescaled by their max, moved
 * one position on (stay, advance, and skip from i to i + 2 for skip indices i < active), and
 * the next `active` count is returned with log_p_next (entries past it copied from `zeros`).
 */
function updateLogP(
  skip: readonly number[],
  zeros: ArrayLike<number>,
  active: number,
  curr: ArrayLike<number>,
  prev: ArrayLike<number>,
): [number, Float64Array] {
  const n = zeros.length;
  const act = Math.max(0, Math.min(active, n));
  const activeSkip = skip.filter((i) => i < active);
  const next = Math.min(Math.max(active + 1, Math.max(-1, ...activeSkip) + 3), n);
  let common = -Infinity;
  for (let s = 0; s < act; s++) common = Math.max(common, prev[s]!);
  const p = Array.from({ length: act }, (_, s) => Math.exp(prev[s]! - common));
  const q = Array.from({ length: next }, (_, s) => (s < act ? p[s]! : zeros[s]!));
  const moved = q.map((v, s) => (s === 0 ? v : v + q[s - 1]!));
  for (const i of activeSkip) if (i + 2 < next) moved[i + 2] = moved[i + 2]! + p[i]!;
  const out = Float64Array.from(zeros);
  for (let s = 0; s < next; s++) out[s] = curr[s]! + Math.log(moved[s]!) + common;
  return [next, out];
}

export const ctcUpdateLogPOp = defineOp<Record<string, never>>({
  name: 'ctc_update_log_p',
  kind: 'other',
  arity: 5,
  infer: ([skip, zeros, active, curr, prev]) => {
    if (skip!.shape.length !== 1 || !isInt(skip!.dtype))
      throw new InferError(`skip_idxs must be an integer vector, got ${skip!.dtype} ${formatShape(skip!.shape)}`);
    if (active!.shape.length !== 0 || !isInt(active!.dtype))
      throw new InferError(`active must be an integer scalar, got ${active!.dtype} ${formatShape(active!.shape)}`);
    let n: Dim = null;
    for (const [t, what] of [
      [zeros, 'zeros'],
      [curr, 'log_p_curr'],
      [prev, 'log_p_prev'],
    ] as const) {
      if (t!.shape.length !== 1) throw new InferError(`${what} must be a vector, got shape ${formatShape(t!.shape)}`);
      const d = t!.shape[0]!;
      if (d !== null && n !== null && d !== n) throw new InferError(`${what} has length ${d} but the others have ${n}`);
      if (d !== null) n = d;
    }
    const dt = promote(promote(zeros!.dtype, curr!.dtype), prev!.dtype);
    return tupleType([tensorType('int32', []), tensorType(dt, [n])]);
  },
  impl: () => {
    throw new Error('internal: ctc_update_log_p is tuple-valued');
  },
  implTuple: ([skip, zeros, active, curr, prev]) => {
    const n = zeros!.size;
    if (curr!.size !== n || prev!.size !== n)
      throw new InferError(`zeros, log_p_curr and log_p_prev have lengths ${n}, ${curr!.size}, ${prev!.size}`, 'value');
    const [next, out] = updateLogP(Array.from(skip!.data), zeros!.data, active!.data[0]!, curr!.data, prev!.data);
    const dt = promote(promote(zeros!.dtype, curr!.dtype), prev!.dtype);
    return [new NDArray([next], [], 'int32'), new NDArray(out, [n], dt)];
  },
});

/**
 * Theano's ctc_path_probs(predict, Y, alpha): with L[t, s] = log((1 - alpha) predict[t, Y[s]] +
 * alpha / n) over an interleaved label Y of length n, runs the recursion forward and on the
 * reversed problem, and returns log_probs[t, s] = log f[t, s] + log b[t, s] - L[t, s] (the
 * log-probability of the paths through s at t) and the mask of cells both recursions reach.
 */
export const ctcPathProbsOp = defineOp<{ readonly alpha: number }>({
  name: 'ctc_path_probs',
  kind: 'other',
  arity: 2,
  infer: ([pred, y], a) => {
    if (pred!.shape.length !== 2)
      throw new InferError(`predict must be (time, classes), got shape ${formatShape(pred!.shape)}`);
    checkLabels(y!, 'Y');
    if (typeof a.alpha !== 'number' || !Number.isFinite(a.alpha))
      throw new InferError(`alpha must be a finite number, got ${String(a.alpha)}`, 'value');
    const dt = pred!.dtype === 'float64' ? 'float64' : 'float32';
    return tupleType([
      tensorType(dt, [pred!.shape[0]!, y!.shape[0]!]),
      tensorType('bool', [pred!.shape[0]!, y!.shape[0]!]),
    ]);
  },
  impl: () => {
    throw new Error('internal: ctc_path_probs is tuple-valued');
  },
  implTuple: ([pred, y], a) => {
    const [T, C] = pred!.shape as [number, number];
    const ys = Array.from(y!.data);
    const n = ys.length;
    const cls = ys.map((v, s) => {
      if (!(v >= -C && v < C))
        throw new InferError(`Y[${s}] = ${v} is not a class index for ${C} classes (-1 is the blank)`, 'value');
      return v < 0 ? v + C : v;
    });
    const L = Array.from({ length: T }, (_, t) =>
      cls.map((c) => Math.log((1 - a.alpha) * pred!.data[t * C + c]! + a.alpha / n)),
    );
    const zeros = new Float64Array(n);
    const run = (rows: number[][], skip: number[]) => {
      let active = 1;
      let prev: ArrayLike<number> = zeros;
      return rows.map((row) => {
        const [next, logp] = updateLogP(skip, zeros, active, row, prev);
        active = next;
        prev = logp;
        return { active, logp };
      });
    };
    const f = run(L, skipIdxs(ys));
    const b = run(
      L.map((_, t) => [...L[T - 1 - t]!].reverse()),
      skipIdxs([...ys].reverse()),
    );
    const probs = new Float64Array(T * n);
    const mask = new Float64Array(T * n);
    for (let t = 0; t < T; t++) {
      const bt = b[T - 1 - t]!;
      for (let s = 0; s < n; s++) {
        probs[t * n + s] = f[t]!.logp[s]! + bt.logp[n - 1 - s]! - L[t]![s]!;
        mask[t * n + s] = s < f[t]!.active && n - 1 - s < bt.active ? 1 : 0;
      }
    }
    const dt = pred!.dtype === 'float64' ? 'float64' : 'float32';
    return [new NDArray(probs, [T, n], dt), new NDArray(mask, [T, n], 'bool')];
  },
});

export const ctcTheanoOps = {
  ctc_interleave_blanks: ctcInterleaveBlanksOp,
  ctc_create_skip_idxs: ctcCreateSkipIdxsOp,
  ctc_update_log_p: ctcUpdateLogPOp,
  ctc_path_probs: ctcPathProbsOp,
} as const;
