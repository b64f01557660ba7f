// The cost model extraction minimizes: per node, arithmetic (FLOPs, transcendental functions
// weighted) plus memory traffic (bytes read and written), with fusion's effect as the target
// reports it (its FusionTarget.classify, which the fusion pass also follows): an elementwise op or
// a view the target fuses (into a loop, or a matmul's prologue or epilogue) keeps its operands in
// registers, so it moves only a fraction (fusedTraffic) of its output's bytes; with no fusion
// (tensorflow, onnx) every op reads and writes memory. Unknown dims count as UNKNOWN_DIM. A roofline in one number (TASO's and TENSAT's cost is measured per op; this one
// is computed, so a compile never times kernels).
//
// A whole graph is rated as the kernels it compiles to (`graph`): the target's fusion pass groups
// it, and each fused kernel costs the larger of its arithmetic and its memory traffic (its
// sources read once, its result written once; the roofline: a loop's arithmetic overlaps its
// loads), so two graphs that fuse into loops over the same inputs rate alike however many
// multiplies they save: x*y + x*z and x*(y + z) both stream x, y, z in and one result out.
import { itemsize } from '../../ir/dtype.js';
import type { Node } from '../../ir/node.js';
import type { TensorType } from '../../ir/types.js';
import { getOp, isOp, type OpNode } from '../../ir/registry.js';
import { topoSort } from '../../ir/graph.js';
import { elementwiseOps } from '../../ir/ops/elementwise.js';
import { fuseGraph, type FusionTarget } from '../fusion.js';

/** The size assumed for a dim unknown until run time. */
export const UNKNOWN_DIM = 64;

export interface CostModel {
  readonly name: string;
  /** The cost of computing `n` from its inputs (0 for leaves; positive otherwise). */
  node(n: Node): number;
  /** The cost of a whole graph as compiled (every kernel once); graphCost sums `node` over the DAG where absent. */
  graph?(outputs: readonly Node[]): number;
}

export interface CostWeights {
  /** Cost of one byte moved to or from memory, in FLOPs. */
  readonly byte: number;
  /** FLOPs of one transcendental (exp, log, the trigonometric functions...) against one add or mul. */
  readonly transcendental: number;
  /** Share of an output's bytes a fused elementwise op or view still moves (group boundaries, spills). */
  readonly fusedTraffic: number;
}

/** A byte costs about a quarter FLOP on a cpu core with SIMD (10-20 GFLOP/s against tens of GB/s of cache bandwidth). */
export const DEFAULT_WEIGHTS: CostWeights = { byte: 0.25, transcendental: 8, fusedTraffic: 0.1 };

/** Transcendental (or divide-like) elementwise ops: the rows whose result is always a float (division, roots, exp, log, trigonometry, sigmoid...), and pow. */
const TRANSCENDENTAL = new Set([
  ...Object.values(elementwiseOps)
    .filter((r) => r.dtypeRule === 'float')
    .map((r) => r.name),
  'pow',
]);

export function elements(t: TensorType): number {
  let n = 1;
  for (const d of t.shape) n *= d ?? UNKNOWN_DIM;
  return n;
}

function contraction(n: Node): number {
  const x = n.inputs[0]!.type.shape;
  if (n.op === 'dot') return x[x.length - 1] ?? UNKNOWN_DIM;
  const axes = n.attrs['axes'] as readonly number[] | undefined;
  return axes === undefined ? 1 : (x[axes[0]!] ?? UNKNOWN_DIM);
}

/** Arithmetic of `n` alone, in FLOPs: products 2·out·K, reductions one per element read, elementwise ops one per element (transcendental ones weighted), views and leaves none. */
function arithmetic(n: Node, w: CostWeights): number {
  if (n.inputs.length === 0) return 0;
  if (n.op === 'dot' || n.op === 'batch_dot') return 2 * elements(n.type) * contraction(n);
  const def = getOp(n.op);
  if (def.kind === 'shape') return 0;
  if (def.kind === 'reduction') return n.inputs.reduce((s, i) => s + elements(i.type), 0);
  return elements(n.type) * (TRANSCENDENTAL.has(n.op) ? w.transcendental : 1);
}

const bytesOf = (n: Node): number => elements(n.type) * itemsize(n.dtype);

/** The cost model for a target: what it fuses decides what moves through memory. */
export function costModel(target: FusionTarget, w: CostWeights = DEFAULT_WEIGHTS, name = 'roofline'): CostModel {
  const node = (n: Node): number => {
    if (n.inputs.length === 0) return 0;
    const inBytes = n.inputs.reduce((s, i) => s + bytesOf(i), 0);
    const outBytes = bytesOf(n);
    if (n.op === 'dot' || n.op === 'batch_dot') return arithmetic(n, w) + w.byte * (inBytes + outBytes);
    const kind = target.classify(n);
    const def = getOp(n.op);
    if (def.kind === 'shape' || kind === 'view') {
      // A view the target fuses is index arithmetic; otherwise a copy (reshape of contiguous data is free).
      const moved = kind === 'view' || n.op === 'reshape' ? w.fusedTraffic * outBytes : inBytes + outBytes;
      return 1 + w.byte * moved;
    }
    const flops = elements(n.type) * (TRANSCENDENTAL.has(n.op) ? w.transcendental : 1);
    if (kind === 'elementwise') return flops + w.byte * w.fusedTraffic * outBytes + 1;
    if (kind === 'reduction')
      return n.inputs.reduce((s, i) => s + elements(i.type), 0) + w.byte * (w.fusedTraffic * inBytes + outBytes) + 1;
    return flops + w.byte * (inBytes + outBytes) + 1;
  };
  /** One fused kernel: the larger of its body's arithmetic and its traffic (sources in, result out), plus one for the launch. */
  const kernel = (f: OpNode<'fused'>): number => {
    const body = f.attrs.body;
    const params = new Set(body.params);
    let flops = 0;
    for (const m of topoSort([body.root])) if (!params.has(m)) flops += arithmetic(m, w);
    const traffic = f.inputs.reduce((s, i) => s + bytesOf(i), 0) + bytesOf(f);
    return Math.max(flops, w.byte * traffic) + 1;
  };
  return {
    name,
    node,
    graph(outputs: readonly Node[]): number {
      let s = 0;
      for (const n of topoSort(fuseGraph({ outputs }, target).outputs)) s += isOp(n, 'fused') ? kernel(n) : node(n);
      return s;
    },
  };
}

/** The cost of a graph as a DAG: every distinct node once (shared work counted once), or the model's rating of the graph as compiled where it has one. */
export function graphCost(outputs: readonly Node[], model: CostModel): number {
  if (model.graph !== undefined) return model.graph(outputs);
  let s = 0;
  for (const n of topoSort(outputs)) s += model.node(n);
  return s;
}
