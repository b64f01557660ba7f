// CTC decoding on tfjs (src/ir/ops/ctc-decode.ts). TensorFlow itself runs its CTC decoders on
// the CPU whatever the device, and TensorFlow.js has none: the inputs are read back to the host
// and the same greedy and beam searches (pure functions of numbers, not NDArray code) run there.
import { InferError } from '../../../ir/errors.js';
import { decodeBatch, trimDecoded, type ctcDecodeOps } from '../../../ir/ops/ctc-decode.js';
import type { TfTableFor } from '../types.js';

export const ctcDecodeKernels: TfTableFor<keyof typeof ctcDecodeOps> = {
  ctc_decode: {
    tuple: ([y, len], a, { tf }) => {
      const [B, T, C] = y!.shape as [number, number, number];
      const { paths, scores } = decodeBatch(y!.dataSync(), len!.dataSync(), [B, T, C], a);
      return [
        ...paths.map((p) => tf.tensor(Int32Array.from(p), [B, T], 'int32')),
        tf.tensor(Float32Array.from(scores), [B, a.top_paths], 'float32'),
      ];
    },
  },
  // host-side, as the decoders: the width is the longest decoding (ctcTrimOp)
  ctc_trim: ([p], _, { tf }) => {
    const [B, T] = p!.shape as [number, number];
    const { data, width } = trimDecoded(p!.dataSync(), B, T);
    return tf.tensor(Int32Array.from(data), [B, width], 'int32');
  },
  ctc_label_dense_to_sparse: {
    tuple: ([labels, lens], _, { tf }) => {
      const [B, L] = labels!.shape as [number, number];
      const data = labels!.dataSync();
      const n = lens!.dataSync();
      if (n.length !== B) throw new InferError(`label_lengths has ${n.length} entries for ${B} samples`, 'value');
      const idx: number[] = [];
      const vals: number[] = [];
      for (let b = 0; b < B; b++) {
        if (!(n[b]! >= 0 && n[b]! <= L))
          throw new InferError(`label_lengths[${b}] = ${n[b]} is outside [0, ${L}]`, 'value');
        for (let j = 0; j < n[b]!; j++) {
          idx.push(b, j);
          vals.push(data[b * L + j]!);
        }
      }
      return [
        tf.tensor(idx, [vals.length, 2], 'int32'),
        tf.tensor(vals, [vals.length], labels!.dtype),
        tf.tensor([B, L], [2], 'int32'),
      ];
    },
  },
};
