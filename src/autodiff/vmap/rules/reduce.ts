// Batching rules of reductions, scans along an axis and their adjoints: the same op, its axes one
// further along (the batch is axis 0).
import { reduceOps, type argOps } from '../../../ir/ops/reduce.js';
import { ap, batched, shift } from '../helpers.js';
import type { BatchRule, BatchTableFor } from '../types.js';

const reduceRule: BatchRule = (n, [x]) => {
  const r = x!.value.ndim - 1;
  const axes = (n.attrs['axes'] as readonly number[]).map((a) => shift(a, r));
  return batched(ap(n.op, [x!.value], { ...n.attrs, axes }));
};

/** Ops with one `axis` attr on their (only) input. */
export const axisRule: BatchRule = (n, [x]) =>
  batched(ap(n.op, [x!.value], { ...n.attrs, axis: shift(n.attrs['axis'] as number, x!.value.ndim - 1) }));

type Name = keyof typeof reduceOps | keyof typeof argOps | 'cumsum' | 'cumprod' | 'untile' | 'unrepeat';

/** Every reduction row batches alike: its axes one further along. */
const reductions = Object.fromEntries(Object.keys(reduceOps).map((name) => [name, reduceRule])) as Record<
  keyof typeof reduceOps,
  BatchRule
>;

export const reduceBatchRules: BatchTableFor<Name> = {
  ...reductions,
  argmax: axisRule,
  argmin: axisRule,
  cumsum: axisRule,
  cumprod: axisRule,
  untile: (n, [g]) => batched(ap('untile', [g!.value], { reps: [1, ...n.attrs.reps] })),
  unrepeat: axisRule,
};
