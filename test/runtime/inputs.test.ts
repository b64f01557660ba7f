// Issue 14 item 7: tampered or odd inputs at the call boundary, on every target. Shapes are
// frozen, a value whose shape and data disagree is refused before any code reads it, and an
// integer placeholder refuses values it cannot hold instead of truncating them.
import { expect } from 'chai';
import { backend as K, NDArray, ShapeError } from '../../src/index.js';
import { targets } from '../helpers/targets.js';

describe('tampered and odd inputs', () => {
  it('an NDArray\'s shape is frozen: assigning a dim throws and changes nothing', () => {
    const nd = new NDArray(Float32Array.of(1, 2, 3), [3]);
    expect(() => { (nd.shape as number[])[0] = 4; }).to.throw(TypeError);
    expect(() => { (nd.shape as number[]).push(1); }).to.throw(TypeError);
    expect(nd.shape).to.deep.equal([3]);
    expect(() => new NDArray(Float32Array.of(1), [0.5])).to.throw(RangeError, /not a non-negative integer/);
  });

  for (const t of targets) {
    describe(t.name, () => {
      it('a value whose data does not fill its shape is refused, naming the input', () => {
        const x = K.placeholder({ shape: [null], name: 'x' });
        const f = K.function([x], [K.multiply(x, 2)], [], t.options);
        const nd = new NDArray(Float32Array.of(1, 2, 3), [3]);
        (nd as { data: unknown }).data = new Float32Array(2); // replaced behind the type's back
        expect(() => f([nd])).to.throw(ShapeError, /^function: input 0 \("x"\): NDArray of shape \(3,\) \(3 elements\) holds 2 values; shape and data must agree/);
        const forged = Object.create(NDArray.prototype, { shape: { value: [4] }, data: { value: Float32Array.of(1, 2, 3) }, dtype: { value: 'float32' } }) as NDArray;
        expect(() => f([forged])).to.throw(ShapeError, /NDArray of shape \(4,\) \(4 elements\) holds 3 values/);
        const half = Object.create(NDArray.prototype, { shape: { value: [0.5] }, data: { value: Float32Array.of(1) }, dtype: { value: 'float32' } }) as NDArray;
        expect(() => f([half])).to.throw(ShapeError, /NDArray shape .*0\.5.* is not a list of non-negative integers/);
        expect(Array.from(f([new NDArray(Float32Array.of(1, 2, 3), [3])])[0]!.data)).to.deep.equal([2, 4, 6]);
      });

      it('an int32 placeholder refuses non-integral, non-finite and out-of-range values, naming the input and K.cast', () => {
        const i = K.placeholder({ shape: [null], name: 'i', dtype: 'int32' });
        const f = K.function([i], [K.add(i, 1)], [], t.options);
        for (const [v, why] of [[1.5, 'not an integer'], [3e10, 'outside int32\'s range'], [NaN, 'not finite'], [-Infinity, 'not finite']] as const) {
          const re = new RegExp(`^function: input 0 \\("i"\\): element 1 is ${String(v).replace('+', '\\+')}, ${why}.*K\\.cast`);
          expect(() => f([[1, v]]), String(v)).to.throw(TypeError, re);
          expect(() => f([Float64Array.of(2, v)]), `Float64Array ${v}`).to.throw(TypeError, re);
          expect(() => f([new NDArray(Float64Array.of(0, v), [2], 'float64')]), `float64 NDArray ${v}`).to.throw(TypeError, re);
        }
        // integral floats, booleans and integer arrays are fine
        expect(Array.from(f([[1, 2.0, -3]])[0]!.data)).to.deep.equal([2, 3, -2]);
        expect(Array.from(f([Float64Array.of(7, 1e6)])[0]!.data)).to.deep.equal([8, 1e6 + 1]);
        expect(Array.from(f([Int32Array.of(4)])[0]!.data)).to.deep.equal([5]);
        // K.cast is the explicit way: a float placeholder cast in the graph truncates toward zero
        const x = K.placeholder({ shape: [null], name: 'x' });
        const g = K.function([x], [K.cast(x, 'int32')], [], t.options);
        expect(Array.from(g([[1.5, -2.5]])[0]!.data)).to.deep.equal([1, -2]);
      });

      it('an int8 or uint8 placeholder refuses values outside its range', () => {
        const b = K.placeholder({ shape: [2], name: 'b', dtype: 'uint8' });
        const f = K.function([b], [K.cast(b, 'int32')], [], t.options);
        expect(() => f([[1, 256]])).to.throw(TypeError, /element 1 is 256, outside uint8's range 0\.\.255/);
        expect(() => f([Int32Array.of(-1, 0)])).to.throw(TypeError, /element 0 is -1, outside uint8's range/);
        expect(Array.from(f([[0, 255]])[0]!.data)).to.deep.equal([0, 255]);
      });
    });
  }
});
