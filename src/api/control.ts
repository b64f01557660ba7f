// Control flow of the Keras backend: map_fn and the folds (each one Scan node), switch, and
// the learning-phase selectors.
import { apply } from '../ir/build.js';
import { ValueError } from '../ir/errors.js';
import { describe, formatShape } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import { buildScan, scanArg } from '../ir/scan.js';
import { tensorType } from '../ir/types.js';
import { checkDType, isTensor, operands, options, toTensor, type TensorLike } from './args.js';
import { sliceAxes } from './indexing.js';
import type { DType } from '../ir/dtype.js';
import { learning_phase } from './state.js';

function callable(fn: string, f: unknown, what = 'fn'): asserts f is (...xs: Node[]) => unknown {
  if (typeof f !== 'function') throw new TypeError(`${fn}: ${what} must be a function, got ${describe(f)}`);
}

function sequence(fn: string, elems: TensorLike): Node {
  const e = toTensor(fn.slice(2), elems, 'elems');
  if (e.ndim < 1) throw new ValueError(`${fn}: elems must have rank >= 1 (it is walked along axis 0), got a scalar`);
  return e;
}

const stepType = (e: Node) => tensorType(e.dtype, e.shape.slice(1));

/** `map_fn(fn, elems, name, dtype)`: fn applied to each slice of elems along axis 0, results stacked. */
export function map_fn(
  fn: (x: Node) => TensorLike,
  elems: TensorLike,
  name?: string | null | { name?: string | null; dtype?: DType | null },
  dtype?: DType | null,
): Node {
  const o = options<{ name: string | null; dtype: DType | null }>('map_fn', [name, dtype], ['name', 'dtype']);
  callable('K.map_fn', fn);
  const e = sequence('K.map_fn', elems);
  const x = scanArg(stepType(e), 'seq0');
  let out = toTensor('map_fn', fn(x), 'the result of fn');
  if (o.dtype !== undefined && o.dtype !== null) {
    const dt = checkDType('map_fn', o.dtype);
    if (out.dtype !== dt) out = apply('cast', [out], { dtype: dt }, 'K.map_fn');
  }
  const r = buildScan({
    fn: 'K.map_fn',
    outer: { sequences: [e], states: [], constants: [] },
    args: { sequences: [x], states: [], constants: [] },
    outputs: [out],
    newStates: [],
  });
  return r.outputs[0]!;
}

type FoldFn = (acc: Node, x: Node) => TensorLike;

/**
 * A fold as one Scan: `acc = fn(acc, x)` over elems along axis 0, left to right (foldl) or
 * right to left (foldr). Without an initializer the first element walked starts the fold.
 */
function fold(
  name: 'foldl' | 'foldr',
  fn: FoldFn,
  elems: TensorLike,
  initializer: TensorLike | null | undefined,
): Node {
  const fname = `K.${name}`;
  callable(fname, fn);
  const e = sequence(fname, elems);
  const back = name === 'foldr';
  if (initializer !== undefined && initializer !== null) {
    const x = scanArg(stepType(e), 'seq0');
    const init = toTensor(name, initializer, 'initializer', e.dtype);
    const acc = scanArg(init.type, 'state0');
    const next = toTensor(name, fn(acc, x), 'the result of fn', init.dtype);
    const r = buildScan({
      fn: fname,
      outer: { sequences: [e], states: [init], constants: [] },
      args: { sequences: [x], states: [acc], constants: [] },
      outputs: [],
      newStates: [next],
      goBackwards: back,
    });
    return r.finalStates[0]!;
  }
  if (e.shape[0] === 0)
    throw new ValueError(`${fname}: elems of shape ${formatShape(e.shape)} is empty and there is no initializer`);
  // The first element walked starts the fold; the rest are walked (Theano: elems[1:] / elems[:-1]).
  const full = { start: null, stop: null, step: 1 };
  const init = apply('index', [e], { index: back ? -1 : 0 }, fname);
  const rest = sliceAxes(fname, e, [
    back ? { start: null, stop: -1, step: 1 } : { start: 1, stop: null, step: 1 },
    ...e.shape.slice(1).map(() => full),
  ]);
  return fold(name, fn, rest, init);
}

type FoldOpts = { initializer?: TensorLike | null; name?: string | null };

/** Keras' arguments of foldl and foldr after fn: elems, initializer, name (or an options object). */
type FoldArgs = [elems: TensorLike, initializer?: TensorLike | null | FoldOpts, name?: string | null];

function foldArgs(name: 'foldl' | 'foldr', fn: FoldFn, [elems, initializer, nameArg]: FoldArgs): Node {
  const o = options<{ initializer: TensorLike | null; name: string | null }>(
    name,
    [initializer, nameArg],
    ['initializer', 'name'],
  );
  return fold(name, fn, elems, o.initializer);
}

export function foldl(fn: FoldFn, ...args: FoldArgs): Node {
  return foldArgs('foldl', fn, args);
}

export function foldr(fn: FoldFn, ...args: FoldArgs): Node {
  return foldArgs('foldr', fn, args);
}

type Branch = TensorLike | (() => TensorLike);

function branch(b: Branch): TensorLike {
  return typeof b === 'function' ? b() : b;
}

/**
 * `switch(condition, then, else)`: elementwise selection. A condition of lower rank than the
 * branches is expanded on the right (its dims align with their leading dims), as Keras' Theano
 * and TensorFlow backends do; a scalar condition selects a whole branch. Branches may be callables.
 */
export function switchFn(condition: TensorLike, then_expression: Branch, else_expression: Branch): Node {
  const fn = 'K.switch';
  const c = toTensor('switch', condition, 'condition');
  const [t, e] = operands('switch', branch(then_expression), branch(else_expression), [
    'then_expression',
    'else_expression',
  ]);
  const r = Math.max(t.ndim, e.ndim);
  if (c.ndim > r) {
    throw new ValueError(
      `${fn}: rank of condition should be less than or equal to rank of then_expression and else_expression; ndim(condition)=${c.ndim}, ndim(then_expression)=${t.ndim}, ndim(else_expression)=${e.ndim}`,
    );
  }
  let cx = c;
  if (c.ndim > 0) for (let k = c.ndim; k < r; k++) cx = apply('expand_dims', [cx], { axis: -1 }, fn);
  return apply('where', [cx, t, e], {}, fn);
}

type Phase = number | boolean | Node | null | undefined;

/**
 * `in_train_phase(x, alt, training)`: x in training, alt otherwise. `training` defaults to the
 * learning-phase tensor, so the choice is made when the graph runs (fed or set); a number or
 * boolean decides now, and only the chosen callable is called.
 */
export function in_train_phase(x: Branch, alt: Branch, training?: Phase | { training?: Phase }): Node {
  const o = options<{ training: Phase }>('in_train_phase', [training], ['training']);
  const tr = o.training === undefined || o.training === null ? learning_phase() : o.training;
  if (typeof tr === 'boolean' || typeof tr === 'number')
    return toTensor('in_train_phase', branch(tr !== 0 && tr !== false ? x : alt));
  if (!isTensor(tr))
    throw new TypeError(`K.in_train_phase: training must be a number, a boolean or a tensor, got ${describe(tr)}`);
  return switchFn(tr, x, alt);
}

/** `in_test_phase(x, alt, training)`: x in testing, alt in training. */
export function in_test_phase(x: Branch, alt: Branch, training?: Phase | { training?: Phase }): Node {
  const o = options<{ training: Phase }>('in_test_phase', [training], ['training']);
  return in_train_phase(alt, x, o.training);
}
