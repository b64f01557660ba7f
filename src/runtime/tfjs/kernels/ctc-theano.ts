// Keras 1's Theano CTC helpers on tfjs (src/ir/ops/ctc-theano.ts). Their integer results decide
// shapes (the skip indices, the `active` counts), so those are computed on the host from the
// label values, as TensorFlow.js does for its own data-dependent shapes; the float recursion
// is tfjs ops.
import { InferError } from '../../../ir/errors.js';
import { skipIdxs, type ctcTheanoOps } from '../../../ir/ops/ctc-theano.js';
import type { TF } from '../load.js';
import type { Tensor, TfTableFor, TfTupleKernel } from '../types.js';
import { castTo } from './util.js';

/**
 * One step of the Theano forward recursion (updateLogP in the op record): the first `active`
 * entries of prev rescaled by their max, moved on (stay, advance, skip i -> i + 2), logged back.
 */
function updateLogP(
  tf: TF,
  skip: readonly number[],
  zeros: Tensor,
  active: number,
  curr: Tensor,
  prev: Tensor,
): [number, Tensor] {
  const n = zeros.size;
  const act = Math.max(0, Math.min(active, n));
  const activeSkip = skip.filter((i) => i < active);
  const next = Math.min(Math.max(active + 1, Math.max(-1, ...activeSkip) + 3), n);
  const head = tf.slice(prev, [0], [act]);
  const common = act === 0 ? tf.scalar(-Infinity) : tf.max(head);
  const p = tf.exp(tf.sub(head, common));
  const q = tf.concat([p, tf.slice(zeros, [act], [next - act])]);
  let moved = next === 0 ? q : tf.add(q, tf.concat([tf.zeros([1]), tf.slice(q, [0], [next - 1])]));
  const jumps = activeSkip.filter((i) => i + 2 < next);
  if (jumps.length > 0) {
    const from = tf.gather(p, tf.tensor1d(jumps, 'int32'));
    moved = tf.add(
      moved,
      tf.scatterND(
        tf.tensor2d(
          jumps.map((i) => [i + 2]),
          [jumps.length, 1],
          'int32',
        ),
        from,
        [next],
      ),
    );
  }
  const body = tf.add(tf.add(tf.slice(curr, [0], [next]), tf.log(moved)), common);
  return [next, tf.concat([body, tf.slice(zeros, [next], [n - next])])];
}

const updateLogPKernel: TfTupleKernel<Record<string, never>> = {
  tuple: ([skip, zeros, active, curr, prev], _, { tf }) => {
    const n = zeros!.size;
    if (curr!.size !== n || prev!.size !== n)
      throw new InferError(`zeros, log_p_curr and log_p_prev have lengths ${n}, ${curr!.size}, ${prev!.size}`, 'value');
    const f = (t: Tensor) => castTo(tf, t, 'float32');
    const [next, out] = updateLogP(
      tf,
      Array.from(skip!.dataSync()),
      f(zeros!),
      active!.dataSync()[0]!,
      f(curr!),
      f(prev!),
    );
    return [tf.scalar(next, 'int32'), out];
  },
};

/** ctc_path_probs: forward and reversed recursions; log f + log b - L, and where both reach. */
const pathProbsKernel: TfTupleKernel<{ readonly alpha: number }> = {
  tuple: ([pred, y], a, { tf }) => {
    const [T, C] = pred!.shape as [number, number];
    const ys = Array.from(y!.dataSync());
    const n = ys.length;
    const cls = ys.map((v, s) => {
      if (!(v >= -C && v < C))
        throw new InferError(`Y[${s}] = ${v} is not a class index for ${C} classes (-1 is the blank)`, 'value');
      return v < 0 ? v + C : v;
    });
    const picked = tf.gather(castTo(tf, pred!, 'float32'), tf.tensor1d(cls, 'int32'), 1);
    const L = tf.log(tf.add(tf.mul(picked, 1 - a.alpha), a.alpha / n));
    const zeros = tf.zeros([n]);
    const run = (rows: Tensor[], skip: number[]) => {
      let active = 1;
      let prev = zeros;
      return rows.map((row) => {
        const [next, logp] = updateLogP(tf, skip, zeros, active, row, prev);
        active = next;
        prev = logp;
        return { active, logp };
      });
    };
    if (T === 0) return [tf.zeros([0, n]), tf.zeros([0, n], 'bool')];
    const f = run(tf.unstack(L), skipIdxs(ys));
    const b = run(tf.unstack(tf.reverse(L, [0, 1])), skipIdxs([...ys].reverse()));
    const probs = tf.sub(tf.add(tf.stack(f.map((r) => r.logp)), tf.reverse(tf.stack(b.map((r) => r.logp)), [0, 1])), L);
    const m = new Uint8Array(T * n);
    for (let t = 0; t < T; t++)
      for (let s = 0; s < n; s++) m[t * n + s] = s < f[t]!.active && n - 1 - s < b[T - 1 - t]!.active ? 1 : 0;
    return [probs, tf.tensor(m, [T, n], 'bool')];
  },
};

export const ctcTheanoKernels: TfTableFor<keyof typeof ctcTheanoOps> = {
  // [b, y1, b, y2, ..., b] with b = -1: pairs (b, y_i) then a final b
  ctc_interleave_blanks: ([y], _, { tf }) => {
    const yi = castTo(tf, y!, 'int32');
    const n = yi.size;
    const pairs = tf.reshape(tf.stack([tf.fill([n], -1, 'int32'), yi], 1), [2 * n]);
    return tf.concat([pairs, tf.tensor1d([-1], 'int32')]);
  },
  ctc_create_skip_idxs: ([y], _, { tf }) => {
    const s = skipIdxs(Array.from(y!.dataSync()));
    return tf.tensor1d(s, 'int32');
  },
  ctc_update_log_p: updateLogPKernel,
  ctc_path_probs: pathProbsKernel,
};
