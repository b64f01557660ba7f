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
// label positions are independent within a step and the time loop carries the recursion. When a
// program has both the loss and its gradient of the same inputs, check, extend and alpha run once.
// Also here: Keras 1's Theano helpers (ctc_interleave_blanks; the tuple-valued ctc_update_log_p
// and ctc_path_probs, one buffer per item) and greedy ctc_decode. Beam search, and the ops whose
// result sizes depend on values, have no kernel (no-kernel.ts says why).
import type { DType } from '../../ir/dtype.js';
import { ValueError } from '../../ir/errors.js';
import type { Node } from '../../ir/node.js';
import { isOp } from '../../ir/registry.js';
import { exportAs, type Expr, type ExprBuilder } from '../kernel/expr.js';
import type { IExpr, Var } from '../kernel/index-expr.js';
import { iadd, iclamp, iconst, idiv, imod, iscale, ivar, newVar, ravel } from '../kernel/index-expr.js';
import type { BufferRole, LoopKernel, Step, Store, ValueRef } from '../kernel/ir.js';

type AddBuf = (dtype: DType, size: number, role: BufferRole) => number;

/**
 * The reference's checks of one entry of the lengths and labels (op 0: ctc_loss, 1: ctc_loss_grad).
 * j = 0: x is input_length of sample b; j = 1: label_length; j >= 2: label j - 2, where n is the
 * sample's label_length. Returns x, or throws the reference's message. Self-contained (no helpers
 * or imports), because exportModule copies it by its source text; it throws a RangeError there.
 */
export function ctcCheck(
  op: number,
  j: number,
  b: number,
  x: number,
  T: number,
  L: number,
  n: number,
  blank: number,
): number {
  let msg = '';
  // op 3 (ctc_decode): x is input_length[b], T the time steps
  if (op === 3) {
    if (!(x >= 0 && x <= T))
      throw new RangeError(`ctc_decode: input_length[${b}] = ${x} is outside [0, ${T}] (the time axis of y_pred)`);
    return x;
  }
  // op 2 (ctc_path_probs): x is Y[j], T the number of classes
  if (op === 2) {
    if (!(x >= -T && x < T))
      throw new RangeError(`ctc_path_probs: Y[${j}] = ${x} is not a class index for ${T} classes (-1 is the blank)`);
    return x;
  }
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
export function ctcCheckLive(...args: Parameters<typeof ctcCheck>): number {
  try {
    return ctcCheck(...args);
  } catch (e) {
    throw new ValueError((e as Error).message);
  }
}
exportAs(ctcCheckLive, ctcCheck);

/** Kernels for ctc_loss, ctc_loss_grad or ctc_interleave_blanks, or undefined for other ops. */
export function lowerCtc(
  n: Node,
  outShape: readonly number[],
  outDType: DType,
  ins: readonly ValueRef[],
  b: ExprBuilder,
  addBuf: AddBuf,
  outRole: BufferRole,
  shared: Map<string, unknown> = new Map(),
): { steps: Step[]; value: ValueRef } | undefined {
  if (n.op === 'ctc_interleave_blanks') {
    // Theano's helper: [-1, y0, -1, y1, ..., -1], y[floor(s / 2)] at odd s.
    const [y] = ins as [ValueRef];
    const len = y.shape[0]!;
    const out = addBuf(outDType, outShape[0]!, outRole);
    const vs = newVar(outShape[0]!);
    const is = ivar(vs);
    const blankV = b.const(-1);
    const value =
      len === 0
        ? blankV
        : b.op(
            'select',
            b.op('eq', b.op('imod', b.index(is), b.const(2)), b.const(1)),
            b.load(y.buf, iadd(iclamp(idiv(is, 2), 0, len - 1), iconst(y.offset))),
            blankV,
          );
    const k: LoopKernel = {
      kind: 'loop',
      label: n.op,
      vars: [vs],
      stores: [{ buf: out, index: is, value: b.cast(outDType, value), dtype: outDType }],
    };
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
  const kernel = (label: string, vars: Var[], stores: Store[]) =>
    steps.push({ kind: 'loop', label, vars, stores } satisfies LoopKernel);
  const at = (v: ValueRef, ix: IExpr) => b.load(v.buf, iadd(ix, iconst(v.offset)));
  const num = (x: IExpr) => b.index(x);
  const op = b.op.bind(b);
  /** The reference's logAdd(x, y): exact where either is -inf, else max + log1p(exp(-|x - y|)). */
  const logAdd = (x: Expr, y: Expr): Expr =>
    op(
      'select',
      op('eq', x, NEG),
      y,
      op(
        'select',
        op('eq', y, NEG),
        x,
        op('add', op('max', x, y), op('log1p', op('exp', op('neg', op('abs', op('sub', x, y)))))),
      ),
    );

  // check: lengths and labels, in the reference's order (sample by sample: input_length, label_length, labels).
  // check, extend and alpha are the same for ctc_loss and ctc_loss_grad of the same inputs (a training step has both): computed once
  const key = `ctc:${ins.map((v) => `${v.buf}+${v.offset}`).join(',')}`;
  const done = shared.get(key) as { chk: number; ext: number; alpha: number } | undefined;
  const chk = done?.chk ?? addBuf('float64', B * (L + 2), 'temp');
  if (done === undefined) {
    const [vb, vj] = [newVar(B), newVar(L + 2)];
    const [ib, ij] = [ivar(vb), ivar(vj)];
    const j = num(ij);
    let x = op('select', op('eq', j, b.const(0)), at(il, ib), at(ll, ib));
    if (L > 0)
      x = op(
        'select',
        op('lt', j, b.const(2)),
        x,
        at(labels, iadd(iscale(ib, L), iclamp(iadd(ij, iconst(-2)), 0, L - 1))),
      );
    const args = [b.const(grad ? 1 : 0), j, num(ib), x, b.const(T), b.const(L), at(ll, ib), b.const(blank)];
    kernel(
      `${n.op}:check`,
      [vb, vj],
      [
        {
          buf: chk,
          index: ravel([ib, ij], [B, L + 2]),
          value: b.call(ctcCheckLive, 'ctc_check', args),
          dtype: 'float64',
        },
      ],
    );
  }
  const stepsOf = (ib: IExpr) => b.load(chk, iscale(ib, L + 2));
  const lenOf = (ib: IExpr) => b.load(chk, iadd(iscale(ib, L + 2), iconst(1)));
  /** S_b: positions of sample b's extended label. */
  const extLen = (ib: IExpr) => op('add', op('mul', lenOf(ib), b.const(2)), b.const(1));

  // extend: ext[b, s] = labels[b, (s - 1) / 2] at odd s below S_b, else the blank.
  const ext = done?.ext ?? addBuf('float64', B * S, 'temp');
  if (done === undefined) {
    const [vb, vs] = [newVar(B), newVar(S)];
    const [ib, is] = [ivar(vb), ivar(vs)];
    const s = num(is);
    let value: Expr = b.const(blank);
    if (L > 0) {
      // chk[b, 2 + floor(s / 2)]: label (s - 1) / 2 at odd s; in range at even s too (s <= 2 L), where it is not used
      const sym = b.load(chk, iadd(iscale(ib, L + 2), iconst(2), idiv(is, 2)));
      value = op(
        'select',
        op('and', op('eq', op('imod', s, b.const(2)), b.const(1)), op('lt', s, extLen(ib))),
        sym,
        value,
      );
    }
    kernel(`${n.op}:extend`, [vb, vs], [{ buf: ext, index: ravel([ib, is], [B, S]), value, dtype: 'float64' }]);
  }
  const extAt = (ib: IExpr, is: IExpr) => b.load(ext, iadd(iscale(ib, S), is));
  /** logp[b, t, ext[b, s]]: a load at a class read from data. */
  const emit = (ib: IExpr, it: IExpr, is: IExpr) =>
    b.load(lp.buf, iadd(iconst(lp.offset), iscale(ib, T * C), iscale(it, C)), { row: extAt(ib, is), stride: 1 });
  /** Whether position s may be reached from s - 2 (a symbol that differs from the one before it). */
  const canSkip = (ib: IExpr, is: IExpr, s: Expr) =>
    op(
      'and',
      op('ge', s, b.const(2)),
      op(
        'and',
        op('ne', extAt(ib, is), b.const(blank)),
        op('ne', extAt(ib, is), extAt(ib, iclamp(iadd(is, iconst(-2)), 0, S - 1))),
      ),
    );

  // alpha[t, b, s], t outermost: each step reads the step before, already stored.
  const alpha = done?.alpha ?? addBuf('float64', T * B * S, 'temp');
  if (done === undefined) {
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
    const value = op(
      'select',
      op('lt', s, extLen(ib)),
      op('select', op('eq', v, NEG), NEG, op('add', v, emit(ib, it, is))),
      NEG,
    );
    kernel(
      `${n.op}:alpha`,
      [vt, vb, vs],
      [{ buf: alpha, index: ravel([it, ib, is], [T, B, S]), value, dtype: 'float64' }],
    );
  }

  shared.set(key, { chk, ext, alpha });

  // log P(label | sample b): the paths ending on the last symbol or on the blank after it.
  const logLik = (ib: IExpr): Expr => {
    const nSteps = stepsOf(ib);
    const len = lenOf(ib);
    // alpha[steps - 1, b, 2 n - k] (the row clamped at 0 where it is not used)
    const last = (k: number) =>
      b.load(alpha, iscale(ib, S), {
        row: op(
          'add',
          op('mul', op('max', op('sub', nSteps, b.const(1)), b.const(0)), b.const(B * S)),
          op('max', op('sub', op('mul', len, b.const(2)), b.const(k)), b.const(0)),
        ),
        stride: 1,
      });
    const end = logAdd(last(0), op('select', op('gt', len, b.const(0)), last(1), NEG));
    return op('select', op('eq', nSteps, b.const(0)), op('select', op('eq', len, b.const(0)), b.const(0), NEG), end);
  };

  if (!grad) {
    const out = addBuf(outDType, B, outRole);
    const vb = newVar(B);
    const ib = ivar(vb);
    kernel(
      'ctc_loss',
      [vb],
      [{ buf: out, index: ib, value: b.cast(outDType, op('neg', logLik(ib))), dtype: outDType }],
    );
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
    const v3 = op(
      'select',
      op('and', op('lt', op('add', s, b.const(2)), Sb), canSkip(ib, s2, op('add', s, b.const(2)))),
      logAdd(v2, next(2)),
      v2,
    );
    const init = op('select', op('ge', s, op('sub', Sb, b.const(2))), b.const(0), NEG);
    const v = op('select', op('gt', t, last), NEG, op('select', op('eq', t, last), init, v3));
    const value = op(
      'select',
      op('lt', s, Sb),
      op('select', op('eq', v, NEG), NEG, op('add', v, emit(ib, it, is))),
      NEG,
    );
    kernel(
      'ctc_loss_grad:beta',
      [vu, vb, vs],
      [{ buf: beta, index: ravel([it, ib, is], [T, B, S]), value, dtype: 'float64' }],
    );
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
    const live = op(
      'and',
      op('lt', num(it), stepsOf(ib)),
      op('and', op('lt', num(is), extLen(ib)), op('and', op('ne', lpB, NEG), op('ne', occ, NEG))),
    );
    kernel(
      'ctc_loss_grad',
      [vb, vt, vs],
      [
        {
          buf: acc,
          index: iadd(iscale(ib, T * C), iscale(it, C)),
          dyn: { row: extAt(ib, is), stride: 1 },
          accumulate: true,
          dtype: 'float64',
          value: op('select', live, op('neg', op('exp', occ)), b.const(0)),
        },
      ],
    );
  }
  if (wide) return { steps, value: { buf: acc, offset: 0, shape: outShape, dtype: outDType } };
  const out = addBuf(outDType, size, outRole);
  const v = newVar(size);
  kernel(
    'ctc_loss_grad:round',
    [v],
    [{ buf: out, index: ivar(v), value: b.cast(outDType, b.load(acc, ivar(v))), dtype: outDType }],
  );
  return { steps, value: { buf: out, offset: 0, shape: outShape, dtype: outDType } };
}

export const CTC_OPS = [
  'ctc_loss',
  'ctc_loss_grad',
  'ctc_interleave_blanks',
  'ctc_update_log_p',
  'ctc_path_probs',
] as const;

interface Item {
  readonly shape: readonly number[];
  readonly dtype: DType;
}

/**
 * Kernels for Keras 1's tuple-valued Theano helpers (src/ir/ops/ctc-theano.ts), or undefined for
 * other ops. ctc_update_log_p: one kernel for the scalars (the reachable count after the step, the
 * rescaling max), one for the row. ctc_path_probs: the reachable counts of every step (a recursion
 * over time), the forward and the reversed recursion (rows over time, each reading the row before),
 * then log_probs and the mask. Same operations as the reference, in its order.
 */
export function lowerCtcTuple(
  n: Node,
  items: readonly Item[],
  ins: readonly ValueRef[],
  b: ExprBuilder,
  addBuf: AddBuf,
): { steps: Step[]; items: ValueRef[] } | undefined {
  if (n.op === 'ctc_decode') return n.attrs['greedy'] === true ? greedyDecode(items, ins, b, addBuf) : undefined;
  if (n.op !== 'ctc_update_log_p' && n.op !== 'ctc_path_probs') return undefined;
  const op = b.op.bind(b);
  const NEG = b.const(-Infinity);
  const steps: Step[] = [];
  const kernel = (label: string, vars: Var[], stores: Store[]) =>
    steps.push({ kind: 'loop', label, vars, stores } satisfies LoopKernel);
  const at = (v: ValueRef, ix: IExpr) => b.load(v.buf, iadd(ix, iconst(v.offset)));
  const ref = (buf: number, it: Item): ValueRef => ({ buf, offset: 0, shape: it.shape, dtype: it.dtype });

  if (n.op === 'ctc_update_log_p') {
    const [skip, zeros, active, curr, prev] = ins as [ValueRef, ValueRef, ValueRef, ValueRef, ValueRef];
    const N = zeros.shape[0]!;
    const K = skip.shape[0]!;
    const [nextItem, rowItem] = items as [Item, Item];
    // hdr = [act, next, common]: act = max(0, min(active, n)); next = min(max(active + 1, max(-1, skips below active) + 3), n)
    const hdr = addBuf('float64', 3, 'temp');
    const nextOut = addBuf('int32', 1, 'temp');
    {
      const v0 = newVar(1);
      const a = at(active, iconst(0));
      const act = op('max', b.const(0), op('min', a, b.const(N)));
      let top: Expr = b.const(-1);
      if (K > 0) {
        const vk = newVar(K);
        const sk = at(skip, ivar(vk));
        top = op('max', top, b.reduce('max', [vk], op('select', op('lt', sk, a), sk, b.const(-Infinity))));
      }
      const next = op('min', op('max', op('add', a, b.const(1)), op('add', top, b.const(3))), b.const(N));
      let common: Expr = NEG;
      if (N > 0) {
        const vs = newVar(N);
        common = b.reduce('max', [vs], op('select', op('lt', b.index(ivar(vs)), act), at(prev, ivar(vs)), NEG));
      }
      kernel(
        'ctc_update_log_p:count',
        [v0],
        [
          { buf: hdr, index: iconst(0), value: act, dtype: 'float64' },
          { buf: hdr, index: iconst(1), value: next, dtype: 'float64' },
          { buf: hdr, index: iconst(2), value: common, dtype: 'float64' },
          { buf: nextOut, index: iconst(0), value: b.cast('int32', next), dtype: 'int32' },
        ],
      );
    }
    const row = addBuf(rowItem.dtype, N, 'temp');
    if (N > 0) {
      const vs = newVar(N);
      const is = ivar(vs);
      const s = b.index(is);
      const [act, next, common] = [b.load(hdr, iconst(0)), b.load(hdr, iconst(1)), b.load(hdr, iconst(2))];
      const a = at(active, iconst(0));
      const pAt = (ix: IExpr) => op('exp', op('sub', at(prev, ix), common));
      const q = (ix: IExpr, j: Expr) => op('select', op('lt', j, act), pAt(ix), at(zeros, ix));
      const before = iclamp(iadd(is, iconst(-1)), 0, N - 1);
      const base = op(
        'select',
        op('eq', s, b.const(0)),
        q(is, s),
        op('add', q(is, s), q(before, op('sub', s, b.const(1)))),
      );
      let moved = base;
      if (K > 0) {
        // the skip from i = s - 2 (p[i], or NaN where the reference's p[i] is undefined), once per listed i, in list order
        const vk = newVar(K);
        const sk = at(skip, ivar(vk));
        const j = op('sub', s, b.const(2));
        const two = iclamp(iadd(is, iconst(-2)), 0, N - 1);
        const p = op('select', op('and', op('ge', j, b.const(0)), op('lt', j, act)), pAt(two), b.const(Number.NaN));
        moved = op(
          'add',
          base,
          b.reduce('sum', [vk], op('select', op('and', op('lt', sk, a), op('eq', sk, j)), p, b.const(0))),
        );
      }
      const value = op(
        'select',
        op('lt', s, next),
        op('add', op('add', at(curr, is), op('log', moved)), common),
        at(zeros, is),
      );
      kernel(
        'ctc_update_log_p',
        [vs],
        [{ buf: row, index: is, value: b.cast(rowItem.dtype, value), dtype: rowItem.dtype }],
      );
    }
    return { steps, items: [ref(nextOut, nextItem), ref(row, rowItem)] };
  }

  // ctc_path_probs(predict (T, C), Y (n,)) with the reference's alpha
  const [pred, y] = ins as [ValueRef, ValueRef];
  const [T, C] = pred.shape as [number, number];
  const N = y.shape[0]!;
  if (!isOp(n, 'ctc_path_probs')) throw new Error(`internal: ctc_path_probs lowering given ${n.op}`);
  const alpha = n.attrs.alpha;
  const [probsItem, maskItem] = items as [Item, Item];
  const probs = addBuf(probsItem.dtype, T * N, 'temp');
  const mask = addBuf('bool', T * N, 'temp');
  if (T * N === 0) return { steps, items: [ref(probs, probsItem), ref(mask, maskItem)] };
  // cls[s]: Y[s] checked as the reference checks it, -1 counted from the end
  const cls = addBuf('float64', N, 'temp');
  {
    const vs = newVar(N);
    const is = ivar(vs);
    const x = b.call(ctcCheckLive, 'ctc_check', [
      b.const(2),
      b.index(is),
      b.const(0),
      at(y, is),
      b.const(C),
      b.const(0),
      b.const(0),
      b.const(0),
    ]);
    kernel(
      'ctc_path_probs:classes',
      [vs],
      [
        {
          buf: cls,
          index: is,
          value: op('select', op('lt', x, b.const(0)), op('add', x, b.const(C)), x),
          dtype: 'float64',
        },
      ],
    );
  }
  /** L[t, s] = log((1 - alpha) predict[t, cls[s]] + alpha / n), for position s of the label, or of the reversed one. */
  const Lt = (it: IExpr, is: IExpr) =>
    op(
      'log',
      op(
        'add',
        op(
          'mul',
          b.const(1 - alpha),
          b.load(pred.buf, iadd(iconst(pred.offset), iscale(it, C)), { row: b.load(cls, is), stride: 1 }),
        ),
        b.const(alpha / N),
      ),
    );
  // Theano's skip indices: odd i < 2 K + 1 with K = floor((n - 3) / 2) and Y[i] != Y[i + 2] (of Y, or of Y reversed)
  const K = Math.max(0, Math.floor((N - 3) / 2));
  const isSkip = (reversed: boolean, is: IExpr): Expr => {
    if (K === 0) return b.const(0);
    const s = b.index(is);
    const yAt = (k: number) =>
      at(
        y,
        reversed ? iclamp(iadd(iconst(N - 1 - k), iscale(is, -1)), 0, N - 1) : iclamp(iadd(is, iconst(k)), 0, N - 1),
      );
    return op(
      'and',
      op('and', op('eq', op('imod', s, b.const(2)), b.const(1)), op('lt', s, b.const(2 * K + 1))),
      op('ne', yAt(0), yAt(2)),
    );
  };
  /** The forward recursion (or the reversed one): reachable counts A[0..T], rows F[t, s]. */
  const recursion = (reversed: boolean): { A: number; F: number } => {
    const tag = reversed ? 'backward' : 'forward';
    const A = addBuf('float64', T + 1, 'temp');
    {
      const vu = newVar(T + 1);
      const iu = ivar(vu);
      const prevA = b.load(A, imod(iadd(iu, iconst(T)), T + 1)); // A[u - 1], in range at u = 0 (where it is not used)
      const vi = newVar(N);
      const top = op(
        'max',
        b.const(-1),
        b.reduce(
          'max',
          [vi],
          op(
            'select',
            op('and', isSkip(reversed, ivar(vi)), op('lt', b.index(ivar(vi)), prevA)),
            b.index(ivar(vi)),
            b.const(-Infinity),
          ),
        ),
      );
      const next = op('min', op('max', op('add', prevA, b.const(1)), op('add', top, b.const(3))), b.const(N));
      kernel(
        `ctc_path_probs:${tag} counts`,
        [vu],
        [
          {
            buf: A,
            index: iu,
            value: op('select', op('eq', b.index(iu), b.const(0)), b.const(1), next),
            dtype: 'float64',
          },
        ],
      );
    }
    const F = addBuf('float64', T * N, 'temp');
    const [vt, vs] = [newVar(T), newVar(N)];
    const [it, is] = [ivar(vt), ivar(vs)];
    const [t, s] = [b.index(it), b.index(is)];
    const before = b.load(A, it); // the reachable count before the step
    const after = b.load(A, iadd(it, iconst(1)));
    const act = op('max', b.const(0), op('min', before, b.const(N)));
    const prevT = imod(iadd(it, iconst(T - 1)), T); // row t - 1 (zeros at t = 0)
    const prevAt = (ix: IExpr) =>
      op('select', op('eq', t, b.const(0)), b.const(0), b.load(F, ravel([prevT, ix], [T, N])));
    const vc = newVar(N);
    const common = b.reduce('max', [vc], op('select', op('lt', b.index(ivar(vc)), act), prevAt(ivar(vc)), NEG));
    const pAt = (ix: IExpr) => op('exp', op('sub', prevAt(ix), common));
    const q = (ix: IExpr, j: Expr) => op('select', op('lt', j, act), pAt(ix), b.const(0));
    const s1 = iclamp(iadd(is, iconst(-1)), 0, N - 1);
    const s2 = iclamp(iadd(is, iconst(-2)), 0, N - 1);
    const base = op('select', op('eq', s, b.const(0)), q(is, s), op('add', q(is, s), q(s1, op('sub', s, b.const(1)))));
    const j = op('sub', s, b.const(2));
    const moved = op(
      'select',
      op('and', op('ge', j, b.const(0)), op('and', isSkip(reversed, s2), op('lt', j, before))),
      op('add', base, pAt(s2)),
      base,
    );
    // row u of the reversed problem is step T - 1 - u at position n - 1 - s
    const curr = reversed ? Lt(iadd(iconst(T - 1), iscale(it, -1)), iadd(iconst(N - 1), iscale(is, -1))) : Lt(it, is);
    const value = op('select', op('lt', s, after), op('add', op('add', curr, op('log', moved)), common), b.const(0));
    kernel(`ctc_path_probs:${tag}`, [vt, vs], [{ buf: F, index: ravel([it, is], [T, N]), value, dtype: 'float64' }]);
    return { A, F };
  };
  const f = recursion(false);
  const r = recursion(true);
  {
    const [vt, vs] = [newVar(T), newVar(N)];
    const [it, is] = [ivar(vt), ivar(vs)];
    const ru = iadd(iconst(T - 1), iscale(it, -1));
    const rs = iadd(iconst(N - 1), iscale(is, -1));
    const index = ravel([it, is], [T, N]);
    const lp = op('sub', op('add', b.load(f.F, index), b.load(r.F, ravel([ru, rs], [T, N]))), Lt(it, is));
    const m = op(
      'and',
      op('lt', b.index(is), b.load(f.A, iadd(it, iconst(1)))),
      op('lt', b.index(rs), b.load(r.A, iadd(ru, iconst(1)))),
    );
    kernel(
      'ctc_path_probs',
      [vt, vs],
      [
        { buf: probs, index, value: b.cast(probsItem.dtype, lp), dtype: probsItem.dtype },
        { buf: mask, index, value: m, dtype: 'bool' },
      ],
    );
  }
  return { steps, items: [ref(probs, probsItem), ref(mask, maskItem)] };
}

/**
 * TensorFlow's greedy CTC decoder (ctc_decode with greedy: src/ir/ops/ctc-decode.ts' greedyDecode):
 * per step the first largest class; a label is emitted where it is not the blank and differs from
 * the step before; emitted labels are packed to the left of a -1-padded row (a running count over
 * time gives each its place); the score is minus the sum of each step's largest input.
 */
function greedyDecode(
  items: readonly Item[],
  ins: readonly ValueRef[],
  b: ExprBuilder,
  addBuf: AddBuf,
): { steps: Step[]; items: ValueRef[] } | undefined {
  const [y, len] = ins as [ValueRef, ValueRef];
  const [B, T, C] = y.shape as [number, number, number];
  if (len.shape[0] !== B || items.length !== 2) return undefined; // the reference reports it
  const [pathItem, scoreItem] = items as [Item, Item];
  const op = b.op.bind(b);
  const steps: Step[] = [];
  const kernel = (label: string, vars: Var[], stores: Store[]) =>
    steps.push({ kind: 'loop', label, vars, stores } satisfies LoopKernel);
  const at = (v: ValueRef, ix: IExpr) => b.load(v.buf, iadd(ix, iconst(v.offset)));
  const path = addBuf('int32', B * T, 'temp');
  const score = addBuf(scoreItem.dtype, B, 'temp');
  const steps_ = addBuf('float64', B, 'temp');
  {
    const vb = newVar(B);
    const ib = ivar(vb);
    const args = [b.const(3), b.const(0), b.index(ib), at(len, ib), b.const(T), b.const(0), b.const(0), b.const(0)];
    kernel(
      'ctc_decode:check',
      [vb],
      [{ buf: steps_, index: ib, value: b.call(ctcCheckLive, 'ctc_check', args), dtype: 'float64' }],
    );
  }
  if (B * T === 0) {
    if (B > 0) {
      const vb = newVar(B);
      kernel('ctc_decode:score', [vb], [{ buf: score, index: ivar(vb), value: b.const(0), dtype: scoreItem.dtype }]);
    }
    return {
      steps,
      items: [
        { buf: path, offset: 0, shape: pathItem.shape, dtype: pathItem.dtype },
        { buf: score, offset: 0, shape: scoreItem.shape, dtype: scoreItem.dtype },
      ],
    };
  }
  // best[b, t]: the first class with the largest input; top[b, t]: that input
  const best = addBuf('float64', B * T, 'temp');
  const top = addBuf('float64', B * T, 'temp');
  {
    const [vb, vt] = [newVar(B), newVar(T)];
    const [ib, it] = [ivar(vb), ivar(vt)];
    const row = (ic: IExpr) => at(y, iadd(iscale(ib, T * C), iscale(it, C), ic));
    const vc = newVar(C);
    const m = b.reduce('max', [vc], row(ivar(vc)));
    const vk = newVar(C);
    const first = b.reduce('min', [vk], op('select', op('eq', row(ivar(vk)), m), b.index(ivar(vk)), b.const(C)));
    const index = iadd(iscale(ib, T), it);
    kernel(
      'ctc_decode:best',
      [vb, vt],
      [
        { buf: best, index, value: op('select', op('lt', first, b.const(C)), first, b.const(0)), dtype: 'float64' },
        { buf: top, index, value: m, dtype: 'float64' },
      ],
    );
  }
  // count[b, t]: labels emitted up to and including step t (each step reads the one before)
  const count = addBuf('float64', B * T, 'temp');
  const emitted = (ib: IExpr, it: IExpr, t: Expr) => {
    const cur = b.load(best, iadd(iscale(ib, T), it));
    const before = b.load(best, iadd(iscale(ib, T), imod(iadd(it, iconst(T - 1)), Math.max(T, 1))));
    return op(
      'and',
      op('lt', t, b.load(steps_, ib)),
      op('and', op('ne', cur, b.const(C - 1)), op('or', op('eq', t, b.const(0)), op('ne', cur, before))),
    );
  };
  {
    const [vb, vt] = [newVar(B), newVar(T)];
    const [ib, it] = [ivar(vb), ivar(vt)];
    const t = b.index(it);
    const prev = b.load(count, iadd(iscale(ib, T), imod(iadd(it, iconst(T - 1)), Math.max(T, 1))));
    const value = op('add', op('select', op('eq', t, b.const(0)), b.const(0), prev), emitted(ib, it, t));
    kernel('ctc_decode:count', [vb, vt], [{ buf: count, index: iadd(iscale(ib, T), it), value, dtype: 'float64' }]);
  }
  // path[b, i]: the label of the step whose emission is the (i + 1)-th, else -1 (a gather over the steps)
  {
    const [vb, vi] = [newVar(B), newVar(T)];
    const [ib, ii] = [ivar(vb), ivar(vi)];
    const vt = newVar(T);
    const it = ivar(vt);
    const hit = op(
      'and',
      emitted(ib, it, b.index(it)),
      op('eq', b.load(count, iadd(iscale(ib, T), it)), op('add', b.index(ii), b.const(1))),
    );
    const value = b.reduce('max', [vt], op('select', hit, b.load(best, iadd(iscale(ib, T), it)), b.const(-1)));
    kernel(
      'ctc_decode:path',
      [vb, vi],
      [{ buf: path, index: iadd(iscale(ib, T), ii), value: b.cast('int32', value), dtype: 'int32' }],
    );
  }
  // score[b] = 0 - top[b, 0] - top[b, 1] - ... over the first input_length steps, as the reference subtracts
  {
    const vb = newVar(B);
    const ib = ivar(vb);
    const vt = newVar(T);
    const sum = b.reduce(
      'sum',
      [vt],
      op(
        'select',
        op('lt', b.index(ivar(vt)), b.load(steps_, ib)),
        b.load(top, iadd(iscale(ib, T), ivar(vt))),
        b.const(0),
      ),
    );
    kernel(
      'ctc_decode:score',
      [vb],
      [{ buf: score, index: ib, value: b.cast(scoreItem.dtype, op('sub', b.const(0), sum)), dtype: scoreItem.dtype }],
    );
  }
  return {
    steps,
    items: [
      { buf: path, offset: 0, shape: pathItem.shape, dtype: pathItem.dtype },
      { buf: score, offset: 0, shape: scoreItem.shape, dtype: scoreItem.dtype },
    ],
  };
}
