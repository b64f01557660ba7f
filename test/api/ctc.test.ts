// The CTC family: TensorFlow's numbers for ctc_batch_cost, Theano's for the Theano helpers,
// both checked against independent computations (enumerating every path; scaled recursions).
import { expect } from 'chai';
import { backend as K, NDArray, ShapeError, ValueError } from '../../src/index.js';
import { apply } from '../../src/ir/build.js';
import { evaluate } from '../../src/ir/interpret.js';

import { expectClose } from '../helpers/assert.js';
import { mulberry32 as rng } from '../../src/ir/random.js';

// Keras' backend test: 2 samples, 5 steps, 6 classes (the last is the blank).
const kerasLabels = [[0, 1, 2, 1, 0], [0, 1, 1, 0, -1]];
const kerasInputs = [
  [[0.633766, 0.221185, 0.0917319, 0.0129757, 0.0142857, 0.0260553],
    [0.111121, 0.588392, 0.278779, 0.0055756, 0.00569609, 0.010436],
    [0.0357786, 0.633813, 0.321418, 0.00249248, 0.00272882, 0.0037688],
    [0.0663296, 0.643849, 0.280111, 0.00283995, 0.0035545, 0.00331533],
    [0.458235, 0.396634, 0.123377, 0.00648837, 0.00903441, 0.00623107]],
  [[0.30176, 0.28562, 0.0831517, 0.0862751, 0.0816851, 0.161508],
    [0.24082, 0.397533, 0.0557226, 0.0546814, 0.0557528, 0.19549],
    [0.230246, 0.450868, 0.0389607, 0.038309, 0.0391602, 0.202456],
    [0.280884, 0.429522, 0.0326593, 0.0339046, 0.0326856, 0.190345],
    [0.423286, 0.315517, 0.0338439, 0.0393744, 0.0339315, 0.154046]],
];

/** P(label | probs[0..T)) by enumerating every path: collapse repeats, drop blanks, compare. */
function bruteForce(probs: number[][], label: number[]): number {
  const T = probs.length;
  const C = probs[0]!.length;
  const blank = C - 1;
  let total = 0;
  const path: number[] = [];
  const walk = (t: number, p: number) => {
    if (t === T) {
      const out: number[] = [];
      path.forEach((c, i) => { if (c !== blank && (i === 0 || c !== path[i - 1])) out.push(c); });
      if (out.length === label.length && out.every((c, i) => c === label[i])) total += p;
      return;
    }
    for (let c = 0; c < C; c++) { path.push(c); walk(t + 1, p * probs[t]![c]!); path.pop(); }
  };
  walk(0, 1);
  return total;
}

/** log P by the forward recursion in probability space, rescaled every step (Rabiner's scaling). */
function scaledLogLikelihood(probs: number[][], label: number[]): number {
  const blank = probs[0]!.length - 1;
  const ext = [blank, ...label.flatMap((l) => [l, blank])];
  let a = ext.map((c, s) => (s <= 1 ? probs[0]![c]! : 0));
  let logScale = 0;
  for (let t = 0; t < probs.length; t++) {
    if (t > 0) {
      a = ext.map((c, s) => {
        let v = a[s]! + (s >= 1 ? a[s - 1]! : 0);
        if (s >= 2 && c !== blank && c !== ext[s - 2]) v += a[s - 2]!;
        return v * probs[t]![c]!;
      });
    }
    const z = a.reduce((p, v) => p + v, 0);
    a = a.map((v) => v / z);
    logScale += Math.log(z);
  }
  const S = ext.length;
  return logScale + Math.log(a[S - 1]! + (S > 1 ? a[S - 2]! : 0));
}

/** What TensorFlow's loss sees: probabilities y + eps renormalised over the classes. */
const normalise = (rows: number[][], eps = 1e-7) => rows.map((r) => {
  const z = r.reduce((p, v) => p + v + eps, 0);
  return r.map((v) => (v + eps) / z);
});

const randomProbs = (rand: () => number, T: number, C: number) => Array.from({ length: T }, () => {
  const r = Array.from({ length: C }, () => rand() + 0.05);
  const z = r.reduce((p, v) => p + v, 0);
  return r.map((v) => v / z);
});

describe('api/ctc', () => {
  describe('ctc_batch_cost', () => {
    it("gives TensorFlow's numbers on Keras' test case: 3.34211 and 5.42262", () => {
      const cost = K.ctc_batch_cost(K.variable(kerasLabels), K.variable(kerasInputs), K.variable([[5], [5]]), K.variable([[5], [4]]));
      expect(K.int_shape(cost)).to.deep.equal([2, 1]);
      expectClose(K.eval(cost), [[3.34211], [5.42262]], { atol: 1e-4, rtol: 0 }, 'ctc_batch_cost');
    });

    it('takes per-sample input and label lengths and matches an enumeration of every path', () => {
      const yt = K.placeholder([null, 3], null, 'float32', false, 'y_true');
      const yp = K.placeholder([null, null, 4], null, 'float64', false, 'y_pred');
      const il = K.placeholder([null, 1], null, 'int32', false, 'il');
      const ll = K.placeholder([null, 1], null, 'int32', false, 'll');
      const cost = K.ctc_batch_cost(yt, yp, il, ll);
      expect(K.int_shape(cost)).to.deep.equal([null, 1]);
      const rand = rng(7);
      const probs = [randomProbs(rand, 5, 4), randomProbs(rand, 5, 4), randomProbs(rand, 5, 4), randomProbs(rand, 5, 4)];
      const labels = [[0, 1, 0], [2, 2, -1], [1, -1, -1], [-1, -1, -1]];
      const inLens = [5, 4, 2, 3];
      const labLens = [3, 2, 1, 0];
      const [got] = K.function([yt, yp, il, ll], [cost])([labels, probs, inLens.map((v) => [v]), labLens.map((v) => [v])]);
      const want = probs.map((p, b) => [-Math.log(bruteForce(normalise(p).slice(0, inLens[b]), labels[b]!.slice(0, labLens[b])))]);
      expectClose(got!, want, { atol: 1e-9, rtol: 1e-9 }, 'per-sample lengths');
    });

    it('stays finite over 200 steps and agrees with a rescaled recursion', () => {
      const rand = rng(11);
      const T = 200, C = 8;
      const probs = randomProbs(rand, T, C);
      const label = Array.from({ length: 40 }, (_, i) => (i * 3) % (C - 1));
      const cost = K.eval(K.ctc_batch_cost(K.variable([label]), K.variable(NDArray.from([probs], 'float64'), 'float64'), K.variable([[T]]), K.variable([[label.length]])));
      const v = cost.item() as number;
      expect(Number.isFinite(v)).to.equal(true);
      expect(v).to.be.greaterThan(100); // exp(-v) is far below float64's range
      expectClose(cost, [[-scaledLogLikelihood(normalise(probs), label)]], { atol: 1e-8, rtol: 1e-10 }, '200 steps');
    });

    it('is +Infinity when no path fits the label in input_length steps', () => {
      // "1, 1" needs a blank between the two symbols: 3 steps at least
      const cost = K.eval(K.ctc_batch_cost(K.variable([[1, 1]]), K.variable([randomProbs(rng(3), 4, 3)]), K.variable([[2]]), K.variable([[2]])));
      expect(cost.item()).to.equal(Infinity);
    });

    it('errors', () => {
      const yp = K.placeholder([2, 5, 6]);
      const yt = K.placeholder([2, 5]);
      const len = K.placeholder([2, 1], null, 'int32');
      expect(() => K.ctc_batch_cost(yt, K.placeholder([2, 5]), len, len)).to.throw(ShapeError, /K\.ctc_batch_cost: y_pred must be \(samples, time, classes\), got shape \(2, 5\)/);
      expect(() => K.ctc_batch_cost(K.placeholder([2]), yp, len, len)).to.throw(ShapeError, /K\.ctc_batch_cost: y_true must be \(samples, max_string_length\), got shape \(2,\)/);
      expect(() => K.ctc_batch_cost(yt, yp, K.placeholder([2, 2]), len)).to.throw(ShapeError, /K\.ctc_batch_cost: input_length must be \(samples, 1\), got shape \(2, 2\)/);
      expect(() => K.ctc_batch_cost(yt, yp, len, K.placeholder([3, 1]))).to.throw(ShapeError, /K\.ctc_batch_cost: label_length has 3 samples but y_pred\/labels have 2/);
      const run = (labels: number[][], il: number, ll: number) => K.eval(K.ctc_batch_cost(K.variable(labels), K.variable([randomProbs(rng(5), 3, 4)]), K.variable([[il]]), K.variable([[ll]])));
      expect(() => run([[0, 1]], 4, 2)).to.throw(ValueError, /ctc_loss: sample 0: input_length 4 is outside 0\.\.3/);
      expect(() => run([[0, 1]], 3, 3)).to.throw(ValueError, /ctc_loss: sample 0: label_length 3 is outside 0\.\.2/);
      expect(() => run([[0, -1]], 3, 2)).to.throw(ValueError, /ctc_loss: sample 0: label -1 at position 1 is not a class in 0\.\.2 \(class 3 is the blank; -1 pads labels only past label_length\)/);
      expect(() => run([[3, 0]], 3, 2)).to.throw(ValueError, /label 3 at position 0 is not a class/);
    });
  });

  describe('ctc_loss_grad (for the gradient rule)', () => {
    it('matches central finite differences of ctc_loss in every cell, zero past input_length', () => {
      const rand = rng(21);
      const B = 2, T = 4, C = 4;
      const lp = Array.from({ length: B }, () => Array.from({ length: T }, () => Array.from({ length: C }, () => Math.log(rand() + 0.1))));
      const consts = (v: unknown, dt: 'float64' | 'int32') => apply('constant', [], { value: NDArray.from(v, dt) });
      const labels = consts([[0, 1], [2, -1]], 'int32');
      const il = consts([4, 3], 'int32');
      const ll = consts([2, 1], 'int32');
      const lossAt = (x: number[][][]) => evaluate([apply('ctc_loss', [consts(x, 'float64'), labels, il, ll])])[0]!;
      const [grad] = evaluate([apply('ctc_loss_grad', [consts(lp, 'float64'), labels, il, ll])]);
      const h = 1e-6;
      const fd: number[][][] = lp.map((sample, b) => sample.map((row, t) => row.map((_, c) => {
        const plus = lp.map((s) => s.map((r) => [...r]));
        const minus = lp.map((s) => s.map((r) => [...r]));
        plus[b]![t]![c]! += h;
        minus[b]![t]![c]! -= h;
        return (lossAt(plus).data[b]! - lossAt(minus).data[b]!) / (2 * h);
      })));
      expectClose(grad!, fd, { atol: 1e-7, rtol: 1e-6 }, 'd loss / d logp');
      expect(Array.from(grad!.data.slice((B * T - 1) * C))).to.deep.equal([0, 0, 0, 0]); // sample 1, step 3 >= input_length
    });
  });

  describe("Theano's helpers", () => {
    it('ctc_interleave_blanks puts -1 around and between the labels', () => {
      const y = K.ctc_interleave_blanks(K.constant([1, 2, 3], 'int32'));
      expect(K.int_shape(y)).to.deep.equal([7]);
      expect(K.eval(y).toArray()).to.deep.equal([-1, 1, -1, 2, -1, 3, -1]);
      expect(K.int_shape(K.ctc_interleave_blanks(K.placeholder([null], null, 'int32')))).to.deep.equal([null]);
    });

    it('ctc_create_skip_idxs lists the symbol positions that may jump to the next symbol', () => {
      const skip = K.ctc_create_skip_idxs(K.ctc_interleave_blanks(K.constant([0, 1, 1, 0], 'int32')));
      expect(K.int_shape(skip)).to.deep.equal([null]);
      expect(K.eval(skip).toArray()).to.deep.equal([1, 5]); // 0 -> 1 and 1 -> 0, but not 1 -> 1
      expect(K.eval(K.ctc_create_skip_idxs(K.constant([-1], 'int32'))).toArray()).to.deep.equal([]);
    });

    it('ctc_update_log_p advances the reachable prefix by one step', () => {
      const n = 5; // interleaved [a, b]: -1, a, -1, b, -1
      const zeros = K.constant(new Array(n).fill(0), 'float64');
      const skip = K.constant([1], 'int64');
      const curr = [-1, -2, -3, -4, -5];
      const [a1, p1] = K.ctc_update_log_p(skip, zeros, 1, K.constant(curr, 'float64'), zeros);
      expect(K.int_shape(p1)).to.deep.equal([n]);
      expect(K.eval(a1).item()).to.equal(2);
      expectClose(K.eval(p1), [-1, -2, 0, 0, 0], { atol: 1e-12 }, 'first step');
      // second step from [-1, -2]: position 2 = log(e^-2) + curr, position 3 via the skip from 1
      const [a2, p2] = K.ctc_update_log_p(skip, zeros, a1, K.constant(curr, 'float64'), p1);
      expect(K.eval(a2).item()).to.equal(4);
      const l = (...xs: number[]) => Math.log(xs.reduce((p, x) => p + Math.exp(x), 0));
      expectClose(K.eval(p2), [-1 + -1, -2 + l(-1, -2), -3 + l(-2), -4 + l(-2), 0], { atol: 1e-12 }, 'second step');
    });

    it('ctc_path_probs: every step of the reachable cells sums to P(Y) (alpha = 0)', () => {
      const probs = kerasInputs[0]!;
      const label = [0, 1, 2, 1, 0];
      const [lp, mask] = K.ctc_path_probs(K.constant(probs, 'float64'), K.ctc_interleave_blanks(K.constant(label, 'int32')), 0);
      expect(K.int_shape(lp)).to.deep.equal([5, 11]);
      const lpv = K.eval(lp).toArray() as number[][];
      const mv = K.eval(mask).toArray() as boolean[][];
      const p = bruteForce(probs, label);
      lpv.forEach((row, t) => {
        const sum = row.reduce((acc, v, s) => acc + (mv[t]![s] ? Math.exp(v) : 0), 0);
        expect(Math.abs(Math.log(sum) - Math.log(p)), `step ${t}`).to.be.lessThan(1e-9);
      });
      // 5 symbols in 5 steps leave no room for blanks: at step 0 only the first symbol is both reachable and completes
      expect(mv[0]!.map((m, s) => (m ? s : -1)).filter((s) => s >= 0)).to.deep.equal([1]);
    });

    it("ctc_cost gives Theano's numbers on Keras' test case: 1.73308 and 3.81351", () => {
      const c0 = K.ctc_cost(K.variable(kerasInputs[0]!), K.constant([0, 1, 2, 1, 0], 'int32'));
      const c1 = K.ctc_cost(K.variable(kerasInputs[1]!), [0, 1, 1, 0]);
      expect(K.int_shape(c0)).to.deep.equal([]);
      expectClose(K.eval(c0), 1.73308, { atol: 1e-4, rtol: 0 }, 'sample 0');
      expectClose(K.eval(c1), 3.81351, { atol: 1e-4, rtol: 0 }, 'sample 1');
      // Theano's cost is -log P - log T, with predictions smoothed by alpha = 1e-4
      const smoothed = (rows: number[][], n: number) => rows.map((r) => r.map((v) => 0.9999 * v + 1e-4 / n));
      expectClose(K.eval(c0), -Math.log(bruteForce(smoothed(kerasInputs[0]!, 11), [0, 1, 2, 1, 0])) - Math.log(5), { atol: 1e-5 }, 'closed form');
    });

    it('ctc_cost stays finite over 200 steps', () => {
      const probs = randomProbs(rng(13), 200, 6);
      const v = K.eval(K.ctc_cost(K.constant(probs, 'float64'), Array.from({ length: 30 }, (_, i) => i % 5))).item() as number;
      expect(Number.isFinite(v)).to.equal(true);
      expect(v).to.be.greaterThan(100);
    });

    it('errors', () => {
      expect(() => K.ctc_interleave_blanks(K.placeholder([2, 2], null, 'int32'))).to.throw(ShapeError, /K\.ctc_interleave_blanks: Y must be a vector, got shape \(2, 2\)/);
      expect(() => K.ctc_path_probs(K.placeholder([5]), K.constant([-1, 0, -1], 'int32'))).to.throw(ShapeError, /K\.ctc_path_probs: predict must be \(time, classes\)/);
      expect(() => K.eval(K.ctc_path_probs(K.constant([[0.5, 0.5]]), K.constant([-1, 4, -1], 'int32'))[0])).to.throw(ValueError, /ctc_path_probs: Y\[1\] = 4 is not a class index for 2 classes/);
      expect(() => K.ctc_update_log_p(K.constant([1.5]), K.constant([0, 0, 0]), 1, K.constant([0, 0, 0]), K.constant([0, 0, 0, 0])))
        .to.throw(ShapeError, /K\.ctc_update_log_p: skip_idxs must be an integer vector, got float32 \(1,\)/);
      expect(() => K.ctc_update_log_p(K.constant([1], 'int64'), K.constant([0, 0, 0]), 1, K.constant([0, 0, 0]), K.constant([0, 0, 0, 0])))
        .to.throw(ShapeError, /K\.ctc_update_log_p: log_p_prev has length 4 but the others have 3/);
    });
  });
});


