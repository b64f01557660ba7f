// TensorFlow.js' wasm backend hands broadcasting binary ops to XNNPack, which takes at most 6
// dimensions; beyond that it reports an error status on stderr and leaves the output unwritten.
// Elementwise ops do not care how axes are grouped, so adjacent axes that
// every operand broadcasts the same way are merged first (the trick TensorFlow's own
// BCast helper uses), and tfjs sees at most MAX_RANK dims whatever the rank of the graph.
import { broadcastConcrete } from '../../../ir/ops/util.js';
import { formatShape } from '../../../ir/ndarray.js';
import type { TF } from '../load.js';
import type { Tensor } from '../types.js';

/** The most dims an operand of a broadcasting op reaches tfjs with (XNNPack's limit). */
export const MAX_RANK = 6;

/**
 * `f` applied to `ins` broadcast together, with the operands reshaped so that runs of adjacent
 * axes broadcast alike are one axis each; the result reshaped back to the broadcast shape.
 */
export function collapsedBroadcast(tf: TF, ins: readonly Tensor[], f: (xs: Tensor[]) => Tensor, what: string): Tensor {
  const out = broadcastConcrete(ins.map((t) => t.shape));
  if (ins.every((t) => t.shape.length <= MAX_RANK) && out.length <= MAX_RANK) return f([...ins]);
  const padded = ins.map((t) => [...new Array<number>(out.length - t.shape.length).fill(1), ...t.shape]);
  const groups: number[][] = [];
  let prev = '';
  out.forEach((d, i) => {
    if (d === 1) return; // every operand has 1 here: the axis disappears
    const key = padded.map((s) => (s[i] === 1 ? 'b' : 'f')).join('');
    if (groups.length > 0 && key === prev) groups[groups.length - 1]!.push(i);
    else groups.push([i]);
    prev = key;
  });
  if (groups.length > MAX_RANK) {
    throw new Error(
      `${what}: TensorFlow.js (wasm) broadcasts at most ${MAX_RANK} dims, and the operands ${ins.map((t) => formatShape(t.shape)).join(', ')} alternate between broadcast and full axes ${groups.length} times; use the theanine backend for this op`,
    );
  }
  const shaped = ins.map((t, k) =>
    tf.reshape(
      t,
      groups.map((g) => g.reduce((p, i) => p * padded[k]![i]!, 1)),
    ),
  );
  return tf.reshape(f(shaped), out);
}
