// Forward-mode differentiation over the IR: walk the graph from the seeds forwards in topological
// order, and give each node the tangent of its output from the tangents of its inputs through the
// op's tangent rule (tangent/index.ts), in one pass (dual numbers, as graphs). Nodes that do not
// depend on a seed have a zero tangent, kept symbolic (null) so no zeros are built.
import { apply } from '../ir/build.js';
import { ValueError } from '../ir/errors.js';
import { topoSort } from '../ir/graph.js';
import type { Node } from '../ir/node.js';
import { isBuiltin, isOp } from '../ir/registry.js';
import { formatShape } from '../ir/ndarray.js';
import { enterGradientOf, exitGradientOf } from '../ir/provenance.js';
import { userGradRule } from './grad.js';
import { broadcastTo, cast, differentiable } from './ops.js';
import type { GradRule, RuleEntry, UnsupportedRule } from './rules/types.js';
import { tangentRules } from './tangent/index.js';
import { viaReverse } from './tangent/linear.js';
import type { TangentEntry, TangentRule, TupleTangentRule } from './tangent/types.js';

function isUnsupported(r: TangentEntry | RuleEntry): r is UnsupportedRule {
  return typeof r === 'object' && r !== null && 'unsupported' in r;
}

/** The built-in rule, or for a user op (defineOp) the transpose of its gradient rule. */
function ruleOf(n: Node): TangentEntry | undefined {
  if (isBuiltin(n.op)) return tangentRules[n.op] as TangentEntry;
  const g = userGradRule(n.op);
  if (g === undefined || typeof g !== 'function') return g as TangentEntry | undefined;
  return viaReverse(g as GradRule);
}

/**
 * The tangents of `outputs` when each `wrt[i]` moves along `points[i]` (same shape and dtype as
 * wrt[i]): the Jacobian-vector product, as graphs. An entry is null where the output does not
 * depend on any seed (or is not a float tensor); the caller chooses how to materialise zeros.
 */
export function tangents(
  outputs: readonly Node[],
  wrt: readonly Node[],
  points: readonly Node[],
  fn = 'autodiff.Rop',
): (Node | null)[] {
  const tan = new Map<Node, Node | null>();
  const tupleTan = new Map<Node, readonly (Node | null)[]>();
  wrt.forEach((w, i) => {
    if (differentiable(w)) tan.set(w, points[i]!);
  });
  for (const n of topoSort(outputs)) {
    if (tan.has(n) || n.inputs.length === 0) continue;
    const ts = n.inputs.map((x) => tan.get(x) ?? null);
    if (isOp(n, 'tuple_get')) {
      tan.set(n, tupleTan.get(n.inputs[0]!)?.[n.attrs.index] ?? null);
      continue;
    }
    if (ts.every((t) => t === null)) continue;
    const rule = ruleOf(n);
    if (rule === undefined) throw new ValueError(`${fn}: op ${JSON.stringify(n.op)} has no tangent rule`);
    if (rule === 'leaf' || rule === 'none') continue;
    if (isUnsupported(rule))
      throw new ValueError(`${fn}: cannot differentiate through ${n.op} in forward mode: ${rule.unsupported}`);
    const saved = enterGradientOf(n);
    try {
      if (typeof rule === 'object') tupleTan.set(n, (rule as TupleTangentRule).tuple(n, ts, { tangents }));
      else tan.set(n, conform(fn, n, (rule as TangentRule)(n, ts)));
    } finally {
      exitGradientOf(saved);
    }
  }
  return outputs.map((o) => tan.get(o) ?? null);
}

/** A rule's tangent in the node's dtype and broadcast to its shape (elementwise rules leave an input's shape). */
function conform(fn: string, n: Node, t: Node | null): Node | null {
  if (t === null || !differentiable(n)) return null;
  const c = t.dtype === n.dtype ? t : cast(t, n.dtype);
  const b = c.ndim === n.ndim && c.shape.every((d, j) => d === n.shape[j]) ? c : broadcastTo(c, n);
  const ok = b.ndim === n.ndim && b.shape.every((d, j) => d === null || n.shape[j] === null || d === n.shape[j]);
  if (!ok)
    throw new Error(
      `${fn}: internal: the tangent rule of ${n.op} gave a tangent of shape ${formatShape(t.shape)} for an output of shape ${formatShape(n.shape)}`,
    );
  return b;
}

/** Zeros of x's shape and dtype, for an output whose tangent is zero. */
export function zerosOf(x: Node, fn: string): Node {
  return apply('fill_like', [x], { value: 0, dtype: x.dtype }, fn);
}
