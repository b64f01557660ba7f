// Convolution and average pooling in float64 as gathers and matrix products (im2col).
// ONNX Runtime's CPU provider has Conv, ConvTranspose and AveragePool for float32 only; these
// forms use Gather, MatMul and ScatterElements, which it has for double, so float64 stays float64.
// They need the spatial sizes (the index table is a constant).
import { NDArray, sizeOf } from '../../../ir/ndarray.js';
import { padsFor, type WindowAttrs } from '../../../ir/ops/window.js';
import type { StaticShape } from '../../../ir/types.js';
import { OnnxExportError, type GraphBuilder } from '../builder.js';

export interface PatchGeometry {
  readonly spatial: readonly number[];
  readonly window: readonly number[];
  readonly out: readonly number[];
  readonly padded: readonly number[];
  readonly before: readonly number[];
  /** (Oflat, Kflat) flat indices into the padded spatial grid. */
  readonly index: NDArray;
  /** Per output cell, the taps that land inside the input (not the padding). */
  readonly counts: NDArray;
}

export function geometryOf(spatial: StaticShape, window: readonly number[], a: WindowAttrs): PatchGeometry {
  if (spatial.some((d) => d === null))
    throw new OnnxExportError(`float64 convolution needs known spatial dims, got [${spatial.join(', ')}]`);
  const s = spatial as number[];
  const p = s.map((ss, i) => padsFor(ss, window[i]!, a.strides[i]!, a.dilation[i]!, a.padding));
  const eff = window.map((k, i) => a.dilation[i]! * (k - 1) + 1);
  const out = s.map((ss, i) => Math.floor((ss + p[i]![0] + p[i]![1] - eff[i]!) / a.strides[i]!) + 1);
  const padded = s.map((ss, i) => Math.max(ss + p[i]![0] + p[i]![1], (out[i]! - 1) * a.strides[i]! + eff[i]!));
  const oN = sizeOf(out);
  const kN = sizeOf(window);
  const idx = new Float64Array(oN * kN);
  const cnt = new Float64Array(oN);
  const unflat = (f: number, dims: readonly number[]): number[] => {
    const r = new Array<number>(dims.length);
    for (let i = dims.length - 1; i >= 0; i--) {
      r[i] = f % dims[i]!;
      f = Math.floor(f / dims[i]!);
    }
    return r;
  };
  for (let o = 0; o < oN; o++) {
    const oc = unflat(o, out);
    for (let t = 0; t < kN; t++) {
      const tc = unflat(t, window);
      let flat = 0;
      let inside = true;
      for (let i = 0; i < s.length; i++) {
        const q = oc[i]! * a.strides[i]! + tc[i]! * a.dilation[i]!;
        flat = flat * padded[i]! + q;
        const src = q - p[i]![0];
        if (src < 0 || src >= s[i]!) inside = false;
      }
      idx[o * kN + t] = flat;
      if (inside) cnt[o] = cnt[o]! + 1;
    }
  }
  return {
    spatial: s,
    window,
    out,
    padded,
    before: p.map((q) => q[0]),
    index: new NDArray(idx, [oN, kN], 'int64'),
    counts: new NDArray(cnt, [oN], 'float64'),
  };
}

const prod = (s: readonly number[]) => sizeOf(s);

/** x (N, S..., C) -> patches (N, Oflat, Kflat, C), zeros where a tap lands in the padding. */
export function patches(b: GraphBuilder, x: string, g: PatchGeometry): string {
  const v = b.val(x);
  const n = v.shape[0] ?? null;
  const c = v.shape[v.shape.length - 1] ?? null;
  const r = v.shape.length;
  const pads = new Array<number>(2 * r).fill(0);
  g.spatial.forEach((s, i) => {
    pads[1 + i] = g.before[i]!;
    pads[r + 1 + i] = g.padded[i]! - s - g.before[i]!;
  });
  const xp = b.op('Pad', [x, b.i64(pads)], { mode: 'constant' }, { dtype: v.dtype, shape: [n, ...g.padded, c] });
  const flat = b.reshape(xp, [n, prod(g.padded), c], b.vec([n ?? b.dim(x, 0), prod(g.padded), c ?? b.dim(x, r - 1)]));
  return b.op(
    'Gather',
    [flat, b.constant(g.index)],
    { axis: 1 },
    { dtype: v.dtype, shape: [n, prod(g.out), prod(g.window), c] },
  );
}

/** The adjoint of `patches`: (N, Oflat, Kflat, C) summed back onto (N, S..., C). */
export function unpatches(b: GraphBuilder, p: string, g: PatchGeometry, like: string): string {
  const v = b.val(p);
  const [n, , , c] = v.shape;
  const nd = b.val(like).shape;
  const r = nd.length;
  const pn = prod(g.padded);
  const upd = b.reshape(
    p,
    [n ?? null, prod(g.out) * prod(g.window), c ?? null],
    b.vec([n ?? b.dim(like, 0), prod(g.out) * prod(g.window), c ?? b.dim(like, r - 1)]),
  );
  const idx = b.reshape(b.constant(g.index), [1, prod(g.out) * prod(g.window), 1]);
  const idxFull = b.op(
    'Expand',
    [idx, b.op('Shape', [upd], {}, { dtype: 'int64', shape: [3] })],
    {},
    { dtype: 'int64', shape: b.val(upd).shape },
  );
  const zshape = b.vec([n ?? b.dim(like, 0), pn, c ?? b.dim(like, r - 1)]);
  const zeros = b.op(
    'ConstantOfShape',
    [zshape],
    { value: new NDArray([0], [1], v.dtype) },
    { dtype: v.dtype, shape: [n ?? null, pn, c ?? null] },
  );
  const sum = b.op('ScatterElements', [zeros, idxFull, upd], { axis: 1, reduction: 'add' }, b.val(zeros));
  const grid = b.reshape(
    sum,
    [n ?? null, ...g.padded, c ?? null],
    b.vec([n ?? b.dim(like, 0), ...g.padded, c ?? b.dim(like, r - 1)]),
  );
  const axes = g.spatial.map((_, i) => i + 1);
  return b.slice(
    grid,
    g.before,
    g.before.map((q, i) => q + g.spatial[i]!),
    axes,
    axes.map(() => 1),
    { dtype: v.dtype, shape: [n ?? null, ...g.spatial, c ?? null] },
  );
}

function tr(b: GraphBuilder, x: string, perm: readonly number[]): string {
  const v = b.val(x);
  return b.op('Transpose', [x], { perm }, { dtype: v.dtype, shape: perm.map((q) => v.shape[q]!) });
}

/** Patches as (G, N*Oflat, Kflat*Cg). */
function groupedPatches(b: GraphBuilder, pt: string, G: number, cg: number): string {
  const v = b.val(pt);
  const [n, oN, kN] = v.shape as [number | null, number, number, number | null];
  const nO = n === null ? null : n * oN;
  const five = b.reshape(pt, [nO, kN, G, cg], b.i64([-1, kN, G, cg]));
  return b.reshape(tr(b, five, [2, 0, 1, 3]), [G, nO, kN * cg], b.i64([G, -1, kN * cg]));
}

/** A (window..., Cg, F) kernel's sizes: F features in G groups of fg, Cg channels per group, kN taps. */
function kernelDims(
  b: GraphBuilder,
  w: string,
  g: PatchGeometry,
  groups: number,
): { F: number; cg: number; kN: number; G: number; fg: number } {
  const ws = b.val(w).shape as number[];
  const F = ws[ws.length - 1]!;
  return { F, cg: ws[ws.length - 2]!, kN: prod(g.window), G: groups, fg: F / groups };
}

/** conv in float64: y (N, O..., F). */
export function convByPatches(
  b: GraphBuilder,
  x: string,
  w: string,
  g: PatchGeometry,
  groups: number,
  outShape: StaticShape,
): string {
  const xs = b.val(x).shape;
  const { F, cg, kN, G, fg } = kernelDims(b, w, g, groups);
  const pt = groupedPatches(b, patches(b, x, g), G, cg);
  const wg = tr(b, b.reshape(w, [kN * cg, G, fg]), [1, 0, 2]);
  const m = b.op('MatMul', [pt, wg], {}, { dtype: b.val(x).dtype, shape: [G, null, fg] });
  const back = b.reshape(tr(b, m, [1, 0, 2]), [null, F], b.i64([-1, F]));
  return b.reshape(back, outShape, b.vec([xs[0] ?? b.dim(x, 0), ...g.out, F]));
}

/** conv_transpose in float64: the adjoint of convByPatches in x. */
export function convTransposeByPatches(
  b: GraphBuilder,
  dy: string,
  w: string,
  g: PatchGeometry,
  groups: number,
  like: string,
): string {
  const { F, cg, kN, G, fg } = kernelDims(b, w, g, groups);
  const oN = prod(g.out);
  const d = b.val(dy).dtype;
  const dyg = tr(b, b.reshape(dy, [null, G, fg], b.i64([-1, G, fg])), [1, 0, 2]); // (G, N*O, Fg)
  const wT = tr(b, b.reshape(w, [kN * cg, G, fg]), [1, 2, 0]); // (G, Fg, K*Cg)
  const pg = b.op('MatMul', [dyg, wT], {}, { dtype: d, shape: [G, null, kN * cg] }); // (G, N*O, K*Cg)
  const p4 = tr(b, b.reshape(pg, [G, null, kN, cg], b.i64([G, -1, kN, cg])), [1, 2, 0, 3]); // (N*O, K, G, Cg)
  const pt = b.reshape(p4, [null, oN, kN, G * cg], b.i64([-1, oN, kN, G * cg]));
  return unpatches(b, pt, g, like);
}

/** conv_kernel_grad in float64: dw (K..., Cg, F). */
export function kernelGradByPatches(
  b: GraphBuilder,
  x: string,
  dy: string,
  g: PatchGeometry,
  groups: number,
  cg: number,
  F: number,
): string {
  const kN = prod(g.window);
  const G = groups;
  const fg = F / G;
  const d = b.val(x).dtype;
  const pt = groupedPatches(b, patches(b, x, g), G, cg); // (G, N*O, K*Cg)
  const dyg = tr(b, b.reshape(dy, [null, G, fg], b.i64([-1, G, fg])), [1, 0, 2]); // (G, N*O, Fg)
  const m = b.op('MatMul', [tr(b, pt, [0, 2, 1]), dyg], {}, { dtype: d, shape: [G, kN * cg, fg] }); // (G, K*Cg, Fg)
  return b.reshape(tr(b, m, [1, 0, 2]), [...g.window, cg, F]);
}

/** Average pooling in float64: the mean over each window's cells inside the input. */
export function avgPoolByPatches(b: GraphBuilder, x: string, g: PatchGeometry, outShape: StaticShape): string {
  const v = b.val(x);
  const pt = patches(b, x, g);
  const s = b.reduce('ReduceSum', pt, [2], false, {
    dtype: v.dtype,
    shape: [v.shape[0] ?? null, prod(g.out), v.shape[v.shape.length - 1] ?? null],
  });
  const cnt = b.constant(new NDArray(g.counts.data, [prod(g.out), 1], v.dtype));
  const m = b.op('Div', [s, cnt], {}, b.val(s));
  return b.reshape(
    m,
    outShape,
    b.vec([v.shape[0] ?? b.dim(x, 0), ...g.out, v.shape[v.shape.length - 1] ?? b.dim(x, v.shape.length - 1)]),
  );
}

/** The average-pool gradient in float64: dy / count spread over each window's cells. */
export function avgPoolGradByPatches(b: GraphBuilder, dy: string, g: PatchGeometry, like: string): string {
  const v = b.val(dy);
  const c = v.shape[v.shape.length - 1] ?? null;
  const n = v.shape[0] ?? null;
  const oN = prod(g.out);
  const kN = prod(g.window);
  const flat = b.reshape(dy, [n, oN, 1, c], b.vec([n ?? b.dim(dy, 0), oN, 1, c ?? b.dim(dy, v.shape.length - 1)]));
  const cnt = b.constant(new NDArray(g.counts.data, [oN, 1, 1], v.dtype));
  const per = b.op('Div', [flat, cnt], {}, b.val(flat));
  // every tap of the window gets dy / count; taps in the padding are cut away by unpatches
  const ones = b.constant(new NDArray(new Float64Array(kN).fill(1), [1, 1, kN, 1], v.dtype));
  const spreadv = b.op('Mul', [per, ones], {}, { dtype: v.dtype, shape: [n, oN, kN, c] });
  return unpatches(b, spreadv, g, like);
}
