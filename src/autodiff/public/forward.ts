// Rop / jvp: the Jacobian of f times a vector, by forward mode (one pass over f's graph, each op's
// tangent rule) or by Theano's double-reverse construction (the Lop of a Lop).
import { ValueError } from '../../ir/errors.js';
import type { Node } from '../../ir/node.js';
import { tangents, zerosOf } from '../forward.js';
import { backprop } from '../grad.js';
import { add, differentiable, mul, reduce, scalar } from '../ops.js';
import { checkPairs, listOf, shaped, type Tensors } from './args.js';

export interface RopOptions {
  /**
   * 'forward' (default): the tangent graph, built in one forward pass (dual numbers).
   * 'reverse': Theano's construction, d/du <Lop(f, wrt, u), v>, from the gradient rules only.
   */
  readonly method?: 'forward' | 'reverse';
}

/**
 * The directional derivative of `f` at the graph's point along `eval_points`: sum_i J_f(wrt_i) v_i
 * (Theano's Rop, JAX's jvp). `wrt` and `eval_points` match one to one (shape and dtype); the result
 * has `f`'s structure, zeros where f does not depend on wrt.
 */
export function Rop<F extends Tensors>(
  f: F,
  wrt: Tensors,
  eval_points: Tensors,
  options: RopOptions = {},
): F extends Node ? Node : Node[] {
  const fn = 'autodiff.Rop';
  const fs = listOf(fn, 'f', f);
  const ws = listOf(fn, 'wrt', wrt);
  const vs = listOf(fn, 'eval_points', eval_points);
  checkPairs(fn, 'eval_points', ws, 'wrt', vs);
  fs.forEach((x, i) => {
    // Theano: the R operator of a discrete output (argmax) is undefined.
    if (!differentiable(x))
      throw new ValueError(
        `${fn}: f${Array.isArray(f) ? `[${i}]` : ''} is ${x.dtype}; forward-mode derivatives are defined for float outputs only`,
      );
  });
  const method = options.method ?? 'forward';
  let out: (Node | null)[];
  if (method === 'forward') out = tangents(fs, ws, vs, fn);
  else if (method === 'reverse') out = ropByReverse(fn, fs, ws, vs);
  else throw new ValueError(`${fn}: options.method is ${JSON.stringify(method)}; allowed: 'forward', 'reverse'`);
  return shaped(
    f,
    out.map((t, i) => t ?? zerosOf(fs[i]!, fn)),
  ) as F extends Node ? Node : Node[];
}

/** Alias of Rop, in JAX's name. */
export const jvp = Rop;

/**
 * J v as the gradient with respect to u of <J^T u, v>: the Lop is linear in u, so its gradient
 * is J v, evaluated at any u (here zeros of f's shape; the graph keeps u only for its shape).
 */
function ropByReverse(fn: string, fs: readonly Node[], ws: readonly Node[], vs: readonly Node[]): (Node | null)[] {
  const us = fs.map((x) => zerosOf(x, fn));
  const lop = backprop(
    fs.map((x, i) => [x, us[i]!] as const),
    ws,
    { fn },
  );
  const terms = lop.flatMap((g, i) =>
    g === undefined
      ? []
      : [
          reduce(
            'sum',
            mul(g, vs[i]!),
            g.shape.map((_, k) => k),
            false,
          ),
        ],
  );
  if (terms.length === 0) return fs.map(() => null);
  return backprop([[terms.reduce((a, b) => add(a, b)), scalar(1, terms[0]!.dtype)]], us, { fn }).map((t) => t ?? null);
}
