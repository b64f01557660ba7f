// Gradient rules of the pooling primitives. The family is closed under differentiation:
//   pool(x)                    dx = pool_grad(x, g)
//   pool_grad(x, dy)           ddy = pool_select(x, g) (max) or pool(g) (avg); none to x
//   pool_select(x, v)          dv = pool_grad(x, g); none to x
// Max pooling's dependence on x is piecewise constant: x only chooses where values go, so no
// gradient reaches x through the selection.
import { apply } from '../../ir/build.js';
import type { OpNode } from '../../ir/registry.js';
import type { GradRule } from './types.js';

const FN = 'K.gradients';

export const poolGrad: GradRule = (n, g) => [apply('pool_grad', [n.inputs[0]!, g], n.attrs, FN)];

export const poolGradGrad: GradRule<OpNode<'pool_grad'>> = (n, g) => {
  const a = n.attrs;
  const x = n.inputs[0]!;
  return [null, a.mode === 'max' ? apply('pool_select', [x, g], n.attrs, FN) : apply('pool', [g], n.attrs, FN)];
};

export const poolSelectGrad: GradRule = (n, g) => [null, apply('pool_grad', [n.inputs[0]!, g], n.attrs, FN)];

export const poolGrads = {
  pool: poolGrad,
  pool_grad: poolGradGrad,
  pool_select: poolSelectGrad,
} as const;
