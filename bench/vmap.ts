// Per-example gradients of an MLP (relu, softmax crossentropy) for a batch of 128: one compiled
// call of vmap(grad) against a loop of 128 calls of the per-example gradient function (compiled
// once). Same run, alternating, medians; the ratio is loop / vmap. Two sizes: the bench MLP
// (784-256-10, whose per-example gradients are 128 x 203k floats, 104 MB, written by both
// sides) and a small one (32-64-10) where the per-call cost of the loop shows; then the bench MLP's
// per-example squared gradient norms (DP-SGD's clipping), where only 128 numbers come back (the
// optimizer's specialize pass takes them from the factors, ||x_i (x) d_i||^2 = ||x_i||^2 ||d_i||^2,
// on both sides). Beside the plain gradients, the floor: a fresh Float32Array of the 128 gradients'
// size, written once (what any batched side must do), timed on the same clock; beside the norms,
// the batch's first matrix product alone.
//   THEANINE_THREADS=1 BENCH_CLOCK=cpu node --expose-gc --import tsx bench/vmap.ts [rounds]
// BENCH_CLOCK=cpu times by the process's CPU time (every thread), which a shared machine's load
// moves less than wall time.
import { autodiff, backend as K, NDArray } from '../src/index.js';
import type { Node } from '../src/ir/node.js';

const ROUNDS = Number(process.argv[2] ?? 7);
const B = 128;
const CPU_CLOCK = process.env['BENCH_CLOCK'] === 'cpu';
function now(): number {
  if (!CPU_CLOCK) return performance.now();
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

function data(n: number, seed: number): Float32Array {
  let s = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = (s / 4294967296) * 2 - 1;
  }
  return out;
}

function bench(D: number, H: number, C: number, norms: boolean): void {
  const W1 = K.variable(new NDArray(data(D * H, 1).map((v) => v * 0.05), [D, H], 'float32'));
  const b1 = K.variable(new NDArray(new Float32Array(H), [H], 'float32'));
  const W2 = K.variable(new NDArray(data(H * C, 2).map((v) => v * 0.1), [H, C], 'float32'));
  const b2 = K.variable(new NDArray(new Float32Array(C), [C], 'float32'));
  const params = [W1, b1, W2, b2];

  /** One example's loss: x (D,), y one-hot (C,). */
  function loss(x: Node, y: Node): Node {
    const z = K.dot(K.relu(K.dot(x, W1).add(b1)), W2).add(b2);
    return K.logsumexp(z).sub(K.sum(y.mul(z)));
  }
  const allGrads = (x: Node, y: Node) => K.gradients(loss(x, y), params);
  // DP-SGD's clipping reads only each example's squared gradient norm.
  const grads = norms ? (x: Node, y: Node) => [allGrads(x, y).map((g) => K.sum(K.square(g))).reduce((p, q) => p.add(q))] : allGrads;

  const X = K.placeholder([B, D], null, 'float32');
  const Y = K.placeholder([B, C], null, 'float32');
  const perExample = K.function([X, Y], autodiff.vmap(grads)(X, Y) as Node[]);
  const x1 = K.placeholder([D], null, 'float32');
  const y1 = K.placeholder([C], null, 'float32');
  const one = K.function([x1, y1], grads(x1, y1));

  const xs = data(B * D, 3);
  const ys = new Float32Array(B * C);
  for (let i = 0; i < B; i++) ys[i * C + (i % C)] = 1;
  const xb = new NDArray(xs, [B, D], 'float32');
  const yb = new NDArray(ys, [B, C], 'float32');
  const rows = Array.from({ length: B }, (_, i) => [
    new NDArray(xs.slice(i * D, (i + 1) * D), [D], 'float32'), new NDArray(ys.slice(i * C, (i + 1) * C), [C], 'float32'),
  ]);

  const runVmap = () => perExample([xb, yb]);
  const runLoop = () => { for (const r of rows) one(r); };
  // The same with K.function's borrow (Theano's Out(borrow=True)) on both sides: results kept and
  // written again at the next call, so neither side allocates per call; its floor writes a kept array.
  const perExampleB = K.function([X, Y], autodiff.vmap(grads)(X, Y) as Node[], [], { borrow: true });
  const oneB = K.function([x1, y1], grads(x1, y1), [], { borrow: true });
  const runVmapB = () => perExampleB([xb, yb]);
  const runLoopB = () => { for (const r of rows) oneB(r); };

  // The two agree (float32, summed in different orders).
  const got = runVmap() as NDArray[];
  let worst = 0;
  rows.forEach((r, i) => (one(r) as NDArray[]).forEach((w, k) => {
    w.data.forEach((v, j) => { worst = Math.max(worst, Math.abs(v - got[k]!.data[i * w.size + j]!)); });
  }));
  if (worst > (norms ? 1e-3 : 1e-4)) throw new Error(`vmap and the loop disagree by ${worst}`);

  // The floors. Plain gradients: their bytes written once into fresh memory. Norms: the batch's
  // first product X . W1 alone (B x D x H multiply-adds), which both sides compute.
  const size = params.reduce((p, w) => p + w.shape.reduce((q: number, d) => q * (d ?? 0), 1), 0) * B;
  const firstProduct = K.function([X], [K.dot(X, W1)]);
  const runFloor = norms ? () => firstProduct([xb]) : () => new Float32Array(size).fill(1);
  const kept = new Float32Array(norms ? 0 : size);
  const runFloorB = () => kept.fill(1);

  const time = (f: () => unknown) => { const t0 = now(); f(); return now() - t0; };
  // Warm-up: each side runs at least 2 rounds and 300 ms, so that both are timed in their steady
  // state (JIT-compiled kernels, WebAssembly tiered up): a round of the loop is 128 calls, of vmap one.
  const warm = (f: () => unknown) => { const t0 = performance.now(); for (let i = 0; i < 2 || performance.now() - t0 < 300; i++) f(); };
  warm(runVmap);
  warm(runLoop);
  if (!norms) {
    warm(runVmapB);
    warm(runLoopB);
  }
  const tv: number[] = [];
  const tl: number[] = [];
  const tf: number[] = [];
  const tb: number[][] = [[], [], []];
  for (let r = 0; r < ROUNDS; r++) {
    tv.push(time(runVmap));
    tl.push(time(runLoop));
    tf.push(time(runFloor));
  }
  // the borrowed rounds apart, after a collection: the fresh rounds' garbage is not freed during them
  (globalThis as { gc?: () => void }).gc?.();
  for (let r = 0; r < ROUNDS && !norms; r++) {
    tb[0]!.push(time(runVmapB));
    tb[1]!.push(time(runLoopB));
    tb[2]!.push(time(runFloorB));
  }
  const median = (a: number[]) => [...a].sort((p, q) => p - q)[Math.floor(a.length / 2)]!;
  const [mv, ml] = [median(tv), median(tl)];
  console.log(`per-example ${norms ? 'squared gradient norms' : 'gradients'}, MLP ${D}-${H}-${C}, batch ${B}, ${ROUNDS} rounds (${CPU_CLOCK ? 'CPU' : 'wall'} time), max |vmap - loop| = ${worst.toExponential(1)}`);
  console.log(`vmap(grad), one call:        ${mv.toFixed(2)} ms (median)`);
  console.log(`loop of ${B} gradient calls:   ${ml.toFixed(2)} ms (median)`);
  console.log(`loop / vmap:                 ${(ml / mv).toFixed(1)}x`);
  const mf = median(tf);
  if (norms) {
    console.log(`floor: the first product X . W1 (${B}x${D}x${H}), ${mf.toFixed(2)} ms (${(2 * B * D * H / mf / 1e6).toFixed(1)} GFLOP/s); loop / floor = ${(ml / mf).toFixed(1)}x, the most batching can gain`);
    return;
  }
  const mb = (size * 4) / 2 ** 20;
  console.log(`floor: ${mb.toFixed(1)} MiB of gradients written into fresh memory: ${mf.toFixed(2)} ms (${(size * 4 / mf / 1e6).toFixed(2)} GB/s); loop / floor = ${(ml / mf).toFixed(1)}x, the most batching can gain`);
  const [bv, bl, bf] = tb.map(median) as [number, number, number];
  console.log(`borrowed outputs (both sides): vmap ${bv.toFixed(2)} ms, loop ${bl.toFixed(2)} ms, loop / vmap ${(bl / bv).toFixed(1)}x; floor (a kept array written) ${bf.toFixed(2)} ms, loop / floor ${(bl / bf).toFixed(1)}x`);
}

bench(784, 256, 10, false);
bench(32, 64, 10, false);
bench(784, 256, 10, true);
