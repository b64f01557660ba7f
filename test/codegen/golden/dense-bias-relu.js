function k0(acc, b0, b3, b4, b5, lo, hi) { // matmul 8x12x6 [less_equal,dot,add,where]
  // built by K.relu at golden.test.ts:48; Tensor.add at golden.test.ts:48; K.dot at golden.test.ts:48
  for (let ib = 0; ib < 1; ib++) {
    for (let ip = lo; ip < hi; ip++) {
      const re = 8;
      const ao = (ib * 1 + ip) * 64;
      for (let r = 0; r < re; r++) {
        for (let j = 0; j < 6; j++) {
          const t0 = Math.fround((b0[j] + Math.fround(acc[ao + r * 8 + j])));
          b3[ip * 48 + r * 6 + j] = (t0 <= 0 ? 0 : t0);
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
  { const q0 = rt.arena.pick(kp[0], cells[0]), p0 = rt.arena.stale(q0, b2); const ar = rt.arena.f64(80), a0 = rt.arena.f32(), z = rt.arena.base, b4 = a0.subarray(2 * z, 2 * z + 96), b5 = a0.subarray(2 * q0.at, 2 * q0.at + 96), acc = a0.subarray(2 * z + 96, 2 * z + 160);
    rt.rowsA(b4, b1, 0, 12, 8, 12);
    let axB = 0;
    if (p0) {
      if (rt.arena.rowsFirst(q0, b2, 4)) { rt.rowsB(b5, b2, 0, 6, 12, 6, 8); axB = 1; }
      else { rt.packStrided(b5, b2, 0, 0, 1, 6, 1, 6, 12, 4); rt.arena.packed(q0, b2); }
    }
    rt.rows32(b4.byteOffset, 48, b5.byteOffset, 12, acc.byteOffset, 32, 8, 2, axB);
    k0(acc, b0, b3, b4, b5, 0, 1);
  }
  return [b3];
  } catch (e) { throw where(e, at); }
};
