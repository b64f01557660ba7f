// Gradient rules of the structural primitives: reshapes, transposes, dot, indexing.
import type { Node } from '../../ir/node.js';
import { dotAxisOfY } from '../../ir/ops/core.js';
import { isFullyKnown } from '../../ir/types.js';
import { apply } from '../../ir/build.js';
import { dot, reshape, reshapeTo, sumTo, transpose } from '../ops.js';
import type { OpNode } from '../../ir/registry.js';
import type { GradRule } from './types.js';
import { sizeOf } from '../../ir/ndarray.js';

export const transposeGrad: GradRule<OpNode<'transpose'>> = (n, g) => {
  const perm = n.attrs.perm;
  const inv = new Array<number>(perm.length);
  perm.forEach((p, i) => {
    inv[p] = i;
  });
  return [transpose(g, inv)];
};

export const reshapeGrad: GradRule = (n, g) => [reshapeTo(g, n.inputs[0]!)];

/**
 * dot(x, y) with x (A..., k) and y (B..., k, C) (or y (k,)): flatten to matrices
 * X (a, k), Y' (k, b*c) so that out = X Y'; then dX = G Y'^T and dY' = X^T G, reshaped back.
 */
export const dotGrad: GradRule = (n, g) => {
  const [x, y] = n.inputs as [Node, Node];
  const ya = dotAxisOfY(y.ndim);
  if (x.ndim === 2 && y.ndim === 2) {
    return [dot(g, transpose(y, [1, 0])), dot(transpose(x, [1, 0]), g)];
  }
  const k = x.shape[x.ndim - 1]!;
  const yOtherDims = y.shape.filter((_, i) => i !== ya);
  if (k === null || !isFullyKnown(yOtherDims)) {
    throw new Error(
      `K.gradients: dot of ${x.ndim}-D by ${y.ndim}-D needs the contracted axis and y's other axes known statically`,
    );
  }
  const yOther = yOtherDims as number[];
  const bc = sizeOf(yOther);
  // y moved to (k, B..., C) then flattened to (k, bc)
  const yPerm = [ya, ...y.shape.map((_, i) => i).filter((i) => i !== ya)];
  const Y = reshape(transpose(y, yPerm), [k, bc]);
  const X = reshape(x, [-1, k]);
  const G = reshape(g, [-1, bc]);
  const dX = reshapeTo(dot(G, transpose(Y, [1, 0])), x);
  const dYflat = dot(transpose(X, [1, 0]), G); // (k, bc)
  const dYmoved = reshape(dYflat, [k, ...yOther]);
  const inv = new Array<number>(yPerm.length);
  yPerm.forEach((p, i) => {
    inv[p] = i;
  });
  return [dX, transpose(dYmoved, inv)];
};

export const indexGrad: GradRule<OpNode<'index'>> = (n, g) => [
  apply('scatter_index', [g, n.inputs[0]!], { index: n.attrs.index }, 'K.gradients'),
];

export const identityGrad: GradRule = (_, g) => [g];
export const sumToLikeGrad: GradRule = (n, g) => [apply('broadcast_like', [g, n.inputs[0]!], {}, 'K.gradients'), null];
export const broadcastLikeGrad: GradRule = (n, g) => [sumTo(g, n.inputs[0]!), null];
export const reshapeLikeGrad: GradRule = (n, g) => [reshapeTo(g, n.inputs[0]!), null];
export const unsqueezeGrad: GradRule = (n, g) => [reshapeTo(g, n.inputs[0]!)];
/** scatter_index(g, x) places g at x[index]; its gradient wrt g reads that slice back. */
export const scatterIndexGrad: GradRule<OpNode<'scatter_index'>> = (n, g) => [
  apply('index', [g], { index: n.attrs.index }, 'K.gradients'),
  null,
];
