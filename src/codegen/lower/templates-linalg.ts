// The template of batch_dot (src/ir/ops/linalg.ts): a matmul batched over axis 0, with Keras'
// axes rules for which axes are summed.
import type { AttrsOf } from '../../ir/registry.js';
import { unravel, type IExpr } from '../kernel/index-expr.js';
import type { MatmulTemplate } from './templates.js';

/** A batch_dot operand's coordinates: batch `bb`, the summed axis at `t`, the other axes unravelled from `flat`. */
function batchOperand(shape: readonly number[], axis: number, bb: IExpr, flat: IExpr, t: IExpr): IExpr[] {
  const rest = unravel(
    flat,
    shape.filter((_, k) => k !== 0 && k !== axis),
  );
  let j = 0;
  return shape.map((_, k) => (k === 0 ? bb : k === axis ? t : rest[j++]!));
}

/** out[b, i..., j...] = sum_k x[b, i... with k at axes[0]] * y[b, j... with k at axes[1]]. */
const batchDotT: MatmulTemplate<AttrsOf<'batch_dot'>> = {
  kind: 'matmul',
  dims(c) {
    const [xs, ys] = c.inShapes as [number[], number[]];
    const [ax, ay] = c.attrs.axes;
    const rest = (s: readonly number[], k: number) => s.filter((_, i) => i !== 0 && i !== k).reduce((p, d) => p * d, 1);
    return { batch: xs[0]!, m: rest(xs, ax), n: rest(ys, ay), k: xs[ax]! };
  },
  a: (bb, i, t, c) => batchOperand(c.inShapes[0]!, c.attrs.axes[0], bb, i, t),
  b: (bb, t, jj, c) => batchOperand(c.inShapes[1]!, c.attrs.axes[1], bb, jj, t),
  out(bb, i, jj, c) {
    const [xs, ys] = c.inShapes as [number[], number[]];
    const [ax, ay] = c.attrs.axes;
    return [
      bb,
      ...unravel(
        i,
        xs.filter((_, k) => k !== 0 && k !== ax),
      ),
      ...unravel(
        jj,
        ys.filter((_, k) => k !== 0 && k !== ay),
      ),
    ];
  },
};

export const linalgTemplates = { batch_dot: batchDotT } as const;
