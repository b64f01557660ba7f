function (b0) {
  const i = this.thread.x;
  const i0 = i;
  const t0 = (i0 * 3);
  let a0 = Math.fround(0.0); let c0 = Math.fround(0.0);
  for (let i1 = 0; i1 < 3; i1++) {
    const t1 = (t0 + i1);
    const t2 = b0[t1];
    const y0 = t2 - c0; const z0 = a0 + y0; c0 = (z0 - a0) - y0; if (c0 != c0) { c0 = 0.0; } a0 = z0;
  }
  const t3 = a0;
  return a0;
}
