// merge: Theano's MergeOptimizer. Hash-consing already merges structurally equal nodes as they
// are built (and constants by value), so what is left is operand order: `add(a, b)` and
// `add(b, a)` become one node once commutative operands are put in a canonical order
// (non-constants first, then by creation id).
import type { Node } from '../ir/node.js';
import { apply } from '../ir/build.js';
import { definePass } from './pass.js';
import { COMMUTATIVE } from './pattern.js';
import { rewrite, rewriteGraph } from './rewrite.js';

function rank(n: Node): number {
  return (n.op === 'constant' ? 1e15 : 0) + n.id;
}

export const commuteRule = rewrite('commute', COMMUTATIVE, (n) => {
  if (n.inputs.length !== 2) return undefined;
  const [a, b] = n.inputs as [Node, Node];
  return rank(a) > rank(b) ? apply(n.op, [b, a], n.attrs) : undefined;
});

export const mergePass = definePass('merge', 'merge nodes that differ only in the order of commutative operands', (g) =>
  rewriteGraph(g, [commuteRule]),
);
