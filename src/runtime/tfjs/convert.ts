// NDArray <-> tf.Tensor at the executor's edges. Values enter in the tfjs dtype of their
// declared dtype (float64 becomes float32, int64 becomes int32: see README) and leave as
// NDArrays of the node's declared dtype, rounded by NDArray's own stores (float16, int widths).
import type { DType } from '../../ir/dtype.js';
import { NDArray } from '../../ir/ndarray.js';
import type { TF } from './load.js';
import { tfDType, type Tensor } from './types.js';

export function upload(tf: TF, nd: NDArray): Tensor {
  const dt = tfDType(nd.dtype);
  const d = nd.data;
  switch (dt) {
    case 'float32':
      return tf.tensor(d instanceof Float32Array ? d : Float32Array.from(d), [...nd.shape], 'float32');
    case 'int32':
      return tf.tensor(d instanceof Int32Array ? d : Int32Array.from(d, (v) => v | 0), [...nd.shape], 'int32');
    case 'bool':
      return tf.tensor(
        d instanceof Uint8Array ? d : Uint8Array.from(d, (v) => (v !== 0 ? 1 : 0)),
        [...nd.shape],
        'bool',
      );
  }
}

export function download(t: Tensor, dtype: DType): NDArray {
  const data = t.dataSync() as Float32Array | Int32Array | Uint8Array;
  // Some tfjs backends hand out their own storage; an NDArray that would wrap it as is gets a copy.
  const own = dtype === 'float32' || dtype === 'int32' ? data.slice() : data;
  return new NDArray(own, t.shape, dtype);
}
