// The equality-saturation run: grow the e-graph of a graph by its rules, iteration by iteration
// (every rule searched on one snapshot, then every match applied, then one rebuild: egg's
// Runner), until nothing new appears or a limit is reached (nodes, iterations, milliseconds;
// each checked before an iteration starts, so a run exceeds a limit by one iteration at most),
// then extract the cheapest graph. The graph it was given (the greedy pipeline's result) is the
// floor: the extracted graph is returned only when the cost model rates it cheaper as a DAG.
import type { Graph } from '../../ir/graph.js';
import { isInferenceFailure } from '../../ir/build.js';
import { sameType } from '../../ir/types.js';
import { RewriteError } from '../rewrite.js';
import { graphCost, type CostModel } from './cost.js';
import { EGraph, type ClassId } from './egraph.js';
import { instantiate, search, type Match } from './ematch.js';
import { extract } from './extract.js';
import type { EqRule, NodeRule, PatternRule } from './rules.js';

export interface EqsatLimits {
  /** Stop once the e-graph holds this many e-nodes. */
  readonly nodes: number;
  readonly iterations: number;
  /** Stop once this many milliseconds have passed. */
  readonly ms: number;
  /**
   * egg's BackoffScheduler: a rule that finds more than this many matches (doubled for each time
   * it was banned, k) in an iteration applies none of them and sits out 1 + 2^k iterations (egg:
   * 5 * 2^k; shorter here, where a run has 8 iterations), so associativity and factoring cannot
   * crowd out the other rules. A run is saturated only when no rule sits out.
   */
  readonly matchesPerRule: number;
  /** The extracted graph replaces greedy's only when its cost is lower by at least this fraction (the model's margin of error). */
  readonly minGain: number;
}

export const DEFAULT_LIMITS: EqsatLimits = {
  nodes: 10000,
  iterations: 8,
  ms: 500,
  matchesPerRule: 1000,
  minGain: 0.02,
};

export interface IterationReport {
  /** E-nodes and e-classes when the iteration started, and the milliseconds since the run began. */
  readonly startNodes: number;
  readonly startMs: number;
  readonly nodes: number;
  readonly classes: number;
  readonly ms: number;
  /** Matches applied, by rule. */
  readonly applied: Readonly<Record<string, number>>;
}

export type StopReason = 'saturated' | 'nodes' | 'iterations' | 'time';

export interface EqsatReport {
  readonly iterations: readonly IterationReport[];
  readonly stop: StopReason;
  /** The DAG costs of the graph given (greedy's) and of the extracted one. */
  readonly greedyCost: number;
  readonly extractedCost: number;
  /** Which graph was returned: the extracted one only when it is cheaper by limits.minGain at least. */
  readonly chose: 'eqsat' | 'greedy';
  readonly ms: number;
  readonly limits: EqsatLimits;
  /** Why extraction failed (a bug, reported here and by THEANINE_DEBUG=passes' eqsat line; greedy's graph stands). */
  readonly error?: string;
}

function applyPattern(eg: EGraph, r: PatternRule, m: Match): boolean {
  if (r.when !== undefined && !r.when(m.subst, eg, m.cls)) return false;
  const to = typeof r.to === 'function' ? r.to(m.subst, eg, m.cls) : instantiate(eg, r.to, m.subst, m.cls);
  return to !== undefined && eg.union(m.cls, to);
}

function guarded<T>(r: EqRule, what: () => string, f: () => T): T | undefined {
  try {
    return f();
  } catch (e) {
    if (isInferenceFailure(e)) return undefined;
    if (e instanceof RewriteError) throw e;
    throw new Error(
      `eqsat rule ${JSON.stringify(r.name)} threw on ${what()}: ${e instanceof Error ? e.message : String(e)}`,
      { cause: e },
    );
  }
}

/** A node rule over every e-node of its ops: the replacement of the e-node's IR form, merged with its class. */
function runNodeRule(eg: EGraph, r: NodeRule, byOp: Map<string, ClassId[]>, limit: number): number {
  const ops = r.rewrite.on === '*' ? [...byOp.keys()] : r.rewrite.on;
  let n = 0;
  for (const op of ops) {
    for (const id of byOp.get(op) ?? []) {
      for (const e of [...eg.get(id).nodes]) {
        if (e.op !== op || e.leaf !== undefined || n >= limit) continue;
        const node = eg.materialize(e);
        const out = guarded(
          r,
          () => `${node.op} node`,
          () => r.rewrite.apply(node),
        );
        if (out === undefined || out === node || !sameType(out.type, node.type)) continue;
        if (eg.union(id, eg.addNode(out))) n++;
      }
    }
  }
  return n;
}

/** Grows `eg` from `roots` by `rules` within `limits`. */
export function saturate(
  eg: EGraph,
  rules: readonly EqRule[],
  limits: EqsatLimits,
): { iterations: IterationReport[]; stop: StopReason } {
  const t0 = performance.now();
  const iterations: IterationReport[] = [];
  const bans = rules.map(() => ({ times: 0, until: 0 }));
  for (;;) {
    const startMs = performance.now() - t0;
    const startNodes = eg.size;
    if (iterations.length >= limits.iterations) return { iterations, stop: 'iterations' };
    if (startNodes >= limits.nodes) return { iterations, stop: 'nodes' };
    if (startMs >= limits.ms) return { iterations, stop: 'time' };
    const unions = eg.unions;
    const byOp = new Map<string, ClassId[]>();
    for (const c of eg.classes.values())
      for (const op of new Set(c.nodes.map((e) => e.op))) (byOp.get(op) ?? byOp.set(op, []).get(op)!).push(c.id);
    // Search every pattern rule on one snapshot, then apply (egg: matches of one iteration see the same graph).
    const it = iterations.length;
    const found = rules.map((r, i) => {
      if (r.kind !== 'pattern' || bans[i]!.until > it) return [];
      const threshold = limits.matchesPerRule * 2 ** bans[i]!.times;
      const ms = search(eg, r.from, byOp.get(r.from.op) ?? [], threshold + 1);
      if (ms.length <= threshold) return ms;
      bans[i]!.until = it + 1 + 2 ** bans[i]!.times;
      bans[i]!.times++;
      return [];
    });
    const applied: Record<string, number> = {};
    const banned = bans.some((b) => b.until > it + 1);
    rules.forEach((r, i) => {
      let n = 0;
      if (r.kind === 'node') n = runNodeRule(eg, r, byOp, limits.matchesPerRule);
      else
        for (const m of found[i]!)
          if (
            guarded(
              r,
              () => `e-class ${m.cls}`,
              () => applyPattern(eg, r, m),
            ) === true
          )
            n++;
      if (n > 0) applied[r.name] = (applied[r.name] ?? 0) + n;
    });
    eg.rebuild();
    iterations.push({
      startNodes,
      startMs,
      nodes: eg.size,
      classes: eg.classes.size,
      ms: performance.now() - t0,
      applied,
    });
    // Saturated: nothing new, and no rule sitting out that might still add something.
    if (eg.size === startNodes && eg.unions === unions && !banned) return { iterations, stop: 'saturated' };
  }
}

/** Equality saturation of `g` and extraction; `g` itself is the floor. */
export function optimizeGraph(
  g: Graph,
  rules: readonly EqRule[],
  model: CostModel,
  limits: EqsatLimits,
): { graph: Graph; report: EqsatReport } {
  const t0 = performance.now();
  const eg = new EGraph();
  const roots = g.outputs.map((o) => eg.addNode(o, true));
  const { iterations, stop } = saturate(eg, rules, limits);
  const greedyCost = graphCost(g.outputs, model);
  let extracted = g.outputs;
  let error: string | undefined;
  try {
    extracted = extract(eg, roots, model);
  } catch (e) {
    // A failed extraction is a bug; the greedy graph stands, and the report says so.
    if (!(e instanceof Error) || !e.message.startsWith('internal:')) throw e;
    error = e.message;
  }
  const extractedCost = error !== undefined ? Infinity : graphCost(extracted, model);
  const chose = extractedCost < greedyCost * (1 - limits.minGain) ? 'eqsat' : 'greedy';
  const report: EqsatReport = {
    iterations,
    stop,
    greedyCost,
    extractedCost,
    chose,
    ms: performance.now() - t0,
    limits,
    ...(error !== undefined ? { error } : {}),
  };
  return { graph: chose === 'eqsat' ? { outputs: extracted } : g, report };
}
