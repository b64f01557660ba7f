// Ops that only the optimizer introduces: `fused` (a kernel's worth of ops, made by the fusion
// pass) and `softmax_cross_entropy` (the stable form the stabilize pass substitutes for a
// crossentropy of a softmax). Users never build them; the reference semantics of each is
// still given here, so an optimized graph can be run by the reference interpreter.
import { promote, isFloat } from '../dtype.js';
import { InferError } from '../errors.js';
import { NDArray, formatShape, sizeOf } from '../ndarray.js';
import { defineOp, type OpDef } from '../op.js';
import type { FusedBody } from '../fused.js';
import type { Node } from '../node.js';
import { topoSort } from '../graph.js';
import { normAxis, tensorType, type TensorType } from '../types.js';

/** Types through the body for given input types (the body's static types may have had unknown dims). */
function inferBody(body: FusedBody, ins: readonly TensorType[], getOp: (name: string) => OpDef): TensorType {
  if (ins.length !== body.params.length)
    throw new InferError(`fused: ${ins.length} inputs for ${body.params.length} params`, 'value');
  const types = new Map<Node, TensorType>();
  body.params.forEach((p, i) => {
    const t = ins[i]!;
    if (
      t.dtype !== p.dtype ||
      t.shape.length !== p.ndim ||
      p.shape.some((d, k) => d !== null && t.shape[k] !== null && d !== t.shape[k])
    ) {
      throw new InferError(
        `fused: input ${i} has type ${t.dtype} ${formatShape(t.shape)}, the body expects ${p.dtype} ${formatShape(p.shape)}`,
      );
    }
    types.set(p, t);
  });
  for (const n of topoSort([body.root])) {
    if (types.has(n)) continue;
    types.set(
      n,
      n.inputs.length === 0
        ? n.type
        : getOp(n.op).infer(
            n.inputs.map((i) => types.get(i)!),
            n.attrs,
          ),
    );
  }
  return types.get(body.root)!;
}

/**
 * The fused op, given the registry's lookup: its type inference runs every member op's (the
 * registry hands itself in, so this module needs no import of it).
 */
export const fusedOpWith = (getOp: (name: string) => OpDef) =>
  defineOp<{ readonly body: FusedBody }>({
    name: 'fused',
    kind: 'other',
    arity: 'variadic',
    infer: (ins, a) => inferBody(a.body, ins, getOp),
    impl: (ins, a, ctx) => {
      const feeds = new Map<Node, NDArray>();
      a.body.params.forEach((p, i) => feeds.set(p, ins[i]!));
      return ctx.evaluate([a.body.root], feeds)[0]!;
    },
  });

export interface SoftmaxXentAttrs {
  readonly axis: number;
}

/**
 * -sum(target * log_softmax(logits), axis), computed stably: with m = max(x), s = sum(exp(x - m)),
 * loss = -sum(t * ((x - m) - log s)). Logits and target have one shape; the axis is dropped.
 */
export const softmaxCrossEntropyOp = defineOp<SoftmaxXentAttrs>({
  name: 'softmax_cross_entropy',
  kind: 'other',
  arity: 2,
  infer: ([x, t], a) => {
    const ax = normAxis(a.axis, x!.shape.length);
    if (
      x!.shape.length !== t!.shape.length ||
      x!.shape.some((d, i) => d !== null && t!.shape[i] !== null && d !== t!.shape[i])
    ) {
      throw new InferError(`logits ${formatShape(x!.shape)} and target ${formatShape(t!.shape)} must have one shape`);
    }
    const p = promote(x!.dtype, t!.dtype);
    return tensorType(
      isFloat(p) ? p : 'float32',
      x!.shape.map((d, i) => d ?? t!.shape[i]!).filter((_, i) => i !== ax),
    );
  },
  impl: ([x, t], a) => {
    const shape = x!.shape;
    const ax = normAxis(a.axis, shape.length);
    const n = shape[ax]!;
    const inner = sizeOf(shape.slice(ax + 1));
    const outer = sizeOf(shape.slice(0, ax));
    const out = new Float64Array(outer * inner);
    for (let o = 0; o < outer; o++) {
      for (let i = 0; i < inner; i++) {
        const at = (k: number) => (o * n + k) * inner + i;
        let m = -Infinity;
        for (let k = 0; k < n; k++) m = Math.max(m, x!.data[at(k)]!);
        let s = 0;
        for (let k = 0; k < n; k++) s += Math.exp(x!.data[at(k)]! - m);
        const ls = Math.log(s);
        let acc = 0;
        for (let k = 0; k < n; k++) acc += t!.data[at(k)]! * (x!.data[at(k)]! - m - ls);
        out[o * inner + i] = -acc;
      }
    }
    const p = promote(x!.dtype, t!.dtype);
    return new NDArray(
      out,
      shape.filter((_, i) => i !== ax),
      isFloat(p) ? p : 'float32',
    );
  },
});
