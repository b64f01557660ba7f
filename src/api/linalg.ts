// batch_dot with Keras' axes rules; `dot` is in math.ts.
import { apply } from '../ir/build.js';
import { ShapeError, ValueError } from '../ir/errors.js';
import { describe, formatShape } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import { checkInt, operands, options, type TensorLike } from './args.js';
import { expandDims } from './shape.js';

type Axes = number | readonly [number, number] | null;

/**
 * Per batch row, contracts axis axes[0] of x with axis axes[1] of y. `axes` an int a means
 * (a, a); null means (x.ndim-1, y.ndim-1) when y is 2-D, else (x.ndim-1, y.ndim-2). The result
 * has x's axes without axes[0], then y's without the batch and axes[1]; a rank-1 result
 * becomes (batch, 1).
 */
export function batch_dot(x: TensorLike, y: TensorLike, axes?: Axes | { axes?: Axes }): Node {
  const fn = 'K.batch_dot';
  const [a, b] = operands(fn, x, y);
  const o = options<{ axes: Axes }>(fn, [axes], ['axes']);
  if (a.ndim < 2 || b.ndim < 2) {
    throw new ShapeError(
      `K.batch_dot: inputs must have rank >= 2, got shapes ${formatShape(a.shape)} (x) and ${formatShape(b.shape)} (y)`,
    );
  }
  let pair: unknown[];
  const ax = o.axes;
  if (ax === undefined || ax === null) pair = [a.ndim - 1, b.ndim === 2 ? 1 : b.ndim - 2];
  else if (typeof ax === 'number') pair = [ax, ax];
  else if (Array.isArray(ax)) {
    if (ax.some((v) => Array.isArray(v)))
      throw new ValueError(
        `K.batch_dot: multiple target dimensions are not supported, got axes ${JSON.stringify(ax)}; give one axis for x and one for y`,
      );
    if (ax.length !== 2)
      throw new ValueError(
        `K.batch_dot: axes must be an int or a pair [axis of x, axis of y], got ${JSON.stringify(ax)}`,
      );
    pair = [...ax];
  } else throw new ValueError(`K.batch_dot: axes must be an int, a pair of ints or null, got ${describe(ax)}`);
  const norm = pair.map((v, i) => {
    const r = i === 0 ? a.ndim : b.ndim;
    const k = checkInt(fn, v, `axes[${i}]`);
    const n = k < 0 ? k + r : k;
    if (n < 0 || n >= r)
      throw new ValueError(
        `K.batch_dot: axes[${i}] = ${k} is out of range for ${i === 0 ? 'x' : 'y'} of shape ${formatShape(i === 0 ? a.shape : b.shape)}`,
      );
    if (n === 0)
      throw new ValueError(`K.batch_dot: cannot contract over axis 0, the batch axis (axes ${JSON.stringify(pair)})`);
    return n;
  }) as [number, number];
  const out = apply('batch_dot', [a, b], { axes: norm }, 'K.batch_dot');
  return out.ndim === 1 ? expandDims('K.batch_dot', out, 1) : out;
}
