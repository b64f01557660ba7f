// What a pass is: a named pure function Graph -> Graph. Nodes are immutable and hash-consed,
// so a pass rebuilds what it changes through `apply` and equal subgraphs merge by themselves.
import type { Graph } from '../ir/graph.js';
import { topoSort } from '../ir/graph.js';
import { verify } from '../ir/verify.js';
import { formatProvenance, unionProvenance, untraced, type Provenance } from '../ir/provenance.js';
import type { Node } from '../ir/node.js';
import { platform } from '#platform';
import { debugprintNodes, type PrintOptions } from '../ir/printer.js';
import { activeChecker } from './check.js';

export interface Pass {
  readonly name: string;
  /** One line: what the pass rewrites (shown by THEANINE_DEBUG=passes and in the docs). */
  readonly doc: string;
  run(g: Graph): Graph;
  /** A line about the latest run, for THEANINE_DEBUG=passes (the eqsat pass: its search and choice). */
  note?(): string | undefined;
}

export function definePass(name: string, doc: string, run: (g: Graph) => Graph): Pass {
  return { name, doc, run };
}

export interface PassReport {
  readonly name: string;
  readonly ms: number;
  readonly nodesBefore: number;
  readonly nodesAfter: number;
  /** The user's calls behind the nodes the pass made (src/ir/provenance.ts): which lines it touched. */
  readonly touched?: readonly Provenance[];
  /** The pass's own line about this run (Pass.note). */
  readonly note?: string;
}

export interface RunOptions {
  /**
   * Run the verifier after every pass (compiling does not by default: it is a cost per compile).
   * THEANINE_VERIFY_PASSES=1 turns it on for every pipeline (the test setup sets it).
   */
  readonly verify?: boolean;
  /** Called after each pass with its report and the graph it produced. */
  readonly onPass?: (report: PassReport, after: Graph) => void;
}

/**
 * Runs `passes` in order. Node counts are only computed when someone listens. Nodes the passes
 * build record no public call of their own (a K.eval that compiles): they inherit the records
 * of the nodes they replace (src/ir/provenance.ts).
 */
export function runPasses(passes: readonly Pass[], g: Graph, opts: RunOptions = {}): Graph {
  return untraced(() => runAll(passes, g, opts));
}

function runAll(passes: readonly Pass[], g: Graph, opts: RunOptions): Graph {
  let cur = g;
  const count = opts.onPass !== undefined;
  let beforeNodes = count ? new Set(topoSort(cur.outputs)) : new Set<Node>();
  const check = opts.verify ?? platform.env('THEANINE_VERIFY_PASSES') === '1';
  for (const p of passes) {
    const t0 = performance.now();
    const next = p.run(cur);
    const ms = performance.now() - t0;
    if (check) {
      try {
        verify(next.outputs);
      } catch (e) {
        throw new Error(
          `pass ${JSON.stringify(p.name)} produced a graph the verifier rejects: ${e instanceof Error ? e.message : String(e)}`,
          { cause: e },
        );
      }
    }
    // Checking mode: each output after the pass computes what it did before (src/passes/check.ts).
    const checker = activeChecker();
    if (checker !== undefined)
      cur.outputs.forEach((o, i) => {
        if (next.outputs[i] !== o) checker.replaced(p.name, o, next.outputs[i]!, 'pass');
      });
    if (count) {
      const afterNodes = topoSort(next.outputs);
      const made = afterNodes.filter((n) => !beforeNodes.has(n));
      const touched = unionProvenance(made.map((n) => n.provenance));
      const note = p.note?.();
      opts.onPass!(
        {
          name: p.name,
          ms,
          nodesBefore: beforeNodes.size,
          nodesAfter: afterNodes.length,
          ...(touched.length > 0 ? { touched } : {}),
          ...(note !== undefined ? { note } : {}),
        },
        next,
      );
      beforeNodes = new Set(afterNodes);
    }
    cur = next;
  }
  return cur;
}

/** The THEANINE_DEBUG=passes line for one pass, followed by the graph after it. */
export function formatPassReport(r: PassReport, after: Graph, print: PrintOptions = {}): string {
  const head = `[theanine passes] ${r.name}: ${r.ms.toFixed(3)} ms, ${r.nodesBefore} -> ${r.nodesAfter} nodes`;
  const touched =
    r.touched === undefined ? '' : `\n[theanine passes] ${r.name} touched: ${formatProvenance(r.touched, 8)}`;
  const note = r.note === undefined ? '' : `\n[theanine passes] ${r.name}: ${r.note}`;
  return `${head}${touched}${note}\n${debugprintNodes(after.outputs, print)}\n`;
}
