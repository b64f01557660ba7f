// The sized ops (src/ir/ops/sized.ts: sizes from int vectors, K.reshape(y, [-1, K.shape(x)[1]])...)
// in ONNX. Not translated yet: ONNX's Reshape, Tile, Slice, ConstantOfShape and Range take their
// sizes as inputs and would fit, but each needs its own translation and test.
import type { sizedOps } from '../../../ir/ops/sized.js';
import type { OnnxTableFor } from './types.js';

const reason = 'sizes from tensors (a sized op) have no ONNX translation yet; give the sizes as numbers';

export const sizedTranslations: OnnxTableFor<keyof typeof sizedOps> = {
  reshape_dims: { unsupported: reason },
  tile_dims: { unsupported: reason },
  untile_dims: { unsupported: reason },
  fill_dims: { unsupported: reason },
  arange_dims: { unsupported: reason },
  slice_dims: { unsupported: reason },
  unslice_dims: { unsupported: reason },
};
