// Shared pieces of the ONNX translations.
import type { DType } from '../../../ir/dtype.js';
import { isFloat } from '../../../ir/dtype.js';
import type { GraphBuilder } from '../builder.js';
import type { Ctx } from './types.js';

export function castAll(b: GraphBuilder, ins: readonly string[], d: DType): string[] {
  return ins.map((x) => b.cast(x, d));
}

/** The result cast to the node's dtype (a no-op when it is computed in that dtype). */
export function fit(c: Ctx, x: string): string {
  return toDType(c.b, x, c.out.dtype);
}

/**
 * Any value to `d` with theanine's conversion rules (coerce): floats to integers truncate, and
 * NaN and the infinities become 0; anything to bool is "nonzero and not NaN".
 */
export function toDType(b: GraphBuilder, x: string, d: DType): string {
  const from = b.val(x).dtype;
  if (from === d) return x;
  if (d === 'bool') {
    const zero = b.scalar(0, from);
    const nz = b.op(
      'Not',
      [b.op('Equal', [x, zero], {}, { dtype: 'bool', shape: b.val(x).shape })],
      {},
      { dtype: 'bool', shape: b.val(x).shape },
    );
    if (!isFloat(from)) return nz;
    const nan = b.op('IsNaN', [x], {}, { dtype: 'bool', shape: b.val(x).shape });
    return b.op(
      'And',
      [nz, b.op('Not', [nan], {}, { dtype: 'bool', shape: b.val(x).shape })],
      {},
      { dtype: 'bool', shape: b.val(x).shape },
    );
  }
  if (isFloat(from) && !isFloat(d)) {
    const s = b.val(x).shape;
    const bad = b.op(
      'Or',
      [b.op('IsNaN', [x], {}, { dtype: 'bool', shape: s }), b.op('IsInf', [x], {}, { dtype: 'bool', shape: s })],
      {},
      { dtype: 'bool', shape: s },
    );
    const clean = b.op('Where', [bad, b.scalar(0, from), x], {}, { dtype: from, shape: s });
    // through a wide integer first: a float to int8 Cast saturates or is undefined, a store into int8 wraps
    const wide = d === 'int64' ? 'int64' : 'int64';
    return b.cast(b.cast(clean, wide), d);
  }
  return b.cast(x, d);
}

export function boolOut(c: Ctx): { dtype: 'bool'; shape: Ctx['out']['shape'] } {
  return { dtype: 'bool', shape: c.out.shape };
}
