// The body of a `fused` node (made by the fusion pass): kept apart from the op record so that
// passes and codegen can import it without entering the registry's import cycle.
import type { Keyed } from './op.js';
import type { Node } from './node.js';
import { topoSort } from './graph.js';

/** How the fusion pass may group a node (each target's templates say, src/codegen/lower/templates.ts). */
export type FuseKind =
  | 'elementwise' // a scalar function of its inputs at the same index (broadcasting)
  | 'view' // index arithmetic on its input: transpose, reshape, index, slices...
  | 'reduction' // folds axes of its input
  | 'matmul' // a template kernel that takes an epilogue
  | 'opaque'; // anything else: a boundary (runs on its own, or as an extern)

/**
 * The inner graph of a fused node: `root` computed from `params` (placeholder leaves made by
 * the fusion pass, one per input of the fused node). Params are interned by position and type,
 * so two fused nodes with equal bodies share the same root node, and the key is its id.
 */
export class FusedBody implements Keyed {
  constructor(
    readonly params: readonly Node[],
    readonly root: Node,
  ) {}
  attrKey(): string {
    return `fused#${this.root.id}`;
  }
  /** The ops inside, in evaluation order (for debugprint: `fused{sub,exp,sum}`). */
  ops(): string[] {
    const ps = new Set(this.params);
    return topoSort([this.root])
      .filter((n) => !ps.has(n) && n.op !== 'constant')
      .map((n) => n.op);
  }
}
