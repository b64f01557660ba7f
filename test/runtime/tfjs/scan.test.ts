// Scan on the tensorflow backend (a host loop over the step graph) against the reference
// interpreter, the definition of meaning: K.rnn in every form (go_backwards, mask, constants,
// unroll, unknown batch), its gradient (backprop through time), map_fn and the folds; plus
// tensor memory across calls of a function with a Scan.
import { expect } from 'chai';
import * as tf from '@tensorflow/tfjs';
import { backend as K, NDArray } from '../../../src/index.js';
import type { Node } from '../../../src/ir/node.js';
import { expectClose } from '../../helpers/assert.js';
import { mulberry32 } from '../../../src/ir/random.js';

/** Seeded uniform values in [-1, 1) (mulberry32). */
function values(seed: number, shape: number[]): NDArray {
  const next = mulberry32(seed);
  const n = shape.reduce((p, d) => p * d, 1);
  return new NDArray(Array.from({ length: n }, () => next() * 2 - 1), shape, 'float32');
}

/** The same graph on both backends: equal shapes, values within float32 tolerance. */
function sameOnBoth(inputs: Node[], outputs: Node[], feed: unknown[], tol = { atol: 1e-5, rtol: 1e-5 }): void {
  const ref = K.function(inputs, outputs, [], { backend: 'theanine' })(feed);
  const got = K.function(inputs, outputs, [], { backend: 'tensorflow' })(feed);
  got.forEach((g, i) => {
    expect(g.dtype, `output ${i} dtype`).to.equal(ref[i]!.dtype);
    expectClose(g, ref[i]!, tol, `output ${i}`);
  });
}

const S = 3, T = 5, F = 4, O = 2;
const x = values(1, [S, T, F]);
const h0 = values(2, [S, O]);
const mask = new NDArray([1, 1, 0, 1, 0, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1], [S, T], 'float32');

describe('runtime/tfjs: Scan on the tensorflow backend', () => {
  const Wi = K.variable(values(3, [F, O]));
  const Wo = K.variable(values(4, [O, O]));
  const step = (xt: Node, states: Node[]): [Node, Node[]] => {
    const o = K.tanh(K.add(K.dot(xt, Wi), K.dot(states[0]!, Wo)));
    return [o, [o]];
  };

  for (const back of [false, true]) {
    for (const withMask of [false, true]) {
      for (const unroll of [false, true]) {
        it(`K.rnn go_backwards=${back} mask=${withMask} unroll=${unroll}: outputs, states and gradients agree`, () => {
          const xp = K.placeholder([S, T, F]);
          const hp = K.placeholder([S, O]);
          const mp = K.placeholder([S, T]);
          const [last, outs, states] = K.rnn(step, xp, [hp], back, withMask ? mp : null, null, unroll);
          const loss = K.sum(K.square(outs), null);
          const grads = K.gradients(loss, [xp, hp, Wi, Wo]);
          sameOnBoth([xp, hp, mp], [last, outs, states[0]!, ...grads], [x, h0, mask]);
        });
      }
    }
  }

  it('K.rnn with constants and an unknown batch size', () => {
    const xp = K.placeholder([null, T, F]);
    const hp = K.placeholder([null, O]);
    const c = K.placeholder([null, O]);
    const stepC = (xt: Node, states: Node[]): [Node, Node[]] => {
      const o = K.add(K.add(K.dot(xt, Wi), K.dot(states[0]!, Wo)), states[1]!);
      return [o, [o]];
    };
    const [last, outs] = K.rnn(stepC, xp, [hp], false, null, [c]);
    sameOnBoth([xp, hp, c], [last, outs, ...K.gradients(K.sum(outs, null), [xp, c])], [x, h0, values(5, [S, O])]);
  });

  it('map_fn, foldl and foldr', () => {
    const e = K.placeholder([4, 3]);
    const mapped = K.map_fn((r: Node) => K.sum(K.square(r), null), e);
    const left = K.foldl((acc: Node, r: Node) => K.add(K.multiply(acc, 0.5), r), e);
    const right = K.foldr((acc: Node, r: Node) => K.add(K.multiply(acc, 0.5), r), e, K.zeros([3]));
    sameOnBoth([e], [mapped, left, right, ...K.gradients(K.sum(K.add(left, right), null), [e])], [values(6, [4, 3])]);
  });

  it('foldr of digits walks right to left (SPEC §5: 321)', () => {
    const e = K.placeholder([3], null, 'float32');
    const f = K.function([e], [K.foldr((acc: Node, v: Node) => K.add(K.multiply(acc, 10), v), e, K.constant(0))], [], { backend: 'tensorflow' });
    expect(f([[1, 2, 3]])[0]!.item()).to.equal(321);
  });

  it('tf.memory().numTensors does not grow across calls of a function with a Scan', () => {
    const xp = K.placeholder([S, T, F]);
    const hp = K.placeholder([S, O]);
    const [, outs] = K.rnn(step, xp, [hp]);
    const loss = K.sum(K.square(outs), null);
    const [gWi] = K.gradients(loss, [Wi]);
    const f = K.function([xp, hp], [loss], [K.update_sub(Wi, gWi!.mul(0.001))], { backend: 'tensorflow' });
    f([x, h0]);
    const baseline = tf.memory().numTensors;
    for (let i = 0; i < 5; i++) f([x, h0]);
    expect(tf.memory().numTensors).to.be.at.most(baseline);
  });
});
