function k0(acc, b0, b3, b4, b5, lo, hi) { // matmul 8x12x6 [less_equal,dot,add,where]
  // built by K.relu at golden.test.ts:48; Tensor.add at golden.test.ts:48; K.dot at golden.test.ts:48
  const wt = rt.arena.tile, oa = b4.byteOffset, ob = b5.byteOffset, oc = acc.byteOffset;
  for (let ib = 0; ib < 1; ib++) {
    for (let ip = lo; ip < hi; ip++) {
      const pa0 = (ib * 2 + ip) * 48;
      const re = 4;
      wt(oa + pa0 * 8, ob + ib * 768, 12, oc, 2);
      for (let r = 0; r < re; r++) {
        for (let jp = 0; jp < 2; jp++) {
          const ce = jp < 1 ? 4 : 2;
          for (let c = 0; c < ce; c++) {
            const t0 = Math.fround((b0[jp * 4 + c] + Math.fround(acc[jp * 16 + c * 4 + r])));
            b3[ip * 24 + jp * 4 + r * 6 + c] = (t0 <= 0 ? 0 : t0);
          }
        }
      }
    }
  }
}
"use strict";
const k0 = kern[0];
return function run(ins, cells, phase, ctx, outs) {
  const b0 = cells[1].value.data;
  const b1 = ins[0];
  const b2 = cells[0].value.data;
  const b3 = new Float32Array(48);
  let at = -1;
  try {
  at = 0;
  { const ar = rt.arena.f64(224), b4 = ar.subarray(0, 96), b5 = ar.subarray(96, 192), acc = ar.subarray(192, 224);
  rt.packStrided(b4, b1, 0, 0, 12, 1, 1, 8, 12, 4);
  rt.packStrided(b5, b2, 0, 0, 1, 6, 1, 6, 12, 4);
  k0(acc, b0, b3, b4, b5, 0, 1); k0(acc, b0, b3, b4, b5, 1, 2);
  }
  return [b3];
  } catch (e) { throw where(e, at); }
};
