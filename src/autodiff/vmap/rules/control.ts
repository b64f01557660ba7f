// Batching a Scan: the body is batched as a graph of its own (JAX's `_scan_batching_rule`).
// Sequences walk their time axis, so a batched sequence (B, T, ..) enters as (T, B, ..); a state
// is batched when its initial value is or when its new value comes to depend on something
// batched (found by iterating to a fixed point); stacked results come back as (B, T, ..).
import type { Node } from '../../../ir/node.js';
import type { OpNode } from '../../../ir/registry.js';
import { topoSort } from '../../../ir/graph.js';
import { scanArg } from '../../../ir/scan.js';
import { ScanBody } from '../../../ir/scanbody.js';
import { scanItems } from '../../../ir/ops/control.js';
import { tensorType } from '../../../ir/types.js';
import { ap, batched, materialize, moveAxis } from '../helpers.js';
import type { BatchContext, BTuple, BVal, TupleBatchRule } from '../types.js';

/** Which of `results` depend on an arg in `batchedArgs`. */
function dependsOn(results: readonly Node[], batchedArgs: ReadonlySet<Node>): boolean[] {
  const dep = new Set<Node>();
  for (const n of topoSort(results)) if (batchedArgs.has(n) || n.inputs.some((i) => dep.has(i))) dep.add(n);
  return results.map((r) => dep.has(r));
}

/** Batched flags of the states: batched initially, or made batched by the body, to a fixed point. */
function stateFlags(
  body: ScanBody,
  seqB: readonly boolean[],
  initB: readonly boolean[],
  constB: readonly boolean[],
): boolean[] {
  const flags = [...initB];
  for (;;) {
    const on = new Set<Node>([
      ...body.sequences.filter((_, i) => seqB[i]),
      ...body.states.filter((_, j) => flags[j]),
      ...body.constants.filter((_, k) => constB[k]),
    ]);
    const dep = dependsOn(body.newStates, on);
    const next = flags.map((f, j) => f || dep[j]!);
    if (next.every((f, j) => f === flags[j])) return flags;
    flags.splice(0, flags.length, ...next);
  }
}

function scanRule(n: OpNode<'scan'>, args: readonly BVal[], ctx: BatchContext): BTuple {
  const a = n.attrs;
  const body = a.body;
  const [nSeq, nState] = [body.sequences.length, body.states.length];
  const seqB = args.slice(0, nSeq).map((v) => v.batched);
  const initB = args.slice(nSeq, nSeq + nState).map((v) => v.batched);
  const constB = args.slice(nSeq + nState).map((v) => v.batched);
  const stateB = stateFlags(body, seqB, initB, constB);
  const argB = [...seqB, ...stateB, ...constB];

  const subst = new Map<Node, Node>();
  const newArgs = body.args.map((old, i) => {
    if (!argB[i]) return old;
    const arg = scanArg(tensorType(old.dtype, [ctx.size, ...old.shape]), old.attrs['name'] as string);
    subst.set(old, arg);
    return arg;
  });
  const inner: BatchContext = { ...ctx, ref: [...subst.values()][0]! };
  const results = ctx.recurse([...body.outputs, ...body.newStates], subst, inner);
  const nOut = body.outputs.length;
  const outs = results.slice(0, nOut);
  const newStates = results.slice(nOut).map((v, j) => (stateB[j] ? materialize(v, inner) : v.value));
  const newBody = new ScanBody(
    newArgs.slice(0, nSeq),
    newArgs.slice(nSeq, nSeq + nState),
    newArgs.slice(nSeq + nState),
    outs.map((v) => v.value),
    newStates,
  );
  const inputs = args.map((v, i) => {
    if (i < nSeq) return v.batched ? moveAxis(v.value, 0, 1) : v.value;
    if (i < nSeq + nState) return stateB[i - nSeq] ? materialize(v, ctx) : v.value;
    return v.value;
  });
  const node = ap('scan', inputs, { ...a, body: newBody });
  const layout = scanItems(newBody);
  const stacked = (k: number, isB: boolean, keep: string): BVal => {
    const item = ap('tuple_get', [node], { index: k });
    if (!isB) return { value: item, batched: false };
    return batched(keep === 'last' ? item : moveAxis(item, 1, 0));
  };
  return {
    items: [
      ...layout.outputs.map((k, i) => stacked(k, outs[i]!.batched, a.keep[i]!)),
      ...layout.finalStates.map((k, j) => ({ value: ap('tuple_get', [node], { index: k }), batched: stateB[j]! })),
      ...layout.stateSequences.map((k, j) => stacked(k, stateB[j]!, a.keep[nOut + j]!)),
    ],
  };
}

export const scanBatchRule: TupleBatchRule<OpNode<'scan'>> = { tuple: scanRule };
