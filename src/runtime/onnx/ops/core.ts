// Leaves, casts, reshapes, dot, reductions and the gradient helper ops as ONNX operators.
import { InferError } from '../../../ir/errors.js';
import { resolveReshape, type coreOps } from '../../../ir/ops/core.js';
import type { gradOps } from '../../../ir/ops/adjoint.js';
import { unsqueezeShape } from '../../../ir/ops/adjoint.js';
import {
  reductionRows,
  type argOps,
  type reduceOps,
  type ReductionName,
  type ReductionOp,
} from '../../../ir/ops/reduce.js';
import { ONNX_DTYPE } from '../dtypes.js';
import { OnnxExportError } from '../builder.js';
import { NDArray, sizeOf } from '../../../ir/ndarray.js';
import { arith, type Ctx, type Emit, type OnnxTableFor, type AttrsOf } from './types.js';
import { fit, toDType } from './util.js';

type CoreOps = keyof typeof coreOps | 'where'; // where: defined with the elementwise ops

/**
 * theanine's dot (Theano's tensordot of x's last axis with y's second-to-last): MatMul when y
 * has rank <= 2; otherwise y's contracted axis moved first and the rest flattened, then reshaped back.
 */
const dot: Emit<Record<string, never>> = (c, [x, y]) => {
  const b = c.b;
  const d = arith(c.out.dtype);
  const xc = b.cast(x!, d);
  const yc = b.cast(y!, d);
  const ys = b.val(yc).shape;
  if (ys.length <= 2) return fit(c, b.op('MatMul', [xc, yc], {}, { dtype: d, shape: c.out.shape }));
  const r = ys.length;
  const perm = [r - 2, ...Array.from({ length: r }, (_, i) => i).filter((i) => i !== r - 2)];
  const yt = b.op('Transpose', [yc], { perm }, { dtype: d, shape: perm.map((p) => ys[p]!) });
  const rest: (number | null)[] = perm.slice(1).map((p) => ys[p] ?? null);
  const restSize: number | null = rest.includes(null) ? null : sizeOf(rest as number[]);
  const y2Shape: (number | null)[] = [ys[r - 2] ?? null, restSize];
  const y2 = b.reshape(yt, y2Shape, b.vec([ys[r - 2] ?? b.dim(yc, r - 2), restSize ?? -1]));
  const xs = b.val(xc).shape;
  const m = b.op('MatMul', [xc, y2], {}, { dtype: d, shape: [...xs.slice(0, -1), restSize] });
  const target = b.vec([
    ...xs.slice(0, -1).map((dd, i) => dd ?? b.dim(xc, i)),
    ...rest.map((dd, i) => dd ?? b.dim(yc, perm[i + 1]!)),
  ]);
  return fit(c, b.reshape(m, c.out.shape, target));
};

function reduce(opType: string): Emit<AttrsOf<'sum'>> {
  return (c, [x], a) => {
    const d = arith(c.out.dtype);
    return fit(c, c.b.reduce(opType, c.b.cast(x!, d), a.axes, a.keepdims, { dtype: d, shape: c.out.shape }));
  };
}

/** Max/Min reductions with NaN winning (as the reference's nanMax): a NaN anywhere in the window gives NaN. */
function extremum(opType: string): Emit<AttrsOf<'max'>> {
  return (c, [x], a) => {
    const b = c.b;
    const d = arith(c.out.dtype);
    const xc = b.cast(x!, d);
    const m = b.reduce(opType, xc, a.axes, a.keepdims, { dtype: d, shape: c.out.shape });
    if (d !== 'float32' && d !== 'float64') return fit(c, m);
    const anyNan = b.reduce(
      'ReduceMax',
      b.cast(b.op('IsNaN', [xc], {}, { dtype: 'bool', shape: b.val(xc).shape }), 'int32'),
      a.axes,
      a.keepdims,
      { dtype: 'int32', shape: c.out.shape },
    );
    const nan = b.op('Greater', [anyNan, b.scalar(0, 'int32')], {}, { dtype: 'bool', shape: c.out.shape });
    return fit(c, b.op('Where', [nan, b.scalar(NaN, d), m], {}, { dtype: d, shape: c.out.shape }));
  };
}

function logicReduce(opType: string): Emit<AttrsOf<'any'>> {
  return (c, [x], a) => {
    const i = c.b.cast(toDType(c.b, x!, 'bool'), 'int32');
    return c.b.cast(c.b.reduce(opType, i, a.axes, a.keepdims, { dtype: 'int32', shape: c.out.shape }), 'bool');
  };
}

/** Each reduction row's translation through its ONNX operator, by its family (src/ir/ops/reduce.ts); mean's is written out below. */
function reductionTranslations(): OnnxTableFor<Exclude<ReductionName, 'mean'>> {
  const emit = (r: ReductionOp) =>
    r.family === 'arith'
      ? reduce(r.spelling.onnx)
      : r.family === 'extremum'
        ? extremum(r.spelling.onnx)
        : logicReduce(r.spelling.onnx);
  return Object.fromEntries(
    reductionRows.filter((r) => r.spelling.mean !== true).map((r) => [r.name, emit(r)]),
  ) as OnnxTableFor<Exclude<ReductionName, 'mean'>>;
}

/** ArgMax/ArgMin with NaN counting as the extremum (first one): NaN cells are replaced by +-inf first. */
function arg(opType: 'ArgMax' | 'ArgMin'): Emit<AttrsOf<'argmax'>> {
  return (c, [x], a) => {
    const b = c.b;
    const d = arith(b.val(x!).dtype);
    let xc = b.cast(x!, d);
    if (d === 'float32' || d === 'float64') {
      const s = b.val(xc).shape;
      const nan = b.op('IsNaN', [xc], {}, { dtype: 'bool', shape: s });
      // NaN wins; among NaN and inf, the first NaN must win: count NaN as inf and break ties by position (select_last_index = 0)
      const anyNan = b.reduce('ReduceMax', b.cast(nan, 'int32'), [a.axis], true, {
        dtype: 'int32',
        shape: s.map((dd, i) => (i === a.axis ? 1 : dd)),
      });
      const rowHasNan = b.op(
        'Greater',
        [anyNan, b.scalar(0, 'int32')],
        {},
        { dtype: 'bool', shape: s.map((dd, i) => (i === a.axis ? 1 : dd)) },
      );
      const zero = b.scalar(0, d);
      // rows with a NaN: 1 at NaN cells, 0 elsewhere (the first NaN is the arg); others unchanged
      const marked = b.op(
        'Where',
        [nan, opType === 'ArgMax' ? b.scalar(1, d) : b.scalar(-1, d), zero],
        {},
        { dtype: d, shape: s },
      );
      xc = b.op('Where', [rowHasNan, marked, xc], {}, { dtype: d, shape: s });
    }
    return b.op(
      opType,
      [xc],
      { axis: a.axis, keepdims: 0, select_last_index: 0 },
      { dtype: 'int64', shape: c.out.shape },
    );
  };
}

export const coreTranslations: OnnxTableFor<
  CoreOps | keyof typeof reduceOps | keyof typeof argOps | keyof typeof gradOps
> = {
  placeholder: 'leaf',
  variable: 'leaf',
  learning_phase: 'leaf',
  constant: (c, _, a) => c.b.constant(a.value),
  cast: (c, [x]) => toDType(c.b, x!, c.out.dtype),
  identity: (c, [x]) => c.b.op('Identity', [x!], {}, c.out),
  reshape: (c, [x], a) => {
    const xs = c.b.val(x!).shape;
    resolveReshape(xs, a.shape);
    return c.b.reshape(x!, c.out.shape, c.b.i64(a.shape));
  },
  transpose: (c, [x], a) => c.b.op('Transpose', [x!], { perm: a.perm }, c.out),
  dot,
  shape_of: (c, [x]) => c.b.cast(c.b.op('Shape', [x!], {}, { dtype: 'int64', shape: c.out.shape }), 'int32'),
  fill_like: (c, [x], a) =>
    c.b.op(
      'ConstantOfShape',
      [c.b.op('Shape', [x!], {}, { dtype: 'int64', shape: [c.b.val(x!).shape.length] })],
      { value: new NDArray([a.value], [1], a.dtype) },
      c.out,
    ),
  index: (c, [x], a) => c.b.op('Gather', [x!, c.b.scalar(a.index, 'int64')], { axis: 0 }, c.out),
  where: (c, [cond, x, y]) => {
    const d = arith(c.out.dtype);
    return fit(
      c,
      c.b.op(
        'Where',
        [toDType(c.b, cond!, 'bool'), c.b.cast(x!, d), c.b.cast(y!, d)],
        {},
        { dtype: d, shape: c.out.shape },
      ),
    );
  },
  ...reductionTranslations(),
  // the sum over the count, so an empty window gives NaN (0 / 0) as the reference does; ReduceMean gives 0
  mean: (c, [x], a) => {
    const b = c.b;
    const d = arith(c.out.dtype);
    const xc = b.cast(x!, d);
    const s = b.reduce('ReduceSum', xc, a.axes, a.keepdims, { dtype: d, shape: c.out.shape });
    const dims = a.axes.map((ax) => b.dim(xc, ax));
    const n =
      dims.length === 1
        ? dims[0]!
        : b.reduce(
            'ReduceProd',
            b.op('Concat', dims, { axis: 0 }, { dtype: 'int64', shape: [dims.length] }),
            [0],
            true,
            { dtype: 'int64', shape: [1] },
          );
    const count = b.reshape(b.cast(n, d), [], b.i64([]));
    return fit(c, a.axes.length === 0 ? s : b.op('Div', [s, count], {}, { dtype: d, shape: c.out.shape }));
  },
  argmax: arg('ArgMax'),
  argmin: arg('ArgMin'),
  // g summed over the leading axes x lacks and x's size-1 axes (summing a size-1 axis of g changes nothing), reshaped to x
  sum_to_like: (c, [g, x]) => {
    const b = c.b;
    const gs = b.val(g!).shape;
    const xs = b.val(x!).shape;
    const off = gs.length - xs.length;
    if (xs.some((d, i) => d === null && gs[i + off] !== 1)) {
      // which axes to sum depends on run-time dims: those where x (padded with leading 1s) has 1, found with NonZero
      const d0 = arith(c.out.dtype);
      const xsh =
        off === 0
          ? b.shapeOf(x!)
          : b.op(
              'Concat',
              [b.i64(new Array<number>(off).fill(1)), b.shapeOf(x!)],
              { axis: 0 },
              { dtype: 'int64', shape: [gs.length] },
            );
      const mask = b.op('Equal', [xsh, b.i64([1])], {}, { dtype: 'bool', shape: [gs.length] });
      const axesDyn = b.reshape(b.op('NonZero', [mask], {}, { dtype: 'int64', shape: [1, null] }), [null], b.i64([-1]));
      const sDyn = b.op(
        'ReduceSum',
        [b.cast(g!, d0), axesDyn],
        { keepdims: 1, noop_with_empty_axes: 1 },
        { dtype: d0, shape: gs.map(() => null) },
      );
      return fit(c, b.reshape(sDyn, c.out.shape, b.shapeOf(x!)));
    }
    const axes = gs.map((_, i) => i).filter((i) => i < off || (xs[i - off] === 1 && gs[i] !== 1));
    const d = arith(c.out.dtype);
    const s = b.reduce('ReduceSum', b.cast(g!, d), axes, true, {
      dtype: d,
      shape: gs.map((dd, i) => (axes.includes(i) ? 1 : dd)),
    });
    return fit(c, b.reshape(s, c.out.shape, b.shapeOf(x!)));
  },
  broadcast_like: (c, [g, x]) => {
    const d = arith(c.out.dtype);
    return fit(c, c.b.op('Expand', [c.b.cast(g!, d), c.b.shapeOf(x!)], {}, { dtype: d, shape: c.out.shape }));
  },
  reshape_like: (c, [g, x]) => c.b.reshape(g!, c.out.shape, c.b.shapeOf(x!)),
  unsqueeze: (c, [x], a) => {
    unsqueezeShape(c.b.val(x!).shape, a.axes);
    return c.b.unsqueeze(x!, a.axes);
  },
  // zeros of x's shape with g at x[index]: g on a new first axis, padded before and after
  scatter_index: (c, [g, x], a) => {
    const b = c.b;
    const d0 = b.val(x!).shape[0];
    if (d0 === null || d0 === undefined)
      throw new OnnxExportError('scatter_index: the first dim of its reference is unknown');
    const i = a.index < 0 ? a.index + d0 : a.index;
    if (i < 0 || i >= d0) throw new InferError(`index ${a.index} is out of range for axis 0 of size ${d0}`, 'value');
    const dt = arith(c.out.dtype);
    const g1 = b.unsqueeze(b.cast(g!, dt), [0]);
    const r = c.out.shape.length;
    const pads = [i, ...new Array<number>(r - 1).fill(0), d0 - i - 1, ...new Array<number>(r - 1).fill(0)];
    return fit(c, b.op('Pad', [g1, b.i64(pads)], { mode: 'constant' }, { dtype: dt, shape: c.out.shape }));
  },
  stop_gradient: (c, [x]) => c.b.op('Identity', [x!], {}, c.out),
  grad_clip: (c, [x]) => c.b.op('Identity', [x!], {}, c.out),
  grad_scale: (c, [x]) => c.b.op('Identity', [x!], {}, c.out),
};

export { ONNX_DTYPE };
export type { Ctx };
