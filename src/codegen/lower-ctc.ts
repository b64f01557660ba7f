// Kernels of the CTC loss and its gradient (src/ir/ops/ctc.ts): the forward-backward recursions in
// log space as loop kernels whose time loop is outermost and whose batch and label-position loops
// are the parallel dimensions inside it. Each step reads the cells the step before stored (as
// cumsum's scan does), so the loops run in row-major order. With B samples, T steps, C classes
// and labels of width L, S = 2 L + 1 positions of the blank-extended label:
//   check   chk[b, j]      j = 0: input_length, 1: label_length, 2..: labels, checked as the reference
//                          checks them (its ValueError, its words), before anything else is stored
//   extend  ext[b, s]      the class at position s: the blank at even s and past 2 * label_length
//   alpha   alpha[t, b, s] log-probability of the prefixes ending at s after step t (alpha's recursion)
//   beta    beta[t, b, s]  the same for suffixes from s at step t, t running from T - 1 down
//   loss    -logAdd(alpha[steps - 1, b, S_b - 1], alpha[steps - 1, b, S_b - 2])
//   grad    acc[b, t, ext[b, s]] -= exp(alpha + beta - logp - logP), accumulated in float64 in the
//           reference's order (s ascending), then rounded into the result
// Every sum of two log-probabilities is the reference's logAdd, written as the same operations, so
// the results are the reference's bit for bit. As in TensorFlow (ctc_loss_op), the batch and the
// label positions are independent within a step and the time loop carries the recursion.
import type { DType } from '../ir/dtype.js';
import { ValueError } from '../ir/errors.js';
import type { Node } from '../ir/node.js';
import { exportAs, type Expr, type ExprBuilder } from './expr.js';
import { iadd, iclamp, iconst, idiv, imod, iscale, ivar, newVar, ravel, type IExpr, type Var } from './index-expr.js';
import type { BufferRole, LoopKernel, Step, Store, ValueRef } from './kernel.js';

type AddBuf = (dtype: DType, size: number, role: BufferRole) => number;

/**
 * The reference's checks of one entry of the lengths and labels (op 0: ctc_loss, 1: ctc_loss_grad).
 * j = 0: x is input_length of sample b; j = 1: label_length; j >= 2: label j - 2, where n is the
 * sample's label_length. Returns x, or throws the reference's message. Self-contained (no helpers
 * or imports), because exportModule copies it by its source text; it throws a RangeError there.
 */
export function ctcCheck(op: number, j: number, b: number, x: number, T: number, L: number, n: number, blank: number): number {
  let msg = '';
  if (j === 0) {
    if (!(x >= 0 && x <= T)) msg = `sample ${b}: input_length ${x} is outside 0..${T} (the time steps of y_pred)`;
  } else if (j === 1) {
    if (!(x >= 0 && x <= L)) msg = `sample ${b}: label_length ${x} is outside 0..${L} (the width of the labels)`;
  } else if (j - 2 < n && !(x >= 0 && x < blank)) {
    msg = `sample ${b}: label ${x} at position ${j - 2} is not a class in 0..${blank - 1} (class ${blank} is the blank; -1 pads labels only past label_length)`;
  }
  if (msg !== '') throw new RangeError(`${op === 0 ? 'ctc_loss' : 'ctc_loss_grad'}: ${msg}`);
  return x;
}

/** ctcCheck as compiled code runs it: the reference's error class (ValueError). */
export function ctcCheckLive(op: number, j: number, b: number, x: number, T: number, L: number, n: number, blank: number): number {
  try {
    return ctcCheck(op, j, b, x, T, L, n, blank);
  } catch (e) {
    throw new ValueError((e as Error).message);
  }
}
exportAs(ctcCheckLive, ctcCheck);

/** Kernels for ctc_loss, ctc_loss_grad or ctc_interleave_blanks, or undefined for other ops. */
export function lowerCtc(
  n: Node, outShape: readonly number[], outDType: DType, ins: readonly ValueRef[], b: ExprBuilder, addBuf: AddBuf, outRole: BufferRole,
): { steps: Step[]; value: ValueRef } | undefined {
  if (n.op === 'ctc_interleave_blanks') {
    // Theano's helper: [-1, y0, -1, y1, ..., -1], y[floor(s / 2)] at odd s.
    const [y] = ins as [ValueRef];
    const len = y.shape[0]!;
    const out = addBuf(outDType, outShape[0]!, outRole);
    const vs = newVar(outShape[0]!);
    const is = ivar(vs);
    const blankV = b.const(-1);
    const value = len === 0 ? blankV
      : b.op('select', b.op('eq', b.op('imod', b.index(is), b.const(2)), b.const(1)), b.load(y.buf, iadd(iclamp(idiv(is, 2), 0, len - 1), iconst(y.offset))), blankV);
    const k: LoopKernel = { kind: 'loop', label: n.op, vars: [vs], stores: [{ buf: out, index: is, value: b.cast(outDType, value), dtype: outDType }] };
    return { steps: [k], value: { buf: out, offset: 0, shape: outShape, dtype: outDType } };
  }
  if (n.op !== 'ctc_loss' && n.op !== 'ctc_loss_grad') return undefined;
  const grad = n.op === 'ctc_loss_grad';
  const [lp, labels, il, ll] = ins as [ValueRef, ValueRef, ValueRef, ValueRef];
  const [B, T, C] = lp.shape as [number, number, number];
  const L = labels.shape[1]!;
  const S = 2 * L + 1;
  const blank = C - 1;
  const NEG = b.const(-Infinity);
  const steps: Step[] = [];
  const kernel = (label: string, vars: Var[], stores: Store[]) => steps.push({ kind: 'loop', label, vars, stores } satisfies LoopKernel);
  const at = (v: ValueRef, ix: IExpr) => b.load(v.buf, iadd(ix, iconst(v.offset)));
  const num = (x: IExpr) => b.index(x);
  const op = b.op.bind(b);
  /** The reference's logAdd(x, y): exact where either is -inf, else max + log1p(exp(-|x - y|)). */
  const logAdd = (x: Expr, y: Expr): Expr => op('select', op('eq', x, NEG), y, op('select', op('eq', y, NEG), x,
    op('add', op('max', x, y), op('log1p', op('exp', op('neg', op('abs', op('sub', x, y))))))));

  // check: lengths and labels, in the reference's order (sample by sample: input_length, label_length, labels).
  const chk = addBuf('float64', B * (L + 2), 'temp');
  {
    const [vb, vj] = [newVar(B), newVar(L + 2)];
    const [ib, ij] = [ivar(vb), ivar(vj)];
    const j = num(ij);
    let x = op('select', op('eq', j, b.const(0)), at(il, ib), at(ll, ib));
    if (L > 0) x = op('select', op('lt', j, b.const(2)), x, at(labels, iadd(iscale(ib, L), iclamp(iadd(ij, iconst(-2)), 0, L - 1))));
    const args = [b.const(grad ? 1 : 0), j, num(ib), x, b.const(T), b.const(L), at(ll, ib), b.const(blank)];
    kernel(`${n.op}:check`, [vb, vj], [{ buf: chk, index: ravel([ib, ij], [B, L + 2]), value: b.call(ctcCheckLive, 'ctc_check', args), dtype: 'float64' }]);
  }
  const stepsOf = (ib: IExpr) => b.load(chk, iscale(ib, L + 2));
  const lenOf = (ib: IExpr) => b.load(chk, iadd(iscale(ib, L + 2), iconst(1)));
  /** S_b: positions of sample b's extended label. */
  const extLen = (ib: IExpr) => op('add', op('mul', lenOf(ib), b.const(2)), b.const(1));

  // extend: ext[b, s] = labels[b, (s - 1) / 2] at odd s below S_b, else the blank.
  const ext = addBuf('float64', B * S, 'temp');
  {
    const [vb, vs] = [newVar(B), newVar(S)];
    const [ib, is] = [ivar(vb), ivar(vs)];
    const s = num(is);
    let value: Expr = b.const(blank);
    if (L > 0) {
      // chk[b, 2 + floor(s / 2)]: label (s - 1) / 2 at odd s; in range at even s too (s <= 2 L), where it is not used
      const sym = b.load(chk, iadd(iscale(ib, L + 2), iconst(2), idiv(is, 2)));
      value = op('select', op('and', op('eq', op('imod', s, b.const(2)), b.const(1)), op('lt', s, extLen(ib))), sym, value);
    }
    kernel(`${n.op}:extend`, [vb, vs], [{ buf: ext, index: ravel([ib, is], [B, S]), value, dtype: 'float64' }]);
  }
  const extAt = (ib: IExpr, is: IExpr) => b.load(ext, iadd(iscale(ib, S), is));
  /** logp[b, t, ext[b, s]]: a load at a class read from data. */
  const emit = (ib: IExpr, it: IExpr, is: IExpr) => b.load(lp.buf, iadd(iconst(lp.offset), iscale(ib, T * C), iscale(it, C)), { row: extAt(ib, is), stride: 1 });
  /** Whether position s may be reached from s - 2 (a symbol that differs from the one before it). */
  const canSkip = (ib: IExpr, is: IExpr, s: Expr) => op('and', op('ge', s, b.const(2)),
    op('and', op('ne', extAt(ib, is), b.const(blank)), op('ne', extAt(ib, is), extAt(ib, iclamp(iadd(is, iconst(-2)), 0, S - 1)))));

  // alpha[t, b, s], t outermost: each step reads the step before, already stored.
  const alpha = addBuf('float64', T * B * S, 'temp');
  {
    const [vt, vb, vs] = [newVar(T), newVar(B), newVar(S)];
    const [it, ib, is] = [ivar(vt), ivar(vb), ivar(vs)];
    const [t, s] = [num(it), num(is)];
    // (t - 1) mod T: in range at t = 0 (where it is not used), and never folded to a constant, so the read stays in the t loop.
    const prevT = imod(iadd(it, iconst(T - 1)), Math.max(T, 1));
    const prev = (k: number) => b.load(alpha, ravel([prevT, ib, iclamp(iadd(is, iconst(-k)), 0, S - 1)], [T, B, S]));
    const v1 = prev(0);
    const v2 = op('select', op('ge', s, b.const(1)), logAdd(v1, prev(1)), v1);
    const v3 = op('select', canSkip(ib, is, s), logAdd(v2, prev(2)), v2);
    const v = op('select', op('eq', t, b.const(0)), op('select', op('le', s, b.const(1)), b.const(0), NEG), v3);
    const value = op('select', op('lt', s, extLen(ib)), op('select', op('eq', v, NEG), NEG, op('add', v, emit(ib, it, is))), NEG);
    kernel(`${n.op}:alpha`, [vt, vb, vs], [{ buf: alpha, index: ravel([it, ib, is], [T, B, S]), value, dtype: 'float64' }]);
  }

  // log P(label | sample b): the paths ending on the last symbol or on the blank after it.
  const logLik = (ib: IExpr): Expr => {
    const nSteps = stepsOf(ib);
    const len = lenOf(ib);
    // alpha[steps - 1, b, 2 n - k] (the row clamped at 0 where it is not used)
    const last = (k: number) => b.load(alpha, iscale(ib, S), {
      row: op('add', op('mul', op('max', op('sub', nSteps, b.const(1)), b.const(0)), b.const(B * S)), op('max', op('sub', op('mul', len, b.const(2)), b.const(k)), b.const(0))),
      stride: 1,
    });
    const end = logAdd(last(0), op('select', op('gt', len, b.const(0)), last(1), NEG));
    return op('select', op('eq', nSteps, b.const(0)), op('select', op('eq', len, b.const(0)), b.const(0), NEG), end);
  };

  if (!grad) {
    const out = addBuf(outDType, B, outRole);
    const vb = newVar(B);
    const ib = ivar(vb);
    kernel('ctc_loss', [vb], [{ buf: out, index: ib, value: b.cast(outDType, op('neg', logLik(ib))), dtype: outDType }]);
    return { steps, value: { buf: out, offset: 0, shape: outShape, dtype: outDType } };
  }

  const logP = addBuf('float64', B, 'temp');
  {
    const vb = newVar(B);
    const ib = ivar(vb);
    kernel('ctc_loss_grad:logP', [vb], [{ buf: logP, index: ib, value: logLik(ib), dtype: 'float64' }]);
  }

  // beta[t, b, s] with t = T - 1 - u: the loop runs u forward, so step t + 1 is stored before step t.
  const beta = addBuf('float64', T * B * S, 'temp');
  {
    const [vu, vb, vs] = [newVar(T), newVar(B), newVar(S)];
    const [iu, ib, is] = [ivar(vu), ivar(vb), ivar(vs)];
    const it = iadd(iconst(T - 1), iscale(iu, -1));
    const [t, s] = [num(it), num(is)];
    const nextT = imod(iadd(iconst(T), iscale(iu, -1)), Math.max(T, 1)); // t + 1, in range at u = 0 (where it is not used)
    const next = (k: number) => b.load(beta, ravel([nextT, ib, iclamp(iadd(is, iconst(k)), 0, S - 1)], [T, B, S]));
    const Sb = extLen(ib);
    const last = op('sub', stepsOf(ib), b.const(1));
    const v1 = next(0);
    const v2 = op('select', op('lt', op('add', s, b.const(1)), Sb), logAdd(v1, next(1)), v1);
    const s2 = iclamp(iadd(is, iconst(2)), 0, S - 1);
    const v3 = op('select', op('and', op('lt', op('add', s, b.const(2)), Sb), canSkip(ib, s2, op('add', s, b.const(2)))), logAdd(v2, next(2)), v2);
    const init = op('select', op('ge', s, op('sub', Sb, b.const(2))), b.const(0), NEG);
    const v = op('select', op('gt', t, last), NEG, op('select', op('eq', t, last), init, v3));
    const value = op('select', op('lt', s, Sb), op('select', op('eq', v, NEG), NEG, op('add', v, emit(ib, it, is))), NEG);
    kernel('ctc_loss_grad:beta', [vu, vb, vs], [{ buf: beta, index: ravel([it, ib, is], [T, B, S]), value, dtype: 'float64' }]);
  }

  // grad: acc[b, t, ext[b, s]] -= exp(alpha + beta - logp - logP) over s in order, in float64.
  const size = B * T * C;
  const wide = outDType === 'float64';
  const acc = addBuf('float64', size, wide ? outRole : 'temp');
  {
    const v = newVar(size);
    kernel('ctc_loss_grad:zero', [v], [{ buf: acc, index: ivar(v), value: b.const(0), dtype: 'float64' }]);
  }
  {
    const [vb, vt, vs] = [newVar(B), newVar(T), newVar(S)];
    const [ib, it, is] = [ivar(vb), ivar(vt), ivar(vs)];
    const lpB = b.load(logP, ib);
    const e = emit(ib, it, is);
    const at3 = ravel([it, ib, is], [T, B, S]);
    const occ = op('sub', op('sub', op('add', b.load(alpha, at3), b.load(beta, at3)), e), lpB);
    const live = op('and', op('lt', num(it), stepsOf(ib)), op('and', op('lt', num(is), extLen(ib)), op('and', op('ne', lpB, NEG), op('ne', occ, NEG))));
    kernel('ctc_loss_grad', [vb, vt, vs], [{
      buf: acc, index: iadd(iscale(ib, T * C), iscale(it, C)), dyn: { row: extAt(ib, is), stride: 1 }, accumulate: true, dtype: 'float64',
      value: op('select', live, op('neg', op('exp', occ)), b.const(0)),
    }]);
  }
  if (wide) return { steps, value: { buf: acc, offset: 0, shape: outShape, dtype: outDType } };
  const out = addBuf(outDType, size, outRole);
  const v = newVar(size);
  kernel('ctc_loss_grad:round', [v], [{ buf: out, index: ivar(v), value: b.cast(outDType, b.load(acc, ivar(v))), dtype: outDType }]);
  return { steps, value: { buf: out, offset: 0, shape: outShape, dtype: outDType } };
}

export const CTC_OPS = ['ctc_loss', 'ctc_loss_grad', 'ctc_interleave_blanks'] as const;
