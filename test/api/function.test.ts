import { expect } from 'chai';
import { backend as K, NDArray, ShapeError, ValueError } from '../../src/index.js';
import type { Node } from '../../src/ir/node.js';
import type { NestedArray } from '../../src/ir/ndarray.js';
import { expectClose } from '../helpers/assert.js';

function bad(v: unknown): never {
  return v as never;
}

const values = (vs: readonly Node[]): NestedArray[] => vs.map((v) => K.get_value(v).toArray());

describe('api/function (SPEC §3)', () => {
  beforeEach(() => K.clear_session());
  afterEach(() => K.clear_session());

  describe('update semantics', () => {
    it('the accumulator returns 0, then 1, and holds 2 after two calls with 1', () => {
      const acc = K.variable(0);
      const inc = K.placeholder([]);
      const f = K.function([inc], [acc], [K.update_add(acc, inc)]);
      expect(f([1])[0]!.toArray()).to.equal(0);
      expect(K.get_value(acc).toArray()).to.equal(1);
      expect(f([1])[0]!.toArray()).to.equal(1);
      expect(K.get_value(acc).toArray()).to.equal(2);
      expect(f([-5])[0]!.toArray()).to.equal(2);
      expect(K.get_value(acc).toArray()).to.equal(-3);
    });

    it('outputs read the values from before the call, also through expressions', () => {
      const v = K.variable([1, 2]);
      const f = K.function([], [K.multiply(v, 10), v], [K.update(v, [5, 6])]);
      expect(f([]).map((r) => r.toArray())).to.deep.equal([[10, 20], [1, 2]]);
      expect(f([]).map((r) => r.toArray())).to.deep.equal([[50, 60], [5, 6]]);
    });

    it('updates are written together: two updates swap two variables', () => {
      const a = K.variable(1, null, 'a');
      const b = K.variable(2, null, 'b');
      const f = K.function([], [a, b], [K.update(a, b), K.update(b, a)]);
      expect(f([]).map((r) => r.toArray())).to.deep.equal([1, 2]);
      expect(values([a, b])).to.deep.equal([2, 1]);
      f([]);
      expect(values([a, b])).to.deep.equal([1, 2]);
    });

    it('an update reads the other variables\' old values', () => {
      const a = K.variable(1);
      const b = K.variable(10);
      K.function([], [], [K.update_add(a, b), K.update(b, K.multiply(a, 100))])([]);
      expect(values([a, b])).to.deep.equal([11, 100]);
    });

    it('update, update_add, update_sub, moving_average_update give the new values', () => {
      const u = K.variable([1, 2]);
      const ua = K.variable([1, 2]);
      const us = K.variable([1, 2]);
      const ma = K.variable([1, 2], 'float64');
      const x = K.placeholder([2], null, 'float64');
      const f = K.function([x], [], [
        K.update(u, [7, 8]), K.update_add(ua, 2), K.update_sub(us, [1, 1]), K.moving_average_update(ma, x, 0.9),
      ]);
      f([[11, 12]]);
      expect(values([u, ua, us])).to.deep.equal([[7, 8], [3, 4], [0, 1]]);
      expectClose(K.get_value(ma), [1 * 0.9 + 11 * 0.1, 2 * 0.9 + 12 * 0.1], { atol: 1e-12 });
    });

    it('moving_average_update takes a tensor momentum', () => {
      const ma = K.variable(0, 'float64');
      const m = K.placeholder([], null, 'float64');
      const f = K.function([m], [], [K.moving_average_update(ma, 10, m)]);
      f([0.5]);
      f([0.5]);
      expectClose(K.get_value(ma), 7.5, { atol: 1e-12 });
    });

    it('takes [variable, value] pairs: tensors, numbers and arrays', () => {
      const a = K.variable([1, 2]);
      const b = K.variable(0);
      const c = K.variable([0, 0]);
      const f = K.function([], [], [[a, K.add(a, 1)], [b, 3], [c, [4, 5]]]);
      f([]);
      f([]);
      expect(values([a, b, c])).to.deep.equal([[3, 4], 3, [4, 5]]);
    });

    it('literals assigned to int and bool variables take their dtype', () => {
      const n = K.variable(5, 'int32');
      const flag = K.variable(false, 'bool');
      const ids = K.variable([0, 0], 'int8');
      K.function([], [], [[n, 0], K.update(flag, 1), K.update(ids, [3, -4])])([]);
      expect(values([n, flag, ids])).to.deep.equal([0, true, [3, -4]]);
      K.function([], [], [K.update(flag, false), K.update_add(n, 2)])([]);
      expect(values([n, flag])).to.deep.equal([2, false]);
    });

    it('an update from an input keeps a copy, and outputs are copies', () => {
      const v = K.variable([0, 0]);
      const x = K.placeholder([2]);
      const f = K.function([x], [v], [[v, x]]);
      const inp = new NDArray(new Float32Array([5, 6]), [2]);
      f([inp]);
      inp.data[0] = 99;
      expect(K.get_value(v).toArray()).to.deep.equal([5, 6]);
      const g = K.function([], [v, K.identity(v)]);
      const [out, out2] = g([]);
      out!.data[1] = 42;
      out2!.data[0] = 42;
      expect(K.get_value(v).toArray()).to.deep.equal([5, 6]);
    });
  });

  describe('build-time errors', () => {
    it('an update target that is not a variable', () => {
      const x = K.placeholder([], { name: 'x' });
      expect(() => K.update(x, 1)).to.throw(TypeError, /^update: the update target must be a variable \(from K.variable\), got the placeholder tensor x/);
      expect(() => K.update_add(K.constant(1), 1)).to.throw(TypeError, /^update_add: the update target must be a variable .* got the constant tensor/);
      expect(() => K.update_sub(bad(3), 1)).to.throw(TypeError, /^update_sub: .*got number 3/);
      expect(() => K.moving_average_update(K.exp(x), 1, 0.5)).to.throw(TypeError, /^moving_average_update: the update target must be a variable.*the exp tensor/);
      expect(() => K.function([x], [x], [[x, 1]])).to.throw(TypeError, /^function: update 0: the update target must be a variable .*placeholder tensor x/);
      expect(() => K.function([], [], [bad([1, 2])])).to.throw(TypeError, /function: update 0: the update target must be a variable .*got number 1/);
    });

    it('an update that is neither an update record nor a pair', () => {
      const v = K.variable(1);
      expect(() => K.function([], [], [bad([v])])).to.throw(TypeError, /^function: update 0 is an array of length 1; expected a K.update\* record or a \[variable, value\] pair/);
      expect(() => K.function([], [], [bad(v)])).to.throw(TypeError, /^function: update 0 is an object \(Node\)/);
      expect(() => K.function([], [], bad(K.update(v, 1)))).to.throw(TypeError, /^function: updates must be an array/);
    });

    it('the same variable updated twice', () => {
      const v = K.variable(1, null, 'v');
      expect(() => K.function([], [], [K.update(v, 2), K.update_add(v, 1)])).to.throw(ValueError, /^function: variable "v" is updated twice/);
      expect(() => K.function([], [], [[v, 2], [v, 3]])).to.throw(ValueError, /"v" is updated twice/);
    });

    it('a value whose dtype is not the variable\'s', () => {
      const v = K.variable([1, 2], 'float32', 'v');
      const n = K.variable(0, 'int32', 'n');
      expect(() => K.function([], [], [K.update(v, K.constant([1, 2], 'float64'))])).to.throw(TypeError, /^function: update 0 assigns a float64 value to the float32 variable "v"; cast it with K.cast/);
      expect(() => K.function([], [], [[n, 2.5]])).to.throw(TypeError, /update 0 assigns a float32 value to the int32 variable "n"/);
      expect(() => K.function([], [], [K.update(v, [1, 2]), K.update(n, 1e10)])).to.throw(TypeError, /update 1 assigns a int64 value to the int32 variable "n"/);
      expect(() => K.function([], [], [K.update_add(n, K.constant(1, 'int64'))])).to.throw(TypeError, /int64 value to the int32 variable "n"/);
    });

    it('a value whose static shape contradicts the variable\'s', () => {
      const v = K.variable([1, 2], null, 'v');
      expect(() => K.function([], [], [K.update(v, [1, 2, 3])])).to.throw(ShapeError, /^function: update 0 gives variable "v" of shape \(2,\) a value of shape \(3,\)/);
      expect(() => K.function([], [], [[v, K.constant([[1, 2]])]])).to.throw(ShapeError, /of shape \(2,\) a value of shape \(1, 2\)/);
      expect(() => K.function([], [], [K.update_add(v, K.constant([[1], [2]]))])).to.throw(ShapeError, /a value of shape \(2, 2\)/);
    });

    it('a placeholder the outputs or updates need that is not among the inputs', () => {
      const x = K.placeholder([2], { name: 'x' });
      const y = K.placeholder([2], { name: 'y' });
      const v = K.variable([0, 0]);
      expect(() => K.function([x], [K.add(x, y)])).to.throw(ValueError, /^function: the outputs depend on placeholder "y", which is not among the inputs/);
      expect(() => K.function([x], [x], [K.update(v, y)])).to.throw(ValueError, /placeholder "y", which is not among the inputs/);
      expect(() => K.function([], [K.add(v, x)])).to.throw(ValueError, /placeholder "x"/);
    });

    it('bad device and optimizer options', () => {
      const x = K.placeholder([1]);
      expect(() => K.function([x], [x], [], bad({ device: 'tpu' }))).to.throw(ValueError, /^function: unknown device "tpu" \(allowed: "cpu", "gpu"\)/);
      expect(() => K.function([x], [x], [], bad({ optimizer: 'O3' }))).to.throw(ValueError, /^function: unknown optimizer "O3" \(allowed: "fast_run", "fast_compile", "eqsat", "none"\)/);
    });

    it('bad inputs and outputs', () => {
      const x = K.placeholder([1], { name: 'x' });
      const v = K.variable(1, null, 'v');
      expect(() => K.function(bad(x), [x])).to.throw(TypeError, /^function: inputs must be an array of placeholders/);
      expect(() => K.function([bad(v)], [v])).to.throw(TypeError, /^function: input 0 must be a placeholder \(or K.learning_phase\(\)\), got the variable tensor v/);
      expect(() => K.function([x, K.exp(x)], [x])).to.throw(TypeError, /input 1 must be a placeholder .*the exp tensor/);
      expect(() => K.function([x, x], [x])).to.throw(ValueError, /^function: the same placeholder is listed twice in inputs/);
      expect(() => K.function([x], [x, bad(3)])).to.throw(TypeError, /^function: output 1 must be a tensor, got number 3/);
    });
  });

  describe('call-time errors: each names the input, and no variable changes', () => {
    function setup() {
      const acc = K.variable([0, 0], null, 'acc');
      const x = K.placeholder([null, 2], null, 'float32', false, 'x');
      const s = K.placeholder([], null, 'float32', false, 's');
      const f = K.function([x, s], [K.sum(x, 0)], [K.update_add(acc, K.sum(x, 0).mul(s))]);
      return { acc, f };
    }

    it('works when the values are right', () => {
      const { acc, f } = setup();
      expect(f([[[1, 2], [3, 4]], 2])[0]!.toArray()).to.deep.equal([4, 6]);
      expect(f([new NDArray([1, 1], [1, 2]), NDArray.from(1)])[0]!.toArray()).to.deep.equal([1, 1]);
      expect(K.get_value(acc).toArray()).to.deep.equal([9, 13]);
    });

    it('a wrong number of inputs', () => {
      const { acc, f } = setup();
      expect(() => f([[[1, 2]]])).to.throw(ValueError, /^function: expected 2 input values \(x, s\), got 1/);
      expect(() => f([[[1, 2]], 1, 2])).to.throw(ValueError, /expected 2 input values \(x, s\), got 3/);
      expect(() => f(bad(1))).to.throw(TypeError, /^function: call with an array of 2 input values, got number 1/);
      expect(K.get_value(acc).toArray()).to.deep.equal([0, 0]);
    });

    it('a shape that contradicts the placeholder\'s known dims', () => {
      const { acc, f } = setup();
      expect(() => f([[[1, 2, 3]], 1])).to.throw(ShapeError, /^function: input 0 \("x"\): value of shape \(1, 3\) does not fit the placeholder's shape \(None, 2\)/);
      expect(() => f([[1, 2], 1])).to.throw(ShapeError, /input 0 \("x"\): value of shape \(2,\) does not fit/);
      expect(() => f([[[1, 2]], [1]])).to.throw(ShapeError, /^function: input 1 \("s"\): value of shape \(1,\) does not fit the placeholder's shape \(\)/);
      expect(K.get_value(acc).toArray()).to.deep.equal([0, 0]);
    });

    it('an unconvertible value', () => {
      const { acc, f } = setup();
      expect(() => f([[[1, 2]], 'abc'])).to.throw(TypeError, /^function: input 1 \("s"\): cannot convert the string "abc"/);
      expect(() => f([[[1, 2], [3]], 1])).to.throw(TypeError, /^function: input 0 \("x"\): ragged nested array: index \[1\] has length 1 where length 2 was expected/);
      expect(() => f([[[1, 'a']], 1])).to.throw(TypeError, /^function: input 0 \("x"\): element at index \[0, 1\] is the string "a"/);
      expect(() => f([null, 1])).to.throw(TypeError, /input 0 \("x"\): cannot convert null/);
      expect(() => f([[[1, 2]], undefined])).to.throw(TypeError, /input 1 \("s"\): cannot convert undefined/);
      expect(() => f([{}, 1])).to.throw(TypeError, /input 0 \("x"\): cannot convert an object/);
      expect(K.get_value(acc).toArray()).to.deep.equal([0, 0]);
    });

    it('a failure while evaluating changes no variable, even updates computed before it', () => {
      const a = K.variable(1, null, 'a');
      const v = K.variable([0, 0], null, 'v');
      const p = K.placeholder([null], { name: 'p' });
      const q = K.placeholder([null], { name: 'q' });
      const f = K.function([p, q], [], [K.update_add(a, 1), K.update(v, p.add(q))]);
      expect(() => f([[1, 2], [1, 2, 3]])).to.throw(ShapeError, /cannot be broadcast/);
      expect(() => f([[1, 2, 3], [1, 2, 3]])).to.throw(ShapeError, /^function: the update of variable "v" has shape \(3,\), not the variable's \(2,\)/);
      expect(values([a, v])).to.deep.equal([1, [0, 0]]);
      f([[1, 2], [10, 20]]);
      expect(values([a, v])).to.deep.equal([2, [11, 22]]);
    });

    it('uses the function name given in the options in messages', () => {
      const x = K.placeholder([1], { name: 'x' });
      const f = K.function([x], [x], [], { name: 'train_step' });
      expect(() => f([])).to.throw(ValueError, /^train_step: expected 1 input values \(x\), got 0/);
      expect(() => f([[1, 2]])).to.throw(ShapeError, /^train_step: input 0 \("x"\)/);
    });
  });

  describe('inputs', () => {
    it('converts values to the placeholder dtype', () => {
      const i = K.placeholder([3], null, 'int32');
      const b = K.placeholder([2], null, 'bool');
      const f = K.function([i, b], [i, b]);
      const [ri, rb] = f([[1, -1.0, 3], [0, 5]]);
      expect([ri!.dtype, ri!.toArray(), rb!.dtype, rb!.toArray()]).to.deep.equal(['int32', [1, -1, 3], 'bool', [false, true]]);
      // an int placeholder never truncates (test/runtime/inputs.test.ts)
      expect(() => f([[1.9, -1.9, 3], [0, 5]])).to.throw(TypeError, /element 0 is 1.9, not an integer/);
    });

    it('a sparse placeholder is fed a COO value', () => {
      const sp = K.placeholder([2, 3], { sparse: true, name: 'sp' });
      expect(K.is_sparse(sp)).to.equal(true);
      const f = K.function([sp], [K.sum(K.to_dense(sp), 1)]);
      const coo = { indices: [[0, 0], [1, 2], [0, 1]], values: [1, 5, 2], shape: [2, 3] };
      expect(f([coo])[0]!.toArray()).to.deep.equal([3, 5]);
      expect(f([[[1, 1, 1], [0, 0, 0]]])[0]!.toArray()).to.deep.equal([3, 0]); // a dense value works too
      expect(() => f([{ indices: [[2, 0]], values: [1], shape: [2, 3] }])).to.throw(ValueError, /input 0 \("sp"\): sparse index \[2,0\] \(entry 0\) is outside shape \(2, 3\)/);
      expect(() => f([{ indices: [[0, 0]], values: [1, 2], shape: [2, 3] }])).to.throw(ValueError, /input 0 \("sp"\): sparse value has 1 indices but 2 values/);
      expect(() => f([{ indices: [], values: [], shape: [3, 3] }])).to.throw(ShapeError, /input 0 \("sp"\): value of shape \(3, 3\) does not fit the placeholder's shape \(2, 3\)/);
    });

    it('the learning phase fed as an input overrides set_learning_phase', () => {
      const x = K.placeholder([2]);
      const out = x.mul(K.cast(K.learning_phase(), 'float32'));
      const fed = K.function([x, K.learning_phase()], [out]);
      const unfed = K.function([x], [out]);
      expect(fed([[1, 2], 1])[0]!.toArray()).to.deep.equal([1, 2]);
      expect(fed([[1, 2], 0])[0]!.toArray()).to.deep.equal([0, 0]);
      expect(unfed([[1, 2]])[0]!.toArray()).to.deep.equal([0, 0]);
      K.set_learning_phase(1); // read at call time, not when the function was built
      expect(unfed([[1, 2]])[0]!.toArray()).to.deep.equal([1, 2]);
      expect(fed([[1, 2], 0])[0]!.toArray()).to.deep.equal([0, 0]);
      K.set_learning_phase(0);
      expect(unfed([[1, 2]])[0]!.toArray()).to.deep.equal([0, 0]);
    });
  });

  describe('the compiled function object', () => {
    it('takes a single output, no outputs, and unused inputs', () => {
      const x = K.placeholder([2]);
      const y = K.placeholder([2]);
      expect(K.function([x, y], x.neg())([[1, 2], [3, 4]]).map((r) => r.toArray())).to.deep.equal([[-1, -2]]);
      expect(K.function([x], [])([[1, 2]])).to.deep.equal([]);
      expect(K.function([], [K.constant(3)])([])[0]!.toArray()).to.equal(3);
    });

    it('exposes inputs, outputs, updates, device and optimizer', () => {
      const v = K.variable(0);
      const x = K.placeholder([]);
      const f = K.function([x], [x.add(v)], [K.update(v, x)], { optimizer: 'fast_compile', device: 'cpu' });
      expect(f.inputs).to.deep.equal([x]);
      expect(f.outputs).to.deep.equal([x.add(v)]);
      expect(f.updates).to.deep.equal([[v, x]]);
      expect([f.device, f.optimizer]).to.deep.equal(['cpu', 'fast_compile']);
      expect(K.function([x], [x]).optimizer).to.equal('fast_run');
    });

    it('gives the same results with every optimizer setting', () => {
      const x = K.placeholder([null, 2], null, 'float64');
      const y = K.sum(K.exp(x).mul(2), 1);
      const want = [2 * (Math.exp(1) + Math.exp(2)), 2 * (Math.exp(3) + Math.exp(4))];
      for (const optimizer of ['fast_run', 'fast_compile', 'none'] as const) {
        expectClose(K.function([x], [y], [], { optimizer })([[[1, 2], [3, 4]]])[0]!, want, { rtol: 1e-12 });
      }
    });
  });
});
