// Convolutions as matmul templates: the im2col matrix is never stored, its panels are packed
// straight from the input by index arithmetic (padding as a mask), and the kernel is the other
// operand. conv, and its two adjoints conv_transpose and conv_kernel_grad, are each
// out[g, i, j] = sum_t A[g, i, t] B[g, t, j] over (output cell, feature) x (tap, channel) index
// spaces, batched over the G groups (each group's Cg = C/G channels and Fg = F/G features; a
// depthwise convolution is G = C, Cg = 1), as cuDNN and XLA run grouped convolutions:
//   conv             i = (n, o...), t = (tap..., c), j = f:  x[n, o*s + tap*dil - pad, g*Cg + c] * w[tap, c, g*Fg + f]
//   conv_transpose   i = (n, s...), t = (tap..., f), j = c:  dy[n, (s + pad - tap*dil)/s, g*Fg + f] * w[tap, c, g*Fg + f]
//   conv_kernel_grad i = (tap..., c), t = (n, o...), j = f:  x[n, o*s + tap*dil - pad, g*Cg + c] * dy[n, o, g*Fg + f]
// The output's channel is g*Fg + j (g*Cg + j for conv_transpose), so each group's block of
// columns is a strided slice of the output rows. Groups narrower than 4 channels in or out (a
// depthwise convolution: 1 in) take the reduction templates below instead (narrowGroups), as
// their per-group products are too narrow for packed panels to pay.
import type { WindowAttrs } from '../../ir/ops/window.js';
import { padsFor } from '../../ir/ops/window.js';
import type { AttrsOf } from '../../ir/registry.js';
import { firstMaxTap, foldTaps, poolGeom, reachingCells, tapPositions, windowTaps, type PoolGeom } from './pool.js';
import type { PoolAttrs } from '../../ir/ops/pool.js';
import type { Expr, ExprBuilder } from '../kernel/expr.js';
import type { IExpr, Var } from '../kernel/index-expr.js';
import { iadd, idiv, imod, iscale, ivar, newVar, unravel } from '../kernel/index-expr.js';
import type { IndirectA } from '../kernel/ir.js';
import type { LoopTemplate, MatmulTemplate, TemplateCtx } from './templates.js';
import { allOf, masked } from '../kernel/mask.js';
import { sizeOf } from '../../ir/ndarray.js';

type ConvCtx = TemplateCtx & { readonly attrs: WindowAttrs & { readonly groups: number } };

const groupsOf = (c: TemplateCtx) => (c as ConvCtx).attrs.groups;
/** Channel `x` of group `g` (blocks of `size`): g*size + x (x alone when there is one group). */
const inGroup = (c: TemplateCtx, g: IExpr, size: number, x: IExpr) =>
  groupsOf(c) === 1 ? x : iadd(iscale(g, size), x);
const prod = (xs: readonly number[]) => sizeOf(xs);

/** `value` where every condition holds, else 0. */
const maskedAll = (c: TemplateCtx<unknown>, conds: readonly (Expr | undefined)[], value: Expr): Expr =>
  masked(c.b, allOf(c.b, conds), value);

/** Input position o*stride + tap*dil - pad on each spatial axis, clamped, with its in-range conditions. */
function tapRead(
  c: TemplateCtx<WindowAttrs>,
  o: readonly IExpr[],
  tap: readonly IExpr[],
  inSize: readonly number[],
  window: readonly number[],
) {
  const { strides, dilation, padding } = c.attrs;
  const pads = o.map((_, i) => padsFor(inSize[i]!, window[i]!, strides[i]!, dilation[i]!, padding)[0]);
  const { cells: pos, conds } = tapPositions(c.b, o, tap, { strides, dilation, pads }, inSize);
  return { pos, conds };
}

/**
 * conv_transpose's read of dy: for result position s and tap, the output cell o with
 * o*stride + tap*dil - pad = s on each spatial axis (clamped), with the conditions that it
 * exists (s + pad - tap*dil a multiple of the stride, and inside dy). Inputs dy (N, O..., F), w (K..., Cg, F).
 */
function transposeTapRead(c: ConvCtx, s: readonly IExpr[], tap: readonly IExpr[]) {
  const [dy, w] = c.inShapes as [number[], number[]];
  const { strides, dilation, padding } = c.attrs;
  const pads = s.map((_, k) => padsFor(c.outShape[k + 1]!, w[k]!, strides[k]!, dilation[k]!, padding)[0]);
  const { cells: pos, conds } = reachingCells(c.b, s, tap, { strides, dilation, pads }, dy.slice(1, s.length + 1));
  return { pos, conds };
}

/** A convolution as a matmul template: A packed through `aValue` only (each element read many times, so no prologue). */
function convMatmul(
  op: string,
  t: Pick<MatmulTemplate, 'shapeOnly' | 'dims' | 'aValue' | 'b' | 'out' | 'indirect'>,
): MatmulTemplate {
  return {
    kind: 'matmul',
    prologue: false,
    ...t,
    a: () => {
      throw new Error(`internal: ${op} packs through aValue`);
    },
  };
}

/**
 * The layout conv and conv_kernel_grad share: input 1 (w: K..., Cg, F; dy: N, O..., F) is B and
 * the output is (..., F); rows i and terms t run over all but the last axis of the output and of
 * B, and column j is a feature of group g.
 */
const featureLayout: Pick<MatmulTemplate, 'dims' | 'b' | 'out'> = {
  dims(c) {
    const y = c.inShapes[1]!;
    return {
      batch: groupsOf(c),
      m: prod(c.outShape.slice(0, -1)),
      n: y[y.length - 1]! / groupsOf(c),
      k: prod(y.slice(0, -1)),
    };
  },
  b(g, t, j, c) {
    const y = c.inShapes[1]!;
    return [...unravel(t, y.slice(0, -1)), inGroup(c, g, y[y.length - 1]! / groupsOf(c), j)];
  },
  out(g, i, j, c) {
    const f = c.outShape[c.outShape.length - 1]!;
    return [...unravel(i, c.outShape.slice(0, -1)), inGroup(c, g, f / groupsOf(c), j)];
  },
};

/**
 * The table-read operand of a conv or its kernel gradient over input x (n, spatial..., c): output
 * cells `outSize`, taps `window` at the strides and dilation, from the padding before.
 */
function convIndirect(
  over: 'rows' | 'terms',
  x: readonly number[],
  outSize: number[],
  window: number[],
  a: ConvCtx['attrs'],
): Omit<IndirectA, 'buf' | 'offset'> {
  const d = x.length - 2;
  return {
    over,
    batch: x[0]!,
    channels: x[d + 1]!,
    inSize: x.slice(1, d + 1),
    outSize,
    window,
    step: a.strides.slice(0, d),
    tapStep: a.dilation.slice(0, d),
    start: x.slice(1, d + 1).map((n, k) => -padsFor(n, window[k]!, a.strides[k]!, a.dilation[k]!, a.padding)[0]),
    div: x.slice(1, d + 1).map(() => 1),
  };
}

export const convT = convMatmul('conv', {
  ...featureLayout,
  indirect(c) {
    if (groupsOf(c) !== 1) return undefined;
    const [x, w] = c.inShapes as [number[], number[]];
    const d = x.length - 2;
    return convIndirect('rows', x, c.outShape.slice(1, d + 1), w.slice(0, d), (c as ConvCtx).attrs);
  },
  aValue(at, g, i, t, c) {
    const [x, w] = c.inShapes as [number[], number[]];
    const d = x.length - 2;
    const oc = unravel(i, c.outShape.slice(0, d + 1));
    const tc = unravel(t, w.slice(0, d + 1));
    const { pos, conds } = tapRead(c as ConvCtx, oc.slice(1), tc.slice(0, d), x.slice(1, d + 1), w.slice(0, d));
    return maskedAll(c, conds, at(0, [oc[0]!, ...pos, inGroup(c, g, w[d]!, tc[d]!)]));
  },
});

export const convTransposeT = convMatmul('conv_transpose', {
  shapeOnly: (input) => input === 2,
  // The input gradient reads dy's cell (s + pad - tap*dil) / stride where that is whole.
  indirect(c) {
    const a = (c as ConvCtx).attrs;
    if (groupsOf(c) !== 1) return undefined;
    const [dy, w] = c.inShapes as [number[], number[]];
    const d = dy.length - 2;
    return {
      over: 'rows',
      batch: dy[0]!,
      channels: dy[d + 1]!,
      inSize: dy.slice(1, d + 1),
      outSize: c.outShape.slice(1, d + 1),
      window: w.slice(0, d),
      step: dy.slice(1, d + 1).map(() => 1),
      tapStep: a.dilation.slice(0, d).map((v) => -v),
      start: dy
        .slice(1, d + 1)
        .map((_, k) => padsFor(c.outShape[k + 1]!, w[k]!, a.strides[k]!, a.dilation[k]!, a.padding)[0]),
      div: a.strides.slice(0, d),
    };
  },
  dims(c) {
    const [dy, w] = c.inShapes as [number[], number[]];
    const d = dy.length - 2;
    return {
      batch: groupsOf(c),
      m: prod(c.outShape.slice(0, d + 1)),
      n: w[d]!,
      k: prod(w.slice(0, d)) * (w[d + 1]! / groupsOf(c)),
    };
  },
  aValue(at, g, i, t, c) {
    const cc = c as ConvCtx;
    const [dy, w] = c.inShapes as [number[], number[]];
    const d = dy.length - 2;
    const fg = w[d + 1]! / groupsOf(c);
    const sc = unravel(i, c.outShape.slice(0, d + 1));
    const tc = unravel(t, [...w.slice(0, d), fg]);
    const { pos, conds } = transposeTapRead(cc, sc.slice(1), tc.slice(0, d));
    return maskedAll(c, conds, at(0, [sc[0]!, ...pos, inGroup(c, g, fg, tc[d]!)]));
  },
  b(g, t, j, c) {
    const w = c.inShapes[1]!;
    const d = w.length - 2;
    const fg = w[d + 1]! / groupsOf(c);
    const tc = unravel(t, [...w.slice(0, d), fg]);
    return [...tc.slice(0, d), j, inGroup(c, g, fg, tc[d]!)];
  },
  out(g, i, j, c) {
    const w = c.inShapes[1]!;
    return [...unravel(i, c.outShape.slice(0, c.outShape.length - 1)), inGroup(c, g, w[w.length - 2]!, j)];
  },
});

export const convKernelGradT = convMatmul('conv_kernel_grad', {
  ...featureLayout,
  shapeOnly: (input) => input === 2,
  // Rows (tap..., c), terms (n, o...): x's cell o*stride + tap*dil - pad, read through a table of window origins.
  indirect(c) {
    if (groupsOf(c) !== 1) return undefined;
    const [x, dy] = c.inShapes as [number[], number[]];
    const d = x.length - 2;
    return convIndirect('terms', x, dy.slice(1, d + 1), c.outShape.slice(0, d), (c as ConvCtx).attrs);
  },
  aValue(at, g, i, t, c) {
    const [x, dy] = c.inShapes as [number[], number[]];
    const d = x.length - 2;
    const tapC = unravel(i, c.outShape.slice(0, d + 1));
    const no = unravel(t, dy.slice(0, d + 1));
    const { pos, conds } = tapRead(
      c as ConvCtx,
      no.slice(1),
      tapC.slice(0, d),
      x.slice(1, d + 1),
      c.outShape.slice(0, d),
    );
    return maskedAll(c, conds, at(0, [no[0]!, ...pos, inGroup(c, g, c.outShape[d]!, tapC[d]!)]));
  },
});

/**
 * A pooling template: `reduce` gets the builder, the geometry, the output cell's spatial
 * coordinates, and a read of input k at spatial positions (in the output cell's batch and channel).
 */
function poolTemplate<A extends PoolAttrs>(
  reduce: (
    b: ExprBuilder,
    g: PoolGeom,
    o: readonly IExpr[],
    read: (input: number, pos: readonly IExpr[]) => Expr,
  ) => Expr,
): LoopTemplate<A> {
  return {
    kind: 'reduction',
    expr(at, out, c) {
      const d = c.attrs.window.length;
      const read = (k: number, pos: readonly IExpr[]) =>
        c.b.cast(c.inDTypes[k]!, at(k, [out[0]!, ...pos, out[d + 1]!]));
      return reduce(c.b, poolGeom(c.attrs, c.inShapes[0]!, c.outShape), out.slice(1, d + 1), read);
    },
  };
}

/**
 * pool: a reduction over the window's taps, out-of-input cells masked (-inf for max; for avg
 * they add nothing and are not counted: the count is a second reduction, hoisted per cell).
 */
export const poolT = poolTemplate<AttrsOf<'pool'>>((b, g, o, read) => {
  if (g.a.mode === 'max') return foldTaps(b, g, o, 'max', (t) => masked(b, t.valid, read(0, t.pos), -Infinity));
  const t = windowTaps(b, g, o);
  const v = read(0, t.pos);
  const k = windowTaps(b, g, o);
  const count = b.reduce('sum', k.vars, k.valid ?? b.const(1));
  return b.reduce('sum', t.vars, masked(b, t.valid, b.op('div', v, count)));
});

/**
 * Grouped convolutions (groups > 1) as reductions per output element: each group's matmul is
 * narrow (a depthwise convolution's has one column per group and as many terms as taps), where
 * packing panels costs more than the products, so the sum over (tap, channel) of the group is
 * taken directly, as TensorFlow's and XNNPack's depthwise kernels do.
 */
const sumOver = (c: TemplateCtx, vars: readonly Var[], term: Expr): Expr => c.b.reduce('sum', vars, term);
const mul = (c: TemplateCtx, a: Expr, b: Expr): Expr => c.b.op('mul', a, b);

export const groupedConvT: LoopTemplate = {
  kind: 'reduction',
  supports: (a) => (a['groups'] as number) > 1,
  expr(at, out, c) {
    const [x, w] = c.inShapes as [number[], number[]];
    const d = x.length - 2;
    const cg = w[d]!;
    const fg = w[d + 1]! / groupsOf(c);
    const f = out[d + 1]!;
    const taps = w.slice(0, d).map((k) => newVar(k));
    const ch = newVar(cg);
    const { pos, conds } = tapRead(c as ConvCtx, out.slice(1, d + 1), taps.map(ivar), x.slice(1, d + 1), w.slice(0, d));
    const xv = maskedAll(
      c,
      conds,
      c.b.cast(c.inDTypes[0]!, at(0, [out[0]!, ...pos, iadd(iscale(idiv(f, fg), cg), ivar(ch))])),
    );
    return sumOver(c, [...taps, ch], mul(c, xv, c.b.cast(c.inDTypes[1]!, at(1, [...taps.map(ivar), ivar(ch), f]))));
  },
};

export const groupedConvTransposeT: LoopTemplate = {
  kind: 'reduction',
  supports: (a) => (a['groups'] as number) > 1,
  shapeOnly: (input) => input === 2,
  expr(at, out, c) {
    const cc = c as ConvCtx;
    const [dy, w] = c.inShapes as [number[], number[]];
    const d = dy.length - 2;
    const cg = w[d]!;
    const fg = w[d + 1]! / groupsOf(c);
    const chOut = out[d + 1]!;
    const g = idiv(chOut, cg);
    const taps = w.slice(0, d).map((k) => newVar(k));
    const fv = newVar(fg);
    const { pos, conds } = transposeTapRead(cc, out.slice(1, d + 1), taps.map(ivar));
    const fAbs = iadd(iscale(g, fg), ivar(fv));
    const dv = maskedAll(c, conds, c.b.cast(c.inDTypes[0]!, at(0, [out[0]!, ...pos, fAbs])));
    return sumOver(
      c,
      [...taps, fv],
      mul(c, dv, c.b.cast(c.inDTypes[1]!, at(1, [...taps.map(ivar), imod(chOut, cg), fAbs]))),
    );
  },
};

export const groupedConvKernelGradT: LoopTemplate = {
  kind: 'reduction',
  supports: (a) => (a['groups'] as number) > 1,
  shapeOnly: (input) => input === 2,
  expr(at, out, c) {
    const [x, dy] = c.inShapes as [number[], number[]];
    const d = x.length - 2;
    const cg = c.outShape[d]!;
    const fg = dy[d + 1]! / groupsOf(c);
    const f = out[d + 1]!;
    const nv = newVar(dy[0]!);
    const ov = dy.slice(1, d + 1).map((k) => newVar(k));
    const { pos, conds } = tapRead(
      c as ConvCtx,
      ov.map(ivar),
      out.slice(0, d),
      x.slice(1, d + 1),
      c.outShape.slice(0, d),
    );
    const xv = maskedAll(
      c,
      conds,
      c.b.cast(c.inDTypes[0]!, at(0, [ivar(nv), ...pos, iadd(iscale(idiv(f, fg), cg), out[d]!)])),
    );
    return sumOver(c, [nv, ...ov], mul(c, xv, c.b.cast(c.inDTypes[1]!, at(1, [ivar(nv), ...ov.map(ivar), f]))));
  },
};

/**
 * Whether a grouped convolution's groups are too narrow for the batched matmul: fewer than 4
 * channels in (Cg) or out (Fg) per group. Measured on fwd+bwd steps, batch 8 of 16x16, 3x3:
 * Cg = Fg = 16 (64 channels, 4 groups) 38 ms as matmuls against 331 ms as reductions; Cg = Fg = 4
 * 9 against 44 ms; Cg = Fg = 2 22 against 14 ms; depthwise (Cg = Fg = 1) 17 against 13 ms, and a
 * depthwise step with max pooling 176 against 64 ms (bench/README.md).
 */
export function narrowGroups(n: {
  readonly op: string;
  readonly attrs: { readonly [k: string]: unknown };
  readonly inputs?: readonly { readonly shape: readonly (number | null)[] }[];
}): boolean {
  const g = n.attrs['groups'];
  if (typeof g !== 'number' || !(g > 1) || n.inputs === undefined || n.inputs.length < 2) return false;
  const [a, b] = [n.inputs[0]!.shape, n.inputs[1]!.shape];
  // conv, conv_transpose: the kernel (K..., Cg, F) is input 1; conv_kernel_grad: x (.., C) and dy (.., F).
  const kernel = n.op === 'conv' || n.op === 'conv_transpose';
  const cIn = kernel ? b[b.length - 2] : a[a.length - 1];
  const f = b[b.length - 1];
  if (cIn === null || cIn === undefined || f === null || f === undefined) return false;
  const cg = kernel ? cIn : cIn / g;
  return cg < 4 || f / g < 4;
}

/** Reduction templates of grouped convolutions whose groups are narrow (narrowGroups). */
export const convAlternates = {
  conv: groupedConvT,
  conv_transpose: groupedConvTransposeT,
  conv_kernel_grad: groupedConvKernelGradT,
} as const;

/**
 * pool_select (max pooling): g at the window's first maximal cell of x, as three reductions over
 * the taps (src/codegen/lower/pool.ts): the flat tap of the first maximum, then the maximum over
 * the taps of g where the tap is that one (-inf elsewhere: one term, so g's value exactly, its
 * sign and NaN kept).
 */
export const poolSelectT = poolTemplate<AttrsOf<'pool_select'>>((b, g, o, read) => {
  const arg = firstMaxTap(b, g, o, (pos) => read(0, pos));
  const t = windowTaps(b, g, o);
  const hit = b.op('eq', t.flat, arg);
  const v = read(1, t.pos);
  return b.reduce('max', t.vars, masked(b, allOf(b, [t.valid, hit]), v, -Infinity));
});

export const convTemplates = {
  conv: convT,
  conv_transpose: convTransposeT,
  conv_kernel_grad: convKernelGradT,
  pool: poolT,
  pool_select: poolSelectT,
} as const;
