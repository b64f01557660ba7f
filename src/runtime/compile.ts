// The compiler behind K.function for `fast_run` and `fast_compile` on the cpu: passes once per
// graph structure, then lowering, buffer planning and JavaScript generation once per set of
// input shapes. Two caches: programs by structural key (the graph modulo the identity of its
// placeholders and variables), and inside each program, specialisations by input shapes. A
// rebuilt graph (new placeholders, new variables, same structure) reuses everything; a new
// batch size reuses the optimized graph and redoes only the shape-specialised source.
import { provenanceKey } from '../ir/provenance.js';
import { attrsKey, type Node, type VariableCell } from '../ir/node.js';
import type { NDArray } from '../ir/ndarray.js';
import { NDArray as ND, formatShape } from '../ir/ndarray.js';
import { topoSort } from '../ir/graph.js';
import { evaluate, nextEpoch } from '../ir/interpret.js';
import type { DType, TypedArray } from '../ir/dtype.js';
import { formatPassReport, runPasses, type PassReport } from '../passes/pass.js';
import type { Graph } from '../ir/graph.js';
import type { OptimizerLevel } from '../passes/pipeline.js';
import type { Pass } from '../passes/pass.js';
import { pipelineKey, resolvePipeline, type PassSelection } from '../passes/user.js';
import { fusedLabel } from '../passes/fusion.js';
import { rebuild } from '../passes/rewrite.js';
import { classify, matmulPrologue, shapeOnly } from '../codegen/templates.js';
import { DynamicShapeError, lower } from '../codegen/lower.js';
import { planBuffers } from '../codegen/plan.js';
import type { Program } from '../codegen/kernel.js';
import { buildModule, clearKernelCaches, profileRows, type RunFn } from '../codegen/cpu/module.js';
import { matmulPrecision, packArena, tile32 } from '../codegen/cpu/wasm-kernel.js';
import type { LowerSpec } from '../codegen/lower.js';
import type { Executor } from './function.js';
import { ProgramCache, shapesKey } from './program-cache.js';
import type { ScanBody } from '../ir/scanbody.js';
import { checkFallbacks, externFallbacks, fallbackPolicy, type Fallback, type FallbackPolicy } from './fallback.js';
import { platform } from '#platform';

/** Register tile of the cpu matmul micro-kernel summing in float64 (measured: see bench/README.md). */
export const CPU_TILE = { mr: 4, nr: 4 } as const;

/**
 * The tiles a cpu function is lowered with, under the matmul precision configured when it is
 * made (JAX's default_matmul_precision is likewise read when a function is traced): "float32"
 * adds the float32 tile, so float32 products sum in float32 (wasm-kernel.ts' tile32).
 */
function cpuTile(): LowerSpec['tile'] {
  return matmulPrecision() === 'float32' ? { ...CPU_TILE, f32: tile32() } : CPU_TILE;
}

export const cpuTarget = { classify, shapeOnly, matmulPrologue };

/** Where THEANINE_DEBUG output goes (tests replace it). */
let debugSink: (text: string) => void = (t) => platform.writeStderr(t);
export function setDebugSink(sink: ((text: string) => void) | undefined): void {
  debugSink = sink ?? ((t) => platform.writeStderr(t));
}
/** THEANINE_DEBUG=passes: each pass's report and graph, to the debug sink. */
function passPrinter(what?: string): ((r: PassReport, g: Graph) => void) | undefined {
  if (!debugFlags().has('passes')) return undefined;
  return (r, g) => debugSink(formatPassReport(what === undefined ? r : { ...r, name: `${what}: ${r.name}` }, g, { label: fusedLabel }));
}

function debugFlags(): Set<string> {
  return new Set((platform.env('THEANINE_DEBUG') ?? '').split(',').map((s) => s.trim()).filter((s) => s !== ''));
}

interface Specialization {
  readonly run: RunFn | undefined; // undefined: shapes only known at run time, interpreted
  /** What does not run as generated code (the fallback rule, src/runtime/fallback.ts). */
  readonly fallbacks: readonly Fallback[];
  /** Interpreted because shapes do not fit: the interpreter's error comes first. */
  readonly invalid: boolean;
  readonly source: string;
  readonly shapes: readonly (readonly number[])[];
  readonly dtypes: readonly DType[];
  /** Bytes of buffers it holds once run (0 when interpreted). */
  readonly bytes: number;
  /** Whether it has run once (its first run is timed: compileTimes.firstRun). */
  ran?: boolean;
}

/** The THEANINE_DEBUG=passes line of a new specialisation's phases (compileTimes). */
function formatCompileTimes(shapes: readonly (readonly number[])[]): string {
  const t = compileTimes;
  const ms = (x: number) => `${x.toFixed(1)} ms`;
  return `[theanine compile] specialisation for ${shapes.map((sh) => formatShape(sh)).join(', ')}: scan bodies' passes ${ms(t.bodyPasses)}, lowering ${ms(t.lower)}, buffer plan ${ms(t.plan)}, code generation ${ms(t.render)}, first run ${ms(t.firstRun)}`;
}

/** What one graph structure compiles to, independent of shapes and of which leaves it was built from. */
interface CompiledProgram {
  /** The passes it was optimized with (Scan bodies go through the same ones). */
  readonly passes: readonly Pass[];
  readonly graph: readonly Node[];
  readonly inputSlot: ReadonlyMap<Node, number>;
  readonly variableSlot: ReadonlyMap<Node, number>;
  /** Variables of the graph it was compiled from, by slot (for the interpreted fallback). */
  readonly variables: readonly Node[];
  readonly specs: Map<string, Specialization>;
  /** The matmul tiles it is lowered with (cpuTile when it was compiled). */
  readonly tile: LowerSpec['tile'];
}

/** Programs by structural key, specialisations by shapes (each dropped one leaves the byte budget below). */
const programs = new ProgramCache<CompiledProgram, Specialization>((p, key, s) => dropSpec(s, p, key));
export const compileStats = { programs: 0, specializations: 0 };
/**
 * Milliseconds spent in each compile phase by the latest compile (the bench reports them;
 * THEANINE_DEBUG=passes prints them): the graph's passes (at K.function), then per shape
 * specialisation the Scan bodies' passes, lowering to kernels (bodies' passes excluded), buffer
 * planning, code generation (JavaScript source, `new Function`) and the first run of the new code
 * (where V8 compiles it).
 */
export const compileTimes = { passes: 0, bodyPasses: 0, lower: 0, plan: 0, render: 0, firstRun: 0 };

/**
 * Specialisations of every program, least recently used first, bounded in bytes of the buffers
 * they hold (a bound on entries let 300 dropped small functions keep 86.8 MB).
 * An evicted specialisation is compiled again if its shapes come back; functions holding it
 * (their latest call's) keep it alive only as long as they live.
 */
export const SPEC_BUDGET_BYTES = 64 * 2 ** 20;
const specLru = new Map<Specialization, { program: CompiledProgram; key: string }>();
let specBytes = 0;

function touchSpec(p: CompiledProgram, key: string, s: Specialization): void {
  if (specLru.delete(s)) specLru.set(s, { program: p, key });
  else { specLru.set(s, { program: p, key }); specBytes += s.bytes; }
  for (const [old, at] of specLru) {
    if (specBytes <= SPEC_BUDGET_BYTES || old === s) break;
    dropSpec(old, at.program, at.key);
  }
}

function dropSpec(s: Specialization, p: CompiledProgram, key: string): void {
  if (!specLru.delete(s)) return;
  specBytes -= s.bytes;
  if (p.specs.get(key) === s) p.specs.delete(key);
}

/** Bytes held by cached specialisations (the leak tests read it). */
export function compileCacheBytes(): number {
  return specBytes;
}

/**
 * Functions nobody holds release their program's specialisations once no live function uses
 * that program (a FinalizationRegistry; the optimized graph stays cached by count).
 */
const liveFunctions = new Map<CompiledProgram, number>();
const collected = new FinalizationRegistry<CompiledProgram>((p) => {
  const n = (liveFunctions.get(p) ?? 1) - 1;
  if (n > 0) { liveFunctions.set(p, n); return; }
  liveFunctions.delete(p);
  for (const [key, s] of [...p.specs]) dropSpec(s, p, key);
});

export function clearCompileCache(): void {
  programs.clear();
  specLru.clear();
  specBytes = 0;
  liveFunctions.clear();
  // clear_session returns the process to its baseline: compiled kernels and drivers, and the matmul arena, go too.
  clearKernelCaches();
  packArena.release();
}

/**
 * The structural key of a function: every node by op, attrs, type and input positions; placeholders by
 * input position, variables by order of first appearance (their values are read at call time, so
 * two graphs over different variables of the same types share code). Also returns those variables.
 */
export function structuralKey(inputs: readonly Node[], targets: readonly Node[], level: string, device: string): { key: string; variables: Node[] } {
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
    else if (n.op === 'variable') { s = `var${variables.length}`; variables.push(n); }
    else s = `${n.op}(${n.inputs.map((i) => local.get(i)).join(',')})${attrsKey(n.attrs)}`;
    // Provenance is part of the key: the program's kernel comments and errors name the user's lines.
    parts.push(`${s}:${n.dtype}${formatShape(n.shape)}${n.provenance.length > 0 ? `@${provenanceKey(n.provenance)}` : ''}`);
  }
  parts.push(targets.map((t) => local.get(t)).join(','));
  return { key: parts.join(';'), variables };
}

function compileProgram(inputs: readonly Node[], targets: readonly Node[], passes: readonly Pass[], variables: readonly Node[], tile: LowerSpec['tile']): CompiledProgram {
  const onPass = passPrinter();
  const t0 = performance.now();
  const g = runPasses(passes, { outputs: targets }, onPass === undefined ? {} : { onPass });
  compileTimes.passes = performance.now() - t0;
  const inputSlot = new Map<Node, number>();
  inputs.forEach((n, i) => inputSlot.set(n, i));
  const variableSlot = new Map<Node, number>();
  variables.forEach((v, i) => variableSlot.set(v, i));
  compileStats.programs++;
  return { passes, graph: g.outputs, inputSlot, variableSlot, variables, specs: new Map(), tile };
}

/** Scan bodies through the same passes as the graph around them (cached per body and pass list; every device's compiler). */
const optimizedBodies = new WeakMap<ScanBody, Map<string, readonly Node[]>>();
export function bodyOptimizer(passes: readonly Pass[]): (b: ScanBody) => readonly Node[] {
  const key = pipelineKey(passes);
  return (b) => {
    let byPasses = optimizedBodies.get(b);
    if (byPasses === undefined) { byPasses = new Map(); optimizedBodies.set(b, byPasses); }
    let r = byPasses.get(key);
    if (r === undefined) {
      const onPass = passPrinter('scan body');
      const t0 = performance.now();
      r = runPasses(passes, { outputs: b.results }, onPass === undefined ? {} : { onPass }).outputs;
      compileTimes.bodyPasses += performance.now() - t0;
      byPasses.set(key, r);
    }
    return r;
  };
}

function lowerProgram(p: CompiledProgram, shapes: readonly (readonly number[])[]): Program {
  return lower({
    targets: p.graph, inputSlot: p.inputSlot, variableSlot: p.variableSlot, inputShapes: shapes, tile: p.tile, optimizeBody: bodyOptimizer(p.passes),
  });
}

function specialize(p: CompiledProgram, shapes: readonly (readonly number[])[]): Specialization {
  compileStats.specializations++;
  const dtypes = p.graph.map((n) => n.dtype);
  try {
    compileTimes.bodyPasses = 0;
    const t0 = performance.now();
    const prog = lowerProgram(p, shapes);
    const t1 = performance.now();
    const flags = debugFlags();
    const plan = planBuffers(prog);
    const t2 = performance.now();
    const mod = buildModule(prog, plan, { profile: flags.has('kernels') });
    Object.assign(compileTimes, { lower: t1 - t0 - compileTimes.bodyPasses, plan: t2 - t1, render: performance.now() - t2, firstRun: 0 });
    if (flags.has('source')) debugSink(`[theanine source]\n${mod.source}\n`);
    const prof = mod.profile;
    const run: RunFn = prof === undefined ? mod.run : (ins, cells, phase, ctx) => {
      profileRows(prof, '', true);
      const out = mod.run(ins, cells, phase, ctx);
      debugSink(profileRows(prof).map(([l, ms]) => `[theanine kernels] ${ms.toFixed(3).padStart(9)} ms  ${l}`).join('\n') + '\n');
      return out;
    };
    return { run, fallbacks: externFallbacks(prog), invalid: false, source: mod.source, shapes: prog.targets.map((t) => t.shape), dtypes, bytes: mod.bytes };
  } catch (e) {
    if (!(e instanceof DynamicShapeError)) throw e;
    const reason = e.message.slice(e.op.length + 2).replace(/\n/g, ' ');
    return {
      run: undefined, fallbacks: [{ op: e.op, reason, whole: true }], invalid: e.invalid, shapes: [], dtypes, bytes: 0,
      source: `// not compiled: ${e.message.replace(/\n/g, ' ')}; this function runs the reference interpreter on its optimized graph`,
    };
  }
}

/** The program's optimized graph rebuilt on another graph's leaves (same structure, so same slots). */
function withLeaves(p: CompiledProgram, inputs: readonly Node[], variables: readonly Node[]): readonly Node[] {
  const map = new Map<Node, Node>();
  for (const [n, i] of p.inputSlot) map.set(n, inputs[i]!);
  for (const [n, i] of p.variableSlot) map.set(n, variables[i]!);
  if ([...map].every(([a, b]) => a === b)) return p.graph;
  const memo = new Map<Node, Node>();
  for (const n of topoSort(p.graph)) {
    const leafTwin = map.get(n);
    memo.set(n, leafTwin ?? (n.inputs.length === 0 ? n : rebuild(n, n.inputs.map((i) => memo.get(i)!))));
  }
  return p.graph.map((n) => memo.get(n)!);
}

export interface CompileRequest {
  readonly inputs: readonly Node[];
  readonly targets: readonly Node[];
  readonly level: OptimizerLevel;
  readonly device: 'cpu';
  /** User passes added, passes removed (src/passes/user.ts). */
  readonly passes?: PassSelection;
  /** The function's name and fallback rule (src/runtime/fallback.ts). */
  readonly name?: string;
  readonly fallback?: FallbackPolicy;
}

/** An Executor running compiled JavaScript; compiling happens here (passes) and at first call per shape. */
export function compiledExecutor(req: CompileRequest): Executor & { source(): string; lowered: NonNullable<Executor['lowered']> } {
  // The pass list is part of the key: a function compiled with other passes never shares its code.
  const passes = resolvePipeline(req.level, cpuTarget, req.passes);
  // The matmul tiles are part of the key: a function made under another matmul precision never shares its code.
  const tile = cpuTile();
  const tiles = tile.f32 === undefined ? 'f64' : `f32:${tile.f32.mr}x${tile.f32.nr}`;
  const { key, variables } = structuralKey(req.inputs, req.targets, `${req.level}[${pipelineKey(passes)}]{${tiles}}`, req.device);
  const prog = programs.program(key, () => compileProgram(req.inputs, req.targets, passes, variables, tile));
  const cells: VariableCell[] = variables.map((v) => v.cell!);
  let last: Specialization | undefined;
  let lastShapes: (readonly number[])[] | undefined;
  let ownGraph: readonly Node[] | undefined;
  const policy = req.fallback ?? fallbackPolicy('function', undefined);
  const warned = { warned: false };

  const specFor = (shapes: readonly (readonly number[])[]): Specialization => {
    const sk = shapesKey(shapes);
    // Each specialisation holds its buffers: the cache keeps the most recent few shape sets per program.
    const s = programs.spec(prog, sk, () => specialize(prog, shapes));
    touchSpec(prog, sk, s);
    return s;
  };

  const executor = {
    /** The optimized graph over this function's own placeholders and variables (the program may come from a twin). */
    get graph(): readonly Node[] {
      return ownGraph ??= withLeaves(prog, req.inputs, variables);
    },
    freshResults: true,
    run(values: readonly NDArray[], learningPhase: number): NDArray[] {
      const s = specFor(values.map((v) => v.shape));
      last = s;
      lastShapes = values.map((v) => v.shape);
      // Shapes that do not fit: the interpreter's error says why; the rule applies only if it runs.
      if (!s.invalid) checkFallbacks(req.name ?? 'function', s.fallbacks, policy, warned);
      if (s.run === undefined) {
        const feeds = new Map<Node, NDArray>();
        for (const [n, i] of prog.inputSlot) feeds.set(n, values[i]!);
        prog.variables.forEach((v, i) => feeds.set(v, cells[i]!.value));
        const r = evaluate(prog.graph, { feeds, learningPhase }).map((v) => v.clone()); // fresh, as compiled results are
        if (s.invalid) checkFallbacks(req.name ?? 'function', s.fallbacks, policy, warned);
        return r;
      }
      const first = !s.ran;
      const t0 = first ? performance.now() : 0;
      const out = s.run(values.map((v) => v.data), cells, learningPhase, { learningPhase, epoch: nextEpoch(), print: (m) => console.log(m) });
      if (first) {
        s.ran = true;
        compileTimes.firstRun = performance.now() - t0;
        if (debugFlags().has('passes')) debugSink(`${formatCompileTimes(values.map((v) => v.shape))}\n`);
      }
      return out.map((a: TypedArray, i) => new ND(a, s.shapes[i]!, s.dtypes[i]!));
    },
    /** The program for these input shapes, over this function's variables (what f.exportModule renders). */
    lowered(shapes: readonly (readonly number[])[]) {
      return { program: lowerProgram(prog, shapes), variables };
    },
    lastInputShapes: () => lastShapes,
    source(): string {
      if (last !== undefined) return last.source;
      const shapes = req.inputs.map((n) => n.shape);
      if (shapes.every((s) => s.every((d) => d !== null))) return specFor(shapes as number[][]).source;
      return `// not specialised yet: input shapes ${shapes.map((s) => formatShape(s)).join(', ')} have unknown dims; call the function once, then ask again`;
    },
  };
  liveFunctions.set(prog, (liveFunctions.get(prog) ?? 0) + 1);
  collected.register(executor, prog);
  return executor;
}
