// The compiler behind K.function for `fast_run` and `fast_compile` on the cpu: passes once per
// graph structure, then lowering, buffer planning and JavaScript generation once per set of
// input shapes (the target skeleton, src/runtime/target.ts). Programs are cached by structural key
// (the graph modulo the identity of its placeholders and variables), and inside each program,
// specialisations by input shapes. A rebuilt graph (new placeholders, new variables, same
// structure) reuses everything; a new batch size reuses the optimized graph and redoes only the
// shape-specialised source.
import { scheduleChooser } from '../tune.js';
import type { Node } from '../../ir/node.js';
import type { NDArray } from '../../ir/ndarray.js';
import { NDArray as ND, formatShape } from '../../ir/ndarray.js';
import { evalContext, nextEpoch } from '../../ir/interpret.js';
import type { DType, TypedArray } from '../../ir/dtype.js';
import { DynamicShapeError } from '../../codegen/lower/lower.js';
import { lowerProgram as lowerSpecialisation, prepare } from '../../codegen/pipeline.js';
import type { Program } from '../../codegen/kernel/ir.js';
import { bindModule, clearKernelCaches, generateModule, profileRows, type RunFn } from '../../codegen/cpu/module.js';
import { matmulPrecision, packArena, tile32, type KeptSlot } from '../../codegen/cpu/wasm-kernel.js';
import { IGEMM_TILE } from '../../codegen/cpu/wasm/igemm.js';
import { CPU_TILE, cpuTargetFusion } from './fusion.js';
import { splitsProducts } from '../../codegen/cpu/matmul.js';
import { startWorkers } from '../../codegen/cpu/threads.js';
import { SlotStore } from '../../codegen/cpu/slot-store.js';
import { releaseRows } from '../../codegen/cpu/small-matmul.js';
import type { LowerSpec } from '../../codegen/lower/lower.js';
import { interpreterExecutor, type Executor } from '../function.js';
import { ProgramCache } from '../program-cache.js';
import { diskKey, loadSpecialisation, storeSpecialisation } from './compile-disk.js';
import { diskCacheOn } from '../disk-cache.js';
import { externFallbacks } from '../fallback.js';
import { debugEnabled } from '../debug.js';
import { bodyOptimizer, compileTimes, debugSink, link, passesFor } from '../target.js';
import type { OptimizedProgram, Shapes, Specialised, Target, TargetRequest } from '../target.js';
import { platform } from '#platform';
import type { TimedProgram } from '../profile.js';

export { compileStats, compileTimes, setDebugSink } from '../target.js';

/**
 * The matmul tiles of a cpu program, named by its variant (cpuTarget.variant, part of the cache
 * key): "f64" sums every product in float64; under matmul precision "float32" float32 products sum
 * in float32 with the float32 tile (wasm-kernel.ts' tile32), and float32 convolutions through an
 * indirection buffer with the igemm tile (codegen/cpu/wasm/igemm.ts).
 */
function tileOf(variant: string): LowerSpec['tile'] {
  return variant === 'f64' ? CPU_TILE : { ...CPU_TILE, f32: tile32(), igemm: IGEMM_TILE };
}

function debugFlags(): Set<string> {
  return new Set(
    (platform.env('THEANINE_DEBUG') ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== ''),
  );
}

interface Specialization extends Specialised {
  readonly run: RunFn | undefined; // undefined: shapes only known at run time, interpreted
  readonly source: string;
  readonly shapes: Shapes;
  readonly dtypes: readonly DType[];
  /** Bytes of buffers it holds once run (0 when interpreted). */
  readonly bytes: number;
  /** Whether it has run once (its first run is timed: compileTimes.firstRun). */
  ran?: boolean;
  /** Gives back its packs kept in the packing arena (when the cache drops it). */
  readonly release?: () => void;
  /** Lets its buffers and kept packs go, keeping its code (the byte budget; program-cache.ts). */
  readonly shed?: () => void;
  /** A profiled program's steps and their timer (K.function's `profile`; src/runtime/profile.ts). */
  readonly timed?: TimedProgram;
}

/** The THEANINE_DEBUG=passes line of a new specialisation's phases (compileTimes). */
function formatCompileTimes(shapes: Shapes): string {
  const t = compileTimes;
  const ms = (x: number) => `${x.toFixed(1)} ms`;
  return `[theanine compile] specialisation for ${shapes.map((sh) => formatShape(sh)).join(', ')}: scan bodies' passes ${ms(t.bodyPasses)}, lowering ${ms(t.lower)}, buffer plan ${ms(t.plan)}, code generation ${ms(t.render)}, first run ${ms(t.firstRun)}`;
}

type CompiledProgram = OptimizedProgram<Specialization>;

/**
 * Programs by structural key, specialisations by shapes. The buffers specialisations hold are
 * bounded in bytes over all programs (a bound on entries let 300 dropped small functions keep
 * 86.8 MB): past the budget the least recently used let their buffers go and keep their code
 * (program-cache.ts' shape policy), so a shape coming back allocates again but never recompiles
 * while its specialisation is kept (MAX_SHED_SPECIALIZATIONS per program).
 */
export const SPEC_BUDGET_BYTES = 64 * 2 ** 20;
const programs = new ProgramCache<CompiledProgram, Specialization>({
  bytes: (s) => s.bytes,
  budgetBytes: SPEC_BUDGET_BYTES,
  onDropSpec: (_p, _k, s) => s.release?.(),
  shed: (s) => s.shed?.(),
});

/** Specialisations cached, and how many times the byte budget let one's buffers go (tests). */
export function compileCacheStats(): { specs: number; shed: number } {
  return { specs: programs.specCount(), shed: programs.shedCount };
}

/** Bytes held by cached specialisations (the leak tests read it). */
export function compileCacheBytes(): number {
  return programs.heldBytes();
}

export function clearCompileCache(): void {
  programs.clear();
  stores = new WeakMap();
  keptPacks = new WeakMap();
  // clear_session returns the process to its baseline: compiled kernels and drivers, and the matmul arena, go too.
  clearKernelCaches();
  packArena.release();
  releaseRows();
}

function lowerProgram(p: CompiledProgram, shapes: Shapes): Program {
  return lowerSpecialisation({
    targets: p.graph,
    inputSlot: p.inputSlot,
    variableSlot: p.variableSlot,
    inputShapes: shapes,
    tile: tileOf(p.variant),
    optimizeBody: bodyOptimizer(p.passes),
  });
}

/** The planned arrays a program's shape specialisations share (cpu/slot-store.ts), and their kept weight packs (cpu/module.ts keptPacks). */
let stores = new WeakMap<CompiledProgram, SlotStore>();
let keptPacks = new WeakMap<CompiledProgram, Map<string, KeptSlot>>();
function keptPacksOf(p: CompiledProgram): Map<string, KeptSlot> {
  let m = keptPacks.get(p);
  if (m === undefined) keptPacks.set(p, (m = new Map()));
  return m;
}
/** The last made, for storeBytes (tests). */
let lastStore: WeakRef<SlotStore> | undefined;
function storeOf(p: CompiledProgram): SlotStore {
  let s = stores.get(p);
  if (s === undefined) {
    stores.set(p, (s = new SlotStore()));
    lastStore = new WeakRef(s);
  }
  return s;
}

/** Bytes the planned arrays of the most recently made program's shapes hold (tests). */
export function storeBytes(): number {
  return lastStore?.deref()?.bytes ?? 0;
}

/** The specialisation stored in the compile cache on disk (compile-disk.ts) under `key`, bound; undefined on a miss. */
function fromDisk(key: string): Specialization | undefined {
  const t0 = performance.now();
  const hit = loadSpecialisation(key);
  if (hit === undefined) return undefined;
  const mod = hit.module;
  Object.assign(compileTimes, { bodyPasses: 0, lower: 0, plan: 0, render: performance.now() - t0, firstRun: 0 });
  if (debugFlags().has('source')) debugSink(`[theanine source]\n${mod.source}\n`);
  return {
    run: mod.run,
    fallbacks: [],
    invalid: false,
    source: mod.source,
    shapes: hit.shapes,
    dtypes: hit.dtypes,
    bytes: mod.bytes,
    release: mod.release,
    shed: mod.shed,
  };
}

function specialize(p: CompiledProgram, shapes: Shapes): Specialization {
  const flags = debugFlags();
  // The disk cache keeps specialisations that are not timed (a profile's steps come from the program).
  const key = flags.has('kernels') || p.profile === true ? undefined : diskKey(p.key, shapes);
  const cached = key === undefined ? undefined : fromDisk(key);
  if (cached !== undefined) return cached;
  const dtypes = p.graph.map((n) => n.dtype);
  try {
    compileTimes.bodyPasses = 0;
    const t0 = performance.now();
    const prog = lowerProgram(p, shapes);
    const pool = splitsProducts(prog);
    if (pool) startWorkers();
    const t1 = performance.now();
    const schedule = p.tune !== undefined ? scheduleChooser(p.tune) : undefined;
    const prepared = prepare(prog, { wasm: true }, schedule);
    const t2 = performance.now();
    const gen = generateModule(prepared, {
      profile: flags.has('kernels') || p.profile === true,
      ...(schedule !== undefined ? { schedule } : {}),
      ...(p.borrow !== undefined ? { borrow: p.borrow } : {}),
    });
    const mod = bindModule(gen.image, gen.live, { store: storeOf(p), keptPacks: { map: keptPacksOf(p), prefix: '' } });
    Object.assign(compileTimes, {
      lower: t1 - t0 - compileTimes.bodyPasses,
      plan: t2 - t1,
      render: performance.now() - t2,
      firstRun: 0,
    });
    if (key !== undefined)
      storeSpecialisation(
        key,
        gen,
        prog.targets.map((t) => t.shape),
        dtypes,
        pool,
      );
    if (flags.has('source')) debugSink(`[theanine source]\n${mod.source}\n`);
    const prof = mod.profile;
    const run: RunFn =
      prof === undefined || p.profile === true
        ? mod.run
        : (ins, cells, phase, ctx) => {
            profileRows(prof, '', true);
            const out = mod.run(ins, cells, phase, ctx);
            debugSink(
              profileRows(prof)
                .map(([l, ms]) => `[theanine kernels] ${ms.toFixed(3).padStart(9)} ms  ${l}`)
                .join('\n') + '\n',
            );
            return out;
          };
    return {
      run,
      fallbacks: externFallbacks(prog),
      invalid: false,
      source: mod.source,
      shapes: prog.targets.map((t) => t.shape),
      dtypes,
      bytes: mod.bytes,
      release: mod.release,
      shed: mod.shed,
      ...(p.profile === true && prof !== undefined ? { timed: { program: prog, steps: prof, bytes: mod.bytes } } : {}),
    };
  } catch (e) {
    if (!(e instanceof DynamicShapeError)) throw e;
    const reason = e.message.slice(e.op.length + 2).replace(/\n/g, ' ');
    return {
      run: undefined,
      fallbacks: [{ op: e.op, reason, whole: true }],
      invalid: e.invalid,
      shapes: [],
      dtypes,
      bytes: 0,
      source: `// not compiled: ${e.message.replace(/\n/g, ' ')}; this function runs the reference interpreter on its optimized graph`,
    };
  }
}

/** Where print_tensor writes in compiled code. */
const printLine = (m: string): void => console.log(m);

/** An Executor running compiled JavaScript; compiling happens here (passes) and at first call per shape. */
function compiledExecutor(
  req: TargetRequest,
): Executor & { source(): string; lowered: NonNullable<Executor['lowered']> } {
  let last: Specialization | undefined;
  let lastShapes: Shapes | undefined;
  return link(cpuTarget, 'cpu', programs, req, (linked) => ({
    /** The optimized graph over this function's own placeholders and variables (the program may come from a twin). */
    get graph(): readonly Node[] {
      return linked.graph();
    },
    freshResults: true,
    run(values: readonly NDArray[], learningPhase: number): NDArray[] {
      // plain loops, no closures: a call makes only what it returns (and its shape and data lists)
      const n = values.length;
      const shapes = new Array<readonly number[]>(n),
        data = new Array<TypedArray>(n);
      for (let i = 0; i < n; i++) {
        shapes[i] = values[i]!.shape;
        data[i] = values[i]!.data;
      }
      const s = linked.runnable(shapes);
      last = s;
      lastShapes = shapes;
      if (s.run === undefined) return linked.interpret(values, learningPhase, s);
      const first = !s.ran;
      const t0 = first ? performance.now() : 0;
      const out = s.run(
        data,
        linked.cells,
        learningPhase,
        evalContext({ learningPhase, epoch: nextEpoch(), print: printLine }),
      );
      if (first) {
        s.ran = true;
        compileTimes.firstRun = performance.now() - t0;
        if (debugEnabled('passes')) debugSink(`${formatCompileTimes(shapes)}\n`);
      }
      const results = new Array<NDArray>(out.length);
      for (let i = 0; i < out.length; i++) results[i] = new ND(out[i]!, s.shapes[i]!, s.dtypes[i]!);
      return results;
    },
    /** The program for these input shapes, over this function's variables (what f.exportModule renders). */
    lowered(shapes: Shapes) {
      return { program: lowerProgram(linked.program, shapes), variables: linked.variables };
    },
    lastInputShapes: () => lastShapes,
    lastTimed: () => last?.timed,
    source(): string {
      if (last !== undefined) return last.source;
      const shapes = req.inputs.map((n) => n.shape);
      if (shapes.every((s) => s.every((d) => d !== null))) return linked.spec(shapes as number[][]).source;
      return `// not specialised yet: input shapes ${shapes.map((s) => formatShape(s)).join(', ')} have unknown dims; call the function once, then ask again`;
    },
  }));
}

/** The cpu: the optimizer's passes with the cpu's fusion, JavaScript (and WebAssembly) kernels per input shapes; `none` interprets. */
export const cpuTarget: Target<Specialization> = {
  passes: passesFor(cpuTargetFusion),
  // The matmul precision configured when a function is made (JAX's default_matmul_precision is
  // likewise read when a function is traced): a function made under another one never shares code.
  variant: () => {
    if (matmulPrecision() !== 'float32') return 'f64';
    const t = tile32();
    return `f32:${t.mr}x${t.nr}`;
  },
  specialize,
  deferPasses: diskCacheOn,
  executor: (req) => (req.optimizer === 'none' ? interpreterExecutor(req.inputs, req.targets) : compiledExecutor(req)),
  clear: clearCompileCache,
};
