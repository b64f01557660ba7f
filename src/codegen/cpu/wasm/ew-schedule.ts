// The elementwise tier's schedule (./elementwise.ts): what the autotuner (src/runtime/tune.ts)
// searches for each of its kernels, and the default every untuned kernel takes.

/**
 * Loops at least this long are compiled over the shared memory and split over the threads (a chunk
 * per claim). Measured on 2 cores, the bench's 1M-element chain with an approximated function took 15-18 ms over the shared
 * memory (split or not) against 12-13 ms over the private one (the calling thread copies every
 * chunk in and out either way), so only loops four times that long take the shared form.
 */
export const PARALLEL_MIN_ELEMENTS = 1 << 22;

/**
 * An elementwise tier kernel's schedule, the autotuner's search space for it (src/runtime/tune.ts):
 * `streams`, independent vectors per loop iteration (the unroll: more keep an out-of-order core's
 * pipelines full through the approximations' long dependency chains, fewer keep every value in a
 * register), and `split`, whether a one-loop kernel takes the shared memory and splits over the
 * worker threads (where more than one is configured). Every element is computed by the same
 * instructions whatever the schedule, so every schedule gives bit-identical results.
 */
export interface EwSchedule {
  readonly streams: number;
  readonly split: boolean;
}

/** Four vectors per iteration. */
export const DEFAULT_STREAMS = 4;

/** The default schedule of a loop of `n` elements (`twoLoops`: rows of columns): four vectors per iteration, split from PARALLEL_MIN_ELEMENTS elements. */
export const defaultEwSchedule = (n: number, twoLoops: boolean): EwSchedule => ({
  streams: DEFAULT_STREAMS,
  split: !twoLoops && n >= PARALLEL_MIN_ELEMENTS,
});

/** The unrolls the tier builds (a chunk, CHUNK elements, is a whole number of iterations of each). */
export const EW_STREAMS: readonly number[] = [1, 2, 4, 8];
