// Two row kernels of the SIMD reduction tier run as one: the first stores a row of elements E
// computed from its own row folds (softmax's exp(x - max), log-softmax's x - max) that only the
// second reads, along the same rows (softmax's sum and division, log-softmax's log-sum-exp and
// subtraction). One module calls both loop bodies on each block of rows, the second reading E
// where the first left it in the tier's memory: E never goes back to a JavaScript array, so a
// softmax row is copied in once (x) and out once (the result), with max, exp, sum and scale
// computed while its block stays in cache. Each body is the one its kernel has alone, so the
// results are those of the two kernels run one after the other, bit for bit (the bounds of
// docs/architecture.md, "Reduction precision", unchanged). XNNPACK's softmax (max, then exp
// stored with the sum, then scale, per row) and oneDNN's are the anchors for the pass structure.
import { stepBuffers, type Program } from '../../kernel/ir.js';
import type { DType } from '../../../ir/dtype.js';
import { Body, moduleBytes, op } from './encode.js';
import { planReduce } from './reduce.js';
import { MAX_REGIONS, REGB, type RedPlan } from './reduce-body.js';

let PAIRS = true;
/** Whether row pairs run as one kernel (tests compare both). */
export function setRowPairs(on: boolean): void {
  PAIRS = on;
}
/** Whether row pairs run as one kernel (setRowPairs; the disk cache's key). */
export function rowPairs(): boolean {
  return PAIRS;
}

/**
 * The plan of steps i and i + 1 of `p` run as one row kernel, or undefined: both rows-form plans of
 * the tier over the same rows; the first storing one row of elements into a temporary that only the
 * second reads (no other step, no result), the second reading nothing else.
 */
export function planRowPair(p: Program, i: number, dtype: (buf: number) => DType): RedPlan | undefined {
  const k0 = p.steps[i];
  const k1 = p.steps[i + 1];
  if (!PAIRS || k0?.kind !== 'loop' || k1?.kind !== 'loop') return undefined;
  if (k0.stores.length !== 1 || k0.pool !== undefined || k1.pool !== undefined) return undefined;
  const e = k0.stores[0]!.buf;
  if (p.buffers[e]?.role !== 'temp' || p.targets.some((t) => t.buf === e)) return undefined;
  const alone = p.steps.every(
    (t, j) =>
      j === i ||
      (j === i + 1
        ? !stepBuffers(t).writes.includes(e)
        : !stepBuffers(t).reads.includes(e) && !stepBuffers(t).writes.includes(e)),
  );
  if (!alone) return undefined;
  const a = planReduce(k0, dtype);
  if (a === undefined) return undefined;
  const b = planReduce(k1, dtype);
  return pairOf(a, b, e);
}

function pairOf(a: RedPlan, b: RedPlan | undefined, e: number): RedPlan | undefined {
  if (
    b === undefined ||
    a.form !== 'rows' ||
    b.form !== 'rows' ||
    !a.elements ||
    a.body === undefined ||
    b.body === undefined
  )
    return undefined;
  if (a.rows !== b.rows || a.cols !== b.cols || (a.gap ?? 0) !== 0 || (b.gap ?? 0) !== 0) return undefined;
  const st = a.stores[0]!;
  const ld = b.loads;
  if (
    a.stores.length !== 1 ||
    ld.length !== 1 ||
    ld[0]!.buf !== e ||
    st.off !== 0 ||
    ld[0]!.off !== 0 ||
    st.row !== a.cols ||
    ld[0]!.row !== a.cols
  )
    return undefined;
  if (a.loads.length + 1 + b.stores.length > MAX_REGIONS) return undefined;
  const shared = a.shared || b.shared;
  // run(n, base): the first body over the block, then the second with its region 0 at E's region
  const run = new Body(2, []);
  run.get(0).get(1).ops(op.call, 0);
  run
    .get(0)
    .get(1)
    .i32(a.loads.length * REGB)
    .ops(op.i32Add, op.call, 1);
  const bytes = moduleBytes(
    [
      { name: 'first', params: 2, body: a.body },
      { name: 'second', params: 2, body: b.body },
      { name: 'run', params: 2, body: run },
    ],
    shared ? 'shared' : true,
  );
  return {
    form: 'rows',
    rows: a.rows,
    cols: a.cols,
    elements: b.elements,
    loads: a.loads,
    stores: b.stores,
    accs: 0,
    bytes,
    shared,
    label: `${a.label}; ${b.label}`,
    gap: 1,
  };
}
