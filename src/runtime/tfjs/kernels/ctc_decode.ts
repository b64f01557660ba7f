// CTC decoding on tfjs (src/ir/ops/ctc-decode.ts). TensorFlow itself runs its CTC decoders on
// the CPU whatever the device, and TensorFlow.js has none: the inputs are read back to the host
// and the same greedy and beam searches (pure functions of numbers, not NDArray code) run there.
import { InferError } from '../../../ir/errors.js';
import { beamDecode, greedyDecode, type ctcDecodeOps } from '../../../ir/ops/ctc-decode.js';
import type { TfTableFor } from '../types.js';

export const ctcDecodeKernels: TfTableFor<keyof typeof ctcDecodeOps> = {
  ctc_decode: {
    tuple: ([y, len], a, { tf }) => {
      const [B, T, C] = y!.shape as [number, number, number];
      const data = y!.dataSync();
      const lens = len!.dataSync();
      if (lens.length !== B) throw new InferError(`input_length has ${lens.length} entries for ${B} samples`, 'value');
      const paths = Array.from({ length: a.top_paths }, () => new Int32Array(B * T).fill(-1));
      const scores = new Float32Array(B * a.top_paths);
      for (let b = 0; b < B; b++) {
        const L = lens[b]!;
        if (!(L >= 0 && L <= T)) throw new InferError(`input_length[${b}] = ${L} is outside [0, ${T}] (the time axis of y_pred)`, 'value');
        const row = (t: number, c: number): number => data[(b * T + t) * C + c]!;
        const found = a.greedy
          ? [((r) => ({ path: r.path, logp: r.score }))(greedyDecode(row, L, C, true))]
          : beamDecode(row, L, C, a.beam_width, a.top_paths, a.merge_repeated);
        found.forEach((f, p) => {
          f.path.forEach((lab, i) => { paths[p]![b * T + i] = lab; });
          scores[b * a.top_paths + p] = f.logp;
        });
      }
      return [...paths.map((p) => tf.tensor(p, [B, T], 'int32')), tf.tensor(scores, [B, a.top_paths], 'float32')];
    },
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
        if (!(n[b]! >= 0 && n[b]! <= L)) throw new InferError(`label_lengths[${b}] = ${n[b]} is outside [0, ${L}]`, 'value');
        for (let j = 0; j < n[b]!; j++) { idx.push(b, j); vals.push(data[b * L + j]!); }
      }
      return [tf.tensor(idx, [vals.length, 2], 'int32'), tf.tensor(vals, [vals.length], labels!.dtype), tf.tensor([B, L], [2], 'int32')];
    },
  },
};
