// Extraction: the cheapest e-node of every e-class under the cost model, by egg's bottom-up
// fixed point (a class's cost is its cheapest e-node's own cost plus its children's), then the
// IR graph of those choices. Tree costs count a shared child once per use, so the graph built is
// rated again as a DAG (./cost.ts graphCost) by whoever compares it.
import { apply } from '../../ir/build.js';
import type { Node } from '../../ir/node.js';
import { inherit } from '../../ir/provenance.js';
import { sameType } from '../../ir/types.js';
import type { CostModel } from './cost.js';
import type { ClassId, EGraph, ENode } from './egraph.js';

interface Best {
  readonly cost: number;
  readonly node: ENode;
}

/** The cheapest e-node of each class (tree cost). */
export function bestNodes(eg: EGraph, model: CostModel): Map<ClassId, Best> {
  const own = new Map<ENode, number>();
  const ownCost = (e: ENode): number => {
    let c = own.get(e);
    if (c === undefined) {
      c = model.node(eg.materialize(e));
      own.set(e, c);
    }
    return c;
  };
  const best = new Map<ClassId, Best>();
  for (let changed = true, rounds = 0; changed && rounds <= eg.classes.size + 1; rounds++) {
    changed = false;
    for (const cls of eg.classes.values()) {
      for (const e of cls.nodes) {
        let cost = ownCost(e);
        for (const c of e.children) {
          const b = best.get(eg.find(c));
          if (b === undefined) {
            cost = Infinity;
            break;
          }
          cost += b.cost;
        }
        const was = best.get(cls.id);
        if (cost < (was?.cost ?? Infinity)) {
          best.set(cls.id, { cost, node: e });
          changed = true;
        }
      }
    }
  }
  return best;
}

/** The IR graph of the chosen e-nodes for `roots`; nodes built inherit the provenance of the input nodes of their class. */
export function extract(eg: EGraph, roots: readonly ClassId[], model: CostModel): Node[] {
  const best = bestNodes(eg, model);
  const built = new Map<ClassId, Node>();
  // Iterative post-order (graphs can be deeper than the call stack); a class met again while its
  // children are being built means the choices form a cycle, which extraction must never give.
  const make = (c: ClassId): Node => {
    const b = best.get(c)!;
    const cls = eg.get(c);
    let n: Node;
    if (b.node.leaf !== undefined) n = b.node.leaf;
    else {
      n = apply(
        b.node.op,
        b.node.children.map((k) => built.get(eg.find(k))!),
        b.node.attrs,
      );
      inherit(n, cls.origins);
    }
    if (!sameType(n.type, cls.type))
      throw new Error(`internal: extraction built ${n.op} of another type than its e-class`);
    return n;
  };
  const build = (root: ClassId): Node => {
    const onPath = new Set<ClassId>();
    const stack: [ClassId, boolean][] = [[eg.find(root), false]];
    while (stack.length > 0) {
      const [c, expanded] = stack.pop()!;
      if (built.has(c)) continue;
      if (expanded) {
        onPath.delete(c);
        built.set(c, make(c));
        continue;
      }
      const b = best.get(c);
      if (b === undefined) throw new Error(`internal: e-class ${c} has no finite-cost e-node`);
      if (onPath.has(c)) throw new Error(`internal: extraction chose a cycle through e-class ${c}`);
      onPath.add(c);
      stack.push([c, true]);
      for (const k of b.node.children) {
        const kc = eg.find(k);
        if (built.has(kc)) continue;
        if (onPath.has(kc)) throw new Error(`internal: extraction chose a cycle through e-class ${kc}`);
        stack.push([kc, false]);
      }
    }
    return built.get(eg.find(root))!;
  };
  return roots.map(build);
}
