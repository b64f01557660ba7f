// K.ctc_decode (greedy and beam search, TensorFlow's) and K.ctc_label_dense_to_sparse, on every
// target, against independent numbers: every alignment enumerated (the exact probability of each
// labeling) and small cases worked by hand.
import { expect } from 'chai';
import { backend as K, NDArray, ShapeError, ValueError } from '../../src/index.js';
import { expectClose } from '../helpers/assert.js';
import { opTable } from '../helpers/table.js';
import { runsCase, targets } from '../helpers/targets.js';

const EPS = 1e-7; // K.epsilon(): the decoders see log(y_pred + epsilon)

/** Every labeling's probability by enumerating all C^T alignments of probs[0..T) (blank C - 1). */
function labelings(probs: number[][], T: number): Map<string, number> {
  const C = probs[0]!.length;
  const out = new Map<string, number>();
  const path: number[] = [];
  const walk = (t: number, p: number): void => {
    if (t === T) {
      const lab = path.filter((c, i) => c !== C - 1 && (i === 0 || c !== path[i - 1]));
      const k = lab.join(',');
      out.set(k, (out.get(k) ?? 0) + p);
      return;
    }
    for (let c = 0; c < C; c++) { path.push(c); walk(t + 1, p * (probs[t]![c]! + EPS)); path.pop(); }
  };
  walk(0, 1);
  return out;
}

/** TensorFlow's beam score: log P(labeling) minus each step's largest log input. */
const shift = (probs: number[][], T: number): number => probs.slice(0, T).reduce((s, r) => s + Math.log(Math.max(...r) + EPS), 0);

/** The k most probable labelings, padded with -1 to `width`, and their shifted log-probabilities. */
function exactTop(batch: number[][][], lens: number[], k: number): { paths: number[][][]; scores: number[][] } {
  const paths: number[][][] = Array.from({ length: k }, () => []);
  const scores: number[][] = [];
  batch.forEach((probs, b) => {
    const ranked = [...labelings(probs, lens[b]!).entries()].sort((x, y) => y[1] - x[1]).slice(0, k);
    ranked.forEach(([lab, p], i) => {
      const seq = lab === '' ? [] : lab.split(',').map(Number);
      paths[i]!.push([...seq, ...new Array<number>(probs.length - seq.length).fill(-1)]);
    });
    scores.push(ranked.map(([, p]) => Math.log(p) - shift(probs, lens[b]!)));
  });
  return { paths, scores };
}

/** Greedy by hand: per step the first largest class; repeats merged, blanks dropped; minus the sum of the maxima. */
function greedyRef(batch: number[][][], lens: number[]): { path: number[][]; score: number[][] } {
  const path: number[][] = [];
  const score: number[][] = [];
  batch.forEach((probs, b) => {
    const C = probs[0]!.length;
    const best = probs.slice(0, lens[b]).map((r) => r.indexOf(Math.max(...r)));
    const seq = best.filter((c, i) => c !== C - 1 && (i === 0 || c !== best[i - 1]));
    path.push([...seq, ...new Array<number>(probs.length - seq.length).fill(-1)]);
    score.push([-shift(probs, lens[b]!)]);
  });
  return { path, score };
}

// 2 samples, 5 steps, 3 classes (labels 0 and 1, blank 2): 63 prefixes at most, so a beam of 100
// never prunes and TensorFlow's beam search is exact.
const small = [
  [[0.5, 0.3, 0.2], [0.1, 0.5, 0.4], [0.3, 0.3, 0.4], [0.6, 0.1, 0.3], [0.2, 0.2, 0.6]],
  [[0.2, 0.2, 0.6], [0.45, 0.15, 0.4], [0.1, 0.1, 0.8], [0.45, 0.1, 0.45], [0.7, 0.2, 0.1]],
];
const lens = [5, 4];
const exact = exactTop(small, lens, 3);
const greedy = greedyRef(small, lens);
const yv = new NDArray(small.flat(2), [2, 5, 3], 'float32');
const lv = new NDArray(lens, [2], 'int32');
const shapes = [[null, 5, 3], [null]];
const tol = { atol: 2e-5, rtol: 1e-5 };

opTable('K.ctc_decode', [
  { name: 'greedy: decoded', inputs: [yv, lv], shapes, build: (y, l) => K.ctc_decode(y, l)[0][0]!, expected: greedy.path, staticShape: [null, 5], expectedDType: 'int32' },
  { name: 'greedy: log_prob', inputs: [yv, lv], shapes, build: (y, l) => K.ctc_decode(y, l)[1], expected: greedy.score, staticShape: [null, 1], tol },
  ...[0, 1, 2].map((p) => ({
    name: `beam search, width 100, top_paths 3: path ${p}`, inputs: [yv, lv], shapes,
    build: (y: K.TensorLike, l: K.TensorLike) => K.ctc_decode(y, l, false, 100, 3)[0][p]!, expected: exact.paths[p]!, staticShape: [null, 5],
  })),
  { name: 'beam search: log_prob (options object)', inputs: [yv, lv], shapes, build: (y, l) => K.ctc_decode(y, l, { greedy: false, top_paths: 3 })[1], expected: exact.scores, staticShape: [null, 3], tol },
  {
    // One step: P([0]) = 0.6 beats P([]) = 0.4; the beam of 1 keeps the child.
    name: 'beam of 1, label most likely: [0], shifted log-probability 0',
    inputs: [new NDArray([0.6, 0, 0.4], [1, 1, 3], 'float32'), new NDArray([1], [1], 'int32')],
    build: (y, l) => K.concatenate([K.cast(K.ctc_decode(y, l, false, 1)[0][0]!, 'float32'), K.ctc_decode(y, l, false, 1)[1]], 1),
    expected: [[0, 0]], tol,
  },
  {
    // TensorFlow expands a prefix only if its previous probability beats the beam's lowest new
    // one: with the blank most likely the root's never drops, so a beam of 1 stays empty although
    // P([0]) = 0.64 > P([]) = 0.36.
    name: 'beam of 1, blank most likely: stays empty (TensorFlow\'s rule), log-probability 0',
    inputs: [new NDArray([0.4, 0, 0.6, 0.4, 0, 0.6], [1, 2, 3], 'float32'), new NDArray([2], [1], 'int32')],
    build: (y, l) => K.concatenate([K.cast(K.ctc_decode(y, l, false, 1)[0][0]!, 'float32'), K.ctc_decode(y, l, false, 1)[1]], 1),
    expected: [[-1, -1, 0]], tol,
  },
  {
    // [0, blank, 0] is the labeling 0,0; merge_repeated=true emits it as [0] (TensorFlow's LabelSeq).
    name: 'beam search, merge_repeated: 0 blank 0 is emitted as [0]',
    inputs: [new NDArray([0.9, 0.05, 0.05, 0.05, 0.05, 0.9, 0.9, 0.05, 0.05], [1, 3, 3], 'float32'), new NDArray([3], [1], 'int32')],
    build: (y, l) => K.ctc_decode(y, l, false, 10, 1, true)[0][0]!, expected: [[0, -1, -1]],
  },
  {
    name: 'beam search, no merge: 0 blank 0 is [0, 0]',
    inputs: [new NDArray([0.9, 0.05, 0.05, 0.05, 0.05, 0.9, 0.9, 0.05, 0.05], [1, 3, 3], 'float32'), new NDArray([3], [1], 'int32')],
    build: (y, l) => K.ctc_decode(y, l, false, 10)[0][0]!, expected: [[0, 0, -1]],
  },
]);

// The number of entries depends on the label lengths, so no compiled code can fix the output's
// shape: the function runs the reference interpreter, and says so (a warning; an error with
// fallback "error"). Every target is checked with fallback "warn".
describe('K.ctc_label_dense_to_sparse', () => {
  const caseName = 'indices of the entries before each length, row by row; values; dense shape';
  const lab = new NDArray([1, 2, 3, 4, 5, 6], [2, 3], 'int32');
  for (const t of targets) {
    if (!runsCase(t, 'K.ctc_label_dense_to_sparse', caseName)) continue; // named in targets.ts
    it(`${caseName} [${t.name}]`, () => {
      const l = K.placeholder([null, 3], null, 'int32');
      const n = K.placeholder([null], null, 'int32');
      const sp = K.ctc_label_dense_to_sparse(l, n);
      expect(K.int_shape(sp.indices)).to.deep.equal([null, 2]);
      const f = K.function([l, n], [sp.indices, sp.values, sp.dense_shape], [], { ...t.options, fallback: 'warn' });
      const [ix, vals, shape] = f([lab, new NDArray([2, 3], [2], 'int32')]).map((v) => v.toArray());
      expect(ix).to.deep.equal([[0, 0], [0, 1], [1, 0], [1, 1], [1, 2]]);
      expect(vals).to.deep.equal([1, 2, 4, 5, 6]);
      expect(shape).to.deep.equal([2, 3]);
      expect(f([lab, new NDArray([0, 1], [2], 'int32')])[1]!.toArray()).to.deep.equal([4]);
    });
  }
  it('with fallback "error" the compiled function refuses, naming the op', () => {
    const l = K.placeholder([2, 3], null, 'int32');
    const n = K.placeholder([2], null, 'int32');
    const f = K.function([l, n], [K.ctc_label_dense_to_sparse(l, n).values], [], { fallback: 'error' });
    expect(() => f([lab, new NDArray([1, 1], [2], 'int32')])).to.throw(/ctc_label_dense_to_sparse/);
  });
});

describe('K.ctc_decode: arguments and errors', () => {
  const y = K.placeholder([null, 5, 3]);
  const l = K.placeholder([null], null, 'int32');
  it('input_length as (samples, 1), as Keras models keep it', () => {
    const l2 = K.placeholder([null, 1], null, 'int32');
    const f = K.function([y, l2], [K.ctc_decode(y, l2)[0][0]!]);
    expect(f([yv, new NDArray(lens, [2, 1], 'int32')])[0]!.toArray()).to.deep.equal(greedy.path);
  });
  it('nothing flows back (TensorFlow declares the decoders not differentiable): a zero gradient', () => {
    const [g] = K.gradients(K.sum(K.ctc_decode(y, l, false, 5, 2)[1]), [y]);
    const v = K.function([y, l], [g!])([yv, lv])[0]!;
    expect(Array.from(v.data).every((e) => e === 0)).to.equal(true);
  });
  it('bad arguments are named', () => {
    expect(() => K.ctc_decode(K.placeholder([2, 3]), l)).to.throw(ShapeError, /ctc_decode: y_pred must be \(samples, time, classes\), got shape \(2, 3\)/);
    expect(() => K.ctc_decode(y, l, true, 100, 2)).to.throw(ValueError, /ctc_decode: greedy decoding gives one path, so top_paths must be 1 \(got 2\)/);
    expect(() => K.ctc_decode(y, l, false, 2, 3)).to.throw(ValueError, /ctc_decode: top_paths 3 is larger than beam_width 2/);
    expect(() => K.ctc_decode(y, l, { beam: 3 } as never)).to.throw(ValueError, /ctc_decode: unknown option "beam" \(allowed: "greedy", "beam_width", "top_paths", "merge_repeated"\)/);
    expect(() => K.ctc_decode(y, l, false, 0)).to.throw(ValueError, /ctc_decode: beam_width must be a positive integer, got .*0/);
  });
  it('an input_length past the time axis is an error when run', () => {
    const f = K.function([y, l], [K.ctc_decode(y, l)[1]]);
    expect(() => f([yv, [6, 1]])).to.throw(/input_length\[0\] = 6 is outside \[0, 5\]/);
  });
  it('ctc_label_dense_to_sparse: a length past the labels is an error when run', () => {
    const lab = K.placeholder([2, 3], null, 'int32');
    const n = K.placeholder([2], null, 'int32');
    const f = K.function([lab, n], [K.ctc_label_dense_to_sparse(lab, n).values]);
    expect(() => f([[[1, 2, 3], [4, 5, 6]], [4, 1]])).to.throw(/label_lengths\[0\] = 4 is outside \[0, 3\]/);
    expect(() => K.ctc_label_dense_to_sparse(K.placeholder([3], null, 'int32'), n)).to.throw(ShapeError, /labels must be \(samples, max_label_length\)/);
  });
  it('the reference decodings agree with the enumeration (test of the test)', () => {
    expectClose(exact.scores.map((r) => r.length), [3, 3]);
    expect(exact.paths[0]![0]).to.have.length(5);
  });
});
