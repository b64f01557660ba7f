// The order of a JavaScript loop kernel's output loops, a schedule choice of the autotuner
// (src/runtime/tune.ts): which output dimension is walked innermost decides which operands are
// read or written contiguously (a transpose reads along one and writes along the other). The
// order is only free where it cannot change a value: every stored element is written once, by one
// store, and no buffer the kernel writes is read by it, so each element's value (its reductions
// included, whose own loops keep their order) is computed the same way whatever the order of
// the loops around it. Halide's `reorder` and TVM's loop-order knob are the anchors; tinygrad's
// BEAM reorders by its axis swaps the same way, on kernels where that is legal.
import type { TypedArray } from '../../ir/dtype.js';
import { exprOrder, type ScalarFn } from '../kernel/expr.js';
import type { IExpr, Var } from '../kernel/index-expr.js';
import type { BufferDecl, LoopKernel } from '../kernel/ir.js';
import { storageClass } from '../transform/plan.js';
import { jsLoop, renderLoopKernel, type KernelSource } from './loop.js';
import { CTOR, runtimeHelpers, type KernelFn } from './runtime.js';

/** Most output loops whose every order is a candidate; past it, each loop moved innermost and the reversed order. */
const ALL_ORDERS_UP_TO = 4;

/** Whether `x` takes a different value at every point of `vars` (each var a plain term, coefficients of a mixed radix). */
function injective(x: IExpr, vars: readonly Var[]): boolean {
  if (x.terms.some(([a]) => a.kind !== 'var')) return false;
  const walk = vars
    .filter((v) => v.size > 1)
    .map((v) => ({ k: Math.abs(x.coef(v)), n: v.size }))
    .sort((a, b) => a.k - b.k);
  let reach = 0; // the largest distance the inner terms can span
  for (const { k, n } of walk) {
    if (k <= reach) return false;
    reach += k * (n - 1);
  }
  return true;
}

/**
 * Whether the output loops of `k` may run in any order with the same results: two loops or more,
 * each store writing a different element at every iteration (no scatter, no accumulation), no two
 * stores into one buffer, and no buffer both written and read by the kernel.
 */
export function reorderable(k: LoopKernel): boolean {
  if (k.vars.filter((v) => v.size > 1).length < 2 || k.pool !== undefined || k.poolAux === true) return false;
  const written = new Set<number>();
  for (const s of k.stores) {
    if (s.accumulate === true || s.dyn !== undefined || written.has(s.buf) || !injective(s.index, k.vars)) return false;
    written.add(s.buf);
  }
  return !loadedBuffers(k).some((b) => written.has(b));
}

function loadedBuffers(k: LoopKernel): number[] {
  const bufs = new Set<number>();
  for (const e of exprOrder([
    ...k.stores.map((s) => s.value),
    ...k.stores.flatMap((s) => (s.dyn !== undefined ? [s.dyn.row] : [])),
  ]))
    if (e.t === 'load') bufs.add(e.buf);
  return [...bufs];
}

/** The identity order of n loops. */
export const identityOrder = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/** The candidate orders of n output loops (positions in the kernel's own order, outermost first): every permutation up to ALL_ORDERS_UP_TO loops, else each loop moved innermost and the reversed order. */
export function loopOrders(n: number): number[][] {
  if (n <= ALL_ORDERS_UP_TO) {
    const out: number[][] = [];
    const perm = (pre: number[], rest: number[]) => {
      if (rest.length === 0) out.push(pre);
      rest.forEach((x, i) => perm([...pre, x], [...rest.slice(0, i), ...rest.slice(i + 1)]));
    };
    perm([], identityOrder(n));
    return out;
  }
  const id = identityOrder(n);
  return [
    id,
    ...id.map((i) => [...id.filter((j) => j !== i), i]).filter((o) => o.join() !== id.join()),
    [...id].reverse(),
  ];
}

/** Whether `order` is a permutation of the positions of n loops. */
export const isOrder = (order: readonly number[], n: number): boolean =>
  order.length === n && [...order].sort((a, b) => a - b).every((x, i) => x === i);

/** `k` with its output loops in `order` (outermost first); the stores and values are the same. */
export function reorderLoops(k: LoopKernel, order: readonly number[]): LoopKernel {
  if (!isOrder(order, k.vars.length))
    throw new Error(`internal: ${JSON.stringify(order)} is not an order of ${k.vars.length} loops`);
  return { ...k, vars: order.map((i) => k.vars[i]!) };
}

/** A loop kernel's JavaScript source under `order`, its buffers named b<id> and its scalar functions f<i> (the order of `fns`). */
export function loopSource(
  k: LoopKernel,
  order: readonly number[] | undefined,
): { src: KernelSource; fns: ScalarFn[] } {
  const fns: ScalarFn[] = [];
  const js = jsLoop(k, order);
  const src = renderLoopKernel(
    k,
    'k',
    {
      bufName: (id) => `b${id}`,
      fnName: (fn) => {
        let i = fns.indexOf(fn);
        if (i < 0) i = fns.push(fn) - 1;
        return `f${i}`;
      },
    },
    js,
  );
  return { src, fns };
}

/** Most elements of a loop kernel one timed run covers (a longer kernel is timed over its first outer rows, its time scaled up). */
export const LOOP_TIMED_ELEMENTS = 1 << 18;

/**
 * A runner of `k` under `order` on buffers of the program's sizes (`buffers`): inputs random in
 * [0.5, 1.5) where float, 0 where integer (a gather's row then stays in range); the kernel's
 * outermost loop from row 0, as many rows as cover about LOOP_TIMED_ELEMENTS (all of them in a
 * shorter kernel), and the share of the kernel's elements that is (its time over the share: the whole kernel's).
 */
export function loopRunner(
  k: LoopKernel,
  buffers: readonly BufferDecl[],
): (order: readonly number[]) => { readonly run: () => void; readonly share: number } {
  const arrays = new Map<number, TypedArray>();
  const arrayOf = (id: number): TypedArray => {
    let a = arrays.get(id);
    if (a === undefined) {
      const d = buffers[id]!;
      const cls = storageClass(d.dtype);
      a = CTOR[cls](d.size);
      if (cls === 'f32' || cls === 'f64') for (let i = 0; i < a.length; i++) a[i] = 0.5 + Math.random();
      arrays.set(id, a);
    }
    return a;
  };
  const elements = k.vars.reduce((p, v) => p * v.size, 1);
  // the buffers made now, so that the first timing (which sets how much of the budget a timing takes) does not pay for them
  for (const id of loopSource(k, undefined).src.buffers) arrayOf(id);
  return (order) => {
    const { src, fns } = loopSource(k, order);
    const fn = new Function('rt', ...fns.map((_, i) => `f${i}`), `"use strict";\nreturn ${src.source};`)(
      runtimeHelpers,
      ...fns,
    ) as KernelFn;
    const args = src.buffers.map(arrayOf);
    const rows = src.rows;
    if (rows === undefined) return { run: () => fn(...args), share: 1 };
    const r = Math.min(rows, Math.max(1, Math.ceil((rows * LOOP_TIMED_ELEMENTS) / elements)));
    return { run: () => fn(...args, 0, r), share: r / rows };
  };
}
