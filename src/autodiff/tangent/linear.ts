// Tangent rules built from the op itself. A map linear in some inputs has itself as its tangent
// (jvp of a linear map is the map, applied to the tangents); a bilinear one is the product rule.
// `viaReverse` derives a tangent rule from a gradient rule by transposing it (Theano's Rop default:
// the Lop of the Lop), for ops whose forward formula would repeat the gradient's.
import { apply } from '../../ir/build.js';
import type { Node } from '../../ir/node.js';
import { add, differentiable, mul, reduce } from '../ops.js';
import type { GradRule } from '../rules/types.js';
import { gradients } from '../grad.js';
import type { TangentRule } from './types.js';

const FN = 'autodiff.Rop';

export const zerosLike = (x: Node): Node => apply('fill_like', [x], { value: 0, dtype: x.dtype }, FN);

/** The node's op on its inputs with input `i` replaced by `t`. */
function withInput(n: Node, i: number, t: Node): Node {
  return apply(
    n.op,
    n.inputs.map((x, k) => (k === i ? t : x)),
    n.attrs,
    FN,
  );
}

/** Linear in the inputs `idx` (all inputs when none given); other inputs are read as they are (indices, shapes). */
export function linearIn(...idx: number[]): TangentRule {
  return (n, ts) => {
    const which = idx.length === 0 ? n.inputs.map((_, i) => i) : idx;
    if (which.every((i) => ts[i] === null || ts[i] === undefined)) return null;
    const ins = n.inputs.map((x, k) => (which.includes(k) ? (ts[k] ?? zerosLike(x)) : x));
    return apply(n.op, ins, n.attrs, FN);
  };
}

/** Linear in each of inputs i and j separately (a product): op(ti, y) + op(x, tj). */
export function bilinear(i: number, j: number): TangentRule {
  return (n, ts) => {
    const terms = [i, j].flatMap((k) => (ts[k] ? [withInput(n, k, ts[k]!)] : []));
    return terms.length === 0 ? null : terms.reduce((a, b) => add(a, b));
  };
}

/** The input's own tangent (ops whose value is their input's). */
export const passThrough: TangentRule = (_, ts) => ts[0] ?? null;

/**
 * The tangent as the transpose of the gradient rule: the rule's cotangents are linear in the
 * output cotangent u, so sum_i <vjp_i(u), t_i> = <u, jvp(t)>, and jvp(t) is that sum's gradient
 * with respect to u (evaluated anywhere: u = 0 of the output's shape).
 */
export function viaReverse(rule: GradRule): TangentRule {
  const derived: TangentRule = (n, ts) => {
    if (!differentiable(n)) return null;
    const u = zerosLike(n);
    const cts = rule(n, u);
    const terms = n.inputs.flatMap((x, i) => {
      const c = cts[i];
      const t = ts[i];
      if (c === null || c === undefined || t === null || t === undefined || !differentiable(x)) return [];
      return [
        reduce(
          'sum',
          mul(c, t),
          x.shape.map((_, k) => k),
          false,
        ),
      ];
    });
    if (terms.length === 0) return null;
    return gradients(
      terms.reduce((a, b) => add(a, b)),
      [u],
      FN,
    )[0]!;
  };
  fromGradient.add(derived);
  return derived;
}

const fromGradient = new WeakSet<TangentRule>();

/** Whether a tangent rule was derived from a gradient rule by viaReverse. */
export function isFromGradient(r: unknown): boolean {
  return typeof r === 'function' && fromGradient.has(r as TangentRule);
}
