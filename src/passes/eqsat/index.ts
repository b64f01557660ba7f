// The `eqsat` optimizer level's pass: equality saturation over the greedy pipeline's result
// (./saturate.ts), with the target's cost model (./cost.ts). Its limits come from THEANINE_EQSAT
// ("nodes=10000,iterations=8,ms=500,matches=1000,gain=2", any subset; gain in percent) or the caller.
import type { Graph } from '../../ir/graph.js';
import { platform } from '#platform';
import type { FusionTarget } from '../fusion.js';
import type { Pass } from '../pass.js';
import type { Rewrite } from '../rewrite.js';
import { costModel, type CostModel } from './cost.js';
import { builtinRules, fromRewrite, type EqRule } from './rules.js';
import { DEFAULT_LIMITS, optimizeGraph, type EqsatLimits, type EqsatReport } from './saturate.js';

export { EGraph } from './egraph.js';
export { costModel, graphCost, DEFAULT_WEIGHTS, type CostModel, type CostWeights } from './cost.js';
export { builtinRules, algebraRules, fromRewrite, type EqRule, type PatternRule, type NodeRule } from './rules.js';
export { DEFAULT_LIMITS, optimizeGraph, saturate, type EqsatLimits, type EqsatReport } from './saturate.js';
export { extract } from './extract.js';

const LIMIT_KEYS: Readonly<Record<string, keyof EqsatLimits>> = {
  nodes: 'nodes',
  iterations: 'iterations',
  ms: 'ms',
  matches: 'matchesPerRule',
  gain: 'minGain',
};

/** THEANINE_EQSAT's limits over the defaults; a malformed value is an error naming the variable. */
export function limitsFromEnv(v: string | undefined = platform.env('THEANINE_EQSAT')): EqsatLimits {
  const out: Record<keyof EqsatLimits, number> = { ...DEFAULT_LIMITS };
  if (v === undefined || v.trim() === '') return out;
  for (const part of v.split(',')) {
    const [k, x] = part.split('=').map((s) => s.trim());
    const key = LIMIT_KEYS[k ?? ''];
    const n = Number(x);
    if (
      key === undefined ||
      x === undefined ||
      !/^[0-9]+$/.test(x) ||
      (n < 1 && key !== 'minGain') ||
      (key === 'minGain' && n >= 100)
    ) {
      throw new Error(
        `environment variable THEANINE_EQSAT is ${JSON.stringify(v)}: each entry must be name=positive integer with name one of ${Object.keys(LIMIT_KEYS).join(', ')} (gain: a percentage 0..99)`,
      );
    }
    out[key] = key === 'minGain' ? n / 100 : n;
  }
  return out;
}

/** The report of the latest eqsat run (the bench, the viewer and THEANINE_DEBUG read it). */
export let lastEqsatReport: EqsatReport | undefined;

export interface EqsatOptions {
  /** Local rewrites to add as equalities (user passes' rewrites). */
  readonly rules?: readonly Rewrite[];
  readonly limits?: Partial<EqsatLimits>;
  readonly cost?: CostModel;
}

/** One line about a run: the e-graph's growth, why it stopped, the costs and the choice. */
export function formatEqsatReport(r: EqsatReport): string {
  const growth = r.iterations.map((i) => i.nodes).join(' -> ');
  const err = r.error === undefined ? '' : `; extraction failed (${r.error})`;
  return `${r.iterations.length} iterations (e-nodes ${growth || 'none'}), stopped: ${r.stop}, ${r.ms.toFixed(1)} ms; cost greedy ${r.greedyCost.toExponential(3)}, extracted ${r.extractedCost.toExponential(3)}: ${r.chose === 'eqsat' ? 'extracted graph' : "greedy's graph"}${err}`;
}

/** Equality saturation and extraction for `target`, the graph it is given (the greedy result) as the floor. */
export function eqsatPass(target: FusionTarget, opts: EqsatOptions = {}): Pass {
  const model = opts.cost ?? costModel(target);
  const extra: EqRule[] = (opts.rules ?? []).map(fromRewrite);
  let latest: EqsatReport | undefined;
  const doc =
    "equality saturation: the greedy rules and algebraic identities as equalities, the cheapest graph under the target's cost model (never worse than greedy)";
  return {
    name: 'eqsat',
    doc,
    run(g: Graph): Graph {
      const limits = { ...limitsFromEnv(), ...opts.limits };
      const { graph, report } = optimizeGraph(g, [...builtinRules(), ...extra], model, limits);
      lastEqsatReport = latest = report;
      return graph;
    },
    note: () => (latest === undefined ? undefined : formatEqsatReport(latest)),
  };
}
