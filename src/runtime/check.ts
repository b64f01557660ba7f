// Checking mode and the NaN guard at call time, for every target. Each kernel of a function's
// optimized graph (a node: a fused kernel, a product, a Scan...) is also compiled alone, as a
// one-node function of the same target over placeholders, and run on the reference interpreter's
// values of its inputs for the call; its result is compared with the reference's value of the
// node (PyTensor's DebugMode runs each thunk against the Python implementation the same way).
// Isolating each kernel names the first wrong one exactly, without reading intermediate buffers
// out of generated code. The NaN guard (JAX's debug_nans) looks at the results: a non-finite value
// makes it find the first node whose value is non-finite from finite inputs.
import { apply, leaf } from '../ir/build.js';
import { allFinite, firstDifference, firstNonFinite, formatDifference, type Difference } from '../ir/compare.js';
import { topoSort } from '../ir/graph.js';
import { depthOf, roundingSteps, type ShapeOf } from '../ir/rounding.js';
import { NDArray } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import { formatProvenance, type Provenance } from '../ir/provenance.js';
import { getOp, isOp } from '../ir/registry.js';
import { isFloat } from '../ir/dtype.js';
import { fusedLabel } from '../passes/fusion.js';
import { impure, ReferenceChecker } from '../passes/check.js';
import { rebuild } from '../passes/rewrite.js';
import { FallbackError } from './fallback.js';
import { warn } from './warn.js';
import type { DeviceResult, Executor } from './function.js';
import type { Target, TargetRequest } from './target.js';

/** A kernel's name in checks and profiles: a fused kernel's label, else its op. */
export function kernelName(n: Node): string {
  return fusedLabel(n) ?? n.op;
}

/** The ops a kernel node was made of (a fused kernel's members; else the node's own op). */
export function kernelNodes(n: Node): readonly string[] {
  const f = fusedLabel(n);
  return f === undefined ? [n.op] : f.slice('fused{'.length, -1).split(',');
}

/** A compiled kernel computed another value than the reference interpreter: the kernel, its nodes and the first differing element. */
export class BadKernel extends Error {
  override name = 'BadKernel';
  constructor(
    readonly kernel: string,
    readonly node: Node,
    readonly nodes: readonly string[],
    readonly difference: Difference,
    readonly provenance: readonly Provenance[],
    fn: string,
    target: string,
  ) {
    super(
      `BadKernel: function ${JSON.stringify(fn)} on ${target}: kernel ${kernel} (node ${node.name}; ops ${nodes.join(', ')}) differs from the reference interpreter on the call's values: ${formatDifference(difference)}${provenance.length > 0 ? `; built by ${formatProvenance(provenance)}` : ''}`,
    );
  }
}

/** The NaN guard: a kernel wrote NaN or Inf from finite inputs. */
export class NonFiniteError extends Error {
  override name = 'NonFiniteError';
  constructor(
    readonly kernel: string,
    readonly node: Node,
    readonly index: number,
    readonly value: number,
    readonly provenance: readonly Provenance[],
    fn: string,
  ) {
    const p = provenance[0];
    super(
      `NaN guard: function ${JSON.stringify(fn)}: kernel ${kernel} (node ${node.name}) wrote ${value} at element ${index} from finite inputs${p !== undefined ? `; the K call is ${p.call}${p.site !== undefined ? `, at ${p.site.file}:${p.site.line}:${p.site.column}` : ' (no user line recorded)'}` : ' (no K call recorded: set THEANINE_TRACE=1)'}`,
    );
  }
}

/** Every op name: extern steps of a one-kernel function are accepted (the function itself was warned about them). */
const ANY_OP: ReadonlySet<string> = new (class extends Set<string> {
  override has(): boolean {
    return true;
  }
})();

/** Nodes worth checking: computed (not leaves, constants or tuple items) and pure. */
function kernelsOf(graph: readonly Node[]): Node[] {
  return topoSort(graph).filter(
    (n) => n.inputs.length > 0 && n.op !== 'tuple_get' && n.op !== 'constant' && !impure(n),
  );
}

/** Inputs fed to a one-kernel function: every input but those computed from constants alone (the learning phase is fed too). */
function fedFromCall(n: Node): boolean {
  return topoSort([n]).some((m) => m.inputs.length === 0 && m.op !== 'constant');
}

interface OneKernel {
  readonly exec: Executor | undefined;
  /** Why there is none. */
  readonly why?: string;
  /** The node's inputs it takes, in order. */
  readonly fed: readonly Node[];
}

/** A kernel cut out of its graph: its inputs replaced by placeholders fed from the call. */
interface Isolated {
  /** The graph's nodes whose values feed it, in order, and the inputs they feed. */
  readonly fed: readonly Node[];
  readonly phs: readonly Node[];
  /** Its outputs (a tuple-valued node's items). */
  readonly targets: readonly Node[];
}

function isolate(n: Node): Isolated {
  // A sized op's sizes (integer inputs, shape arithmetic) stay computed from the function's own
  // placeholders, so that its shape is known when it is compiled alone; other inputs are fed.
  const sized = getOp(n.op).resolve !== undefined;
  const fed: Node[] = [];
  const phs: Node[] = [];
  const ins = n.inputs.map((i) => {
    if (!fedFromCall(i) || (sized && !isFloat(i.dtype))) return i;
    const ph = leaf('placeholder', {
      uid: -1,
      name: `${i.name}_checked`,
      dtype: i.dtype,
      shape: [...i.shape],
      sparse: false,
    });
    fed.push(i);
    phs.push(ph);
    return ph;
  });
  const fresh = new Set(phs);
  for (const x of topoSort(ins))
    if (x.op === 'placeholder' && !fresh.has(x)) {
      fed.push(x);
      phs.push(x);
    }
  const m = rebuild(n, ins);
  const items = m.type.items;
  const targets = items === undefined ? [m] : items.map((_, j) => apply('tuple_get', [m], { index: j }));
  return { fed, phs, targets };
}

function kernelExecutor(target: Target, req: TargetRequest, k: Isolated, name: string): Executor {
  return target.executor({
    inputs: k.phs,
    targets: k.targets,
    updates: [],
    nOut: k.targets.length,
    optimizer: req.optimizer,
    name: `${req.name}: ${name}`,
    fallback: { mode: 'error', allow: ANY_OP },
    optimized: target.passes(req.optimizer, req.passes),
  });
}

/** The one-kernel function of `n` on `target` (cached per node and request). */
function oneKernel(target: Target, req: TargetRequest, n: Node, cache: Map<Node, OneKernel>): OneKernel {
  let k = cache.get(n);
  if (k !== undefined) return k;
  const cut = isolate(n);
  try {
    k = { fed: cut.fed, exec: kernelExecutor(target, req, cut, `kernel ${kernelName(n)}`) };
  } catch (e) {
    k = {
      fed: cut.fed,
      exec: undefined,
      why: `it cannot be compiled alone: ${e instanceof Error ? e.message : String(e)}`,
    };
  }
  cache.set(n, k);
  return k;
}

/** Every kernel of a graph, each cut out as by oneKernel, side by side in one function. */
interface Together {
  readonly exec: Executor;
  readonly fed: readonly Node[];
  /** Each kernel's outputs' positions in the function's results. */
  readonly slots: ReadonlyMap<Node, readonly number[]>;
}

/**
 * The kernels of `nodes` compiled into one function (checkKernelsTogether): the same isolation,
 * one program. Undefined where that one does not compile (each kernel is then tried alone).
 */
function together(target: Target, req: TargetRequest, nodes: readonly Node[]): Together | undefined {
  const fed: Node[] = [];
  const phs: Node[] = [];
  const seen = new Set<Node>();
  const targets: Node[] = [];
  const slots = new Map<Node, number[]>();
  for (const n of nodes) {
    const cut = isolate(n);
    cut.phs.forEach((ph, i) => {
      if (seen.has(ph)) return; // the function's own placeholders, shared by kernels
      seen.add(ph);
      phs.push(ph);
      fed.push(cut.fed[i]!);
    });
    slots.set(
      n,
      cut.targets.map((_, j) => targets.length + j),
    );
    targets.push(...cut.targets);
  }
  try {
    return { exec: kernelExecutor(target, req, { fed, phs, targets }, `${nodes.length} kernels`), fed, slots };
  } catch {
    return undefined;
  }
}

const materialize = (r: NDArray | DeviceResult): NDArray | undefined => (r instanceof NDArray ? r : undefined);

/** Runs `n`'s one-kernel function on the reference values of its inputs, or says why it does not run as compiled code. */
function runAlone(
  target: Target,
  req: TargetRequest,
  n: Node,
  ref: ReferenceChecker,
  learningPhase: number,
  cache: Map<Node, OneKernel>,
): NDArray[] | string {
  const k = oneKernel(target, req, n, cache);
  if (k.exec === undefined) return k.why!;
  try {
    return k.exec
      .run(
        k.fed.map((i) => ref.valuesOf(i)[0]!),
        learningPhase,
      )
      .map(materialize) as NDArray[];
  } catch (e) {
    // shapes known only at run time once the kernel's inputs are placeholders: it would be interpreted
    if (e instanceof FallbackError) return `alone, it would run the reference interpreter (${e.message})`;
    throw e;
  }
}

/** Kernels checking mode could not compare, said once per function and kernel (never silently). */
function warnUnchecked(fn: string, n: Node, why: string, said: Set<Node>): void {
  if (said.has(n)) return;
  said.add(n);
  warn(
    `theanine: checking mode: function ${JSON.stringify(fn)}: kernel ${kernelName(n)} (node ${n.name}) is not compared with the reference: ${why}`,
  );
}

/** Checking mode's executor: the function's results as usual, then every kernel compared with the reference (see top). */
export function checkedExecutor(target: Target, req: TargetRequest, device: string, inner: Executor): Executor {
  const cache = new Map<Node, OneKernel>();
  const said = new Set<Node>();
  // checkKernelsTogether: one program for all the kernels, until a call it cannot run
  let joint: Together | undefined | null = target.checkKernelsTogether === true ? undefined : null;
  return Object.assign(Object.create(inner) as Executor, {
    runAsync: undefined, // callAsync runs this run, not the inner executor's runAsync
    run(values: readonly NDArray[], learningPhase: number) {
      const ref = reference(req, values, learningPhase);
      const graph = inner.graph;
      const shapeOf = callShapes(ref);
      const kernels = kernelsOf(graph);
      if (joint === undefined) joint = kernels.length > 0 ? (together(target, req, kernels) ?? null) : null;
      let all: NDArray[] | undefined;
      if (joint !== null) {
        try {
          all = joint.exec.run(
            joint.fed.map((i) => ref.valuesOf(i)[0]!),
            learningPhase,
          ) as NDArray[];
        } catch {
          // A kernel would be interpreted at these shapes, or one does not compile or run: each
          // is tried alone, which names it (its errors are raised there, its fallbacks warned).
          joint = null;
        }
      }
      for (const n of kernels) {
        const slots = joint?.slots.get(n);
        const got =
          all !== undefined && slots !== undefined
            ? slots.map((j) => materialize(all![j]!)!)
            : runAlone(target, req, n, ref, learningPhase, cache);
        if (typeof got === 'string') {
          warnUnchecked(req.name, n, got, said);
          continue;
        }
        const want = ref.valuesOf(n);
        want.forEach((w, j) => {
          const d =
            got[j] === undefined ? undefined : firstDifference(got[j]!, w, target.float64As, roundingSteps(n, shapeOf));
          if (d !== undefined) throw new BadKernel(kernelName(n), n, kernelNodes(n), d, n.provenance, req.name, device);
        });
      }
      const results = inner.run(values, learningPhase);
      // The whole function too: buffer planning and the driver's copies are part of what it runs.
      // Its tolerance grows with each result's depth (compare.ts): a whole graph rounds at every
      // step of its longest path, and the targets order sums differently from the interpreter.
      graph.forEach((o, i) => {
        const r = materialize(results[i]!);
        if (r === undefined || impure(o)) return;
        const d = firstDifference(r, ref.valuesOf(o)[0]!, target.float64As, depthOf([o], shapeOf));
        if (d !== undefined)
          throw new BadKernel(
            `result ${i} of the whole function`,
            o,
            kernelNodes(o),
            d,
            o.provenance,
            req.name,
            device,
          );
      });
      return results;
    },
  });
}

/** Shapes of this call's values: static where known, else the reference's. */
function callShapes(ref: ReferenceChecker): ShapeOf {
  const memo = new Map<Node, readonly number[] | undefined>();
  return (n) => {
    if (n.type.items !== undefined) return undefined;
    if (n.shape.every((d) => d !== null)) return n.shape;
    if (!memo.has(n)) memo.set(n, ref.valuesOf(n)[0]?.shape);
    return memo.get(n);
  };
}

function reference(req: TargetRequest, values: readonly NDArray[], learningPhase: number): ReferenceChecker {
  const feeds = new Map<Node, NDArray>();
  req.inputs.forEach((n, i) => feeds.set(n, values[i]!));
  return new ReferenceChecker(feeds, learningPhase);
}

/**
 * The NaN guard's executor: nothing is added to a call whose results are finite but one pass over
 * them; a non-finite result makes it find the first node (in the order the graph runs) whose value
 * is non-finite while its inputs are finite, on the reference interpreter, then on each kernel
 * compiled alone (a kernel that alone computes NaN), and raise NonFiniteError naming it.
 * Non-finite values the call's inputs or variables bring in are not the guard's to report.
 */
export function guardedExecutor(target: Target, req: TargetRequest, inner: Executor): Executor {
  const cache = new Map<Node, OneKernel>();
  return Object.assign(Object.create(inner) as Executor, {
    runAsync: undefined, // callAsync runs this run, not the inner executor's runAsync
    run(values: readonly NDArray[], learningPhase: number) {
      const variables = snapshot(inner.graph);
      const results = inner.run(values, learningPhase);
      if (
        results.every((r) => {
          const v = materialize(r);
          return v === undefined || allFinite(v);
        })
      )
        return results;
      const ref = reference(req, values, learningPhase);
      ref.useVariables(variables);
      const finite = (n: Node) => ref.valuesOf(n).every(allFinite);
      for (const n of kernelsOf(inner.graph)) {
        if (!n.inputs.every((i) => i.type.items !== undefined || finite(i))) continue;
        const outs = ref.valuesOf(n);
        let bad = outs.find((v) => !allFinite(v));
        if (bad === undefined) {
          const alone = runAlone(target, req, n, ref, learningPhase, cache);
          if (typeof alone !== 'string') bad = alone.find((v) => !allFinite(v));
        }
        if (bad !== undefined) {
          const at = firstNonFinite(bad);
          throw new NonFiniteError(
            kernelName(n),
            n,
            at,
            bad.data[at]!,
            memberToBlame(n, ref) ?? n.provenance,
            req.name,
          );
        }
      }
      return results;
    },
  });
}

/**
 * Inside a fused kernel, the provenance of the first member whose value is non-finite from finite
 * inputs (the body evaluated on the kernel's inputs), so that the K call named is the one that
 * made the NaN, not the first of the kernel's.
 */
function memberToBlame(n: Node, ref: ReferenceChecker): readonly Provenance[] | undefined {
  if (!isOp(n, 'fused')) return undefined;
  const body = n.attrs.body;
  const feeds = new Map<Node, NDArray>(body.params.map((p, i) => [p, ref.valuesOf(n.inputs[i]!)[0]!]));
  const inner = new ReferenceChecker(feeds);
  const params = new Set(body.params);
  for (const m of topoSort([body.root])) {
    if (params.has(m) || m.inputs.length === 0) continue;
    if (m.inputs.every((i) => allFinite(inner.valuesOf(i)[0]!)) && !allFinite(inner.valuesOf(m)[0]!))
      return m.provenance.length > 0 ? m.provenance : undefined;
  }
  return undefined;
}

/** The variables' values before a call (the call's updates replace them). */
function snapshot(graph: readonly Node[]): Map<Node, NDArray> {
  const m = new Map<Node, NDArray>();
  for (const n of topoSort(graph)) if (n.op === 'variable') m.set(n, n.cell!.value);
  return m;
}
