function (b0, inf) {
  const i = this.thread.x;
  const i0 = Math.floor(i / 5);
  const i1 = i % 5;
  const t0 = (i0 * 5);
  let a0 = (-inf);
  for (let i2 = 0; i2 < 5; i2++) {
    const t1 = (t0 + i2);
    const t2 = b0[t1];
    a0 = t_nanmax(a0, t2);
  }
  const t3 = (t0 + i1);
  const t4 = b0[t3];
  const t5 = (t4 - a0);
  const t6 = t5;
  const t7 = Math.exp(t6);
  const t8 = t7;
  return t7;
}

function (b0) {
  const i = this.thread.x;
  const i0 = Math.floor(i / 5);
  const i1 = i % 5;
  const t0 = (i0 * 5);
  let a0 = Math.fround(0.0); let c0 = Math.fround(0.0);
  for (let i2 = 0; i2 < 5; i2++) {
    const t1 = (t0 + i2);
    const t2 = b0[t1];
    const y0 = t2 - c0; const z0 = a0 + y0; c0 = (z0 - a0) - y0; if (c0 != c0) { c0 = 0.0; } a0 = z0;
  }
  const t3 = a0;
  const t4 = (t0 + i1);
  const t5 = b0[t4];
  const t6 = t_div(t5, t3);
  const t7 = t6;
  return t6;
}
