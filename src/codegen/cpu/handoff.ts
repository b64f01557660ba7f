// Whether a product's sums pay for handing work to the worker threads: a cost model from measured
// times, not a fixed size. One thread takes W / r (W the multiply-adds, r the calling thread's
// measured rate); n threads take about L + W / (n r), L the hand-off latency (waking workers that
// sleep in Atomics.wait, their first claim, waiting for the last claim), measured as what a split
// product took beyond W / (n r). Split when W / r (1 - 1/n) > L. Both are running averages of
// the process's own products, so a machine whose other jobs delay the workers (a large L) keeps
// mid-sized products on the calling thread, and a quiet one splits them. TensorFlow.js'
// WebAssembly backend (XNNPACK's pthreadpool) splits by a fixed tile count instead; PyTorch's
// at::parallel_for uses a fixed grain size: the measured latency is this project's choice.

/** Running averages: r in multiply-adds per millisecond (0 until a product ran on one thread), L in milliseconds. */
export const handoff = { rate: 0, latency: 0.05, on: true, splits: 0, kept: 0 };
/** Weight of a new measurement in each average. */
const ALPHA = 0.2;
/**
 * Every PROBE-th product the model keeps on the calling thread splits anyway, so that L follows the
 * machine (a latency measured while the workers were starting, or under a burst of load, would
 * otherwise never be measured again).
 */
const PROBE = 16;

/** Turns the model off (every product with `par` splits, as before it) or on; tests that count worker panels turn it off. */
export function setHandoffModel(on: boolean): void {
  handoff.on = on;
}

/** The threads to run `work` multiply-adds on (1 or `threads`), by the model. */
export function handoffThreads(work: number, threads: number): number {
  if (threads <= 1 || !handoff.on || handoff.rate <= 0) return threads;
  const split = (work / handoff.rate) * (1 - 1 / threads) > handoff.latency;
  if (split) { handoff.splits++; return threads; }
  handoff.kept++;
  return handoff.kept % PROBE === 0 ? threads : 1;
}

/** Records a product of `work` multiply-adds that took `ms` on `threads` threads. */
export function handoffMeasured(work: number, threads: number, ms: number): void {
  if (!(ms > 0) || work <= 0) return;
  if (threads <= 1) {
    const r = work / ms;
    handoff.rate = handoff.rate <= 0 ? r : handoff.rate + ALPHA * (r - handoff.rate);
  } else if (handoff.rate > 0) {
    const l = Math.max(0, ms - work / (handoff.rate * threads));
    handoff.latency += ALPHA * (l - handoff.latency);
  }
}
