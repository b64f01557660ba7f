function (b0, b1) {
  const i = this.thread.x;
  const i0 = Math.floor(i / 3);
  const i1 = i % 3;
  const t0 = (i0 * 3);
  const t1 = (t0 + i1);
  const t2 = b0[t1];
  const t3 = b1[i1];
  const t4 = (t2 + t3);
  const t5 = t4;
  return t4;
}
