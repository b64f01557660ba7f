// Convolutions and pooling as ONNX Conv / ConvTranspose / MaxPool / AveragePool. theanine's
// primitives are channels-last (data (N, S..., C), kernel (K..., C/G, F)); ONNX's are
// channels-first, so each op transposes in and out (ONNX Runtime's optimizer folds the pairs
// that meet). Padding: explicit [before, after] from window.ts's padsFor where the spatial size
// is known, else auto_pad SAME_UPPER / VALID, which is TensorFlow's split.
import type { convOps } from '../../../ir/ops/conv.js';
import type { PoolAttrs, poolOps } from '../../../ir/ops/pool.js';
import { effectiveSize, padsFor, type WindowAttrs } from '../../../ir/ops/window.js';
import type { StaticShape } from '../../../ir/types.js';
import { F, OnnxExportError, type GraphBuilder, type Val } from '../builder.js';
import type { Ctx, OnnxTableFor } from './types.js';
import type { DType } from '../../../ir/dtype.js';

/**
 * ONNX Runtime's CPU provider has Conv, ConvTranspose and AveragePool for float32 only: every
 * convolution computes in float32 (float64 results carry float32 rounding; integer
 * convolutions are exact while sums stay below 2^24, as on the tensorflow backend).
 */
const arith = (_: DType): DType => 'float32';
/** Max pooling: ONNX Runtime's MaxPool takes double too. */
const maxArith = (d: DType): DType => (d === 'float64' ? 'float64' : 'float32');
const exact = (c: Ctx): boolean => c.out.dtype === 'float64';
import { fit } from './util.js';
import {
  avgPoolByPatches,
  avgPoolGradByPatches,
  convByPatches,
  convTransposeByPatches,
  geometryOf,
  type PatchGeometry,
  kernelGradByPatches,
} from './patches.js';
import { NDArray, sizeOf } from '../../../ir/ndarray.js';

const toFirst = (r: number) => [0, r - 1, ...Array.from({ length: r - 2 }, (_, i) => i + 1)];
const toLast = (r: number) => [0, ...Array.from({ length: r - 2 }, (_, i) => i + 2), 1];

function transpose(b: GraphBuilder, x: string, perm: readonly number[]): string {
  const v = b.val(x);
  return b.op('Transpose', [x], { perm }, { dtype: v.dtype, shape: perm.map((p) => v.shape[p]!) });
}

/** Explicit pads (begins then ends) when every spatial size is known, else auto_pad. */
function padAttrs(spatial: StaticShape, k: readonly number[], a: WindowAttrs): { pads?: number[]; auto_pad?: string } {
  if (spatial.every((s) => s !== null)) {
    const p = spatial.map((s, i) => padsFor(s!, k[i]!, a.strides[i]!, a.dilation[i]!, a.padding));
    return { pads: [...p.map((q) => q[0]), ...p.map((q) => q[1])] };
  }
  if (a.padding === 'causal')
    return { pads: [...k.map((kk, i) => effectiveSize(kk, a.dilation[i]!) - 1), ...k.map(() => 0)] };
  return { auto_pad: a.padding === 'same' ? 'SAME_UPPER' : 'VALID' };
}

function knownSpatial(what: string, s: StaticShape): number[] {
  if (s.some((d) => d === null)) throw new OnnxExportError(`${what} needs known spatial dims, got [${s.join(', ')}]`);
  return s as number[];
}

/** Kernel (K..., Cg, F) to ONNX's (F, Cg, K...). */
function kernelFirst(b: GraphBuilder, w: string): string {
  const r = b.val(w).shape.length;
  return transpose(b, w, [r - 1, r - 2, ...Array.from({ length: r - 2 }, (_, i) => i)]);
}

/** ConvTranspose of dy (N, O..., F) with w (K..., Cg, F) to spatial size `size`: the adjoint of conv in x. */
function convTranspose(
  c: Ctx,
  dy: string,
  w: string,
  size: readonly number[],
  a: WindowAttrs & { groups: number },
): string {
  const b = c.b;
  const d = arith(c.out.dtype);
  const r = b.val(dy).shape.length;
  const k = knownSpatial('conv_transpose', b.val(w).shape.slice(0, r - 2));
  const o = knownSpatial('conv_transpose', b.val(dy).shape.slice(1, r - 1));
  const p = size.map((s, i) => padsFor(s, k[i]!, a.strides[i]!, a.dilation[i]!, a.padding));
  const outputPadding = size.map(
    (s, i) => s - (a.strides[i]! * (o[i]! - 1) + effectiveSize(k[i]!, a.dilation[i]!) - p[i]![0] - p[i]![1]),
  );
  if (outputPadding.some((q) => q < 0))
    throw new OnnxExportError(
      `conv_transpose: size [${size.join(', ')}] is smaller than the transposed convolution gives`,
    );
  // ONNX's W for ConvTranspose is (C_in = F, C_out / G = Cg, K...): the conv kernel with its last two axes moved first
  const wt = kernelFirst(b, b.cast(w, d));
  const x = transpose(b, b.cast(dy, d), toFirst(r));
  const outFirst = [c.out.shape[0]!, c.out.shape[r - 1]!, ...c.out.shape.slice(1, r - 1)];
  const attrs = {
    strides: a.strides,
    dilations: a.dilation,
    group: a.groups,
    kernel_shape: k,
    pads: [...p.map((q) => q[0]), ...p.map((q) => q[1])],
  };
  return fit(
    c,
    transpose(b, paddedConvTranspose(b, [x, wt], attrs, outputPadding, size, { dtype: d, shape: outFirst }), toLast(r)),
  );
}

/**
 * ConvTranspose (channels first) to `out` (spatial sizes `size`) with `outputPadding` per axis: ONNX Runtime
 * requires output_padding < stride, so larger gaps are zero rows the result is padded with.
 */
function paddedConvTranspose(
  b: GraphBuilder,
  inputs: readonly [string, string],
  attrs: {
    strides: readonly number[];
    dilations: readonly number[];
    group: number;
    kernel_shape: readonly number[];
    pads: readonly number[];
  },
  outputPadding: readonly number[],
  size: readonly number[],
  out: Val,
): string {
  const op = outputPadding.map((q, i) => Math.min(q, Math.max(attrs.strides[i]! - 1, 0)));
  const extra = outputPadding.map((q, i) => q - op[i]!);
  const y = b.op(
    'ConvTranspose',
    inputs,
    { ...attrs, output_padding: op },
    { dtype: out.dtype, shape: [out.shape[0]!, out.shape[1]!, ...size.map((s, i) => s - extra[i]!)] },
  );
  if (!extra.some((e) => e > 0)) return y;
  return b.op('Pad', [y, b.i64([0, 0, ...extra.map(() => 0), 0, 0, ...extra])], { mode: 'constant' }, out);
}

/**
 * The kernel gradient dw[t, c, f] = sum_{n, o} x[n, o*s + t*dil - pb, c] dy[n, o, f]: a Conv with
 * channels as batch and batch as channels (x as (C, N, S...), dy as the kernel (F, N, O...)),
 * strides and dilations swapped, cut to K; one Conv per group.
 */
function kernelGrad(c: Ctx, x: string, dy: string, k: readonly number[], a: WindowAttrs & { groups: number }): string {
  const b = c.b;
  const d = arith(c.out.dtype);
  const r = b.val(x).shape.length;
  const nsp = r - 2;
  const s = knownSpatial('conv_kernel_grad', b.val(x).shape.slice(1, r - 1));
  const o = knownSpatial('conv_kernel_grad', b.val(dy).shape.slice(1, r - 1));
  const p = s.map((ss, i) => padsFor(ss, k[i]!, a.strides[i]!, a.dilation[i]!, a.padding));
  const cIn = b.val(x).shape[r - 1]!;
  const fOut = b.val(dy).shape[r - 1]!;
  if (cIn === null || fOut === null) throw new OnnxExportError('conv_kernel_grad needs known channel counts');
  const G = a.groups;
  const cg = cIn / G;
  const fg = fOut / G;
  // (N, S..., C) -> (C, N, S...); (N, O..., F) -> (F, N, O...)
  const xT = transpose(b, b.cast(x, d), [r - 1, 0, ...Array.from({ length: nsp }, (_, i) => i + 1)]);
  const dyT = transpose(b, b.cast(dy, d), [r - 1, 0, ...Array.from({ length: nsp }, (_, i) => i + 1)]);
  // the input extent a K-sized output needs: (K - 1) * dil + (O - 1) * s + 1; pad the end up to it
  const need = k.map((kk, i) => (kk - 1) * a.dilation[i]! + (o[i]! - 1) * a.strides[i]! + 1);
  const endPad = s.map((ss, i) => Math.max(0, need[i]! - (ss + p[i]![0])));
  const parts: string[] = [];
  for (let g = 0; g < G; g++) {
    const xg =
      G === 1
        ? xT
        : b.slice(xT, [g * cg], [(g + 1) * cg], [0], [1], { dtype: d, shape: [cg, ...b.val(xT).shape.slice(1)] });
    const dg =
      G === 1
        ? dyT
        : b.slice(dyT, [g * fg], [(g + 1) * fg], [0], [1], { dtype: d, shape: [fg, ...b.val(dyT).shape.slice(1)] });
    const full = b.op(
      'Conv',
      [xg, dg],
      {
        strides: a.dilation,
        dilations: a.strides,
        kernel_shape: o,
        pads: [...p.map((q) => q[0]), ...endPad],
      },
      { dtype: d, shape: [cg, fg, ...k.map(() => null)] },
    );
    // (Cg, Fg, K'...) cut to K
    parts.push(
      b.slice(
        full,
        k.map(() => 0),
        [...k],
        k.map((_, i) => i + 2),
        k.map(() => 1),
        { dtype: d, shape: [cg, fg, ...k] },
      ),
    );
  }
  // groups: (Cg, F, K...) with each group's filters side by side
  const all = G === 1 ? parts[0]! : b.op('Concat', parts, { axis: 1 }, { dtype: d, shape: [cg, fOut, ...k] });
  return fit(c, transpose(b, all, [...Array.from({ length: nsp }, (_, i) => i + 2), 0, 1]));
}

/** Attributes of MaxPool/AveragePool over the channels-first `x`. */
function poolAttrs(
  b: GraphBuilder,
  x: string,
  a: WindowAttrs & { window: readonly number[] },
  avg: boolean,
): Record<string, number | string | readonly number[]> {
  const dil = a.dilation.some((q) => q !== 1);
  if (avg && dil && b.opset < 19)
    throw new OnnxExportError('pool: average pooling with dilation needs AveragePool dilations (opset 19 or later)');
  return {
    kernel_shape: a.window,
    strides: a.strides,
    ...(dil || !avg ? { dilations: a.dilation } : {}),
    ...padAttrs(b.val(x).shape.slice(2), a.window, a),
    ...(avg ? { count_include_pad: 0 } : {}),
  };
}

/** Per-output-cell flat input index of the window's first maximum (MaxPool's Indices, over the channels-first input). */
function maxIndices(
  b: GraphBuilder,
  xFirst: string,
  a: WindowAttrs & { window: readonly number[] },
  outFirst: StaticShape,
): string {
  const [, idx] = b.opN('MaxPool', [xFirst], poolAttrs(b, xFirst, a, false), [
    { dtype: b.val(xFirst).dtype, shape: outFirst },
    { dtype: 'int64', shape: outFirst },
  ]);
  return idx!;
}

/** The dtype a pool computes in: max compares in maxArith's, average sums in arith's. */
function poolDType(c: Ctx, a: PoolAttrs): DType {
  return a.mode === 'max' ? maxArith(c.out.dtype) : arith(c.out.dtype);
}

/** The patch geometry of pooling x (channels last) by `a`'s window. */
function patches(b: GraphBuilder, x: string, a: PoolAttrs): PatchGeometry {
  return geometryOf(b.val(x).shape.slice(1, -1), a.window, a);
}

export const convTranslations: OnnxTableFor<keyof typeof convOps | keyof typeof poolOps> = {
  conv: (c, [x, w], a) => {
    const b = c.b;
    const d = arith(c.out.dtype);
    const r = b.val(x!).shape.length;
    const k = knownSpatial('conv kernel', b.val(w!).shape.slice(0, r - 2));
    if (exact(c)) {
      const g = geometryOf(b.val(x!).shape.slice(1, r - 1), k, a);
      return convByPatches(b, b.cast(x!, 'float64'), b.cast(w!, 'float64'), g, a.groups, c.out.shape);
    }
    const xf = transpose(b, b.cast(x!, d), toFirst(r));
    const outFirst = toFirst(r).map((p) => c.out.shape[p]!);
    const y = b.op(
      'Conv',
      [xf, kernelFirst(b, b.cast(w!, d))],
      {
        strides: a.strides,
        dilations: a.dilation,
        group: a.groups,
        kernel_shape: k,
        ...padAttrs(b.val(xf).shape.slice(2), k, a),
      },
      { dtype: d, shape: outFirst },
    );
    return fit(c, transpose(b, y, toLast(r)));
  },
  conv_transpose: (c, [dy, w, like], a) => {
    const r = c.b.val(dy!).shape.length;
    const size = a.size ?? knownSpatial('conv_transpose', c.b.val(like!).shape.slice(1, r - 1));
    if (exact(c)) {
      const b = c.b;
      const k = knownSpatial('conv_transpose', b.val(w!).shape.slice(0, r - 2));
      const g = geometryOf(size, k, a);
      const n = b.val(dy!).shape[0];
      const ch = c.out.shape[r - 1];
      const likeShape = [n ?? null, ...size, ch ?? null];
      // a stand-in of the result's shape for unpatches: zeros (N, S..., C)
      const shapeVec = b.vec([n ?? b.dim(dy!, 0), ...size, ch ?? -1]);
      const zl = b.op(
        'ConstantOfShape',
        [shapeVec],
        { value: new NDArray([0], [1], 'float64') },
        { dtype: 'float64', shape: likeShape },
      );
      return convTransposeByPatches(b, b.cast(dy!, 'float64'), b.cast(w!, 'float64'), g, a.groups, zl);
    }
    return convTranspose(c, dy!, w!, size, a);
  },
  conv_kernel_grad: (c, [x, dy, like], a) => {
    const r = c.b.val(x!).shape.length;
    const k = a.size ?? knownSpatial('conv_kernel_grad', c.b.val(like!).shape.slice(0, r - 2));
    if (exact(c)) {
      const b = c.b;
      const g = geometryOf(b.val(x!).shape.slice(1, r - 1), k, a);
      const cin = b.val(x!).shape[r - 1];
      const F = b.val(dy!).shape[r - 1];
      if (cin === null || cin === undefined || F === null || F === undefined)
        throw new OnnxExportError('conv_kernel_grad needs known channel counts');
      return kernelGradByPatches(b, b.cast(x!, 'float64'), b.cast(dy!, 'float64'), g, a.groups, cin / a.groups, F);
    }
    return kernelGrad(c, x!, dy!, k, a);
  },
  pool: (c, [x], a) => {
    const b = c.b;
    if (exact(c) && a.mode === 'avg') return avgPoolByPatches(b, b.cast(x!, 'float64'), patches(b, x!, a), c.out.shape);
    const d = poolDType(c, a);
    const r = b.val(x!).shape.length;
    const xf = transpose(b, b.cast(x!, d), toFirst(r));
    const outFirst = toFirst(r).map((p) => c.out.shape[p]!);
    const y = b.op(a.mode === 'max' ? 'MaxPool' : 'AveragePool', [xf], poolAttrs(b, xf, a, a.mode === 'avg'), {
      dtype: d,
      shape: outFirst,
    });
    return fit(c, transpose(b, y, toLast(r)));
  },
  pool_grad: (c, [x, dy], a) => {
    const b = c.b;
    if (exact(c) && a.mode === 'avg')
      return avgPoolGradByPatches(b, b.cast(dy!, 'float64'), patches(b, x!, a), b.cast(x!, 'float64'));
    const d = poolDType(c, a);
    const r = b.val(x!).shape.length;
    const xf = transpose(b, b.cast(x!, d), toFirst(r));
    const dyf = transpose(b, b.cast(dy!, d), toFirst(r));
    const xsF = b.val(xf).shape;
    if (a.mode === 'max') {
      // dy sent to each window's first maximum, summed where windows share it
      const idx = maxIndices(b, xf, a, b.val(dyf).shape);
      const flat = (v: string) => b.reshape(v, [null], b.i64([-1]));
      const size = b.unsqueeze(b.op('Size', [xf], {}, { dtype: 'int64', shape: [] }), [0]);
      const zeros = b.op('ConstantOfShape', [size], { value: new NDArray([0], [1], d) }, { dtype: d, shape: [null] });
      const dx = b.op(
        'ScatterElements',
        [zeros, flat(idx), flat(dyf)],
        { axis: 0, reduction: 'add' },
        { dtype: d, shape: [null] },
      );
      return fit(c, transpose(b, b.reshape(dx, xsF, b.shapeOf(xf)), toLast(r)));
    }
    // avg: dy / count over the counted cells; count = the same pool's window size per cell (padding excluded), spread back by a depthwise ConvTranspose of ones
    const sp = knownSpatial('pool_grad', xsF.slice(2));
    const ch = xsF[1];
    if (ch === null || ch === undefined) throw new OnnxExportError('pool_grad needs a known channel count');
    const ones = b.constant(new NDArray(new Float64Array(sizeOf(sp)).fill(1), [1, 1, ...sp], d));
    const kOnes = b.constant(new NDArray(new Float64Array(sizeOf(a.window)).fill(1), [1, 1, ...a.window], d));
    const p = sp.map((s, i) => padsFor(s, a.window[i]!, a.strides[i]!, a.dilation[i]!, a.padding));
    const pads = [...p.map((q) => q[0]), ...p.map((q) => q[1])];
    const count = b.op(
      'Conv',
      [ones, kOnes],
      { strides: a.strides, dilations: a.dilation, kernel_shape: a.window, pads },
      { dtype: d, shape: [1, 1, ...b.val(dyf).shape.slice(2)] },
    );
    const scaled = b.op('Div', [dyf, count], {}, b.val(dyf));
    const kDepth = b.constant(
      new NDArray(new Float64Array(ch * a.window.reduce((p2, q) => p2 * q, 1)).fill(1), [ch, 1, ...a.window], d),
    );
    const o = knownSpatial('pool_grad', b.val(dyf).shape.slice(2));
    const outputPadding = sp.map(
      (s, i) => s - (a.strides[i]! * (o[i]! - 1) + effectiveSize(a.window[i]!, a.dilation[i]!) - p[i]![0] - p[i]![1]),
    );
    const attrs = { strides: a.strides, dilations: a.dilation, group: ch, kernel_shape: a.window, pads };
    const y = paddedConvTranspose(b, [scaled, kDepth], attrs, outputPadding, sp, { dtype: d, shape: xsF });
    return fit(c, transpose(b, y, toLast(r)));
  },
  // g where x's window is maximal: g gathered at MaxPool's indices
  pool_select: (c, [x, g], a) => {
    const b = c.b;
    const d = maxArith(c.out.dtype);
    const r = b.val(x!).shape.length;
    const xf = transpose(b, b.cast(x!, d), toFirst(r));
    const gf = transpose(b, b.cast(g!, d), toFirst(r));
    const outFirst = toFirst(r).map((p) => c.out.shape[p]!);
    const idx = maxIndices(b, xf, a, outFirst);
    const flatG = b.reshape(gf, [null], b.i64([-1]));
    const picked = b.op('Gather', [flatG, idx], { axis: 0 }, { dtype: d, shape: outFirst });
    return fit(c, transpose(b, picked, toLast(r)));
  },
};

export { F };
