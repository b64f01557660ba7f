// Whether a job pays for handing work to the worker threads: a cost model from measured times, not
// a fixed size. One thread takes W / r (W the job's work, r the calling thread's measured rate for
// that kind of job: a product's multiply-adds, a shared tier kernel's floats); n threads take about
// L + W / (n r), L the hand-off latency (waking workers that sleep in Atomics.wait, their first
// claim, waiting for the last claim), measured as what a split job took beyond W / (n r). Split
// when W / r (1 - 1/n) > L. r (per kind) and L are running averages of the process's own jobs (r
// taking a faster sample at once, a sample of L counting at most twice L: a stall or a first call
// moves neither far), so a machine whose other jobs delay the workers keeps mid-sized jobs on the
// calling thread, and a quiet one splits them. TensorFlow.js' WebAssembly backend (XNNPACK's pthreadpool) splits by a
// fixed tile count instead; PyTorch's at::parallel_for uses a fixed grain size: the measured
// latency is this project's choice.
//
// Off by default (setHandoffModel(true) turns it on): where other work runs between calls, the
// measured latency rises and the model keeps mid-sized products on one thread, which costs more
// than the hand-off saves (the bench's dot 512, bench/README.md); off, every job past the tiers'
// size thresholds splits.

/** Running averages: `rate` the work per millisecond on one thread, by kind of job (0 until measured); `latency` in milliseconds. */
export const handoff = { rate: 0, latency: 0.05, on: false, splits: 0, kept: 0, rates: new Map<number, number>() };
/** Weight of a new measurement in each average. */
const ALPHA = 0.2;
/** The most a latency sample counts for, in multiples of the current estimate (handoffMeasured). */
const SPIKE = 2;
/**
 * Every PROBE-th job the model keeps on the calling thread splits anyway, so that L follows the
 * machine (a latency measured while the workers were starting, or under a burst of load, would
 * otherwise never be measured again); not a job whose saving is under PROBE_SHARE of L (L would
 * have to fall that far for it to split, which the probes of larger jobs see; probing a 15 us
 * product costs a 40 us wake-up). PROBE and PROBE_BACK are odd primes, so that calls running two
 * jobs each (a batch-1 inference's two products) probe both.
 */
const PROBE = 17;
const PROBE_SHARE = 1 / 4;
/**
 * Every PROBE_BACK-th job the model splits runs on the calling thread, so that r follows the
 * machine too: an underestimated r (a first call before WebAssembly tiered up) makes splits look
 * cheap, the latency samples W / (n r) explains fall to 0, and without one-thread samples neither
 * estimate would recover. It costs at most 1 / PROBE_BACK of what splitting saves.
 */
const PROBE_BACK = 257;
/** The most rates kept by kind (`rates`). */
const RATES = 4096;

/** Turns the model on or off (every job that may split does); undefined: the default, off. */
export function setHandoffModel(on: boolean | undefined): void {
  handoff.on = on ?? false;
}

/** Kind 0: matrix products (`rate`); others: the shared tier kernel of that id + 1, or a negative key of the caller's (`rates`). */
const rateOf = (kind: number) => (kind === 0 ? handoff.rate : (handoff.rates.get(kind) ?? 0));

/**
 * The threads to run `work` on (1 or `threads`), by the model; `kind` names the job's kind of work.
 * `measured`: by the model even where it is off, and on one thread until the kind's rate is
 * measured (products of few rows, small-matmul.ts: a batch-32 inference's product splits on a
 * quiet machine and stays on the calling thread where other work delays the workers).
 */
export function handoffThreads(work: number, threads: number, kind = 0, measured = false): number {
  const rate = rateOf(kind);
  if (threads <= 1 || (!handoff.on && !measured)) return threads;
  if (rate <= 0) return measured ? 1 : threads;
  const saving = (work / rate) * (1 - 1 / threads);
  if (saving > handoff.latency) {
    handoff.splits++;
    return handoff.splits % PROBE_BACK === 0 ? 1 : threads;
  }
  handoff.kept++;
  return handoff.kept % PROBE === 0 && saving >= PROBE_SHARE * handoff.latency ? threads : 1;
}

/** Records a job of `work` that took `ms` on `threads` threads. */
export function handoffMeasured(work: number, threads: number, ms: number, kind = 0): void {
  if (!(ms > 0) || work <= 0) return;
  const rate = rateOf(kind);
  if (threads <= 1) {
    const r = work / ms;
    // a faster sample replaces the rate (a slow one is a stall, or the job's first call: compiling,
    // cold caches), a slower one moves it a fifth of the way
    const next = rate <= 0 || r > rate ? r : rate + ALPHA * (r - rate);
    if (kind === 0) handoff.rate = next;
    else {
      // kinds keyed by job size: at most RATES kept, the oldest measured first to go
      if (!handoff.rates.has(kind) && handoff.rates.size >= RATES)
        handoff.rates.delete(handoff.rates.keys().next().value!);
      handoff.rates.set(kind, next);
    }
  } else if (rate > 0) {
    // a sample counts at most SPIKE times the estimate: one stall (a worker's first job, its
    // core lent to another process) moves L by a fifth of L, where it took hundreds of calls to
    // wear off; latency that stays high still raises L a fifth a split, so splitting stops in a few
    const l = Math.min(Math.max(0, ms - work / (rate * threads)), SPIKE * handoff.latency);
    handoff.latency += ALPHA * (l - handoff.latency);
  }
}
