// The local-rewrite engine shared by canonicalize, stabilize, specialize, constant folding and
// user passes: walk the graph bottom-up, rebuild each node on its rewritten inputs, then apply
// the rules indexed under its op until none fires (bounded). Rebuilding goes through `apply`, so
// types are re-inferred and equal nodes merge (hash-consing). A rule names the ops it looks at
// (`on`), as PyTensor's node_rewriter `tracks` and tinygrad's PatternMatcher index by op, so a
// rule body never tests the op itself.
import { apply, isInferenceFailure } from '../ir/build.js';
import type { Graph } from '../ir/graph.js';
import { topoSort, useCounts } from '../ir/graph.js';
import { nodeIdMark, type Node } from '../ir/node.js';
import { inherit, inheritReplaced } from '../ir/provenance.js';
import type { OpName, OpNode } from '../ir/registry.js';
import { sameType, typeToString } from '../ir/types.js';
import { activeChecker } from './check.js';
import { definePass, type Pass } from './pass.js';

/** A local rewrite: a replacement for a node of one of its ops, or undefined when it does not apply. */
export interface Rewrite {
  readonly name: string;
  /** The ops whose nodes the engine offers it; '*' for every node (constant folding, user passes). */
  readonly on: readonly OpName[] | '*';
  apply(n: Node): Node | undefined;
}

/** A rule over the nodes of `on`, each given with its attrs typed by its op. */
export function rewrite<K extends OpName>(
  name: string,
  on: readonly K[],
  fn: (n: OpNode<K>) => Node | undefined,
): Rewrite {
  return { name, on, apply: (n) => fn(n as OpNode<K>) };
}

/** A rule threw something other than an inference failure: a bug in the rule, reported with its name and node. */
export class RewriteError extends Error {
  constructor(
    readonly rule: string,
    readonly node: Node,
    override readonly cause: unknown,
  ) {
    super(
      `rewrite ${JSON.stringify(rule)} threw on node ${node.name} (${node.op}, ${typeToString(node.type)}): ${cause instanceof Error ? cause.message : String(cause)}`,
    );
  }
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

/** Rules by the op they look at, in the order given (computed per op on first use). */
class RuleIndex {
  private readonly byOp = new Map<string, readonly Rewrite[]>();
  constructor(private readonly rules: readonly Rewrite[]) {}

  for(op: string): readonly Rewrite[] {
    let r = this.byOp.get(op);
    if (r === undefined) {
      r = this.rules.filter((x) => x.on === '*' || (x.on as readonly string[]).includes(op));
      this.byOp.set(op, r);
    }
    return r;
  }
}

/**
 * The replacement step, in one place: the first rule indexed under `cur`'s op whose replacement
 * keeps `cur`'s type. A replacement that cannot be built (an inference failure: the rule's
 * operands do not fit here) or that changes the type means the rule does not apply (the guard
 * that keeps rules simple: `x * 1` with a broadcasting `1` stays); anything else a rule throws
 * is a bug, reported as a RewriteError.
 */
function replacement(cur: Node, index: RuleIndex, stats: RewriteStats | undefined): Node | undefined {
  for (const r of index.for(cur.op)) {
    let out: Node | undefined;
    try {
      out = r.apply(cur);
    } catch (e) {
      if (isInferenceFailure(e)) continue;
      throw e instanceof RewriteError ? e : new RewriteError(r.name, cur, e);
    }
    if (out === undefined || out === cur || !sameType(out.type, cur.type)) continue;
    if (stats !== undefined) stats.fired.set(r.name, (stats.fired.get(r.name) ?? 0) + 1);
    activeChecker()?.replaced(r.name, cur, out); // checking mode (src/passes/check.ts)
    return out;
  }
  return undefined;
}

/** Applies `rules` everywhere in `g` to a fixed point. */
export function rewriteGraph(g: Graph, rules: readonly Rewrite[], stats?: RewriteStats): Graph {
  const index = new RuleIndex(rules);
  const done = new Map<Node, Node>();
  const passMark = nodeIdMark();
  const order = topoSort(g.outputs);
  let uses: Map<Node, number> | undefined;
  // New nodes made by rules are visited recursively; their inputs are already final, so depth stays small.
  const visit = (n: Node, budget: number): Node => {
    const hit = done.get(n);
    if (hit !== undefined) return hit;
    const ins = n.inputs.map((i) => done.get(i) ?? visit(i, budget));
    const cur = rebuild(n, ins);
    if (cur !== n) {
      const again = done.get(cur);
      if (again !== undefined) {
        done.set(n, again);
        return again;
      }
    }
    const mark = nodeIdMark();
    const out = budget > 0 ? replacement(cur, index, stats) : undefined;
    if (out !== undefined) {
      // The replacement (and what the rule built for it) inherits the provenance of what it
      // replaces, for every rule alike (src/ir/provenance.ts).
      inheritReplaced(cur, out, mark, (uses ??= useCounts(order)), cur === n ? [] : [n], passMark);
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

/** A pass that applies `rules` over the graph to a fixed point (rewriteGraph). */
export function rewritePass(name: string, doc: string, rules: readonly Rewrite[]): Pass {
  return definePass(name, doc, (g) => rewriteGraph(g, rules));
}
