// A seeded generator (ir/random.ts mulberry32) for weight initialisation and batch order, so a
// run with the same --seed draws the same numbers everywhere; the library's own random ops are not needed.
import { mulberry32 } from '../ir/random.js';

export class Rng {
  /** Uniform in [0, 1). */
  readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }

  /** Uniform in [-limit, limit). */
  uniform(n: number, limit: number): Float32Array {
    const a = new Float32Array(n);
    for (let i = 0; i < n; i++) a[i] = (this.next() * 2 - 1) * limit;
    return a;
  }

  /** Fisher-Yates shuffle of 0..n-1. */
  permutation(n: number): Int32Array {
    const p = Int32Array.from({ length: n }, (_, i) => i);
    for (let i = n - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      const t = p[i]!;
      p[i] = p[j]!;
      p[j] = t;
    }
    return p;
  }
}
