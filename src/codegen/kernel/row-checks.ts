// The row numbers a device kernel reads from data: a device kernel cannot throw, so the host checks them first.
// Shared by the GL (gpu/strategy.ts) and WebGPU (wgsl/strategy.ts) strategies.
import { exprOrder } from './expr.js';
import { range } from './index-expr.js';
import type { LoopKernel } from './ir.js';

/** A row index the host checks before a kernel runs (gpu kernels and shaders cannot throw). */
export interface RowCheck {
  readonly buf: number;
  /** Elements [lo, hi] of the buffer are row numbers. */
  readonly lo: number;
  readonly hi: number;
  readonly rows: number;
  readonly op: string;
  readonly shape: string;
}

/** The data-chosen rows a loop kernel reads ('row' expressions over plain loads); `fail` makes the error thrown for a row number that is not a plain read. */
export function rowChecks(k: LoopKernel, fail: (why: string) => Error): RowCheck[] {
  const out: RowCheck[] = [];
  for (const e of exprOrder(k.stores.map((st) => st.value))) {
    if (e.t !== 'row') continue;
    if (e.x.t !== 'load' || e.x.dyn !== undefined) throw fail('a row number that is not a plain read');
    const [lo, hi] = range(e.x.index);
    out.push({ buf: e.x.buf, lo, hi, rows: e.rows, op: e.op, shape: e.shape });
  }
  return out;
}
