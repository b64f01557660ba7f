// f.exportOnnx: a compiled function's optimized graph (every pass but fusion, as the onnx
// backend runs it) as a serialized ONNX model: placeholders as inputs named after them (unknown
// dims symbolic), outputs in order (then each update's new value, named `<variable>_new`),
// variables as initializers holding their current values.
import type { Node } from '../../ir/node.js';
import { ValueError } from '../../ir/errors.js';
import { runPasses } from '../../passes/pass.js';
import type { FusionTarget } from '../../passes/fusion.js';
import { resolvePipeline } from '../../passes/user.js';
import type { OptimizerLevel } from '../../passes/pipeline.js';
import { DEFAULT_OPSET, SUPPORTED_OPSETS, translate } from './translate.js';

export interface OnnxExportOptions {
  /** The ONNX graph's name (default: the function's name). */
  readonly name?: string;
  /** The opset to write (17 to 21; default 17). */
  readonly opset?: number;
  /** The learning phase baked into a graph that reads it without feeding it (default 0, test). */
  readonly learningPhase?: 0 | 1;
}

export interface OnnxExportSource {
  readonly name: string;
  readonly inputs: readonly Node[];
  readonly outputs: readonly Node[];
  readonly updates: readonly (readonly [Node, Node])[];
  readonly optimizer: OptimizerLevel;
}

const noFusion: FusionTarget = { classify: () => 'opaque' };

export function exportOnnx(src: OnnxExportSource, opts: OnnxExportOptions = {}): Uint8Array {
  if (opts === null || typeof opts !== 'object')
    throw new TypeError('exportOnnx: options must be an object ({ name?, opset? })');
  const opset = opts.opset ?? DEFAULT_OPSET;
  if (!SUPPORTED_OPSETS.includes(opset))
    throw new ValueError(
      `exportOnnx: opset ${JSON.stringify(opts.opset)} is not supported (allowed: ${SUPPORTED_OPSETS.join(', ')})`,
    );
  const targets = [...src.outputs, ...src.updates.map(([, v]) => v)];
  const passes = src.optimizer === 'none' ? [] : resolvePipeline(src.optimizer, noFusion);
  const graph = passes.length === 0 ? targets : runPasses(passes, { outputs: targets }).outputs;
  const names = [...src.outputs.map((_, i) => `output_${i}`), ...src.updates.map(([v]) => `${v.name}_new`)];
  return translate({
    inputs: src.inputs,
    targets: graph,
    mode: 'export',
    opset,
    name: opts.name ?? src.name,
    caller: 'exportOnnx',
    outputNames: names,
    ...(opts.learningPhase !== undefined ? { learningPhase: opts.learningPhase } : {}),
  }).bytes;
}
