// The onnx backend's target: the function's optimized graph (all passes but fusion, as for the
// tensorflow backend) translated to an ONNX model with variables and the learning phase as
// inputs, run as an ONNX Runtime session. Programs are cached by the graph's structure (the
// target skeleton, src/runtime/target.ts), so a rebuilt graph (new placeholders, new variables,
// same structure) reuses its session. One model serves every input shape; an op whose ONNX form
// needs dims the graph leaves unknown gets a model per set of input shapes instead (the graph
// re-inferred with the concrete shapes): that is this target's specialisation.
import type { DType } from '../../ir/dtype.js';
import { NDArray } from '../../ir/ndarray.js';
import { fresh, type Node } from '../../ir/node.js';
import { topoSort } from '../../ir/graph.js';
import { formatValue } from '../../ir/ops/misc.js';
import { tensorType } from '../../ir/types.js';
import type { Executor } from '../function.js';
import type { FusionTarget } from '../../passes/fusion.js';
import { rebuild } from '../../passes/rewrite.js';
import { ProgramCache } from '../program-cache.js';
import { link, optimize, passesFor } from '../target.js';
import type { OptimizedProgram, Shapes, Specialised, Target, TargetRequest } from '../target.js';
import { DynamicShapeError, specializeShapes } from '../../codegen/lower/lower.js';
import { OnnxExportError } from './builder.js';
import { fromHalfBits } from '../../ir/half.js';
import { onnxData } from './dtypes.js';
import { OrtSession, type WireTensor } from './session.js';
import { ioDType, translate, type Translated } from './translate.js';
import { KernelTimer, PROFILE_NOTES, nodeInfo, type KernelTime, type StepInfo } from '../profile.js';
import { formatProvenance } from '../../ir/provenance.js';

interface OnnxExecutor extends Executor {
  /** The ONNX Runtime execution provider the function's sessions run on. */
  executionProvider(): string | undefined;
  /** The model the latest call ran (for tests and debugging). */
  readonly lastModel: () => Translated | undefined;
}

interface Compiled {
  readonly translated: Translated;
  readonly session: OrtSession;
  /** The variable slot of each variable input. */
  readonly variableSlots: readonly number[];
}

interface OnnxSpec extends Specialised {
  readonly compiled: Compiled;
}
type OnnxProgram = OptimizedProgram<OnnxSpec>;

const programs = new ProgramCache<OnnxProgram, OnnxSpec>();
/** A program's model for every shape, or 'per-shape' where its ONNX form needs known dims. */
const generic = new WeakMap<OnnxProgram, Compiled | 'per-shape'>();

const ORT_TYPE: Readonly<Record<DType, string>> = {
  float16: 'float32',
  float32: 'float32',
  float64: 'float64',
  int8: 'int8',
  int16: 'int16',
  int32: 'int32',
  int64: 'int64',
  uint8: 'uint8',
  bool: 'bool',
};

function wire(a: NDArray, dtype: DType): WireTensor {
  const io = ioDType(dtype, 'run');
  const v = a.dtype === io ? a : a.astype(io);
  return { type: ORT_TYPE[io], data: onnxData(v), dims: [...v.shape] };
}

function unwire(t: WireTensor, dtype: DType): NDArray {
  const d = t.data as unknown as ArrayLike<number | bigint>;
  const vals =
    t.type === 'int64'
      ? Float64Array.from(d as ArrayLike<bigint>, (x) => Number(x))
      : t.type === 'float16'
        ? Float64Array.from(d as ArrayLike<number>, fromHalfBits)
        : (d as ArrayLike<number>);
  return new NDArray(vals, [...t.dims], ioDType(dtype, 'run')).astype(dtype);
}

/** The graph with its placeholders replaced by ones of these concrete shapes, every type re-inferred. */
function withShapes(
  inputs: readonly Node[],
  targets: readonly Node[],
  shapes: Shapes,
): { inputs: Node[]; targets: Node[] } {
  const memo = new Map<Node, Node>();
  const ins = inputs.map((p, i) => {
    const shape = shapes[i]!;
    const q = p.op === 'placeholder' ? fresh('placeholder', { ...p.attrs, shape }, tensorType(p.dtype, shape)) : p;
    memo.set(p, q);
    return q;
  });
  for (const n of topoSort(targets)) {
    if (memo.has(n)) continue;
    memo.set(
      n,
      n.inputs.length === 0
        ? n
        : rebuild(
            n,
            n.inputs.map((i) => memo.get(i)!),
          ),
    );
  }
  return { inputs: ins, targets: targets.map((t) => memo.get(t)!) };
}

/**
 * Sized ops (sizes from tensors, src/ir/ops/sized.ts) replaced by their static ops, now that every
 * input shape is known (the compiler's specialisation, src/codegen/lower/lower.ts). A size that depends
 * on values stays: the translation then names the op.
 */
function resolveSizes(outs: readonly Node[]): readonly Node[] {
  try {
    const { subst } = specializeShapes(outs, () => undefined);
    return outs.map(subst);
  } catch (e) {
    if (e instanceof DynamicShapeError) return outs;
    throw e;
  }
}

function build(p: OnnxProgram, inputs: readonly Node[], targets: readonly Node[]): Compiled {
  const translated = translate({ inputs, targets, mode: 'run', caller: 'onnx backend' });
  const variableSlots = translated.variableInputs.map((v) => p.variableSlot.get(v.node)!);
  // checking mode's kernels run on ONNX Runtime's calling thread: a thread pool per session adds up
  const threads = p.checking === true ? 1 : undefined;
  return { translated, session: new OrtSession(translated.bytes, p.profile === true, threads), variableSlots };
}

function specialize(p: OnnxProgram, shapes: Shapes): OnnxSpec {
  const inputs = [...p.inputSlot.keys()];
  let g = generic.get(p);
  if (g === undefined) {
    try {
      g = build(p, inputs, p.graph);
    } catch (e) {
      if (!(e instanceof OnnxExportError) || !/needs (a )?known|unknown dims|is unknown/.test(e.message)) throw e;
      g = 'per-shape';
    }
    generic.set(p, g);
  }
  if (g !== 'per-shape') return { compiled: g, fallbacks: [], invalid: false };
  const sp = withShapes(inputs, p.graph, shapes);
  // the passes again: with every input dim known, shape arithmetic folds to constants
  return { compiled: build(p, sp.inputs, resolveSizes(optimize(p.passes, sp.targets))), fallbacks: [], invalid: false };
}

/** Every op stays one node: ONNX Runtime fuses on its own. */
const noFusion: FusionTarget = { classify: () => 'opaque' };

export const onnxTarget: Target<OnnxSpec> = {
  passes: passesFor(noFusion),
  specialize,
  executor: (req) => onnxExecutor(req),
  clear: () => programs.clear(),
  checkKernelsTogether: true, // a session per kernel would hold a thread pool per kernel
};

/**
 * A profiled session's kernel rows since the last take: ONNX Runtime's node runs grouped by the
 * graph node each ONNX node was emitted for (Translated.origins), summed; its calls are the runs
 * of its most run ONNX node. A node ONNX Runtime made itself (a fusion of its own, named after
 * one of ours where it keeps the name) is matched by the longest of our names its name holds,
 * else it is a row of its own, named by its op type.
 */
function kernelRows(c: Compiled): KernelTime[] {
  const origins = c.translated.origins;
  const names = [...origins.keys()].sort((a, b) => b.length - a.length);
  const rows = new Map<
    string,
    {
      info: (bytes: { read: number; written: number }) => StepInfo;
      ms: number;
      runs: Map<string, number>;
      read: number;
      written: number;
    }
  >();
  for (const e of c.session.takeProfile()) {
    let o = origins.get(e.node);
    if (o === undefined) {
      const hit = names.find((n) => e.node.includes(n));
      if (hit !== undefined) o = origins.get(hit);
    }
    const path = o === undefined ? `ort:${e.node}` : o.path;
    let r = rows.get(path);
    if (r === undefined) {
      const oo = o;
      const info =
        oo === undefined
          ? (bytes: { read: number; written: number }) =>
              nodeInfo(`${e.op} (ONNX Runtime's node ${e.node})`, `onnx:${e.op}`, [], [], path, 0, bytes)
          : (bytes: { read: number; written: number }) =>
              nodeInfo(
                `${oo.prefix}${oo.label ?? oo.node.op}`,
                oo.node.op,
                [oo.node.op],
                oo.node.provenance.map((p) => formatProvenance([p], 1)),
                path,
                oo.depth,
                bytes,
              );
      rows.set(path, (r = { info, ms: 0, runs: new Map(), read: 0, written: 0 }));
    }
    r.ms += e.us / 1000;
    r.read += e.read;
    r.written += e.written;
    r.runs.set(e.node, (r.runs.get(e.node) ?? 0) + 1);
  }
  const timer = new KernelTimer();
  for (const [path, r] of rows) {
    // bytes per run: the profile's totals over the node's runs
    const calls = Math.max(...r.runs.values());
    timer.add(path, () => r.info({ read: r.read / calls, written: r.written / calls }), r.ms, calls);
  }
  return timer.take();
}

function onnxExecutor(req: TargetRequest): OnnxExecutor {
  let last: Compiled | undefined;
  /** Profiled sessions run since their profile was last taken. */
  const profiled = new Set<Compiled>();
  return link(onnxTarget, 'onnx', programs, req, (linked) => ({
    ...(req.profile === true
      ? {
          kernelTimes: () => {
            const out = [...profiled].flatMap(kernelRows);
            profiled.clear();
            return out;
          },
          kernelTimesOnDemand: true,
          profileNote: PROFILE_NOTES.onnx,
        }
      : {}),
    get graph(): readonly Node[] {
      return linked.graph();
    },
    freshResults: true,
    executionProvider: () => last?.session.provider,
    lastModel: () => last?.translated,
    run(values: readonly NDArray[], learningPhase: number) {
      const c = linked.runnable(values.map((v) => v.shape)).compiled;
      last = c;
      const t = c.translated;
      const feeds: Record<string, WireTensor> = {};
      t.inputNames.forEach((name, i) => {
        feeds[name] = wire(values[i]!, req.inputs[i]!.dtype);
      });
      t.variableInputs.forEach((v, k) => {
        const slot = c.variableSlots[k]!;
        feeds[v.name] = wire(linked.cells[slot]!.value, linked.variables[slot]!.dtype);
      });
      if (t.learningPhaseInput !== undefined)
        feeds[t.learningPhaseInput] = wire(new NDArray([learningPhase], [], 'uint8'), 'uint8');
      const fetches = [...t.outputNames, ...t.prints.map((p) => p.name)];
      const out = c.session.run(feeds, fetches);
      if (c.session.profile) profiled.add(c);
      t.prints.forEach((p) => {
        const v = out[p.name]!;
        console.log(
          `${p.message}${formatValue(unwire(v, v.type === 'float64' ? 'float64' : v.type === 'float32' ? 'float32' : (v.type as DType)))}`,
        );
      });
      return t.outputNames.map((name, i) => unwire(out[name]!, linked.program.graph[i]!.dtype));
    },
  }));
}
