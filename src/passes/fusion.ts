// Fusion: groups of elementwise ops, views, reductions and a matmul become one `fused` node
// each, which codegen turns into one kernel (one loop nest, or one matmul with its epilogue).
// What a target can fuse is its business, so the pass asks it (`classify`): passes import
// only ir, and an op the target does not classify stays opaque (a kernel of its own).
//
// Grouping is greedy from the outputs backwards, as Theano's elemwise fusion: a producer joins
// its consumer's group when every use of it is inside that group, so nothing is computed
// twice. Views are index arithmetic, so they join every group that reads them. A producer
// that its consumer broadcasts joins only when the broadcast dims are trailing (the loop that
// computes it once per outer index can then be hoisted out of the inner loops by codegen).
import { apply } from '../ir/build.js';
import { intern } from '../ir/node.js';
import { FusedBody } from '../ir/fused.js';
import type { Graph } from '../ir/graph.js';
import { topoSort } from '../ir/graph.js';
import type { Node } from '../ir/node.js';
import { staticSize, tensorType, type StaticShape } from '../ir/types.js';
import { definePass, type Pass } from './pass.js';
import { rebuild } from './rewrite.js';
import { inherit } from '../ir/provenance.js';

import type { FuseKind } from '../ir/fused.js';
import { isOp } from '../ir/registry.js';

export type { FuseKind };

export interface FusionTarget {
  classify(n: Node): FuseKind;
  /** Inputs an op reads only for their shape (fill_like, shape_of): never loaded, never fused. */
  shapeOnly?(n: Node, input: number): boolean;
  /** Whether elementwise producers of a matmul's operands may be computed while packing them (default yes). */
  matmulPrologue?(n: Node): boolean;
  /**
   * Reductions the target runs best as kernels of their own (the cpu's pooling tier): nothing is
   * fused into them and they join no consumer's group (their elementwise producers then go to the
   * producer's own kernel: a convolution's epilogue).
   */
  alone?(n: Node): boolean;
}

/** Where a group member is evaluated: the output loop space, inside one reduction, or while packing a matmul operand. */
type Space = 'out' | 'dotin' | Node;

interface Group {
  readonly root: Node;
  readonly members: Set<Node>;
  /** Members that other groups may also hold (views, scalar constants). */
  readonly shared: Set<Node>;
  readonly space: Map<Node, Space>;
  hasMatmul: boolean;
  hasReduction: boolean;
}

/** Right-aligned: does `inner` broadcast into `outer` only along trailing dims (or not at all)? */
function expandsOnlyTrailing(inner: StaticShape, outer: StaticShape): boolean {
  const off = outer.length - inner.length;
  if (off < 0) return false;
  let expanded = false;
  for (let k = 0; k < outer.length; k++) {
    const d = k < off ? 1 : inner[k - off]!;
    const isExp = d === 1 && outer[k] !== 1;
    if (isExp) expanded = true;
    else if (expanded) return false; // a kept dim after an expanded one
  }
  return true;
}

const COMPARISONS: ReadonlySet<string> = new Set([
  'less',
  'less_equal',
  'greater',
  'greater_equal',
  'equal',
  'not_equal',
]);

const isScalarConst = (n: Node) => n.op === 'constant' && staticSize(n.shape) === 1 && n.ndim === 0;

export function fuseGraph(g: Graph, target: FusionTarget): Graph {
  const order = topoSort(g.outputs);
  const index = new Map<Node, number>();
  order.forEach((n, i) => index.set(n, i));
  // Shape-only reads are not uses: the node stays in the graph for its shape, and codegen, which
  // knows every shape once a function is specialised, computes only values that are read.
  const consumers = new Map<Node, Set<Node>>();
  for (const n of order) {
    n.inputs.forEach((i, k) => {
      if (target.shapeOnly?.(n, k) === true) return;
      let s = consumers.get(i);
      if (s === undefined) consumers.set(i, (s = new Set()));
      s.add(n);
    });
  }
  const outputs = new Set(g.outputs);
  const owner = new Map<Node, Group>(); // exclusive members only
  const groups: Group[] = [];

  const exclusiveIn = (p: Node, grp: Group) =>
    !outputs.has(p) && [...(consumers.get(p) ?? [])].every((c) => grp.members.has(c) && !grp.shared.has(c));

  /** The space a member's inputs are evaluated in. */
  const childSpace = (c: Node, grp: Group): Space => {
    const k = target.classify(c);
    return k === 'reduction' ? c : k === 'matmul' ? 'dotin' : grp.space.get(c)!;
  };
  const spaceFor = (p: Node, grp: Group): Space | undefined => {
    let sp: Space | undefined;
    for (const c of consumers.get(p) ?? []) {
      if (!grp.members.has(c)) continue;
      const s = childSpace(c, grp);
      if (sp !== undefined && sp !== s) return undefined;
      sp = s;
    }
    return sp;
  };

  /**
   * A comparison of one tensor with constants (relu's mask x <= 0, read by the forward select and
   * by its gradient's): computed again in each kernel that reads it, from the tensor those kernels
   * read anyway or nearly so, instead of stored by a kernel of its own (as views are).
   */
  const recomputable = (p: Node): boolean =>
    COMPARISONS.has(p.op) && !outputs.has(p) && p.inputs.filter((i) => !isScalarConst(i)).length === 1;

  const tryAbsorb = (p: Node, grp: Group): boolean => {
    if (grp.members.has(p)) return false;
    if (isScalarConst(p)) {
      grp.members.add(p);
      grp.shared.add(p);
      grp.space.set(p, 'out');
      return true;
    }
    if (p.inputs.length === 0 || owner.has(p)) return false;
    const sp = spaceFor(p, grp);
    if (sp === undefined) return false;
    const users = [...(consumers.get(p) ?? [])].filter((c) => grp.members.has(c));
    const kind = target.classify(p);
    // Only elementwise users broadcast; views and reductions see p at its own shape.
    const fits = () =>
      users.every((c) => target.classify(c) !== 'elementwise' || expandsOnlyTrailing(p.shape, c.shape));
    const excl = exclusiveIn(p, grp);
    switch (kind) {
      case 'view':
        break;
      case 'elementwise':
        if (!(excl || recomputable(p)) || (sp !== 'dotin' && !fits())) return false;
        if (typeof sp !== 'string' && target.alone?.(sp) === true) return false;
        if (
          sp === 'dotin' &&
          !users.every((c) => target.classify(c) !== 'matmul' || target.matmulPrologue?.(c) !== false)
        )
          return false;
        break;
      case 'reduction':
        // Under a view (tile, a broadcast) a reduction would be recomputed per element it is read at.
        if (
          target.alone?.(p) === true ||
          !excl ||
          sp !== 'out' ||
          grp.hasMatmul ||
          !fits() ||
          !users.every((c) => target.classify(c) === 'elementwise')
        )
          return false;
        grp.hasReduction = true;
        break;
      case 'matmul': {
        if (!excl || sp !== 'out' || grp.hasMatmul || grp.hasReduction) return false;
        // The epilogue is evaluated at the matmul's own output index: everything in the group so far
        // (the path from the matmul to the root, and its side inputs) must be elementwise of its
        // shape, or a view of a side input (a bias reshaped to broadcast: index arithmetic at that
        // index too); a view on the path from the matmul would read it at other indices.
        const same = (c: Node) => c.ndim === p.ndim && c.shape.every((d, i) => d === p.shape[i]);
        const onPath = new Map<Node, boolean>();
        const reaches = (m: Node): boolean => {
          let r = onPath.get(m);
          if (r === undefined) {
            r = m.inputs.some((i) => i === p || (grp.members.has(i) && reaches(i)));
            onPath.set(m, r);
          }
          return r;
        };
        const ok = (m: Node) =>
          isScalarConst(m) ||
          (target.classify(m) === 'elementwise' && same(m)) ||
          (target.classify(m) === 'view' && !reaches(m));
        if (![...grp.members].every(ok)) return false;
        grp.hasMatmul = true;
        break;
      }
      case 'opaque':
        return false;
    }
    grp.members.add(p);
    grp.space.set(p, sp);
    if (excl) owner.set(p, grp);
    else grp.shared.add(p);
    return true;
  };

  for (let i = order.length - 1; i >= 0; i--) {
    const root = order[i]!;
    if (owner.has(root) || root.inputs.length === 0) continue;
    const kind = target.classify(root);
    if (kind === 'opaque') continue;
    const grp: Group = {
      root,
      members: new Set([root]),
      shared: new Set(),
      space: new Map([[root, 'out']]),
      hasMatmul: kind === 'matmul',
      hasReduction: kind === 'reduction',
    };
    owner.set(root, grp);
    // Candidates in decreasing topological order, so all of a candidate's consumers are decided first.
    const frontier: Node[] = [];
    const queued = new Set<Node>();
    const push = (n: Node) => {
      n.inputs.forEach((p, k) => {
        if (target.shapeOnly?.(n, k) === true || queued.has(p)) return;
        queued.add(p);
        frontier.push(p);
      });
    };
    push(root);
    while (frontier.length > 0) {
      let best = 0;
      for (let k = 1; k < frontier.length; k++) if (index.get(frontier[k]!)! > index.get(frontier[best]!)!) best = k;
      const p = frontier.splice(best, 1)[0]!;
      if (tryAbsorb(p, grp) && p.inputs.length > 0) push(p);
    }
    groups.push(grp);
  }

  // Rebuild: a group with more than its root becomes a fused node; everything else is rebuilt as is.
  const byRoot = new Map<Node, Group>();
  for (const grp of groups) byRoot.set(grp.root, grp);
  const built = new Map<Node, Node>();
  const build = (n: Node): Node => {
    const hit = built.get(n);
    if (hit !== undefined) return hit;
    const grp = byRoot.get(n);
    let out: Node;
    if (grp !== undefined && [...grp.members].some((m) => m !== n && !isScalarConst(m))) out = buildFused(grp, build);
    else
      out = rebuild(
        n,
        n.inputs.map((i) => build(i)),
      );
    built.set(n, out);
    return out;
  };
  // Iterative warm-up in topological order keeps the recursion in `build` shallow.
  for (const n of order) build(n);
  return { outputs: g.outputs.map((o) => built.get(o)!) };
}

/** The fused node of a group: params for the values it reads from outside, the members rebuilt on them. */
function buildFused(grp: Group, outer: (n: Node) => Node): Node {
  const sources: Node[] = [];
  const inner = new Map<Node, Node>();
  const visit = (n: Node): Node => {
    const hit = inner.get(n);
    if (hit !== undefined) return hit;
    let out: Node;
    if (grp.members.has(n)) {
      out = n.inputs.length === 0 ? n : apply(n.op, n.inputs.map(visit), n.attrs);
      inherit(out, [n]);
    } else {
      const k = sources.length;
      sources.push(n);
      // Interned (not fresh like user placeholders): equal bodies then share one root node.
      out = intern(
        'placeholder',
        [],
        { uid: -(k + 1), name: `p${k}`, dtype: n.dtype, shape: n.shape, sparse: false },
        tensorType(n.dtype, n.shape),
      );
    }
    inner.set(n, out);
    return out;
  };
  const root = visit(grp.root);
  const body = new FusedBody(
    sources.map((s) => inner.get(s)!),
    root,
  );
  const fused = apply('fused', sources.map(outer), { body });
  // The kernel carries the records of all its members (scalar constants shared between groups excepted).
  inherit(
    fused,
    [...grp.members].filter((m) => !grp.shared.has(m)),
  );
  return fused;
}

/** Debugprint label of a fused node: `fused{sub,exp,sum}`. */
export function fusedLabel(n: Node): string | undefined {
  if (!isOp(n, 'fused')) return undefined;
  return `fused{${n.attrs.body.ops().join(',')}}`;
}

export function fusionPass(target: FusionTarget): Pass {
  return definePass('fusion', 'elementwise ops, views, reductions and matmul epilogues into fused kernels', (g) =>
    fuseGraph(g, target),
  );
}
