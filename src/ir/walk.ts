// One walk over a graph for the evaluators that run it node by node (the reference interpreter,
// the tensorflow backend's executor): topological order, tuple-valued nodes (a Scan) kept apart
// with `tuple_get` reading one item out, a tuple given where a tensor is needed refused, each
// op's errors rethrown with its name and ending with the user's call that built the node
// (src/ir/provenance.ts), each result checked against the node's type. What differs
// between evaluators is the value type and how a node is computed (`Evaluation`).
import { rethrow } from './build.js';
import { withBuiltBy } from './provenance.js';
import type { Node } from './node.js';
import { isOp } from './registry.js';
import type { TensorType } from './types.js';

export interface Evaluation<V> {
  /** A node's value when it needs no computing (fed, a variable), else undefined. */
  given(n: Node): V | undefined;
  /** The value of a tensor-valued node from its inputs' values. */
  compute(n: Node, inputs: V[]): V;
  /** The items of a tuple-valued node. */
  computeTuple(n: Node, inputs: V[]): V[];
  /** Throws when `v` does not fit `t` (`where` names a tuple item). */
  check(n: Node, t: TensorType, v: V, where: string): void;
}

/** Evaluates `order` (topologically sorted, ending in `targets`) into `values`; returns the targets' values. */
export function walkGraph<V>(
  order: readonly Node[],
  targets: readonly Node[],
  values: Map<Node, V>,
  ev: Evaluation<V>,
): V[] {
  const tuples = new Map<Node, V[]>();
  const inputsOf = (n: Node): V[] =>
    n.inputs.map((i) => {
      const v = values.get(i);
      if (v === undefined)
        throw new Error(`internal: ${n.op} takes the tuple ${i.name} as an input; only tuple_get may`);
      return v;
    });
  for (const n of order) {
    if (values.has(n) || tuples.has(n)) continue;
    const items = n.type.items;
    if (items !== undefined) {
      let out: V[];
      try {
        out = ev.computeTuple(n, inputsOf(n));
      } catch (e) {
        throw withBuiltBy(rethrow(e, n.op), n.provenance);
      }
      if (out.length !== items.length)
        throw new Error(`internal: op ${n.op} produced ${out.length} items but its type has ${items.length}`);
      out.forEach((v, i) => ev.check(n, items[i]!, v, ` (item ${i})`));
      tuples.set(n, out);
      continue;
    }
    let out = ev.given(n);
    if (out === undefined) {
      if (isOp(n, 'tuple_get')) {
        const k = n.attrs.index;
        const got = tuples.get(n.inputs[0]!)?.[k];
        if (got === undefined)
          throw new Error(`internal: tuple_get{index=${k}} of ${n.inputs[0]!.name}, which has no such item`);
        out = got;
      } else {
        try {
          out = ev.compute(n, inputsOf(n));
        } catch (e) {
          throw withBuiltBy(rethrow(e, n.op), n.provenance);
        }
      }
      ev.check(n, n.type, out, '');
    }
    values.set(n, out);
  }
  return targets.map((t) => {
    const v = values.get(t);
    if (v === undefined) throw new Error(`internal: output ${t.name} is a tuple; extract its items with tuple_get`);
    return v;
  });
}
