// print_tensor, sparse placeholders (is_sparse / to_dense), cast_to_floatx, symbolic / eager.
import { expect } from 'chai';
import { backend as K } from '../../src/index.js';
import { ValueError } from '../../src/ir/errors.js';
import { NDArray } from '../../src/ir/ndarray.js';
import { evaluate } from '../../src/ir/interpret.js';
import { opTable } from '../helpers/table.js';

/** Runs `f` with console.log captured. */
function captured(f: () => void): string[] {
  const lines: string[] = [];
  const orig = console.log;
  console.log = (...a: unknown[]) => { lines.push(a.map(String).join(' ')); };
  try { f(); } finally { console.log = orig; }
  return lines;
}

describe('print_tensor in tables (output silenced)', () => {
  const orig = console.log;
  before(() => { console.log = () => {}; });
  after(() => { console.log = orig; });
  opTable('K.print_tensor passes x through', [
  { name: 'value unchanged', inputs: [[[1, 2], [3, 4]]], build: (x) => K.print_tensor(x, ''), expected: [[1, 2], [3, 4]], staticShape: [2, 2] },
  { name: 'inside an expression', inputs: [[1, 2]], shapes: [[null]], build: (x) => K.multiply(K.print_tensor(K.add(x, 1), 'y: '), 2), expected: [4, 6], staticShape: [null] },
  ]);
});

describe('K.print_tensor', () => {
  it('prints message and value on every evaluation', () => {
    const x = K.placeholder([2]);
    const f = K.function([x], [K.print_tensor(x, 'x = ')]);
    const lines = captured(() => { f([[1, 2.5]]); f([[3, NaN]]); });
    expect(lines).to.deep.equal(['x =  [1, 2.5]', 'x =  [3, NaN]']); // tf.print(message, x): a space after the message
  });
  it('formats scalars, nested arrays, bools, infinities; default message is empty', () => {
    const lines: string[] = [];
    const print = (m: string) => lines.push(m);
    evaluate([K.print_tensor(K.constant(3))], { print });
    evaluate([K.print_tensor(K.constant([[1, 2], [3, 4]], 'int32'), { message: 'm' })], { print });
    evaluate([K.print_tensor(K.greater(K.constant([1, 5]), 2), 'b')], { print });
    evaluate([K.print_tensor(K.constant([-Infinity, Infinity], 'float64'), '')], { print });
    // TensorFlow's tf.print(message, x) joins its two items with a space, also after an empty message
    expect(lines).to.deep.equal([' 3', 'm [[1, 2], [3, 4]]', 'b [False, True]', ' [-Infinity, Infinity]']);
  });
  it('the message must be a string', () => {
    expect(() => K.print_tensor(K.placeholder([2]), 5 as never)).to.throw(ValueError, /print_tensor: message must be a string, got number 5/);
  });
});

describe('sparse placeholders, is_sparse and to_dense', () => {
  it('a sparse placeholder fed a COO value is densified', () => {
    const s = K.placeholder([2, 3], null, null, true);
    expect(K.is_sparse(s)).to.equal(true);
    const d = K.to_dense(s);
    expect(K.int_shape(d)).to.deep.equal([2, 3]);
    const f = K.function([s], [K.multiply(d, 2)]);
    const [y] = f([{ indices: [[0, 1], [1, 2]], values: [5, 7], shape: [2, 3] }]);
    expect(y!.toArray()).to.deep.equal([[0, 10, 0], [0, 0, 14]]);
  });
  it('options-object form and unknown dims', () => {
    const s = K.placeholder({ shape: [null, 2], sparse: true });
    expect(K.is_sparse(s)).to.equal(true);
    const [y] = K.function([s], [K.to_dense(s)])([{ indices: [[2, 1]], values: [1.5], shape: [3, 2] }]);
    expect(y!.toArray()).to.deep.equal([[0, 0], [0, 0], [0, 1.5]]);
  });
  it('dense tensors, variables and non-tensors are not sparse', () => {
    expect(K.is_sparse(K.placeholder([2]))).to.equal(false);
    expect(K.is_sparse(K.variable([1, 2]))).to.equal(false);
    expect(K.is_sparse([1, 2])).to.equal(false);
    const x = K.placeholder([2]);
    expect(K.to_dense(x)).to.equal(x);
  });
  it('errors: to_dense of a non-tensor, a COO index outside the shape, a shape that contradicts the placeholder', () => {
    expect(() => K.to_dense([1, 2] as never)).to.throw(TypeError, /to_dense: x must be a tensor/);
    const s = K.placeholder([2, 3], null, null, true);
    const f = K.function([s], [K.to_dense(s)]);
    expect(() => f([{ indices: [[2, 0]], values: [1], shape: [2, 3] }])).to.throw(ValueError, /sparse index \[2,0\] \(entry 0\) is outside shape \(2, 3\)/);
    expect(() => f([{ indices: [[0, 0]], values: [1], shape: [3, 3] }])).to.throw(ValueError, /value of shape \(3, 3\) does not fit the placeholder's shape \(2, 3\)/);
    expect(() => f([{ indices: [[0, 0]], values: [1, 2], shape: [2, 3] }])).to.throw(ValueError, /sparse value has 1 indices but 2 values/);
  });
});

describe('K.cast_to_floatx', () => {
  it('converts values to an NDArray of floatx', () => {
    const a = K.cast_to_floatx([[1, 2], [3, 4]]);
    expect(a).to.be.instanceOf(NDArray);
    expect(a.dtype).to.equal('float32');
    expect(a.toArray()).to.deep.equal([[1, 2], [3, 4]]);
    expect(K.cast_to_floatx(0.1).item()).to.equal(Math.fround(0.1));
    expect(K.cast_to_floatx(new NDArray([1, 2], [2], 'int32')).dtype).to.equal('float32');
  });
  it('follows set_floatx', () => {
    K.set_floatx('float64');
    try {
      expect(K.cast_to_floatx(0.1).item()).to.equal(0.1);
    } finally {
      K.set_floatx('float32');
    }
  });
  it('rejects what is not a value', () => {
    expect(() => K.cast_to_floatx('a' as never)).to.throw(TypeError, /cast_to_floatx: x: cannot convert the string "a"/);
  });
});

describe('K.symbolic and K.eager', () => {
  it('symbolic returns the function, which builds graphs', () => {
    const f = (x: ReturnType<typeof K.placeholder>) => K.add(x, 1);
    const g = K.symbolic(f);
    expect(g).to.equal(f);
    const x = K.placeholder([2]);
    expect(K.function([x], [g(x)])([[1, 2]])[0]!.toArray()).to.deep.equal([2, 3]);
  });
  it('eager runs the body on values and returns NDArrays', () => {
    const f = K.eager((a: unknown, b: unknown) => K.dot(a as never, b as never));
    const r = f([[1, 2]], [[3], [4]]);
    expect(r).to.be.instanceOf(NDArray);
    expect(r.toArray()).to.deep.equal([[11]]);
  });
  it('eager: NDArrays keep their dtype; numbers pass as numbers; arrays of results become arrays of values', () => {
    const f = K.eager((a: unknown, k: unknown) => [K.multiply(a as never, k as never), K.sum(a as never), 'note']);
    const [p, s, note] = f(new NDArray([1, 2, 3], [3], 'int32'), 2);
    expect((p as NDArray).dtype).to.equal('int32');
    expect((p as NDArray).toArray()).to.deep.equal([2, 4, 6]);
    expect((s as NDArray).item()).to.equal(6);
    expect(note).to.equal('note');
  });
  it('eager: all results come from one evaluation (one draw per random op)', () => {
    const f = K.eager(() => { const r = K.random_uniform([4]); return [r, K.multiply(r, 2)]; });
    const [r, r2] = f();
    expect(Array.from(r2!.data)).to.deep.equal(Array.from(r!.data, (v) => Math.fround(v * 2)));
  });
  it('eager: errors for a non-function and for results that need a placeholder', () => {
    expect(() => K.eager(3 as never)).to.throw(TypeError, /eager: expected a function, got number 3/);
    expect(() => K.symbolic('f' as never)).to.throw(TypeError, /symbolic: expected a function/);
    const x = K.placeholder([2], null, null, false, 'xin');
    expect(() => K.eager(() => K.add(x, 1))()).to.throw(ValueError, /eager: the result depends on placeholder "xin"/);
  });
});
