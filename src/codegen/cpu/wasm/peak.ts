// The machine's measured SIMD peak for bench/: a WebAssembly loop of independent vector
// multiply-adds (no loads; ACC independent chains acc = acc*x + y), the most arithmetic one core
// can do through WebAssembly. Each product reads its own accumulator, so the compiler can neither
// hoist it out of the loop nor share it between chains (a loop of acc += x*y would measure adds
// only: x*y is loop-invariant). bench/run.ts prints each kernel's
// GFLOP/s as a fraction of it, so "how far from the limit" is a measured figure, not a datasheet's.
import { Body, moduleBytes, op, simd, V128, VOID, WA, I32 } from './encode.js';

/** Chains: enough to cover a multiply then an add on every FP pipe, few enough for 16 registers with x and y. */
const ACC = 12;

function peakBody(lanes: 2 | 4, fused: boolean): Body {
  // param n (iterations); locals: ACC accumulators, x, y
  const b = new Body(1, [[ACC + 2, V128]]);
  const [N, X, Y] = [0, 1 + ACC, 2 + ACC];
  const splat = lanes === 2 ? simd.f64x2Splat : simd.f32x4Splat;
  const mul = lanes === 2 ? simd.f64x2Mul : simd.f32x4Mul;
  const add = lanes === 2 ? simd.f64x2Add : simd.f32x4Add;
  const madd = lanes === 2 ? simd.f64x2RelaxedMadd : simd.f32x4RelaxedMadd;
  // x = 0.5, y = 1: every chain tends to 2 (no overflow, no subnormals, however many iterations)
  const constant = (x: number) =>
    lanes === 2
      ? [op.f64Const, ...new Uint8Array(new Float64Array([x]).buffer)]
      : [op.f32Const, ...new Uint8Array(new Float32Array([x]).buffer)];
  b.ops(...constant(0.5))
    .v(splat)
    .set(X);
  b.ops(...constant(1))
    .v(splat)
    .set(Y);
  for (let i = 0; i < ACC; i++) b.vzero().set(1 + i);
  b.ops(op.block, VOID).get(N).ops(op.i32Eqz, op.brIf, 0, op.loop, VOID);
  for (let i = 0; i < ACC; i++) {
    if (fused)
      b.get(1 + i)
        .get(X)
        .get(Y)
        .v(madd)
        .set(1 + i);
    else
      b.get(1 + i)
        .get(X)
        .v(mul)
        .get(Y)
        .v(add)
        .set(1 + i);
  }
  b.get(N).i32(1).ops(op.i32Sub).tee(N).ops(op.brIf, 0, op.end, op.end);
  // keep the sums live: store them at address 0
  for (let i = 0; i < ACC; i++)
    b.i32(0)
      .get(1 + i)
      .v(simd.v128Store, 4, 0);
  return b;
}

export interface Peak {
  readonly f64x2: number;
  readonly f32x4: number;
  readonly f32x4Fused?: number;
}

/**
 * GFLOP/s of the multiply-add loop (best of 9 runs), per lane kind; relaxed FMA where the runtime
 * has it. `clock` (milliseconds) times each run: wall time by default; a process CPU-time clock
 * (bench/run.ts under BENCH_CLOCK=cpu) keeps the time other jobs take the core from out of it.
 */
export function measurePeak(fusedAvailable: boolean, clock: () => number = () => performance.now()): Peak | undefined {
  if (WA === undefined) return undefined;
  const funcs = [
    { name: 'f64', params: 1, body: peakBody(2, false) },
    { name: 'f32', params: 1, body: peakBody(4, false) },
    ...(fusedAvailable ? [{ name: 'f32fma', params: 1, body: peakBody(4, true) }] : []),
  ];
  let inst;
  try {
    inst = new WA.Instance(new WA.Module(moduleBytes(funcs)), { env: { mem: new WA.Memory({ initial: 1 }) } });
  } catch {
    return undefined;
  }
  void I32;
  const rate = (f: (n: number) => void, lanes: number) => {
    const n = 2_000_000;
    f(n / 10); // compiled by then (Liftoff tiers up on the hot loop)
    const ts: number[] = [];
    for (let r = 0; r < 9; r++) {
      const t0 = clock();
      f(n);
      ts.push(clock() - t0);
    }
    return (n * ACC * lanes * 2) / Math.min(...ts) / 1e6; // the best run: a peak, and the one least disturbed by other jobs
  };
  const ex = inst.exports as Record<string, (n: number) => void>;
  return {
    f64x2: rate(ex['f64']!, 2),
    f32x4: rate(ex['f32']!, 4),
    ...(fusedAvailable ? { f32x4Fused: rate(ex['f32fma']!, 4) } : {}),
  };
}
