// CTC decoding and TensorFlow's dense-to-sparse label conversion, as Keras 2.3's ctc_decode and
// ctc_label_dense_to_sparse use them. The results' sizes depend on the data (decoded lengths, the
// number of labels), so these are host-side ops: the reference implementation is the meaning,
// and the tfjs kernels run the same search on the host (src/runtime/tfjs/kernels/ctc-decode.ts),
// as TensorFlow runs its own decoders on the CPU.
import { isInt } from '../dtype.js';
import { NDArray, formatShape } from '../ndarray.js';
import { defineOp } from '../op.js';
import { InferError } from '../errors.js';
import { tensorType, tupleType, type TensorType } from '../types.js';

export interface CtcDecodeAttrs {
  readonly greedy: boolean;
  readonly beam_width: number;
  readonly top_paths: number;
  readonly merge_repeated: boolean;
}

const logSumExp = (a: number, b: number): number => {
  if (a === -Infinity) return b;
  if (b === -Infinity) return a;
  const m = Math.max(a, b);
  return m + Math.log(Math.exp(a - m) + Math.exp(b - m));
};

/**
 * TensorFlow's ctc_greedy_decoder on one sample (`row(t, c)` are its inputs, C classes, blank C - 1):
 * the first largest class at each step; blanks dropped, and a class equal to the previous step's
 * dropped when merge_repeated. Score: minus the sum of each step's largest input.
 */
export function greedyDecode(
  row: (t: number, c: number) => number,
  T: number,
  C: number,
  mergeRepeated: boolean,
): { path: number[]; score: number } {
  const path: number[] = [];
  let score = 0;
  let prev = -1;
  for (let t = 0; t < T; t++) {
    let best = 0;
    for (let c = 1; c < C; c++) if (row(t, c) > row(t, best)) best = c;
    score -= row(t, best);
    if (best !== C - 1 && !(mergeRepeated && best === prev)) path.push(best);
    prev = best;
  }
  return { path, score };
}

interface Prob {
  blank: number;
  label: number;
  total: number;
}
const zeroProb = (): Prob => ({ blank: -Infinity, label: -Infinity, total: -Infinity });

interface Entry {
  readonly label: number;
  readonly parent: Entry | null;
  readonly children: Map<number, Entry>;
  oldp: Prob;
  newp: Prob;
}

/**
 * TensorFlow's ctc_beam_search_decoder (its default scorer) on one sample: a prefix tree whose
 * beam keeps the `beamWidth` prefixes of largest total probability. Each step's inputs are
 * normalised by a log-softmax over the classes (TensorFlow's decoder op), so a path's score is
 * its log-probability under the per-step softmax of the inputs. A prefix already in the beam gets
 * mass from its parent (through a blank when the labels repeat); a new child starts from its
 * parent's previous probability. Returns the `topPaths` best prefixes, best first.
 */
export function beamDecode(
  row: (t: number, c: number) => number,
  T: number,
  C: number,
  beamWidth: number,
  topPaths: number,
  mergeRepeated: boolean,
): { path: number[]; logp: number }[] {
  const blank = C - 1;
  const root: Entry = {
    label: -1,
    parent: null,
    children: new Map(),
    oldp: zeroProb(),
    newp: { blank: 0, label: -Infinity, total: 0 },
  };
  let leaves: Entry[] = [root];
  const active = (e: Entry): boolean => e.newp.total !== -Infinity;
  const bottom = (): Entry => leaves.reduce((m, e) => (e.newp.total < m.newp.total ? e : m));
  const push = (e: Entry): void => {
    if (leaves.length < beamWidth) {
      leaves.push(e);
      return;
    }
    const b = bottom();
    if (e.newp.total > b.newp.total) leaves[leaves.indexOf(b)] = e;
  };
  for (let t = 0; t < T; t++) {
    // each step normalised by a log-softmax over the classes (TensorFlow's decoder), max-shifted
    let max = -Infinity;
    for (let c = 0; c < C; c++) max = Math.max(max, row(t, c));
    let sum = 0;
    for (let c = 0; c < C; c++) sum += Math.exp(row(t, c) - max);
    const norm = max + Math.log(sum);
    const input = (c: number): number => row(t, c) - norm;
    const branches = [...leaves].sort((a, b) => b.newp.total - a.newp.total);
    leaves = [];
    for (const b of branches) b.oldp = { ...b.newp };
    for (const b of branches) {
      if (b.parent !== null) {
        if (active(b.parent)) {
          const previous = b.label === b.parent.label ? b.parent.oldp.blank : b.parent.oldp.total;
          b.newp.label = logSumExp(b.newp.label, previous);
        }
        b.newp.label += input(b.label);
      }
      b.newp.blank = b.oldp.total + input(blank);
      b.newp.total = logSumExp(b.newp.blank, b.newp.label);
      push(b);
    }
    const candidate = (p: Prob): boolean =>
      p.total > -Infinity && (leaves.length < beamWidth || p.total > bottom().newp.total);
    for (const b of branches) {
      if (!candidate(b.oldp)) continue;
      for (let label = 0; label < C - 1; label++) {
        let c = b.children.get(label);
        if (c === undefined) {
          c = { label, parent: b, children: new Map(), oldp: zeroProb(), newp: zeroProb() };
          b.children.set(label, c);
        }
        if (active(c)) continue;
        const previous = label === b.label ? b.oldp.blank : b.oldp.total;
        c.newp = { blank: -Infinity, label: input(label) + previous, total: input(label) + previous };
        if (candidate(c.newp)) {
          if (leaves.length === beamWidth) bottom().newp = zeroProb();
          push(c);
        } else {
          c.oldp = zeroProb();
          c.newp = zeroProb();
        }
      }
    }
  }
  if (topPaths > leaves.length) {
    throw new InferError(
      `ctc_decode: the beam holds ${leaves.length} prefixes, fewer than top_paths ${topPaths} (TensorFlow: "Less leaves in the beam search than requested")`,
      'value',
    );
  }
  const best = [...leaves].sort((a, b) => b.newp.total - a.newp.total).slice(0, topPaths);
  return best.map((e) => {
    const labels: number[] = [];
    let prev = -1;
    for (let n: Entry = e; n.parent !== null; n = n.parent) {
      if (!mergeRepeated || n.label !== prev) labels.push(n.label);
      prev = n.label;
    }
    return { path: labels.reverse(), logp: e.newp.total };
  });
}

function checkDecodeInputs(y: TensorType, len: TensorType, a: CtcDecodeAttrs): void {
  if (y.shape.length !== 3)
    throw new InferError(`y_pred must be (samples, time, classes), got shape ${formatShape(y.shape)}`);
  if (len.shape.length !== 1 || !isInt(len.dtype))
    throw new InferError(
      `input_length must be an integer vector (samples,), got ${len.dtype} ${formatShape(len.shape)}`,
    );
  if (y.shape[0] !== null && len.shape[0] !== null && y.shape[0] !== len.shape[0]) {
    throw new InferError(
      `y_pred shape ${formatShape(y.shape)} and input_length shape ${formatShape(len.shape)} disagree on the number of samples`,
    );
  }
  if (!a.greedy && !(Number.isInteger(a.beam_width) && a.beam_width >= 1))
    throw new InferError(`beam_width must be a positive integer, got ${a.beam_width}`, 'value');
  if (!Number.isInteger(a.top_paths) || a.top_paths < 1 || (a.greedy && a.top_paths !== 1))
    throw new InferError(`top_paths must be a positive integer (1 when greedy), got ${a.top_paths}`, 'value');
  if (!a.greedy && a.top_paths > a.beam_width)
    throw new InferError(
      `top_paths ${a.top_paths} is larger than beam_width ${a.beam_width} (TensorFlow: "requested more paths than the beam width")`,
      'value',
    );
}

/**
 * (logp (samples, time, classes), input_length (samples,)) -> a tuple of `top_paths` decoded
 * label matrices (samples, time) int32 padded with -1, then the scores (samples, top_paths):
 * greedy, minus the sum of each step's largest input; beam search, the shifted log-probability.
 */
/**
 * Every sample of a (B, T, C) batch of log-probabilities decoded (greedy or beam): `top_paths`
 * label rows of length T per sample (-1 past the path) and their scores. Shared by the reference
 * and the tensorflow backend (which decodes on the host, as TensorFlow does).
 */
export function decodeBatch(
  data: ArrayLike<number>,
  lens: ArrayLike<number>,
  [B, T, C]: readonly [number, number, number],
  a: CtcDecodeAttrs,
): { paths: Float64Array[]; scores: Float64Array } {
  if (lens.length !== B) throw new InferError(`input_length has ${lens.length} entries for ${B} samples`, 'value');
  const paths = Array.from({ length: a.top_paths }, () => new Float64Array(B * T).fill(-1));
  const scores = new Float64Array(B * a.top_paths);
  for (let b = 0; b < B; b++) {
    const L = lens[b]!;
    if (!(L >= 0 && L <= T))
      throw new InferError(`input_length[${b}] = ${L} is outside [0, ${T}] (the time axis of y_pred)`, 'value');
    const row = (t: number, c: number): number => data[(b * T + t) * C + c]!;
    const found = a.greedy
      ? [((r) => ({ path: r.path, logp: r.score }))(greedyDecode(row, L, C, true))]
      : beamDecode(row, L, C, a.beam_width, a.top_paths, a.merge_repeated);
    found.forEach((f, p) => {
      f.path.forEach((lab, i) => {
        paths[p]![b * T + i] = lab;
      });
      scores[b * a.top_paths + p] = f.logp;
    });
  }
  return { paths, scores };
}

export const ctcDecodeOp = defineOp<CtcDecodeAttrs>({
  name: 'ctc_decode',
  kind: 'other',
  arity: 2,
  infer: ([y, len], a) => {
    checkDecodeInputs(y!, len!, a);
    const [B, T] = [y!.shape[0]!, y!.shape[1]!];
    const dt = y!.dtype === 'float64' ? 'float64' : 'float32';
    return tupleType([
      ...Array.from({ length: a.top_paths }, () => tensorType('int32', [B, T])),
      tensorType(dt, [B, a.top_paths]),
    ]);
  },
  impl: () => {
    throw new Error('internal: ctc_decode is tuple-valued');
  },
  implTuple: ([y, len], a) => {
    const [B, T, C] = y!.shape as [number, number, number];
    const { paths, scores } = decodeBatch(y!.data, len!.data, [B, T, C], a);
    const dt = y!.dtype === 'float64' ? 'float64' : 'float32';
    return [...paths.map((p) => new NDArray(p, [B, T], 'int32')), new NDArray(scores, [B, a.top_paths], dt)];
  },
});

/**
 * TensorFlow's (Keras') ctc_label_dense_to_sparse(labels (samples, max_len), label_lengths
 * (samples,)) as the COO triple: indices (n, 2) of the entries [b, j] with j < label_lengths[b],
 * row by row; their values; and the dense shape [samples, max_len].
 */
export const ctcLabelDenseToSparseOp = defineOp<Record<string, never>>({
  name: 'ctc_label_dense_to_sparse',
  kind: 'other',
  arity: 2,
  infer: ([labels, lens]) => {
    if (labels!.shape.length !== 2)
      throw new InferError(`labels must be (samples, max_label_length), got shape ${formatShape(labels!.shape)}`);
    if (lens!.shape.length !== 1 || !isInt(lens!.dtype))
      throw new InferError(
        `label_lengths must be an integer vector (samples,), got ${lens!.dtype} ${formatShape(lens!.shape)}`,
      );
    return tupleType([tensorType('int32', [null, 2]), tensorType(labels!.dtype, [null]), tensorType('int32', [2])]);
  },
  impl: () => {
    throw new Error('internal: ctc_label_dense_to_sparse is tuple-valued');
  },
  implTuple: ([labels, lens]) => {
    const [B, L] = labels!.shape as [number, number];
    if (lens!.size !== B) throw new InferError(`label_lengths has ${lens!.size} entries for ${B} samples`, 'value');
    const idx: number[] = [];
    const vals: number[] = [];
    for (let b = 0; b < B; b++) {
      const n = lens!.data[b]!;
      if (!(n >= 0 && n <= L)) throw new InferError(`label_lengths[${b}] = ${n} is outside [0, ${L}]`, 'value');
      for (let j = 0; j < n; j++) {
        idx.push(b, j);
        vals.push(labels!.data[b * L + j]!);
      }
    }
    return [
      new NDArray(idx, [vals.length, 2], 'int32'),
      new NDArray(vals, [vals.length], labels!.dtype),
      new NDArray([B, L], [2], 'int32'),
    ];
  },
});

/**
 * A decoded label matrix (samples, time) int32, each row its labels then -1s, cut to the longest
 * decoding: (samples, width), width the largest count of labels in a row. TensorFlow's dense
 * form of the decoders' sparse result (its dense_shape is [samples, longest decoding]); the width
 * depends on the data, so a compiled function with it runs the reference interpreter.
 */
export const ctcTrimOp = defineOp<Record<string, never>>({
  name: 'ctc_trim',
  kind: 'other',
  arity: 1,
  infer: ([p]) => {
    if (p!.shape.length !== 2 || p!.dtype !== 'int32')
      throw new InferError(
        `decoded labels must be an int32 matrix (samples, time), got ${p!.dtype} ${formatShape(p!.shape)}`,
      );
    return tensorType('int32', [p!.shape[0]!, null]);
  },
  impl: ([p]) => {
    const [B, T] = p!.shape as [number, number];
    const { data, width } = trimDecoded(p!.data, B, T);
    return new NDArray(data, [B, width], 'int32');
  },
});

/** ctc_trim on numbers (shared with the tfjs kernel): rows of B x T labels cut to the longest run before a -1. */
export function trimDecoded(p: ArrayLike<number>, B: number, T: number): { data: Float64Array; width: number } {
  let width = 0;
  for (let b = 0; b < B; b++) {
    let n = 0;
    while (n < T && p[b * T + n]! >= 0) n++;
    width = Math.max(width, n);
  }
  const data = new Float64Array(B * width);
  for (let b = 0; b < B; b++) for (let i = 0; i < width; i++) data[b * width + i] = p[b * T + i]!;
  return { data, width };
}

export const ctcDecodeOps = {
  ctc_trim: ctcTrimOp,
  ctc_decode: ctcDecodeOp,
  ctc_label_dense_to_sparse: ctcLabelDenseToSparseOp,
} as const;
