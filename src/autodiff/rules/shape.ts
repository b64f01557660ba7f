// Gradient rules of the structural ops (src/ir/ops/shape.ts), their adjoints (shape-adjoint.ts) and
// batch_dot. A structural op reads each output element from one input element, so its gradient
// sends each cotangent element back there: the adjoint op. The adjoints' own rules are the
// forward ops again, so gradients of gradients work.
import { apply } from '../../ir/build.js';
import type { Node } from '../../ir/node.js';
import type { OpNode } from '../../ir/registry.js';
import { reshapeTo, transpose } from '../ops.js';
import type { GradRule, GradTableFor } from './types.js';
import type { shapeOps } from '../../ir/ops/shape.js';
import type { dimsOps } from '../../ir/ops/dims.js';
import type { shapeGradOps } from '../../ir/ops/shape-adjoint.js';
import type { linalgOps } from '../../ir/ops/linalg.js';

const FN = 'K.gradients';

const zerosLike = (x: Node, like: Node): Node => apply('fill_like', [x], { value: 0, dtype: like.dtype }, FN);

/** x[::] read from g: the slice forwards what unslice wrote. */
const sliceGrad: GradRule = (n, g) => [apply('unslice', [g, n.inputs[0]!], n.attrs, FN)];
const unsliceGrad: GradRule = (n, g) => [apply('slice', [g], n.attrs, FN), null];

/** pad: the cotangent without its padding, g[before : -after] on each axis. */
const padGrad: GradRule<OpNode<'pad'>> = (n, g) => {
  const { pads } = n.attrs;
  const axes = pads.map(([b, a]) => ({ start: b, stop: a > 0 ? -a : null, step: 1 }));
  return [apply('slice', [g], { axes }, FN)];
};

/** concat: each input gets its own stretch of g along the axis. */
const concatGrad: GradRule<OpNode<'concat'>> = (n, g) => {
  const axis = n.attrs.axis;
  return n.inputs.map((_, index) => apply('concat_part', [g, ...n.inputs], { axis, index }, FN));
};
/** concat_part's adjoint: g placed among zeros standing for the other parts. */
const concatPartGrad: GradRule<OpNode<'concat_part'>> = (n, g) => {
  const { axis, index } = n.attrs;
  const parts = n.inputs.slice(1);
  const full = apply(
    'concat',
    parts.map((x, i) => (i === index ? g : zerosLike(x, g))),
    { axis },
    FN,
  );
  return [full, ...parts.map(() => null)];
};

/** gather: rows of g added back into the rows they were read from (repeated indices add up). */
const gatherGrad: GradRule = (n, g) => [apply('scatter_add_rows', [g, n.inputs[1]!, n.inputs[0]!], {}, FN), null];
const scatterAddRowsGrad: GradRule = (n, g) => [apply('gather', [g, n.inputs[1]!], {}, FN), null, null];

/** tile: every tile's cotangent added into x; zero reps read nothing. */
const tileGrad: GradRule<OpNode<'tile'>> = (n, g) => {
  const { reps } = n.attrs;
  if (reps.includes(0)) return [zerosLike(n.inputs[0]!, g)];
  return [apply('untile', [g], { reps: [...reps] }, FN)];
};
const untileGrad: GradRule = (n, g) => [apply('tile', [g], n.attrs, FN)];

const repeatGrad: GradRule<OpNode<'repeat_elements'>> = (n, g) => {
  const a = n.attrs;
  if (a.rep === 0) return [zerosLike(n.inputs[0]!, g)];
  return [apply('unrepeat', [g], { axis: a.axis, rep: a.rep }, FN)];
};
const unrepeatGrad: GradRule = (n, g) => [apply('repeat_elements', [g], n.attrs, FN)];

const expandDimsGrad: GradRule = (n, g) => [apply('squeeze', [g], n.attrs, FN)];
const squeezeGrad: GradRule = (n, g) => [apply('expand_dims', [g], n.attrs, FN)];
/** merge_axes keeps row-major order: the cotangent is reshaped back. */
const mergeAxesGrad: GradRule = (n, g) => [reshapeTo(g, n.inputs[0]!)];
/** specify_shape only refines the static type; the cotangent passes through. */
const specifyShapeGrad: GradRule = (_, g) => [g];

/** Axes start..stop-1 as one axis; an empty run becomes a new axis of size 1. */
function mergeRun(t: Node, start: number, stop: number): Node {
  if (stop - start === 1) return t;
  if (stop === start) return apply('expand_dims', [t], { axis: start }, FN);
  return apply('merge_axes', [t], { start, stop }, FN);
}

/** t with axis `axis` moved to the end. */
function moveToEnd(t: Node, axis: number): Node {
  if (axis === t.ndim - 1) return t;
  const perm = [...Array.from({ length: t.ndim }, (_, i) => i).filter((i) => i !== axis), axis];
  return transpose(t, perm);
}

/**
 * The inverse of moving `axis` of a rank-r tensor behind the batch and the other axes: `from`
 * holds (b, rest..., k) when kAt is 'last', or (b, k, rest...) when kAt is 1.
 */
function restore(from: Node, axis: number, r: number, kAt: 'last' | 1): Node {
  const perm = Array.from({ length: r }, (_, i) => {
    if (i === 0) return 0;
    if (i === axis) return kAt === 'last' ? r - 1 : 1;
    const pos = i < axis ? i - 1 : i - 2; // position among the other non-batch axes
    return kAt === 'last' ? 1 + pos : 2 + pos;
  });
  return perm.every((p, i) => p === i) ? from : transpose(from, perm);
}

/**
 * out (b, X..., Y...) = sum_k x (b, X... with k) y (b, Y... with k). With Y's axes merged into one
 * axis P (and X's into Q), each gradient is one more batch_dot:
 * dx = g (b, X..., P) . y (b, P, k) over P;  dy = x (b, Q, k) . g (b, Q, Y...) over Q.
 */
const batchDotGrad: GradRule<OpNode<'batch_dot'>> = (n, g) => {
  const [x, y] = n.inputs as [Node, Node];
  const [ax, ay] = n.attrs.axes;
  const nx = x.ndim - 2;
  const ny = y.ndim - 2;
  const yP = mergeRun(moveToEnd(y, ay), 1, 1 + ny); // (b, P, k)
  const gP = mergeRun(g, 1 + nx, 1 + nx + ny); // (b, X..., P)
  const dx = apply('batch_dot', [gP, yP], { axes: [1 + nx, 1] }, FN); // (b, X..., k)
  const xQ = mergeRun(moveToEnd(x, ax), 1, 1 + nx); // (b, Q, k)
  const gQ = mergeRun(g, 1, 1 + nx); // (b, Q, Y...)
  const dy = apply('batch_dot', [xQ, gQ], { axes: [1, 1] }, FN); // (b, k, Y...)
  return [restore(dx, ax, x.ndim, 'last'), restore(dy, ay, y.ndim, 1)];
};

export const shapeGrads = {
  slice: sliceGrad,
  unslice: unsliceGrad,
  pad: padGrad,
  concat: concatGrad,
  concat_part: concatPartGrad,
  gather: gatherGrad,
  scatter_add_rows: scatterAddRowsGrad,
  tile: tileGrad,
  untile: untileGrad,
  repeat_elements: repeatGrad,
  unrepeat: unrepeatGrad,
  expand_dims: expandDimsGrad,
  squeeze: squeezeGrad,
  merge_axes: mergeAxesGrad,
  specify_shape: specifyShapeGrad,
  batch_dot: batchDotGrad,
} satisfies GradTableFor<
  keyof typeof shapeOps | keyof typeof dimsOps | keyof typeof shapeGradOps | keyof typeof linalgOps
>;
