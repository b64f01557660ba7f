// Templates of the structural ops (src/ir/ops/shape.ts, dims.ts, grad.ts, shape-adjoint.ts) and
// batch_dot: each output element is an input element picked by index arithmetic, a zero where
// a mask says so (padding, the adjoints), or a sum over the elements that map to it.
import { sliceRange } from '../ir/ops/shape.js';
import type { AttrsOf } from '../ir/registry.js';
import type { Expr } from './expr.js';
import {
  iadd, iclamp, iconst, idiv, imod, iscale, ivar, newVar, range, ravel, unravel, type IExpr, type Var,
} from './index-expr.js';
import { broadcastCoords, type At, type LoopTemplate, type MatmulTemplate, type TemplateCtx } from './templates.js';

const view = <A>(coords: (out: readonly IExpr[], c: TemplateCtx<A>) => IExpr[], shapeOnly?: (input: number) => boolean): LoopTemplate<A> => ({
  kind: 'view',
  expr: (at, out, c) => at(0, coords(out, c)),
  ...(shapeOnly !== undefined ? { shapeOnly } : {}),
});
const notFirst = (i: number) => i > 0;

/** lo <= x < hi as a 0/1 expression; undefined when the index range implies it. */
function within(c: TemplateCtx<unknown>, x: IExpr, lo: number, hi: number): Expr | undefined {
  const b = c.b;
  const [xlo, xhi] = range(x);
  const parts: Expr[] = [];
  if (xlo < lo) parts.push(b.op('ge', b.index(x), b.const(lo)));
  if (xhi >= hi) parts.push(b.op('lt', b.index(x), b.const(hi)));
  return parts.length === 0 ? undefined : parts.reduce((p, q) => b.op('and', p, q));
}

function andAll(c: TemplateCtx<unknown>, conds: readonly (Expr | undefined)[]): Expr | undefined {
  const cs = conds.filter((x): x is Expr => x !== undefined);
  return cs.length === 0 ? undefined : cs.reduce((p, q) => c.b.op('and', p, q));
}

/** `value` where `cond`, else 0 (the load inside stays in bounds through clamped indices). */
const masked = (c: TemplateCtx<unknown>, cond: Expr | undefined, value: Expr) => (cond === undefined ? value : c.b.op('select', cond, value, c.b.const(0)));

/** A sum over the input elements that map to each output element. */
function sumOver(at: At, c: TemplateCtx<unknown>, vars: readonly Var[], inCoords: IExpr[]): Expr {
  const body = c.b.cast(c.inDTypes[0]!, at(0, inCoords));
  return vars.length === 0 ? body : c.b.reduce('sum', vars, body);
}

const sliceT = view<AttrsOf<'slice'>>((out, c) => c.attrs.axes.map((s, i) => {
  const { first } = sliceRange(s, c.inShapes[0]![i]!);
  return iadd(iconst(first), iscale(out[i]!, s.step));
}));

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
      conds.push(within(c, k, 0, d));
      return iclamp(k, 0, Math.max(d - 1, 0));
    });
    return masked(c, andAll(c, conds), at(0, inC));
  },
};

const concatT: LoopTemplate<AttrsOf<'concat'>> = {
  kind: 'view',
  expr(at, out, c) {
    const axis = axisOf(c, c.outShape.length);
    const offs: number[] = [];
    let acc = 0;
    for (const s of c.inShapes) { offs.push(acc); acc += s[axis]!; }
    const part = (j: number) => at(j, out.map((o, i) => (i === axis ? iclamp(iadd(o, iconst(-offs[j]!)), 0, Math.max(c.inShapes[j]![axis]! - 1, 0)) : o)));
    let e = part(c.inShapes.length - 1);
    for (let j = c.inShapes.length - 2; j >= 0; j--) {
      if (c.inShapes[j]![axis] === 0) continue;
      e = c.b.op('select', c.b.op('lt', c.b.index(out[axis]!), c.b.const(offs[j + 1]!)), part(j), e);
    }
    return e;
  },
};

const tileT = view((out, c) => c.inShapes[0]!.map((d, i) => (d === 1 ? iconst(0) : imod(out[i]!, d))));

const axisOf = (c: TemplateCtx<{ readonly axis: number }>, rank: number) => {
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

const unsqueezeT = view<AttrsOf<'unsqueeze'>>((out, c) => {
  const axes = c.attrs.axes;
  return out.filter((_, i) => !axes.includes(i));
});

const reshapeLikeT = view((out, c) => unravel(ravel(out, c.outShape), c.inShapes[0]!), notFirst);

const sumToLikeT: LoopTemplate = {
  kind: 'reduction',
  shapeOnly: notFirst,
  expr(at, out, c) {
    const g = c.inShapes[0]!;
    const off = g.length - c.outShape.length;
    const vars: Var[] = [];
    const inC = g.map((d, k) => {
      if (k < off || (c.outShape[k - off] === 1 && d !== 1)) {
        const v = newVar(d);
        vars.push(v);
        return ivar(v);
      }
      return d === 1 ? iconst(0) : out[k - off]!;
    });
    return sumOver(at, c, vars, inC);
  },
};

/**
 * unslice: output element o is g[k / |step|] where k = o - first (step > 0) or first - o (step < 0)
 * lies in [0, count * |step|) and is a multiple of |step|; otherwise 0.
 */
const unsliceT: LoopTemplate<AttrsOf<'unslice'>> = {
  kind: 'view',
  shapeOnly: notFirst,
  expr(at, out, c) {
    const axes = c.attrs.axes;
    const conds: (Expr | undefined)[] = [];
    const inC = axes.map((s, i) => {
      const { first, count } = sliceRange(s, c.outShape[i]!);
      const k = s.step > 0 ? iadd(out[i]!, iconst(-first)) : iadd(iconst(first), iscale(out[i]!, -1));
      const m = Math.abs(s.step);
      if (m === 1) {
        if (!(first === 0 && count === c.outShape[i]! && s.step === 1)) conds.push(within(c, k, 0, count));
        return iclamp(k, 0, Math.max(count - 1, 0));
      }
      conds.push(within(c, k, 0, Math.max((count - 1) * m + 1, 0)));
      conds.push(c.b.op('eq', c.b.index(imod(iclamp(k, 0, Math.max((count - 1) * m, 0)), m)), c.b.const(0)));
      return iclamp(idiv(iclamp(k, 0, Math.max((count - 1) * m, 0)), m), 0, Math.max(count - 1, 0));
    });
    return masked(c, andAll(c, conds), at(0, inC));
  },
};

const concatPartT: LoopTemplate<AttrsOf<'concat_part'>> = {
  kind: 'view',
  shapeOnly: notFirst,
  expr(at, out, c) {
    const axis = axisOf(c, c.outShape.length);
    const index = c.attrs.index;
    const before = c.inShapes.slice(1, 1 + index).reduce((s, t) => s + t[axis]!, 0);
    return at(0, out.map((o, i) => (i === axis ? iadd(o, iconst(before)) : o)));
  },
};

const scatterIndexT: LoopTemplate<AttrsOf<'scatter_index'>> = {
  kind: 'view',
  shapeOnly: notFirst,
  expr(at, out, c) {
    const d = c.outShape[0]!;
    const raw = c.attrs.index;
    const i = raw < 0 ? raw + d : raw;
    return masked(c, c.b.op('eq', c.b.index(out[0]!), c.b.const(i)), at(0, out.slice(1)));
  },
};

const untileT: LoopTemplate<AttrsOf<'untile'>> = {
  kind: 'reduction',
  expr(at, out, c) {
    const reps = c.attrs.reps;
    const vars: Var[] = [];
    const inC = out.map((o, i) => {
      if (reps[i] === 1) return o;
      const v = newVar(reps[i]!);
      vars.push(v);
      return iadd(o, iscale(ivar(v), c.outShape[i]!));
    });
    return sumOver(at, c, vars, inC);
  },
};

const unrepeatT: LoopTemplate<AttrsOf<'unrepeat'>> = {
  kind: 'reduction',
  expr(at, out, c) {
    const axis = axisOf(c, c.outShape.length);
    const rep = c.attrs.rep;
    const v = newVar(rep);
    return sumOver(at, c, rep === 1 ? [] : [v], out.map((o, i) => (i === axis && rep > 1 ? iadd(iscale(o, rep), ivar(v)) : o)));
  },
};

/** A batch_dot operand's coordinates: batch `bb`, the summed axis at `t`, the other axes unravelled from `flat`. */
function batchOperand(shape: readonly number[], axis: number, bb: IExpr, flat: IExpr, t: IExpr): IExpr[] {
  const rest = unravel(flat, shape.filter((_, k) => k !== 0 && k !== axis));
  let j = 0;
  return shape.map((_, k) => (k === 0 ? bb : k === axis ? t : rest[j++]!));
}

/** out[b, i..., j...] = sum_k x[b, i... with k at axes[0]] * y[b, j... with k at axes[1]]. */
const batchDotT: MatmulTemplate<AttrsOf<'batch_dot'>> = {
  kind: 'matmul',
  dims(c) {
    const [xs, ys] = c.inShapes as [number[], number[]];
    const [ax, ay] = c.attrs.axes;
    const rest = (s: readonly number[], k: number) => s.filter((_, i) => i !== 0 && i !== k).reduce((p, d) => p * d, 1);
    return { batch: xs[0]!, m: rest(xs, ax), n: rest(ys, ay), k: xs[ax]! };
  },
  a: (bb, i, t, c) => batchOperand(c.inShapes[0]!, c.attrs.axes[0], bb, i, t),
  b: (bb, t, jj, c) => batchOperand(c.inShapes[1]!, c.attrs.axes[1], bb, jj, t),
  out(bb, i, jj, c) {
    const [xs, ys] = c.inShapes as [number[], number[]];
    const [ax, ay] = c.attrs.axes;
    return [bb, ...unravel(i, xs.filter((_, k) => k !== 0 && k !== ax)), ...unravel(jj, ys.filter((_, k) => k !== 0 && k !== ay))];
  },
};

const broadcastLikeT: LoopTemplate = {
  kind: 'elementwise',
  shapeOnly: notFirst,
  expr: (at, out, c) => at(0, broadcastCoords(out, c.inShapes[0]!, c.outShape)),
};
const stopGradientT: LoopTemplate = { kind: 'elementwise', expr: (at, out) => at(0, out) };

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
  unsqueeze: unsqueezeT,
  reshape_like: reshapeLikeT,
  broadcast_like: broadcastLikeT,
  stop_gradient: stopGradientT,
  sum_to_like: sumToLikeT,
  unslice: unsliceT,
  concat_part: concatPartT,
  scatter_index: scatterIndexT,
  untile: untileT,
  unrepeat: unrepeatT,
  batch_dot: batchDotT,
} as const;
