// Keras 2.3's tensor predicates and small helpers: is_tensor, is_variable, is_placeholder, size,
// normalize_data_format.
import { apply } from '../ir/build.js';
import { ValueError } from '../ir/errors.js';
import { describe } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import { staticSize } from '../ir/types.js';
import { isTensor, options, toTensor, type TensorLike } from './args.js';
import { image_data_format, type DataFormat } from './config.js';
import { constant } from './tensors.js';

/** tf.is_tensor: true for every symbolic tensor, variables included; false for arrays and numbers. */
export function is_tensor(x: unknown): boolean {
  return isTensor(x);
}

/** True for variables (K.variable, K.zeros, ...); false for everything else. */
export function is_variable(x: unknown): boolean {
  return isTensor(x) && x.op === 'variable';
}

/**
 * True for placeholders (K.placeholder); false for everything else, K.learning_phase() included
 * (under TensorFlow it is a placeholder_with_default, not a Placeholder).
 */
export function is_placeholder(x: unknown): boolean {
  return isTensor(x) && x.op === 'placeholder';
}

/** tf.size: the number of elements of x as an int32 scalar tensor (a constant when x's shape is static). */
export function size(x: TensorLike, name?: string | null | { name?: string | null }): Node {
  options<{ name: string | null }>('size', [name], ['name']);
  const t = toTensor('size', x);
  const n = staticSize(t.shape);
  if (n !== null) return constant(n, 'int32');
  return apply('prod', [apply('shape_of', [t], {}, 'K.size')], { axes: [0], keepdims: false }, 'K.size');
}

/** Keras' normalize_data_format: null/undefined is K.image_data_format(); otherwise the lower-cased value, which must be a data format. */
export function normalize_data_format(value?: string | null): DataFormat {
  if (value === undefined || value === null) return image_data_format();
  const v = typeof value === 'string' ? value.toLowerCase() : value;
  if (v !== 'channels_first' && v !== 'channels_last') {
    throw new ValueError(
      `normalize_data_format: the data_format argument must be one of "channels_first", "channels_last"; got ${typeof value === 'string' ? JSON.stringify(value) : describe(value)}`,
    );
  }
  return v;
}
