// Slicing, reversing, joining, gathering, one-hot and ranges against TensorFlow.js or closed
// forms, with static shapes (unknown dims included) and every error path.
import { expect } from 'chai';
import { backend as K, ShapeError, ValueError } from '../../src/index.js';
import { NDArray } from '../../src/ir/ndarray.js';
import { opTable } from '../helpers/table.js';
import { tf, tfRef } from '../helpers/tf-ref.js';
import { seq } from '../helpers/values.js';

const M23 = [[1, 2, 3], [4, 5, 6]];

/** TensorFlow's strided slice of one axis, with Python's null bounds as masks. */
function tfAlong(rank: number, axis: number, start: number | null, stop: number | null, step = 1) {
  const bit = 1 << axis;
  const others = ((1 << rank) - 1) & ~bit;
  const begin = new Array<number>(rank).fill(0);
  const end = new Array<number>(rank).fill(0);
  begin[axis] = start ?? 0;
  end[axis] = stop ?? 0;
  const strides = new Array<number>(rank).fill(1);
  strides[axis] = step;
  return tfRef((x) => tf.stridedSlice(x, begin, end, strides, others | (start === null ? bit : 0), others | (stop === null ? bit : 0)));
}

opTable('K.slice_along', [
  { name: '[1:3] on axis 1', inputs: [seq([3, 4])], build: (x) => K.slice_along(x, 1, 1, 3), expected: tfAlong(2, 1, 1, 3), staticShape: [3, 2] },
  { name: '[-2:] on axis 0', inputs: [seq([4, 3])], build: (x) => K.slice_along(x, 0, -2), expected: tfAlong(2, 0, -2, null), staticShape: [2, 3] },
  { name: '[:-1] via options', inputs: [seq([4, 3])], build: (x) => K.slice_along(x, -1, { stop: -1 }), expected: tfAlong(2, 1, null, -1), staticShape: [4, 2] },
  { name: '[::2]', inputs: [seq([7])], build: (x) => K.slice_along(x, 0, null, null, 2), expected: [1, 3, 5, 7], staticShape: [4] },
  { name: '[1:6:2]', inputs: [seq([7, 2])], build: (x) => K.slice_along(x, 0, 1, 6, 2), expected: tfAlong(2, 0, 1, 6, 2), staticShape: [3, 2] },
  { name: '[::-1]', inputs: [seq([5])], build: (x) => K.slice_along(x, 0, { step: -1 }), expected: [5, 4, 3, 2, 1], staticShape: [5] },
  { name: '[4:0:-2]', inputs: [seq([2, 6])], build: (x) => K.slice_along(x, 1, 4, 0, -2), expected: tfAlong(2, 1, 4, 0, -2), staticShape: [2, 2] },
  { name: '[-1:-4:-1]', inputs: [seq([6])], build: (x) => K.slice_along(x, 0, -1, -4, -1), expected: [6, 5, 4], staticShape: [3] },
  { name: 'bounds clamp: [2:100]', inputs: [seq([5])], build: (x) => K.slice_along(x, 0, 2, 100), expected: [3, 4, 5], staticShape: [3] },
  { name: 'bounds clamp: [-100:2]', inputs: [seq([5])], build: (x) => K.slice_along(x, 0, -100, 2), expected: [1, 2], staticShape: [2] },
  { name: 'empty: [3:1]', inputs: [seq([5])], build: (x) => K.slice_along(x, 0, 3, 1), expected: new NDArray([], [0], 'float64'), staticShape: [0] },
  { name: 'whole axis is x', inputs: [M23], build: (x) => K.slice_along(x, 1, 0, 3), expected: M23, staticShape: [2, 3] },
  { name: 'unknown axis stays unknown', inputs: [seq([5, 2])], shapes: [[null, 2]], build: (x) => K.slice_along(x, 0, 1, -1), expected: tfAlong(2, 0, 1, -1), staticShape: [null, 2] },
  { name: 'other unknown axes flow', inputs: [seq([5, 4])], shapes: [[null, 4]], build: (x) => K.slice_along(x, 1, 1), expected: tfAlong(2, 1, 1, null), staticShape: [null, 3] },
]);

opTable('K.slice', [
  { name: 'start [1, 0] size [2, -1]', inputs: [seq([3, 4])], build: (x) => K.slice(x, [1, 0], [2, -1]), expected: tfRef((x) => tf.slice(x, [1, 0], [2, -1])), staticShape: [2, 4] },
  { name: '3-D', inputs: [seq([3, 4, 5])], build: (x) => K.slice(x, [0, 1, 2], [2, 2, 3]), expected: tfRef((x) => tf.slice(x, [0, 1, 2], [2, 2, 3])), staticShape: [2, 2, 3] },
  { name: 'size 0', inputs: [seq([3, 4])], build: (x) => K.slice(x, [1, 1], [0, 2]), expected: new NDArray([], [0, 2], 'float64'), staticShape: [0, 2] },
  { name: 'unknown axis with a size is known', inputs: [seq([3, 4])], shapes: [[null, 4]], build: (x) => K.slice(x, [1, 1], [2, 2]), expected: tfRef((x) => tf.slice(x, [1, 1], [2, 2])), staticShape: [2, 2] },
  { name: 'unknown axis with size -1 stays unknown', inputs: [seq([3, 4])], shapes: [[null, null]], build: (x) => K.slice(x, [1, 1], [-1, 2]), expected: tfRef((x) => tf.slice(x, [1, 1], [-1, 2])), staticShape: [null, 2] },
]);

opTable('K.reverse', [
  { name: 'axis 0', inputs: [M23], build: (x) => K.reverse(x, 0), expected: [[4, 5, 6], [1, 2, 3]], staticShape: [2, 3] },
  { name: 'axes [0, 1]', inputs: [seq([2, 3, 2])], build: (x) => K.reverse(x, [0, 1]), expected: tfRef((x) => tf.reverse(x, [0, 1])), staticShape: [2, 3, 2] },
  { name: 'axis -1', inputs: [seq([2, 3, 2])], build: (x) => K.reverse(x, -1), expected: tfRef((x) => tf.reverse(x, [2])), staticShape: [2, 3, 2] },
  { name: 'empty list is x', inputs: [M23], build: (x) => K.reverse(x, []), expected: M23, staticShape: [2, 3] },
  { name: 'unknown dims', inputs: [seq([3, 2])], shapes: [[null, 2]], build: (x) => K.reverse(x, [0, 1]), expected: tfRef((x) => tf.reverse(x, [0, 1])), staticShape: [null, 2] },
]);

opTable('K.concatenate', [
  { name: 'default axis -1', inputs: [M23, [[7], [8]]], build: (x, y) => K.concatenate([x, y]), expected: [[1, 2, 3, 7], [4, 5, 6, 8]], staticShape: [2, 4] },
  { name: 'axis 0, three tensors', inputs: [seq([1, 3]), seq([2, 3], 'float64', 10), seq([3, 3], 'float64', 100)], build: (x, y, z) => K.concatenate([x, y, z], 0), expected: tfRef((x, y, z) => tf.concat([x!, y!, z!], 0)), staticShape: [6, 3] },
  { name: 'middle axis via options', inputs: [seq([2, 1, 2]), seq([2, 3, 2], 'float64', 10)], build: (x, y) => K.concatenate([x, y], { axis: 1 }), expected: tfRef((x, y) => tf.concat([x!, y!], 1)), staticShape: [2, 4, 2] },
  { name: 'one tensor is itself', inputs: [M23], build: (x) => K.concatenate([x]), expected: M23, staticShape: [2, 3] },
  { name: 'int32 and float64 promote', inputs: [[1, 2], [0.5]], dtypes: ['int32', 'float64'], build: (x, y) => K.concatenate([x, y]), expected: [1, 2, 0.5], expectedDType: 'float64' },
  { name: 'unknown concat axis', inputs: [M23, [[7], [8]]], shapes: [[null, null], [null, 1]], build: (x, y) => K.concatenate([x, y]), expected: [[1, 2, 3, 7], [4, 5, 6, 8]], staticShape: [null, null] },
  { name: 'unknown off-axis dims unify', inputs: [M23, [[7, 8, 9]]], shapes: [[null, 3], [1, null]], build: (x, y) => K.concatenate([x, y], 0), expected: [[1, 2, 3], [4, 5, 6], [7, 8, 9]], staticShape: [null, 3] },
  { name: 'known parts add', inputs: [M23, [[7], [8]]], shapes: [[null, 3], [2, 1]], build: (x, y) => K.concatenate([x, y], 1), expected: [[1, 2, 3, 7], [4, 5, 6, 8]], staticShape: [2, 4] },
]);

opTable('K.stack', [
  { name: 'axis 0', inputs: [[1, 2], [3, 4], [5, 6]], build: (x, y, z) => K.stack([x, y, z]), expected: [[1, 2], [3, 4], [5, 6]], staticShape: [3, 2] },
  { name: 'axis 1', inputs: [seq([2, 3]), seq([2, 3], 'float64', 10)], build: (x, y) => K.stack([x, y], 1), expected: tfRef((x, y) => tf.stack([x!, y!], 1)), staticShape: [2, 2, 3] },
  { name: 'axis -1 via options', inputs: [seq([2, 3]), seq([2, 3], 'float64', 10)], build: (x, y) => K.stack([x, y], { axis: -1 }), expected: tfRef((x, y) => tf.stack([x!, y!], 2)), staticShape: [2, 3, 2] },
  { name: 'one tensor', inputs: [[1, 2]], build: (x) => K.stack([x]), expected: [[1, 2]], staticShape: [1, 2] },
  { name: 'unknown dims unify', inputs: [M23, M23], shapes: [[null, 3], [2, null]], build: (x, y) => K.stack([x, y]), expected: [M23, M23], staticShape: [2, 2, 3] },
]);

opTable('K.gather', [
  { name: 'rows of a matrix', inputs: [seq([5, 3]), [0, 4, 2, 4]], dtypes: ['float64', 'int32'], build: (r, i) => K.gather(r, i), expected: tfRef((r, i) => tf.gather(r, i)), staticShape: [4, 3] },
  { name: '2-D indices', inputs: [seq([4, 2]), [[0, 1], [3, 3], [2, 0]]], dtypes: ['float64', 'int32'], build: (r, i) => K.gather(r, i), expected: tfRef((r, i) => tf.gather(r, i)), staticShape: [3, 2, 2] },
  { name: 'scalar index drops the axis', inputs: [seq([4, 2]), 2], dtypes: ['float64', 'int64'], build: (r, i) => K.gather(r, i), expected: [5, 6], staticShape: [2] },
  { name: 'negative index counts from the end', inputs: [seq([4, 2]), [-1, 0]], dtypes: ['float64', 'int32'], build: (r, i) => K.gather(r, i), expected: [[7, 8], [1, 2]], staticShape: [2, 2] },
  { name: 'plain array indices', inputs: [seq([3])], build: (r) => K.gather(r, [2, 2, 0]), expected: [3, 3, 1], staticShape: [3] },
  { name: 'embedding lookup with unknown dims', inputs: [seq([5, 3], 'float32'), [[1, 2], [0, 4]]], dtypes: ['float32', 'int32'], shapes: [[5, 3], [null, null]], build: (r, i) => K.gather(r, i), expected: tfRef((r, i) => tf.gather(r, i)), staticShape: [null, null, 3], expectedDType: 'float32' },
]);

opTable('K.one_hot', [
  { name: '1-D', inputs: [[0, 2, 1]], dtypes: ['int32'], build: (i) => K.one_hot(i, 3), expected: tfRef((i) => tf.oneHot(i, 3)), staticShape: [3, 3], expectedDType: 'float32' },
  { name: '2-D with { num_classes }', inputs: [[[0, 3], [1, 1]]], dtypes: ['int32'], build: (i) => K.one_hot(i, { num_classes: 4 }), expected: tfRef((i) => tf.oneHot(i, 4)), staticShape: [2, 2, 4] },
  { name: 'Keras 1 { nb_classes }', inputs: [[1, 0]], dtypes: ['int64'], build: (i) => K.one_hot(i, { nb_classes: 2 }), expected: [[0, 1], [1, 0]], staticShape: [2, 2] },
  { name: 'out-of-range indices give zero rows', inputs: [[-1, 3, 1]], dtypes: ['int32'], build: (i) => K.one_hot(i, 3), expected: tfRef((i) => tf.oneHot(i, 3)), staticShape: [3, 3] },
  { name: 'unknown dims', inputs: [[[0], [2]]], dtypes: ['int32'], shapes: [[null, null]], build: (i) => K.one_hot(i, 3), expected: [[[1, 0, 0]], [[0, 0, 1]]], staticShape: [null, null, 3] },
  { name: 'plain array indices', inputs: [], build: () => K.one_hot([2, 0], 3), expected: [[0, 0, 1], [1, 0, 0]], staticShape: [2, 3] },
]);

opTable('K.arange', [
  { name: 'one argument is the stop', inputs: [], build: () => K.arange(5), expected: [0, 1, 2, 3, 4], staticShape: [5], expectedDType: 'int32' },
  { name: 'start, stop', inputs: [], build: () => K.arange(2, 6), expected: [2, 3, 4, 5], staticShape: [4] },
  { name: 'start, stop, step', inputs: [], build: () => K.arange(1, 10, 3), expected: [1, 4, 7], staticShape: [3] },
  { name: 'negative step', inputs: [], build: () => K.arange(5, 0, -2), expected: [5, 3, 1], staticShape: [3] },
  { name: 'negative single argument is empty', inputs: [], build: () => K.arange(-3), expected: new NDArray([], [0], 'int32'), staticShape: [0] },
  { name: 'stop before start is empty', inputs: [], build: () => K.arange(4, 2), expected: new NDArray([], [0], 'int32'), staticShape: [0] },
  { name: 'float step, float32', inputs: [], build: () => K.arange(0, 1, 0.25, 'float32'), expected: [0, 0.25, 0.5, 0.75], staticShape: [4], expectedDType: 'float32' },
  { name: 'float bounds, float64', inputs: [], build: () => K.arange(-1.5, 1, 0.5, 'float64'), expected: [-1.5, -1, -0.5, 0, 0.5], expectedDType: 'float64' },
  { name: 'options object', inputs: [], build: () => K.arange(0, { stop: 6, step: 2, dtype: 'int64' }), expected: [0, 2, 4], expectedDType: 'int64' },
  { name: 'null stop with options', inputs: [], build: () => K.arange(3, { dtype: 'float32' }), expected: [0, 1, 2], expectedDType: 'float32' },
  { name: 'float step with int dtype truncates each value', inputs: [], build: () => K.arange(0, 2, 0.5), expected: [0, 0, 1, 1], expectedDType: 'int32' },
  { name: 'matches tf.range', inputs: [], build: () => K.arange(-7, 20, 4), expected: tf.range(-7, 20, 4).arraySync() as number[], staticShape: [7] },
]);

describe('indexing function errors', () => {
  const x = K.placeholder([2, 3]);
  it('slice_along: step 0, axis out of range, non-integer bounds', () => {
    expect(() => K.slice_along(x, 0, 0, 1, 0)).to.throw(ValueError, /K\.slice_along: step must not be zero/);
    expect(() => K.slice_along(x, 2, 0)).to.throw(ValueError, /K\.slice_along: axis 2 is out of range for a tensor of rank 2/);
    expect(() => K.slice_along(x, 0, 0.5)).to.throw(ValueError, /K\.slice_along: start must be an integer, got number 0\.5/);
    expect(() => K.slice_along(x, 0, { begin: 1 } as never)).to.throw(ValueError, /unknown option "begin"/);
  });
  it('slice: lengths, negative start, size < -1, past the end', () => {
    expect(() => K.slice(x, [0], [1, 1])).to.throw(ValueError, /K\.slice: start \(1 entries\) and size \(2 entries\) must each have one entry per axis of x of shape \(2, 3\)/);
    expect(() => K.slice(x, [-1, 0], [1, 1])).to.throw(ValueError, /K\.slice: start\[0\] must be an integer >= 0/);
    expect(() => K.slice(x, [0, 0], [1, -2])).to.throw(ValueError, /size\[1\] must be an integer >= -1/);
    expect(() => K.slice(x, [1, 2], [1, 2])).to.throw(ShapeError, /K\.slice: start 2 with size 2 runs past axis 1 of shape \(2, 3\)/);
    expect(() => K.slice(x, [3, 0], [-1, 1])).to.throw(ShapeError, /start 3 with size -1 runs past axis 0/);
  });
  it('slice: an unknown axis too short at run time', () => {
    const p = K.placeholder([null, 3]);
    const f = K.function([p], [K.slice(p, [1, 0], [2, 3])]);
    expect(() => f([M23])).to.throw(ShapeError, /a value of shape \(1, 3\) was given where shape \(2, 3\) is required/);
  });
  it('reverse: missing axes, out of range, repeated', () => {
    expect(() => K.reverse(x, null as never)).to.throw(ValueError, /K\.reverse: axes must be an int or a list of ints/);
    expect(() => K.reverse(x, 2)).to.throw(ValueError, /K\.reverse: axis 2 is out of range/);
    expect(() => K.reverse(x, [0, -2])).to.throw(ValueError, /repeats an axis/);
  });
  it('concatenate: empty, ranks, off-axis dims, scalars, axis', () => {
    expect(() => K.concatenate([])).to.throw(ValueError, /K\.concatenate: tensors must be a non-empty array of tensors/);
    expect(() => K.concatenate([x, K.placeholder([2])])).to.throw(ShapeError, /K\.concatenate: all tensors must have the same rank: tensor 0 has shape \(2, 3\) but tensor 1 has \(2,\)/);
    expect(() => K.concatenate([x, K.placeholder([3, 3])], 1)).to.throw(ShapeError, /shapes \(2, 3\) \(tensor 0\) and \(3, 3\) \(tensor 1\) differ on axis 0 \(2 vs 3\); only axis 1 may differ/);
    expect(() => K.concatenate([K.placeholder([]), K.placeholder([])])).to.throw(ShapeError, /cannot concatenate scalars/);
    expect(() => K.concatenate([x, x], 2)).to.throw(ValueError, /axis 2 is out of range/);
  });
  it('concatenate: unknown off-axis dims that differ at run time', () => {
    const p = K.placeholder([null, 1]);
    const f = K.function([p], [K.concatenate([p, K.constant([[1]])], 1)]);
    expect(() => f([[[1], [2]]])).to.throw(ShapeError, /differ off the concatenation axis 1/);
  });
  it('stack: shapes differ, empty, axis', () => {
    expect(() => K.stack([x, K.placeholder([3, 2])])).to.throw(ShapeError, /K\.stack: all tensors must have the same shape: x\[0\] has \(2, 3\) but x\[1\] has \(3, 2\)/);
    expect(() => K.stack('ab' as never)).to.throw(ValueError, /K\.stack: x must be a non-empty array of tensors/);
    expect(() => K.stack([x, x], 3)).to.throw(ValueError, /K\.stack: axis 3 is out of range for a tensor of rank 3/);
  });
  it('gather: float indices, non-integer values, scalar reference, out of range', () => {
    expect(() => K.gather(x, K.placeholder([2]))).to.throw(TypeError, /K\.gather: indices must be an integer tensor, got float32/);
    expect(() => K.gather(x, [0.5, 1])).to.throw(ValueError, /K\.gather: indices must be integers/);
    expect(() => K.gather(K.placeholder([]), [0])).to.throw(ValueError, /K\.gather: reference must have rank >= 1/);
    const i = K.placeholder([2], null, 'int32');
    const g = K.function([i], [K.gather(K.constant(M23), i)]);
    expect(() => g([[0, 2]])).to.throw(ValueError, /index 2 is out of range for reference of shape \(2, 3\) \(allowed: -2\.\.1\)/);
  });
  it('one_hot: bad num_classes, float indices, both names', () => {
    const i = K.placeholder([3], null, 'int32');
    expect(() => K.one_hot(i, 0)).to.throw(ValueError, /K\.one_hot: num_classes must be an integer >= 1, got number 0/);
    expect(() => K.one_hot(i)).to.throw(ValueError, /num_classes must be an integer >= 1, got undefined/);
    expect(() => K.one_hot(K.placeholder([3]), 3)).to.throw(TypeError, /K\.one_hot: indices must be an integer tensor, got float32/);
    expect(() => K.one_hot(i, { num_classes: 2, nb_classes: 2 })).to.throw(ValueError, /not both/);
  });
  it('arange: step 0, non-numbers, bad dtype', () => {
    expect(() => K.arange(0, 5, 0)).to.throw(ValueError, /K\.arange: step must not be zero/);
    expect(() => K.arange('3' as never)).to.throw(ValueError, /K\.arange: start must be a finite number, got the string "3"/);
    expect(() => K.arange(0, NaN)).to.throw(ValueError, /stop must be a finite number/);
    expect(() => K.arange(0, 5, 1, 'int33' as never)).to.throw(TypeError, /K\.arange: dtype "int33" is not a dtype/);
  });
});
