// Templates of the structural ops (src/ir/ops/shape.ts, dims.ts): each output element is an input
// element picked by index arithmetic, or a zero where a mask says so (padding). The helpers here
// are shared with the adjoints' templates (templates-adjoint.ts).
import { sliceRange } from '../../ir/ops/shape.js';
import type { AttrsOf } from '../../ir/registry.js';
import type { Expr } from '../kernel/expr.js';
import { iadd, iclamp, iconst, idiv, imod, iscale, unravel, type IExpr, type Var } from '../kernel/index-expr.js';
import type { At, LoopTemplate, TemplateCtx } from './templates.js';
import { allOf, masked, within } from '../kernel/mask.js';

/** Right-aligned broadcast: coordinates of an input of shape `inShape` inside `outShape`. */
export function broadcastCoords(
  coords: readonly IExpr[],
  inShape: readonly number[],
  outShape: readonly number[],
): IExpr[] {
  const off = outShape.length - inShape.length;
  return inShape.map((d, k) => (d === 1 && outShape[k + off] !== 1 ? iconst(0) : coords[k + off]!));
}

export const view = <A>(
  coords: (out: readonly IExpr[], c: TemplateCtx<A>) => IExpr[],
  shapeOnly?: (input: number) => boolean,
): LoopTemplate<A> => ({
  kind: 'view',
  expr: (at, out, c) => at(0, coords(out, c)),
  ...(shapeOnly !== undefined ? { shapeOnly } : {}),
});
export const notFirst = (i: number) => i > 0;

/** A sum over the input elements that map to each output element. */
export function sumOver(at: At, c: TemplateCtx<unknown>, vars: readonly Var[], inCoords: IExpr[]): Expr {
  const body = c.b.cast(c.inDTypes[0]!, at(0, inCoords));
  return vars.length === 0 ? body : c.b.reduce('sum', vars, body);
}

const sliceT = view<AttrsOf<'slice'>>((out, c) =>
  c.attrs.axes.map((s, i) => {
    const { first } = sliceRange(s, c.inShapes[0]![i]!);
    return iadd(iconst(first), iscale(out[i]!, s.step));
  }),
);

const padT: LoopTemplate<AttrsOf<'pad'>> = {
  kind: 'view',
  expr(at, out, c) {
    const pads = c.attrs.pads;
    const shape = c.inShapes[0]!;
    const conds: (Expr | undefined)[] = [];
    const inC = out.map((o, i) => {
      const [before] = pads[i]!;
      const d = shape[i]!;
      const k = iadd(o, iconst(-before));
      if (pads[i]![0] === 0 && pads[i]![1] === 0) return k;
      conds.push(within(c.b, k, 0, d));
      return iclamp(k, 0, Math.max(d - 1, 0));
    });
    return masked(c.b, allOf(c.b, conds), at(0, inC));
  },
};

const concatT: LoopTemplate<AttrsOf<'concat'>> = {
  kind: 'view',
  expr(at, out, c) {
    const axis = axisOf(c, c.outShape.length);
    const offs: number[] = [];
    let acc = 0;
    for (const s of c.inShapes) {
      offs.push(acc);
      acc += s[axis]!;
    }
    const part = (j: number) =>
      at(
        j,
        out.map((o, i) =>
          i === axis ? iclamp(iadd(o, iconst(-offs[j]!)), 0, Math.max(c.inShapes[j]![axis]! - 1, 0)) : o,
        ),
      );
    let e = part(c.inShapes.length - 1);
    for (let j = c.inShapes.length - 2; j >= 0; j--) {
      if (c.inShapes[j]![axis] === 0) continue;
      e = c.b.op('select', c.b.op('lt', c.b.index(out[axis]!), c.b.const(offs[j + 1]!)), part(j), e);
    }
    return e;
  },
};

const tileT = view((out, c) => c.inShapes[0]!.map((d, i) => (d === 1 ? iconst(0) : imod(out[i]!, d))));

/** An axis attr counted from the end when negative. */
export const axisOf = (c: TemplateCtx<{ readonly axis: number }>, rank: number) => {
  const a = c.attrs.axis;
  return a < 0 ? a + rank : a;
};

const repeatT = view<AttrsOf<'repeat_elements'>>((out, c) => {
  const axis = axisOf(c, c.outShape.length);
  return out.map((o, i) => (i === axis ? idiv(o, c.attrs.rep) : o));
});

const expandDimsT = view<AttrsOf<'expand_dims'>>((out, c) => {
  const axis = axisOf(c, c.outShape.length);
  return out.filter((_, i) => i !== axis);
});

const squeezeT = view<AttrsOf<'squeeze'>>((out, c) => {
  const axis = axisOf(c, c.inShapes[0]!.length);
  return [...out.slice(0, axis), iconst(0), ...out.slice(axis)];
});

const mergeAxesT = view<AttrsOf<'merge_axes'>>((out, c) => {
  const { start, stop } = c.attrs;
  const shape = c.inShapes[0]!;
  return [...out.slice(0, start), ...unravel(out[start]!, shape.slice(start, stop)), ...out.slice(start + 1)];
});

export const shapeTemplates = {
  slice: sliceT,
  pad: padT,
  concat: concatT,
  tile: tileT,
  repeat_elements: repeatT,
  expand_dims: expandDimsT,
  squeeze: squeezeT,
  merge_axes: mergeAxesT,
  specify_shape: view((out) => [...out]),
} as const;
