// Elementwise ops as ONNX operators (each row's own, src/ir/ops/elementwise.ts), computed in the
// dtype ONNX Runtime's CPU kernels take (arith) and cast back. Where ONNX's operator differs from theanine's meaning (NaN in Max/Min,
// Python's modulo on floats, log1p/expm1 precision) the translation composes the exact form.
import { promote, isFloat, type DType } from '../../../ir/dtype.js';
import { rowsSpelledIn, type SpelledIn, type elementwiseOps } from '../../../ir/ops/elementwise.js';
import type { GraphBuilder, Val } from '../builder.js';
import { F } from '../builder.js';
import { arith, type Emit, type OnnxTableFor } from './types.js';
import { castAll, fit, toDType } from './util.js';

/** The op on inputs cast to the compute dtype of the node's result. */
function simple(opType: string): Emit<Record<string, never>> {
  return (c, ins) => {
    const d = arith(c.out.dtype);
    return fit(c, c.b.op(opType, castAll(c.b, ins, d), {}, { dtype: d, shape: c.out.shape }));
  };
}

type Unary = (b: GraphBuilder, x: string, v: Val) => string;

/** A float function of one argument: integer inputs are converted to the (float) result dtype first. */
function floatFn(f: Unary): Emit<Record<string, never>> {
  return (c, [x]) => {
    const d = arith(c.out.dtype);
    const v = { dtype: d, shape: c.out.shape };
    return fit(c, f(c.b, c.b.cast(x!, d), v));
  };
}

/** log(1 + x) without losing small x: with u = 1 + x, log(u) * x / (u - 1) (Goldberg/Kahan), x where u == 1. */
const log1p: Unary = (b, x, v) => {
  const one = b.scalar(1, v.dtype);
  const u = b.op('Add', [x, one], {}, v);
  const um1 = b.op('Sub', [u, one], {}, v);
  const isOne = b.op('Equal', [um1, b.scalar(0, v.dtype)], {}, { dtype: 'bool', shape: v.shape });
  const safe = b.op('Where', [isOne, one, um1], {}, v);
  const r = b.op('Div', [b.op('Mul', [b.op('Log', [u], {}, v), x], {}, v), safe], {}, v);
  // u = inf: log(u) * x / (u - 1) is inf / inf; log(inf) is the answer
  const isInf = b.op('IsInf', [u], { detect_negative: 0 }, { dtype: 'bool', shape: v.shape });
  return b.op('Where', [isOne, x, b.op('Where', [isInf, u, r], {}, v)], {}, v);
};

/** exp(x) - 1 without losing small x: with u = exp(x), (u - 1) * x / log(u) (Kahan), x where u == 1, -1 where u - 1 == -1. */
const expm1: Unary = (b, x, v) => {
  const one = b.scalar(1, v.dtype);
  const u = b.op('Exp', [x], {}, v);
  const um1 = b.op('Sub', [u, one], {}, v);
  const lg = b.op('Log', [u], {}, v);
  const isOne = b.op('Equal', [u, one], {}, { dtype: 'bool', shape: v.shape });
  const isM1 = b.op('Equal', [um1, b.scalar(-1, v.dtype)], {}, { dtype: 'bool', shape: v.shape });
  const isInf = b.op('IsInf', [u], { detect_negative: 0 }, { dtype: 'bool', shape: v.shape });
  const safe = b.op('Where', [isOne, one, lg], {}, v);
  const r = b.op('Div', [b.op('Mul', [um1, x], {}, v), safe], {}, v);
  return b.op('Where', [isOne, x, b.op('Where', [isM1, um1, b.op('Where', [isInf, u, r], {}, v)], {}, v)], {}, v);
};

/** log(1 + e^x) = max(x, 0) + log1p(e^-|x|), the stable form the reference uses. */
const softplus: Unary = (b, x, v) => {
  const e = b.op('Exp', [b.op('Neg', [b.op('Abs', [x], {}, v)], {}, v)], {}, v);
  return b.op('Add', [b.op('Relu', [x], {}, v), log1p(b, e, v)], {}, v);
};

/** Python's modulo: ONNX Mod with fmod=0 has it for integers; floats take C's fmod, then the divisor's sign. */
const mod: Emit<Record<string, never>> = (c, ins) => {
  const d = arith(c.out.dtype);
  const [x, y] = castAll(c.b, ins, d);
  const v = { dtype: d, shape: c.out.shape };
  if (!isFloat(d)) return fit(c, c.b.op('Mod', [x!, y!], { fmod: 0 }, v));
  const r = c.b.op('Mod', [x!, y!], { fmod: 1 }, v);
  const zero = c.b.scalar(0, d);
  const bv = { dtype: 'bool' as DType, shape: c.out.shape };
  const rNeg = c.b.op('Less', [r, zero], {}, bv);
  const yNeg = c.b.op('Less', [y!, zero], {}, bv);
  const fix = c.b.op(
    'And',
    [c.b.op('Not', [c.b.op('Equal', [r, zero], {}, bv)], {}, bv), c.b.op('Xor', [rNeg, yNeg], {}, bv)],
    {},
    bv,
  );
  return fit(c, c.b.op('Where', [fix, c.b.op('Add', [r, y!], {}, v), r], {}, v));
};

/** Max/Min, with NaN winning on floats (ONNX Runtime's Max leaves NaN to the platform). */
function extremum(opType: 'Max' | 'Min'): Emit<Record<string, never>> {
  return (c, ins) => {
    const d = arith(c.out.dtype);
    const [x, y] = castAll(c.b, ins, d);
    const v = { dtype: d, shape: c.out.shape };
    const m = c.b.op(opType, [x!, y!], {}, v);
    if (!isFloat(d)) return fit(c, m);
    const bv = { dtype: 'bool' as DType, shape: c.out.shape };
    const nan = c.b.op(
      'Or',
      [
        c.b.op('IsNaN', [x!], {}, { dtype: 'bool', shape: c.b.val(x!).shape }),
        c.b.op('IsNaN', [y!], {}, { dtype: 'bool', shape: c.b.val(y!).shape }),
      ],
      {},
      bv,
    );
    return fit(c, c.b.op('Where', [nan, c.b.op('Add', [x!, y!], {}, v), m], {}, v));
  };
}

/** A comparison, in the promoted dtype of its inputs. */
function compare(opType: string): Emit<Record<string, never>> {
  return (c, ins) => {
    const d = arith(ins.map((x) => c.b.val(x).dtype).reduce(promote));
    return c.b.op(opType, castAll(c.b, ins, d), {}, { dtype: 'bool', shape: c.out.shape });
  };
}

function logic(opType: string): Emit<Record<string, never>> {
  return (c, ins) =>
    c.b.op(
      opType,
      ins.map((x) => toDType(c.b, x, 'bool')),
      {},
      { dtype: 'bool', shape: c.out.shape },
    );
}

/** Integer inputs are their own floor, ceil and rounding. */
function rounding(opType: string): Emit<Record<string, never>> {
  return (c, [x]) => {
    const d = arith(c.out.dtype);
    if (!isFloat(d)) return fit(c, c.b.op('Identity', [c.b.cast(x!, d)], {}, { dtype: d, shape: c.out.shape }));
    return fit(c, c.b.op(opType, [c.b.cast(x!, d)], {}, { dtype: d, shape: c.out.shape }));
  };
}

const sign: Emit<Record<string, never>> = (c, [x]) => {
  const d = arith(c.out.dtype);
  const xc = c.b.cast(x!, d);
  const v = { dtype: d, shape: c.out.shape };
  const s = c.b.op('Sign', [xc], {}, v);
  if (!isFloat(d)) return fit(c, s);
  // Sign(NaN) is NaN in theanine; keep the input where it is NaN
  return fit(c, c.b.op('Where', [c.b.op('IsNaN', [xc], {}, { dtype: 'bool', shape: c.out.shape }), xc, s], {}, v));
};

const isnan: Emit<Record<string, never>> = (c, [x]) => {
  const d = c.b.val(x!).dtype;
  if (isFloat(d)) return c.b.op('IsNaN', [c.b.cast(x!, arith(d))], {}, { dtype: 'bool', shape: c.out.shape });
  // integers are never NaN: x != x is false everywhere, with x's shape
  return c.b.op(
    'Not',
    [c.b.op('Equal', [c.b.cast(x!, arith(d)), c.b.cast(x!, arith(d))], {}, { dtype: 'bool', shape: c.out.shape })],
    {},
    { dtype: 'bool', shape: c.out.shape },
  );
};

/** A row's translation from its ONNX operator: a comparison (bool rows) or the operator in the result's compute dtype. */
function rowTranslations(): Record<SpelledIn<'onnx'>, Emit<Record<string, never>>> {
  const out: Partial<Record<SpelledIn<'onnx'>, Emit<Record<string, never>>>> = {};
  for (const { op, name, row } of rowsSpelledIn('onnx'))
    out[op] = row.dtypeRule === 'bool' ? compare(name) : simple(name);
  return out as Record<SpelledIn<'onnx'>, Emit<Record<string, never>>>;
}

/**
 * Each row's ONNX operator (src/ir/ops/elementwise.ts), and the translations that compose the
 * exact meaning where the operator differs at the edges or the row names none.
 */
export const elementwiseTranslations: OnnxTableFor<keyof typeof elementwiseOps> = {
  ...rowTranslations(),
  mod,
  maximum: extremum('Max'),
  minimum: extremum('Min'),
  sign,
  square: (c, [x]) => {
    const d = arith(c.out.dtype);
    const xc = c.b.cast(x!, d);
    return fit(c, c.b.op('Mul', [xc, xc], {}, { dtype: d, shape: c.out.shape }));
  },
  floor: rounding('Floor'),
  ceil: rounding('Ceil'),
  round: rounding('Round'),
  log1p: floatFn(log1p),
  expm1: floatFn(expm1),
  softplus: floatFn(softplus),
  // ONNX Runtime's CPU Erf is float32 only: float64 erf is computed in float32 (error about 6e-8)
  erf: floatFn((b, x, v) =>
    v.dtype === 'float64'
      ? b.cast(b.op('Erf', [b.cast(x, 'float32')], {}, { dtype: 'float32', shape: v.shape }), 'float64')
      : b.op('Erf', [x], {}, v),
  ),
  not_equal: (c, ins) => c.b.op('Not', [compare('Equal')(c, ins, {})], {}, { dtype: 'bool', shape: c.out.shape }),
  logical_and: logic('And'),
  logical_or: logic('Or'),
  logical_not: logic('Not'),
  isnan,
};

export { F };
