// The batching walker: visits the per-example graph in topological order and gives each node a
// batched value. A node none of whose inputs is batched stays as it is (the same for every
// example); otherwise its op's rule builds the batched node (JAX's BatchTrace, over a built graph).
import { apply } from '../../ir/build.js';
import { ValueError } from '../../ir/errors.js';
import { topoSort } from '../../ir/graph.js';
import { formatShape } from '../../ir/ndarray.js';
import type { Node } from '../../ir/node.js';
import { isBuiltin } from '../../ir/registry.js';
import { batchRules } from './rules/index.js';
import { FN, ap, batched } from './helpers.js';
import { loopBatch } from './loop.js';
import type {
  BTuple,
  BVal,
  BatchContext,
  BatchEntry,
  Batched,
  LoopRule,
  TupleBatchRule,
  UnsupportedBatch,
} from './types.js';

const isTuple = (v: Batched): v is BTuple => 'items' in v;

function entryOf(n: Node): BatchEntry {
  // User ops (defineOp) have no batching rule: they are batched by the loop.
  return isBuiltin(n.op) ? (batchRules[n.op] as BatchEntry) : { loop: `the user op ${n.op} has no batching rule` };
}

/** The batched value of every node of `outputs`' graph; `subst` maps the per-example leaves to batched tensors. */
export function batchGraph(outputs: readonly Node[], subst: ReadonlyMap<Node, Node>, ctx: BatchContext): BVal[] {
  const vals = new Map<Node, Batched>();
  const tensor = (n: Node): BVal => {
    const v = vals.get(n);
    if (v === undefined || isTuple(v))
      throw new Error(`internal: ${FN}: ${n.op} read as a tensor before it was batched`);
    return v;
  };
  for (const n of topoSort(outputs)) {
    const s = subst.get(n);
    if (s !== undefined) vals.set(n, batched(s));
    else if (n.inputs.length === 0) vals.set(n, { value: n, batched: false });
    else if (n.op === 'tuple_get') vals.set(n, itemOf(n, vals.get(n.inputs[0]!)));
    else vals.set(n, batchNode(n, n.inputs.map(tensor), ctx));
  }
  return outputs.map(tensor);
}

function itemOf(n: Node, t: Batched | undefined): BVal {
  if (t === undefined) throw new Error(`internal: ${FN}: tuple_get before its tuple`);
  const index = n.attrs['index'] as number;
  if (isTuple(t)) return t.items[index]!;
  return { value: t.value === n.inputs[0] ? n : ap('tuple_get', [t.value], { index }), batched: false };
}

function batchNode(n: Node, args: readonly BVal[], ctx: BatchContext): Batched {
  if (!args.some((a) => a.batched)) {
    const same = args.every((a, i) => a.value === n.inputs[i]);
    return {
      value: same
        ? n
        : apply(
            n.op,
            args.map((a) => a.value),
            n.attrs,
            FN,
          ),
      batched: false,
    };
  }
  const e = entryOf(n);
  if (e === 'leaf') throw new Error(`internal: ${FN}: ${n.op} has inputs but a leaf's batching rule`);
  if (typeof e === 'function') return checked(n, e(n, args, ctx), ctx);
  if ('unsupported' in e) throw new ValueError(`${FN}: cannot batch ${n.op}: ${(e as UnsupportedBatch).unsupported}`);
  if ('loop' in e) return loopBatch(n, args, ctx, (e as LoopRule).loop);
  const t = (e as TupleBatchRule).tuple(n, args, ctx);
  t.items.forEach((v, k) => checkType(n, v, n.type.items![k]!, ctx));
  return t;
}

function checked(n: Node, v: BVal, ctx: BatchContext): BVal {
  checkType(n, v, n.type, ctx);
  return v;
}

/** A rule's result must be the per-example type, with the batch axis (of the batch's size) in front when batched. */
function checkType(n: Node, v: BVal, t: Node['type'], ctx: BatchContext): void {
  const want = v.batched ? [ctx.size, ...t.shape] : t.shape;
  const ok =
    v.value.dtype === t.dtype &&
    v.value.ndim === want.length &&
    v.value.shape.every((d, i) => d === null || want[i] === null || d === want[i]);
  if (!ok) {
    throw new Error(
      `internal: ${FN}: the batching rule of ${n.op} gave ${v.value.dtype} ${formatShape(v.value.shape)} for ${t.dtype} ${formatShape(t.shape)}${v.batched ? ' (batched)' : ''}`,
    );
  }
}
