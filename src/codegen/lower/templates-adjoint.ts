// Templates of the adjoint ops (src/ir/ops/adjoint.ts, shape-adjoint.ts), which gradients build:
// each output element reads the input elements the forward op maps to it (a zero where none
// does), or sums them where several do, so the scatters of the reference are gathers here.
import { sliceRange } from '../../ir/ops/shape.js';
import type { GradClipAttrs } from '../../ir/ops/adjoint.js';
import type { AttrsOf } from '../../ir/registry.js';
import type { Expr } from '../kernel/expr.js';
import type { Var } from '../kernel/index-expr.js';
import { iadd, iclamp, iconst, idiv, imod, iscale, ivar, newVar, ravel, unravel } from '../kernel/index-expr.js';
import type { LoopTemplate } from './templates.js';
import { axisOf, broadcastCoords, notFirst, sumOver, view } from './templates-shape.js';
import { allOf, masked, within } from '../kernel/mask.js';

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
        if (!(first === 0 && count === c.outShape[i]! && s.step === 1)) conds.push(within(c.b, k, 0, count));
        return iclamp(k, 0, Math.max(count - 1, 0));
      }
      conds.push(within(c.b, k, 0, Math.max((count - 1) * m + 1, 0)));
      conds.push(c.b.op('eq', c.b.index(imod(iclamp(k, 0, Math.max((count - 1) * m, 0)), m)), c.b.const(0)));
      return iclamp(idiv(iclamp(k, 0, Math.max((count - 1) * m, 0)), m), 0, Math.max(count - 1, 0));
    });
    return masked(c.b, allOf(c.b, conds), at(0, inC));
  },
};

const concatPartT: LoopTemplate<AttrsOf<'concat_part'>> = {
  kind: 'view',
  shapeOnly: notFirst,
  expr(at, out, c) {
    const axis = axisOf(c, c.outShape.length);
    const index = c.attrs.index;
    const before = c.inShapes.slice(1, 1 + index).reduce((s, t) => s + t[axis]!, 0);
    return at(
      0,
      out.map((o, i) => (i === axis ? iadd(o, iconst(before)) : o)),
    );
  },
};

const scatterIndexT: LoopTemplate<AttrsOf<'scatter_index'>> = {
  kind: 'view',
  shapeOnly: notFirst,
  expr(at, out, c) {
    const d = c.outShape[0]!;
    const raw = c.attrs.index;
    const i = raw < 0 ? raw + d : raw;
    return masked(c.b, c.b.op('eq', c.b.index(out[0]!), c.b.const(i)), at(0, out.slice(1)));
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
    return sumOver(
      at,
      c,
      rep === 1 ? [] : [v],
      out.map((o, i) => (i === axis && rep > 1 ? iadd(iscale(o, rep), ivar(v)) : o)),
    );
  },
};

const broadcastLikeT: LoopTemplate = {
  kind: 'elementwise',
  shapeOnly: notFirst,
  expr: (at, out, c) => at(0, broadcastCoords(out, c.inShapes[0]!, c.outShape)),
};
const stopGradientT: LoopTemplate = { kind: 'elementwise', expr: (at, out) => at(0, out) };
/** grad_clip and grad_scale forward their input's value (they act on gradients only). */
const gradClipT: LoopTemplate<GradClipAttrs> = { kind: 'elementwise', expr: (at, out) => at(0, out) };
const gradScaleT: LoopTemplate<AttrsOf<'grad_scale'>> = { kind: 'elementwise', expr: (at, out) => at(0, out) };

export const adjointTemplates = {
  unsqueeze: unsqueezeT,
  reshape_like: reshapeLikeT,
  broadcast_like: broadcastLikeT,
  stop_gradient: stopGradientT,
  grad_clip: gradClipT,
  grad_scale: gradScaleT,
  sum_to_like: sumToLikeT,
  unslice: unsliceT,
  concat_part: concatPartT,
  scatter_index: scatterIndexT,
  untile: untileT,
  unrepeat: unrepeatT,
} as const;
