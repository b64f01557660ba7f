// K.rnn against a plain loop written here: Keras' backend-test cases (4 samples, 6 steps,
// 5 inputs, 3 outputs), every combination of go_backwards, mask and unroll.
import { expect } from 'chai';
import { backend as K, debugprint, NDArray, ShapeError, ValueError } from '../../src/index.js';
import type { Node } from '../../src/ir/node.js';
import { apply } from '../../src/ir/build.js';
import { expectClose } from '../helpers/assert.js';
import { mulberry32 as rng } from '../../src/ir/random.js';

type M = number[][];
const rand = rng(1234);
const mat = (r: number, c: number): M => Array.from({ length: r }, () => Array.from({ length: c }, () => rand()));
const matmul = (a: M, b: M): M => a.map((row) => b[0]!.map((_, j) => row.reduce((s, v, k) => s + v * b[k]![j]!, 0)));
const addM = (a: M, b: M): M => a.map((row, i) => row.map((v, j) => v + b[i]![j]!));

const S = 4, T = 6, F = 5, O = 3;
const xVal = Array.from({ length: S }, () => mat(T, F)); // (S, T, F)
const h0Val = mat(S, O);
const WiVal = mat(F, O);
const WoVal = mat(O, O);
const maskVal = [[1, 1, 0, 1, 0, 0], [1, 0, 1, 1, 1, 0], [0, 1, 1, 0, 1, 1], [1, 1, 1, 1, 1, 1]];

interface Ref { last: M; outputs: number[][][]; states: M[] }

/**
 * The plain loop: per sample, walk t in order (or reversed), step on (x_t, states); where the
 * mask is 0 the output repeats the previous one (zeros first) and the states stay.
 */
function refRnn(step: (x: M, states: M[]) => [M, M[]], x: number[][][], init: M[], back: boolean, mask?: M): Ref {
  const order = Array.from({ length: T }, (_, k) => (back ? T - 1 - k : k));
  let states = init;
  let prev: M | null = null;
  const outs: M[] = [];
  for (const t of order) {
    const xt = x.map((s) => s[t]!);
    const [o, ns] = step(xt, states);
    const keep = (s: number) => mask === undefined || mask[s]![t] !== 0;
    const zero = o.map((r) => r.map(() => 0));
    const out = o.map((r, s) => (keep(s) ? r : (prev ?? zero)[s]!));
    states = ns.map((n, j) => n.map((r, s) => (keep(s) ? r : states[j]![s]!)));
    outs.push(out);
    prev = out;
  }
  return { last: outs[outs.length - 1]!, outputs: x.map((_, s) => outs.map((o) => o[s]!)), states };
}

const ph = (shape: (number | null)[], name: string, dtype: 'float32' | 'float64' = 'float64') => K.placeholder(shape, null, dtype, false, name);

function run(inputs: Node[], outputs: Node[], values: unknown[]): NDArray[] {
  return K.function(inputs, outputs)(values);
}

describe('api/rnn', () => {
  // NDArray.from keeps float64 precision (K.variable of a nested array goes through float32 first).
  const Wi = K.variable(NDArray.from(WiVal, 'float64'), 'float64', 'W_i');
  const Wo = K.variable(NDArray.from(WoVal, 'float64'), 'float64', 'W_o');
  const simpleStep = (x: Node, states: Node[]): [Node, Node[]] => {
    const o = K.add(K.dot(x, Wi), K.dot(states[0]!, Wo));
    return [o, [o]];
  };
  const simpleRef = (x: M, states: M[]): [M, M[]] => {
    const o = addM(matmul(x, WiVal), matmul(states[0]!, WoVal));
    return [o, [o]];
  };

  for (const back of [false, true]) {
    for (const withMask of [false, true]) {
      for (const unroll of [false, true]) {
        it(`simple rnn: go_backwards=${back} mask=${withMask} unroll=${unroll}`, () => {
          const x = ph([S, T, F], 'x');
          const h0 = ph([S, O], 'h0');
          const m = ph([S, T], 'mask');
          const [last, outs, states] = K.rnn(simpleStep, x, [h0], back, withMask ? m : null, null, unroll, unroll ? T : null);
          expect(K.int_shape(last)).to.deep.equal([S, O]);
          expect(K.int_shape(outs)).to.deep.equal([S, T, O]);
          expect(states.map((s) => K.int_shape(s))).to.deep.equal([[S, O]]);
          const ins = withMask ? [x, h0, m] : [x, h0];
          const [l, o, s] = run(ins, [last, outs, states[0]!], withMask ? [xVal, h0Val, maskVal] : [xVal, h0Val]);
          const want = refRnn(simpleRef, xVal, [h0Val], back, withMask ? maskVal : undefined);
          expectClose(l!, want.last, { atol: 1e-12, rtol: 1e-12 }, 'last_output');
          expectClose(o!, want.outputs, { atol: 1e-12, rtol: 1e-12 }, 'outputs');
          expectClose(s!, want.states[0]!, { atol: 1e-12, rtol: 1e-12 }, 'new_states[0]');
        });
      }
    }
  }

  it('float32 inputs and variables as in Keras\' test, unroll and scan agree', () => {
    const x = K.variable(xVal);
    const h0 = K.variable(h0Val);
    const m = K.variable(maskVal);
    const wi = K.variable(WiVal);
    const wo = K.variable(WoVal);
    const step = (xt: Node, st: Node[]): [Node, Node[]] => {
      const o = K.add(K.dot(xt, wi), K.dot(st[0]!, wo));
      return [o, [o]];
    };
    const want = refRnn(simpleRef, xVal, [h0Val], false, maskVal);
    const got = [false, true].map((unroll) => K.rnn(step, x, [h0], { mask: m, unroll, input_length: T }));
    for (const [last, outs, states] of got) {
      expect(outs.dtype).to.equal('float32');
      expectClose(K.eval(outs), want.outputs, { atol: 1e-5, rtol: 1e-5 }, 'outputs');
      expectClose(K.eval(last), want.last, { atol: 1e-5, rtol: 1e-5 }, 'last');
      expectClose(K.eval(states[0]!), want.states[0]!, { atol: 1e-5, rtol: 1e-5 }, 'state');
    }
    expect(Array.from(K.eval(got[0]![1]).data)).to.deep.equal(Array.from(K.eval(got[1]![1]).data));
  });

  for (const unroll of [false, true]) {
    it(`additional states, one of rank 3 (unroll=${unroll})`, () => {
      const x = ph([S, T, F], 'x');
      const h0 = ph([S, O], 'h0');
      const c0 = ph([S, 2, O], 'c0');
      const c0Val = Array.from({ length: S }, () => mat(2, O));
      const step = (xt: Node, st: Node[]): [Node, Node[]] => {
        const o = K.add(K.dot(xt, Wi), K.dot(st[0]!, Wo));
        // c' = 0.5 c + o broadcast over the middle axis
        const c = K.add(K.multiply(st[1]!, 0.5), apply('reshape', [o], { shape: [-1, 1, O] }));
        return [o, [o, c]];
      };
      const ref = (xt: M, st: M[]): [M, M[]] => {
        const o = addM(matmul(xt, WiVal), matmul(st[0]!, WoVal));
        const c = (st[1] as unknown as number[][][]).map((cs, s) => cs.map((row) => row.map((v, j) => 0.5 * v + o[s]![j]!)));
        return [o, [o, c as unknown as M]];
      };
      for (const back of [false, true]) {
        const m = ph([S, T], 'mask');
        const [last, outs, states] = K.rnn(step, x, [h0, c0], back, m, null, unroll, T);
        expect(K.int_shape(states[1]!)).to.deep.equal([S, 2, O]);
        const [l, o, s0, s1] = run([x, h0, c0, m], [last, outs, states[0]!, states[1]!], [xVal, h0Val, c0Val, maskVal]);
        const want = refRnn(ref, xVal, [h0Val, c0Val as unknown as M], back, maskVal);
        expectClose(l!, want.last, { atol: 1e-12 }, 'last');
        expectClose(o!, want.outputs, { atol: 1e-12 }, 'outputs');
        expectClose(s0!, want.states[0]!, { atol: 1e-12 }, 'state 0');
        expectClose(s1!, want.states[1]! as unknown as number[][], { atol: 1e-12 }, 'state 1 (rank 3)');
      }
    });

    it(`no states (unroll=${unroll})`, () => {
      const x = ph([S, T, F], 'x');
      const [last, outs, states] = K.rnn((xt) => [K.dot(xt, Wi), []], x, [], { go_backwards: true, unroll });
      expect(states).to.deep.equal([]);
      const [l, o] = run([x], [last, outs], [xVal]);
      const want = refRnn((xt) => [matmul(xt, WiVal), []], xVal, [], true);
      expectClose(l!, want.last, { atol: 1e-12 }, 'last');
      expectClose(o!, want.outputs, { atol: 1e-12 }, 'outputs');
    });

    it(`constants are passed after the states (unroll=${unroll})`, () => {
      const x = ph([S, T, F], 'x');
      const h0 = ph([S, O], 'h0');
      const bias = ph([O], 'bias');
      const biasVal = [0.5, -1, 2];
      let seen = -1;
      const step = (xt: Node, st: Node[]): [Node, Node[]] => {
        seen = st.length;
        const o = K.add(K.add(K.dot(xt, Wi), K.dot(st[0]!, Wo)), st[1]!);
        return [o, [o]];
      };
      const [last, outs] = K.rnn(step, x, [h0], false, null, [bias], unroll);
      expect(seen).to.equal(2);
      const [l, o] = run([x, h0, bias], [last, outs], [xVal, h0Val, biasVal]);
      const want = refRnn((xt, st) => {
        const out = addM(addM(matmul(xt, WiVal), matmul(st[0]!, WoVal)), xt.map(() => biasVal));
        return [out, [out]];
      }, xVal, [h0Val], false);
      expectClose(l!, want.last, { atol: 1e-12 }, 'last');
      expectClose(o!, want.outputs, { atol: 1e-12 }, 'outputs');
    });
  }

  it('masks outputs and states independently (Keras\' test)', () => {
    // The step outputs its input and increments every state; the second sample is masked on its
    // last two steps, so its outputs there repeat step 1 and its state grows by 2, not 4.
    const n = 2, steps = 4, size = 5;
    const inVals = Array.from({ length: n }, () => mat(steps, size));
    const s0 = mat(n, size);
    const maskVals = [[1, 1, 1, 1], [1, 1, 0, 0]];
    const expOut = inVals.map((r) => r.map((v) => [...v]));
    expOut[1]![2] = [...inVals[1]![1]!];
    expOut[1]![3] = [...inVals[1]![1]!];
    const expState = s0.map((r, i) => r.map((v) => v + (i === 0 ? 4 : 2)));
    for (const unroll of [true, false]) {
      const [, outputs, states] = K.rnn((x, st) => [x, st.map((s) => K.add(s, 1))], K.variable(inVals), [K.variable(s0)],
        { mask: K.variable(maskVals), unroll, input_length: unroll ? steps : null });
      expectClose(K.eval(outputs), expOut, { atol: 1e-6 }, `outputs (unroll=${unroll})`);
      expectClose(K.eval(states[0]!), expState, { atol: 1e-6 }, `state (unroll=${unroll})`);
    }
  });

  it('unknown samples and time: static shapes keep the nulls, values follow the fed shapes', () => {
    const x = ph([null, null, F], 'x');
    const h0 = ph([null, O], 'h0');
    const m = ph([null, null], 'mask');
    const [last, outs, states] = K.rnn(simpleStep, x, [h0], false, m);
    expect(K.int_shape(outs)).to.deep.equal([null, null, O]);
    expect(K.int_shape(last)).to.deep.equal([null, O]);
    expect(K.int_shape(states[0]!)).to.deep.equal([null, O]);
    const [o] = run([x, h0, m], [outs], [xVal, h0Val, maskVal]);
    expectClose(o!, refRnn(simpleRef, xVal, [h0Val], false, maskVal).outputs, { atol: 1e-12 }, 'outputs');
    // unrolling an unknown time axis works when input_length says how long it is
    const [, unrolled] = K.rnn(simpleStep, x, [h0], { mask: m, unroll: true, input_length: T });
    expect(K.int_shape(unrolled)).to.deep.equal([null, T, O]);
    expectClose(run([x, h0, m], [unrolled], [xVal, h0Val, maskVal])[0]!, o!, { atol: 1e-12 }, 'unrolled');
  });

  it('a masked step output with unknown feature dims starts from zeros of its runtime shape', () => {
    const x = ph([S, T, F], 'x');
    const h0 = ph([S, O], 'h0');
    const w = ph([F, null], 'w'); // the output's feature dim is unknown until run time
    const m = ph([S, T], 'mask');
    const step = (xt: Node, st: Node[]): [Node, Node[]] => [K.dot(xt, w), [K.add(st[0]!, 1)]];
    const [, outs, states] = K.rnn(step, x, [h0], false, m);
    expect(K.int_shape(outs)).to.deep.equal([S, T, null]);
    const [o, s] = run([x, h0, w, m], [outs, states[0]!], [xVal, h0Val, WiVal, maskVal]);
    const want = refRnn((xt, st) => [matmul(xt, WiVal), [st[0]!.map((r) => r.map((v) => v + 1))]], xVal, [h0Val], false, maskVal);
    expectClose(o!, want.outputs, { atol: 1e-12 }, 'outputs');
    expectClose(s!, want.states[0]!, { atol: 1e-12 }, 'state');
  });

  it('a mask of shape (samples, time, 1) is taken as (samples, time)', () => {
    const x = ph([S, T, F], 'x');
    const h0 = ph([S, O], 'h0');
    const m3 = ph([S, T, 1], 'mask3');
    const [, outs] = K.rnn(simpleStep, x, [h0], false, m3);
    const [o] = run([x, h0, m3], [outs], [xVal, h0Val, maskVal.map((r) => r.map((v) => [v]))]);
    expectClose(o!, refRnn(simpleRef, xVal, [h0Val], false, maskVal).outputs, { atol: 1e-12 }, 'outputs');
  });

  it('debugprint of a non-unrolled rnn over 100 steps shows one Scan and its body once', () => {
    const x = ph([S, 100, F], 'x');
    const h0 = ph([S, O], 'h0');
    const [last, outs, states] = K.rnn(simpleStep, x, [h0]);
    const text = debugprint([last, outs, states[0]!]);
    const scanLines = text.split('\n').filter((l) => /\bscan\{/.test(l));
    expect(scanLines.filter((l) => !l.endsWith('(printed above)')), text).to.have.length(1);
    expect(text.match(/body of scan/g), text).to.have.length(1);
    expect(text.match(/\bdot \[id/g), text).to.have.length(2); // the step's two dots, once
    expect(text.match(/scan_arg/g), text).to.have.length(4); // x_t, h, W_i, W_o
    expect(scanLines[0]).to.include('(float64 (100, 4, 3), float64 (4, 3), float64 (100, 4, 3))');
  });

  describe('errors', () => {
    const x = () => ph([S, T, F], 'x');
    const h0 = () => ph([S, O], 'h0');

    it('inputs of rank < 3', () => {
      expect(() => K.rnn(simpleStep, ph([S, T], 'x2'), [h0()])).to.throw(ValueError, /K\.rnn: inputs should be at least 3D \(samples, time, \.\.\.\), got shape \(4, 6\)/);
    });
    it('unroll without a known time length and no input_length', () => {
      expect(() => K.rnn(simpleStep, ph([S, null, F], 'x'), [h0()], { unroll: true }))
        .to.throw(ValueError, /K\.rnn: unrolling requires a fixed number of time steps: inputs have shape \(4, None, 5\); give input_length/);
    });
    it('input_length that contradicts the time axis', () => {
      expect(() => K.rnn(simpleStep, x(), [h0()], { unroll: true, input_length: 5 })).to.throw(ShapeError, /K\.rnn: input_length 5 contradicts the 6 time steps/);
      expect(() => K.rnn(simpleStep, x(), [h0()], { input_length: -1 })).to.throw(ValueError, /K\.rnn: input_length must be an integer >= 0/);
    });
    it('unroll over 0 steps', () => {
      expect(() => K.rnn(simpleStep, ph([S, 0, F], 'x'), [h0()], { unroll: true })).to.throw(ValueError, /K\.rnn: cannot unroll over 0 time steps/);
    });
    it('a mask that does not fit the inputs', () => {
      expect(() => K.rnn(simpleStep, x(), [h0()], false, ph([S, T + 1], 'm'))).to.throw(ShapeError, /K\.rnn: mask of shape \(4, 7\) does not fit inputs of shape \(4, 6, 5\)/);
      expect(() => K.rnn(simpleStep, x(), [h0()], false, ph([S], 'm'))).to.throw(ShapeError, /K\.rnn: mask of shape \(4,\)/);
      expect(() => K.rnn(simpleStep, x(), [h0()], false, ph([S, T, 3], 'm'))).to.throw(ShapeError, /K\.rnn: mask of shape \(4, 6, 3\)/);
    });
    it('a step function that is not a function or returns the wrong things', () => {
      expect(() => K.rnn(42 as never, x(), [h0()])).to.throw(TypeError, /K\.rnn: step_function must be a function/);
      expect(() => K.rnn((() => 3) as never, x(), [h0()])).to.throw(TypeError, /K\.rnn: the step function must return \[output, new_states\], got number 3/);
      expect(() => K.rnn(((xt: Node) => [xt, xt]) as never, x(), [h0()])).to.throw(TypeError, /K\.rnn: the step function's new_states must be an array/);
      for (const unroll of [false, true]) {
        expect(() => K.rnn((xt) => [xt, []], x(), [h0()], { unroll })).to.throw(ValueError, /K\.rnn: the step function returned 0 new states for 1 initial states/);
      }
    });
    it('a new state whose shape or dtype differs from the state', () => {
      for (const unroll of [false, true]) {
        expect(() => K.rnn((xt) => [xt, [xt]], x(), [h0()], { unroll }))
          .to.throw(ShapeError, /K\.rnn: the step function's new state 0 has shape \(4, 5\) but the state has \(4, 3\); a state keeps its shape/);
        expect(() => K.rnn((xt, st) => [xt, [K.cast(st[0]!, 'float32')]], x(), [h0()], { unroll }))
          .to.throw(TypeError, /K\.rnn: the step function's new state 0 is float32 but the state is float64/);
      }
    });
    it('bad argument types', () => {
      expect(() => K.rnn(simpleStep, x(), h0() as never)).to.throw(TypeError, /K\.rnn: initial_states must be an array of tensors/);
      expect(() => K.rnn(simpleStep, x(), [h0()], 'yes' as never)).to.throw(TypeError, /K\.rnn: go_backwards must be a boolean, got the string "yes"/);
      expect(() => K.rnn(simpleStep, x(), [h0()], { unroll: 1 as never })).to.throw(TypeError, /K\.rnn: unroll must be a boolean/);
      expect(() => K.rnn(simpleStep, x(), [h0()], { constants: h0() as never })).to.throw(TypeError, /K\.rnn: constants must be an array of tensors/);
      expect(() => K.rnn(simpleStep, x(), [h0()], { stateful: true } as never)).to.throw(ValueError, /rnn: unknown option "stateful"/);
    });
    it('a masked scalar step output', () => {
      expect(() => K.rnn((xt, st) => [K.sum(xt), st], x(), [h0()], false, ph([S, T], 'm'))).to.throw(ShapeError, /K\.rnn: with a mask, the step output needs a samples axis/);
    });
  });
});
