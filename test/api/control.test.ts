// map_fn, foldl, foldr (each one Scan), switch and the learning-phase selectors.
import { expect } from 'chai';
import { backend as K, NDArray, ShapeError, ValueError } from '../../src/index.js';
import type { Node } from '../../src/ir/node.js';
import { expectClose } from '../helpers/assert.js';

const ph = (shape: (number | null)[], name: string, dtype: 'float32' | 'float64' | 'int32' | 'bool' = 'float64') => K.placeholder(shape, null, dtype, false, name);
const run = (inputs: Node[], outputs: Node[], values: unknown[]) => K.function(inputs, outputs)(values);

describe('api/control', () => {
  describe('foldl and foldr', () => {
    const digits = (acc: Node, x: Node) => K.add(K.multiply(acc, 10), x);

    it('foldr walks right to left: acc * 10 + x over [1, 2, 3] from 0 is 321; foldl gives 123', () => {
      const v = K.variable([1, 2, 3]);
      expect(K.eval(K.foldl(digits, v, 0)).item()).to.equal(123);
      expect(K.eval(K.foldr(digits, v, 0)).item()).to.equal(321);
    });

    it('without an initializer the first element walked starts the fold', () => {
      const v = K.variable([1, 2, 3]);
      expect(K.eval(K.foldl(digits, v)).item()).to.equal(123);
      expect(K.eval(K.foldr(digits, v)).item()).to.equal(321);
      expect(K.eval(K.foldl((a, x) => K.subtract(a, x), v)).item()).to.equal(1 - 2 - 3);
      expect(K.eval(K.foldr((a, x) => K.subtract(a, x), v)).item()).to.equal(3 - 2 - 1);
      expect(K.eval(K.foldl((a, x) => K.subtract(a, x), K.variable([7]))).item()).to.equal(7);
    });

    it("float32 foldr of * over [1e-20, 1e-20, 10, 10, 10] is about 1e-37, larger than foldl's (Keras' test)", () => {
      const v = K.variable(new NDArray(new Float32Array([1e-20, 1e-20, 10, 10, 10]), [5]));
      const p1 = K.eval(K.foldl((a, b) => K.multiply(a, b), v)).item() as number;
      const p2 = K.eval(K.foldr((a, b) => K.multiply(a, b), v)).item() as number;
      expect(p1).to.be.lessThan(p2);
      expect(p2).to.be.greaterThan(9e-38);
      expect(p2).to.be.at.most(1e-37);
    });

    it('folds rows with a vector accumulator and keeps static shapes (Keras\' foldl test)', () => {
      const rows = [[0.5, 1, 2], [3, -1, 0.25], [1, 1, 1], [-2, 4, 8]];
      const x = ph([null, 3], 'x');
      const sum = K.foldl((a, r) => K.add(a, r), x);
      const weighted = K.foldr((a, r) => K.add(K.multiply(a, 0.5), r), x, [0, 0, 0]);
      expect(K.int_shape(sum)).to.deep.equal([3]);
      const [s, w] = run([x], [sum, weighted], [rows]);
      expectClose(s!, [2.5, 5, 11.25], { atol: 1e-12 }, 'foldl sum');
      // foldr: rows walked 3, 2, 1, 0, each halving what came before
      const want = [0, 1, 2].map((j) => rows.reduceRight((a, r) => a * 0.5 + r[j]!, 0));
      expectClose(w!, want, { atol: 1e-12 }, 'foldr');
    });

    it('an initializer number takes the dtype of elems', () => {
      const x = ph([4], 'x', 'int32');
      const f = K.foldl((a, b) => K.add(a, b), x, 100);
      expect(f.dtype).to.equal('int32');
      expect(run([x], [f], [[1, 2, 3, 4]])[0]!.item()).to.equal(110);
    });

    it('errors', () => {
      const v = ph([3], 'v');
      expect(() => K.foldl(7 as never, v)).to.throw(TypeError, /K\.foldl: fn must be a function/);
      expect(() => K.foldr(digits, ph([], 's'))).to.throw(ValueError, /K\.foldr: elems must have rank >= 1/);
      expect(() => K.foldl(digits, ph([0, 2], 'e'))).to.throw(ValueError, /K\.foldl: elems of shape \(0, 2\) is empty and there is no initializer/);
      expect(() => K.foldl((a) => K.cast(a, 'float32'), v, 0)).to.throw(TypeError, /K\.foldl: the step function's new state 0 is float32 but the state is float64/);
      expect(() => K.foldr((_a, x) => K.add(ph([2], 'p'), x), v, [0, 0, 0])).to.throw(ShapeError, /K\.foldr: .*new state 0 has shape \(2,\) but the state has \(3,\)|cannot be broadcast/);
      expect(() => K.foldl(digits, v, { init: 0 } as never)).to.throw(ValueError, /foldl: unknown option "init"/);
    });
  });

  describe('map_fn', () => {
    it('applies fn to each slice along axis 0 and stacks the results', () => {
      const x = ph([null, 3], 'x');
      const y = K.map_fn((r) => K.sum(K.square(r)), x);
      expect(K.int_shape(y)).to.deep.equal([null]);
      expectClose(run([x], [y], [[[1, 2, 3], [0, 0, 1], [-1, 1, 2]]])[0]!, [14, 1, 6], { atol: 1e-12 }, 'map_fn');
      const v = K.variable([[1, 2], [3, 4]]);
      expectClose(K.eval(K.map_fn((r) => K.multiply(r, 2), v)), [[2, 4], [6, 8]], {}, 'rows');
    });

    it('dtype casts what fn returns', () => {
      const i = ph([4], 'i', 'int32');
      const y = K.map_fn((k) => K.multiply(k, 3), i, { dtype: 'float32' });
      expect(y.dtype).to.equal('float32');
      expectClose(run([i], [y], [[0, 1, 2, 3]])[0]!, [0, 3, 6, 9], {}, 'cast');
    });

    it('nests: the inner body reads the outer step and an outer placeholder', () => {
      const x = ph([2, 3], 'x');
      const c = ph([], 'c');
      const y = K.map_fn((r) => K.map_fn((v) => K.add(K.multiply(v, K.sum(r)), c), r), x);
      expect(K.int_shape(y)).to.deep.equal([2, 3]);
      const xv = [[1, 2, 3], [4, 5, 6]];
      expectClose(run([x, c], [y], [xv, 0.5])[0]!, xv.map((r) => r.map((v) => v * (r[0]! + r[1]! + r[2]!) + 0.5)), { atol: 1e-12 }, 'nested');
    });

    it('errors', () => {
      expect(() => K.map_fn((r) => r, ph([], 's'))).to.throw(ValueError, /K\.map_fn: elems must have rank >= 1/);
      expect(() => K.map_fn(null as never, ph([2], 'p'))).to.throw(TypeError, /K\.map_fn: fn must be a function/);
      expect(() => K.map_fn((r) => r, ph([2], 'p'), null, 'float' as never)).to.throw(TypeError, /map_fn: dtype "float" is not a dtype/);
    });
  });

  describe('switch', () => {
    const a = [[1, 2, 3], [4, 5, 6]];
    const b = [[-1, -2, -3], [-4, -5, -6]];

    it('a scalar condition selects a whole branch; callables are called', () => {
      const c = ph([], 'c', 'bool');
      const t = ph([2, 3], 't');
      const e = ph([2, 3], 'e');
      const y = K.switch(c, () => t, () => e);
      expect(K.int_shape(y)).to.deep.equal([2, 3]);
      expectClose(run([c, t, e], [y], [true, a, b])[0]!, a, {}, 'true');
      expectClose(run([c, t, e], [y], [false, a, b])[0]!, b, {}, 'false');
    });

    it('a condition of equal rank selects elementwise; numbers are accepted as branches', () => {
      const c = ph([2, 3], 'c', 'bool');
      const t = ph([2, 3], 't');
      const y = K.switch(c, t, 0);
      expectClose(run([c, t], [y], [[[true, false, true], [false, false, true]], a])[0]!, [[1, 0, 3], [0, 0, 6]], {}, 'elementwise');
    });

    it('a condition of lower rank is expanded on the right (aligns with the leading dims)', () => {
      const c = ph([2], 'c', 'float64');
      const t = ph([2, 3], 't');
      const e = ph([2, 3], 'e');
      const y = K.switch(c, t, e);
      expect(K.int_shape(y)).to.deep.equal([2, 3]);
      expectClose(run([c, t, e], [y], [[0, 2], a, b])[0]!, [b[0]!, a[1]!], {}, 'rows');
      // unknown dims in the condition, and branches of different ranks
      const c1 = ph([null], 'c1', 'bool');
      const c2 = ph([null, null], 'c2', 'bool');
      const t3 = ph([null, null, 2], 't3');
      const e3 = ph([null, null, 2], 'e3');
      const y1 = K.switch(c1, t, e);
      const y2 = K.switch(c2, t3, e3);
      expect(K.int_shape(y2)).to.deep.equal([null, null, 2]);
      expectClose(run([c1, t, e], [y1], [[true, false], a, b])[0]!, [a[0]!, b[1]!], {}, 'one unknown');
      const t3v = [[[1, 2], [3, 4]], [[5, 6], [7, 8]]];
      const e3v = t3v.map((p) => p.map((q) => q.map((v) => -v)));
      expectClose(run([c2, t3, e3], [y2], [[[true, false], [false, true]], t3v, e3v])[0]!,
        [[[1, 2], [-3, -4]], [[-5, -6], [7, 8]]], {}, 'two unknowns');
      const y3 = K.switch(c2, t3, 0);
      expectClose(run([c2, t3], [y3], [[[false, true], [true, false]], t3v])[0]!, [[[0, 0], [3, 4]], [[5, 6], [0, 0]]], {}, 'else a number');
    });

    it('errors', () => {
      expect(() => K.switch(ph([2, 3], 'c'), ph([3], 't'), ph([3], 'e')))
        .to.throw(ValueError, /K\.switch: rank of condition should be less than or equal to rank of then_expression and else_expression; ndim\(condition\)=2, ndim\(then_expression\)=1/);
      expect(() => K.switch(ph([2], 'c'), ph([2], 't'), ph([3], 'e'))).to.throw(ShapeError, /K\.switch: shapes \(2,\) \(condition\) and \(3,\) \(else\) cannot be broadcast: axis -1 has 2 and 3/);
    });
  });

  describe('in_train_phase and in_test_phase', () => {
    afterEach(() => K.set_learning_phase(0));
    const x = ph([2], 'x');
    const xv = [1, 2];
    const train = (v: Node) => K.multiply(v, 10);

    it('follow the learning phase when it is fed', () => {
      const y = K.in_train_phase(() => train(x), x);
      const z = K.in_test_phase(x, () => train(x));
      const f = K.function([K.learning_phase(), x], [y, z]);
      for (const [phase, want] of [[1, [10, 20]], [0, [1, 2]]] as const) {
        const [yv, zv] = f([phase, xv]);
        expectClose(yv!, want, {}, `in_train_phase, phase ${phase}`);
        expectClose(zv!, want, {}, `in_test_phase, phase ${phase}`);
      }
    });

    it('follow the value set by set_learning_phase when it is not fed', () => {
      const y = K.in_train_phase(train(x), x);
      const f = K.function([x], [y]);
      expectClose(f([xv])[0]!, xv, {}, 'test phase by default');
      K.set_learning_phase(1);
      expectClose(f([xv])[0]!, [10, 20], {}, 'after set_learning_phase(1)');
    });

    it('a number or boolean training decides now and calls only the chosen callable', () => {
      let called = '';
      const pick = (name: string, v: Node) => () => { called += name; return v; };
      expect(K.in_train_phase(pick('x', x), pick('alt', train(x)), 1)).to.equal(x);
      expect(K.in_train_phase(pick('x', x), pick('alt', train(x)), false)).to.not.equal(x);
      expect(K.in_test_phase(pick('x', x), pick('alt', train(x)), { training: true })).to.not.equal(x);
      expect(called).to.equal('xaltalt');
    });

    it('a training tensor selects at run time', () => {
      const tr = ph([], 'training', 'bool');
      const y = K.in_train_phase(train(x), x, tr);
      expectClose(run([tr, x], [y], [true, xv])[0]!, [10, 20], {}, 'training');
      expectClose(run([tr, x], [y], [false, xv])[0]!, xv, {}, 'not training');
    });

    it('errors', () => {
      expect(() => K.in_train_phase(x, x, 'train' as never)).to.throw(TypeError, /K\.in_train_phase: training must be a number, a boolean or a tensor, got the string "train"/);
    });
  });
});
