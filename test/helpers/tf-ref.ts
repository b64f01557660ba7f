// TensorFlow.js as an independent reference for op tables: NDArray in, nested arrays out.
// Values go through float32 (int32 for integer dtypes), so tables comparing with it use
// float32-exact inputs or a tolerance.
import * as tf from '@tensorflow/tfjs';
import { isInt } from '../../src/ir/dtype.js';
import type { NDArray, NestedArray } from '../../src/ir/ndarray.js';

void tf.setBackend('cpu');

export { tf };

/** The NDArray as a tf tensor (int32 for integer dtypes and bool, float32 otherwise). */
export function tfT(a: NDArray): tf.Tensor {
  return tf.tensor(Array.from(a.data), [...a.shape], isInt(a.dtype) || a.dtype === 'bool' ? 'int32' : 'float32');
}

/** Runs `f` on the inputs as tf tensors and returns its result as nested arrays. */
export function tfRef(f: (...xs: tf.Tensor[]) => tf.Tensor): (...xs: NDArray[]) => NestedArray {
  return (...xs) => {
    const ins = xs.map(tfT);
    const out = tf.tidy(() => f(...ins));
    const v = out.arraySync() as NestedArray;
    tf.dispose([...ins, out]);
    return v;
  };
}
