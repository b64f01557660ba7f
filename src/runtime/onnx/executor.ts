// The onnx backend's executor: the function's optimized graph (all passes but fusion, as for the
// tensorflow backend) translated to an ONNX model with variables and the learning phase as
// inputs, run as an ONNX Runtime session. Models and sessions are cached by the graph's
// structure, so a rebuilt graph (new placeholders, new variables, same structure) reuses its
// session. An op whose ONNX form needs dims the graph leaves unknown gets a model per set of
// input shapes instead (the graph re-inferred with the concrete shapes).
import type { DType } from '../../ir/dtype.js';
import { NDArray } from '../../ir/ndarray.js';
import { fresh, type Node } from '../../ir/node.js';
import { topoSort } from '../../ir/graph.js';
import { formatValue } from '../../ir/ops/misc.js';
import { tensorType } from '../../ir/types.js';
import type { Executor, Optimizer } from '../function.js';
import { runPasses, type Pass } from '../../passes/pass.js';
import { pipelineKey, resolvePipeline, type PassSelection } from '../../passes/user.js';
import type { FusionTarget } from '../../passes/fusion.js';
import { rebuild } from '../../passes/rewrite.js';
import { structuralKey } from '../compile.js';
import { DynamicShapeError, specializeShapes } from '../../codegen/lower.js';
import { OnnxExportError } from './builder.js';
import { fromHalfBits, onnxData } from './dtypes.js';
import { OrtSession, type WireTensor } from './session.js';
import { ioDType, translate, type Translated } from './translate.js';

export interface OnnxExecutor extends Executor {
  /** The ONNX Runtime execution provider the function's sessions run on. */
  executionProvider(): string | undefined;
  /** The model the latest call ran (for tests and debugging). */
  readonly lastModel: () => Translated | undefined;
}

/** Every op stays one node: ONNX Runtime fuses on its own. */
const noFusion: FusionTarget = { classify: () => 'opaque' };

interface Compiled {
  readonly translated: Translated;
  readonly session: OrtSession;
  /** Index of each variable input in the graph's variables (structuralKey order). */
  readonly variableSlots: readonly number[];
}

const models = new Map<string, Compiled>();
const MAX_MODELS = 128;

export function clearOnnxCache(): void {
  models.clear();
}

const ORT_TYPE: Readonly<Record<DType, string>> = {
  float16: 'float32', float32: 'float32', float64: 'float64', int8: 'int8', int16: 'int16', int32: 'int32', int64: 'int64', uint8: 'uint8', bool: 'bool',
};

function wire(a: NDArray, dtype: DType): WireTensor {
  const io = ioDType(dtype, 'run');
  const v = a.dtype === io ? a : a.astype(io);
  return { type: ORT_TYPE[io], data: onnxData(v), dims: [...v.shape] };
}

function unwire(t: WireTensor, dtype: DType): NDArray {
  const d = t.data as unknown as ArrayLike<number | bigint>;
  const vals = t.type === 'int64' ? Float64Array.from(d as ArrayLike<bigint>, (x) => Number(x))
    : t.type === 'float16' ? Float64Array.from(d as ArrayLike<number>, fromHalfBits)
      : (d as ArrayLike<number>);
  return new NDArray(vals, [...t.dims], ioDType(dtype, 'run')).astype(dtype);
}

/** The graph with its placeholders replaced by ones of these concrete shapes, every type re-inferred. */
function specialize(inputs: readonly Node[], targets: readonly Node[], shapes: readonly (readonly number[])[]): { inputs: Node[]; targets: Node[] } {
  const memo = new Map<Node, Node>();
  const ins = inputs.map((p, i) => {
    const shape = shapes[i]!;
    const q = p.op === 'placeholder' ? fresh('placeholder', { ...p.attrs, shape }, tensorType(p.dtype, shape)) : p;
    memo.set(p, q);
    return q;
  });
  for (const n of topoSort(targets)) {
    if (memo.has(n)) continue;
    memo.set(n, n.inputs.length === 0 ? n : rebuild(n, n.inputs.map((i) => memo.get(i)!)));
  }
  return { inputs: ins, targets: targets.map((t) => memo.get(t)!) };
}

/**
 * Sized ops (sizes from tensors, src/ir/ops/sized.ts) replaced by their static ops, now that every
 * input shape is known (the compiler's specialisation, src/codegen/lower.ts). A size that depends
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

export function onnxExecutor(
  inputs: readonly Node[], targets: readonly Node[], optimizer: Optimizer = 'fast_run', selection?: PassSelection,
): OnnxExecutor {
  const passes: Pass[] = optimizer === 'none' ? [] : resolvePipeline(optimizer, noFusion, selection);
  const graph = passes.length === 0 ? targets : runPasses(passes, { outputs: targets }).outputs;
  const { key, variables } = structuralKey(inputs, graph, `onnx:${optimizer}[${pipelineKey(passes)}]`, 'onnx');
  let generic: Compiled | 'per-shape' | undefined;
  let last: Compiled | undefined;

  const build = (ins: readonly Node[], outs: readonly Node[], k: string): Compiled => {
    let c = models.get(k);
    if (c !== undefined) return c;
    const translated = translate({ inputs: ins, targets: outs, mode: 'run', caller: 'onnx backend' });
    const own = structuralKey(ins, outs, '', '').variables;
    const variableSlots = translated.variableInputs.map((v) => own.indexOf(v.node));
    c = { translated, session: new OrtSession(translated.bytes), variableSlots };
    if (models.size >= MAX_MODELS) models.delete(models.keys().next().value!);
    models.set(k, c);
    return c;
  };

  const compiledFor = (shapes: readonly (readonly number[])[]): Compiled => {
    if (generic === undefined) {
      try {
        generic = build(inputs, graph, key);
      } catch (e) {
        if (!(e instanceof OnnxExportError) || !/needs (a )?known|unknown dims|is unknown/.test(e.message)) throw e;
        generic = 'per-shape';
      }
    }
    if (generic !== 'per-shape') return generic;
    const sk = `${key}|${shapes.map((s) => s.join('x')).join(',')}`;
    const hit = models.get(sk);
    if (hit !== undefined) return hit;
    const sp = specialize(inputs, graph, shapes);
    // the passes again: with every input dim known, shape arithmetic folds to constants
    const outs = passes.length === 0 ? sp.targets : runPasses(passes, { outputs: sp.targets }).outputs;
    return build(sp.inputs, resolveSizes(outs), sk);
  };

  return {
    graph,
    freshResults: true,
    executionProvider: () => last?.session.provider,
    lastModel: () => last?.translated,
    run(values, learningPhase) {
      const c = compiledFor(values.map((v) => v.shape));
      last = c;
      const t = c.translated;
      const feeds: Record<string, WireTensor> = {};
      t.inputNames.forEach((name, i) => { feeds[name] = wire(values[i]!, inputs[i]!.dtype); });
      t.variableInputs.forEach((v, k) => {
        const node = variables[c.variableSlots[k]!]!;
        feeds[v.name] = wire(node.cell!.value, node.dtype);
      });
      if (t.learningPhaseInput !== undefined) feeds[t.learningPhaseInput] = wire(new NDArray([learningPhase], [], 'uint8'), 'uint8');
      const fetches = [...t.outputNames, ...t.prints.map((p) => p.name)];
      const out = c.session.run(feeds, fetches);
      t.prints.forEach((p) => {
        const v = out[p.name]!;
        console.log(`${p.message}${formatValue(unwire(v, v.type === 'float64' ? 'float64' : v.type === 'float32' ? 'float32' : (v.type as DType)))}`);
      });
      return t.outputNames.map((name, i) => unwire(out[name]!, graph[i]!.dtype));
    },
  };
}
