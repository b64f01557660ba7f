function (b0, b1) {
  const i = this.thread.x;
  const i0 = 0;
  const i1 = Math.floor(i / 4);
  const i2 = i % 4;
  let acc = 0.0;
  for (let i3 = 0; i3 < 3; i3++) {
    const x0 = (i1 * 3 + i3); const t0 = b0[x0];
    const x1 = (i2 + i3 * 4); const t1 = b1[x1];
    acc += t0 * t1;
  }
  const t2 = acc;
  return acc;
}
