// A theanine graph to an ONNX model: nodes in topological order, each through its entry in
// ops/index.ts. Placeholders become graph inputs named after them (unknown dims as symbolic
// dims), outputs become graph outputs in order; variables become initializers (export) or
// inputs fed at each call (the onnx backend, whose variables change between calls).
import type { DType } from '../../ir/dtype.js';
import { topoSort } from '../../ir/graph.js';
import type { Node } from '../../ir/node.js';
import { isBuiltin, type OpName, isOp } from '../../ir/registry.js';
import type { ScanBody } from '../../ir/scanbody.js';
import { tensorType } from '../../ir/types.js';
import { GraphBuilder, ModelState, OnnxExportError, valueInfo, type Val } from './builder.js';
import { tensorProto } from './dtypes.js';
import { onnxTranslations } from './ops/index.js';
import type { Ctx, Emit, Mode, OnnxEntry, TupleEmit } from './ops/types.js';
import { encodeModel, type GraphJson, type ModelJson, type ValueInfoJson } from './schema.js';

export const DEFAULT_OPSET = 17;
export const SUPPORTED_OPSETS: readonly number[] = [17, 18, 19, 20, 21];

export interface TranslateRequest {
  readonly inputs: readonly Node[];
  /** Function outputs, then update values. */
  readonly targets: readonly Node[];
  readonly mode: Mode;
  readonly opset?: number;
  readonly name?: string;
  /** The learning phase a model without a fed learning_phase input is exported with. */
  readonly learningPhase?: number;
  /** Who asks, for error messages ('exportOnnx', 'onnx backend'). */
  readonly caller: string;
  /** Names of the graph outputs, by target (default output_0, output_1, ...). */
  readonly outputNames?: readonly string[];
}

export interface Translated {
  readonly bytes: Uint8Array;
  readonly model: ModelJson;
  readonly inputNames: readonly string[];
  /** run mode: variables fed as inputs, by name. */
  readonly variableInputs: readonly { readonly name: string; readonly node: Node }[];
  /** run mode: the name of the learning-phase input, when the graph reads the phase without feeding it. */
  readonly learningPhaseInput: string | undefined;
  readonly outputNames: readonly string[];
  readonly prints: readonly { readonly name: string; readonly message: string }[];
  readonly operators: ReadonlySet<string>;
  /** The graph node each ONNX node was emitted for (by ONNX node name, Loop bodies' included), where it is (path, depth) and its name's prefix (a Scan body's: `scan: `): the profiler's rows. */
  readonly origins: ReadonlyMap<string, OnnxOrigin>;
}

/** Where an ONNX node comes from: see Translated.origins. */
export interface OnnxOrigin {
  readonly node: Node;
  /** A Loop body's own nodes (the step's slices of the sequences, its outputs' copies): what they are, named under their Scan. */
  readonly label?: string;
  readonly path: string;
  readonly depth: number;
  readonly prefix: string;
}

/** The dtype a value crosses the session boundary in (run mode): ORT's Node binding feeds float16 as raw bits, so it moves as float32. */
export function ioDType(d: DType, mode: Mode): DType {
  return mode === 'run' && d === 'float16' ? 'float32' : d;
}

function sanitize(name: string, used: Set<string>): string {
  let base = name.replace(/[^A-Za-z0-9_.:-]/g, '_');
  if (base === '') base = 'input';
  let n = base;
  for (let k = 1; used.has(n); k++) n = `${base}_${k}`;
  used.add(n);
  return n;
}

class Translator {
  readonly model: ModelState;
  readonly prints: { name: string; message: string }[] = [];
  readonly used = new Set<string>();
  readonly inputs: ValueInfoJson[] = [];
  readonly variableInputs: { name: string; node: Node }[] = [];
  learningPhaseInput: string | undefined;
  readonly origins = new Map<string, OnnxOrigin>();
  /** Where the graph nodes translated now are (a Scan body's: under its Scan node). */
  private scope = { path: '', depth: 0, prefix: '' };
  private readonly pathOf = new Map<Node, string>();

  constructor(readonly req: TranslateRequest) {
    this.model = new ModelState(req.opset ?? DEFAULT_OPSET);
  }

  private graphInput(b: GraphBuilder, name: string, node: Node): string {
    const io = ioDType(node.dtype, this.req.mode);
    const n = sanitize(name, this.used);
    this.inputs.push(valueInfo(n, { dtype: io, shape: node.shape }, (i) => `${n}_dim${i}`));
    b.define(n, { dtype: io, shape: node.shape });
    return b.cast(n, node.dtype);
  }

  /** Values of the leaves of the main graph. */
  seedLeaves(b: GraphBuilder, env: Map<Node, string>, order: readonly Node[]): void {
    this.req.inputs.forEach((n) => env.set(n, this.graphInput(b, n.name, n)));
    for (const n of order) {
      if (env.has(n)) continue;
      if (n.op === 'placeholder')
        throw new OnnxExportError(
          `${this.req.caller}: placeholder ${JSON.stringify(n.name)} is not among the function's inputs`,
        );
      if (n.op === 'variable') {
        if (this.req.mode === 'export') {
          const name = sanitize(n.name, this.used);
          this.model.initializers.push(tensorProto(name, n.cell!.value.astype(n.dtype)));
          env.set(n, b.define(name, { dtype: n.dtype, shape: n.cell!.value.shape }));
        } else {
          const v = this.graphInput(b, `var_${n.name}`, n);
          this.variableInputs.push({ name: this.inputs[this.inputs.length - 1]!.name, node: n });
          env.set(n, v);
        }
      }
      if (n.op === 'learning_phase') {
        if (this.req.mode === 'export') env.set(n, b.scalar(this.req.learningPhase ?? 0, 'uint8'));
        else {
          const v = this.graphInput(b, 'learning_phase', n);
          this.learningPhaseInput = this.inputs[this.inputs.length - 1]!.name;
          env.set(n, v);
        }
      }
    }
  }

  /** Translates `order` (leaves already in env) into b. */
  run(b: GraphBuilder, order: readonly Node[], env: Map<Node, string>, tuples: Map<Node, string[]>): void {
    for (const [i, n] of order.entries()) {
      if (env.has(n) || tuples.has(n)) continue;
      const before = b.nodes.length;
      const path = `${this.scope.path}${i}`;
      this.pathOf.set(n, path);
      this.emit(b, n, env, tuples);
      for (let k = before; k < b.nodes.length; k++) {
        const name = b.nodes[k]!.name;
        if (name !== undefined)
          this.origins.set(name, { node: n, path, depth: this.scope.depth, prefix: this.scope.prefix });
      }
    }
  }

  /** Translates node n into b. */
  private emit(b: GraphBuilder, n: Node, env: Map<Node, string>, tuples: Map<Node, string[]>): void {
    if (!isBuiltin(n.op))
      throw new OnnxExportError(
        `${this.req.caller}: the user op ${JSON.stringify(n.op)} has no ONNX form (it has only a JavaScript reference implementation)`,
      );
    const entry = onnxTranslations[n.op as OpName] as OnnxEntry<unknown>;
    if (isOp(n, 'tuple_get')) {
      const items = tuples.get(n.inputs[0]!);
      const v = items?.[n.attrs.index];
      if (v === undefined) throw new Error(`internal: tuple_get of ${n.inputs[0]!.name}, which has no such item`);
      env.set(n, v);
      return;
    }
    if (entry === 'leaf') throw new Error(`internal: leaf ${n.op} ${n.name} has no value`);
    if (typeof entry === 'object' && 'unsupported' in entry) {
      throw new OnnxExportError(
        `${this.req.caller}: op ${JSON.stringify(n.op)} cannot be expressed in ONNX: ${entry.unsupported}`,
      );
    }
    const ins = n.inputs.map((i) => {
      const v = env.get(i);
      if (v === undefined) throw new Error(`internal: input ${i.name} of ${n.op} has no ONNX value`);
      return v;
    });
    const c = this.ctx(b, n);
    try {
      if (typeof entry === 'object') {
        tuples.set(n, (entry as TupleEmit<unknown>).tuple(c, ins, n.attrs));
      } else {
        const v = (entry as Emit<unknown>)(c, ins, n.attrs);
        env.set(n, b.val(v).dtype === n.dtype ? v : b.cast(v, n.dtype));
      }
    } catch (e) {
      if (e instanceof OnnxExportError && !e.message.startsWith(this.req.caller)) {
        throw new OnnxExportError(`${this.req.caller}: op ${JSON.stringify(n.op)}: ${e.message}`);
      }
      throw e;
    }
  }

  ctx(b: GraphBuilder, node: Node): Ctx {
    const out: Val = { dtype: node.dtype, shape: node.shape };
    return {
      b,
      node,
      mode: this.req.mode,
      out,
      prints: this.prints,
      loopBody: (body, seqs, consts, index) => {
        const saved = this.scope;
        this.scope = {
          path: `${this.pathOf.get(node)}/`,
          depth: saved.depth + 1,
          prefix: `${saved.prefix}${node.op}: `,
        };
        try {
          const g = this.loopBody(b, body, seqs, consts, index);
          for (const n of g.node ?? []) {
            if (n.name !== undefined && !this.origins.has(n.name))
              this.origins.set(n.name, {
                node,
                label: "the loop step's slices and copies",
                path: `${this.scope.path}loop`,
                depth: this.scope.depth,
                prefix: this.scope.prefix,
              });
          }
          return g;
        } finally {
          this.scope = saved;
        }
      },
    };
  }

  private loopBody(
    outer: GraphBuilder,
    body: ScanBody,
    seqs: readonly string[],
    consts: readonly string[],
    index: (b: GraphBuilder, iter: string) => string,
  ): GraphJson {
    const inner = new GraphBuilder(this.model, outer);
    const iter = inner.define(this.model.fresh('iter'), { dtype: 'int64', shape: [] });
    const cond = inner.define(this.model.fresh('cond'), { dtype: 'bool', shape: [] });
    const env = new Map<Node, string>();
    const stateNames = body.states.map((s) =>
      inner.define(this.model.fresh('state'), { dtype: s.dtype, shape: s.shape }),
    );
    const idx = index(inner, iter);
    body.sequences.forEach((arg, i) =>
      env.set(arg, inner.op('Gather', [seqs[i]!, idx], { axis: 0 }, { dtype: arg.dtype, shape: arg.shape })),
    );
    body.states.forEach((arg, j) => env.set(arg, stateNames[j]!));
    body.constants.forEach((arg, k) => env.set(arg, consts[k]!));
    this.run(inner, topoSort(body.results), env, new Map());
    const out = (n: Node) => inner.op('Identity', [env.get(n)!], {}, { dtype: n.dtype, shape: n.shape });
    const condOut = inner.op('Identity', [cond], {}, { dtype: 'bool', shape: [] });
    const newStates = body.newStates.map(out);
    const perStep = body.outputs.map(out);
    const stateSteps = body.newStates.map(out);
    const typeOnly = (name: string): ValueInfoJson => ({
      name,
      type: { tensorType: { elemType: tensorProtoType(inner.val(name).dtype) } },
    });
    return {
      name: this.model.fresh('loop_body'),
      node: inner.nodes,
      initializer: [],
      input: [iter, cond, ...stateNames]
        .map((n) => valueInfo(n, inner.val(n), () => ''))
        .map((v, i) => (i < 2 ? v : typeOnly(v.name))),
      output: [condOut, ...newStates, ...perStep, ...stateSteps].map(typeOnly),
    };
  }
}

function tensorProtoType(d: DType): number {
  return valueInfo('', { dtype: d, shape: [] }, () => '').type!.tensorType!.elemType;
}

export function translate(req: TranslateRequest): Translated {
  const opset = req.opset ?? DEFAULT_OPSET;
  if (!SUPPORTED_OPSETS.includes(opset)) {
    throw new OnnxExportError(
      `${req.caller}: opset ${opset} is not supported (allowed: ${SUPPORTED_OPSETS.join(', ')})`,
    );
  }
  const t = new Translator(req);
  const b = new GraphBuilder(t.model);
  const order = topoSort(req.targets);
  const env = new Map<Node, string>();
  t.seedLeaves(b, env, order);
  t.run(b, order, env, new Map());
  const outputNames: string[] = [];
  const outputs: ValueInfoJson[] = req.targets.map((n, i) => {
    const name = sanitize(req.outputNames?.[i] ?? `output_${i}`, t.used);
    const io = ioDType(n.dtype, req.mode);
    const v = b.cast(env.get(n)!, io);
    b.nodes.push({ input: [v], output: [name], opType: 'Identity', name: t.model.fresh('n_Identity') });
    t.model.ops.add('Identity');
    outputNames.push(name);
    return valueInfo(name, { dtype: io, shape: n.shape }, (k) => `${name}_dim${k}`);
  });
  // print values leave as extra outputs (the backend writes them on the host)
  const printOutputs = t.prints.map((p) => {
    const name = sanitize(`print_${p.name}`, t.used);
    const io = ioDType(b.val(p.name).dtype, req.mode);
    b.nodes.push({
      input: [b.cast(p.name, io)],
      output: [name],
      opType: 'Identity',
      name: t.model.fresh('n_Identity'),
    });
    return {
      name,
      message: p.message,
      info: valueInfo(name, { dtype: io, shape: b.val(p.name).shape }, (k) => `${name}_dim${k}`),
    };
  });
  const graph: GraphJson = {
    name: req.name ?? 'theanine',
    node: b.nodes,
    initializer: t.model.initializers,
    input: t.inputs,
    output: [...outputs, ...printOutputs.map((p) => p.info)],
  };
  const model: ModelJson = {
    irVersion: 8,
    opsetImport: [{ domain: '', version: opset }],
    producerName: 'theanine',
    producerVersion: '0.1.0',
    graph,
  };
  return {
    bytes: encodeModel(model),
    model,
    inputNames: t.inputs.slice(0, req.inputs.length).map((i) => i.name),
    variableInputs: t.variableInputs,
    learningPhaseInput: t.learningPhaseInput,
    outputNames,
    prints: printOutputs.map((p) => ({ name: p.name, message: p.message })),
    operators: t.model.ops,
    origins: t.origins,
  };
}

export { tensorType };
