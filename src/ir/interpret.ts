// The reference interpreter: the definition of what a graph means. Node by node, in
// topological order, with each op's reference implementation. Passes and devices are
// tested against it, so it stays simple.
import { NDArray, formatShape } from './ndarray.js';
import type { EvalContext } from './op.js';
import { topoSort } from './graph.js';
import type { Node } from './node.js';
import { getOp } from './registry.js';
import { rethrow } from './build.js';
import { withBuiltBy } from './provenance.js';
import type { TensorType } from './types.js';

export interface EvalOptions {
  /** Values for placeholders (and optionally the learning phase), by node. */
  readonly feeds?: ReadonlyMap<Node, NDArray>;
  readonly learningPhase?: number;
  readonly epoch?: number;
  readonly print?: (message: string) => void;
}

let epochCounter = 0;

/** A fresh epoch number, so unseeded random ops draw afresh on each evaluation. */
export function nextEpoch(): number {
  return ++epochCounter;
}

export function evaluate(outputs: readonly Node[], opts: EvalOptions = {}): NDArray[] {
  const ctx: EvalContext = {
    learningPhase: opts.learningPhase ?? 0,
    epoch: opts.epoch ?? nextEpoch(),
    print: opts.print ?? ((m) => console.log(m)),
  };
  const values = new Map<Node, NDArray>();
  const feeds = opts.feeds;
  // Tuple-valued nodes (a Scan) keep their items here; `tuple_get` reads one out.
  const tuples = new Map<Node, NDArray[]>();
  const order = topoSort(outputs);
  // Every variable is read at the start of the call (SPEC §3): a call made from inside this one
  // (a user op's reference calling a compiled function) that updates a variable does not change
  // what this call computes, as on the compiled targets, which bind variables before any step.
  for (const n of order) if (n.op === 'variable' && feeds?.get(n) === undefined) values.set(n, n.cell!.value);
  for (const n of order) {
    if (values.has(n)) continue;
    try {
      if (n.type.items !== undefined) tuples.set(n, evalTuple(n, values, ctx));
      else values.set(n, evalNode(n, values, tuples, feeds, ctx));
    } catch (e) {
      throw withBuiltBy(e, n.provenance); // the error ends with the user's call that built the node
    }
  }
  return outputs.map((o) => {
    const v = values.get(o);
    if (v === undefined) throw new Error(`internal: output ${o.name} is a tuple; extract its items with tuple_get`);
    return v;
  });
}

function inputValues(n: Node, values: Map<Node, NDArray>): NDArray[] {
  return n.inputs.map((i) => {
    const v = values.get(i);
    if (v === undefined) throw new Error(`internal: ${n.op} takes the tuple ${i.name} as an input; only tuple_get may`);
    return v;
  });
}

function evalNode(
  n: Node, values: Map<Node, NDArray>, tuples: Map<Node, NDArray[]>, feeds: ReadonlyMap<Node, NDArray> | undefined, ctx: EvalContext,
): NDArray {
  const fed = feeds?.get(n);
  if (fed !== undefined) return fed;
  if (n.op === 'variable') return n.cell!.value;
  let out: NDArray;
  if (n.op === 'tuple_get') {
    const items = tuples.get(n.inputs[0]!);
    const k = n.attrs['index'] as number;
    if (items === undefined || items[k] === undefined) throw new Error(`internal: tuple_get{index=${k}} of ${n.inputs[0]!.name}, which has no such item`);
    out = items[k]!;
  } else {
    try {
      out = getOp(n.op).impl(inputValues(n, values), n.attrs as never, ctx);
    } catch (e) {
      throw rethrow(e, n.op);
    }
  }
  checkAgainstType(n, n.type, out);
  return out;
}

function evalTuple(n: Node, values: Map<Node, NDArray>, ctx: EvalContext): NDArray[] {
  const def = getOp(n.op);
  if (def.implTuple === undefined) throw new Error(`internal: op ${n.op} has a tuple type but no implTuple`);
  let out: NDArray[];
  try {
    out = def.implTuple(inputValues(n, values), n.attrs as never, ctx);
  } catch (e) {
    throw rethrow(e, n.op);
  }
  const items = n.type.items!;
  if (out.length !== items.length) throw new Error(`internal: op ${n.op} produced ${out.length} items but its type has ${items.length}`);
  out.forEach((v, i) => checkAgainstType(n, items[i]!, v, ` (item ${i})`));
  return out;
}

/** The value must have the type's dtype and agree with every known static dim. */
export function checkAgainstType(n: Node, t: TensorType, v: NDArray, where = ''): void {
  const ok = v.dtype === t.dtype && v.shape.length === t.shape.length && t.shape.every((d, i) => d === null || d === v.shape[i]);
  if (!ok) {
    throw new Error(`internal: op ${n.op}${where} produced ${v.dtype} ${formatShape(v.shape)} but its type is ${t.dtype} ${formatShape(t.shape)}`);
  }
}
