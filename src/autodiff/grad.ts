// Reverse-mode differentiation over the IR: walk the graph from the loss backwards in reverse
// topological order, apply each op's rule to its output cotangent, and sum cotangents that
// reach a node along several paths. The result is more IR, so gradients of gradients work.
import { apply } from '../ir/build.js';
import { ValueError } from '../ir/errors.js';
import { topoSort } from '../ir/graph.js';
import type { Node } from '../ir/node.js';
import { isBuiltin, isOp } from '../ir/registry.js';
import { isFloat, isInt } from '../ir/dtype.js';
import { NDArray, formatShape } from '../ir/ndarray.js';
import { gradRules } from './rules/index.js';
import { enterGradientOf, exitGradientOf } from '../ir/provenance.js';
import type { GradRule, RuleEntry, TupleGradRule, UnsupportedRule } from './rules/types.js';
import { add, cast, differentiable, reduce } from './ops.js';
import { Remat } from './checkpoint.js';

/** Rules for user ops (defineOp), registered at run time beside the built-in table. */
const userRules = new Map<string, RuleEntry>();

export function registerGradRule(op: string, rule: RuleEntry): void {
  userRules.set(op, rule);
}

/** The gradient rule registered for a user op, if any. */
export function userGradRule(op: string): RuleEntry | undefined {
  return userRules.get(op);
}

/** Rules of single nodes (autodiff.custom_gradient's calls), before their op's. */
const nodeRules = new WeakMap<Node, RuleEntry>();

export function registerNodeRule(n: Node, rule: RuleEntry): void {
  nodeRules.set(n, rule);
}

function ruleOf(n: Node): RuleEntry | undefined {
  const own = nodeRules.get(n);
  if (own !== undefined) return own;
  // Each built-in rule takes its own op's node, which `n` is.
  return isBuiltin(n.op) ? (gradRules[n.op] as RuleEntry) : userRules.get(n.op);
}

function isUnsupported(r: RuleEntry): r is UnsupportedRule {
  return typeof r === 'object' && r !== null && 'unsupported' in r;
}

function isTupleRule(r: RuleEntry): r is TupleGradRule {
  return typeof r === 'object' && r !== null && 'tuple' in r;
}

/**
 * d(sum of loss)/d(wrt[i]) for each i, as graphs. A non-scalar loss is summed first (Keras);
 * a target the loss does not reach, or one of integer/bool dtype, gets zeros of its shape.
 */
export function gradients(loss: Node, wrt: readonly Node[], fn = 'K.gradients'): Node[] {
  if (!differentiable(loss)) {
    throw new ValueError(`${fn}: the loss has dtype ${loss.dtype}; gradients need a float loss`);
  }
  const scalarLoss =
    loss.ndim === 0
      ? loss
      : reduce(
          'sum',
          loss,
          loss.shape.map((_, i) => i),
          false,
        );
  const seed = apply('constant', [], { value: onesScalar(scalarLoss) }, fn);
  const grads = backprop([[scalarLoss, seed]], wrt, { fn });
  return wrt.map((w, i) => grads[i] ?? apply('fill_like', [w], { value: 0, dtype: w.dtype }, fn));
}

export interface BackpropOptions {
  readonly fn: string;
  /** Nodes treated as constants: no cotangent passes through them to their inputs (Theano's consider_constant). */
  readonly considerConstant?: ReadonlySet<Node>;
  /**
   * Theano's op contract for integers: an integer input of an op with a float output (a dot of an
   * integer matrix and float weights) takes the rule's float cotangent, the derivative of the op
   * extended to the reals; an op with an integer output is piecewise constant and sends its inputs
   * nothing, and a cast from an integer (a rule that gives an integer cotangent) defines none.
   * Integer nodes' cotangents are float. Off (K.gradients, TensorFlow's rule): integers get none.
   */
  readonly realIntegers?: boolean;
}

/**
 * Reverse mode from given cotangents: `seeds` pairs a node with the cotangent of its output (its
 * shape and dtype), and the cotangents of `wrt` are the sums of what reaches them, each entry
 * undefined where nothing reaches it (disconnected, or not of a float dtype).
 */
export function backprop(
  seeds: readonly (readonly [Node, Node])[],
  wrt: readonly Node[],
  opts: BackpropOptions,
): (Node | undefined)[] {
  const { fn } = opts;
  const constant = opts.considerConstant ?? new Set<Node>();
  const targets = new Set(wrt);
  // Only nodes on a path from a target to a seed need cotangents.
  const order = topoSort(seeds.map(([n]) => n));
  const reaches = new Set<Node>();
  for (const n of order) {
    if (targets.has(n) || (!constant.has(n) && n.inputs.some((i) => reaches.has(i)))) reaches.add(n);
  }

  const ct = new Map<Node, Node>(); // cotangent of each tensor node
  const tupleCt = new Map<Node, (Node | null)[]>(); // per-item cotangents of tuple nodes
  const accumulate = (n: Node, g: Node) => {
    const prev = ct.get(n);
    ct.set(n, prev === undefined ? g : add(prev, prev.dtype === g.dtype ? g : cast(g, prev.dtype)));
  };
  const real = opts.realIntegers === true;
  const takes = (inp: Node, g: Node) => differentiable(inp) || (real && isInt(inp.dtype) && isFloat(g.dtype));
  for (const [n, g] of seeds) accumulate(n, g);
  const remat = new Remat();

  for (let k = order.length - 1; k >= 0; k--) {
    const n = order[k]!;
    if (!reaches.has(n) || n.inputs.length === 0 || constant.has(n) || (real && isInt(n.dtype))) continue;
    if (isOp(n, 'tuple_get')) {
      const g = ct.get(n);
      if (g === undefined) continue;
      const t = n.inputs[0]!;
      const items = tupleCt.get(t) ?? [];
      const idx = n.attrs.index;
      const prev = items[idx];
      items[idx] = prev === undefined || prev === null ? g : add(prev, g);
      tupleCt.set(t, items);
      continue;
    }
    const rule = ruleOf(n);
    if (rule === undefined) throw new ValueError(`${fn}: op ${JSON.stringify(n.op)} has no gradient rule`);
    if (rule === 'leaf' || rule === 'none') continue;
    if (isUnsupported(rule)) throw new ValueError(`${fn}: cannot differentiate through ${n.op}: ${rule.unsupported}`);
    // The nodes a rule builds record which forward node they differentiate (src/ir/provenance.ts).
    const saved = enterGradientOf(n);
    try {
      let ins: readonly (Node | null)[];
      if (isTupleRule(rule)) {
        const items = tupleCt.get(n);
        if (items === undefined) continue;
        ins = rule.tuple(remat.twin(n, items.find((g) => g !== null && g !== undefined) ?? undefined), items, {
          gradients,
        });
      } else {
        const g = ct.get(n);
        if (g === undefined) continue;
        // Inside a checkpointed region the rule reads the recomputed node (src/autodiff/checkpoint.ts).
        ins = (rule as GradRule)(remat.twin(n, g), g);
      }
      n.inputs.forEach((inp, i) => {
        const gi = ins[i];
        if (gi === null || gi === undefined || !reaches.has(inp) || !takes(inp, gi)) return;
        checkCotangent(fn, n, i, inp, gi);
        accumulate(inp, gi.dtype === inp.dtype || !differentiable(inp) ? gi : cast(gi, inp.dtype));
      });
    } finally {
      exitGradientOf(saved);
    }
  }
  return wrt.map((w) => (differentiable(w) || (real && isInt(w.dtype)) ? ct.get(w) : undefined));
}

function onesScalar(n: Node): NDArray {
  return new NDArray([1], [], n.dtype);
}

/** A rule's cotangent must have its input's static shape (known dims agree). */
function checkCotangent(fn: string, n: Node, i: number, inp: Node, g: Node): void {
  const ok = g.ndim === inp.ndim && g.shape.every((d, j) => d === null || inp.shape[j] === null || d === inp.shape[j]);
  if (!ok) {
    throw new Error(
      `${fn}: internal: the rule of ${n.op} gave input ${i} a cotangent of shape ${formatShape(g.shape)} for an input of shape ${formatShape(inp.shape)}`,
    );
  }
}
