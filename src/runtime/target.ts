// Targets: where K.function runs a graph. A target is PyTensor's Mode(linker, rewrites) with JAX's
// lowering per platform in the middle:
//   passes(level)              the rewrites an optimizer level runs for it (what it can fuse);
//   specialize(program, shapes) the optimized graph made concrete for one set of input shapes
//                              (generated JavaScript on the cpu, gpu.js kernels on the gpu, an
//                              ONNX Runtime session, the evaluation order for TensorFlow.js);
//   executor(request)          K.function's executor over those.
// What every target shares lives here: optimized graphs cached by structure with their
// specialisations by shapes (program-cache.ts), Scan bodies through the same passes, the
// reference interpreter where shapes are known only at run time under the fallback rule
// (fallback.ts), THEANINE_DEBUG=passes and the compile-phase times.
import type { TuneOptions } from './tune.js';
import { attrsKey, type Node, type VariableCell } from '../ir/node.js';
import { formatShape, type NDArray } from '../ir/ndarray.js';
import { topoSort, type Graph } from '../ir/graph.js';
import { evaluate } from '../ir/interpret.js';
import { provenanceKey } from '../ir/provenance.js';
import type { ScanBody } from '../ir/scanbody.js';
import { formatPassReport, runPasses, type Pass, type PassReport } from '../passes/pass.js';
import { fusedLabel, type FusionTarget } from '../passes/fusion.js';
import { pipelineKey, resolvePipeline, type PassSelection } from '../passes/user.js';
import { rebuild } from '../passes/rewrite.js';
import { ReferenceChecker, withChecking } from '../passes/check.js';
import { shapesKey, type CachedProgram, type ProgramCache } from './program-cache.js';
import { checkFallbacks, type Fallback, type FallbackPolicy } from './fallback.js';
import { debugEnabled } from './debug.js';
import type { Executor, FunctionSpec } from './function.js';
import type { OptimizerLevel } from '../passes/pipeline.js';
import { platform } from '#platform';

export type Shapes = readonly (readonly number[])[];

/** What K.function asks a target for: the function's inputs, updates, optimizer level and name, and: */
export interface TargetRequest extends Pick<FunctionSpec, 'inputs' | 'updates' | 'optimizer' | 'name'> {
  /** The outputs, then the update values. */
  readonly targets: readonly Node[];
  readonly nOut: number;
  /** User passes added, passes removed (src/passes/user.ts). */
  readonly passes?: PassSelection;
  /** The fallback rule (src/runtime/fallback.ts). */
  readonly fallback: FallbackPolicy;
  /** Checking mode: every replacement the passes make is compared on the reference interpreter (src/passes/check.ts). */
  readonly mode?: 'debug';
  /** The targets are already optimized by these passes: run none (Scan bodies still go through them). Checking mode's one-kernel functions. */
  readonly optimized?: readonly Pass[];
  /** Time every kernel (K.function's `profile`; src/runtime/profile.ts). */
  readonly profile?: boolean;
  /** Tune the kernels' schedules (K.function's `tune`, THEANINE_BEAM; the cpu device: src/runtime/tune.ts). */
  readonly tune?: TuneOptions;
  /** K.function's `borrow`: outputs may be storage the function writes again at its next call (targets that keep none return fresh arrays, which the contract allows). */
  readonly borrow?: boolean;
}

/** What one graph structure optimizes to, independent of shapes and of which leaves it was built from. */
export interface OptimizedProgram<S> extends CachedProgram<S> {
  /** Its structural key (the program cache's; the compile cache on disk's starts from it). */
  readonly key: string;
  /** The passes it was optimized with (Scan bodies go through the same ones). */
  readonly passes: readonly Pass[];
  readonly graph: readonly Node[];
  readonly inputSlot: ReadonlyMap<Node, number>;
  readonly variableSlot: ReadonlyMap<Node, number>;
  /** Variables of the graph it was optimized from, by slot. */
  readonly variables: readonly Node[];
  /** The target's variant when it was made ('' where the target has none). */
  readonly variant: string;
  /** Kernels are timed (a profiled function never shares code with an unprofiled one). */
  readonly profile?: boolean;
  /** Schedules are tuned (a tuned function never shares code with an untuned one). */
  readonly tune?: TuneOptions;
  /** Borrowed outputs (K.function's `borrow`): how many leading targets are the function's outputs. */
  readonly borrow?: number;
  /** Checking mode's kernels (TargetRequest.optimized), run once per checked call: a target may spend less on them. */
  readonly checking?: boolean;
}

export interface Target<S = unknown> {
  /** The passes of an optimizer level (none for `none`), with the user's selection. */
  passes(level: OptimizerLevel, selection?: PassSelection): readonly Pass[];
  /**
   * What besides the graph and the passes decides the code, read when a function is made (the
   * cpu's matmul precision): part of the cache key, and the program's `variant`.
   */
  variant?(): string;
  /** The optimized program made concrete for one set of input shapes. */
  specialize(program: OptimizedProgram<S>, shapes: Shapes): S;
  /** K.function's executor. */
  executor(request: TargetRequest): Executor;
  /** Forgets every cached program (clear_session). */
  clear(): void;
  /**
   * Whether the passes may wait until something needs the optimized graph (the cpu with its
   * compile cache on disk: a specialisation found there needs none). Not in checking mode.
   */
  deferPasses?(): boolean;
  /** The dtype it computes float64 values in, where not float64 (TensorFlow.js: float32); checking mode compares with that dtype's tolerance. */
  readonly float64As?: 'float32';
  /**
   * Whether checking mode compiles a function's kernels, each still fed its own inputs, into one
   * program instead of one each (ONNX Runtime: every session holds a thread pool of its own).
   */
  readonly checkKernelsTogether?: boolean;
}

/** A target's passes: the optimizer's list with the fusion its kernels allow; none for `none`. */
export function passesFor(fusion: FusionTarget): Target['passes'] {
  return (level, selection) => (level === 'none' ? [] : resolvePipeline(level, fusion, selection));
}

/**
 * Milliseconds spent in each compile phase by the latest compile (the bench reports them;
 * THEANINE_DEBUG=passes prints them): the graph's passes (at K.function), then per shape
 * specialisation the Scan bodies' passes, and on the cpu lowering to kernels (bodies' passes
 * excluded), buffer planning, code generation (JavaScript source, `new Function`) and the first
 * run of the new code (where V8 compiles it).
 */
export const compileTimes = { passes: 0, bodyPasses: 0, lower: 0, plan: 0, render: 0, firstRun: 0 };
/** Optimized programs and shape specialisations made, over every target. */
export const compileStats = { programs: 0, specializations: 0 };

/** Where THEANINE_DEBUG output goes (tests replace it). */
export let debugSink: (text: string) => void = (t) => platform.writeStderr(t);
export function setDebugSink(sink: ((text: string) => void) | undefined): void {
  debugSink = sink ?? ((t) => platform.writeStderr(t));
}

/** Runs `passes` over `outputs`; THEANINE_DEBUG=passes prints each pass's report and graph (`what` names a Scan body's). */
export function optimize(passes: readonly Pass[], outputs: readonly Node[], what?: string): readonly Node[] {
  if (passes.length === 0) return outputs;
  const onPass = debugEnabled('passes')
    ? (r: PassReport, g: Graph) =>
        debugSink(
          formatPassReport(what === undefined ? r : { ...r, name: `${what}: ${r.name}` }, g, { label: fusedLabel }),
        )
    : undefined;
  return runPasses(passes, { outputs }, onPass === undefined ? {} : { onPass }).outputs;
}

/** Scan bodies through the same passes as the graph around them, cached per body and pass list (one cache for every target). */
const optimizedBodies = new WeakMap<ScanBody, Map<string, readonly Node[]>>();
export function bodyOptimizer(passes: readonly Pass[]): (b: ScanBody) => readonly Node[] {
  const key = pipelineKey(passes);
  return (b) => {
    let byPasses = optimizedBodies.get(b);
    if (byPasses === undefined) {
      byPasses = new Map();
      optimizedBodies.set(b, byPasses);
    }
    let r = byPasses.get(key);
    if (r === undefined) {
      const t0 = performance.now();
      r = optimize(passes, b.results, 'scan body');
      compileTimes.bodyPasses += performance.now() - t0;
      byPasses.set(key, r);
    }
    return r;
  };
}

/**
 * The structural key of a function: every node by op, attrs, type and input positions; placeholders by
 * input position, variables by order of first appearance (their values are read at call time, so
 * two graphs over different variables of the same types share code). Also returns those variables.
 */
function structuralKey(
  inputs: readonly Node[],
  targets: readonly Node[],
  level: string,
  device: string,
): { key: string; variables: Node[] } {
  const inputPos = new Map<Node, number>();
  inputs.forEach((n, i) => inputPos.set(n, i));
  const local = new Map<Node, number>();
  const variables: Node[] = [];
  const parts: string[] = [level, device, inputs.map((n) => `${n.dtype}${formatShape(n.shape)}`).join(',')];
  for (const n of topoSort(targets)) {
    local.set(n, local.size);
    const ip = inputPos.get(n);
    let s: string;
    if (ip !== undefined) s = `in${ip}`;
    else if (n.op === 'variable') {
      s = `var${variables.length}`;
      variables.push(n);
    } else s = `${n.op}(${n.inputs.map((i) => local.get(i)).join(',')})${attrsKey(n.attrs)}`;
    // Provenance is part of the key: the program's kernel comments and errors name the user's lines.
    parts.push(
      `${s}:${n.dtype}${formatShape(n.shape)}${n.provenance.length > 0 ? `@${provenanceKey(n.provenance)}` : ''}`,
    );
  }
  parts.push(targets.map((t) => local.get(t)).join(','));
  return { key: parts.join(';'), variables };
}

/** A program's optimized graph rebuilt on another graph's leaves (same structure, so same slots). */
function withLeaves(
  p: OptimizedProgram<unknown>,
  inputs: readonly Node[],
  variables: readonly Node[],
): readonly Node[] {
  const map = new Map<Node, Node>();
  for (const [n, i] of p.inputSlot) map.set(n, inputs[i]!);
  for (const [n, i] of p.variableSlot) map.set(n, variables[i]!);
  if ([...map].every(([a, b]) => a === b)) return p.graph;
  const memo = new Map<Node, Node>();
  for (const n of topoSort(p.graph)) {
    const leafTwin = map.get(n);
    memo.set(
      n,
      leafTwin ??
        (n.inputs.length === 0
          ? n
          : rebuild(
              n,
              n.inputs.map((i) => memo.get(i)!),
            )),
    );
  }
  return p.graph.map((n) => memo.get(n)!);
}

/** What a specialisation does not run as generated code (the fallback rule). */
export interface Specialised {
  readonly fallbacks: readonly Fallback[];
  /** Interpreted because shapes do not fit: the interpreter's error comes first. */
  readonly invalid: boolean;
}

/** One function's program on a target: the shared optimized program and this function's own leaves. */
export interface LinkedProgram<S> {
  readonly program: OptimizedProgram<S>;
  /** This function's variables by slot, and their cells. */
  readonly variables: readonly Node[];
  readonly cells: readonly VariableCell[];
  /** The optimized graph over this function's own placeholders and variables. */
  graph(): readonly Node[];
  /** The specialisation for these input shapes (cached). */
  spec(shapes: Shapes): S;
  /** The specialisation a call with these input shapes runs: the fallback rule applied unless it is invalid. */
  runnable(shapes: Shapes): S;
  /** The reference interpreter on the optimized graph (shapes known only at run time); then the rule for an invalid one. */
  interpret(values: readonly NDArray[], learningPhase: number, s: S): NDArray[];
}

/**
 * The skeleton every compiling target's executor stands on: the request's passes run once per
 * graph structure (the pass list is part of the key: a function compiled with other passes never
 * shares its code), specialisations made by `target.specialize` once per input shapes. The
 * executor is given back once made, so that the program's specialisations go when the last
 * function using them is collected.
 */
function sameShapes(a: Shapes, b: Shapes): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const p = a[i]!,
      q = b[i]!;
    if (p.length !== q.length) return false;
    for (let j = 0; j < p.length; j++) if (p[j] !== q[j]) return false;
  }
  return true;
}

export function link<S extends Specialised, E extends Executor>(
  target: Target<S>,
  device: string,
  cache: ProgramCache<OptimizedProgram<S>, S>,
  req: TargetRequest,
  executor: (linked: LinkedProgram<S>) => E,
): E {
  const passes = req.optimized ?? target.passes(req.optimizer, req.passes);
  const variant = target.variant?.() ?? '';
  // checking mode runs its kernels more than once per call: its results stay fresh
  const borrow = req.borrow === true && req.mode !== 'debug' && req.optimized === undefined;
  const how = `${req.optimized !== undefined ? 'optimized' : ''}${req.mode === 'debug' ? '|debug' : ''}${req.profile === true ? '|profile' : ''}${req.tune !== undefined ? `|tune ${req.tune.beam}` : ''}${borrow ? `|borrow ${req.nOut}` : ''}`;
  const { key, variables } = structuralKey(
    req.inputs,
    req.targets,
    `${req.optimizer}[${pipelineKey(passes)}]{${variant}}${how}`,
    device,
  );
  // Checking mode: the passes' replacements are compared on the reference interpreter (src/passes/check.ts).
  const checked = <T>(f: () => T): T => (req.mode === 'debug' ? withChecking(new ReferenceChecker(), f) : f());
  const program = cache.program(key, () => {
    const optimized = (): readonly Node[] => {
      const t0 = performance.now();
      const graph = req.optimized !== undefined ? req.targets : checked(() => optimize(passes, req.targets));
      compileTimes.passes = performance.now() - t0;
      return graph;
    };
    compileStats.programs++;
    const made = {
      key,
      passes,
      variables,
      variant,
      specs: new Map(),
      ...(req.profile === true ? { profile: true } : {}),
      ...(req.optimized !== undefined ? { checking: true } : {}),
      ...(req.tune !== undefined ? { tune: req.tune } : {}),
      ...(borrow ? { borrow: req.nOut } : {}),
      inputSlot: new Map(req.inputs.map((n, i) => [n, i])),
      variableSlot: new Map(variables.map((v, i) => [v, i])),
    };
    if (req.optimized !== undefined || req.mode === 'debug' || target.deferPasses?.() !== true)
      return { ...made, graph: optimized() };
    // The passes run when the graph is first read (the disk cache's hits never read it).
    compileTimes.passes = 0;
    let graph: readonly Node[] | undefined;
    return Object.defineProperty(made, 'graph', {
      get: () => (graph ??= optimized()),
      enumerable: true,
    }) as typeof made & { readonly graph: readonly Node[] };
  });
  const cells = variables.map((v) => v.cell!);
  const warned = { warned: false };
  let own: readonly Node[] | undefined;
  // A call with the shapes of this function's previous one, nothing else cached or used since (the
  // cache's version unchanged), runs that specialisation again without building its key.
  let last: { readonly shapes: Shapes; readonly spec: S; readonly version: number } | undefined;
  const spec = (shapes: Shapes): S => {
    if (last !== undefined && last.version === cache.version && sameShapes(last.shapes, shapes)) return last.spec;
    const s = cache.spec(program, shapesKey(shapes), () => {
      compileStats.specializations++;
      return checked(() => target.specialize(program, shapes));
    });
    last = { shapes: shapes.map((sh) => [...sh]), spec: s, version: cache.version };
    return s;
  };
  const e = executor({
    program,
    variables,
    cells,
    graph: () => (own ??= withLeaves(program, req.inputs, variables)),
    spec,
    runnable(shapes) {
      const s = spec(shapes);
      // Shapes that do not fit: the interpreter's error says why; the rule applies only if it runs.
      if (!s.invalid) checkFallbacks(req.name, s.fallbacks, req.fallback, warned);
      return s;
    },
    interpret(values, learningPhase, s) {
      const feeds = new Map<Node, NDArray>();
      for (const [n, i] of program.inputSlot) feeds.set(n, values[i]!);
      program.variables.forEach((v, i) => feeds.set(v, cells[i]!.value));
      const r = evaluate(program.graph, { feeds, learningPhase }).map((v) => v.clone()); // fresh, as compiled results are
      if (s.invalid) checkFallbacks(req.name, s.fallbacks, req.fallback, warned);
      return r;
    },
  });
  cache.hold(e, program);
  return e;
}
