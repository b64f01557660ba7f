// Graph utilities: a graph is its output nodes (and the leaves they reach); passes map Graph -> Graph.
import type { Node } from './node.js';

export interface Graph {
  readonly outputs: readonly Node[];
}

/** Every node reachable from `outputs`, each after its inputs (iterative DFS; deep graphs do not overflow). */
export function topoSort(outputs: readonly Node[]): Node[] {
  const order: Node[] = [];
  const state = new Map<Node, 1 | 2>(); // 1: on the stack, 2: emitted
  const stack: [Node, number][] = [];
  for (const out of outputs) {
    if (state.has(out)) continue;
    stack.push([out, 0]);
    state.set(out, 1);
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const [n, i] = top;
      if (i < n.inputs.length) {
        top[1] = i + 1;
        const c = n.inputs[i]!;
        if (!state.has(c)) {
          state.set(c, 1);
          stack.push([c, 0]);
        }
      } else {
        stack.pop();
        state.set(n, 2);
        order.push(n);
      }
    }
  }
  return order;
}

/** Leaves of a given op reachable from `outputs`, in topological order. */
export function leavesOf(outputs: readonly Node[], op: string): Node[] {
  return topoSort(outputs).filter((n) => n.op === op);
}

/** How many times each node is used as an input within the graph. */
export function useCounts(order: readonly Node[]): Map<Node, number> {
  const uses = new Map<Node, number>();
  for (const n of order) for (const i of n.inputs) uses.set(i, (uses.get(i) ?? 0) + 1);
  return uses;
}
