// Sizes as Keras takes them: numbers, scalar integer tensors (`K.shape(x)[1]`,
// spelled `K.gather(K.shape(x), 1)` or `K.shape(x).get(1)`, and their arithmetic), or a 1-D
// integer tensor of known length (`K.shape(x)`). A size list of numbers, or of tensors whose
// values the static shapes already fix, is static; anything else becomes one int32 vector that
// a sized op (src/ir/ops/sized.ts) reads, resolved per specialisation.
import { apply } from '../ir/build.js';
import { isInt } from '../ir/dtype.js';
import { ValueError } from '../ir/errors.js';
import { NDArray, describe, formatShape } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import type { Dim } from '../ir/types.js';
import { checkInt, constantNode, isTensor } from './args.js';
import { isOp } from '../ir/registry.js';

/** One size: a number or a scalar integer tensor. */
export type Size = number | Node;
/** A list of sizes, or a 1-D integer tensor of known length such as `K.shape(x)`. */
export type SizeList = readonly Size[] | Node;

/** The value of a scalar int tensor when the static shapes fix it (shape arithmetic), else null. */
export function staticInt(n: Node): number | null {
  if (n.ndim !== 0) return null;
  const v = staticInts(n);
  return v === null ? null : v[0]!;
}

const ARITH: Readonly<Record<string, (a: number, b: number) => number>> = {
  add: (a, b) => a + b,
  sub: (a, b) => a - b,
  mul: (a, b) => a * b,
  maximum: Math.max,
  minimum: Math.min,
  floordiv: (a, b) => Math.floor(a / b),
};

/** Entries of a rank-0 or rank-1 int tensor that the static shapes fix (null entries elsewhere), or null. */
export function staticEntries(n: Node): Dim[] | null {
  if (n.op === 'shape_of') return [...n.inputs[0]!.shape];
  if (isOp(n, 'constant')) return Array.from(n.attrs.value.data, Number);
  if (n.op === 'cast' && isInt(n.dtype)) return staticEntries(n.inputs[0]!);
  if (n.ndim === 0) {
    const one = scalarOf(n);
    return one === null ? null : [one];
  }
  if (n.op === 'concat') {
    const parts = n.inputs.map((i) => {
      const len = i.shape[0];
      return i.ndim === 1 && len !== null && len !== undefined
        ? (staticEntries(i) ?? new Array<Dim>(len).fill(null))
        : null;
    });
    return parts.some((p) => p === null) ? null : parts.flatMap((p) => p!);
  }
  if (n.op === 'expand_dims' && n.inputs[0]!.ndim === 0) return [scalarOf(n.inputs[0]!)];
  const f = ARITH[n.op];
  if (f !== undefined && n.inputs.length === 2 && n.ndim === 1 && n.shape[0] !== null) {
    // K.shape(x) * 2 and the like: entry by entry, a scalar operand broadcast
    const a = staticEntries(n.inputs[0]!);
    const b = staticEntries(n.inputs[1]!);
    const len = n.shape[0];
    if (a === null || b === null || len === null || len === undefined) return null;
    return Array.from({ length: len }, (_, k) => {
      const p = a.length === 1 ? a[0]! : a[k]!;
      const q = b.length === 1 ? b[0]! : b[k]!;
      return p === null || q === null ? null : f(p, q);
    });
  }
  return null;
}

function staticInts(n: Node): number[] | null {
  const e = staticEntries(n);
  return e === null || e.some((d) => d === null) ? null : (e as number[]);
}

function scalarOf(n: Node): Dim {
  if (isOp(n, 'constant')) return Number(n.attrs.value.data[0]);
  if (n.op === 'cast' && isInt(n.dtype)) return scalarOf(n.inputs[0]!);
  const pick = (vec: Node, i: number): Dim => {
    const e = staticEntries(vec);
    if (e === null) return null;
    const k = i < 0 ? i + e.length : i;
    return e[k] ?? null;
  };
  if (isOp(n, 'index')) return pick(n.inputs[0]!, n.attrs.index);
  const row = n.inputs[1];
  if (n.op === 'gather' && row !== undefined && isOp(row, 'constant') && row.ndim === 0)
    return pick(n.inputs[0]!, Number(row.attrs.value.data[0]));
  const f = ARITH[n.op];
  if (f !== undefined && n.inputs.length === 2) {
    const [a, b] = n.inputs.map(scalarOf);
    return a === null || b === null || a === undefined || b === undefined ? null : f(a, b);
  }
  return null;
}

/** A checked size list: `static` when every entry is known at build time, else an int32 vector and what is known of it. */
export type Sizes = { readonly static: number[] } | { readonly vector: Node; readonly known: Dim[] };

/**
 * Checks a size list. `min` bounds the numbers (and the statically known entries); `fixedLength`
 * requires that many entries.
 */
export function sizeList(fn: string, what: string, v: unknown, min: number, fixedLength?: number): Sizes {
  const bad = (why: string): never => {
    throw new ValueError(
      `${fn}: ${what}${why}; give numbers, scalar integer tensors (K.shape(x)[i]) or a 1-D integer tensor of known length (K.shape(x)), got ${describeSizes(v)}`,
    );
  };
  const check = (d: Dim, i: number | null) => {
    if (d !== null && (!Number.isInteger(d) || d < min))
      bad(`${i === null ? ' has' : `[${i}] is`} ${d}, not an integer >= ${min}`);
  };
  let known: Dim[];
  let vector: () => Node;
  if (isTensor(v)) {
    if (v.ndim !== 1 || !isInt(v.dtype) || v.shape[0] === null) bad(' must be a 1-D integer tensor of known length');
    known = staticEntries(v) ?? new Array<Dim>(v.shape[0]!).fill(null);
    known.forEach((d) => check(d, null));
    vector = () => (v.dtype === 'int32' ? v : apply('cast', [v], { dtype: 'int32' }, fn));
  } else {
    if (!Array.isArray(v))
      throw new ValueError(
        `${fn}: ${what} must be an array of integers (or integer scalar tensors), or a 1-D integer tensor, got ${describe(v)}`,
      );
    known = v.map((d: unknown, i) => {
      if (isTensor(d)) {
        if (d.ndim !== 0 || !isInt(d.dtype))
          bad(`[${i}] must be an integer scalar tensor, not ${d.dtype} ${formatShape(d.shape)}`);
        const k = staticInt(d);
        check(k, i);
        return k;
      }
      return checkInt(fn, d, `${what}[${i}]`, min);
    });
    vector = () => {
      const parts = (v as unknown[]).map((d, i) => {
        const k = known[i]!;
        if (k !== null || !isTensor(d)) return constantNode(new NDArray([k ?? (d as number)], [1], 'int32'));
        const s = d.dtype === 'int32' ? d : apply('cast', [d], { dtype: 'int32' }, fn);
        return apply('expand_dims', [s], { axis: 0 }, fn);
      });
      return parts.length === 1 ? parts[0]! : apply('concat', parts, { axis: 0 }, fn);
    };
  }
  if (fixedLength !== undefined && known.length !== fixedLength)
    bad(` must have ${fixedLength} entries, not ${known.length}`);
  if (known.every((d) => d !== null)) return { static: known as number[] };
  return { vector: vector(), known };
}

function describeSizes(v: unknown): string {
  if (isTensor(v)) return `the ${v.dtype} tensor ${v.name} of shape ${formatShape(v.shape)}`;
  if (Array.isArray(v))
    return `[${v.map((d: unknown) => (isTensor(d) ? `<${d.dtype} tensor ${formatShape(d.shape)}>` : describe(d))).join(', ')}]`;
  return describe(v);
}

/** One size: a number, or a scalar int tensor (static when the shapes fix it). */
export function sizeArg(fn: string, what: string, v: unknown, min: number): { static: number } | { tensor: Node } {
  if (isTensor(v)) {
    if (v.ndim !== 0 || !isInt(v.dtype))
      throw new ValueError(
        `${fn}: ${what} must be an integer or an integer scalar tensor, got ${v.dtype} ${formatShape(v.shape)}`,
      );
    const k = staticInt(v);
    if (k !== null) {
      if (k < min) throw new ValueError(`${fn}: ${what} is ${k}, not an integer >= ${min}`);
      return { static: k };
    }
    return { tensor: v.dtype === 'int32' ? v : apply('cast', [v], { dtype: 'int32' }, fn) };
  }
  return { static: checkInt(fn, v, what, min) };
}
