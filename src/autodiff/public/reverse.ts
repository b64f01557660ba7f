// Lop / vjp and grad: reverse mode from given output cotangents, with Theano's options.
import { isInt } from '../../ir/dtype.js';
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
  const gs = backprop(
    fs.map((x, i) => [x, us[i]!] as const),
    ws,
    { fn },
  );
  return shaped(
    wrt,
    gs.map((g, i) => g ?? zerosOf(ws[i]!, fn)),
  ) as W extends Node ? Node : Node[];
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
 * otherwise. Integers follow Theano's op contract (backprop's realIntegers): an integer wrt read
 * by an op with a float output gets that op's derivative extended to the reals (a float
 * tensor); one reached only through casts or integer-valued ops gets zeros of its own dtype.
 * An integer cost is differentiable with respect to itself (1, float64: Theano's default floatX)
 * and to what reaches it through float ops.
 */
export function grad<W extends Tensors>(
  cost: Node | null,
  wrt: W,
  options: GradOptions = {},
): W extends Node ? Node | null : (Node | null)[] {
  const fn = 'autodiff.grad';
  const ws = listOf(fn, 'wrt', wrt);
  const disc = options.disconnected_inputs ?? 'raise';
  const ret = options.return_disconnected ?? 'zero';
  if (!DISCONNECTED.includes(disc))
    throw new ValueError(
      `${fn}: disconnected_inputs is ${JSON.stringify(disc)}; allowed: ${DISCONNECTED.map((d) => `'${d}'`).join(', ')}`,
    );
  if (!RETURN.includes(ret))
    throw new ValueError(
      `${fn}: return_disconnected is ${JSON.stringify(ret)}; allowed: ${RETURN.map((d) => `'${d}'`).join(', ')}`,
    );
  const seeds = knownGrads(fn, options.known_grads);
  if (cost !== null) {
    if (!(cost instanceof Node)) throw new TypeError(`${fn}: cost must be a tensor or null, got ${describe(cost)}`);
    if (cost.ndim !== 0)
      throw new TypeError(
        `${fn}: cost must be a scalar, got a tensor of rank ${cost.ndim}; sum it or use autodiff.Lop / autodiff.jacobian`,
      );
    if (!differentiable(cost) && !isInt(cost.dtype))
      throw new TypeError(`${fn}: cost is ${cost.dtype}; gradients need a float or integer cost`);
    seeds.unshift([cost, scalar(1, differentiable(cost) ? cost.dtype : 'float64')]);
  } else if (seeds.length === 0) {
    throw new ValueError(`${fn}: cost is null and known_grads is empty; give a cost, known gradients, or both`);
  }
  const consider = new Set(listOf(fn, 'consider_constant', options.consider_constant ?? []));
  const gs = backprop(seeds, ws, { fn, considerConstant: consider, realIntegers: true });
  const out = gs.map((g, i) => {
    if (g !== undefined) return g;
    const w = ws[i]!;
    // Integer wrt are connected with a zero gradient (Theano); only float ones can be disconnected.
    if (
      differentiable(w) &&
      !reachable(
        seeds.map(([n]) => n),
        w,
        consider,
      )
    ) {
      disconnected(
        fn,
        disc,
        `the cost does not depend on wrt${Array.isArray(wrt) ? `[${i}]` : ''} (${w.name ?? w.op})`,
      );
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
    checkPairs(fn, `known_grads[${i}][1]`, [x], `known_grads[${i}][0]`, [gx], true);
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

/**
 * Theano's subgraph_grad: a backward pass in pieces. The gradients of `cost` and of the known
 * cotangents `start` (pairs of a node and its cotangent, as known_grads), or of either, with
 * respect to `wrt` and to `end`, where `end` are treated as constants (the pass stops there).
 * Returns `[wrt gradients, end gradients]`; the end gradients, paired with `end`, are the next
 * piece's `start`, so a network's gradients can be taken layer by layer (adding each layer's own
 * cost on the way) with the same values as one pass. Disconnected entries get zeros.
 */
export function subgraph_grad(
  wrt: readonly Node[],
  end: readonly Node[],
  start: GradOptions['known_grads'] | null = null,
  cost: Node | null = null,
): [Node[], Node[]] {
  const fn = 'autodiff.subgraph_grad';
  if (!Array.isArray(wrt) || !Array.isArray(end))
    throw new TypeError(`${fn}: wrt and end must be arrays of tensors, got ${describe(wrt)} and ${describe(end)}`);
  const ws = listOf(fn, 'wrt', wrt);
  const es = listOf(fn, 'end', end);
  const known = start ?? undefined;
  if (cost === null && (known === undefined || (known instanceof Map ? known.size : known.length) === 0)) {
    throw new ValueError(`${fn}: give a cost, start (the cotangents of nodes above), or both`);
  }
  const params = [...new Set([...ws, ...es])];
  const gs = grad(cost, params, {
    ...(known !== undefined ? { known_grads: known } : {}),
    consider_constant: es,
    disconnected_inputs: 'ignore',
  }) as Node[];
  const of = new Map(params.map((p, i) => [p, gs[i]!] as const));
  return [ws.map((w) => of.get(w)!), es.map((e) => of.get(e)!)];
}
