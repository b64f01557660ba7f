// K.function over placeholders of unknown rank (Keras' placeholder with neither shape nor ndim):
// the values fed fix each rank, and the graph is rebuilt once per combination of ranks over
// placeholders of that rank (all dims unknown), then compiled as any other function. TensorFlow
// does the same in effect: its kernels see concrete shapes, and its graph only carries the rank
// as unknown.
import { leaf } from '../ir/build.js';
import { ValueError } from '../ir/errors.js';
import { NDArray } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import { topoSort } from '../ir/graph.js';
import { rebuild } from '../passes/rewrite.js';
import type { CompiledFunction } from '../runtime/function.js';
import { get_uid } from './config.js';

type Pair = readonly [Node, Node];
type Make = (inputs: readonly Node[], outputs: readonly Node[], updates: readonly Pair[]) => CompiledFunction;

/** The rank of a value fed to a placeholder of unknown rank. */
function rankOf(fn: string, ph: Node, v: unknown): number {
  if (v instanceof NDArray) return v.ndim;
  try {
    return NDArray.from(v, ph.dtype, `${fn}: input ${JSON.stringify(ph.name)}`).ndim;
  } catch (e) {
    throw new TypeError((e as Error).message);
  }
}

/** The graph over placeholders of the given ranks (-1: keep the placeholder). */
function withRanks(
  inputs: readonly Node[],
  ranks: readonly number[],
  targets: readonly Node[],
): { inputs: Node[]; map: Map<Node, Node> } {
  const map = new Map<Node, Node>();
  const ins = inputs.map((p, i) => {
    const r = ranks[i]!;
    if (r < 0) return p;
    const q = leaf('placeholder', {
      uid: get_uid('placeholder'),
      name: p.name,
      dtype: p.dtype,
      shape: new Array<null>(r).fill(null),
      sparse: false,
    });
    map.set(p, q);
    return q;
  });
  for (const n of topoSort(targets)) {
    if (map.has(n) || n.inputs.length === 0) continue;
    const m = rebuild(
      n,
      n.inputs.map((x) => map.get(x) ?? x),
    );
    if (m !== n) map.set(n, m);
  }
  return { inputs: ins, map };
}

/** A compiled function whose placeholders of unknown rank take their ranks from each call's values. */
export function byRank(
  name: string,
  inputs: readonly Node[],
  outputs: readonly Node[],
  updates: readonly Pair[],
  info: Pick<CompiledFunction, 'backend' | 'device' | 'optimizer'>,
  make: Make,
): CompiledFunction {
  const made = new Map<string, CompiledFunction>();
  let latest: CompiledFunction | undefined;
  const current = (what: string): CompiledFunction => {
    if (latest === undefined)
      throw new ValueError(`${name}: ${what} needs the ranks of its inputs of unknown rank; call the function first`);
    return latest;
  };
  const call = (values: readonly unknown[]): NDArray[] => {
    if (!Array.isArray(values)) throw new TypeError(`${name}: call with an array of ${inputs.length} input values`);
    if (values.length !== inputs.length)
      throw new ValueError(
        `${name}: expected ${inputs.length} input values (${inputs.map((n) => n.name).join(', ')}), got ${values.length}`,
      );
    const ranks = inputs.map((p, i) => (p.type.unknownRank === true ? rankOf(name, p, values[i]) : -1));
    const key = ranks.join(',');
    let f = made.get(key);
    if (f === undefined) {
      const { inputs: ins, map } = withRanks(inputs, ranks, [...outputs, ...updates.map(([, v]) => v)]);
      const at = (n: Node) => map.get(n) ?? n;
      f = make(
        ins,
        outputs.map(at),
        updates.map(([t, v]) => [t, at(v)] as const),
      );
      made.set(key, f);
    }
    latest = f;
    return f(values);
  };
  const fn = Object.assign(call, {
    inputs,
    outputs,
    updates,
    debugprint: (opts?: { readonly trace?: boolean }) => current('debugprint').debugprint(opts),
    source: () => current('source').source(),
    exportModule: (o: Parameters<CompiledFunction['exportModule']>[0]) => current('exportModule').exportModule(o),
    exportOnnx: (o?: Parameters<CompiledFunction['exportOnnx']>[0]) => current('exportOnnx').exportOnnx(o),
  });
  for (const k of ['device', 'backend', 'optimizer'] as const)
    Object.defineProperty(fn, k, { get: () => latest?.[k] ?? info[k], enumerable: true });
  Object.defineProperty(fn, 'graph', { get: () => current('graph').graph, enumerable: true });
  Object.defineProperty(fn, 'executionProvider', { get: () => latest?.executionProvider, enumerable: true });
  return fn as unknown as CompiledFunction;
}
