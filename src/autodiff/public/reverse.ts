// Lop / vjp and grad: reverse mode from given output cotangents, with Theano's options.
import { ValueError } from '../../ir/errors.js';
import { Node } from '../../ir/node.js';
import { describe } from '../../ir/ndarray.js';
import { zerosOf } from '../forward.js';
import { backprop } from '../grad.js';
import { differentiable, scalar } from '../ops.js';
import { checkPairs, listOf, shaped, type Tensors } from './args.js';

/**
 * The row vector times the Jacobian: sum_j eval_points_j^T J_{f_j}(wrt_i) for each wrt_i (Theano's
 * Lop, JAX's vjp). `eval_points` match `f` one to one; the result has `wrt`'s structure, zeros
 * where f does not depend on a wrt.
 */
export function Lop<W extends Tensors>(f: Tensors, wrt: W, eval_points: Tensors): W extends Node ? Node : Node[] {
  const fn = 'autodiff.Lop';
  const fs = listOf(fn, 'f', f);
  const ws = listOf(fn, 'wrt', wrt);
  const us = listOf(fn, 'eval_points', eval_points);
  checkPairs(fn, 'eval_points', fs, 'f', us);
  const gs = backprop(fs.map((x, i) => [x, us[i]!] as const), ws, { fn });
  return shaped(wrt, gs.map((g, i) => g ?? zerosOf(ws[i]!, fn))) as W extends Node ? Node : Node[];
}

/** Alias of Lop, in JAX's name. */
export const vjp = Lop;

export interface GradOptions {
  /** Extra output cotangents: each [tensor, its gradient] pair seeds the walk there (Theano's known_grads). */
  readonly known_grads?: readonly (readonly [Node, Node])[] | Map<Node, Node>;
  /** Tensors treated as constants: no gradient passes through them. */
  readonly consider_constant?: readonly Node[];
  /** What a wrt that the cost does not depend on does: 'raise' (default), 'warn' or 'ignore'. */
  readonly disconnected_inputs?: 'raise' | 'warn' | 'ignore';
  /** What a disconnected wrt gets: 'zero' (default, zeros of its shape) or 'None' (null). */
  readonly return_disconnected?: 'zero' | 'None';
}

const DISCONNECTED = ['raise', 'warn', 'ignore'] as const;
const RETURN = ['zero', 'None'] as const;

/**
 * d cost / d wrt with Theano's semantics: `cost` is a scalar (or null when known_grads seeds the
 * walk), a wrt that the cost does not reach is an error unless `disconnected_inputs` says
 * otherwise, and integer wrt get zeros (Theano: their gradient is defined as zero).
 */
export function grad<W extends Tensors>(cost: Node | null, wrt: W, options: GradOptions = {}): W extends Node ? Node | null : (Node | null)[] {
  const fn = 'autodiff.grad';
  const ws = listOf(fn, 'wrt', wrt);
  const disc = options.disconnected_inputs ?? 'raise';
  const ret = options.return_disconnected ?? 'zero';
  if (!DISCONNECTED.includes(disc)) throw new ValueError(`${fn}: disconnected_inputs is ${JSON.stringify(disc)}; allowed: ${DISCONNECTED.map((d) => `'${d}'`).join(', ')}`);
  if (!RETURN.includes(ret)) throw new ValueError(`${fn}: return_disconnected is ${JSON.stringify(ret)}; allowed: ${RETURN.map((d) => `'${d}'`).join(', ')}`);
  const seeds = knownGrads(fn, options.known_grads);
  if (cost !== null) {
    if (!(cost instanceof Node)) throw new TypeError(`${fn}: cost must be a tensor or null, got ${describe(cost)}`);
    if (cost.ndim !== 0) throw new TypeError(`${fn}: cost must be a scalar, got a tensor of rank ${cost.ndim}; sum it or use autodiff.Lop / autodiff.jacobian`);
    if (!differentiable(cost)) throw new TypeError(`${fn}: cost is ${cost.dtype}; gradients need a float cost`);
    seeds.unshift([cost, scalar(1, cost.dtype)]);
  } else if (seeds.length === 0) {
    throw new ValueError(`${fn}: cost is null and known_grads is empty; give a cost, known gradients, or both`);
  }
  const consider = new Set(listOf(fn, 'consider_constant', options.consider_constant ?? []));
  const gs = backprop(seeds, ws, { fn, considerConstant: consider });
  const out = gs.map((g, i) => {
    if (g !== undefined) return g;
    const w = ws[i]!;
    // Integer wrt are connected with a zero gradient (Theano); only float ones can be disconnected.
    if (differentiable(w) && !reachable(seeds.map(([n]) => n), w, consider)) {
      disconnected(fn, disc, `the cost does not depend on wrt${Array.isArray(wrt) ? `[${i}]` : ''} (${w.name ?? w.op})`);
      if (ret === 'None') return null;
    }
    return zerosOf(w, fn);
  });
  return shaped(wrt, out) as W extends Node ? Node | null : (Node | null)[];
}

/** A disconnected wrt: an error, a warning or nothing, as `mode` says (Theano's disconnected_inputs). */
export function disconnected(fn: string, mode: 'raise' | 'warn' | 'ignore', what: string): void {
  const msg = `${fn}: ${what}; pass disconnected_inputs 'warn' or 'ignore' to allow it`;
  if (mode === 'raise') throw new ValueError(msg);
  if (mode === 'warn') console.warn(msg);
}

function knownGrads(fn: string, kg: GradOptions['known_grads']): [Node, Node][] {
  if (kg === undefined) return [];
  const pairs = kg instanceof Map ? [...kg] : [...kg];
  return pairs.map(([v, g], i) => {
    const [x, gx] = [listOf(fn, `known_grads[${i}][0]`, v)[0]!, listOf(fn, `known_grads[${i}][1]`, g)[0]!];
    checkPairs(fn, `known_grads[${i}][1]`, [x], `known_grads[${i}][0]`, [gx]);
    return [x, gx];
  });
}

/** Whether `w` is an ancestor of one of `roots` along a path that no constant and no stop_gradient (disconnected_grad) cuts. */
export function reachable(roots: readonly Node[], w: Node, constant: ReadonlySet<Node>): boolean {
  const seen = new Set<Node>();
  const stack = [...roots];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n === w) return true;
    if (seen.has(n) || constant.has(n) || n.op === 'stop_gradient') continue;
    seen.add(n);
    stack.push(...n.inputs);
  }
  return false;
}
