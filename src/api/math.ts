// Arithmetic, elementwise math, comparisons, reductions and dot: thin builders over IR ops.
import { apply } from '../ir/build.js';
import type { Node } from '../ir/node.js';
import { NDArray } from '../ir/ndarray.js';
import { checkAxes, operands, options, toTensor, unary, type TensorLike } from './args.js';

type Binary = (x: TensorLike, y: TensorLike) => Node;

function binary(op: string, fn: string): Binary {
  return (x, y) => apply(op, operands(fn, x, y), {}, `K.${fn}`);
}

// Functions standing in for Python's operators.
export const add = binary('add', 'add');
export const subtract = binary('sub', 'subtract');
export const multiply = binary('mul', 'multiply');
export const divide = binary('div', 'divide');
export const mod = binary('mod', 'mod');
export const negative = unary('neg', 'negative');
export const floor = unary('floor', 'floor');
export const ceil = unary('ceil', 'ceil');

export const maximum = binary('maximum', 'maximum');
export const minimum = binary('minimum', 'minimum');
export const equal = binary('equal', 'equal');
export const not_equal = binary('not_equal', 'not_equal');
export const greater = binary('greater', 'greater');
export const greater_equal = binary('greater_equal', 'greater_equal');
export const less = binary('less', 'less');
export const less_equal = binary('less_equal', 'less_equal');

export const abs = unary('abs', 'abs');
/**
 * sqrt(max(x, 0)): Keras' TensorFlow and Theano backends clip at 0 first, so a negative input
 * gives 0, not NaN; maximum's gradient selects (TensorFlow's clip_by_value), so it is 0 where
 * x < 0 rather than 0 times sqrt's infinite slope.
 */
export function sqrt(x: TensorLike): Node {
  const t = toTensor('sqrt', x);
  const zero = apply('constant', [], { value: new NDArray([0], [], t.dtype) });
  return apply('sqrt', [apply('maximum', [t, zero], {}, 'K.sqrt')], {}, 'K.sqrt');
}
export const exp = unary('exp', 'exp');
export const log = unary('log', 'log');
export const round = unary('round', 'round');
export const sign = unary('sign', 'sign');
export const square = unary('square', 'square');
export const sin = unary('sin', 'sin');
export const cos = unary('cos', 'cos');

/** x ** a, elementwise; `a` is a number or a tensor. */
export function pow(x: TensorLike, a: TensorLike): Node {
  return apply('pow', operands('pow', x, a, ['x', 'a']), {}, 'K.pow');
}

type AxisArg = number | readonly number[] | null;
type ReduceOpts = { axis?: AxisArg; keepdims?: boolean };

function reducer(op: string, fn: string) {
  return (x: TensorLike, axis?: AxisArg | ReduceOpts, keepdims?: boolean): Node => {
    const t = toTensor(fn, x);
    const o = options<{ axis: AxisArg; keepdims: boolean }>(fn, [axis, keepdims], ['axis', 'keepdims']);
    return apply(op, [t], { axes: checkAxes(fn, o.axis, t.ndim), keepdims: o.keepdims === true }, `K.${fn}`);
  };
}

export const sum = reducer('sum', 'sum');
export const prod = reducer('prod', 'prod');
export const mean = reducer('mean', 'mean');
export const max = reducer('max', 'max');
export const min = reducer('min', 'min');
export const any = reducer('any', 'any');
export const all = reducer('all', 'all');

function argReducer(op: string, fn: string) {
  return (x: TensorLike, axis: number | { axis?: number } = -1): Node => {
    const t = toTensor(fn, x);
    const o = options<{ axis: number }>(fn, [axis], ['axis']);
    const [a] = checkAxes(fn, o.axis ?? -1, t.ndim);
    return apply(op, [t], { axis: a! }, `K.${fn}`);
  };
}
export const argmax = argReducer('argmax', 'argmax');
export const argmin = argReducer('argmin', 'argmin');

/** Theano's dot: x's last axis against y's second-to-last (or only) axis. */
export function dot(x: TensorLike, y: TensorLike): Node {
  return apply('dot', operands('dot', x, y), {}, 'K.dot');
}
