// The sized ops (src/ir/ops/sized.ts) on tfjs: the size vectors are read back (they are small),
// then the static ops' kernels run.
import { InferError } from '../../../ir/errors.js';
import { formatShape } from '../../../ir/ndarray.js';
import { resolveReshape } from '../../../ir/ops/core.js';
import { sliceAxes, type sizedOps } from '../../../ir/ops/sized.js';
import type { KernelContext, Tensor, TfEntry, TfKernel, TfTableFor } from '../types.js';
import { tfDType } from '../types.js';
import { shapeKernels } from './shape.js';
import { arithDType, castTo } from './util.js';

const ints = (t: Tensor): number[] => Array.from(t.dataSync(), Number);
const call = <A>(e: TfEntry<A>, ins: Tensor[], a: A, ctx: KernelContext): Tensor => (e as TfKernel<A>)(ins, a, ctx);

export const sizedKernels: TfTableFor<keyof typeof sizedOps> = {
  reshape_dims: ([x, d], _, { tf }) => tf.reshape(x!, resolveReshape(x!.shape, ints(d!)) as number[]),
  // tf.tile itself: the static kernel's broadcast form needs twice the rank, more than XNNPACK takes for rank-5 inputs
  tile_dims: ([x, r], _, { tf }) => tf.tile(x!.dtype === 'bool' ? tf.cast(x!, 'int32') : x!, ints(r!)),
  untile_dims: ([g, r, x], _, ctx) => {
    const reps = ints(r!);
    if (reps.includes(0))
      return castTo(ctx.tf, ctx.tf.zeros(x!.shape, arithDType(ctx.node.dtype)), tfDType(ctx.node.dtype));
    return call(shapeKernels.untile, [g!], { reps }, ctx);
  },
  fill_dims: ([d], a, { tf, node }) => {
    const s = ints(d!);
    if (s.some((k) => k < 0)) throw new InferError(`shape ${formatShape(s)} has a negative dim`);
    return castTo(tf, tf.fill(s, a.value, arithDType(node.dtype)), tfDType(node.dtype));
  },
  arange_dims: ([start, stop, step], _, { tf, node }) => {
    const [a, b, s] = [start!, stop!, step!].map((t) => Number(t.dataSync()[0]));
    if (s === 0) throw new InferError('arange step must be a nonzero number, got 0');
    const n = Math.max(0, Math.ceil((b! - a!) / s!));
    const v = Float32Array.from({ length: n }, (_, i) => a! + i * s!);
    return castTo(tf, tf.tensor1d(v, 'float32'), tfDType(node.dtype));
  },
  slice_dims: ([x, st, sz], _, ctx) =>
    call(shapeKernels.slice, [x!], { axes: sliceAxes(ints(st!), ints(sz!), x!.shape) }, ctx),
  unslice_dims: ([g, x, st, sz], _, ctx) =>
    call(shapeKernels.unslice, [g!, x!], { axes: sliceAxes(ints(st!), ints(sz!), x!.shape) }, ctx),
};
