// Rematerialisation (JAX's checkpoint / remat, Theano's scan_checkpoints for a plain subgraph): the
// nodes of a checkpointed region are not kept for the backward pass; the gradient walk recomputes
// them from the region's inputs, and the gradient rules read the recomputed nodes. The recomputed
// inputs pass through a data dependency on the cotangent of the region's first output the walk
// reaches (`where(s > s, 0, x)`, which is x exactly, NaN and infinity included), so the copies
// are distinct nodes that the merge pass cannot fold back into the forward ones, and that a
// schedule following data dependencies computes only once the backward pass reaches the region
// (JAX's optimization barrier on the cotangent, done with ordinary ops).
import { apply } from '../ir/build.js';
import { topoSort } from '../ir/graph.js';
import type { Node } from '../ir/node.js';
import { reduce, scalar } from './ops.js';

const FN = 'autodiff.checkpoint';

/** A checkpointed region: its inputs, and its nodes (those between the inputs and its outputs). */
export interface Region {
  readonly inputs: readonly Node[];
  readonly nodes: ReadonlySet<Node>;
  /** The region's nodes in topological order. */
  readonly order: readonly Node[];
}

const regionOf = new WeakMap<Node, Region>();

/** Marks the nodes that depend on `inputs` on the way to `outputs` as one region. */
export function markRegion(inputs: readonly Node[], outputs: readonly Node[]): void {
  const own = new Set(inputs);
  const dependent = new Set<Node>();
  const order: Node[] = [];
  for (const n of topoSort(outputs)) {
    if (own.has(n) || n.inputs.length === 0 || !n.inputs.some((i) => own.has(i) || dependent.has(i))) continue;
    dependent.add(n);
    order.push(n);
  }
  const region: Region = { inputs: [...inputs], nodes: dependent, order };
  for (const n of order) if (!regionOf.has(n)) regionOf.set(n, region);
}

/** x exactly, but computed after `dep` (a data dependency the passes keep). */
function after(x: Node, dep: Node): Node {
  const s =
    dep.ndim === 0
      ? dep
      : reduce(
          'sum',
          dep,
          dep.shape.map((_, i) => i),
          false,
        );
  return apply('where', [apply('greater', [s, s], {}, FN), scalar(0, x.dtype), x], {}, FN);
}

/**
 * Per backward walk: the recomputed twin of each node of a checkpointed region, built when the
 * walk first reaches the region (`g`, the cotangent of the node reached, orders the recomputation).
 */
export class Remat {
  private readonly twins = new Map<Region, Map<Node, Node>>();

  /** The node a gradient rule should read for `n`: its recomputed twin inside a region, else n. */
  twin(n: Node, g: Node | undefined): Node {
    const region = regionOf.get(n);
    if (region === undefined || g === undefined) return n;
    let map = this.twins.get(region);
    if (map === undefined) {
      map = new Map(region.inputs.map((x) => [x, after(x, g)]));
      for (const m of region.order)
        map.set(
          m,
          apply(
            m.op,
            m.inputs.map((i) => map!.get(i) ?? i),
            m.attrs,
            FN,
          ),
        );
      this.twins.set(region, map);
    }
    return map.get(n) ?? n;
  }
}
