// Jacobians, Hessians and Hessian-vector products. A Jacobian is one pass per row (reverse: a vjp
// with each basis cotangent) or per column (forward: a jvp with each basis tangent), the passes
// being the steps of one Scan over the rows of an identity matrix (Theano's jacobian scans over
// the output's indices the same way). The Hessian is the forward-mode Jacobian of the gradient.
import { apply } from '../../ir/build.js';
import { ValueError } from '../../ir/errors.js';
import { NDArray, formatShape, sizeOf } from '../../ir/ndarray.js';
import type { Node } from '../../ir/node.js';
import { buildScan, scanArg } from '../../ir/scan.js';
import { isFullyKnown } from '../../ir/types.js';
import { tangents, zerosOf } from '../forward.js';
import { backprop } from '../grad.js';
import { differentiable, reshape, scalar, transpose } from '../ops.js';
import { checkPairs, listOf, shaped, type Tensors } from './args.js';
import { disconnected, reachable } from './reverse.js';

export interface JacobianOptions {
  /** 'reverse': one vjp per element of the expression; 'forward': one jvp per element of each wrt; 'auto' (default): the fewer passes, reverse on a tie. */
  readonly mode?: 'reverse' | 'forward' | 'auto';
  /** A wrt the expression does not depend on: 'raise' (default), 'warn' or 'ignore' (zeros). */
  readonly disconnected_inputs?: 'raise' | 'warn' | 'ignore';
}

type Out<W> = W extends Node ? Node : Node[];

/** The static size of x, or an error naming the function and argument. */
function staticSize(fn: string, arg: string, x: Node): number {
  if (!isFullyKnown(x.shape))
    throw new ValueError(
      `${fn}: ${arg} has shape ${formatShape(x.shape)}; a Jacobian needs static shapes (specify them, e.g. K.placeholder([3]))`,
    );
  return sizeOf(x.shape as number[]);
}

/** The identity matrix's rows, each reshaped to `shape`: the basis directions. */
function basis(shape: readonly number[], dtype: Node['dtype']): Node {
  const n = sizeOf(shape);
  const data = new Float64Array(n * n);
  for (let i = 0; i < n; i++) data[i * n + i] = 1;
  return apply('constant', [], { value: new NDArray(data, [n, ...shape], dtype) }, 'autodiff.jacobian');
}

/** One Scan step per basis direction; `step` maps the direction (an arg of `shape`) to the results. */
function perDirection(fn: string, like: Node, step: (dir: Node) => Node[]): Node[] {
  const shape = like.shape as number[];
  const dir = scanArg(like.type, 'seq0');
  const outs = step(dir);
  return buildScan({
    fn,
    outer: { sequences: [basis(shape, like.dtype)], states: [], constants: [] },
    args: { sequences: [dir], states: [], constants: [] },
    outputs: outs,
    newStates: [],
  }).outputs;
}

/**
 * d expression / d wrt_i for each i, of shape expression.shape + wrt_i.shape (Theano's jacobian;
 * JAX's jacrev / jacfwd by `mode`). Static shapes are required; the result has wrt's structure.
 */
export function jacobian<W extends Tensors>(expression: Node, wrt: W, options: JacobianOptions = {}): Out<W> {
  const fn = 'autodiff.jacobian';
  const y = listOf(fn, 'expression', expression)[0]!;
  const ws = listOf(fn, 'wrt', wrt);
  if (!differentiable(y)) throw new TypeError(`${fn}: expression is ${y.dtype}; a Jacobian needs a float expression`);
  const n = staticSize(fn, 'expression', y);
  const sizes = ws.map((w, i) => staticSize(fn, `wrt[${i}]`, w));
  const mode = options.mode ?? 'auto';
  if (!['reverse', 'forward', 'auto'].includes(mode))
    throw new ValueError(`${fn}: options.mode is ${JSON.stringify(mode)}; allowed: 'reverse', 'forward', 'auto'`);
  ws.forEach((w, i) => {
    if (differentiable(w) && !reachable([y], w, new Set()))
      disconnected(
        fn,
        options.disconnected_inputs ?? 'raise',
        `the expression does not depend on wrt${Array.isArray(wrt) ? `[${i}]` : ''} (${w.name ?? w.op})`,
      );
  });
  // 'auto': the mode with fewer passes (a pass of either mode costs about the same: bench
  // 'autodiff jacobian 256->256', CPU time equal to 3%); on a tie reverse mode, Theano's.
  const forward = mode === 'forward' || (mode === 'auto' && sizes.reduce((a, b) => a + b, 0) < n);
  const js = forward ? jacobianForward(fn, y, ws) : jacobianReverse(fn, y, ws, n);
  return shaped(wrt, js) as Out<W>;
}

/** Row i of the Jacobian is the vjp of the i-th basis cotangent; the rows stack to (n, wrt...). */
function jacobianReverse(fn: string, y: Node, ws: readonly Node[], n: number): Node[] {
  const full = (w: Node, rows: Node) => reshape(rows, [...(y.shape as number[]), ...(w.shape as number[])]);
  if (n === 1) {
    const gs = backprop([[y, reshape(scalar(1, y.dtype), y.shape as number[])]], ws, { fn });
    return ws.map((w, i) => full(w, gs[i] ?? zerosOf(w, fn)));
  }
  const rows = perDirection(fn, y, (u) => backprop([[y, u]], ws, { fn }).map((g, i) => g ?? zerosOf(ws[i]!, fn)));
  return ws.map((w, i) => full(w, rows[i]!));
}

/** Column j of d y / d w is the jvp of the j-th basis tangent of w; the columns stack to (m, y...), then transpose. */
function jacobianForward(fn: string, y: Node, ws: readonly Node[]): Node[] {
  const yShape = y.shape as number[];
  const n = sizeOf(yShape);
  return ws.map((w) => {
    const wShape = w.shape as number[];
    const m = sizeOf(wShape);
    if (!differentiable(w)) return apply('constant', [], { value: NDArray.zeros([...yShape, ...wShape], w.dtype) }, fn);
    const cols = perDirection(fn, w, (v) => [tangents([y], [w], [v], fn)[0] ?? zerosOf(y, fn)])[0]!;
    return reshape(transpose(reshape(cols, [m, n]), [1, 0]), [...yShape, ...wShape]);
  });
}

/**
 * The Hessian of a scalar cost with respect to each wrt (Theano's hessian: one block per wrt, of
 * shape wrt.shape + wrt.shape), as the forward-mode Jacobian of the gradient (forward over reverse).
 */
export function hessian<W extends Tensors>(
  cost: Node,
  wrt: W,
  options: Pick<JacobianOptions, 'disconnected_inputs'> = {},
): Out<W> {
  const fn = 'autodiff.hessian';
  const c = scalarCost(fn, cost);
  const ws = listOf(fn, 'wrt', wrt);
  const gs = backprop([[c, scalar(1, c.dtype)]], ws, { fn });
  const hs = ws.map((w, i) => {
    if (!reachable([c], w, new Set()))
      disconnected(
        fn,
        options.disconnected_inputs ?? 'raise',
        `the cost does not depend on wrt${Array.isArray(wrt) ? `[${i}]` : ''} (${w.name ?? w.op})`,
      );
    return jacobian(gs[i] ?? zerosOf(w, fn), w, { mode: 'forward', disconnected_inputs: 'ignore' });
  });
  return shaped(wrt, hs) as Out<W>;
}

/**
 * H v: for each wrt_i, sum_j d^2 cost / d wrt_i d wrt_j v_j, by forward mode over the gradient
 * (one reverse and one forward pass; Pearlmutter's R{} operator). `v` matches `wrt` one to one.
 */
export function hessian_vector_product<W extends Tensors>(cost: Node, wrt: W, v: Tensors): Out<W> {
  const fn = 'autodiff.hessian_vector_product';
  const c = scalarCost(fn, cost);
  const ws = listOf(fn, 'wrt', wrt);
  const vs = listOf(fn, 'v', v);
  checkPairs(fn, 'v', ws, 'wrt', vs);
  const gs = backprop([[c, scalar(1, c.dtype)]], ws, { fn }).map((g, i) => g ?? zerosOf(ws[i]!, fn));
  const hv = tangents(gs, ws, vs, fn).map((t, i) => t ?? zerosOf(ws[i]!, fn));
  return shaped(wrt, hv) as Out<W>;
}

function scalarCost(fn: string, cost: Node): Node {
  const c = listOf(fn, 'cost', cost)[0]!;
  if (c.ndim !== 0) throw new TypeError(`${fn}: cost must be a scalar, got a tensor of shape ${formatShape(c.shape)}`);
  if (!differentiable(c)) throw new TypeError(`${fn}: cost is ${c.dtype}; it must be a float scalar`);
  return c;
}

/** Aliases in JAX's names. */
export const jacrev = <W extends Tensors>(y: Node, wrt: W): Out<W> => jacobian(y, wrt, { mode: 'reverse' });
export const jacfwd = <W extends Tensors>(y: Node, wrt: W): Out<W> => jacobian(y, wrt, { mode: 'forward' });
