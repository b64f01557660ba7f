// Structural ops (slice, pad, concat, gather, tile, repeat, axis bookkeeping, batch_dot) and
// their adjoints as ONNX operators. ONNX's Slice has Python's slice semantics (clamping, negative
// steps), so slices need no known dims; the adjoints that place values by position need them.
import { InferError } from '../../../ir/errors.js';
import { formatShape } from '../../../ir/ndarray.js';
import { mergedShape, type dimsOps } from '../../../ir/ops/dims.js';
import type { linalgOps } from '../../../ir/ops/linalg.js';
import { sliceRange, type shapeOps } from '../../../ir/ops/shape.js';
import type { shapeGradOps } from '../../../ir/ops/shape-adjoint.js';
import type { Dim, StaticShape } from '../../../ir/types.js';
import { BIG, OnnxExportError, type GraphBuilder } from '../builder.js';
import { arith, type Ctx, type OnnxTableFor } from './types.js';
import { fit } from './util.js';

const norm = (axis: number, rank: number) => (axis < 0 ? axis + rank : axis);

function known(what: string, s: StaticShape): readonly number[] {
  if (s.some((d) => d === null)) throw new OnnxExportError(`${what} needs known dims, got ${formatShape(s)}`);
  return s as number[];
}

/** x cast to the node's compute dtype (bool moves as int32 where a kernel may not take it). */
function num(c: Ctx, x: string): string {
  return c.b.cast(x, arith(c.out.dtype));
}

/** Each element `rep` times along `axis`: a new axis after it, expanded, merged (NumPy's repeat). */
function repeatAlong(b: GraphBuilder, x: string, axis: number, rep: number, outShape: StaticShape): string {
  const v = b.val(x);
  const u = b.unsqueeze(x, [axis + 1]);
  const wide = v.shape.flatMap((d, i) => (i === axis ? [d, rep] : [d]));
  const ones = [...v.shape.map(() => 1)];
  ones.splice(axis + 1, 0, rep);
  const e = b.op('Expand', [u, b.i64(ones)], {}, { dtype: v.dtype, shape: wide });
  const target = outShape.map((d, i) => d ?? (i === axis ? -1 : b.dim(x, i)));
  return b.reshape(e, outShape, b.vec(target));
}

/** Along `axis`, `step - 1` zeros after each element (length n * step), then cut to (n - 1) * step + 1. */
function spread(b: GraphBuilder, x: string, axis: number, step: number): string {
  const v = b.val(x);
  const s = known('unslice', v.shape);
  const withSlot = [...s.slice(0, axis + 1), 1, ...s.slice(axis + 1)];
  const r = withSlot.length;
  const pads = new Array<number>(2 * r).fill(0);
  pads[r + axis + 1] = step - 1;
  const padded = b.op(
    'Pad',
    [b.reshape(x, withSlot), b.i64(pads)],
    { mode: 'constant' },
    { dtype: v.dtype, shape: withSlot.map((d, i) => (i === axis + 1 ? step : d)) },
  );
  const merged = s.map((d, i) => (i === axis ? d * step : d));
  const long = b.reshape(padded, merged);
  const n = s[axis]!;
  const len = Math.max((n - 1) * step + 1, 0);
  return b.slice(long, [0], [len], [axis], [1], { dtype: v.dtype, shape: s.map((d, i) => (i === axis ? len : d)) });
}

function reverse(b: GraphBuilder, x: string, axis: number): string {
  const v = b.val(x);
  return b.slice(x, [-1], [-BIG], [axis], [-1], v);
}

type ShapeOps = keyof typeof shapeOps | keyof typeof dimsOps | keyof typeof linalgOps | keyof typeof shapeGradOps;

export const shapeTranslations: OnnxTableFor<ShapeOps> = {
  // Python's x[start:stop:step]: ONNX Slice clamps as Python does; null bounds are the ends for the step's direction
  slice: (c, [x], a) => {
    const starts = a.axes.map((s) => s.start ?? (s.step > 0 ? 0 : BIG));
    const ends = a.axes.map((s) => s.stop ?? (s.step > 0 ? BIG : -BIG));
    return c.b.slice(
      x!,
      starts,
      ends,
      a.axes.map((_, i) => i),
      a.axes.map((s) => s.step),
      c.out,
    );
  },
  pad: (c, [x], a) => {
    const pads = [...a.pads.map((p) => p[0]), ...a.pads.map((p) => p[1])];
    const d = arith(c.out.dtype);
    return fit(c, c.b.op('Pad', [num(c, x!), c.b.i64(pads)], { mode: 'constant' }, { dtype: d, shape: c.out.shape }));
  },
  concat: (c, ins, a) => {
    const d = arith(c.out.dtype);
    return fit(
      c,
      c.b.op(
        'Concat',
        ins.map((x) => c.b.cast(x, d)),
        { axis: norm(a.axis, c.out.shape.length) },
        { dtype: d, shape: c.out.shape },
      ),
    );
  },
  // negative indices count from the end (Gather's own rule); out of range is an ONNX Runtime error
  gather: (c, [ref, ind]) => c.b.op('Gather', [ref!, c.b.cast(ind!, 'int64')], { axis: 0 }, c.out),
  tile: (c, [x], a) => {
    const d = arith(c.out.dtype);
    return fit(c, c.b.op('Tile', [num(c, x!), c.b.i64(a.reps)], {}, { dtype: d, shape: c.out.shape }));
  },
  repeat_elements: (c, [x], a) => {
    const d = arith(c.out.dtype);
    const xc = num(c, x!);
    const axis = norm(a.axis, c.b.val(xc).shape.length);
    if (a.rep === 0) return fit(c, c.b.slice(xc, [0], [0], [axis], [1], { dtype: d, shape: c.out.shape }));
    return fit(
      c,
      repeatAlong(
        c.b,
        xc,
        norm(a.axis, c.b.val(xc).shape.length),
        a.rep,
        c.out.shape.map((dd) => dd),
      ),
    );
  },
  expand_dims: (c, [x], a) => c.b.unsqueeze(x!, [norm(a.axis, c.b.val(x!).shape.length + 1)]),
  squeeze: (c, [x], a) => c.b.squeeze(x!, [norm(a.axis, c.b.val(x!).shape.length)]),
  merge_axes: (c, [x], a) => {
    const b = c.b;
    const s = b.val(x!).shape;
    const m = mergedShape(s, a);
    // one unknown dim may be -1; more are read from the value's shape
    const unknown = m.filter((d) => d === null).length;
    const parts = m.map((d, i): number | string => {
      if (d !== null) return d;
      if (i === a.start && unknown === 1) return -1;
      if (i < a.start) return b.dim(x!, i);
      if (i > a.start) return b.dim(x!, i + (a.stop - a.start - 1));
      const dims = Array.from({ length: a.stop - a.start }, (_, k) => b.dim(x!, a.start + k));
      return b.reduce(
        'ReduceProd',
        b.op('Concat', dims, { axis: 0 }, { dtype: 'int64', shape: [dims.length] }),
        [0],
        true,
        { dtype: 'int64', shape: [1] },
      );
    });
    return b.reshape(x!, c.out.shape, b.vec(parts));
  },
  specify_shape: (c, [x]) => c.b.op('Identity', [x!], {}, c.out),
  // per batch row: x as (batch, rows, k) against y as (batch, k, cols), one batched MatMul
  batch_dot: (c, [x, y], a) => {
    const b = c.b;
    const [ax, ay] = a.axes;
    const d = arith(c.out.dtype);
    const xc = b.cast(x!, d);
    const yc = b.cast(y!, d);
    const xs = b.val(xc).shape;
    const ys = b.val(yc).shape;
    const xRest = xs.map((_, i) => i).filter((i) => i !== 0 && i !== ax);
    const yRest = ys.map((_, i) => i).filter((i) => i !== 0 && i !== ay);
    const prod = (s: StaticShape, axes: number[]): Dim =>
      axes.some((i) => s[i] === null) ? null : axes.reduce((p, i) => p * s[i]!, 1);
    const xt = b.op(
      'Transpose',
      [xc],
      { perm: [0, ...xRest, ax] },
      { dtype: d, shape: [0, ...xRest, ax].map((i) => xs[i]!) },
    );
    const yt = b.op(
      'Transpose',
      [yc],
      { perm: [0, ay, ...yRest] },
      { dtype: d, shape: [0, ay, ...yRest].map((i) => ys[i]!) },
    );
    const dimOr = (v: string, s: StaticShape, i: number): number | string => s[i] ?? b.dim(v, i);
    const x3 = b.reshape(
      xt,
      [xs[0]!, prod(xs, xRest), xs[ax]!],
      b.vec([dimOr(xc, xs, 0), prod(xs, xRest) ?? -1, dimOr(xc, xs, ax)]),
    );
    const y3 = b.reshape(
      yt,
      [ys[0]!, ys[ay]!, prod(ys, yRest)],
      b.vec([dimOr(yc, ys, 0), dimOr(yc, ys, ay), prod(ys, yRest) ?? -1]),
    );
    const m = b.op('MatMul', [x3, y3], {}, { dtype: d, shape: [xs[0]!, prod(xs, xRest), prod(ys, yRest)] });
    const target = b.vec([
      dimOr(xc, xs, 0),
      ...xRest.map((i) => dimOr(xc, xs, i)),
      ...yRest.map((i) => dimOr(yc, ys, i)),
    ]);
    return fit(c, b.reshape(m, c.out.shape, target));
  },
  // zeros of x's shape with g where the slice read: per axis, g spread by the step, padded, reversed back for a negative step
  unslice: (c, [g, x], a) => {
    const b = c.b;
    const xs = b.val(x!).shape;
    let v = num(c, g!);
    a.axes.forEach((s, i) => {
      // an axis the slice took whole is already in place (its size may be unknown)
      if ((s.start === null || s.start === 0) && s.stop === null && s.step === 1) return;
      const dd = xs[i];
      if (dd === null || dd === undefined)
        throw new OnnxExportError(`unslice needs known dims on the sliced axis ${i}, got ${formatShape(xs)}`);
      const { first, count } = sliceRange(s, dd);
      const st = Math.abs(s.step);
      const vs = b.val(v).shape;
      if (count === 0) {
        const z = known('unslice', vs).map((e, j) => (j === i ? dd : e));
        v = b.op('ConstantOfShape', [b.i64(z)], { value: zeroOf(b.val(v).dtype) }, { dtype: b.val(v).dtype, shape: z });
        return;
      }
      if (st > 1) v = spread(b, v, i, st);
      const f = s.step < 0 ? dd - 1 - first : first;
      const len = b.val(v).shape[i]!;
      const r = vs.length;
      const pads = new Array<number>(2 * r).fill(0);
      pads[i] = f;
      pads[r + i] = dd - f - len;
      v = b.op(
        'Pad',
        [v, b.i64(pads)],
        { mode: 'constant' },
        { dtype: b.val(v).dtype, shape: vs.map((e, j) => (j === i ? dd : e)) },
      );
      if (s.step < 0) v = reverse(b, v, i);
    });
    return fit(c, v);
  },
  concat_part: (c, [g, ...xs], a) => {
    const b = c.b;
    const axis = norm(a.axis, b.val(g!).shape.length);
    const before = xs.slice(0, a.index).map((x) => b.val(x).shape[axis]);
    const len = b.val(xs[a.index]!).shape[axis];
    if (before.every((d) => d !== null) && len !== null && len !== undefined) {
      const start = (before as number[]).reduce((p, q) => p + q, 0);
      return b.slice(g!, [start], [start + len], [axis], [1], c.out);
    }
    const zero = b.i64([0]);
    const start = xs
      .slice(0, a.index)
      .reduce((acc, x) => b.op('Add', [acc, b.dim(x, axis)], {}, { dtype: 'int64', shape: [1] }), zero);
    const end = b.op('Add', [start, b.dim(xs[a.index]!, axis)], {}, { dtype: 'int64', shape: [1] });
    return b.op('Slice', [g!, start, end, b.i64([axis]), b.i64([1])], {}, c.out);
  },
  // rows of g added into zeros at their (possibly repeated) indices: ScatterND with reduction 'add'
  scatter_add_rows: (c, [g, ind, ref]) => {
    const b = c.b;
    if (b.opset < 16)
      throw new OnnxExportError('scatter_add_rows needs ScatterND with reduction="add" (opset 16 or later)');
    const d = arith(c.out.dtype);
    const rs = b.val(ref!).shape;
    const n = b.dim(ref!, 0);
    const i64 = b.cast(ind!, 'int64');
    const is = b.val(i64).shape;
    const neg = b.op('Less', [i64, b.scalar(0, 'int64')], {}, { dtype: 'bool', shape: is });
    const k = b.op(
      'Where',
      [neg, b.op('Add', [i64, b.reshape(n, [], b.i64([]))], {}, { dtype: 'int64', shape: is }), i64],
      {},
      { dtype: 'int64', shape: is },
    );
    const zeros = b.op('ConstantOfShape', [b.shapeOf(ref!)], { value: zeroOf(d) }, { dtype: d, shape: rs });
    return fit(
      c,
      b.op(
        'ScatterND',
        [zeros, b.unsqueeze(k, [is.length]), b.cast(g!, d)],
        { reduction: 'add' },
        { dtype: d, shape: c.out.shape },
      ),
    );
  },
  // the sum of the tiles: each axis of size r * d split as (r, d), the r axes summed
  untile: (c, [g], a) => {
    const b = c.b;
    const gs = known('untile', b.val(g!).shape);
    const d = arith(c.out.dtype);
    const split = gs.flatMap((dd, i) => [a.reps[i]!, dd / a.reps[i]!]);
    const r = b.reshape(b.cast(g!, d), split);
    const s = b.reduce(
      'ReduceSum',
      r,
      gs.map((_, i) => 2 * i),
      false,
      { dtype: d, shape: gs.map((dd, i) => dd / a.reps[i]!) },
    );
    return fit(c, s);
  },
  // the sum of each run of `rep`: the axis split as (d, rep), the rep axis summed
  unrepeat: (c, [g], a) => {
    const b = c.b;
    const gs = b.val(g!).shape;
    const axis = norm(a.axis, gs.length);
    const d = arith(c.out.dtype);
    const split = [...gs.slice(0, axis), gs[axis] === null ? null : gs[axis]! / a.rep, a.rep, ...gs.slice(axis + 1)];
    const target = b.vec(split.map((dd, i) => dd ?? (i === axis ? -1 : b.dim(g!, i < axis ? i : i - 1))));
    const r = b.reshape(b.cast(g!, d), split, target);
    return fit(c, b.reduce('ReduceSum', r, [axis + 1], false, { dtype: d, shape: c.out.shape }));
  },
};

import { NDArray } from '../../../ir/ndarray.js';
import type { DType } from '../../../ir/dtype.js';
export function zeroOf(d: DType): NDArray {
  return new NDArray([0], [1], d);
}
export { InferError };
