// An e-graph over the IR (egg, Willsey et al., POPL 2021): e-classes of equal values, each a set
// of e-nodes (an op, its attrs and child e-classes), with hash-consing of e-nodes, a union-find
// over classes and congruence closure restored by egg's deferred `rebuild` (unions only queue
// work; rebuild re-canonicalizes the parents of merged classes and merges those that became
// congruent). Every e-node is also built once as an IR node over its children's representatives
// (`materialize`): that runs the op's type inference, so a term that cannot exist (shapes or
// dtypes that do not fit) never enters the graph, and the built-in rewrites, which take IR nodes,
// can be offered e-nodes unchanged.
import { apply, isInferenceFailure } from '../../ir/build.js';
import { attrsKey, type Node } from '../../ir/node.js';
import type { Attrs } from '../../ir/op.js';
import { sameType, type TensorType } from '../../ir/types.js';
import { uniformValue } from '../pattern.js';

export type ClassId = number;

export interface ENode {
  readonly op: string;
  readonly attrs: Attrs;
  readonly children: readonly ClassId[];
  /** Nodes without inputs (placeholders, variables, constants, seeded draws) are kept as they are. */
  readonly leaf?: Node;
}

export interface EClass {
  readonly id: ClassId;
  nodes: ENode[];
  /** E-nodes that have this class as a child, with the class they belong to (as last canonicalized). */
  parents: { node: ENode; cls: ClassId }[];
  readonly type: TensorType;
  /** An IR node of this class's value: what rules and extraction build children on. */
  rep: Node;
  /** The value every element has, when the class holds a constant of one repeated value. */
  konst: number | undefined;
  /** The input graph's nodes in this class (their provenance goes to what extraction builds). */
  origins: Node[];
}

export class EGraph {
  private readonly parent: ClassId[] = [];
  readonly classes = new Map<ClassId, EClass>();
  private readonly memo = new Map<string, ClassId>();
  private readonly built = new Map<string, Node>();
  private readonly fromNode = new Map<Node, ClassId>();
  private pending: ClassId[] = [];
  /** Unions made since construction (a rule that only finds what is known adds none). */
  unions = 0;

  find(id: ClassId): ClassId {
    let r = id;
    while (this.parent[r] !== r) r = this.parent[r]!;
    // path compression
    let c = id;
    while (this.parent[c] !== r) {
      const n = this.parent[c]!;
      this.parent[c] = r;
      c = n;
    }
    return r;
  }

  /** The class of `id` (after find). */
  get(id: ClassId): EClass {
    const c = this.classes.get(this.parent[id] === id ? id : this.find(id));
    if (c === undefined) throw new Error(`internal: e-class ${id} does not exist`);
    return c;
  }

  /** Distinct e-nodes (hash-cons entries). */
  get size(): number {
    return this.memo.size;
  }

  canonical(e: ENode): ENode {
    return e.children.every((c) => this.find(c) === c) ? e : { ...e, children: e.children.map((c) => this.find(c)) };
  }

  key(e: ENode): string {
    return e.leaf !== undefined
      ? `#${e.leaf.key}`
      : `${e.op}${attrsKey(e.attrs)}(${e.children.map((c) => this.find(c)).join(',')})`;
  }

  /** The IR node of an e-node over its children's representatives (built once per canonical form). */
  materialize(e: ENode): Node {
    if (e.leaf !== undefined) return e.leaf;
    const k = this.key(e);
    let n = this.built.get(k);
    if (n === undefined) {
      n = apply(
        e.op,
        e.children.map((c) => this.get(c).rep),
        e.attrs,
      );
      this.built.set(k, n);
    }
    return n;
  }

  /** Adds an IR graph (every node reachable from `n`), returning the class of `n`. */
  addNode(n: Node, origin = false): ClassId {
    const hit = this.fromNode.get(n);
    if (hit !== undefined) return this.find(hit);
    // Iterative post-order: IR graphs can be deeper than the call stack.
    const stack: [Node, boolean][] = [[n, false]];
    while (stack.length > 0) {
      const [m, expanded] = stack.pop()!;
      if (this.fromNode.has(m)) continue;
      if (!expanded) {
        stack.push([m, true]);
        for (const i of m.inputs) if (!this.fromNode.has(i)) stack.push([i, false]);
        continue;
      }
      const id =
        m.inputs.length === 0
          ? this.insert({ op: m.op, attrs: m.attrs, children: [], leaf: m }, m)
          : this.insert(
              { op: m.op, attrs: m.attrs, children: m.inputs.map((i) => this.find(this.fromNode.get(i)!)) },
              m,
            );
      this.fromNode.set(m, id);
      if (origin) this.get(id).origins.push(m);
    }
    return this.find(this.fromNode.get(n)!);
  }

  /**
   * Adds the term op(children) with `attrs`; undefined when it cannot be built (its operands'
   * types do not fit the op). Any other error building it is a bug and is thrown.
   */
  addTerm(op: string, attrs: Attrs, children: readonly ClassId[]): ClassId | undefined {
    const e: ENode = { op, attrs, children: children.map((c) => this.find(c)) };
    const hit = this.memo.get(this.key(e));
    if (hit !== undefined) return this.find(hit);
    let n: Node;
    try {
      n = this.materialize(e);
    } catch (err) {
      if (isInferenceFailure(err)) return undefined;
      throw err;
    }
    return this.insert(e, n);
  }

  /** The class of an e-node, made when it is new; `n` is its IR node. */
  private insert(e: ENode, n: Node): ClassId {
    const k = this.key(e);
    const hit = this.memo.get(k);
    if (hit !== undefined) return this.find(hit);
    const id = this.parent.length;
    this.parent.push(id);
    const ce = this.canonical(e);
    this.classes.set(id, { id, nodes: [ce], parents: [], type: n.type, rep: n, konst: uniformValue(n), origins: [] });
    if (e.leaf === undefined) this.built.set(k, n);
    for (const c of ce.children) this.get(c).parents.push({ node: ce, cls: id });
    this.memo.set(k, id);
    return id;
  }

  /**
   * Records that `a` and `b` are equal; false when they already were, or when their types differ
   * (a rewrite must keep the exact type, as the greedy engine requires). Congruence is restored by rebuild().
   */
  union(a: ClassId, b: ClassId): boolean {
    let ra = this.find(a);
    let rb = this.find(b);
    if (ra === rb) return false;
    const A = this.classes.get(ra)!;
    const B = this.classes.get(rb)!;
    if (!sameType(A.type, B.type)) return false;
    // The older class (the input graph's, usually) stays the root and keeps its representative.
    if (rb < ra) [ra, rb] = [rb, ra];
    const R = this.classes.get(ra)!;
    const O = this.classes.get(rb)!;
    this.parent[rb] = ra;
    R.nodes.push(...O.nodes);
    R.parents.push(...O.parents);
    R.origins.push(...O.origins);
    R.konst ??= O.konst;
    this.classes.delete(rb);
    this.pending.push(ra);
    this.unions++;
    return true;
  }

  /** egg's rebuild: re-canonicalize the parents of merged classes until congruence holds again. */
  rebuild(): void {
    const touched = new Set<ClassId>();
    while (this.pending.length > 0) {
      const todo = new Set(this.pending.map((c) => this.find(c)));
      this.pending = [];
      for (const c of todo) {
        touched.add(c);
        this.repair(c);
      }
    }
    // Merged classes hold both sides' e-nodes: each once, children canonical. (Other classes'
    // e-nodes may name merged children by an old id; find() reads through that.)
    for (const c of new Set([...touched].map((t) => this.find(t)))) this.dedupe(this.classes.get(c)!);
  }

  private repair(id: ClassId): void {
    const cls = this.classes.get(this.find(id));
    if (cls === undefined) return;
    const seen = new Map<string, { node: ENode; cls: ClassId }>();
    for (const p of cls.parents) {
      const oldKey = `${p.node.op}${attrsKey(p.node.attrs)}(${p.node.children.join(',')})`;
      if (this.memo.get(oldKey) !== undefined && oldKey !== this.key(p.node)) this.memo.delete(oldKey);
      const ce = this.canonical(p.node);
      const k = this.key(ce);
      const other = seen.get(k);
      if (other !== undefined) this.union(other.cls, p.cls);
      const existing = this.memo.get(k);
      if (existing !== undefined && this.find(existing) !== this.find(p.cls)) this.union(existing, p.cls);
      this.memo.set(k, this.find(p.cls));
      seen.set(k, { node: ce, cls: this.find(p.cls) });
    }
    // When a union above merged this class itself, its root holds both parent lists and is
    // queued for repair: leave them for that repair.
    if (this.classes.get(this.find(id)) === cls) cls.parents = [...seen.values()];
  }

  /** Canonical children in a class's e-nodes, each e-node once. */
  private dedupe(c: EClass): void {
    const byKey = new Map<string, ENode>();
    for (const e of c.nodes) {
      const ce = this.canonical(e);
      const k = this.key(ce);
      if (!byKey.has(k)) byKey.set(k, ce);
    }
    c.nodes = [...byKey.values()];
  }

  /** The class the hash-cons table gives an e-node (after rebuild: the class of every congruent e-node). */
  lookup(e: ENode): ClassId | undefined {
    const c = this.memo.get(this.key(e));
    return c === undefined ? undefined : this.find(c);
  }

  /** The classes holding an e-node of `op`. */
  classesWith(op: string): ClassId[] {
    const out: ClassId[] = [];
    for (const c of this.classes.values()) if (c.nodes.some((e) => e.op === op)) out.push(c.id);
    return out;
  }
}
