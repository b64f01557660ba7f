// The local-rewrite engine shared by canonicalize, stabilize, specialize and constant folding:
// walk the graph bottom-up, rebuild each node on its rewritten inputs, then apply rules to it
// until none fires (bounded). Rebuilding goes through `apply`, so types are re-inferred and
// equal nodes merge (hash-consing).
import { apply } from '../ir/build.js';
import type { Graph } from '../ir/graph.js';
import { topoSort, useCounts } from '../ir/graph.js';
import { nodeIdMark, type Node } from '../ir/node.js';
import { inherit, inheritReplaced } from '../ir/provenance.js';
import { sameType } from '../ir/types.js';

/** A local rewrite: a replacement for `n`, or undefined when it does not apply. */
export interface Rewrite {
  readonly name: string;
  apply(n: Node): Node | undefined;
}

/** Replacements must keep the node's type exactly: same dtype, same static shape (nulls included), same items. */
export { sameType };

/** Rebuilds `n` on new inputs (the same node when nothing changed); the new node inherits `n`'s provenance. */
export function rebuild(n: Node, inputs: readonly Node[]): Node {
  if (inputs.length === n.inputs.length && inputs.every((x, i) => x === n.inputs[i])) return n;
  const m = apply(n.op, inputs, n.attrs);
  inherit(m, [n]);
  return m;
}

/** Rules fired on one node before the engine gives up on reaching a fixed point there. */
const MAX_REWRITES_PER_NODE = 32;

export interface RewriteStats {
  /** How often each rule fired. */
  readonly fired: Map<string, number>;
}

/**
 * Applies `rules` everywhere in `g` to a fixed point. A rule whose replacement changes the
 * node's type is ignored (the guard that keeps rules simple: `x * 1` with a broadcasting `1` stays).
 */
export function rewriteGraph(g: Graph, rules: readonly Rewrite[], stats?: RewriteStats): Graph {
  const done = new Map<Node, Node>();
  const passMark = nodeIdMark();
  const order = topoSort(g.outputs);
  let uses: Map<Node, number> | undefined;
  // New nodes made by rules are visited recursively; their inputs are already final, so depth stays small.
  const visit = (n: Node, budget: number): Node => {
    const hit = done.get(n);
    if (hit !== undefined) return hit;
    const ins = n.inputs.map((i) => done.get(i) ?? visit(i, budget));
    let cur = rebuild(n, ins);
    if (cur !== n) {
      const again = done.get(cur);
      if (again !== undefined) { done.set(n, again); return again; }
    }
    for (const r of rules) {
      let out: Node | undefined;
      const mark = nodeIdMark();
      try {
        out = r.apply(cur);
      } catch {
        out = undefined; // a rule that cannot build its replacement (a type error) does not apply
      }
      if (out === undefined || out === cur || !sameType(out.type, cur.type)) continue;
      if (stats !== undefined) stats.fired.set(r.name, (stats.fired.get(r.name) ?? 0) + 1);
      // The replacement (and what the rule built for it) inherits the provenance of what it replaces.
      inheritReplaced(cur, out, mark, (uses ??= useCounts(order)), cur === n ? [] : [n], passMark);
      if (budget <= 0) break;
      const fin = visit(out, budget - 1);
      done.set(n, fin);
      done.set(cur, fin);
      return fin;
    }
    done.set(n, cur);
    if (cur !== n) done.set(cur, cur);
    return cur;
  };
  for (const n of order) visit(n, MAX_REWRITES_PER_NODE);
  return { outputs: g.outputs.map((o) => done.get(o)!) };
}
