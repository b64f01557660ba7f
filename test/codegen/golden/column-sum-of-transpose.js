function k0(b0, b1, lo, hi) { // transpose,exp,sum
  // built by K.sum at golden.test.ts:52; K.exp at golden.test.ts:52; Tensor.T at golden.test.ts:52
  for (let i0 = lo; i0 < hi; i0++) {
    const t0 = (i0 * 4);
    let a0 = 0;
    for (let i1 = 0; i1 < 4; i1++) {
      const t1 = Math.exp(b0[(t0 + i1)]);
      a0 += t1;
    }
    b1[i0] = a0;
  }
}
"use strict";
const k0 = kern[0];
return function run(ins, cells, phase, ctx, outs) {
  const b0 = ins[0];
  const b1 = new Float64Array(6);
  let at = -1;
  try {
  at = 0;
  k0(b0, b1, 0, 1); k0(b0, b1, 1, 6);
  return [b1];
  } catch (e) { throw where(e, at); }
};
