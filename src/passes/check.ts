// Checking mode for the optimizer (K.function's `mode: 'debug'`, THEANINE_MODE=debug): every
// replacement the rewrite engine makes (src/passes/rewrite.ts), built-in and user rules alike, is
// evaluated on the reference interpreter and compared with the node it replaces; every pass's
// outputs are compared with its inputs' (whole-graph passes, fusion, Scan rewrites). A mismatch
// beyond the dtype's tolerance raises BadOptimization naming the rule. PyTensor's DebugMode does
// the same per replacement (its BadOptimization names the rewrite, the old and new variables).
// Test values: the function's placeholders take seeded random values of their type (unknown dims
// TEST_DIM), variables their current values; every value is cached by node, and nodes are
// hash-consed and immutable, so a subgraph shared by many replacements is evaluated once.
import type { Difference, Tolerance } from '../ir/compare.js';
import { firstDifference, formatDifference, seededRandom, testValue } from '../ir/compare.js';
import { topoSort } from '../ir/graph.js';
import type { NDArray } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import type { EvalContext } from '../ir/op.js';
import { formatProvenance, type Provenance } from '../ir/provenance.js';
import { getOp } from '../ir/registry.js';
import { checkAgainstType, evalContext } from '../ir/interpret.js';
import { typeToString } from '../ir/types.js';
import { walkGraph } from '../ir/walk.js';

/** A rewrite (or pass) changed what the graph computes: the rule, the nodes, the values and the tolerance. */
export class BadOptimization extends Error {
  override name = 'BadOptimization';
  constructor(
    /** The rule's name (a local rewrite's, or the pass's for a whole-graph pass). */
    readonly rule: string,
    /** The node replaced and its replacement (for a pass: an output before and after). */
    readonly before: Node,
    readonly after: Node,
    readonly difference: Difference,
    /** The user's calls behind the replaced node. */
    readonly provenance: readonly Provenance[],
    what: string,
  ) {
    super(
      `BadOptimization: ${what} ${JSON.stringify(rule)} replaced ${describe(before)} with ${describe(after)}, which computes another value on the reference interpreter: ${formatDifference(difference)}${provenance.length > 0 ? `; the replaced node was built by ${formatProvenance(provenance)}` : ''}`,
    );
  }

  get tolerance(): Tolerance {
    return this.difference.tolerance;
  }
}

const describe = (n: Node) => `${n.name} (${n.op}, ${typeToString(n.type)})`;

const SEED = 20260531;

/** Values of nodes on the test values, cached across every check of one compile. */
export class ReferenceChecker {
  private readonly values = new Map<Node, NDArray>();
  private readonly tuples = new Map<Node, NDArray[]>();
  private readonly next = seededRandom(SEED);
  private readonly ctx: EvalContext;
  /** Replacements compared, and those left unchecked (the original could not be evaluated on the test values, or impure). */
  readonly counts = { checked: 0, unchecked: 0 };

  /** Values given for leaves (a call's inputs, by node), instead of random ones. */
  constructor(feeds?: ReadonlyMap<Node, NDArray>, learningPhase = 0) {
    if (feeds !== undefined) for (const [n, v] of feeds) this.values.set(n, v);
    this.ctx = evalContext({ learningPhase, epoch: 1, print: () => {} });
  }

  /** Values for variables (their values before a call), instead of their cells' current ones. */
  useVariables(values: ReadonlyMap<Node, NDArray>): void {
    for (const [n, v] of values) this.values.set(n, v);
  }

  /** The values of `n` (one per tuple item); throws what the interpreter throws. */
  valuesOf(n: Node): NDArray[] {
    const order = topoSort([n]);
    const ev = {
      given: (m: Node): NDArray | undefined => {
        if (m.op === 'placeholder') return this.values.get(m) ?? testValue(m.type, this.next);
        if (m.op === 'variable') return m.cell!.value;
        return undefined;
      },
      compute: (m: Node, ins: NDArray[]) => getOp(m.op).impl(ins, m.attrs, this.ctx),
      computeTuple: (m: Node, ins: NDArray[]) => {
        const hit = this.tuples.get(m);
        if (hit !== undefined) return hit;
        const r = getOp(m.op).implTuple!(ins, m.attrs, this.ctx);
        this.tuples.set(m, r);
        return r;
      },
      check: checkAgainstType,
    };
    if (n.type.items !== undefined) {
      walkGraph(order.slice(0, -1), [], this.values, ev);
      return ev.computeTuple(
        n,
        n.inputs.map((i) => this.values.get(i)!),
      );
    }
    return walkGraph(order, [n], this.values, ev);
  }

  /** Compares `out` with `cur` (the node it replaces); throws BadOptimization on a difference. */
  replaced(rule: string, cur: Node, out: Node, what = 'rewrite'): void {
    if (impure(cur) || impure(out)) {
      this.counts.unchecked++;
      return;
    }
    let want: NDArray[];
    try {
      want = this.valuesOf(cur);
    } catch {
      this.counts.unchecked++; // the test values do not fit the original (a shape only some sizes satisfy)
      return;
    }
    let got: NDArray[];
    try {
      got = this.valuesOf(out);
    } catch (e) {
      const d: Difference = {
        flat: -1,
        index: [],
        got: NaN,
        want: NaN,
        tolerance: { atol: 0, rtol: 0 },
        why: `the replacement throws where the original does not: ${e instanceof Error ? e.message : String(e)}`,
      };
      throw new BadOptimization(rule, cur, out, d, cur.provenance, what);
    }
    this.counts.checked++;
    for (let i = 0; i < want.length; i++) {
      const d = firstDifference(got[i]!, want[i]!);
      if (d !== undefined)
        throw new BadOptimization(
          rule,
          cur,
          out,
          want.length > 1 ? { ...d, why: `item ${i}: ${formatDifference(d)}` } : d,
          cur.provenance,
          what,
        );
    }
  }
}

/** Whether the subgraph of `n` draws random numbers or prints (values that differ per evaluation). */
const impureMemo = new WeakMap<Node, boolean>();
export function impure(n: Node): boolean {
  let r = impureMemo.get(n);
  if (r === undefined) {
    r = getOp(n.op).impure === true || n.inputs.some(impure);
    impureMemo.set(n, r);
  }
  return r;
}

let active: ReferenceChecker | undefined;

/** Runs `f` with every replacement and pass checked by `checker` (checking mode). */
export function withChecking<T>(checker: ReferenceChecker, f: () => T): T {
  const saved = active;
  active = checker;
  try {
    return f();
  } finally {
    active = saved;
  }
}

/** The checker of the compile in progress, when it runs in checking mode. */
export function activeChecker(): ReferenceChecker | undefined {
  return active;
}
