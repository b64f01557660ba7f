// CTC on the tensorflow backend (composed from tfjs ops) against the reference interpreter:
// ctc_batch_cost and its gradient, and Keras 1's Theano helpers, including their errors.
import { expect } from 'chai';
import { backend as K, NDArray, ValueError } from '../../../src/index.js';
import type { Node } from '../../../src/ir/node.js';
import { expectClose } from '../../helpers/assert.js';
import { mulberry32 } from '../../../src/ir/random.js';

const TF = { backend: 'tensorflow' } as const;
const REF = { backend: 'theanine' } as const;

function sameOnBoth(inputs: Node[], outputs: Node[], feed: unknown[], tol = { atol: 2e-5, rtol: 2e-5 }): NDArray[] {
  const ref = K.function(inputs, outputs, [], REF)(feed);
  const got = K.function(inputs, outputs, [], TF)(feed);
  got.forEach((g, i) => {
    expect(g.dtype, `output ${i} dtype`).to.equal(ref[i]!.dtype);
    expectClose(g, ref[i]!, tol, `output ${i}`);
  });
  return got;
}

/** Seeded rows of probabilities (mulberry32), each summing to 1. */
function probs(seed: number, B: number, T: number, C: number): number[][][] {
  const next = mulberry32(seed);
  return Array.from({ length: B }, () => Array.from({ length: T }, () => {
    const r = Array.from({ length: C }, () => next() + 0.05);
    const z = r.reduce((p, v) => p + v, 0);
    return r.map((v) => v / z);
  }));
}

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

describe('runtime/tfjs: CTC on the tensorflow backend', () => {
  const yt = K.placeholder([null, null], null, 'int32');
  const yp = K.placeholder([null, null, null]);
  const il = K.placeholder([null, 1], null, 'int32');
  const ll = K.placeholder([null, 1], null, 'int32');

  it("ctc_batch_cost gives TensorFlow's numbers on Keras' test case (3.34211, 5.42262)", () => {
    const cost = K.ctc_batch_cost(yt, yp, il, ll);
    const [got] = sameOnBoth([yt, yp, il, ll], [cost], [kerasLabels, kerasInputs, [[5], [5]], [[5], [4]]]);
    expectClose(got!, [[3.34211], [5.42262]], { atol: 1e-4, rtol: 0 });
  });

  it('per-sample lengths, an impossible label (+inf), and the gradient, as the reference', () => {
    const cost = K.ctc_batch_cost(yt, yp, il, ll);
    const [g] = K.gradients(K.sum(K.minimum(cost, 1e3), null), [yp]);
    const labels = [[1, 2, 2, 0], [3, -1, -1, -1], [0, 0, 0, 0], [2, 1, -1, -1]];
    const got = sameOnBoth([yt, yp, il, ll], [cost, g!], [labels, probs(7, 4, 6, 5), [[6], [4], [3], [0]], [[4], [1], [4], [2]]], { atol: 1e-4, rtol: 1e-4 });
    const c = got[0]!.toArray() as number[][];
    expect(c[2]![0]).to.equal(Infinity); // 4 equal symbols need 7 steps
    expect(c[3]![0]).to.equal(Infinity); // no steps for a label of 2
  });

  it('a long input stays finite (log space)', () => {
    const cost = K.ctc_batch_cost(yt, yp, il, ll);
    const [got] = sameOnBoth([yt, yp, il, ll], [cost], [[Array.from({ length: 20 }, (_, i) => i % 4)], probs(3, 1, 120, 5), [[120]], [[20]]], { atol: 1e-3, rtol: 1e-4 });
    expect(Number.isFinite(got!.item() as number)).to.equal(true);
  });

  it('bad lengths and labels are the reference\'s errors', () => {
    const f = K.function([yt, yp, il, ll], [K.ctc_batch_cost(yt, yp, il, ll)], [], TF);
    expect(() => f([[[0, 1]], probs(1, 1, 3, 4), [[4]], [[2]]])).to.throw(ValueError, /ctc_loss: sample 0: input_length 4 is outside 0\.\.3/);
    expect(() => f([[[0, 3]], probs(1, 1, 3, 4), [[3]], [[2]]])).to.throw(ValueError, /ctc_loss: sample 0: label 3 at position 1 is not a class in 0\.\.2/);
  });

  describe("Theano's helpers", () => {
    it('ctc_interleave_blanks and ctc_create_skip_idxs', () => {
      const y = K.placeholder([null], null, 'int32');
      const inter = K.ctc_interleave_blanks(y);
      const got = sameOnBoth([y], [inter, K.ctc_create_skip_idxs(inter)], [[0, 1, 1, 0]]);
      expect(got[0]!.toArray()).to.deep.equal([-1, 0, -1, 1, -1, 1, -1, 0, -1]);
      expect(got[1]!.toArray()).to.deep.equal([1, 5]);
      expect(sameOnBoth([y], [K.ctc_create_skip_idxs(y)], [[-1]])[0]!.toArray()).to.deep.equal([]);
    });

    it('ctc_update_log_p, two steps', () => {
      const zeros = K.constant([0, 0, 0, 0, 0], 'float64');
      const skip = K.constant([1], 'int64');
      const curr = K.constant([-1, -2, -3, -4, -5], 'float64');
      const [a1, p1] = K.ctc_update_log_p(skip, zeros, 1, curr, zeros);
      const [a2, p2] = K.ctc_update_log_p(skip, zeros, a1, curr, p1);
      const got = sameOnBoth([], [a1, p1, a2, p2], []);
      expect(got[2]!.item()).to.equal(4);
    });

    it("ctc_path_probs and ctc_cost (Theano's numbers: 1.73308, 3.81351)", () => {
      const pred = K.placeholder([null, 6]);
      const y = K.placeholder([null], null, 'int32');
      const [lp, mask] = K.ctc_path_probs(pred, K.ctc_interleave_blanks(y), 0);
      sameOnBoth([pred, y], [lp, mask], [kerasInputs[0], [0, 1, 2, 1, 0]], { atol: 1e-4, rtol: 1e-4 });
      const c = K.ctc_cost(pred, y);
      expectClose(sameOnBoth([pred, y], [c], [kerasInputs[0], [0, 1, 2, 1, 0]])[0]!, 1.73308, { atol: 1e-4, rtol: 0 });
      expectClose(sameOnBoth([pred, y], [c], [kerasInputs[1], [0, 1, 1, 0]])[0]!, 3.81351, { atol: 1e-4, rtol: 0 });
    });

    it('a class outside the predictions is the reference\'s error', () => {
      const f = K.function([], [K.ctc_path_probs(K.constant([[0.5, 0.5]]), K.constant([-1, 4, -1], 'int32'))[0]], [], TF);
      expect(() => f([])).to.throw(ValueError, /ctc_path_probs: Y\[1\] = 4 is not a class index for 2 classes/);
    });
  });
});
