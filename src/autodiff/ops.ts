// Small graph builders for gradient rules. They call the IR's `apply` directly (autodiff does not
// import the API), and skip work that static shapes prove unnecessary.
import { apply } from '../ir/build.js';
import { isFloat, type DType } from '../ir/dtype.js';
import { NDArray } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import { isFullyKnown } from '../ir/types.js';
import type { OpName } from '../ir/registry.js';
import type { ReductionName } from '../ir/ops/reduce.js';

const FN = 'K.gradients';

export function scalar(v: number, dtype: DType): Node {
  return apply('constant', [], { value: new NDArray([v], [], dtype) }, FN);
}
/** Builds op `op` on the inputs, with numbers turned into scalars of the first tensor's dtype. */
export function op(name: OpName, ...xs: (Node | number)[]): Node {
  const like = xs.find((x): x is Node => typeof x !== 'number');
  const dt = like?.dtype ?? 'float32';
  return apply(
    name,
    xs.map((x) => (typeof x === 'number' ? scalar(x, dt) : x)),
    {},
    FN,
  );
}
export const add = (a: Node | number, b: Node | number) => op('add', a, b);
export const sub = (a: Node | number, b: Node | number) => op('sub', a, b);
export const mul = (a: Node | number, b: Node | number) => op('mul', a, b);
export const div = (a: Node | number, b: Node | number) => op('div', a, b);
export const neg = (a: Node) => op('neg', a);
export const where = (c: Node, a: Node | number, b: Node | number) => {
  const like = typeof a === 'number' ? (typeof b === 'number' ? undefined : b) : a;
  const dt = like?.dtype ?? 'float32';
  const t = (v: Node | number) => (typeof v === 'number' ? scalar(v, dt) : v);
  return apply('where', [c, t(a), t(b)], {}, FN);
};
export function cast(x: Node, dtype: DType): Node {
  return x.dtype === dtype ? x : apply('cast', [x], { dtype }, FN);
}

function sameStaticShape(a: readonly (number | null)[], b: readonly (number | null)[]): boolean {
  return a.length === b.length && isFullyKnown(a) && isFullyKnown(b) && a.every((d, i) => d === b[i]);
}

/** g reduced over the axes on which `x` was broadcast, so it has x's shape. */
export function sumTo(g: Node, x: Node): Node {
  if (sameStaticShape(g.shape, x.shape)) return g;
  return apply('sum_to_like', [g, x], {}, FN);
}

/** g broadcast to x's shape. */
export function broadcastTo(g: Node, x: Node): Node {
  if (sameStaticShape(g.shape, x.shape)) return g;
  return apply('broadcast_like', [g, x], {}, FN);
}

/** g reshaped to x's shape (static target when known). */
export function reshapeTo(g: Node, x: Node): Node {
  if (sameStaticShape(g.shape, x.shape)) return g;
  if (isFullyKnown(x.shape)) return apply('reshape', [g], { shape: [...x.shape] }, FN);
  return apply('reshape_like', [g, x], {}, FN);
}

export function transpose(x: Node, perm: readonly number[]): Node {
  return apply('transpose', [x], { perm: [...perm] }, FN);
}

export function reshape(x: Node, shape: readonly number[]): Node {
  return apply('reshape', [x], { shape: [...shape] }, FN);
}

export function unsqueeze(x: Node, axes: readonly number[]): Node {
  return axes.length === 0 ? x : apply('unsqueeze', [x], { axes: [...axes] }, FN);
}

export function reduce(name: ReductionName, x: Node, axes: readonly number[], keepdims: boolean): Node {
  return apply(name, [x], { axes: [...axes], keepdims }, FN);
}

export function dot(x: Node, y: Node): Node {
  return apply('dot', [x, y], {}, FN);
}

/** Whether gradients flow into tensors of this dtype (Theano: integer and bool inputs get none). */
export function differentiable(x: Node): boolean {
  return isFloat(x.dtype);
}

export function cumsumOf(x: Node, axis: number): Node {
  return apply('cumsum', [x], { axis }, FN);
}
