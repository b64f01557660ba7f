// Convolution primitives, channels-last: data (N, S_1..S_d, C), kernel (K_1..K_d, C/G, F).
// Three ops, closed under differentiation (each one's gradients are the other two):
//   conv            y[n,o,f]  = sum_{t,c} x[n, o*s + t*dil - pb, g(f)*Cg + c] * w[t, c, f]
//   conv_transpose  dx[n,i,.] = the adjoint of conv in x  (TensorFlow's conv2d_transpose)
//   conv_kernel_grad dw[t,c,f] = the adjoint of conv in w
// Cross-correlation (no kernel flip). G = groups splits channels into G independent
// convolutions (Cg = C/G input channels and F/G output channels each): G = 1 is an
// ordinary convolution, G = C with F = C*M a depthwise one. Layout transposes live in the API.
import { promote, type DType } from '../dtype.js';
import { NDArray, formatShape, sizeOf } from '../ndarray.js';
import { defineOp } from '../op.js';
import { tensorType, type Dim, type StaticShape, type TensorType } from '../types.js';
import { InferError } from '../errors.js';
import { checkWindowAttrs, forEachTap, geometry, outSizeFor, staticOutSizes, type WindowAttrs } from './window.js';
import { poolOps } from './pool.js';

export type ConvAttrs = WindowAttrs & {
  readonly groups: number;
};

/**
 * conv_transpose and conv_kernel_grad produce a tensor whose spatial size the other operands do
 * not determine (strides lose information): `size` gives it, or, when null, a third input
 * (`like`) supplies it at run time from its own shape (the forward input or kernel).
 */
export type ConvSizedAttrs = ConvAttrs & {
  readonly size: readonly number[] | null;
};

function numericType(a: DType, b: DType): DType {
  const t = promote(a, b);
  if (t === 'bool') throw new InferError('convolution needs numeric tensors, got bool', 'type');
  return t;
}

function checkRanks(
  names: readonly [string, string],
  shapes: readonly [StaticShape, StaticShape],
  a: ConvAttrs,
): number {
  const r = shapes[0].length;
  if (r < 3)
    throw new InferError(
      `${names[0]} must have rank >= 3 (batch, spatial..., channels); got shape ${formatShape(shapes[0])}`,
    );
  if (shapes[1].length !== r) {
    throw new InferError(
      `${names[0]} shape ${formatShape(shapes[0])} and ${names[1]} shape ${formatShape(shapes[1])} must have the same rank`,
    );
  }
  checkWindowAttrs(a, r - 2);
  if (!Number.isInteger(a.groups) || a.groups < 1)
    throw new InferError(`groups ${a.groups} must be a positive integer`, 'value');
  return r - 2;
}

/** Input channels of the data against the kernel's in-channel axis times the groups. */
export function checkInChannels(xName: string, x: StaticShape, w: StaticShape, g: number): void {
  const d = x.length - 2;
  const c = x[d + 1]!;
  const cg = w[d]!;
  if (c !== null && cg !== null && c !== cg * g) {
    throw new InferError(
      `kernel shape ${formatShape(w)} does not match ${xName} shape ${formatShape(x)}: axis ${d} of the kernel (input channels) is ${cg}` +
        `${g > 1 ? ` (times ${g} groups: ${cg * g})` : ''} but axis ${d + 1} of ${xName} (channels) is ${c}`,
    );
  }
}

function checkFeatures(what: string, f: Dim, fShape: StaticShape, axis: number, w: StaticShape, g: number): void {
  const wf = w[w.length - 1]!;
  if (f !== null && wf !== null && f !== wf) {
    throw new InferError(
      `kernel shape ${formatShape(w)} does not match ${what} shape ${formatShape(fShape)}: axis ${w.length - 1} of the kernel (output channels) is ${wf} but axis ${axis} of ${what} is ${f}`,
    );
  }
  const known = f ?? wf;
  if (known !== null && known % g !== 0)
    throw new InferError(`output channels ${known} are not divisible by groups ${g}`);
}

/** The spatial size a sized op produces: from attrs, or from the `like` input's dims at `from`. */
function sizedSpatial(inputs: readonly TensorType[], a: ConvSizedAttrs, d: number, from: number): Dim[] {
  if (a.size !== null) {
    if (inputs.length !== 2) throw new InferError('give the result size as attrs.size or as a third input, not both');
    if (a.size.length !== d || a.size.some((s) => !Number.isInteger(s) || s < 1))
      throw new InferError(`size ${JSON.stringify(a.size)} must be ${d} positive integers`, 'value');
    return [...a.size];
  }
  if (inputs.length !== 3) throw new InferError('without attrs.size a third input must give the result size');
  return inputs[2]!.shape.slice(from, from + d);
}

/** Checks that data of spatial size `s` convolved with windows `k` gives `o` (when all are known). */
export function checkOutSizes(
  what: string,
  s: readonly Dim[],
  k: readonly Dim[],
  o: readonly Dim[],
  a: ConvAttrs,
  oShape: StaticShape,
): void {
  s.forEach((si, i) => {
    const ki = k[i]!;
    const oi = o[i]!;
    if (si === null || ki === null || oi === null) return;
    const want = outSizeFor(si, ki, a.strides[i]!, a.dilation[i]!, a.padding);
    if (want !== oi) {
      throw new InferError(
        `${what} shape ${formatShape(oShape)} does not fit: along spatial axis ${i}, a ${a.padding} convolution with window ${ki}, ` +
          `stride ${a.strides[i]} and dilation ${a.dilation[i]} maps size ${si} to ${want === null ? 'nothing (window too large)' : want}, not ${oi}`,
      );
    }
  });
}

export const convOp = defineOp<ConvAttrs>({
  name: 'conv',
  kind: 'other',
  arity: 2,
  infer: ([x, w], a) => {
    const d = checkRanks(['input', 'kernel'], [x!.shape, w!.shape], a);
    checkInChannels('input', x!.shape, w!.shape, a.groups);
    checkFeatures('kernel', null, w!.shape, d + 1, w!.shape, a.groups);
    const out = staticOutSizes(x!.shape, w!.shape.slice(0, d), a, w!.shape);
    return tensorType(numericType(x!.dtype, w!.dtype), [x!.shape[0]!, ...out, w!.shape[d + 1]!]);
  },
  impl: ([x, w], a) => {
    const d = x!.ndim - 2;
    const [C, Cg, F] = [x!.shape[d + 1]!, w!.shape[d]!, w!.shape[d + 1]!];
    checkInChannels('input', x!.shape, w!.shape, a.groups);
    const g = geometry(x!.shape[0]!, x!.shape.slice(1, d + 1), w!.shape.slice(0, d), a);
    const Fg = F / a.groups;
    const out = new Float64Array(g.n * sizeOf(g.outSize) * F);
    const X = x!.data;
    const W = w!.data;
    forEachTap(g, (o, t, i) => {
      for (let f = 0; f < F; f++) {
        const c0 = Math.floor(f / Fg) * Cg;
        let acc = 0;
        for (let c = 0; c < Cg; c++) acc += X[i * C + c0 + c]! * W[(t * Cg + c) * F + f]!;
        out[o * F + f] = out[o * F + f]! + acc;
      }
    });
    return new NDArray(out, [g.n, ...g.outSize, F], promote(x!.dtype, w!.dtype));
  },
});

/** dy (N, O..., F), w (K..., Cg, F) [, like (N, S..., *)] -> (N, S..., Cg*G). */
export const convTransposeOp = defineOp<ConvSizedAttrs>({
  name: 'conv_transpose',
  kind: 'other',
  arity: 'variadic',
  infer: (inputs, a) => {
    const [dy, w] = [inputs[0]!, inputs[1]!];
    const d = checkRanks(['input', 'kernel'], [dy.shape, w.shape], a);
    checkFeatures('input', dy.shape[d + 1]!, dy.shape, d + 1, w.shape, a.groups);
    const s = sizedSpatial(inputs, a, d, 1);
    const cg = w.shape[d]!;
    const shape = [dy.shape[0]!, ...s, cg === null ? null : cg * a.groups];
    checkOutSizes('input', s, w.shape.slice(0, d), dy.shape.slice(1, d + 1), a, dy.shape);
    return tensorType(numericType(dy.dtype, w.dtype), shape);
  },
  impl: (inputs, a) => {
    const [dy, w] = [inputs[0]!, inputs[1]!];
    const d = dy.ndim - 2;
    const s = a.size ?? inputs[2]!.shape.slice(1, d + 1);
    const [Cg, F] = [w.shape[d]!, w.shape[d + 1]!];
    const C = Cg * a.groups;
    const g = geometry(dy.shape[0]!, s, w.shape.slice(0, d), a);
    checkOutSizes('input', s, w.shape.slice(0, d), dy.shape.slice(1, d + 1), a, dy.shape);
    const Fg = F / a.groups;
    const dx = new Float64Array(g.n * sizeOf(s) * C);
    const DY = dy.data;
    const W = w.data;
    forEachTap(g, (o, t, i) => {
      for (let f = 0; f < F; f++) {
        const c0 = Math.floor(f / Fg) * Cg;
        const v = DY[o * F + f]!;
        for (let c = 0; c < Cg; c++) dx[i * C + c0 + c] = dx[i * C + c0 + c]! + v * W[(t * Cg + c) * F + f]!;
      }
    });
    return new NDArray(dx, [g.n, ...s, C], promote(dy.dtype, w.dtype));
  },
});

/** x (N, S..., C), dy (N, O..., F) [, like (K..., *, *)] -> (K..., C/G, F). */
export const convKernelGradOp = defineOp<ConvSizedAttrs>({
  name: 'conv_kernel_grad',
  kind: 'other',
  arity: 'variadic',
  infer: (inputs, a) => {
    const [x, dy] = [inputs[0]!, inputs[1]!];
    const d = checkRanks(['input', 'output gradient'], [x.shape, dy.shape], a);
    const k = sizedSpatial(inputs, a, d, 0);
    const c = x.shape[d + 1]!;
    const f = dy.shape[d + 1]!;
    if (c !== null && c % a.groups !== 0)
      throw new InferError(
        `input channels ${c} (shape ${formatShape(x.shape)}) are not divisible by groups ${a.groups}`,
      );
    if (f !== null && f % a.groups !== 0)
      throw new InferError(
        `output channels ${f} (shape ${formatShape(dy.shape)}) are not divisible by groups ${a.groups}`,
      );
    checkOutSizes('output gradient', x.shape.slice(1, d + 1), k, dy.shape.slice(1, d + 1), a, dy.shape);
    return tensorType(numericType(x.dtype, dy.dtype), [...k, c === null ? null : c / a.groups, f]);
  },
  impl: (inputs, a) => {
    const [x, dy] = [inputs[0]!, inputs[1]!];
    const d = x.ndim - 2;
    const k = a.size ?? inputs[2]!.shape.slice(0, d);
    const [C, F] = [x.shape[d + 1]!, dy.shape[d + 1]!];
    const Cg = C / a.groups;
    const g = geometry(x.shape[0]!, x.shape.slice(1, d + 1), k, a);
    checkOutSizes('output gradient', x.shape.slice(1, d + 1), k, dy.shape.slice(1, d + 1), a, dy.shape);
    const Fg = F / a.groups;
    const dw = new Float64Array(sizeOf(k) * Cg * F);
    const X = x.data;
    const DY = dy.data;
    forEachTap(g, (o, t, i) => {
      for (let f = 0; f < F; f++) {
        const c0 = Math.floor(f / Fg) * Cg;
        const v = DY[o * F + f]!;
        for (let c = 0; c < Cg; c++) dw[(t * Cg + c) * F + f] = dw[(t * Cg + c) * F + f]! + X[i * C + c0 + c]! * v;
      }
    });
    return new NDArray(dw, [...k, Cg, F], promote(x.dtype, dy.dtype));
  },
});

export const convOps = {
  conv: convOp,
  conv_transpose: convTransposeOp,
  conv_kernel_grad: convKernelGradOp,
  ...poolOps,
} as const;
