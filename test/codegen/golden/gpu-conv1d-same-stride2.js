function (b0, b1) {
  const i = this.thread.x;
  const i0 = 0;
  const i1 = Math.floor(i / 2);
  const i2 = i % 2;
  let acc = 0.0;
  for (let i3 = 0; i3 < 9; i3++) {
    const x0 = (Math.floor(i3 / 3) + i1 * 2 + -1); const t0 = x0;
    const t1 = t_ge(t0, Math.fround(0.0));
    const t2 = t_lt(t0, Math.fround(5.0));
    const t3 = (t_ne0(t1) * t_ne0(t2));
    const x1 = ((i3 % 3) + Math.min(Math.max((Math.floor(i3 / 3) + i1 * 2 + -1), 0), 4) * 3); const t4 = b0[x1];
    const t5 = (t_ne0(t3) == 1.0 ? t4 : Math.fround(0.0));
    const x2 = (i2 + i3 * 2); const t6 = b1[x2];
    acc += t5 * t6;
  }
  const t7 = acc;
  return acc;
}
