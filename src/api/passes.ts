// The optimizer as a research tool: user passes, the pass list, and the optimized
// graph of any outputs for inspection, without compiling a function.
import { describe } from '../ir/ndarray.js';
import { Node } from '../ir/node.js';
import { debugprintNodes } from '../ir/printer.js';
import { ValueError } from '../ir/errors.js';
import { runPasses, type PassReport } from '../passes/pass.js';
import { fusedLabel } from '../passes/fusion.js';
import {
  builtinPassNames,
  defineUserPass,
  isUserPass,
  resolvePipeline,
  undefineUserPass,
  userPasses,
  type PassOptions,
  type PassRewrite,
  type PassSelection,
  type UserPass,
} from '../passes/user.js';
import { cpuTargetFusion } from '../runtime/cpu/fusion.js';
import type { PassLevel } from '../passes/pipeline.js';
import { optimizerLevel } from './config.js';

export type { PassOptions, PassRewrite, PassSelection, UserPass };
export type { Graph } from '../ir/graph.js';

/**
 * A user pass. `rewrite` is a local rewrite `(node) => replacement | null` (also spelled
 * `{ local: fn }`), applied bottom-up to a fixed point, or `{ graph: fn }`, a function from
 * `{ outputs }` to `{ outputs }`. It runs where `K.function(..., { passes: { add: [pass] } })`
 * or `optimize(outputs, { passes: { add: [pass] } })` asks, or everywhere with `{ global: true }`.
 */
export function definePass(name: string, rewrite: PassRewrite, options: PassOptions = {}): UserPass {
  return defineUserPass(name, rewrite, options);
}

/** Forgets a user pass (compiled functions that ran it keep their code). Returns whether it existed. */
export function undefinePass(name: string): boolean {
  return undefineUserPass(name);
}

export interface OptimizeOptions {
  readonly optimizer?: PassLevel;
  readonly passes?: PassSelection;
}

export interface OptimizedGraph {
  /** The optimized outputs (fused kernels are `fused` nodes). */
  readonly outputs: readonly Node[];
  /** Each pass that ran, in order, with its time and node counts. */
  readonly passes: readonly PassReport[];
  /** The graph in debugprint form, fused kernels listing their ops (`debugprint(g)` gives the same). */
  debugprint(opts?: { readonly trace?: boolean }): string;
}

/** The configured default level (keras.json "optimizer", THEANINE_OPTIMIZER) where it runs passes; else fast_run. */
function defaultLevel(): PassLevel {
  const l = optimizerLevel();
  return l === 'none' ? 'fast_run' : l;
}

function options(fn: string, o: unknown): { level: PassLevel; passes: PassSelection | undefined } {
  if (o === undefined) return { level: defaultLevel(), passes: undefined };
  if (typeof o !== 'object' || o === null) throw new TypeError(`${fn}: options must be an object, got ${describe(o)}`);
  const { optimizer = defaultLevel(), passes } = o as OptimizeOptions;
  if (optimizer !== 'fast_run' && optimizer !== 'fast_compile' && optimizer !== 'eqsat') {
    throw new ValueError(
      `${fn}: optimizer must be "fast_run", "fast_compile" or "eqsat", got ${JSON.stringify(optimizer)}`,
    );
  }
  return { level: optimizer, passes };
}

/** Runs the optimizer (the pipeline K.function would run on the cpu) on the graph of `outputs`. */
export function optimize(outputs: Node | readonly Node[], opts?: OptimizeOptions): OptimizedGraph {
  const outs = outputs instanceof Node ? [outputs] : outputs;
  if (!Array.isArray(outs) || !outs.every((o) => o instanceof Node))
    throw new TypeError(`optimize: expected a tensor or an array of tensors, got ${describe(outputs)}`);
  const { level, passes } = options('optimize', opts);
  const reports: PassReport[] = [];
  const g = runPasses(
    resolvePipeline(level, cpuTargetFusion, passes),
    { outputs: outs },
    { onPass: (r) => reports.push(r) },
  );
  return {
    outputs: g.outputs,
    passes: reports,
    debugprint: (opts?: { readonly trace?: boolean }) =>
      debugprintNodes(g.outputs, { label: fusedLabel, trace: opts?.trace === true }),
  };
}

export interface PassInfo {
  readonly name: string;
  readonly doc: string;
  readonly origin: 'builtin' | 'user';
  /** Whether the pipeline for these options runs it (registered user passes that are not added or global do not). */
  readonly enabled: boolean;
}

/**
 * The passes of the pipeline K.function would run with these options, in order, then the
 * registered user passes it would not run. `theanine passes` prints this list.
 */
export function listPasses(opts?: OptimizeOptions): PassInfo[] {
  const { level, passes } = options('listPasses', opts);
  const list = resolvePipeline(level, cpuTargetFusion, passes);
  const seen = new Set<string>();
  const out: PassInfo[] = [];
  for (const p of list) {
    if (seen.has(p.name)) continue; // canonicalize runs twice; list it once
    seen.add(p.name);
    out.push({ name: p.name, doc: p.doc, origin: isUserPass(p) ? 'user' : 'builtin', enabled: true });
  }
  for (const p of userPasses())
    if (!seen.has(p.name)) out.push({ name: p.name, doc: p.doc, origin: 'user', enabled: false });
  return out;
}

/** Just the names, in pipeline order, built-in and user (registered ones included). */
export function passNames(opts?: OptimizeOptions): string[] {
  return listPasses(opts).map((p) => p.name);
}

export { builtinPassNames };

/**
 * The optimizer as the CLI's `theanine passes` and `theanine graph --optimized` use it:
 * `run(outputs)` gives the optimized outputs and one record per pass.
 */
export const optimizer = {
  run(
    outputs: readonly Node[],
    opts?: OptimizeOptions,
  ): { outputs: readonly Node[]; passes: { name: string; seconds: number; nodes: number }[] } {
    const g = optimize(outputs, opts);
    return {
      outputs: g.outputs,
      passes: g.passes.map((p) => ({ name: p.name, seconds: p.ms / 1000, nodes: p.nodesAfter })),
    };
  },
};
