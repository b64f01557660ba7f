// Control flow on tfjs: a Scan runs as the reference's host loop (`scanLoop` in
// src/ir/ops/control.ts), each step inside its own tf.tidy (only the step's outputs and new
// states survive it); per-step results are stacked with tf.stack at the end, in walking order.
import { scanLoop, type ScanAttrs } from '../../../ir/ops/control.js';
import type { KernelContext, Tensor, TfTableFor, TfTupleKernel } from '../types.js';
import { tfDType } from '../types.js';

const scan: TfTupleKernel<ScanAttrs> = {
  tuple: (ins, a, ctx: KernelContext) => {
    const { tf } = ctx;
    return scanLoop(ins, a, {
      // tfjs holds float64 as float32: shapes are checked, dtypes are the declared ones
      dtypeOf: () => undefined,
      slice: (s, t) =>
        tf.reshape(tf.slice(s, [t, ...s.shape.slice(1).map(() => 0)], [1, ...s.shape.slice(1)]), s.shape.slice(1)),
      // each step in its own tidy; a result that is a fed tensor itself (a state passed through) gets its own handle
      // (the body after the function's passes: `a.body.results` optimized, cached per body)
      step: (_results, feeds) => tf.tidy(() => ctx.evaluateBody(a.body, feeds()).map((v) => tf.clone(v))),
      stack: (steps) => tf.stack(steps as Tensor[]),
      empty: (t) => tf.zeros([0, ...t.shape.map((d) => d ?? 0)], tfDType(t.dtype)),
    });
  },
};

export const controlKernels: TfTableFor<'scan' | 'scan_arg' | 'tuple_get'> = {
  scan,
  scan_arg: 'executor',
  tuple_get: 'executor',
};
