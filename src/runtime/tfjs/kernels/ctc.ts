// CTC on tfjs (tfjs has no CTC op): the log-space alpha/beta recursions of src/ir/ops/ctc.ts
// run batched over samples as tfjs ops, one step of the time loop at a time. Integer
// bookkeeping (label lengths, extended labels, which positions may skip) is read on the host,
// as the reference's checks need those values anyway; every float is computed by tfjs.
import { ctcSamples, type ctcOps } from '../../../ir/ops/ctc.js';
import type { TF } from '../load.js';
import type { Tensor, TfTableFor } from '../types.js';
import { castTo } from './util.js';

/** log(exp(a) + exp(b) + ...) elementwise; all -inf gives -inf. */
export function logAddExp(tf: TF, ...xs: Tensor[]): Tensor {
  const m = xs.slice(1).reduce((p, q) => tf.maximum(p, q), xs[0]!);
  const safe = tf.where(tf.isFinite(m), m, tf.zerosLike(m));
  const sum = xs.map((x) => tf.exp(tf.sub(x, safe))).reduce((p, q) => tf.add(p, q));
  return tf.add(safe, tf.log(sum));
}

const NEG = -Infinity;

/** Along axis 1 of (B, S): x moved k places right (k > 0) or left (k < 0), -inf shifted in. */
function shift(tf: TF, x: Tensor, k: number): Tensor {
  const [b, s] = x.shape as [number, number];
  const m = Math.abs(k);
  if (m >= s) return tf.fill([b, s], NEG);
  const fill = tf.fill([b, m], NEG);
  return k > 0
    ? tf.concat([fill, tf.slice(x, [0, 0], [b, s - m])], 1)
    : tf.concat([tf.slice(x, [0, m], [b, s - m]), fill], 1);
}

/** Host-side layout of a batch: extended labels padded to S, masks over (B, S). */
interface Layout {
  readonly B: number;
  readonly T: number;
  readonly C: number;
  readonly S: number;
  readonly steps: number[];
  readonly sizes: number[];
  /** ext[b * S + s]: class at extended position s (0 where s >= sizes[b]). */
  readonly ext: Int32Array;
}

/** Reads and checks lengths and labels as the reference does (ctcSamples). */
function layout(lp: Tensor, labels: Tensor, il: Tensor, ll: Tensor): Layout {
  const [B, T, C] = lp.shape as [number, number, number];
  const host = (t: Tensor) => ({ shape: t.shape, data: t.dataSync() });
  const samples = ctcSamples(lp.shape, host(labels), host(il), host(ll));
  const exts = samples.map((s) => s.ext);
  const S = Math.max(1, ...exts.map((e) => e.length));
  const ext = new Int32Array(B * S);
  exts.forEach((e, b) => ext.set(e, b * S));
  return { B, T, C, S, steps: samples.map((s) => s.steps), sizes: exts.map((e) => e.length), ext };
}

/** A (B, S) bool mask from a host predicate. */
function mask(tf: TF, l: Layout, f: (b: number, s: number) => boolean): Tensor {
  const m = new Uint8Array(l.B * l.S);
  for (let b = 0; b < l.B; b++) for (let s = 0; s < l.S; s++) m[b * l.S + s] = f(b, s) ? 1 : 0;
  return tf.tensor(m, [l.B, l.S], 'bool');
}

/** Per-sample (B, 1) bool: f(b). */
function perSample(tf: TF, l: Layout, f: (b: number) => boolean): Tensor {
  return tf.tensor(
    Uint8Array.from(l.steps, (_, b) => (f(b) ? 1 : 0)),
    [l.B, 1],
    'bool',
  );
}

/** Whether extended position s may be reached from s - 2 (a symbol unlike the one before it). */
function canSkip(l: Layout, b: number, s: number): boolean {
  const e = (k: number) => l.ext[b * l.S + k]!;
  return s >= 2 && s < l.sizes[b]! && e(s) !== l.C - 1 && e(s) !== e(s - 2);
}

/** Emissions lpE[t]: (B, S) log-probabilities of each extended position's class, -inf past a label. */
function emissions(tf: TF, lp: Tensor, l: Layout): Tensor[] {
  const idx = new Int32Array(l.B * l.T * l.S);
  for (let b = 0; b < l.B; b++)
    for (let t = 0; t < l.T; t++)
      for (let s = 0; s < l.S; s++) idx[(b * l.T + t) * l.S + s] = (b * l.T + t) * l.C + l.ext[b * l.S + s]!;
  const all = tf.reshape(tf.gather(tf.reshape(lp, [-1]), tf.tensor(idx, [idx.length], 'int32')), [l.B, l.T, l.S]);
  const inside = tf.expandDims(
    mask(tf, l, (b, s) => s < l.sizes[b]!),
    1,
  );
  const e = tf.where(tf.logicalAnd(inside, tf.ones(all.shape, 'bool')), all, tf.fill(all.shape, NEG));
  return tf.unstack(e, 1);
}

/** alpha[t] for every step (B, S), as ctcAlpha. */
function alphas(tf: TF, e: Tensor[], l: Layout): Tensor[] {
  const skip = mask(tf, l, (b, s) => canSkip(l, b, s));
  const first = mask(tf, l, (_, s) => s <= 1);
  const neg = tf.fill([l.B, l.S], NEG);
  const out: Tensor[] = [];
  for (let t = 0; t < l.T; t++) {
    if (t === 0) out.push(tf.where(first, e[0]!, neg));
    else {
      const prev = out[t - 1]!;
      out.push(tf.add(logAddExp(tf, prev, shift(tf, prev, 1), tf.where(skip, shift(tf, prev, 2), neg)), e[t]!));
    }
  }
  return out;
}

/** log P(label | sample) (B,): the paths ending in the last symbol or the blank after it. */
function logLikelihood(tf: TF, a: Tensor[], l: Layout): Tensor {
  if (l.T === 0)
    return tf.tensor(
      l.sizes.map((n) => (n === 1 ? 0 : NEG)),
      [l.B],
      'float32',
    );
  // alpha at each sample's last step
  let last = tf.fill([l.B, l.S], NEG);
  a.forEach((at, t) => {
    last = tf.where(
      perSample(tf, l, (b) => l.steps[b] === t + 1),
      at,
      last,
    );
  });
  const flat = tf.reshape(last, [-1]);
  const at = (k: (b: number) => number) =>
    tf.gather(
      flat,
      tf.tensor(
        Int32Array.from(l.sizes, (_, b) => b * l.S + Math.max(k(b), 0)),
        [l.B],
        'int32',
      ),
    );
  const end = at((b) => l.sizes[b]! - 1);
  const before = tf.where(
    tf.reshape(
      perSample(tf, l, (b) => l.sizes[b]! > 1),
      [l.B],
    ),
    at((b) => l.sizes[b]! - 2),
    tf.fill([l.B], NEG),
  );
  const ll = logAddExp(tf, end, before);
  const none = tf.tensor(
    l.sizes.map((n) => (n === 1 ? 0 : NEG)),
    [l.B],
    'float32',
  );
  return tf.where(
    tf.reshape(
      perSample(tf, l, (b) => l.steps[b] === 0),
      [l.B],
    ),
    none,
    ll,
  );
}

/** beta[t] (B, S), as ctcBeta, each sample starting at its own last step (-inf after it). */
function betas(tf: TF, e: Tensor[], l: Layout): Tensor[] {
  const skip2 = mask(tf, l, (b, s) => canSkip(l, b, s + 2));
  const tail = mask(tf, l, (b, s) => s >= l.sizes[b]! - 2);
  const neg = tf.fill([l.B, l.S], NEG);
  const out: Tensor[] = new Array<Tensor>(l.T);
  let next = neg;
  for (let t = l.T - 1; t >= 0; t--) {
    const rec = tf.add(logAddExp(tf, next, shift(tf, next, -1), tf.where(skip2, shift(tf, next, -2), neg)), e[t]!);
    const init = tf.where(tail, e[t]!, neg);
    const b = tf.where(
      perSample(tf, l, (k) => l.steps[k] === t + 1),
      init,
      tf.where(
        perSample(tf, l, (k) => t + 1 < l.steps[k]!),
        rec,
        neg,
      ),
    );
    out[t] = b;
    next = b;
  }
  return out;
}

export const ctcKernels: TfTableFor<keyof typeof ctcOps> = {
  ctc_loss: ([lp, labels, il, ll], _, { tf }) => {
    const l = layout(lp!, labels!, il!, ll!);
    const x = castTo(tf, lp!, 'float32');
    return tf.neg(logLikelihood(tf, alphas(tf, emissions(tf, x, l), l), l));
  },
  // -(posterior occupancy of each class at each step): sum over positions s of class c of
  // exp(alpha + beta - lpE - log P); zero past input_length and for samples with no path
  ctc_loss_grad: ([lp, labels, il, ll], _, { tf }) => {
    const l = layout(lp!, labels!, il!, ll!);
    const x = castTo(tf, lp!, 'float32');
    const e = emissions(tf, x, l);
    const a = alphas(tf, e, l);
    const b = betas(tf, e, l);
    const logP = tf.reshape(logLikelihood(tf, a, l), [l.B, 1]);
    const neg = tf.fill([l.B, l.S], NEG);
    const occ = a.map((at, t) => {
      const ok = tf.logicalAnd(
        tf.logicalAnd(tf.isFinite(at), tf.isFinite(b[t]!)),
        tf.logicalAnd(tf.isFinite(logP), tf.ones([l.B, l.S], 'bool')),
      );
      return tf.exp(tf.where(ok, tf.sub(tf.sub(tf.add(at, b[t]!), e[t]!), logP), neg));
    });
    if (l.T === 0) return tf.zeros([l.B, 0, l.C]);
    const classes = tf.oneHot(tf.tensor(l.ext, [l.B, l.S], 'int32'), l.C);
    return tf.neg(tf.matMul(tf.stack(occ, 1), classes));
  },
};
