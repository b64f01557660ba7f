import { expect } from 'chai';
import { backend as K, NDArray, ShapeError, ValueError } from '../../src/index.js';
import type { Node } from '../../src/ir/node.js';
import type { NestedArray } from '../../src/ir/ndarray.js';
import { expectClose } from '../helpers/assert.js';

/** Lets a test pass a value of the wrong type, as an untyped caller could. */
function bad(v: unknown): never {
  return v as never;
}

/** Evaluates `outputs` with the placeholders fed, through K.function. */
function run(inputs: Node[], outputs: Node[], values: unknown[]): NestedArray[] {
  return K.function(inputs, outputs)(values).map((v) => v.toArray());
}

describe('api/tensors', () => {
  beforeEach(() => K.clear_session());
  afterEach(() => {
    K.set_floatx('float32');
    K.clear_session();
  });

  describe('placeholder', () => {
    it('has the given shape, ndim, dtype and name', () => {
      const x = K.placeholder([null, 3], null, 'int16', false, 'x');
      expect([K.int_shape(x), K.ndim(x), K.dtype(x), x.name]).to.deep.equal([[null, 3], 2, 'int16', 'x']);
      expect([x.shape, x.dtype, x.ndim]).to.deep.equal([[null, 3], 'int16', 2]);
    });

    it('takes an ndim alone (all dims unknown) and defaults to floatx and a numbered name', () => {
      const x = K.placeholder(null, 3);
      expect([K.int_shape(x), K.dtype(x), x.name]).to.deep.equal([[null, null, null], 'float32', 'placeholder_1']);
      expect(K.placeholder(undefined, 0).shape).to.deep.equal([]);
      expect(K.placeholder([2]).name).to.equal('placeholder_3');
      K.set_floatx('float64');
      expect(K.placeholder([2]).dtype).to.equal('float64');
    });

    it('takes the trailing parameters as an options object', () => {
      const x = K.placeholder([2, null], { dtype: 'int32', name: 'ids', sparse: true });
      expect([x.shape, x.dtype, x.name, K.is_sparse(x)]).to.deep.equal([[2, null], 'int32', 'ids', true]);
      const y = K.placeholder({ ndim: 2, dtype: 'bool' });
      expect([y.shape, y.dtype]).to.deep.equal([[null, null], 'bool']);
      expect(K.is_sparse(K.placeholder([1]))).to.equal(false);
      expect(K.placeholder([2, 3], 2).shape).to.deep.equal([2, 3]); // a matching ndim is fine
    });

    it('without a shape or an ndim has unknown rank (Keras: shape=None, ndim=None)', () => {
      expect(K.ndim(K.placeholder())).to.equal(null);
      expect(K.int_shape(K.placeholder(null, null, 'float32'))).to.equal(null);
    });

    it('is an error for bad dims, naming the index', () => {
      expect(() => K.placeholder([2, -1])).to.throw(ValueError, /placeholder: shape \[2,-1\] has a bad dim at index 1 \(dims are non-negative integers or null\)/);
      expect(() => K.placeholder([2.5])).to.throw(ValueError, /bad dim at index 0/);
      expect(() => K.placeholder(bad(['3']))).to.throw(ValueError, /bad dim at index 0/);
      expect(() => K.placeholder(bad(5))).to.throw(ValueError, /placeholder: shape must be an array of dims, got number 5/);
      expect(() => K.placeholder(null, -1)).to.throw(ValueError, /placeholder: ndim must be an integer >= 0, got number -1/);
      expect(() => K.placeholder(null, 1.5)).to.throw(ValueError, /ndim must be an integer/);
    });

    it('is an error when ndim contradicts the shape', () => {
      expect(() => K.placeholder([2, 3], 3)).to.throw(ValueError, /placeholder: shape \(2, 3\) has rank 2 but ndim is 3/);
    });

    it('is an error for a bad dtype, listing the allowed ones', () => {
      expect(() => K.placeholder([2], null, bad('float99'))).to.throw(TypeError, /placeholder: dtype "float99" is not a dtype \(allowed: float16, float32, float64, int8, int16, int32, int64, uint8, bool\)/);
    });

    it('is an error for unknown options', () => {
      expect(() => K.placeholder([2], bad({ dtpye: 'int32' }))).to.throw(ValueError, /placeholder: unknown option "dtpye"/);
    });
  });

  describe('variable', () => {
    it('holds a number, boolean, nested array, NDArray or typed array, in floatx by default', () => {
      expect(K.get_value(K.variable(3)).toArray()).to.equal(3);
      expect(K.dtype(K.variable(3))).to.equal('float32');
      expect(K.get_value(K.variable(true)).toArray()).to.equal(1);
      expect(K.get_value(K.variable([[1, 2], [3, 4]])).toArray()).to.deep.equal([[1, 2], [3, 4]]);
      expect(K.get_value(K.variable(NDArray.from([1, 2], 'int32'))).dtype).to.equal('float32');
      expect(K.get_value(K.variable(new Int32Array([5, 6]))).toArray()).to.deep.equal([5, 6]);
    });

    it('takes a dtype and a name, positionally or as options', () => {
      const v = K.variable([1.7, -1.7], 'int32', 'w');
      expect([v.dtype, v.name, K.get_value(v).toArray()]).to.deep.equal(['int32', 'w', [1, -1]]);
      const u = K.variable(1, { name: 'u', dtype: 'float64' });
      expect([u.dtype, u.name]).to.deep.equal(['float64', 'u']);
      expect(K.variable(0).name).to.equal('variable_3');
    });

    it('takes the value of a tensor expression without placeholders', () => {
      const a = K.variable([1, 2]);
      const v = K.variable(K.multiply(a, 3));
      expect(K.get_value(v).toArray()).to.deep.equal([3, 6]);
      K.set_value(a, [0, 0]);
      expect(K.get_value(v).toArray()).to.deep.equal([3, 6]);
      expect(() => K.variable(K.placeholder([2], { name: 'p' }))).to.throw(ValueError, /variable: .* depends on placeholder "p"/);
    });

    it('takes a sparse COO value', () => {
      const v = K.variable({ indices: [[0, 1], [1, 0]], values: [5, 6], shape: [2, 2] });
      expect(K.get_value(v).toArray()).to.deep.equal([[0, 5], [6, 0]]);
    });

    it('is an error for unconvertible values and bad dtypes', () => {
      expect(() => K.variable('abc')).to.throw(TypeError, /variable: value: cannot convert the string "abc"/);
      expect(() => K.variable([[1], [2, 3]])).to.throw(TypeError, /variable: value: ragged nested array: index \[1\]/);
      expect(() => K.variable(1, bad('double'))).to.throw(TypeError, /variable: dtype "double" is not a dtype/);
    });

    it('owns its value: later changes to the given array do not reach it', () => {
      const nd = NDArray.from([1, 2], 'float32');
      const v = K.variable(nd);
      nd.data[0] = 9;
      const ta = new Float32Array([1, 2]);
      const w = K.variable(ta);
      ta[0] = 9;
      expect(K.get_value(v).toArray()).to.deep.equal([1, 2]);
      expect(K.get_value(w).toArray()).to.deep.equal([1, 2]);
    });
  });

  describe('constant', () => {
    it('holds a value in floatx or a given dtype', () => {
      const c = K.constant([[1, 2]]);
      expect([c.dtype, c.shape, K.eval(c).toArray()]).to.deep.equal(['float32', [1, 2], [[1, 2]]]);
      expect(K.eval(K.constant(2.5, 'int8')).toArray()).to.equal(2);
    });

    it('fills a shape with a scalar and reshapes a value of the right size', () => {
      expect(K.eval(K.constant(7, 'int32', [2, 3])).toArray()).to.deep.equal([[7, 7, 7], [7, 7, 7]]);
      expect(K.eval(K.constant([1, 2, 3, 4], null, [2, 2])).toArray()).to.deep.equal([[1, 2], [3, 4]]);
      expect(K.eval(K.constant(1, { shape: [2], dtype: 'bool' })).toArray()).to.deep.equal([true, true]);
    });

    it('is an error when the value does not fit the shape or the shape is unknown', () => {
      expect(() => K.constant([1, 2, 3], null, [2, 2])).to.throw(ShapeError, /constant: value of shape \(3,\) does not fit shape \(2, 2\)/);
      expect(() => K.constant(1, null, [null])).to.throw(ValueError, /constant: shape \(None,\) has an unknown dim at index 0/);
    });

    it('is not a Keras tensor and not a variable', () => {
      const c = K.constant(1);
      expect(K.is_keras_tensor(c)).to.equal(false);
      expect(K.get_value(c).toArray()).to.equal(1); // Keras: x.eval(session), a constant's value
    });
  });

  describe('zeros, ones, eye', () => {
    it('make variables of the shape and dtype', () => {
      const z = K.zeros([2, 3], 'int32', 'z');
      expect([z.op, z.name, z.dtype, K.get_value(z).toArray()]).to.deep.equal(['variable', 'z', 'int32', [[0, 0, 0], [0, 0, 0]]]);
      expect(K.get_value(K.ones([2])).toArray()).to.deep.equal([1, 1]);
      expect(K.dtype(K.ones([2]))).to.equal('float32');
      expect(K.get_value(K.eye(3)).toArray()).to.deep.equal([[1, 0, 0], [0, 1, 0], [0, 0, 1]]);
      expect(K.get_value(K.eye(0)).shape).to.deep.equal([0, 0]);
      expect(K.is_keras_tensor(K.zeros([1]))).to.equal(false);
    });

    it('take dtype and name as options', () => {
      const o = K.ones([2], { dtype: 'int8', name: 'o' });
      expect([o.dtype, o.name]).to.deep.equal(['int8', 'o']);
      expect(K.eye(2, { dtype: 'bool' }).dtype).to.equal('bool');
      expect(K.zeros([1], { name: 'zz' }).name).to.equal('zz');
    });

    it('are errors for unknown or bad dims and sizes', () => {
      expect(() => K.zeros([null, 2])).to.throw(ValueError, /zeros: shape \(None, 2\) has an unknown dim at index 0; a concrete shape is needed/);
      expect(() => K.ones([-2])).to.throw(ValueError, /ones: shape \[-2\] has a bad dim at index 0/);
      expect(() => K.eye(-1)).to.throw(ValueError, /eye: size must be an integer >= 0, got number -1/);
      expect(() => K.eye(2.5)).to.throw(ValueError, /eye: size must be an integer/);
      expect(() => K.zeros([2], bad('int'))).to.throw(TypeError, /zeros: dtype "int" is not a dtype/);
    });
  });

  describe('zeros_like, ones_like, identity, cast', () => {
    it('zeros_like/ones_like follow the run-time shape and keep or set the dtype', () => {
      const x = K.placeholder([null, 2], null, 'int16', false, 'x');
      const z = K.zeros_like(x);
      const o = K.ones_like(x, 'float64');
      expect([z.shape, z.dtype, o.dtype]).to.deep.equal([[null, 2], 'int16', 'float64']);
      expect(K.is_keras_tensor(z)).to.equal(false);
      expect(run([x], [z, o], [[[5, 6], [7, 8], [9, 10]]])).to.deep.equal([[[0, 0], [0, 0], [0, 0]], [[1, 1], [1, 1], [1, 1]]]);
      expect(K.eval(K.ones_like(K.variable([NaN, 1]), { dtype: 'int32' })).toArray()).to.deep.equal([1, 1]);
      expect(() => K.zeros_like(x, bad('f32'))).to.throw(TypeError, /zeros_like: dtype "f32"/);
    });

    it('identity gives the same value as a new tensor', () => {
      const x = K.placeholder([2], null, 'float32', false, 'x');
      const y = K.identity(x);
      expect(y).to.not.equal(x);
      expect([y.op, y.shape, y.dtype]).to.deep.equal(['identity', [2], 'float32']);
      expect(run([x], [y], [[1, 2]])).to.deep.equal([[1, 2]]);
    });

    it('cast converts as a store does (truncation, wrapping, bool, float16 rounding)', () => {
      const x = K.placeholder([5], null, 'float64', false, 'x');
      const vals = [1.7, -1.7, 300, 0, 0.1];
      expect(run([x], [K.cast(x, 'int32'), K.cast(x, 'uint8'), K.cast(x, 'bool'), K.cast(x, 'float16')], [vals])).to.deep.equal([
        [1, -1, 300, 0, 0], [1, 255, 44, 0, 0], [true, true, true, false, true], [1.7001953125, -1.7001953125, 300, 0, 0.0999755859375],
      ]);
      expect(K.cast(x, 'int8').dtype).to.equal('int8');
    });

    it('cast to the same dtype is the tensor itself; a bad dtype is an error', () => {
      const x = K.placeholder([2], null, 'int32');
      expect(K.cast(x, 'int32')).to.equal(x);
      expect(() => K.cast(x, bad('integer'))).to.throw(TypeError, /cast: dtype "integer" is not a dtype/);
    });
  });

  describe('int_shape, shape, ndim, dtype, count_params', () => {
    it('int_shape gives the static shape with null for unknown dims; also of NDArrays', () => {
      const x = K.placeholder([null, 3, null]);
      expect(K.int_shape(x)).to.deep.equal([null, 3, null]);
      expect(K.int_shape(K.sum(x, 1))).to.deep.equal([null, null]);
      expect(K.int_shape(NDArray.from([[1, 2]]))).to.deep.equal([1, 2]);
      expect(K.int_shape(K.variable(1))).to.deep.equal([]);
    });

    it('int_shape returns a copy', () => {
      const x = K.placeholder([2, 3]);
      const s = K.int_shape(x)!;
      s[0] = 9;
      expect(K.int_shape(x)).to.deep.equal([2, 3]);
    });

    it('ndim and dtype, also of NDArrays', () => {
      expect(K.ndim(K.placeholder(null, 4))).to.equal(4);
      expect(K.ndim(NDArray.from(1))).to.equal(0);
      expect(K.dtype(K.placeholder([1], null, 'uint8'))).to.equal('uint8');
      expect(K.dtype(NDArray.from([true]))).to.equal('bool');
    });

    it('are errors for non-tensors', () => {
      expect(() => K.int_shape(bad([1, 2]))).to.throw(TypeError, /int_shape: x must be a tensor, got an array of length 2/);
      expect(() => K.ndim(bad(3))).to.throw(TypeError, /ndim: x must be a tensor, got number 3/);
      expect(() => K.dtype(bad('float32'))).to.throw(TypeError, /dtype: x must be a tensor/);
      expect(() => K.count_params(bad(null))).to.throw(TypeError, /count_params: x must be a tensor, got null/);
    });

    it('shape is the run-time shape as a symbolic int32 vector', () => {
      const x = K.placeholder([null, 3]);
      const s = K.shape(x);
      expect([s.dtype, s.shape]).to.deep.equal(['int32', [2]]);
      expect(run([x], [s], [[[1, 2, 3], [4, 5, 6]]])).to.deep.equal([[2, 3]]);
      expect(K.eval(K.shape(K.variable(5))).toArray()).to.deep.equal([]);
    });

    it('count_params is the number of elements, and an error with unknown dims', () => {
      expect(K.count_params(K.zeros([2, 3]))).to.equal(6);
      expect(K.count_params(K.variable(1))).to.equal(1);
      expect(K.count_params(K.placeholder([4, 5]))).to.equal(20);
      expect(() => K.count_params(K.placeholder([null, 5], { name: 'p' }))).to.throw(ValueError, /count_params: p has unknown dims \(None, 5\)/);
    });
  });

  describe('is_keras_tensor', () => {
    it('is false for variables, placeholders and op results (Keras 2.3: only what a layer returns, with _keras_history)', () => {
      const v = K.variable([1]);
      const x = K.placeholder([2, 4, 5]);
      expect(K.is_keras_tensor(v)).to.equal(false);
      expect(K.is_keras_tensor(x)).to.equal(false); // Keras' docstring: "A placeholder is not a Keras tensor."
      expect(K.is_keras_tensor(K.add(v, 1))).to.equal(false);
      expect(K.is_keras_tensor(x.mul(2))).to.equal(false);
      expect(K.is_keras_tensor(K.learning_phase())).to.equal(false);
      const out = K.tanh(K.placeholder([3, 7]));
      out._keras_history = ['Dense', 0, 0]; // what Keras' engine sets on a layer's output
      expect(K.is_keras_tensor(out)).to.equal(true);
    });

    it('is an error for non-tensors', () => {
      expect(() => K.is_keras_tensor(3)).to.throw(ValueError, /is_keras_tensor: unexpectedly found number 3; expected a symbolic tensor/);
      expect(() => K.is_keras_tensor(NDArray.from([1]))).to.throw(ValueError, /unexpectedly found an object \(NDArray\)/);
      expect(() => K.is_keras_tensor([1])).to.throw(ValueError, /is_keras_tensor/);
    });
  });

  describe('eval', () => {
    it('evaluates expressions of constants and variables, and plain values', () => {
      const v = K.variable([1, 2, 3]);
      const e = K.eval(K.sum(K.multiply(v, K.constant([2, 2, 2]))));
      expect([e.dtype, e.toArray()]).to.deep.equal(['float32', 12]);
      expect(K.eval(v).toArray()).to.deep.equal([1, 2, 3]);
      expect(K.eval(2).toArray()).to.equal(2);
      expect(K.eval([[1, 2]]).toArray()).to.deep.equal([[1, 2]]);
    });

    it('is an error when a placeholder is reachable, naming it', () => {
      const x = K.placeholder([2], { name: 'inp' });
      expect(() => K.eval(K.exp(x).add(K.variable([1, 1])))).to.throw(ValueError, /eval: add_\d+ depends on placeholder "inp"; evaluate it with K.function and feed the placeholder/);
    });

    it('reads the learning phase set by set_learning_phase', () => {
      const lp = K.cast(K.learning_phase(), 'float32');
      expect(K.eval(lp).toArray()).to.equal(0);
      K.set_learning_phase(1);
      expect(K.eval(lp).toArray()).to.equal(1);
    });
  });

  describe('get_value, set_value, batch_get_value, batch_set_value, get_variable_shape', () => {
    it('get_value returns a copy of the value', () => {
      const v = K.variable([1, 2], 'int32');
      const got = K.get_value(v);
      expect([got.dtype, got.toArray()]).to.deep.equal(['int32', [1, 2]]);
      got.data[0] = 7;
      expect(K.get_value(v).toArray()).to.deep.equal([1, 2]);
    });

    it('set_value converts to the variable dtype and owns the value', () => {
      const v = K.variable([0, 0], 'int8');
      K.set_value(v, [1.9, 300]);
      expect(K.get_value(v).toArray()).to.deep.equal([1, 44]);
      const nd = NDArray.from([3, 4], 'int8');
      K.set_value(v, nd);
      nd.data[0] = 0;
      expect(K.get_value(v).toArray()).to.deep.equal([3, 4]);
      const s = K.variable(0);
      K.set_value(s, 5);
      expect(K.get_value(s).toArray()).to.equal(5);
    });

    it('set_value is an error for a shape mismatch, naming the variable and both shapes, and keeps the value', () => {
      const v = K.variable([[1, 2]], null, 'w');
      expect(() => K.set_value(v, [1, 2])).to.throw(ShapeError, /set_value: value of shape \(2,\) does not match variable "w" of shape \(1, 2\)/);
      expect(() => K.set_value(v, [[1, 2, 3]])).to.throw(ShapeError, /shape \(1, 3\)/);
      expect(() => K.set_value(v, bad('x'))).to.throw(TypeError, /set_value: value: cannot convert the string "x"/);
      expect(K.get_value(v).toArray()).to.deep.equal([[1, 2]]);
    });

    it('set_value and get_value are errors for non-variables', () => {
      const x = K.placeholder([2], { name: 'x' });
      expect(() => K.set_value(x, [1, 2])).to.throw(TypeError, /set_value: expected a variable \(from K.variable\), got the placeholder tensor x/);
      expect(() => K.get_value(bad(3))).to.throw(TypeError, /get_value: expected a tensor \(a variable, or an expression without placeholders\), got number 3/);
      expect(() => K.get_value(K.add(x, 1))).to.throw(ValueError, /get_value: .* depends on placeholder "x"; evaluate it with K.function/);
    });

    it('batch_get_value and batch_set_value work on lists', () => {
      const a = K.variable(1);
      const b = K.variable([1, 2], 'int32');
      K.batch_set_value([[a, 5], [b, [3, 4]]]);
      expect(K.batch_get_value([a, b]).map((v) => v.toArray())).to.deep.equal([5, [3, 4]]);
      expect(K.batch_get_value([])).to.deep.equal([]);
    });

    it('batch_set_value changes nothing when one entry is bad', () => {
      const a = K.variable(1, null, 'a');
      const b = K.variable([1, 2], null, 'b');
      expect(() => K.batch_set_value([[a, 5], [b, [1, 2, 3]]])).to.throw(ShapeError, /batch_set_value: value of shape \(3,\) does not match variable "b" of shape \(2,\)/);
      expect(() => K.batch_set_value([[a, 5], [bad(K.placeholder([1])), [1]]])).to.throw(TypeError, /batch_set_value: expected a variable/);
      expect(() => K.batch_set_value([[a, 5], bad([b])])).to.throw(TypeError, /batch_set_value: entry 1 is not a \[variable, value\] pair/);
      expect(() => K.batch_set_value([[a, 5], [b, bad('no')]])).to.throw(TypeError, /cannot convert the string "no"/);
      expect(K.batch_get_value([a, b]).map((v) => v.toArray())).to.deep.equal([1, [1, 2]]);
      expect(() => K.batch_set_value(bad(a))).to.throw(TypeError, /batch_set_value: expected an array of \[variable, value\] pairs/);
      expect(() => K.batch_get_value(bad(a))).to.throw(TypeError, /batch_get_value: ops must be an array of tensors/);
    });

    it('get_variable_shape gives a variable\'s shape and rejects other tensors', () => {
      expect(K.get_variable_shape(K.zeros([2, 5]))).to.deep.equal([2, 5]);
      expect(K.get_variable_shape(K.variable(1))).to.deep.equal([]);
      expect(() => K.get_variable_shape(K.placeholder([2]))).to.throw(TypeError, /get_variable_shape: expected a variable/);
    });
  });

  describe('learning phase, clear_session, name_scope, uids', () => {
    it('learning_phase is one uint8 scalar tensor; set_learning_phase takes 0 or 1', () => {
      const lp = K.learning_phase();
      expect([lp.dtype, lp.shape, lp.op]).to.deep.equal(['uint8', [], 'learning_phase']);
      expect(K.learning_phase()).to.equal(lp);
      K.set_learning_phase(1);
      expect(K.eval(lp).toArray()).to.equal(1);
      K.set_learning_phase(0);
      expect(K.eval(lp).toArray()).to.equal(0);
    });

    it('set_learning_phase rejects other values and keeps the old one', () => {
      K.set_learning_phase(1);
      for (const v of [2, -1, 0.5, true, '1', null]) {
        expect(() => K.set_learning_phase(bad(v)), String(v)).to.throw(ValueError, /set_learning_phase: expected 0 or 1, got/);
      }
      expect(K.eval(K.learning_phase()).toArray()).to.equal(1);
    });

    it('clear_session resets uids, the learning phase and its tensor', () => {
      K.placeholder([1]);
      K.variable(1);
      K.set_learning_phase(1);
      const lp = K.learning_phase();
      K.clear_session();
      expect(K.placeholder([1]).name).to.equal('placeholder_1');
      expect(K.variable(1).name).to.equal('variable_1');
      expect(K.eval(K.learning_phase()).toArray()).to.equal(0);
      expect(K.learning_phase()).to.not.equal(lp);
    });

    it('name_scope prefixes the names of placeholders and variables made inside, and nests', () => {
      const [a, b, c] = K.name_scope('outer', () => {
        const a1 = K.placeholder([1], { name: 'x' });
        const inner = K.name_scope('inner', () => [K.variable(1, null, 'w'), K.placeholder([1])] as const);
        return [a1, ...inner] as const;
      });
      expect([a.name, b.name, c.name]).to.deep.equal(['outer/x', 'outer/inner/w', 'outer/inner/placeholder_2']);
      expect(K.placeholder([1], { name: 'y' }).name).to.equal('y');
    });

    it('name_scope pops its scope when the body throws, and checks its arguments', () => {
      expect(() => K.name_scope('s', () => { throw new Error('boom'); })).to.throw(Error, 'boom');
      expect(K.placeholder([1], { name: 'z' }).name).to.equal('z');
      expect(() => K.name_scope('', () => 1)).to.throw(ValueError, /name_scope: name must be a non-empty string/);
      expect(() => K.name_scope('a', bad(1))).to.throw(TypeError, /name_scope: the second argument must be the function/);
    });

    it('get_uid counts per prefix; reset_uids restarts', () => {
      expect([K.get_uid('dense'), K.get_uid('dense'), K.get_uid('conv'), K.get_uid()]).to.deep.equal([1, 2, 1, 1]);
      K.reset_uids();
      expect(K.get_uid('dense')).to.equal(1);
    });
  });

  describe('arithmetic functions (SPEC §1)', () => {
    const x = () => K.placeholder([2, 3], null, 'float32', false, 'x');
    const xv = [[1, -2, 3.5], [-4.5, 5, 6]];

    it('add, subtract, multiply, divide broadcast a row', () => {
      const a = x();
      const b = K.placeholder([3], null, 'float32', false, 'b');
      const outs = [K.add(a, b), K.subtract(a, b), K.multiply(a, b), K.divide(a, b)];
      for (const o of outs) expect(o.shape).to.deep.equal([2, 3]);
      const got = run([a, b], outs, [xv, [1, 2, 4]]);
      expect(got).to.deep.equal([
        [[2, 0, 7.5], [-3.5, 7, 10]], [[0, -4, -0.5], [-5.5, 3, 2]], [[1, -4, 14], [-4.5, 10, 24]], [[1, -1, 0.875], [-4.5, 2.5, 1.5]],
      ]);
    });

    it('broadcast (2, 1) with (1, 3), and unknown dims', () => {
      const a = K.placeholder([2, 1], null, 'float64');
      const b = K.placeholder([1, 3], null, 'float64');
      expect(run([a, b], [K.add(a, b)], [[[10], [20]], [[1, 2, 3]]])).to.deep.equal([[[11, 12, 13], [21, 22, 23]]]);
      const u = K.placeholder([null, 1]);
      const w = K.placeholder([4]);
      expect(K.int_shape(K.add(u, w))).to.deep.equal([null, 4]);
      expect(K.int_shape(K.add(K.placeholder([null, 3]), K.placeholder([2, null])))).to.deep.equal([2, 3]);
      expect(K.int_shape(K.add(K.placeholder([null]), K.placeholder([null])))).to.deep.equal([null]);
      expect(K.int_shape(K.multiply(K.placeholder([]), K.placeholder([5, 1])))).to.deep.equal([5, 1]);
    });

    it('accept numbers and arrays on either side', () => {
      const a = K.placeholder([2], null, 'float32', false, 'a');
      const outs = [K.add(1, a), K.add(a, 1), K.subtract(10, a), K.subtract(a, 10), K.multiply(2, a), K.divide(1, a), K.divide(a, 4), K.add([1, 2], a), K.mod(7, a)];
      expect(run([a], outs, [[2, 4]])).to.deep.equal([[3, 5], [3, 5], [8, 6], [-8, -6], [4, 8], [0.5, 0.25], [0.5, 1], [3, 6], [1, 3]]);
      expect(K.eval(K.add(1, 2)).toArray()).to.equal(3);
      expect(K.eval(K.subtract(1, 2)).dtype).to.equal('float32');
    });

    it('negative, floor, ceil', () => {
      const a = x();
      expect(run([a], [K.negative(a), K.floor(a), K.ceil(a)], [xv])).to.deep.equal([
        [[-1, 2, -3.5], [4.5, -5, -6]], [[1, -2, 3], [-5, 5, 6]], [[1, -2, 4], [-4, 5, 6]],
      ]);
    });

    it('mod takes the sign of the divisor (Python), for ints and floats', () => {
      const a = K.placeholder([4], null, 'int32');
      const b = K.placeholder([4], null, 'int32');
      expect(run([a, b], [K.mod(a, b)], [[7, -7, 7, -7], [3, 3, -3, -3]])).to.deep.equal([[1, 2, -2, -1]]);
      const f = K.placeholder([2], null, 'float64');
      expectClose(K.function([f], [K.mod(f, 1.5)])([[4, -4]])[0]!, [1, 0.5]);
    });

    it('keep int dtypes with int operands and integer numbers; divide makes float32', () => {
      const i = K.placeholder([2], null, 'int32');
      const j = K.placeholder([2], null, 'int32');
      expect([K.add(i, j), K.subtract(i, 1), K.multiply(2, i), K.mod(i, 3), K.negative(i), K.floor(i), K.ceil(i)].map((t) => t.dtype)).to.deep.equal(Array(7).fill('int32'));
      const d = K.divide(i, j);
      expect(d.dtype).to.equal('float32');
      expect(run([i, j], [d, K.divide(i, 2)], [[7, -7], [2, 2]])).to.deep.equal([[3.5, -3.5], [3.5, -3.5]]);
    });

    it('promote mixed dtypes and fractional numbers', () => {
      const i8 = K.placeholder([1], null, 'int8');
      const i32 = K.placeholder([1], null, 'int32');
      const u8 = K.placeholder([1], null, 'uint8');
      const f16 = K.placeholder([1], null, 'float16');
      const f64 = K.placeholder([1], null, 'float64');
      const bl = K.placeholder([1], null, 'bool');
      expect(K.add(i8, i32).dtype).to.equal('int32');
      expect(K.add(i8, u8).dtype).to.equal('int16');
      expect(K.add(i32, f16).dtype).to.equal('float16');
      expect(K.multiply(f16, f64).dtype).to.equal('float64');
      expect(K.add(i32, 1.5).dtype).to.equal('float32');
      expect(K.add(f16, 1).dtype).to.equal('float16');
      expect(K.add(f16, 1.5).dtype).to.equal('float16');
      expect(K.add(bl, bl).dtype).to.equal('bool');
    });

    it('a number outside an int operand\'s range widens instead of wrapping', () => {
      const i8 = K.placeholder([1], null, 'int8');
      const u8 = K.placeholder([1], null, 'uint8');
      const s = K.add(i8, 300);
      const t = K.subtract(u8, -1);
      expect([s.dtype, t.dtype]).to.deep.equal(['int32', 'int32']);
      expect(run([i8, u8], [s, t, K.add(i8, 100)], [[100], [255]])).to.deep.equal([[400], [256], [-56]]);
      expect(K.add(K.placeholder([1], null, 'int32'), 2 ** 40).dtype).to.equal('int64');
    });

    it('a number meeting a bool tensor is an int (True + 1 is 2)', () => {
      const b = K.placeholder([2], null, 'bool');
      const s = K.add(b, 1);
      expect(s.dtype).to.equal('int32');
      expect(run([b], [s, K.multiply(b, 3), K.add(b, 0.5)], [[true, false]])).to.deep.equal([[2, 1], [3, 0], [1.5, 0.5]]);
    });

    it('negative of an int64 zero is zero, so 1 / -0 stays +Infinity as in NumPy', () => {
      const i = K.placeholder([2], null, 'int64');
      expect(run([i], [K.divide(1, K.negative(i))], [[0, 2]])).to.deep.equal([[Infinity, -0.5]]);
    });

    it('negative of an unsigned int wraps', () => {
      const u = K.placeholder([2], null, 'uint8');
      expect(run([u], [K.negative(u)], [[5, 0]])).to.deep.equal([[251, 0]]);
    });

    for (const [name, fn] of [['add', K.add], ['subtract', K.subtract], ['multiply', K.multiply], ['divide', K.divide], ['mod', K.mod]] as const) {
      it(`${name}: shape errors name the function and both shapes`, () => {
        expect(() => fn(K.placeholder([2, 3]), K.placeholder([4]))).to.throw(ShapeError, new RegExp(`^K\\.${name}: shapes \\(2, 3\\) \\(x\\) and \\(4,\\) \\(y\\) cannot be broadcast: axis -1 has 3 and 4$`));
        expect(() => fn(K.placeholder([5, null]), K.placeholder([3, 1]))).to.throw(ShapeError, new RegExp(`^K\\.${name}: shapes \\(5, None\\) \\(x\\) and \\(3, 1\\) \\(y\\) cannot be broadcast: axis -2 has 5 and 3`));
      });
    }

    it('shape errors of unknown dims surface when the function runs', () => {
      const a = K.placeholder([null]);
      const b = K.placeholder([null]);
      const f = K.function([a, b], [K.add(a, b)]);
      expect(f([[1, 2], [3, 4]])[0]!.toArray()).to.deep.equal([4, 6]);
      expect(() => f([[1, 2], [3, 4, 5]])).to.throw(ShapeError, /shapes \(2,\) and \(3,\) cannot be broadcast/);
    });

    it('are errors for operands that are not tensors or values', () => {
      expect(() => K.add(bad('a'), 1)).to.throw(TypeError, /add: x is the string "a"/);
      expect(() => K.multiply(K.placeholder([1]), bad({}))).to.throw(TypeError, /multiply: y is an object/);
      expect(() => K.negative(bad(undefined))).to.throw(TypeError, /negative: x is undefined/);
    });
  });

  describe('tensor methods (SPEC §1)', () => {
    it('.add .sub .mul .div .neg .pow chain and build the same nodes as the functions', () => {
      const x = K.placeholder([3], null, 'float32', false, 'x');
      const y = x.add(1).mul(2).sub(x).div(4).neg();
      expect(y).to.equal(K.negative(K.divide(K.subtract(K.multiply(K.add(x, 1), 2), x), 4)));
      expect(run([x], [y, x.pow(2), x.pow(0.5), x.pow(x)], [[1, 4, 9]])).to.deep.equal([
        [-0.75, -1.5, -2.75], [1, 16, 81], [1, 2, 3], [1, 256, 387420480],
      ]);
    });

    it('.pow keeps int dtypes with integer exponents', () => {
      const i = K.placeholder([3], null, 'int32');
      const p = i.pow(2);
      expect(p.dtype).to.equal('int32');
      expect(run([i], [p], [[-3, 0, 5]])).to.deep.equal([[9, 0, 25]]);
      expect(i.pow(0.5).dtype).to.equal('float32');
    });

    it('.dot is Theano\'s dot; a shape error names K.dot and both shapes', () => {
      const x = K.placeholder([null, 3], null, 'float32', false, 'x');
      const W = K.variable([[1, 0], [0, 1], [1, 1]]);
      const y = x.dot(W);
      expect(K.int_shape(y)).to.deep.equal([null, 2]);
      expect(run([x], [y, x.dot([1, 1, 1])], [[[1, 2, 3]]])).to.deep.equal([[[4, 5]], [6]]);
      expect(K.int_shape(K.placeholder([2, 3, 4]).dot(K.placeholder([5, 4, 6])))).to.deep.equal([2, 3, 5, 6]);
      expect(() => x.dot(K.placeholder([4, 2]))).to.throw(ShapeError, /^K\.dot: shapes \(None, 3\) \(x\) and \(4, 2\) \(y\) are not aligned: axis 1 of x has 3 but axis 0 of y has 4/);
      expect(() => K.placeholder([]).dot(W)).to.throw(ShapeError, /K\.dot: dot needs tensors of rank >= 1; got shapes \(\) and \(3, 2\)/);
    });

    it('.get indexes the first axis (negative from the end); errors for scalars, non-integers, out of range', () => {
      const x = K.placeholder([3, 2], null, 'int32', false, 'x');
      expect(K.int_shape(x.get(1))).to.deep.equal([2]);
      expect(run([x], [x.get(0), x.get(-1), x.get(1).get(0)], [[[1, 2], [3, 4], [5, 6]]])).to.deep.equal([[1, 2], [5, 6], 3]);
      expect(() => x.get(3)).to.throw(ValueError, /get: index 3 is out of range for axis 0 of size 3 \(shape \(3, 2\)\)/);
      expect(() => x.get(-4)).to.throw(ValueError, /get: index -4 is out of range/);
      expect(() => x.get(0.5)).to.throw(ValueError, /get: index must be an integer, got 0.5/);
      expect(() => K.placeholder([], { name: 's' }).get(0)).to.throw(ValueError, /get: cannot index the scalar tensor s/);
      const u = K.placeholder([null, 2]);
      const f = K.function([u], [u.get(5)]);
      expect(() => f([[[1, 2]]])).to.throw(ValueError, /index 5 is out of range for axis 0 of size 1/);
    });

    it('.T reverses the axes', () => {
      const x = K.placeholder([2, null, 4]);
      expect(K.int_shape(x.T)).to.deep.equal([4, null, 2]);
      const m = K.placeholder([2, 3]);
      expect(run([m], [m.T], [[[1, 2, 3], [4, 5, 6]]])).to.deep.equal([[[1, 4], [2, 5], [3, 6]]]);
      const v = K.placeholder([3]);
      expect(K.int_shape(v.T)).to.deep.equal([3]);
      expect(K.int_shape(K.placeholder([]).T)).to.deep.equal([]);
    });

    it('.shape, .dtype, .name', () => {
      const x = K.placeholder([null, 2], null, 'int8', false, 'inp');
      expect([x.shape, x.dtype, x.name]).to.deep.equal([[null, 2], 'int8', 'inp']);
      const y = x.mul(2);
      expect([y.shape, y.dtype]).to.deep.equal([[null, 2], 'int8']);
      expect(y.name).to.match(/^mul_\d+$/);
      expect(K.variable(1, null, 'v').name).to.equal('v');
    });

    it('method shape errors name the K function', () => {
      expect(() => K.placeholder([2]).add(K.placeholder([3]))).to.throw(ShapeError, /^K\.add: shapes \(2,\) \(x\) and \(3,\) \(y\)/);
      expect(() => K.placeholder([2]).sub(K.placeholder([3]))).to.throw(ShapeError, /^K\.subtract:/);
      expect(() => K.placeholder([2]).mul(K.placeholder([3]))).to.throw(ShapeError, /^K\.multiply:/);
      expect(() => K.placeholder([2]).div(K.placeholder([3]))).to.throw(ShapeError, /^K\.divide:/);
      expect(() => K.placeholder([2]).pow(K.placeholder([3]))).to.throw(ShapeError, /^K\.pow: shapes \(2,\) \(x\) and \(3,\) \(y\)/);
    });
  });
});

describe('float64 values keep full precision', () => {
  it('variable, constant and set_value convert nested arrays straight to the dtype', async () => {
    const { backend: K } = await import('../../src/index.js');
    const { expect } = await import('chai');
    const v = K.variable([0.1], 'float64');
    expect(K.get_value(v).data[0]).to.equal(0.1);
    expect(K.eval(K.constant([0.1], 'float64')).data[0]).to.equal(0.1);
    K.set_value(v, [0.3]);
    expect(K.get_value(v).data[0]).to.equal(0.3);
  });
});
