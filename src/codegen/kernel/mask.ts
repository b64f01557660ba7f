// Masks of kernel-IR reads: whether a clamped index read is a real element (inside the input,
// on a stride), the conditions combined, and the read replaced where they fail. The templates
// (padding, slicing adjoints, convolutions) and the pooling kernels share them.
import type { Expr, ExprBuilder } from './expr.js';
import { range, type IExpr } from './index-expr.js';

/** lo <= x < hi as a 0/1 expression; undefined when the index range implies it. */
export function within(b: ExprBuilder, x: IExpr, lo: number, hi: number): Expr | undefined {
  const [xlo, xhi] = range(x);
  const parts: Expr[] = [];
  if (xlo < lo) parts.push(b.op('ge', b.index(x), b.const(lo)));
  if (xhi >= hi) parts.push(b.op('lt', b.index(x), b.const(hi)));
  return allOf(b, parts);
}

/** The conjunction of the conditions (undefined ones always hold); undefined when none is left. */
export function allOf(b: ExprBuilder, conds: readonly (Expr | undefined)[]): Expr | undefined {
  const cs = conds.filter((x): x is Expr => x !== undefined);
  return cs.length === 0 ? undefined : cs.reduce((p, q) => b.op('and', p, q));
}

/** `value` where `cond` holds, else `other` (the read inside stays in bounds through clamped indices). */
export function masked(b: ExprBuilder, cond: Expr | undefined, value: Expr, other = 0): Expr {
  return cond === undefined ? value : b.op('select', cond, value, b.const(other));
}
