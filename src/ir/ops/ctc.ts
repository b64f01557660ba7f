// Connectionist temporal classification, in log space so long inputs do not underflow.
// `ctc_loss` is TensorFlow's loss (what K.ctc_batch_cost returns); `ctc_loss_grad` is its
// derivative by the forward-backward (alpha/beta) recursions, for the gradient rule. Keras'
// Theano helpers are in ctc-theano.ts.
import { isInt } from '../dtype.js';
import { NDArray, formatShape } from '../ndarray.js';
import { defineOp } from '../op.js';
import { InferError } from '../errors.js';
import { tensorType, type Dim, type TensorType } from '../types.js';

function logAdd(a: number, b: number): number {
  if (a === -Infinity) return b;
  if (b === -Infinity) return a;
  const m = Math.max(a, b);
  return m + Math.log1p(Math.exp(-Math.abs(a - b)));
}

/** The label with blanks around and between its symbols: b, l1, b, l2, ..., b. */
export function extend(label: readonly number[], blank: number): number[] {
  const ext = [blank];
  for (const l of label) ext.push(l, blank);
  return ext;
}

/** A step may skip the blank before symbol s only when the symbol differs from the one before. */
const canSkip = (ext: readonly number[], s: number, blank: number) =>
  s >= 2 && ext[s] !== blank && ext[s] !== ext[s - 2];

/** The log-probability of class c at step t. */
type LogProb = (t: number, c: number) => number;

/**
 * log alpha[t][s]: log-probability of the paths through l'(0..s) over steps 0..t, ending in s
 * (emission at t included). `lp(t, c)` is the log-probability of class c at step t.
 */
export function ctcAlpha(lp: LogProb, ext: readonly number[], steps: number, blank: number): Float64Array[] {
  const S = ext.length;
  const alpha: Float64Array[] = [];
  for (let t = 0; t < steps; t++) {
    const a = new Float64Array(S).fill(-Infinity);
    for (let s = 0; s < S; s++) {
      let v: number;
      if (t === 0) v = s <= 1 ? 0 : -Infinity;
      else {
        const prev = alpha[t - 1]!;
        v = prev[s]!;
        if (s >= 1) v = logAdd(v, prev[s - 1]!);
        if (canSkip(ext, s, blank)) v = logAdd(v, prev[s - 2]!);
      }
      a[s] = v === -Infinity ? v : v + lp(t, ext[s]!);
    }
    alpha.push(a);
  }
  return alpha;
}

/**
 * log beta[t][s]: paths through l'(s..) over steps t..T-1 that start in s (emission at t included):
 * alpha of the reversed lattice (steps and l' both reversed; a skip joins two cells of one parity,
 * both blank or both symbols, so its test reads the same either way).
 */
export function ctcBeta(lp: LogProb, ext: readonly number[], steps: number, blank: number): Float64Array[] {
  const alphaRev = ctcAlpha((t, c) => lp(steps - 1 - t, c), [...ext].reverse(), steps, blank);
  return alphaRev.reverse().map((a) => a.reverse());
}

interface Sample {
  readonly steps: number;
  readonly ext: number[];
  readonly lp: (t: number, c: number) => number;
}

/** A batched input as ctcSamples reads it: its shape and values. */
export interface CtcValues {
  readonly shape: readonly number[];
  readonly data: ArrayLike<number>;
}

/**
 * Each sample's time steps and label extended with blanks, the batch sizes, lengths and labels
 * checked against log-probabilities of shape (B, T, C) (class C - 1 is the blank).
 */
export function ctcSamples(
  logpShape: readonly number[],
  labels: CtcValues,
  inputLength: CtcValues,
  labelLength: CtcValues,
): { steps: number; ext: number[] }[] {
  const [B, T, C] = logpShape as [number, number, number];
  const L = labels.shape[1]!;
  const blank = C - 1;
  if (labels.shape[0] !== B || inputLength.data.length !== B || labelLength.data.length !== B) {
    throw new InferError(
      `batch sizes differ: log-probabilities ${formatShape(logpShape)}, labels ${formatShape(labels.shape)}, input_length ${formatShape(inputLength.shape)}, label_length ${formatShape(labelLength.shape)}`,
      'value',
    );
  }
  return Array.from({ length: B }, (_, b) => {
    const steps = inputLength.data[b]!;
    const n = labelLength.data[b]!;
    if (!(steps >= 0 && steps <= T))
      throw new InferError(`sample ${b}: input_length ${steps} is outside 0..${T} (the time steps of y_pred)`, 'value');
    if (!(n >= 0 && n <= L))
      throw new InferError(`sample ${b}: label_length ${n} is outside 0..${L} (the width of the labels)`, 'value');
    const label = Array.from({ length: n }, (_, i) => labels.data[b * L + i]!);
    label.forEach((l, i) => {
      if (!(l >= 0 && l < blank))
        throw new InferError(
          `sample ${b}: label ${l} at position ${i} is not a class in 0..${blank - 1} (class ${blank} is the blank; -1 pads labels only past label_length)`,
          'value',
        );
    });
    return { steps, ext: extend(label, blank) };
  });
}

/** Per-sample views of the batched inputs, with the lengths and labels checked. */
function samples(logp: NDArray, labels: NDArray, inputLength: NDArray, labelLength: NDArray): Sample[] {
  const [, T, C] = logp.shape as [number, number, number];
  return ctcSamples(logp.shape, labels, inputLength, labelLength).map(({ steps, ext }, b) => {
    const base = b * T * C;
    return { steps, ext, lp: (t: number, c: number) => logp.data[base + t * C + c]! };
  });
}

/** log P(label | sample): the two ways a path can end (last symbol or the blank after it). */
function logLikelihood(s: Sample, alpha: Float64Array[]): number {
  const S = s.ext.length;
  if (s.steps === 0) return S === 1 ? 0 : -Infinity;
  const last = alpha[s.steps - 1]!;
  return logAdd(last[S - 1]!, S > 1 ? last[S - 2]! : -Infinity);
}

function inferLoss(ins: readonly TensorType[]): { batch: Dim } {
  const [lp, labels, il, ll] = ins as [TensorType, TensorType, TensorType, TensorType];
  if (lp.shape.length !== 3)
    throw new InferError(`log-probabilities must be (samples, time, classes), got shape ${formatShape(lp.shape)}`);
  if (labels.shape.length !== 2)
    throw new InferError(`labels must be (samples, max_label_length), got shape ${formatShape(labels.shape)}`);
  for (const [t, what] of [
    [il, 'input_length'],
    [ll, 'label_length'],
  ] as const) {
    if (t.shape.length !== 1) throw new InferError(`${what} must be (samples,), got shape ${formatShape(t.shape)}`);
    if (!isInt(t.dtype)) throw new InferError(`${what} must be an integer tensor, got ${t.dtype}`, 'type');
  }
  if (!isInt(labels.dtype)) throw new InferError(`labels must be an integer tensor, got ${labels.dtype}`, 'type');
  if (lp.shape[2] === 0) throw new InferError('y_pred needs at least one class (the last is the blank)');
  let batch: Dim = null;
  for (const [t, what] of [
    [lp, 'y_pred'],
    [labels, 'labels'],
    [il, 'input_length'],
    [ll, 'label_length'],
  ] as const) {
    const d = t.shape[0]!;
    if (d !== null && batch !== null && d !== batch)
      throw new InferError(`${what} has ${d} samples but y_pred/labels have ${batch}`);
    if (d !== null) batch = d;
  }
  return { batch };
}

/** -log P(label | log-probabilities) per sample: TensorFlow's ctc_loss on normalized inputs. */
export const ctcLossOp = defineOp<Record<string, never>>({
  name: 'ctc_loss',
  kind: 'other',
  arity: 4,
  infer: (ins) => tensorType(ins[0]!.dtype, [inferLoss(ins).batch]),
  impl: ([lp, labels, il, ll]) => {
    const out = samples(lp!, labels!, il!, ll!).map(
      (s) => -logLikelihood(s, ctcAlpha(s.lp, s.ext, s.steps, lp!.shape[2]! - 1)),
    );
    return new NDArray(out, [out.length], lp!.dtype);
  },
});

/**
 * d ctc_loss[b] / d logp[b, t, c] = -(posterior occupancy of class c at step t):
 * -sum over s with l'(s) = c of exp(alpha[t][s] + beta[t][s] - logp[t, c] - log P). Zero past
 * input_length, and everywhere for a sample with no valid path.
 */
export const ctcLossGradOp = defineOp<Record<string, never>>({
  name: 'ctc_loss_grad',
  kind: 'other',
  arity: 4,
  infer: (ins) => {
    const { batch } = inferLoss(ins);
    return tensorType(ins[0]!.dtype, [batch, ins[0]!.shape[1]!, ins[0]!.shape[2]!]);
  },
  impl: ([lp, labels, il, ll]) => {
    const [, T, C] = lp!.shape as [number, number, number];
    const blank = C - 1;
    const out = new Float64Array(lp!.size);
    samples(lp!, labels!, il!, ll!).forEach((s, b) => {
      const alpha = ctcAlpha(s.lp, s.ext, s.steps, blank);
      const logP = logLikelihood(s, alpha);
      if (logP === -Infinity) return;
      const beta = ctcBeta(s.lp, s.ext, s.steps, blank);
      for (let t = 0; t < s.steps; t++) {
        s.ext.forEach((c, k) => {
          const v = alpha[t]![k]! + beta[t]![k]! - s.lp(t, c) - logP;
          const o = (b * T + t) * C + c;
          if (v !== -Infinity) out[o] = out[o]! - Math.exp(v);
        });
      }
    });
    return new NDArray(out, lp!.shape, lp!.dtype);
  },
});

export const ctcOps = {
  ctc_loss: ctcLossOp,
  ctc_loss_grad: ctcLossGradOp,
} as const;
