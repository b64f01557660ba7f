// The fallback batching of ops with no vectorised rule: each example through the op, stacked.
import { apply } from '../../ir/build.js';
import { ValueError } from '../../ir/errors.js';
import type { Node } from '../../ir/node.js';
import { FN, ap, batched, staticSize } from './helpers.js';
import type { BVal, BatchContext, Batched } from './types.js';

/** Each example through the op, stacked: for ops without a vectorised rule (needs a static batch size). */
export function loopBatch(n: Node, args: readonly BVal[], ctx: BatchContext, reason: string): Batched {
  const size = staticSize(ctx, `${n.op} (${reason}; it is batched by a loop over the examples)`);
  if (size === 0) throw new ValueError(`${FN}: batching ${n.op} by a loop needs at least one example`);
  const outs = Array.from({ length: size }, (_, i) =>
    apply(
      n.op,
      args.map((a) => (a.batched ? ap('index', [a.value], { index: i }) : a.value)),
      n.attrs,
      FN,
    ),
  );
  const stack = (xs: readonly Node[]) => {
    const parts = xs.map((x) => ap('unsqueeze', [x], { axes: [0] }));
    return batched(parts.length === 1 ? parts[0]! : ap('concat', parts, { axis: 0 }));
  };
  if (n.type.items === undefined) return stack(outs);
  return { items: n.type.items.map((_, k) => stack(outs.map((o) => ap('tuple_get', [o], { index: k })))) };
}
