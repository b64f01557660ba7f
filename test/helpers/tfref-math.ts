// TensorFlow.js as an independent reference for op tables: inputs go in as float32 (int32 for
// integer dtypes), results come back as float64 NDArrays.
import * as tf from '@tensorflow/tfjs';
import { NDArray } from '../../src/ir/ndarray.js';
import { isFloat } from '../../src/ir/dtype.js';

await tf.setBackend('cpu');

export { tf };

export function toTf(x: NDArray): tf.Tensor {
  if (x.dtype === 'bool') return tf.tensor(Array.from(x.data), [...x.shape], 'bool');
  return tf.tensor(Array.from(x.data), [...x.shape], isFloat(x.dtype) ? 'float32' : 'int32');
}

export function fromTf(t: tf.Tensor): NDArray {
  return new NDArray(Float64Array.from(t.dataSync() as ArrayLike<number>, Number), t.shape, 'float64');
}

/** A table's `expected`: runs `f` on the inputs as TensorFlow.js tensors. */
export function tfRef(f: (...xs: tf.Tensor[]) => tf.Tensor): (...xs: NDArray[]) => NDArray {
  return (...xs) => {
    const out = tf.tidy(() => f(...xs.map(toTf)));
    const nd = fromTf(out);
    out.dispose();
    return nd;
  };
}
