// Gradient rules of the convolution primitives (pooling's are in ./pool.ts). The family is closed
// under differentiation, so gradients of gradients stay in it:
//   conv(x, w)                 dx = conv_transpose(g, w)      dw = conv_kernel_grad(x, g)
//   conv_transpose(dy, w)      ddy = conv(g, w)               dw = conv_kernel_grad(g, dy)
//   conv_kernel_grad(x, dy)    dx = conv_transpose(dy, g)     ddy = conv(x, g)
// (All three conv ops sum x * w * dy over the same (output, tap, input) triples, so each is the
// adjoint of the others in the corresponding argument.)
import { apply } from '../../ir/build.js';
import type { Node } from '../../ir/node.js';
import type { ConvAttrs, ConvSizedAttrs } from '../../ir/ops/conv.js';
import { isFullyKnown } from '../../ir/types.js';
import { differentiable } from '../ops.js';
import type { OpNode } from '../../ir/registry.js';
import type { GradRule } from './types.js';

const FN = 'K.gradients';

/** The attrs every conv op shares (a sized op's `size` dropped), so rebuilt nodes hash equal. */
function convAttrs(n: OpNode<'conv' | 'conv_transpose' | 'conv_kernel_grad'>): ConvAttrs {
  const a = n.attrs;
  return { strides: a.strides, dilation: a.dilation, padding: a.padding, groups: a.groups };
}

/**
 * A sized op whose result must have the shape of `like` at spatial dims `from..from+d`: the size
 * goes in attrs when static, else `like` rides along as a third input to give it at run time.
 */
function sized(
  op: 'conv_transpose' | 'conv_kernel_grad',
  a: ConvAttrs,
  ins: [Node, Node],
  like: Node,
  from: number,
): Node {
  const d = a.strides.length;
  const size = like.shape.slice(from, from + d);
  if (isFullyKnown(size)) return apply(op, ins, { ...a, size: [...size] } satisfies ConvSizedAttrs, FN);
  return apply(op, [...ins, like], { ...a, size: null } satisfies ConvSizedAttrs, FN);
}

const when = (x: Node, f: () => Node): Node | null => (differentiable(x) ? f() : null);

export const convGrad: GradRule<OpNode<'conv'>> = (n, g) => {
  const [x, w] = n.inputs as [Node, Node];
  const a = convAttrs(n);
  return [
    when(x, () => sized('conv_transpose', a, [g, w], x, 1)),
    when(w, () => sized('conv_kernel_grad', a, [x, g], w, 0)),
  ];
};

export const convTransposeGrad: GradRule<OpNode<'conv_transpose'>> = (n, g) => {
  const [dy, w] = n.inputs as [Node, Node];
  const a = convAttrs(n);
  const grads = [
    when(dy, () => apply('conv', [g, w], a, FN)),
    when(w, () => sized('conv_kernel_grad', a, [g, dy], w, 0)),
  ];
  return n.inputs.length === 3 ? [...grads, null] : grads;
};

export const convKernelGradGrad: GradRule<OpNode<'conv_kernel_grad'>> = (n, g) => {
  const [x, dy] = n.inputs as [Node, Node];
  const a = convAttrs(n);
  const grads = [
    when(x, () => sized('conv_transpose', a, [dy, g], x, 1)),
    when(dy, () => apply('conv', [x, g], a, FN)),
  ];
  return n.inputs.length === 3 ? [...grads, null] : grads;
};

export const convGrads = {
  conv: convGrad,
  conv_transpose: convTransposeGrad,
  conv_kernel_grad: convKernelGradGrad,
} as const;
