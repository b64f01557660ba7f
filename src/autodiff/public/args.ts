// Argument handling of the autodiff functions: a tensor or an array of tensors (Theano's
// "variable or list of variables"), with results in the same structure.
import { isFloat, isInt } from '../../ir/dtype.js';
import { ValueError } from '../../ir/errors.js';
import { describe, formatShape } from '../../ir/ndarray.js';
import { Node } from '../../ir/node.js';

export type Tensors = Node | readonly Node[];
/** A result shaped like an argument: one tensor for a tensor, an array for an array. */
export type Like<T, R> = T extends Node ? R : R[];

/** The tensors of an argument, as an array, each checked. */
export function listOf(fn: string, arg: string, x: unknown): Node[] {
  const xs = Array.isArray(x) ? (x as unknown[]) : [x];
  return xs.map((v, i) => {
    if (!(v instanceof Node))
      throw new TypeError(`${fn}: ${arg}${Array.isArray(x) ? `[${i}]` : ''} must be a tensor, got ${describe(v)}`);
    return v;
  });
}

/** `values` back in the structure of `like` (a single tensor or an array). */
export function shaped<R>(like: unknown, values: R[]): R | R[] {
  return Array.isArray(like) ? values : values[0]!;
}

/**
 * Each point must match its tensor's dtype and static shape (known dims equal); with
 * `floatForIntegers`, the point of an integer tensor may be any float (its cotangent, Theano).
 */
export function checkPairs(
  fn: string,
  arg: string,
  xs: readonly Node[],
  what: string,
  points: readonly Node[],
  floatForIntegers = false,
): void {
  if (points.length !== xs.length) {
    throw new ValueError(
      `${fn}: ${arg} has ${points.length} tensor(s) but ${what} has ${xs.length}; they must match one to one`,
    );
  }
  points.forEach((p, i) => {
    const x = xs[i]!;
    const ok = p.ndim === x.ndim && p.shape.every((d, j) => d === null || x.shape[j] === null || d === x.shape[j]);
    if (!ok)
      throw new ValueError(
        `${fn}: ${arg}[${i}] has shape ${formatShape(p.shape)} but ${what}[${i}] has shape ${formatShape(x.shape)}; they must agree`,
      );
    if (floatForIntegers && isInt(x.dtype) && isFloat(p.dtype)) return;
    if (p.dtype !== x.dtype)
      throw new TypeError(`${fn}: ${arg}[${i}] is ${p.dtype} but ${what}[${i}] is ${x.dtype}; cast it with K.cast`);
  });
}
