// Elementwise ops on tfjs. Inputs are first brought to the dtype the op computes in (the
// node's, via arithDType), so tfjs' own upcasting rules never decide a result type; tfjs
// broadcasts like NumPy, after the reference's runtime broadcast check.
import { isFloat, promote } from '../../../ir/dtype.js';
import type { elementwiseOps } from '../../../ir/ops/elementwise.js';
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
    return collapsedBroadcast(tf, ins.map((t) => castTo(tf, t, dt)), (xs) => f(tf, ...xs), node.op);
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
    return collapsedBroadcast(tf, ins.map((t) => toBool(tf, t)), (xs) => f(tf, ...xs), node.op);
  };
}

export const elementwiseKernels: TfTableFor<keyof typeof elementwiseOps | 'where'> = {
  add: arith((tf, a, b) => tf.add(a, b)),
  sub: arith((tf, a, b) => tf.sub(a, b)),
  mul: arith((tf, a, b) => tf.mul(a, b)),
  div: arith((tf, a, b) => tf.div(a, b)),
  pow: arith((tf, a, b) => tf.pow(a, b)),
  // tf.mod is floor modulo: the result takes the divisor's sign, as Python's %
  // Integer modulo by 0 is 0 in the reference (NaN stored as an integer); tfjs-wasm traps with
  // "remainder by zero", so zero divisors are replaced and their results set to 0.
  mod: arith((tf, a, b) => {
    if (b.dtype !== 'int32') return tf.mod(a, b);
    const zero = tf.equal(b, tf.scalar(0, 'int32'));
    return tf.where(zero, tf.zerosLike(tf.add(a, b)), tf.mod(a, tf.where(zero, tf.onesLike(b), b)));
  }),
  maximum: arith((tf, a, b) => tf.maximum(a, b)),
  minimum: arith((tf, a, b) => tf.minimum(a, b)),
  neg: arith((tf, a) => tf.neg(a)),
  abs: arith((tf, a) => tf.abs(a)),
  // tf.sign gives 0 for NaN; NaN stays NaN
  sign: arith((tf, a) => (a.dtype === 'float32' ? tf.where(tf.isNaN(a), a, tf.sign(a)) : tf.sign(a))),
  square: arith((tf, a) => tf.square(a)),
  floor: rounding((tf, x) => tf.floor(x)),
  ceil: rounding((tf, x) => tf.ceil(x)),
  // tf.round rounds half to even, as NumPy and Theano do
  round: rounding((tf, x) => tf.round(x)),
  sqrt: float((tf, x) => tf.sqrt(x)),
  exp: float((tf, x) => tf.exp(x)),
  log: float((tf, x) => tf.log(x)),
  log1p: float((tf, x) => tf.log1p(x)),
  expm1: float((tf, x) => tf.expm1(x)),
  sin: float((tf, x) => tf.sin(x)),
  cos: float((tf, x) => tf.cos(x)),
  tanh: float((tf, x) => tf.tanh(x)),
  sigmoid: float((tf, x) => tf.sigmoid(x)),
  softplus: float((tf, x) => tf.softplus(x)),
  erf: float((tf, x) => tf.erf(x)),
  reciprocal: float((tf, x) => tf.reciprocal(x)),
  equal: compare((tf, a, b) => tf.equal(a, b)),
  not_equal: compare((tf, a, b) => tf.notEqual(a, b)),
  greater: compare((tf, a, b) => tf.greater(a, b)),
  greater_equal: compare((tf, a, b) => tf.greaterEqual(a, b)),
  less: compare((tf, a, b) => tf.less(a, b)),
  less_equal: compare((tf, a, b) => tf.lessEqual(a, b)),
  logical_and: logic((tf, a, b) => tf.logicalAnd(a, b)),
  logical_or: logic((tf, a, b) => tf.logicalOr(a, b)),
  logical_not: logic((tf, a) => tf.logicalNot(a)),
  // integers and bools are never NaN
  isnan: ([x], _, { tf }) => (x!.dtype === 'float32' ? tf.isNaN(x!) : tf.cast(tf.zerosLike(x!), 'bool')),
  where: ([c, a, b], _, { tf, node }) => {
    const shape = checkBroadcast([c!, a!, b!]);
    const dt = arithDType(node.dtype);
    const ins = [expandTo(tf, toBool(tf, c!), shape), expandTo(tf, castTo(tf, a!, dt), shape), expandTo(tf, castTo(tf, b!, dt), shape)];
    return collapsedBroadcast(tf, ins, ([x, y, z]) => tf.where(x!, y!, z!), node.op);
  },
};
