// The sized ops (src/ir/ops/sized.ts: sizes from int vectors, K.reshape(y, [-1, K.shape(x)[1]])...)
// in ONNX. Not translated as such (ONNX's Reshape, Tile, Slice, ConstantOfShape and Range take their
// sizes as inputs and would fit, each with its own translation and test): with the input shapes
// known they are resolved to static ops before the translation.
import type { sizedOps } from '../../../ir/ops/sized.js';
import { unsupported, type OnnxTableFor } from './types.js';

// "needs known input shapes": the onnx backend then translates per input shapes, where the sizes are
// resolved to static ops first (src/runtime/onnx/executor.ts); an export needs them known.
const reason =
  'sizes from tensors (a sized op) needs known input shapes: export with every input dim known, or give the sizes as numbers';

export const sizedTranslations: OnnxTableFor<keyof typeof sizedOps> = unsupported(reason, [
  'reshape_dims',
  'tile_dims',
  'untile_dims',
  'fill_dims',
  'arange_dims',
  'slice_dims',
  'unslice_dims',
]);
