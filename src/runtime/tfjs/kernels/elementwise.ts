// Elementwise ops on tfjs: each row's tfjs function (src/ir/ops/elementwise.ts), wrapped by its
// dtype rule, and the exceptions below. Inputs are first brought to the dtype the op computes in (the
// node's, via arithDType), so tfjs' own upcasting rules never decide a result type; tfjs
// broadcasts like NumPy, after the reference's runtime broadcast check.
import { isFloat, promote } from '../../../ir/dtype.js';
import {
  rowsSpelledIn,
  type ElementwiseOp,
  type SpelledIn,
  type SpellingOf,
  type elementwiseOps,
} from '../../../ir/ops/elementwise.js';
import type { TF } from '../load.js';
import type { Tensor, TfTableFor, TfKernel } from '../types.js';
import { arithDType, castTo, checkBroadcast, expandTo, toBool } from './util.js';
import { collapsedBroadcast } from './rank.js';

type NoAttrs = Record<string, never>;

/** Computes in the node's dtype (bool as int32). */
function arith(f: (tf: TF, ...xs: Tensor[]) => Tensor): TfKernel<NoAttrs> {
  return (ins, _, { tf, node }) => {
    if (ins.length > 1) checkBroadcast(ins);
    const dt = arithDType(node.dtype);
    return collapsedBroadcast(
      tf,
      ins.map((t) => castTo(tf, t, dt)),
      (xs) => f(tf, ...xs),
      node.op,
    );
  };
}

/** Transcendental: computes in float32 whatever the input dtype (the node's dtype is float). */
function float(f: (tf: TF, x: Tensor) => Tensor): TfKernel<NoAttrs> {
  return ([x], _, { tf }) => f(tf, castTo(tf, x!, 'float32'));
}

/** Integer inputs are already integral: floor, ceil and round leave them alone. */
function rounding(f: (tf: TF, x: Tensor) => Tensor): TfKernel<NoAttrs> {
  return ([x], _, { tf, node }) => (isFloat(node.dtype) ? f(tf, x!) : x!);
}

/** Comparisons run in the promoted dtype of the operands. */
function compare(f: (tf: TF, a: Tensor, b: Tensor) => Tensor): TfKernel<NoAttrs> {
  return ([a, b], _, { tf, node }) => {
    checkBroadcast([a!, b!]);
    const dt = arithDType(promote(node.inputs[0]!.dtype, node.inputs[1]!.dtype));
    return collapsedBroadcast(tf, [castTo(tf, a!, dt), castTo(tf, b!, dt)], ([x, y]) => f(tf, x!, y!), node.op);
  };
}

function logic(f: (tf: TF, ...xs: Tensor[]) => Tensor): TfKernel<NoAttrs> {
  return (ins, _, { tf, node }) => {
    if (ins.length > 1) checkBroadcast(ins);
    return collapsedBroadcast(
      tf,
      ins.map((t) => toBool(tf, t)),
      (xs) => f(tf, ...xs),
      node.op,
    );
  };
}

type TfName = { [K in SpelledIn<'tf'>]: SpellingOf<K, 'tf'> }[SpelledIn<'tf'>];
/** The tfjs function a row names (a row naming no function of tfjs fails to compile here). */
function tfFn(tf: TF, name: TfName): (...xs: Tensor[]) => Tensor {
  return tf[name] as (...xs: Tensor[]) => Tensor;
}

/** A row's kernel from its tfjs name: transcendental, comparison or arithmetic, by its dtype rule. */
function fromRow(name: TfName, row: ElementwiseOp): TfKernel<NoAttrs> {
  if (row.dtypeRule === 'bool') return compare((tf, a, b) => tfFn(tf, name)(a, b));
  if (row.dtypeRule === 'float' && row.arity === 1) return float((tf, x) => tfFn(tf, name)(x));
  return arith((tf, ...xs) => tfFn(tf, name)(...xs));
}

function rowKernels(): Record<SpelledIn<'tf'>, TfKernel<NoAttrs>> {
  const out: Partial<Record<SpelledIn<'tf'>, TfKernel<NoAttrs>>> = {};
  for (const { op, name, row } of rowsSpelledIn('tf')) out[op] = fromRow(name as TfName, row);
  return out as Record<SpelledIn<'tf'>, TfKernel<NoAttrs>>;
}

/**
 * The rows' kernels, and those whose tfjs function differs from theanine's op at the edges
 * (integer modulo by zero, NaN's sign, integer rounding, logic on any dtype, integer isnan).
 */
export const elementwiseKernels: TfTableFor<keyof typeof elementwiseOps | 'where'> = {
  ...rowKernels(),
  // tf.mod is floor modulo: the result takes the divisor's sign, as Python's %
  // Integer modulo by 0 is 0 in the reference (NaN stored as an integer); tfjs-wasm traps with
  // "remainder by zero", so zero divisors are replaced and their results set to 0.
  mod: arith((tf, a, b) => {
    if (b.dtype !== 'int32') return tf.mod(a, b);
    const zero = tf.equal(b, tf.scalar(0, 'int32'));
    return tf.where(zero, tf.zerosLike(tf.add(a, b)), tf.mod(a, tf.where(zero, tf.onesLike(b), b)));
  }),
  // tf.sign gives 0 for NaN; NaN stays NaN
  sign: arith((tf, a) => (a.dtype === 'float32' ? tf.where(tf.isNaN(a), a, tf.sign(a)) : tf.sign(a))),
  floor: rounding((tf, x) => tf.floor(x)),
  ceil: rounding((tf, x) => tf.ceil(x)),
  // tf.round rounds half to even, as NumPy and Theano do
  round: rounding((tf, x) => tf.round(x)),
  logical_and: logic((tf, a, b) => tf.logicalAnd(a, b)),
  logical_or: logic((tf, a, b) => tf.logicalOr(a, b)),
  logical_not: logic((tf, a) => tf.logicalNot(a)),
  // integers and bools are never NaN
  isnan: ([x], _, { tf }) => (x!.dtype === 'float32' ? tf.isNaN(x!) : tf.cast(tf.zerosLike(x!), 'bool')),
  where: ([c, a, b], _, { tf, node }) => {
    const shape = checkBroadcast([c!, a!, b!]);
    const dt = arithDType(node.dtype);
    const ins = [
      expandTo(tf, toBool(tf, c!), shape),
      expandTo(tf, castTo(tf, a!, dt), shape),
      expandTo(tf, castTo(tf, b!, dt), shape),
    ];
    return collapsedBroadcast(tf, ins, ([x, y, z]) => tf.where(x!, y!, z!), node.op);
  },
};
