// Control flow on tfjs: a Scan runs as a host loop over its body, each step inside its own
// tf.tidy (only the step's outputs and new states survive it); per-step results are stacked
// with tf.stack at the end, in walking order, as src/ir/ops/control.ts defines.
import { InferError } from '../../../ir/errors.js';
import { formatShape } from '../../../ir/ndarray.js';
import type { Node } from '../../../ir/node.js';
import { checkFits, scanInputs, type KeepMode, type ScanAttrs } from '../../../ir/ops/control.js';
import type { TensorType } from '../../../ir/types.js';
import type { TF } from '../load.js';
import type { KernelContext, Tensor, TfTableFor, TfTupleKernel } from '../types.js';
import { tfDType } from '../types.js';

function stackSteps(tf: TF, what: string, steps: readonly Tensor[], t: TensorType): Tensor {
  const first = steps[0];
  if (first === undefined) return tf.zeros([0, ...t.shape.map((d) => d ?? 0)], tfDType(t.dtype));
  steps.forEach((s, k) => {
    if (s.shape.length !== first.shape.length || s.shape.some((d, i) => d !== first.shape[i])) {
      throw new InferError(`${what}: step ${k} has shape ${formatShape(s.shape)} but step 0 had ${formatShape(first.shape)}; stacked results keep one shape`);
    }
  });
  return tf.stack(steps as Tensor[]);
}

function kept(tf: TF, what: string, list: readonly Tensor[], t: TensorType, keep: KeepMode): Tensor {
  if (keep === 'none') return stackSteps(tf, what, [], t);
  if (keep === 'last') {
    const last = list[list.length - 1];
    if (last === undefined) throw new InferError(`${what}: the last step is asked for, but the scan ran 0 steps`, 'value');
    return last;
  }
  return stackSteps(tf, what, list, t);
}

const scan: TfTupleKernel<ScanAttrs> = {
  tuple: (ins, a, ctx: KernelContext) => {
    const { tf } = ctx;
    const b = a.body;
    // tfjs holds float64 as float32: shapes are checked, dtypes are the declared ones
    const { seqs, initial, consts, steps } = scanInputs(ins, a);
    let states = initial;
    const outs: Tensor[][] = b.outputs.map(() => []);
    const stateSeqs: Tensor[][] = b.states.map(() => []);
    for (let k = 0; k < steps; k++) {
      const t = a.go_backwards ? steps - 1 - k : k;
      const vals = tf.tidy(() => {
        const feeds = new Map<Node, Tensor>();
        b.sequences.forEach((arg, i) => {
          const s = seqs[i]!;
          feeds.set(arg, tf.reshape(tf.slice(s, [t, ...s.shape.slice(1).map(() => 0)], [1, ...s.shape.slice(1)]), s.shape.slice(1)));
        });
        b.states.forEach((arg, j) => feeds.set(arg, states[j]!));
        b.constants.forEach((arg, c) => feeds.set(arg, consts[c]!));
        // a result that is a fed tensor itself (a state passed through) gets its own handle
        return ctx.evaluateBody(b, feeds).map((v) => tf.clone(v));
      });
      b.outputs.forEach((_, o) => outs[o]!.push(vals[o]!));
      const next = vals.slice(b.outputs.length);
      next.forEach((s, j) => {
        checkFits(`new state ${j} at step ${k}`, s, b.states[j]!.type, undefined);
        const prev = states[j]!;
        if (s.shape.some((d, i) => d !== prev.shape[i])) {
          throw new InferError(`new state ${j} at step ${k} has shape ${formatShape(s.shape)} but the state had ${formatShape(prev.shape)}; states keep their shape`);
        }
        stateSeqs[j]!.push(s);
      });
      states = next;
    }
    return [
      ...b.outputs.map((o, k) => kept(tf, `output ${k}`, outs[k]!, o.type, a.keep[k]!)),
      ...states,
      ...b.states.map((s, j) => kept(tf, `state ${j}`, stateSeqs[j]!, s.type, a.keep[b.outputs.length + j]!)),
    ];
  },
};

export const controlKernels: TfTableFor<'scan' | 'scan_arg' | 'tuple_get'> = {
  scan,
  scan_arg: 'executor',
  tuple_get: 'executor',
};
