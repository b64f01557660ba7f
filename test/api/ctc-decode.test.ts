// K.ctc_decode (greedy and beam search, TensorFlow's) and K.ctc_label_dense_to_sparse, on every
// target, against independent numbers: every alignment enumerated (the exact probability of each
// labeling) and small cases worked by hand.
import { expect } from 'chai';
import { backend as K, NDArray, ShapeError, ValueError } from '../../src/index.js';
import { expectClose } from '../helpers/assert.js';
import type { Node } from '../../src/ir/node.js';
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

/** Each step's largest log input: greedy's score is minus their sum. */
const maxShift = (probs: number[][], T: number): number => probs.slice(0, T).reduce((s, r) => s + Math.log(Math.max(...r) + EPS), 0);
/** Each step's log-softmax normaliser (log of the sum of its inputs): TensorFlow's beam score is log P(labeling) less their sum. */
const softmaxShift = (probs: number[][], T: number): number => probs.slice(0, T).reduce((s, r) => s + Math.log(r.reduce((a, v) => a + v + EPS, 0)), 0);

/** Rows padded with -1 to the longest (TensorFlow's dense form of a decoder's sparse result: as wide as the longest decoding). */
const padded = (rows: number[][]): number[][] => {
  const w = Math.max(0, ...rows.map((r) => r.length));
  return rows.map((r) => [...r, ...new Array<number>(w - r.length).fill(-1)]);
};

/** The k most probable labelings, padded with -1 to the longest of each rank, and their log-probabilities under each step's softmax. */
function exactTop(batch: number[][][], lens: number[], k: number): { paths: number[][][]; scores: number[][] } {
  const paths: number[][][] = Array.from({ length: k }, () => []);
  const scores: number[][] = [];
  batch.forEach((probs, b) => {
    const ranked = [...labelings(probs, lens[b]!).entries()].sort((x, y) => y[1] - x[1]).slice(0, k);
    ranked.forEach(([lab], i) => paths[i]!.push(lab === '' ? [] : lab.split(',').map(Number)));
    scores.push(ranked.map(([, p]) => Math.log(p) - softmaxShift(probs, lens[b]!)));
  });
  return { paths: paths.map(padded), scores };
}

/** Greedy by hand: per step the first largest class; repeats merged, blanks dropped; minus the sum of the maxima. */
function greedyRef(batch: number[][][], lens: number[]): { path: number[][]; score: number[][] } {
  const path: number[][] = [];
  const score: number[][] = [];
  batch.forEach((probs, b) => {
    const C = probs[0]!.length;
    const best = probs.slice(0, lens[b]).map((r) => r.indexOf(Math.max(...r)));
    path.push(best.filter((c, i) => c !== C - 1 && (i === 0 || c !== best[i - 1])));
    score.push([-maxShift(probs, lens[b]!)]);
  });
  return { path: padded(path), score };
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

// The scores alone have static shapes: compiled (greedy a kernel, beam search an extern step).
opTable('K.ctc_decode', [
  { name: 'greedy: log_prob', inputs: [yv, lv], shapes, build: (y, l) => K.ctc_decode(y, l)[1], expected: greedy.score, staticShape: [null, 1], tol },
  { name: 'beam search: log_prob (options object)', inputs: [yv, lv], shapes, build: (y, l) => K.ctc_decode(y, l, { greedy: false, top_paths: 3 })[1], expected: exact.scores, staticShape: [null, 3], tol },
]);

interface DecodeCase {
  readonly name: string;
  readonly inputs: readonly [NDArray, NDArray];
  readonly build: (y: K.TensorLike, l: K.TensorLike) => [Node[], Node];
  /** The expected label rows of each path, and the scores (samples, top_paths). */
  readonly paths: readonly (readonly (readonly number[])[])[];
  readonly scores?: readonly (readonly number[])[];
}

// Decoded labels are as wide as the longest decoding (data-dependent): a function returning them
// runs the reference interpreter and says so (fallback "warn" here); the tensorflow backend
// decodes op by op on the host, as TensorFlow does.
function decodeTable(title: string, cases: readonly DecodeCase[]): void {
  describe(title, () => {
    for (const c of cases) {
      for (const t of targets) {
        if (!runsCase(t, title, c.name)) continue; // named in targets.ts
        it(`${c.name} [${t.name}]`, () => {
          const y = K.placeholder([null, null, c.inputs[0].shape[2]!], null, 'float32');
          const l = K.placeholder([null], null, 'int32');
          const [decoded, logp] = c.build(y, l);
          decoded.forEach((d) => expect(K.int_shape(d)).to.deep.equal([null, null]));
          const f = K.function([y, l], [...decoded, logp], [], { ...t.options, fallback: 'warn' });
          const got = f([c.inputs[0], c.inputs[1]]);
          c.paths.forEach((p, i) => {
            expect(got[i]!.shape, `path ${i} shape`).to.deep.equal([p.length, p[0]?.length ?? 0]);
            expect(got[i]!.toArray(), `path ${i}`).to.deep.equal(p);
          });
          if (c.scores !== undefined) expectClose(got[c.paths.length]!, c.scores as number[][], tol, 'log_prob');
        });
      }
    }
  });
}

// Keras 2.3.1's test_ctc_decode_beam_search (TensorFlow's testCTCDecoderBeamSearch): exp(p + 2)
// fed as probabilities, two steps of padding past the length of 5.
const kerasBeam = [
  [0.30999, 0.309938, 0.0679938, 0.0673362, 0.0708352, 0.173908],
  [0.215136, 0.439699, 0.0370931, 0.0393967, 0.0381581, 0.230517],
  [0.199959, 0.489485, 0.0233221, 0.0251417, 0.0233289, 0.238763],
  [0.279611, 0.452966, 0.0204795, 0.0209126, 0.0194803, 0.20655],
  [0.51286, 0.288951, 0.0243026, 0.0220788, 0.0219297, 0.129878],
].map((r) => r.map((v) => Math.exp(v + 2)));
// Keras 2.3.1's test_ctc_decode_greedy: two samples of lengths 4 and 5 over 6 steps.
const kerasGreedy = [
  [[1, 0, 0, 0], [0, 0, 0.4, 0.6], [0, 0, 0.4, 0.6], [0, 0.9, 0.1, 0], [0, 0, 0, 0], [0, 0, 0, 0]],
  [[0.1, 0.9, 0, 0], [0, 0.9, 0.1, 0], [0, 0, 0.1, 0.9], [0, 0.9, 0.1, 0.1], [0.9, 0.1, 0, 0], [0, 0, 0, 0]],
];

decodeTable('K.ctc_decode', [
  { name: 'greedy: decoded', inputs: [yv, lv], build: (y, l) => K.ctc_decode(y, l), paths: [greedy.path], scores: greedy.score },
  ...[0, 1, 2].map((p) => ({
    name: `beam search, width 100, top_paths 3: path ${p}`, inputs: [yv, lv] as [NDArray, NDArray],
    build: (y: K.TensorLike, l: K.TensorLike) => [[K.ctc_decode(y, l, false, 100, 3)[0][p]!], K.ctc_decode(y, l, false, 100, 3)[1]] as [Node[], Node],
    paths: [exact.paths[p]!], scores: exact.scores,
  })),
  {
    name: "Keras 2.3.1's greedy case: (2, 3) labels [[0, 1, -1], [1, 1, 0]], minus the sums of the maxima",
    inputs: [new NDArray(kerasGreedy.flat(2), [2, 6, 4], 'float32'), new NDArray([4, 5], [2], 'int32')],
    build: (y, l) => K.ctc_decode(y, l),
    paths: [[[0, 1, -1], [1, 1, 0]]],
    scores: [[-[1, 0.6, 0.6, 0.9].reduce((s, p) => s + Math.log(p + EPS), 0)], [-5 * Math.log(0.9 + EPS)]],
  },
  {
    name: "Keras 2.3.1's beam search case: [[1, 0]] and [[1]], log_prob [-5.811451, -6.63339]",
    inputs: [new NDArray([...kerasBeam.flat(), ...new Array<number>(12).fill(1)], [1, 7, 6], 'float32'), new NDArray([5], [1], 'int32')],
    build: (y, l) => K.ctc_decode(y, l, false, 2, 2),
    paths: [[[1, 0]], [[1]]],
    scores: [[-5.811451, -6.63339]],
  },
  {
    // One step: P([0]) = 0.6 beats P([]) = 0.4; the beam of 1 keeps the child.
    name: 'beam of 1, label most likely: [0], log-probability log 0.6',
    inputs: [new NDArray([0.6, 0, 0.4], [1, 1, 3], 'float32'), new NDArray([1], [1], 'int32')],
    build: (y, l) => K.ctc_decode(y, l, false, 1), paths: [[[0]]], scores: [[Math.log((0.6 + EPS) / (1 + 3 * EPS))]],
  },
  {
    // TensorFlow expands a prefix only if its previous probability beats the beam's lowest new
    // one: with the blank most likely the root's never drops, so a beam of 1 stays empty although
    // P([0]) = 0.64 > P([]) = 0.36. Nothing decoded: (1, 0).
    name: "beam of 1, blank most likely: stays empty (TensorFlow's rule), width 0, log-probability log 0.36",
    inputs: [new NDArray([0.4, 0, 0.6, 0.4, 0, 0.6], [1, 2, 3], 'float32'), new NDArray([2], [1], 'int32')],
    build: (y, l) => K.ctc_decode(y, l, false, 1), paths: [[[]]], scores: [[2 * Math.log((0.6 + EPS) / (1 + 3 * EPS))]],
  },
  {
    // [0, blank, 0] is the labeling 0,0; merge_repeated=true emits it as [0] (TensorFlow's LabelSeq).
    name: 'beam search, merge_repeated: 0 blank 0 is emitted as [0]',
    inputs: [new NDArray([0.9, 0.05, 0.05, 0.05, 0.05, 0.9, 0.9, 0.05, 0.05], [1, 3, 3], 'float32'), new NDArray([3], [1], 'int32')],
    build: (y, l) => K.ctc_decode(y, l, false, 10, 1, true), paths: [[[0]]],
  },
  {
    name: 'beam search, no merge: 0 blank 0 is [0, 0]',
    inputs: [new NDArray([0.9, 0.05, 0.05, 0.05, 0.05, 0.9, 0.9, 0.05, 0.05], [1, 3, 3], 'float32'), new NDArray([3], [1], 'int32')],
    build: (y, l) => K.ctc_decode(y, l, false, 10), paths: [[[0, 0]]],
  },
]);

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
    const f = K.function([y, l2], [K.ctc_decode(y, l2)[0][0]!], [], { fallback: 'warn' });
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
    for (const p of exact.paths) expect(p.some((row) => !row.includes(-1)), 'the longest decoding fills the width').to.equal(true);
  });
});
