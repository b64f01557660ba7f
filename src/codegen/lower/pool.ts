// Kernels of max and average pooling's adjoints (src/ir/ops/pool.ts), channels-last data
// (N, S..., C) pooled to (N, O..., C). An output cell's window reads input s = o*stride + t*dil - pad
// at tap t; the adjoint reads the other way: input cell s receives from every (o, t) with
// o = (s + pad - t*dil) / stride an integer in [0, O). Each is a gather (one loop per result
// element, a reduction over taps), never a scatter, so the gpu renders them as it renders any
// loop kernel:
//   pool_select (max)  out[n,o,c] = g at the window's first maximal cell (a template: three
//                      reductions over the taps: the maximum, the first tap holding it, the
//                      value of g there)
//   pool_grad, max     arg[n,o,c] = first maximal tap (an int32 kernel over the pooled shape);
//                      dx[n,s,c] = sum over (o, t) reaching s with arg[n,o,c] == t of dy[n,o,c]
//   pool_grad, avg     cnt[o] = the window's cells inside the input (a kernel over O...);
//                      dx[n,s,c] = sum over (o, t) reaching s of dy[n,o,c] / cnt[o]
// The sums run over the taps from last to first, so the (o, t) pairs come in row-major order of
// o: the order the reference adds them in (float64, rounded once), so results match it exactly.
// The first maximal cell follows the reference: a NaN counts as the maximum, the first one wins.
// The pool_grad kernel (and a pooling's own kernel, lower.ts) carries a PoolSpec, from which the
// cpu renders the WebAssembly SIMD form (wasm/pool.ts) where it applies.
import type { DType } from '../../ir/dtype.js';
import { padsFor } from '../../ir/ops/window.js';
import type { PoolAttrs } from '../../ir/ops/pool.js';
import type { ExprBuilder, Expr } from '../kernel/expr.js';
import type { IExpr, Var } from '../kernel/index-expr.js';
import { iadd, iclamp, iconst, idiv, imod, iscale, ivar, newVar, ravel } from '../kernel/index-expr.js';
import type { LoopKernel, PoolSpec, Step, ValueRef, BufferRole } from '../kernel/ir.js';
import { collapseLoopKernel } from '../transform/collapse.js';
import { allOf, masked, within } from '../kernel/mask.js';
import { sizeOf } from '../../ir/ndarray.js';
import type { OpNode } from '../../ir/registry.js';

/** Geometry of one pooling: the input's spatial sizes, the window, and each axis' padding before. */
export interface PoolGeom {
  readonly a: PoolAttrs;
  readonly inSize: readonly number[];
  readonly outSize: readonly number[];
  readonly pads: readonly number[];
}

export function poolGeom(a: PoolAttrs, xShape: readonly number[], outShape: readonly number[]): PoolGeom {
  const d = a.window.length;
  const inSize = xShape.slice(1, d + 1);
  return {
    a,
    inSize,
    outSize: outShape.slice(1, d + 1),
    pads: inSize.map((s, i) => padsFor(s, a.window[i]!, a.strides[i]!, a.dilation[i]!, a.padding)[0]),
  };
}

/** The description of a pooling (grad: its adjoint) that the kernel computing it carries (kernel.ts, LoopKernel.pool). */
export function poolSpec(g: PoolGeom, grad: boolean, x: ValueRef, dy: ValueRef | undefined, out: number): PoolSpec {
  const d = g.a.window.length;
  return {
    grad,
    mode: g.a.mode,
    window: g.a.window,
    strides: g.a.strides,
    dilation: g.a.dilation,
    pads: g.pads,
    inSize: g.inSize,
    outSize: g.outSize,
    batch: x.shape[0]!,
    channels: x.shape[d + 1]!,
    x,
    ...(dy !== undefined ? { dy } : {}),
    out,
  };
}

/** A fresh loop over the window's taps at output cell `o`: input positions (clamped) and whether all are inside the input. */
export function windowTaps(
  b: ExprBuilder,
  g: PoolGeom,
  o: readonly IExpr[],
): { vars: Var[]; pos: IExpr[]; flat: Expr; valid: Expr | undefined } {
  const vars = g.a.window.map((k) => newVar(k));
  const { cells: pos, conds } = tapPositions(b, o, vars.map(ivar), { ...g.a, pads: g.pads }, g.inSize);
  return { vars, pos, flat: b.index(ravel(vars.map(ivar), g.a.window)), valid: allOf(b, conds) };
}

/** A window's steps on each spatial axis: stride, dilation and padding before. */
export interface WindowSteps {
  readonly strides: readonly number[];
  readonly dilation: readonly number[];
  readonly pads: readonly number[];
}

/**
 * Cells of a window's two sides on each spatial axis, from cells `at` of the other side and the
 * window's taps, clamped into the side of spatial sizes `size`, with the conditions that they exist.
 */
export type WindowCells = (
  b: ExprBuilder,
  at: readonly IExpr[],
  tap: readonly IExpr[],
  w: WindowSteps,
  size: readonly number[],
) => { cells: IExpr[]; conds: (Expr | undefined)[] };

/** Input position o*stride + tap*dilation - pad of output cell o (`at`) on each spatial axis, inside the input. */
export const tapPositions: WindowCells = (b, o, tap, w, inSize) => {
  const conds: (Expr | undefined)[] = [];
  const cells = o.map((od, i) => {
    const p = iadd(iscale(od, w.strides[i]!), iscale(tap[i]!, w.dilation[i]!), iconst(-w.pads[i]!));
    conds.push(within(b, p, 0, inSize[i]!));
    return iclamp(p, 0, inSize[i]! - 1);
  });
  return { cells, conds };
};

/**
 * The output cell o with o*stride + tap*dilation - pad = s (`at`, an input cell) on each spatial
 * axis (tapPositions' inverse), where it exists: s + pad - tap*dilation a multiple of the stride,
 * and o inside the output.
 */
export const reachingCells: WindowCells = (b, s, tap, w, outSize) => {
  const conds: (Expr | undefined)[] = [];
  const cells = s.map((si, i) => {
    const stride = w.strides[i]!;
    const q = iadd(si, iconst(w.pads[i]!), iscale(tap[i]!, -w.dilation[i]!));
    conds.push(within(b, q, 0, Infinity));
    if (stride > 1) conds.push(b.op('eq', b.index(imod(q, stride)), b.const(0)));
    const oi = idiv(iclamp(q, 0, outSize[i]! * stride), stride);
    conds.push(within(b, oi, 0, outSize[i]!));
    return iclamp(oi, 0, outSize[i]! - 1);
  });
  return { cells, conds };
};

/**
 * The flat tap of the first maximal cell of the window at (n, o, c) (NaN the maximum, the first
 * one winning); Infinity when no tap is inside the input. `x(pos)` reads the input's spatial cell.
 */
export function firstMaxTap(
  b: ExprBuilder,
  g: PoolGeom,
  o: readonly IExpr[],
  x: (pos: readonly IExpr[]) => Expr,
): Expr {
  const m = foldTaps(b, g, o, 'max', (t) => masked(b, t.valid, x(t.pos), -Infinity));
  return foldTaps(b, g, o, 'min', (t) => {
    const v = x(t.pos);
    const hit = b.op('or', b.op('eq', v, m), b.op('and', b.op('isnan', m), b.op('isnan', v)));
    return b.op('select', t.valid === undefined ? hit : b.op('and', t.valid, hit), t.flat, b.const(Infinity));
  });
}

/** Windows of at most this many taps are folded as a chain of ops, not a reduction loop. */
const UNROLL_TAPS = 9;

/**
 * max or min over the window's taps of term(tap): a reduction over tap loops, or for small
 * windows the same fold written out (max(max(t0, t1), t2)..., row-major, as the loop folds them:
 * the reduction's -inf or +inf start changes no value), which runs as straight-line code (a
 * 2 x 2 max pool's loops of two iterations cost about as much as their work).
 */
export function foldTaps(
  b: ExprBuilder,
  g: PoolGeom,
  o: readonly IExpr[],
  op: 'max' | 'min',
  term: (t: { pos: readonly IExpr[]; flat: Expr; valid: Expr | undefined }) => Expr,
): Expr {
  const n = sizeOf(g.a.window);
  if (n > UNROLL_TAPS) {
    const t = windowTaps(b, g, o);
    return b.reduce(op, t.vars, term(t));
  }
  let acc: Expr | undefined;
  for (let f = 0; f < n; f++) {
    const tap = unravelConst(f, g.a.window);
    const conds: (Expr | undefined)[] = [];
    const pos = o.map((od, i) => {
      const p = iadd(iscale(od, g.a.strides[i]!), iconst(tap[i]! * g.a.dilation[i]! - g.pads[i]!));
      conds.push(within(b, p, 0, g.inSize[i]!));
      return iclamp(p, 0, g.inSize[i]! - 1);
    });
    const v = term({ pos, flat: b.const(f), valid: allOf(b, conds) });
    acc = acc === undefined ? v : b.op(op, acc, v);
  }
  return acc!;
}

/** Row-major coordinates of flat index f in `shape`. */
function unravelConst(f: number, shape: readonly number[]): number[] {
  const out = new Array<number>(shape.length);
  for (let i = shape.length - 1; i >= 0; i--) {
    out[i] = f % shape[i]!;
    f = Math.floor(f / shape[i]!);
  }
  return out;
}

/**
 * Loops over the (o, t) pairs that reach input cell `s`: taps from last to first (so o rises in
 * row-major order), the output cell o (clamped) and whether the pair exists.
 */
function reachingTaps(
  b: ExprBuilder,
  g: PoolGeom,
  s: readonly IExpr[],
): { vars: Var[]; o: IExpr[]; flat: Expr; valid: Expr | undefined } {
  const vars = g.a.window.map((k) => newVar(k));
  const taps = vars.map((v, i) => iadd(iconst(g.a.window[i]! - 1), iscale(ivar(v), -1)));
  const { cells: o, conds } = reachingCells(b, s, taps, { ...g.a, pads: g.pads }, g.outSize);
  return { vars, o, flat: b.index(ravel(taps, g.a.window)), valid: allOf(b, conds) };
}

type AddBuf = (dtype: DType, size: number, role: BufferRole) => number;

/** pool_grad's kernels (x, dy -> dx of dy's dtype). */
export function lowerPoolGrad(
  n: OpNode<'pool_grad'>,
  b: ExprBuilder,
  ins: readonly ValueRef[],
  outShape: readonly number[],
  outDType: DType,
  addBuf: AddBuf,
  outRole: BufferRole,
): { steps: Step[]; value: ValueRef } {
  const a = n.attrs;
  const [x, dy] = ins as [ValueRef, ValueRef];
  const d = a.window.length;
  const g = poolGeom(a, x.shape, dy.shape);
  const load = (v: ValueRef, co: readonly IExpr[]) => b.load(v.buf, iadd(ravel(co, v.shape), iconst(v.offset)));
  const steps: Step[] = [];
  if (tiled(g)) {
    const out = addBuf(outDType, sizeOf(outShape), outRole);
    steps.push({ ...tiledPoolGrad(b, g, x, dy, out, outShape, outDType, load), pool: poolSpec(g, true, x, dy, out) });
    return { steps, value: { buf: out, offset: 0, shape: outShape, dtype: outDType } };
  }
  const loop = (
    label: string,
    shape: readonly number[],
    body: (co: IExpr[]) => { buf: number; value: Expr; dtype: DType },
  ): void => {
    const vars = shape.map((k) => newVar(k));
    const co = vars.map(ivar);
    const st = body(co);
    const k: LoopKernel = { kind: 'loop', label, vars, stores: [{ ...st, index: ravel(co, shape) }] };
    // the first kernel (first maximal taps, or counts) is read by the second only; the second does the adjoint
    const tag = steps.length === 0 ? { poolAux: true as const } : { pool: poolSpec(g, true, x, dy, st.buf) };
    steps.push({ ...collapseLoopKernel(k, b), ...tag });
  };
  let term: (co: readonly IExpr[], r: ReturnType<typeof reachingTaps>) => Expr;
  if (a.mode === 'max') {
    const arg = addBuf('int32', sizeOf(dy.shape), 'temp');
    loop('pool_grad:argmax', dy.shape, (co) => ({
      buf: arg,
      dtype: 'int32',
      value: b.cast(
        'int32',
        firstMaxTap(b, g, co.slice(1, d + 1), (pos) => b.cast(x.dtype, load(x, [co[0]!, ...pos, co[d + 1]!]))),
      ),
    }));
    term = (co, r) => {
      const oc = [co[0]!, ...r.o, co[d + 1]!];
      const hit = b.op('eq', b.load(arg, ravel(oc, dy.shape)), r.flat);
      return b.op(
        'select',
        r.valid === undefined ? hit : b.op('and', r.valid, hit),
        b.cast(dy.dtype, load(dy, oc)),
        b.const(0),
      );
    };
  } else {
    const cnt = addBuf('int32', sizeOf(g.outSize), 'temp');
    loop('pool_grad:count', g.outSize, (co) => {
      const t = windowTaps(b, g, co);
      return { buf: cnt, dtype: 'int32', value: b.reduce('sum', t.vars, t.valid ?? b.const(1)) };
    });
    term = (co, r) => {
      const v = b.op(
        'div',
        b.cast(dy.dtype, load(dy, [co[0]!, ...r.o, co[d + 1]!])),
        b.load(cnt, ravel(r.o, g.outSize)),
      );
      return masked(b, r.valid, v, 0);
    };
  }
  const out = addBuf(outDType, sizeOf(outShape), outRole);
  loop('pool_grad', outShape, (co) => {
    const r = reachingTaps(b, g, co.slice(1, d + 1));
    return { buf: out, dtype: outDType, value: b.cast(outDType, b.reduce('sum', r.vars, term(co, r))) };
  });
  return { steps, value: { buf: out, offset: 0, shape: outShape, dtype: outDType } };
}

/**
 * Whether the windows tile the input: strides equal to the window, no dilation, no padding, and
 * O*k = S on every axis, so every input cell is in exactly one window (the common 2x2 pooling).
 */
function tiled(g: PoolGeom): boolean {
  return g.a.window.every(
    (k, i) => g.a.strides[i] === k && g.a.dilation[i] === 1 && g.pads[i] === 0 && g.outSize[i]! * k === g.inSize[i],
  );
}

/**
 * pool_grad when the windows tile the input: one loop kernel over (n, o..., c, t...), input cell
 * s = o*k + t, so each window's first maximal tap (or its count, for avg) is computed once per
 * window (the schedule hoists it out of the tap loops) and each cell is stored once, still as a
 * gather (the store covers dx in row-major order, as the gpu needs). The cell gets its one term
 * plus 0, as the reference's sum gives it (0 + -0 is +0).
 */
function tiledPoolGrad(
  b: ExprBuilder,
  g: PoolGeom,
  x: ValueRef,
  dy: ValueRef,
  out: number,
  outShape: readonly number[],
  outDType: DType,
  load: (v: ValueRef, co: readonly IExpr[]) => Expr,
): LoopKernel {
  const d = g.a.window.length;
  const n = newVar(dy.shape[0]!);
  const o = g.outSize.map((k) => newVar(k));
  const c = newVar(dy.shape[d + 1]!);
  const t = g.a.window.map((k) => newVar(k));
  const oc = [ivar(n), ...o.map(ivar), ivar(c)];
  const dyv = b.cast(dy.dtype, load(dy, oc));
  let term: Expr;
  if (g.a.mode === 'max') {
    const arg = firstMaxTap(b, g, o.map(ivar), (pos) => b.cast(x.dtype, load(x, [ivar(n), ...pos, ivar(c)])));
    term = b.op('select', b.op('eq', b.index(ravel(t.map(ivar), g.a.window)), arg), dyv, b.const(0));
  } else {
    term = b.op('div', dyv, b.const(sizeOf(g.a.window)));
  }
  const s = o.map((oi, i) => iadd(iscale(ivar(oi), g.a.window[i]!), ivar(t[i]!)));
  return {
    kind: 'loop',
    label: 'pool_grad',
    vars: [n, ...o, c, ...t],
    stores: [
      {
        buf: out,
        dtype: outDType,
        index: ravel([ivar(n), ...s, ivar(c)], outShape),
        value: b.cast(outDType, b.op('add', b.const(0), term)),
      },
    ],
  };
}
