// The CTC family on the gpu device's webgpu mode with fallback 'error': the loss, its gradient,
// Keras 1's Theano helpers and greedy decoding run as WGSL kernels, their recursions over time in
// the steps form (src/codegen/wgsl/steps.ts: one workgroup walking the time loop with storage
// barriers), against the reference interpreter within float32 tolerances; bad lengths and labels
// raise the reference's ValueError (the host checks them before the kernels run).
import { expect } from 'chai';
import { backend as K, NDArray, ValueError } from '../../src/index.js';
import type { Tensor } from '../../src/index.js';
import { webgpuCounts } from '../../src/runtime/gpu/webgpu/session.js';
import { expectClose } from '../helpers/assert.js';
import { onWebgpu } from '../helpers/webgpu.js';

const ERROR = { device: 'gpu', fallback: 'error' } as const;
const REF = { optimizer: 'none' } as const;
const TOL = { atol: 2e-5, rtol: 1e-4 };

interface Case { labels: number[][]; probs: number[][][]; il: number[]; ll: number[] }

const probsOf = (B: number, T: number, C: number, seed: number) =>
  Array.from({ length: B }, (_, b) => Array.from({ length: T }, (_, t) => Array.from({ length: C }, (_, c) => 0.05 + Math.abs(Math.sin(seed + 1.7 * ((b * T + t) * C + c))))));

/** Repeats, an empty label, inputs too short for their labels (infinite losses, zero gradients), -1 and junk padding, an input_length of 0. */
const EDGES: Case = {
  labels: [[0, 0, 1, 1], [2, 1, 2, -1], [3, 7, -1, -1], [1, 1, 1, 0], [0, 1, 2, 3], [-1, -1, -1, -1], [2, 2, -1, -1]],
  probs: probsOf(7, 6, 5, 0.3),
  il: [6, 5, 4, 5, 6, 0, 2],
  ll: [4, 3, 0, 4, 2, 0, 2],
};
/** A longer case: 3 samples, 40 steps, 9 classes, labels of width 12 (S = 25 positions, 75 per step). */
const LONG: Case = {
  labels: [[0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3], [1, 1, 2, 2, 3, 3, -1, -1, -1, -1, -1, -1], [7, 6, 5, 4, 3, 2, 1, 0, 7, 6, -1, -1]],
  probs: probsOf(3, 40, 9, 1.1),
  il: [40, 31, 25],
  ll: [12, 6, 10],
};

/** ctc_batch_cost and its gradient with respect to y_pred (weighted per sample). */
function graph(c: Case): { inputs: Tensor[]; outputs: Tensor[]; feed: NDArray[] } {
  const B = c.probs.length;
  const [T, C, L] = [c.probs[0]!.length, c.probs[0]![0]!.length, c.labels[0]!.length];
  const yp = K.placeholder([B, T, C], null, 'float32', false, 'yp');
  const yt = K.placeholder([B, L], null, 'int32', false, 'yt');
  const il = K.placeholder([B, 1], null, 'int32', false, 'il');
  const ll = K.placeholder([B, 1], null, 'int32', false, 'll');
  const loss = K.ctc_batch_cost(yt, yp, il, ll);
  const w = K.constant(NDArray.from(Array.from({ length: B }, (_, b) => [1 + b / 2]), 'float32'), 'float32');
  const [g] = K.gradients(K.sum(loss.mul(w)), [yp]);
  const feed = [
    NDArray.from(c.probs, 'float32'),
    new NDArray(Int32Array.from(c.labels.flat()), [B, L], 'int32'),
    new NDArray(Int32Array.from(c.il), [B, 1], 'int32'),
    new NDArray(Int32Array.from(c.ll), [B, 1], 'int32'),
  ];
  return { inputs: [yp, yt, il, ll], outputs: [loss, g!], feed };
}

describe('gpu device, webgpu mode: CTC on the device', function () {
  this.timeout(300_000);
  onWebgpu();

  it('ctc_batch_cost and its gradient run as kernels (no host step) and match the reference, infinite losses included', () => {
    for (const c of [EDGES, LONG]) {
      const g = graph(c);
      const f = K.function(g.inputs, g.outputs, [], ERROR);
      expect(f.device).to.equal('gpu:webgpu');
      const want = K.function(g.inputs, g.outputs, [], REF)(g.feed);
      f(g.feed).forEach((r, k) => expectClose(r, want[k]!, TOL, `output ${k}`));
      const src = f.source();
      expect(src).not.to.match(/on the host/);
      // alpha, beta and the gradient's accumulation: one workgroup each, walking the time steps
      for (const k of ['ctc_loss_alpha', 'ctc_loss_grad_beta', 'ctc_loss_grad:']) expect(src, k).to.match(new RegExp(`// ${k.replace(':', '')}: workgroups 1 x 1 x 1`));
      expect(src).to.match(/storageBarrier\(\);/);
    }
  });

  it('one call reads back its outputs only: the recursions need no read-back between steps', () => {
    const g = graph(LONG);
    const f = K.function(g.inputs, g.outputs, [], ERROR);
    f(g.feed);
    const before = webgpuCounts();
    f(g.feed);
    const after = webgpuCounts();
    expect(after.submits - before.submits, 'command buffers per call').to.equal(1);
    expect(after.readbacks - before.readbacks, 'read-backs: the loss and the gradient').to.equal(2);
  });

  it('bad labels and lengths are the reference\'s ValueError, in its words', () => {
    const g = graph(EDGES);
    const f = K.function(g.inputs, g.outputs, [], ERROR);
    const badLabel = g.feed.slice();
    const labels = Int32Array.from(EDGES.labels.flat());
    labels[3] = 9;
    badLabel[1] = new NDArray(labels, [7, 4], 'int32');
    expect(() => f(badLabel)).to.throw(ValueError, /ctc_loss: sample 0: label 9 at position 3 is not a class in 0\.\.3/);
    const badLength = g.feed.slice();
    badLength[2] = new NDArray(Int32Array.from([6, 5, 4, 5, 9, 0, 2]), [7, 1], 'int32');
    expect(() => f(badLength)).to.throw(ValueError, /ctc_loss: sample 4: input_length 9 is outside 0\.\.6/);
    // and the function still runs good data afterwards
    const want = K.function(g.inputs, g.outputs, [], REF)(g.feed);
    f(g.feed).forEach((r, k) => expectClose(r, want[k]!, TOL, `output ${k} after the errors`));
  });

  it('Keras 1\'s Theano helpers (ctc_path_probs, ctc_cost) and greedy ctc_decode\'s scores run as kernels', () => {
    const pr = K.placeholder([5, 4], null, 'float32', false, 'pr');
    const y = K.placeholder([3], null, 'int32', false, 'y');
    const [lp, mask] = K.ctc_path_probs(pr, K.ctc_interleave_blanks(y));
    const yp = K.placeholder([3, 6, 4], null, 'float32', false, 'yp');
    const il = K.placeholder([3], null, 'int32', false, 'il');
    const [, score] = K.ctc_decode(yp, il, true);
    const inputs = [pr, y, yp, il];
    const outputs = [lp!, mask!, K.ctc_cost(pr, y), score];
    const feed = [
      new NDArray(Float32Array.from({ length: 20 }, (_, i) => 0.1 + Math.abs(Math.cos(i * 0.9))), [5, 4]),
      new NDArray(Int32Array.from([2, 2, 0]), [3], 'int32'),
      NDArray.from(probsOf(3, 6, 4, 2.3), 'float32'),
      new NDArray(Int32Array.from([6, 0, 3]), [3], 'int32'),
    ];
    const f = K.function(inputs, outputs, [], ERROR);
    const want = K.function(inputs, outputs, [], REF)(feed);
    f(feed).forEach((r, k) => expectClose(r, want[k]!, TOL, `output ${k}`));
    expect(f.source()).not.to.match(/on the host/);
  });
});
