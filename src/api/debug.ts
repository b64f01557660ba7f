// Seeing inside: debugprint of a tensor, a list of tensors, a compiled function or an
// optimized graph, and pictures of the same graphs as DOT text or SVG.
import { describe } from '../ir/ndarray.js';
import { platform } from '#platform';
import { Node } from '../ir/node.js';
import { ValueError } from '../ir/errors.js';
import { debugprintNodes } from '../ir/printer.js';
import { checkDotOptions, toDot, type DotOptions } from '../ir/dot.js';
import { fusedLabel } from '../passes/fusion.js';
import type { CompiledFunction } from '../runtime/function.js';

type Seeable = Node | readonly Node[] | CompiledFunction;

function isCompiled(x: unknown): x is CompiledFunction {
  return typeof x === 'function' && typeof (x as CompiledFunction).debugprint === 'function';
}

/** The nodes a picture starts from; a compiled function gives the (optimized) graph it runs. */
function rootsOf(fn: string, x: Seeable): readonly Node[] {
  if (x instanceof Node) return [x];
  if (Array.isArray(x) && x.every((n) => n instanceof Node)) return x;
  if (isCompiled(x)) return x.graph;
  throw new TypeError(`${fn}: expected a tensor, an array of tensors or a compiled function, got ${describe(x)}`);
}

export interface DebugprintOptions {
  /** Append each node's provenance: the public call that built it and the user's line (`← K.relu at model.ts:12`). */
  readonly trace?: boolean;
}

function checkPrintOptions(opts: unknown): DebugprintOptions {
  if (opts === undefined) return {};
  if (opts === null || typeof opts !== 'object' || Array.isArray(opts))
    throw new TypeError(`debugprint: options must be an object, got ${describe(opts)}`);
  for (const k of Object.keys(opts)) {
    if (k !== 'trace') throw new ValueError(`debugprint: unknown option ${JSON.stringify(k)} (allowed: trace)`);
  }
  const t = (opts as DebugprintOptions).trace;
  if (t !== undefined && typeof t !== 'boolean')
    throw new TypeError(`debugprint: option trace must be true or false, got ${describe(t)}`);
  return opts as DebugprintOptions;
}

export function debugprint(
  x: Node | readonly Node[] | CompiledFunction | { debugprint(opts?: DebugprintOptions): string },
  options?: DebugprintOptions,
): string {
  const opts = checkPrintOptions(options);
  const trace = opts.trace === true;
  // Fused kernels (in graphs from optimize) list their ops.
  if (x instanceof Node) return debugprintNodes([x], { label: fusedLabel, trace });
  if (Array.isArray(x) && x.every((n) => n instanceof Node)) return debugprintNodes(x, { label: fusedLabel, trace });
  // A compiled function, or optimize()'s result: each prints its optimized graph.
  if (
    (typeof x === 'function' || (typeof x === 'object' && x !== null)) &&
    typeof (x as CompiledFunction).debugprint === 'function'
  )
    return (x as CompiledFunction).debugprint({ trace });
  throw new TypeError(
    `debugprint: expected a tensor, an array of tensors, a compiled function or an optimized graph, got ${describe(x)}`,
  );
}

/** Graphviz DOT text of the graph; `opts` groups nodes into clusters and relabels them. */
export function dot(x: Seeable, opts: DotOptions = {}): string {
  return toDot(rootsOf('dot', x), checkDotOptions('dot', opts));
}

/** SVG text of the graph, laid out by Graphviz compiled to WebAssembly (@viz-js/viz; no system Graphviz). */
export async function svg(x: Seeable | string, opts: DotOptions = {}): Promise<string> {
  const text = typeof x === 'string' ? x : toDot(rootsOf('svg', x), checkDotOptions('svg', opts));
  let viz: typeof import('@viz-js/viz');
  try {
    viz = (await platform.importModule('@viz-js/viz')) as typeof import('@viz-js/viz');
  } catch (e) {
    // An optional peer dependency: a library install does not bring it (README, Dependencies).
    throw new Error(
      `svg needs the optional package @viz-js/viz; ${platform.installHint('@viz-js/viz')} (${firstLine(e)})`,
    );
  }
  return (await viz.instance()).renderString(text, { format: 'svg' });
}

function firstLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split('\n')[0]!;
}
