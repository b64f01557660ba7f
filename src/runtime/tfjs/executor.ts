// The tensorflow backend's executor: evaluates a graph node by node with TensorFlow.js ops
// (one tfjs call or a few per node, no generated code; user ops through their reference). Each call runs inside tf.tidy, so every
// intermediate tensor is freed when the call returns; only the tf.Variables behind theanine
// variables (variables.ts) live between calls.
import { topoSort } from '../../ir/graph.js';
import { walkGraph } from '../../ir/walk.js';
import { checkAgainstType, evalContext, nextEpoch } from '../../ir/interpret.js';
import { formatShape, type NDArray } from '../../ir/ndarray.js';
import type { Node, VariableCell } from '../../ir/node.js';
import type { EvalContext } from '../../ir/op.js';
import { getOp, isBuiltin } from '../../ir/registry.js';
import type { Executor } from '../function.js';
import type { FusionTarget } from '../../passes/fusion.js';
import { ProgramCache } from '../program-cache.js';
import {
  bodyOptimizer,
  link,
  passesFor,
  type LinkedProgram,
  type OptimizedProgram,
  type Specialised,
  type Target,
  type TargetRequest,
} from '../target.js';
import { download, upload } from './convert.js';
import { tfKernels } from './kernels/index.js';
import { fit } from './kernels/util.js';
import { takeBackendErrors, tfjsRuntime, watchBackendErrors, type TF, type TfRuntime } from './load.js';
import type { KernelContext, Tensor, TfEntry } from './types.js';
import { adoptUpdate, readVariable } from './variables.js';
import { warn } from '../warn.js';
import { KernelTimer, PROFILE_NOTES, nodeInfo } from '../profile.js';
import { formatProvenance } from '../../ir/provenance.js';

interface TfjsExecutor extends Executor {
  readonly runtime: TfRuntime;
}

/** TensorFlow.js takes any shapes: a program's one specialisation is its evaluation order. */
interface TfjsSpec extends Specialised {
  readonly order: readonly Node[];
}
const ANY_SHAPES: readonly (readonly number[])[] = [];

/** Optimized graphs by structure (a rebuilt graph reuses its twin's), as on every target. */
const programs = new ProgramCache<OptimizedProgram<TfjsSpec>, TfjsSpec>();

/** Every pass fuses nothing here: tfjs runs each op as its own kernel. */
const noFusion: FusionTarget = { classify: () => 'opaque' };

/**
 * The tensorflow backend's target: the optimizer's passes without fusion, evaluated node by node.
 * `targets` are the function's outputs, then its update values; the update values' tf.Variables
 * take the new values without a round trip through the host.
 */
export const tfjsTarget: Target<TfjsSpec> = {
  float64As: 'float32', // TensorFlow.js has no float64 (src/runtime/tfjs/README.md)
  passes: passesFor(noFusion),
  specialize: (p) => ({ order: topoSort(p.graph), fallbacks: [], invalid: false }),
  executor: (req) => tfjsExecutor(req),
  clear: () => programs.clear(),
};

function tfjsExecutor(req: TargetRequest): TfjsExecutor {
  const runtime = tfjsRuntime();
  // The profiler's: each node timed from its call to its result on the host side (the backend
  // done with it: node, wasm and cpu run ops as they are called; webgl is waited for by a read).
  const timer = req.profile === true ? new KernelTimer() : undefined;
  const top: Scope | undefined =
    timer === undefined
      ? undefined
      : {
          timer,
          path: '',
          name: '',
          depth: 0,
          sync:
            runtime.flavour === 'webgl'
              ? (t) => {
                  t.dataSync();
                }
              : () => {},
        };
  return link(tfjsTarget, 'tensorflow', programs, req, (linked) => {
    const { order } = linked.spec(ANY_SHAPES);
    warnNarrowed(order);
    return {
      ...(timer !== undefined ? { kernelTimes: () => timer.take(), profileNote: PROFILE_NOTES.tensorflow } : {}),
      get graph(): readonly Node[] {
        return linked.graph();
      },
      runtime,
      freshResults: true,
      run: (values: readonly NDArray[], learningPhase: number) =>
        runtime.withBackend(() =>
          runOnce(runtime.tf, linked, order, values, learningPhase, top, (results, nds) => {
            req.updates.forEach(([variable], k) => {
              const t = results[req.nOut + k]!;
              const want = variable.shape;
              // A shape that contradicts the variable is K.function's error to report; nothing is adopted.
              if (t.shape.length === want.length && t.shape.every((d, i) => d === want[i]))
                adoptUpdate(runtime.tf, variable.cell!, t, nds[req.nOut + k]!);
            });
          }),
        ),
    };
  });
}

/**
 * TensorFlow.js has no float64 and no int64: such values are computed in float32 and int32 here,
 * which loses digits and wraps large integers. Said once per process and dtype,
 * when the first function using one is compiled, since results keep the dtype's label.
 */
const NARROWED: Readonly<Record<string, string>> = {
  float64: 'float64 values are computed in float32 (about 7 significant digits; 1 + 1e-10 is 1)',
  int64: 'int64 values are computed in int32 (integers beyond +-2^31 wrap)',
};
const warnedNarrowed = new Set<string>();
/** Tests: forget which dtypes were warned about. */
export function _resetNarrowedWarnings(): void {
  warnedNarrowed.clear();
}
function warnNarrowed(order: readonly Node[]): void {
  for (const n of order) {
    const text = NARROWED[n.dtype];
    if (text === undefined || warnedNarrowed.has(n.dtype)) continue;
    warnedNarrowed.add(n.dtype);
    warn(
      `theanine: backend "tensorflow": TensorFlow.js has no ${n.dtype}, so ${text}; results are still labelled ${n.dtype}. Use the theanine backend where ${n.dtype} precision matters`,
    );
  }
}

/** Where the nodes evaluated now are, for the profiler (a Scan body's: under its Scan node's path and name). */
interface Scope {
  readonly timer: KernelTimer;
  readonly path: string;
  readonly name: string;
  readonly depth: number;
  /** Waits for a node's result (an asynchronous backend). */
  readonly sync: (t: Tensor) => void;
}

function runOnce(
  tf: TF,
  linked: LinkedProgram<TfjsSpec>,
  order: readonly Node[],
  values: readonly NDArray[],
  learningPhase: number,
  top: Scope | undefined,
  afterDownload: (results: readonly Tensor[], nds: readonly NDArray[]) => void,
): NDArray[] {
  const { program } = linked;
  const targets = program.graph;
  /** The cell behind a variable of the program's graph: this function's variable in its slot. */
  const cellOf = (n: Node): VariableCell => linked.cells[program.variableSlot.get(n)!]!;
  const optimizeBody = bodyOptimizer(program.passes);
  const epoch = nextEpoch();
  const print = (m: string) => console.log(m);
  takeBackendErrors(); // what earlier code (not this call) left there is not this call's
  const results = watchBackendErrors(() =>
    tf.tidy(() => {
      const env = new Map<Node, Tensor>();
      for (const [n, i] of program.inputSlot) env.set(n, upload(tf, values[i]!));
      // Variables are read at the start of the call: a clone keeps the value it had even if
      // a call made from inside this one (a user op's reference) assigns an update to the tf.Variable.
      for (const n of order) if (n.op === 'variable' && !env.has(n)) env.set(n, tf.clone(readVariable(tf, cellOf(n))));
      const evaluate = (res: readonly Node[], feeds: ReadonlyMap<Node, Tensor>, scope: Scope | undefined): Tensor[] =>
        new Graph(tf, new Map(feeds), ctxFor, cellOf, scope).run(topoSort(res), res);
      const ctxFor = (node: Node, scope: Scope | undefined): KernelContext => ({
        tf,
        node,
        learningPhase,
        epoch,
        print,
        evaluate: (res, feeds) => evaluate(res, feeds, scope),
        evaluateBody: (b, feeds) => evaluate(optimizeBody(b), feeds, scope),
      });
      const out = new Graph(tf, env, ctxFor, cellOf, top).run(order, targets);
      // Results get handles of their own (a clone shares the data): a variable's tensor changes when
      // an update is assigned to it, and cached constants outlive the call.
      return out.map((v) => tf.clone(v));
    }),
  );
  try {
    const nds = targets.map((t, i) => download(results[i]!, t.dtype));
    afterDownload(results, nds);
    return nds;
  } finally {
    for (const t of results) t.dispose();
  }
}

/** One evaluation of a graph (the function's, or a Scan body's step): values by node. */
class Graph {
  /** Each node's place in the order run (the profiler's rows). */
  private index: Map<Node, number> | undefined;

  constructor(
    private readonly tf: TF,
    private readonly env: Map<Node, Tensor>,
    private readonly ctxForScope: (n: Node, scope: Scope | undefined) => KernelContext,
    private readonly cellOf: (n: Node) => VariableCell,
    private readonly scope?: Scope,
  ) {}

  /** A node's kernel context: inner graphs it evaluates are profiled under its row. */
  private ctxFor(n: Node): KernelContext {
    const s = this.scope;
    return this.ctxForScope(
      n,
      s === undefined
        ? undefined
        : { ...s, path: `${s.path}${this.index!.get(n)}/`, name: `${s.name}${n.op}: `, depth: s.depth + 1 },
    );
  }

  /** Runs `f`, the node's computation; profiled, its time is the node's row. */
  private timed<T extends Tensor | Tensor[]>(n: Node, ins: readonly Tensor[], f: () => T): T {
    const s = this.scope;
    if (s === undefined) return f();
    const t0 = performance.now();
    const out = f();
    const outs: readonly Tensor[] = Array.isArray(out) ? out : [out as Tensor];
    for (const t of outs) s.sync(t);
    const at = `${s.path}${this.index!.get(n)}`;
    const bytes = {
      read: ins.reduce((a, t) => a + tensorBytes(t), 0),
      written: outs.reduce((a, t) => a + tensorBytes(t), 0),
    };
    s.timer.add(
      at,
      () =>
        nodeInfo(
          `${s.name}${n.op}`,
          n.op,
          [n.op],
          n.provenance.map((p) => formatProvenance([p], 1)),
          at,
          s.depth,
          bytes,
        ),
      performance.now() - t0,
    );
    return out;
  }

  run(order: readonly Node[], targets: readonly Node[]): Tensor[] {
    if (this.scope !== undefined) this.index = new Map(order.map((n, i) => [n, i]));
    return walkGraph(order, targets, this.env, {
      given: (n) => (n.op === 'variable' ? readVariable(this.tf, this.cellOf(n)) : undefined),
      compute: (n, ins) =>
        this.timed(n, ins, () => (isBuiltin(n.op) ? this.compute(n, ins) : this.computeExtern(n, ins))),
      computeTuple: (n, ins) =>
        this.timed(n, ins, () => {
          const entry = tfKernels[n.op as keyof typeof tfKernels] as TfEntry<unknown>;
          if (typeof entry !== 'object') throw new Error(`internal: op ${n.op} has a tuple type but no tuple kernel`);
          const items = n.type.items!;
          const out = entry.tuple(ins, n.attrs, this.ctxFor(n)).map((t, i) => fit(this.tf, t, items[i]!.dtype));
          checkBackendStatus(n.op);
          return out;
        }),
      check: (n, t, v, where) => checkShape(n, t.shape, v, where),
    });
  }

  /**
   * A user op (K's defineOp) has only its reference implementation: it runs on the host, its
   * inputs downloaded and its result uploaded (as the compiler's extern path does).
   */
  private computeExtern(n: Node, inputs: readonly Tensor[]): Tensor {
    const out = getOp(n.op).impl(
      inputs.map((t, i) => download(t, n.inputs[i]!.dtype)),
      n.attrs,
      this.hostContext(n),
    );
    checkAgainstType(n, n.type, out);
    return upload(this.tf, out);
  }

  /** The reference interpreter's context for a node run on the host (its inner graphs, if any, run there too). */
  private hostContext(n: Node): EvalContext {
    const { learningPhase, epoch, print } = this.ctxFor(n);
    return evalContext({ learningPhase, epoch, print });
  }

  private compute(n: Node, inputs: Tensor[]): Tensor {
    const entry = tfKernels[n.op as keyof typeof tfKernels] as TfEntry<unknown>;
    if (entry === 'executor' || typeof entry === 'object') {
      // an unfed leaf: the reference's own error
      getOp(n.op).impl([], n.attrs, this.hostContext(n));
      throw new Error(`internal: ${n.op} has no value`);
    }
    const out = fit(this.tf, entry(inputs, n.attrs, this.ctxFor(n)), n.dtype);
    checkBackendStatus(n.op);
    return out;
  }
}

/** Bytes a tensor holds (bool: one per element; float32 and int32: four). */
const tensorBytes = (t: Tensor): number => t.size * (t.dtype === 'bool' ? 1 : 4);

/** A status the tfjs backend reported while an op ran is that op's error, never its result. */
function checkBackendStatus(op: string): void {
  const errs = takeBackendErrors();
  if (errs.length > 0)
    throw new Error(
      `${op}: TensorFlow.js reported an error while computing it (${errs.join('; ')}); its output is not a result`,
    );
}

function checkShape(n: Node, want: readonly (number | null)[], out: Tensor, where = ''): void {
  if (out.shape.length !== want.length || want.some((d, i) => d !== null && d !== out.shape[i])) {
    throw new Error(
      `internal: op ${n.op}${where} produced ${formatShape(out.shape)} on TensorFlow.js but its type is ${n.dtype} ${formatShape(want)}`,
    );
  }
}
