// IEEE half bits (src/ir/half.ts), which ONNX tensors and WebGPU's f16 buffers hold: checked against
// every one of the 65536 bit patterns and against dtype.ts' roundHalf, an independent rounding of values.
import { expect } from 'chai';
import fc from 'fast-check';
import { roundHalf } from '../../src/ir/dtype.js';
import { fromHalfBits, toHalfBits } from '../../src/ir/half.js';

describe('ir/half', () => {
  it('every half bit pattern reads back to its own bits (NaNs stay NaN)', () => {
    for (let h = 0; h < 65536; h++) {
      const v = fromHalfBits(h);
      if (Number.isNaN(v)) {
        expect(Number.isNaN(fromHalfBits(toHalfBits(v))), `bits ${h}`).to.equal(true);
        continue;
      }
      expect(toHalfBits(v), `bits ${h} (${v})`).to.equal(h);
    }
  });

  it('known values: 1, -2, the largest, the smallest subnormal, infinity, -0', () => {
    expect(toHalfBits(1)).to.equal(0x3c00);
    expect(toHalfBits(-2)).to.equal(0xc000);
    expect(fromHalfBits(0x7bff)).to.equal(65504);
    expect(fromHalfBits(0x0001)).to.equal(2 ** -24);
    expect(toHalfBits(Infinity)).to.equal(0x7c00);
    expect(toHalfBits(1e6)).to.equal(0x7c00);
    expect(toHalfBits(-0)).to.equal(0x8000);
  });

  it('rounds a float32 value to the nearest half, ties to even, as roundHalf does', () => {
    fc.assert(
      fc.property(fc.float({ noNaN: true }), (x) => {
        const want = roundHalf(x);
        const got = fromHalfBits(toHalfBits(x));
        expect(Object.is(got, want) || got === want, `${x}: ${got} vs ${want}`).to.equal(true);
      }),
      { numRuns: 20000 },
    );
  });
});
