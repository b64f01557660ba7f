// vmap over graph-building functions (JAX's `vmap`): the function is traced once on per-example
// placeholders, and the graph it builds is batched op by op (walk.ts, rules/). Batched arguments
// carry the batch on axis in_axes[i]; results carry it on out_axes[j].
import { leaf } from '../../ir/build.js';
import { ValueError } from '../../ir/errors.js';
import { topoSort } from '../../ir/graph.js';
import { formatShape } from '../../ir/ndarray.js';
import { Node } from '../../ir/node.js';
import { FN, materialize, moveAxis } from './helpers.js';
import type { BatchContext } from './types.js';
import { batchGraph } from './walk.js';

/** An axis per argument (or result), or one for all; null: not batched. */
export type Axes = number | null | readonly (number | null)[];

export type Batchable = (...args: Node[]) => Node | readonly Node[];

let uid = 0;

function describe(v: unknown): string {
  if (Array.isArray(v)) return `an array of length ${v.length}`;
  return v === null
    ? 'null'
    : typeof v === 'object'
      ? (v.constructor?.name ?? 'an object')
      : `${typeof v} ${String(v)}`;
}

function axesFor(axes: Axes, count: number, what: 'in_axes' | 'out_axes', what2: string): (number | null)[] {
  if (axes === null || typeof axes === 'number') return new Array<number | null>(count).fill(axes);
  if (!Array.isArray(axes))
    throw new ValueError(`${FN}: ${what} must be an integer, null, or an array of them; got ${describe(axes)}`);
  if (axes.length !== count) {
    throw new ValueError(
      `${FN}: ${what} has ${axes.length} entries but the function ${what2} ${count}; give one axis (or null) per ${what === 'in_axes' ? 'argument' : 'result'}`,
    );
  }
  return [...axes];
}

/** A valid axis of a tensor of rank `ndim`, normalised; names the entry when not. */
function checkAxis(a: number | null, ndim: number, what: string, shape: Node['shape']): number | null {
  if (a === null) return null;
  if (!Number.isInteger(a)) throw new ValueError(`${FN}: ${what} = ${describe(a)}; an axis is an integer or null`);
  if (a < -ndim || a >= ndim) {
    throw new ValueError(
      `${FN}: ${what} = ${a} is out of range for a tensor of shape ${formatShape(shape)} (allowed: ${-ndim}..${ndim - 1}, or null)`,
    );
  }
  return a < 0 ? a + ndim : a;
}

/**
 * `vmap(fn, in_axes = 0, out_axes = 0)`: a function that builds `fn`'s graph for a batch. Each
 * argument with a non-null axis is a batch of per-example tensors along that axis; `fn` is traced
 * once on one example, then every op is batched by its rule (no loop over examples for products,
 * convolutions, Scan and the elementwise, reduction and shape ops). Arguments with a null axis and
 * tensors `fn` reads from outside are shared by all examples.
 */
export function vmap<R extends Node | readonly Node[]>(
  fn: (...args: Node[]) => R,
  in_axes: Axes = 0,
  out_axes: Axes = 0,
): (...args: Node[]) => R extends Node ? Node : Node[] {
  if (typeof fn !== 'function')
    throw new TypeError(`${FN}: fn must be a function that builds a graph from tensors, got ${describe(fn)}`);
  return (...args: Node[]) => {
    args.forEach((x, i) => {
      if (!(x instanceof Node)) throw new TypeError(`${FN}: argument ${i} must be a tensor, got ${describe(x)}`);
    });
    const inAxes = axesFor(in_axes, args.length, 'in_axes', 'was called with');
    const axes = inAxes.map((a, i) => checkAxis(a, args[i]!.ndim, `in_axes[${i}]`, args[i]!.shape));
    if (axes.every((a) => a === null))
      throw new ValueError(`${FN}: in_axes gives no batched argument (every entry is null); batch at least one`);
    const size = batchSize(args, axes);
    const subst = new Map<Node, Node>();
    const perExample = args.map((x, i) => {
      const a = axes[i]!;
      if (a === null) return x;
      const p = leaf('placeholder', {
        uid: --uid,
        name: `vmap_arg${i}`,
        dtype: x.dtype,
        shape: x.shape.filter((_, k) => k !== a),
        sparse: false,
      });
      subst.set(p, moveAxis(x, a, 0));
      return p;
    });
    const result = fn(...perExample);
    const outs: readonly unknown[] = Array.isArray(result) ? result : [result];
    outs.forEach((o, j) => {
      if (!(o instanceof Node))
        throw new TypeError(`${FN}: fn must return a tensor or an array of tensors; result ${j} is ${describe(o)}`);
    });
    const ctx: BatchContext = { fn: FN, size, ref: [...subst.values()][0]!, recurse: batchGraph };
    const vals = batchGraph(outs as Node[], subst, ctx);
    const outAxes = axesFor(out_axes, vals.length, 'out_axes', 'returned');
    const built = vals.map((v, j) => {
      const a = outAxes[j]!;
      if (a === null) {
        if (v.batched)
          throw new ValueError(`${FN}: out_axes[${j}] is null but result ${j} differs per example; give it an axis`);
        return v.value;
      }
      const ax = checkAxis(
        a,
        v.value.ndim + (v.batched ? 0 : 1),
        `out_axes[${j}]`,
        v.batched ? v.value.shape : [size, ...v.value.shape],
      )!;
      return moveAxis(materialize(v, ctx), 0, ax);
    });
    checkClosed(built, subst);
    return (Array.isArray(result) ? built : built[0]!) as R extends Node ? Node : Node[];
  };
}

/** The batch size: every batched argument's axis must agree. */
function batchSize(args: readonly Node[], axes: readonly (number | null)[]): number | null {
  let size: number | null = null;
  let from = -1;
  axes.forEach((a, i) => {
    if (a === null) return;
    const d = args[i]!.shape[a]!;
    if (d === null) return;
    if (size !== null && d !== size) {
      throw new ValueError(
        `${FN}: batched arguments have different sizes along their in_axes: argument ${from} has ${size} (axis ${axes[from]}) but argument ${i} has ${d} (axis ${a}, shape ${formatShape(args[i]!.shape)})`,
      );
    }
    if (size === null) {
      size = d;
      from = i;
    }
  });
  return size;
}

/** The batched graph must not read the per-example placeholders (a rule that did would be a bug). */
function checkClosed(outs: readonly Node[], subst: ReadonlyMap<Node, Node>): void {
  for (const n of topoSort(outs)) {
    if (subst.has(n)) throw new Error(`internal: ${FN}: the batched graph still reads the per-example input ${n.name}`);
  }
}
