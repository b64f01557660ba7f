// Batching rules of reductions, scans along an axis and their adjoints: the same op, its axes one
// further along (the batch is axis 0).
import type { argOps, reduceOps } from '../../../ir/ops/reduce.js';
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

export const reduceBatchRules: BatchTableFor<Name> = {
  sum: reduceRule,
  prod: reduceRule,
  mean: reduceRule,
  max: reduceRule,
  min: reduceRule,
  any: reduceRule,
  all: reduceRule,
  argmax: axisRule,
  argmin: axisRule,
  cumsum: axisRule,
  cumprod: axisRule,
  untile: (n, [g]) => batched(ap('untile', [g!.value], { reps: [1, ...n.attrs.reps] })),
  unrepeat: axisRule,
};
