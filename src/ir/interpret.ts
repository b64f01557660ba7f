// The reference interpreter: the definition of what a graph means. Node by node, in
// topological order, with each op's reference implementation. Passes and devices are
// tested against it, so it stays simple.
import { type NDArray, formatShape } from './ndarray.js';
import type { EvalContext } from './op.js';
import { topoSort } from './graph.js';
import type { Node } from './node.js';
import { getOp } from './registry.js';
import { walkGraph } from './walk.js';
import type { TensorType } from './types.js';

export interface EvalOptions {
  /** Values for placeholders (and optionally the learning phase), by node. */
  readonly feeds?: ReadonlyMap<Node, NDArray>;
  readonly learningPhase?: number;
  readonly epoch?: number;
  readonly print?: (message: string) => void;
}

let epochCounter = 0;

/** A fresh epoch number, so unseeded random ops draw afresh on each evaluation. */
export function nextEpoch(): number {
  return ++epochCounter;
}

/**
 * The context ops' reference implementations run in; its `evaluate` runs inner graphs (a Scan's
 * step, a fused body) through this interpreter with the same learning phase, epoch and printer.
 */
export function evalContext(opts: {
  readonly learningPhase: number;
  readonly epoch: number;
  readonly print: (message: string) => void;
}): EvalContext {
  return new Context(opts.learningPhase, opts.epoch, opts.print);
}

/** evalContext's object: a class, so that a compiled call makes no closure for it (one per call before). */
class Context implements EvalContext {
  constructor(
    readonly learningPhase: number,
    readonly epoch: number,
    readonly print: (message: string) => void,
  ) {}
  evaluate(outputs: readonly Node[], feeds: ReadonlyMap<Node, NDArray>): NDArray[] {
    return evaluate(outputs, { feeds, learningPhase: this.learningPhase, epoch: this.epoch, print: this.print });
  }
}

export function evaluate(outputs: readonly Node[], opts: EvalOptions = {}): NDArray[] {
  const ctx = evalContext({
    learningPhase: opts.learningPhase ?? 0,
    epoch: opts.epoch ?? nextEpoch(),
    print: opts.print ?? ((m) => console.log(m)),
  });
  const values = new Map<Node, NDArray>();
  const feeds = opts.feeds;
  const order = topoSort(outputs);
  // Every variable is read at the start of the call: a call made from inside this one
  // (a user op's reference calling a compiled function) that updates a variable does not change
  // what this call computes, as on the compiled targets, which bind variables before any step.
  for (const n of order) if (n.op === 'variable' && feeds?.get(n) === undefined) values.set(n, n.cell!.value);
  return walkGraph(order, outputs, values, {
    given: (n) => feeds?.get(n),
    compute: (n, ins) => getOp(n.op).impl(ins, n.attrs, ctx),
    computeTuple: (n, ins) => {
      const def = getOp(n.op);
      if (def.implTuple === undefined) throw new Error(`internal: op ${n.op} has a tuple type but no implTuple`);
      return def.implTuple(ins, n.attrs, ctx);
    },
    check: checkAgainstType,
  });
}

/** The value must have the type's dtype and agree with every known static dim. */
export function checkAgainstType(n: Node, t: TensorType, v: NDArray, where = ''): void {
  const ok =
    v.dtype === t.dtype && v.shape.length === t.shape.length && t.shape.every((d, i) => d === null || d === v.shape[i]);
  if (!ok) {
    throw new Error(
      `internal: op ${n.op}${where} produced ${v.dtype} ${formatShape(v.shape)} but its type is ${t.dtype} ${formatShape(t.shape)}`,
    );
  }
}
