// Keras 2.3.1's smaller names (sessions, predicates, size, normalize_data_format,
// control_dependencies, manual_variable_initialization), the 2.1-2.3 signatures, both spellings of
// renamed arguments, and the call forms Keras' own modules use.
import { expect } from 'chai';
import { backend as K, NDArray, ShapeError, ValueError } from '../../src/index.js';
import { expectClose } from '../helpers/assert.js';
import { opTable } from '../helpers/table.js';
import { gradTable } from '../helpers/gradtable.js';
import { tf, tfRef } from '../helpers/tf-ref.js';

describe('K.get_session / K.set_session: Session.run(fetches, feed_dict)', () => {
  it('evaluates a tensor, a nested list of tensors, with a Map or a list of pairs as feed_dict', () => {
    const x = K.placeholder([null, 3]);
    const s = K.get_session();
    expect(K.get_session()).to.equal(s);
    expectClose(s.run(K.sum(x), new Map([[x, [[1, 2, 3], [4, 5, 6]]]])), 21);
    const [a, [b]] = s.run([K.max(x), [K.mean(x, 1)]], [[x, [[1, 2, 3], [4, 5, 9]]]]);
    expectClose(a, 9);
    expectClose(b, [2, 6]);
  });
  it('updates among the fetches are applied after the outputs, and give null', () => {
    const v = K.variable(1);
    const [before, u] = K.get_session().run([K.identity(v), K.update_add(v, 2)]);
    expectClose(before, 1);
    expect(u).to.equal(null);
    expectClose(K.get_value(v), 3);
  });
  it('constants and variables need no feed_dict (K.get_session().run(tensor), as Keras code writes)', () => {
    expectClose(K.get_session().run(K.add(K.ones([2]), 1)), [2, 2]);
  });
  it('set_session replaces it; clear_session makes a new one', () => {
    const s = new K.Session({ optimizer: 'none' });
    K.set_session(s);
    expect(K.get_session()).to.equal(s);
    expectClose(K.get_session().run(K.constant(4)), 4);
    K.clear_session();
    expect(K.get_session()).to.not.equal(s);
    expect(() => K.set_session({} as never)).to.throw(TypeError, /set_session: expected a Session/);
  });
  it('errors: an unfed placeholder, a plain object as feed_dict, feeding a non-placeholder', () => {
    const x = K.placeholder([2], null, null, false, 'x');
    const s = K.get_session();
    expect(() => s.run(K.sum(x))).to.throw(ValueError, /Session\.run: the fetches depend on placeholder "x", which feed_dict does not feed/);
    expect(() => s.run(K.sum(x), { x: [1, 2] } as never)).to.throw(TypeError, /a plain object cannot be keyed by tensors: use a Map/);
    expect(() => s.run(K.sum(x), [[K.variable(1), 2]])).to.throw(TypeError, /feed_dict entry 0 feeds the variable tensor/);
    expect(() => s.run([K.sum(x), 3] as never, [[x, [1, 2]]])).to.throw(TypeError, /Session\.run: fetch fetches\[1\] is .*3/);
  });
});

describe('Keras 2.3 predicates and helpers', () => {
  const x = K.placeholder([null, 3]);
  const v = K.variable([1, 2]);
  it('is_tensor, is_variable, is_placeholder', () => {
    expect([x, v, K.add(x, 1), K.constant(1)].map(K.is_tensor)).to.deep.equal([true, true, true, true]);
    expect([1, [1, 2], new NDArray([1], [1], 'float32'), null].map(K.is_tensor)).to.deep.equal([false, false, false, false]);
    expect([x, v, K.add(x, 1), 3].map(K.is_variable)).to.deep.equal([false, true, false, false]);
    expect([x, v, K.learning_phase(), K.add(x, 1), 'x'].map(K.is_placeholder)).to.deep.equal([true, false, false, false, false]);
  });
  it('normalize_data_format: null is image_data_format(); values lower-cased; others refused', () => {
    expect(K.normalize_data_format(null)).to.equal(K.image_data_format());
    expect(K.normalize_data_format('Channels_First')).to.equal('channels_first');
    expect(() => K.normalize_data_format('th')).to.throw(ValueError, /normalize_data_format: the data_format argument must be one of "channels_first", "channels_last"; got "th"/);
  });
  it('manual_variable_initialization keeps the flag (variables hold their values from creation)', () => {
    K.manual_variable_initialization(true);
    expect(K.get_value(K.variable([5])).toArray()).to.deep.equal([5]);
    K.manual_variable_initialization(false);
    expect(() => K.manual_variable_initialization(1 as never)).to.throw(ValueError, /must be a boolean/);
  });
  it('control_dependencies runs its body (Theano backend semantics: no ordering), and checks its inputs', () => {
    const w = K.variable(1);
    const u = K.update_add(w, 1);
    const y = K.control_dependencies([u], () => K.identity(w));
    expectClose(K.get_session().run([y, u])[0]!, 1); // reads the old value, as Keras' Theano backend
    expect(K.control_dependencies(null).run(() => 7)).to.equal(7);
    expect(() => K.control_dependencies([3 as never], () => 1)).to.throw(TypeError, /control_inputs\[0\] is .*3; expected a tensor or an update/);
  });
});

opTable('K.size', [
  { name: 'static shape: a constant', inputs: [[[1, 2, 3], [4, 5, 6]]], build: (x) => K.size(x), expected: 6, staticShape: [], expectedDType: 'int32' },
  { name: 'unknown batch: the product of the run-time shape', inputs: [[[1, 2, 3], [4, 5, 6]]], shapes: [[null, 3]], build: (x) => K.size(x, { name: 'n' }), expected: 6, staticShape: [], expectedDType: 'int32' },
]);

describe('Keras 2.2/2.3 call forms', () => {
  it('K.zeros(1), K.ones(3): an int is a 1-d shape; so in random_* and random_*_variable', () => {
    expect(K.int_shape(K.zeros(1))).to.deep.equal([1]);
    expect(K.get_value(K.ones(3)).toArray()).to.deep.equal([1, 1, 1]);
    expect(K.int_shape(K.random_normal(4))).to.deep.equal([4]);
    expect(K.int_shape(K.random_uniform_variable(2, 0, 1))).to.deep.equal([2]);
  });
  it('required parameters by name in the options object', () => {
    const b = K.placeholder([], null, 'int32');
    const r = K.random_normal({ shape: [b, 3], mean: 5, stddev: 0, seed: 1 });
    expect(K.int_shape(r)).to.deep.equal([null, 3]);
    expectClose(K.function([b], [r])([2])[0]!, [[5, 5, 5], [5, 5, 5]]);
    expectClose(K.eval(K.random_uniform({ shape: [2], minval: 1, maxval: 1 })), [1, 1]);
    expect(K.int_shape(K.zeros({ shape: [2, 1], dtype: 'int32' }))).to.deep.equal([2, 1]);
    expect(K.int_shape(K.eye({ size: 3 }))).to.deep.equal([3, 3]);
    expect(K.int_shape(K.random_normal_variable({ shape: [2], mean: 0, scale: 1, seed: 3 }))).to.deep.equal([2]);
    expectClose(K.eval(K.dropout(K.ones([4]), { level: 0 })), [1, 1, 1, 1]);
    expect(() => K.random_normal({ shape: [2], stdev: 1 } as never)).to.throw(ValueError, /random_normal: unknown option "stdev" \(allowed: "shape", "mean", "stddev", "dtype", "seed"\)/);
    expect(() => K.random_uniform_variable({ shape: [2], low: 0 } as never)).to.throw(ValueError, /random_uniform_variable: high is required/);
  });
  it('a list of tensors is packed (K.prod([a, b]), as BatchNormalization writes); numbers take the tensors\' dtype', () => {
    const x = K.placeholder([null, 4, 5]);
    const n = K.prod([K.shape(x).get(0), K.shape(x).get(1)]);
    expect(n.dtype).to.equal('int32');
    expectClose(K.function([x], [n])([new NDArray(new Float32Array(40), [2, 4, 5], 'float32')])[0]!, 8);
    expectClose(K.eval(K.sum([K.constant(1.5), 2])), 3.5);
    expect(() => K.sum([K.constant(1), K.constant([1, 2])])).to.throw(ValueError, /sum: x is a list of tensors of different shapes \(x\[0\] is \(\), x\[1\] is \(2,\)\)/);
    expect(() => K.sum([K.constant(1), K.cast(K.constant(1), 'int32')])).to.throw(TypeError, /sum: x is a list of tensors of different dtypes/);
  });
  it('options objects name their allowed keys everywhere', () => {
    expect(() => K.print_tensor(K.constant(1), { msg: 'a' } as never)).to.throw(ValueError, /print_tensor: unknown option "msg" \(allowed: "message"\)/);
    expect(() => K.identity(K.constant(1), { nam: 'a' } as never)).to.throw(ValueError, /identity: unknown option "nam" \(allowed: "name"\)/);
    expect(() => K.function([], [], { update: [] } as never)).to.throw(ValueError, /function: unknown option "update" \(allowed: "backend", "device", "optimizer", "name", "passes", "fallback", "mode", "nanGuard", "profile", "tune", "borrow", "updates"\)/);
    expect(() => K.variable(1, { constraints: null } as never)).to.throw(ValueError, /variable: unknown option "constraints" \(allowed: "dtype", "name", "constraint"\)/);
  });
});

describe('Keras 2.1-2.3 signatures and both spellings (item 5)', () => {
  it('variable(value, dtype, name, constraint): the constraint is kept on the variable', () => {
    const nonNeg = (w: K.TensorLike) => K.multiply(w, K.cast(K.greater_equal(w, 0), 'float32'));
    const v = K.variable([1, -2], 'float32', 'w', nonNeg);
    expect(v.constraint).to.equal(nonNeg);
    expect(K.variable(1).constraint).to.equal(null);
    expectClose(K.eval(v.constraint!(v)), [1, 0]);
    expect(K.variable(1, { constraint: nonNeg }).constraint).to.equal(nonNeg);
    expect(() => K.variable(1, null, null, 3 as never)).to.throw(TypeError, /variable: constraint must be a function/);
  });
  it('K.function(inputs, outputs, { updates, name }) and updates null', () => {
    const v = K.variable(0);
    const f = K.function([], [v], { updates: [K.update_add(v, 1)], name: 'inc' });
    f([]);
    expectClose(K.get_value(v), 1);
    expectClose(K.function([], [K.add(v, 1)], null)([])[0]!, 2);
  });
  it('identity(x, name)', () => {
    expectClose(K.eval(K.identity(K.constant([1, 2]), 'copy')), [1, 2]);
  });
  it('moving_average_update: x (2.3) or variable (2.0) in the options form', () => {
    const a = K.variable(10);
    const b = K.variable(10);
    const f = K.function([], [], [K.moving_average_update({ x: a, value: 0, momentum: 0.9 }), K.moving_average_update({ variable: b, value: 20, momentum: 0.5 })]);
    f([]);
    expectClose(K.get_value(a), 9);
    expectClose(K.get_value(b), 15);
    expect(() => K.moving_average_update({ x: a, variable: a, value: 1, momentum: 0.5 })).to.throw(ValueError, /moving_average_update: give x once/);
    expect(() => K.moving_average_update({ x: a, value: 1 })).to.throw(ValueError, /moving_average_update: momentum is required/);
  });
  it('batch_get_value(ops): { ops } or { xs }', () => {
    const a = K.variable(1);
    expect(K.batch_get_value({ ops: [a] })[0]!.toArray()).to.equal(1);
    expect(K.batch_get_value({ xs: [a] })[0]!.toArray()).to.equal(1);
  });
  it('resize_images: x (2.3) or X (2.0) in the options form', () => {
    const x = K.constant([[[[1], [2]]]]);
    expect(K.int_shape(K.resize_images({ x, height_factor: 2, width_factor: 1, data_format: 'channels_last' }))).to.deep.equal([1, 2, 2, 1]);
    expect(K.int_shape(K.resize_images({ X: x, height_factor: 1, width_factor: 3, data_format: 'channels_last' }))).to.deep.equal([1, 1, 6, 1]);
    expect(() => K.resize_images({ x, height_factor: 2, data_format: 'channels_last' })).to.throw(ValueError, /K\.resize_images: width_factor is required/);
  });
  it('batch_normalization: a 6th positional number that is not an axis is Keras 2.0\'s epsilon', () => {
    const x = K.constant([[1, 2], [3, 4]]);
    const m = K.constant([1, 1]);
    const v = K.constant([3, 3]);
    expectClose(K.eval(K.batch_normalization(x, m, v, null, null, 1)), [[0, 0.5], [1, 1.5]].map((r) => r.map((e) => e * 2 / Math.sqrt(3 + 1e-3))));
    expectClose(K.eval(K.batch_normalization(x, m, v, null, null, 1.0e-1 + 0.9)), [[0, 1 / 2], [1, 3 / 2]].map((r) => r.map((e) => e * 2 / Math.sqrt(3 + 1e-3)))); // 1.0 is an axis too
    expectClose(K.eval(K.batch_normalization(x, m, v, null, null, 0.5)), [[0, 1], [2, 3]].map((r) => r.map((e) => e / Math.sqrt(3.5))));
    expectClose(K.eval(K.batch_normalization(x, m, v, null, null, -1, 1)), [[0, 1], [2, 3]].map((r) => r.map((e) => e / 2)));
  });
});

// batch_normalization with axis, as Keras 2.3's TensorFlow backend lays 1-D parameters on the channel axis of 4-D inputs.
const xBN = new NDArray(Array.from({ length: 2 * 3 * 2 * 2 }, (_, i) => Math.sin(i) * 3), [2, 3, 2, 2], 'float32');
const pBN = (s: number) => new NDArray([0.5 * s, -0.25 * s, 1 + s], [3], 'float32');
/** (x - m[c]) / sqrt(v[c] + 1e-3) * g[c] + b[c], c the index on axis 1, written out. */
const bnRef = (x: NDArray, m: NDArray, v: NDArray, b: NDArray, g: NDArray): NDArray => {
  const out = new Float64Array(x.size);
  const [, C, H, W] = x.shape as [number, number, number, number];
  for (let i = 0; i < x.size; i++) {
    const c = Math.floor(i / (H * W)) % C;
    out[i] = (x.data[i]! - m.data[c]!) / Math.sqrt(v.data[c]! + 1e-3) * g.data[c]! + b.data[c]!;
  }
  return new NDArray(out, x.shape, 'float64');
};
opTable('K.batch_normalization with axis (Keras 2.3)', [
  { name: 'axis 1 of a 4-D x (NCHW): parameters on the channels', inputs: [xBN, pBN(1), new NDArray([1, 2, 0.5], [3], 'float32'), pBN(2), pBN(3)], build: (x, m, v, b, g) => K.batch_normalization(x, m, v, b, g, 1), expected: bnRef, staticShape: [2, 3, 2, 2], tol: { atol: 1e-5, rtol: 1e-5 } },
  { name: 'axis -3 with epsilon by name', inputs: [xBN, pBN(1), new NDArray([1, 2, 0.5], [3], 'float32'), pBN(2), pBN(3)], build: (x, m, v, b, g) => K.batch_normalization(x, m, v, b, g, { axis: -3, epsilon: 1e-3 }), expected: bnRef, tol: { atol: 1e-5, rtol: 1e-5 } },
]);

// UpSampling2D(interpolation='bilinear'): TensorFlow 1's resize_bilinear (no corner alignment, no half-pixel centers).
const img = new NDArray(Array.from({ length: 2 * 3 * 4 * 2 }, (_, i) => Math.cos(i * 0.7)), [2, 3, 4, 2], 'float32');
opTable('K.resize_images bilinear', [
  { name: 'factors (2, 3), channels_last', inputs: [img], shapes: [[null, 3, 4, 2]], build: (x) => K.resize_images(x, 2, 3, 'channels_last', 'bilinear'), expected: tfRef((x) => tf.image.resizeBilinear(x as tf.Tensor4D, [6, 12], false, false)), staticShape: [null, 6, 12, 2], tol: { atol: 1e-5, rtol: 1e-5 } },
  { name: 'channels_first, factor 2 on rows only', inputs: [img], build: (x) => K.resize_images(K.permute_dimensions(x, [0, 3, 1, 2]), 2, 1, 'channels_first', 'bilinear'), expected: tfRef((x) => tf.transpose(tf.image.resizeBilinear(x as tf.Tensor4D, [6, 4], false, false), [0, 3, 1, 2])), staticShape: [2, 2, 6, 4], tol: { atol: 1e-5, rtol: 1e-5 } },
]);

gradTable('gradients: Keras 2.3 forms', [
  { name: 'resize_images bilinear', inputs: [[[[[0.5], [1]], [[2], [-1]]]]], build: (x) => K.resize_images(x, 2, 3, 'channels_last', 'bilinear') },
  { name: 'batch_normalization axis 1 of 4-D', inputs: [[[[[0.5, 1]], [[2, -1]]]], [0.1, 0.2], [1, 2], [0, 1], [2, 0.5]], build: (x, m, v, b, g) => K.batch_normalization(x, m, v, b, g, 1) },
]);

describe('shape errors of the new forms', () => {
  it('batch_normalization axis: parameters must have as many entries as channels', () => {
    expect(() => K.batch_normalization(K.placeholder([null, 3, 2, 2]), K.placeholder([4]), K.placeholder([3]), null, null, 1)).to.throw(ShapeError, /batch_normalization: mean of shape \(4,\) has 4 entries but x \(None, 3, 2, 2\) has 3 channels on axis 1/);
  });
});
