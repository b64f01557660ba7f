function k0(b0, b1, lo, hi) { // max,sub,exp
  // built by K.softmax at golden.test.ts:42
  for (let i0 = lo; i0 < hi; i0++) {
    const t0 = (i0 * 10);
    let a0 = (-Infinity);
    for (let i1 = 0; i1 < 10; i1++) {
      const t1 = b0[(t0 + i1)];
      a0 = Math.max(a0, t1);
    }
    for (let i2 = 0; i2 < 10; i2++) {
      const t2 = (t0 + i2);
      b1[t2] = Math.exp(Math.fround((b0[t2] - a0)));
    }
  }
}
function k1(b1, b2, lo, hi) { // sum,div
  // built by K.softmax at golden.test.ts:42
  for (let i3 = lo; i3 < hi; i3++) {
    const t3 = (i3 * 10);
    let a1 = 0;
    for (let i4 = 0; i4 < 10; i4++) {
      const t4 = b1[(t3 + i4)];
      a1 += t4;
    }
    const t5 = Math.fround(a1);
    for (let i5 = 0; i5 < 10; i5++) {
      const t6 = (t3 + i5);
      b2[t6] = (b1[t6] / t5);
    }
  }
}
"use strict";
const k0 = kern[0];
const k1 = kern[1];
return function run(ins, cells, phase, ctx, outs) {
  const b0 = ins[0];
  const b1 = slots[0];
  const b2 = new Float32Array(160);
  let at = -1;
  try {
  at = 0;
  k0(b0, b1, 0, 1); k0(b0, b1, 1, 16);
  at = 1;
  k1(b1, b2, 0, 1); k1(b1, b2, 1, 16);
  return [b2];
  } catch (e) { throw where(e, at); }
};
