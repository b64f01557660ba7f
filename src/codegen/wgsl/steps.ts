// The steps form of a WGSL loop kernel: a kernel whose elements read what other elements of the
// same kernel stored (a recursion along an axis: CTC's alpha and beta, greedy decoding's running
// count), or accumulate into rows chosen by data (CTC's gradient), runs as one workgroup that
// walks one of its loops, the step axis, in order, and computes every element of a step in
// parallel, with a storage barrier between steps (WGSL's storageBarrier orders the workgroup's
// storage writes before its later reads). One workgroup and one dispatch: no read-back and no
// dispatch per step (TensorFlow's ctc_loss_op computes a time step's positions in parallel and
// carries the recursion over time, the anchor here).
//
// The cpu runs such a kernel's loops in row-major order; the steps form computes the same values
// only where every read of a buffer the kernel writes sees the same stores: strategy.ts calls
// `planSteps`, which enumerates the kernel's elements (its index arithmetic is pure loop
// arithmetic, so the sizes decide it) and checks that no element reads a value stored in its own
// step, and that each value read was stored before it in row-major order exactly when it was
// stored in an earlier step. An accumulation into rows chosen by data is allowed where each
// element's row lies in its own window of the destination (the rows of a tensor axis whose index
// the data picks: the row is clamped to the window on the device, so windows never meet).
import { exprOrder, type Expr } from '../kernel/expr.js';
import type { IExpr, Var } from '../kernel/index-expr.js';
import type { LoopKernel, Store } from '../kernel/ir.js';
import type { Schedule } from '../transform/schedule.js';
import { roundAs, storeAs } from './scalar.js';
import { Writer, writeScopes, assemble, iexprCode, type BufferInfo, type WgslKernel } from './writer.js';

/** Invocations of the one workgroup of a steps kernel (WebGPU's default maxComputeInvocationsPerWorkgroup). */
export const STEPS_WG = 256;
/** Index evaluations planSteps may spend proving a kernel's order (beyond: the step runs on the host). */
const MAX_WORK = 1 << 22;

/** How a kernel runs in the steps form. */
export interface StepsPlan {
  /** The kernel's loop (position in its vars) walked in order. */
  readonly axis: number;
  /** Each accumulation into rows chosen by data, with the rows of its window. */
  readonly windows: ReadonlyMap<Store, number>;
}

/** The steps plan of `k`, or the reason it has none (`fail` makes the error). */
export function planSteps(k: LoopKernel, sizeOf: (buf: number) => number, fail: (why: string) => Error): StepsPlan {
  const written = new Set(k.stores.map((st) => st.buf));
  for (const st of k.stores) {
    if (st.dyn !== undefined && st.accumulate !== true) throw fail('stores into rows chosen by data');
    if (st.dyn !== undefined && k.stores.some((o) => o !== st && o.buf === st.buf))
      throw fail('stores into rows chosen by data beside other stores to the buffer');
  }
  // The reads of written buffers (an accumulation's own read of its element is not one).
  const reads: (Expr & { t: 'load' })[] = [];
  for (const e of exprOrder(k.stores.flatMap((st) => (st.dyn !== undefined ? [st.value, st.dyn.row] : [st.value])))) {
    if (e.t !== 'load' || !written.has(e.buf)) continue;
    if (e.dyn !== undefined) throw fail('reads rows chosen by data of a buffer it writes');
    if (k.stores.some((st) => st.buf === e.buf && st.dyn !== undefined))
      throw fail('reads a buffer it accumulates into rows chosen by data');
    reads.push(e);
  }
  const total = k.vars.reduce((p, v) => p * v.size, 1);
  const extra = reads.map((e) => varsOf(e.index).filter((v) => !k.vars.some((o) => o.id === v.id)));
  const work = total * (k.stores.length + reads.reduce((s, _, i) => s + extra[i]!.reduce((p, v) => p * v.size, 1), 0));
  if (work > MAX_WORK)
    throw fail(`a recursion along an axis of ${total} elements (beyond what is checked for the steps form)`);
  let best: StepsPlan | undefined;
  let bestWidth = 0;
  const whyNot: string[] = [];
  k.vars.forEach((v, axis) => {
    if (v.size === 1 && k.vars.length > 1) return;
    const why = checkAxis(k, axis, reads, extra, sizeOf);
    if (typeof why === 'string') {
      whyNot.push(why);
      return;
    }
    const width = total / v.size;
    if (best === undefined || width > bestWidth) {
      best = { axis, windows: why };
      bestWidth = width;
    }
  });
  if (best === undefined) throw fail(`a running value along an axis that no loop orders (${whyNot[0] ?? 'no loops'})`);
  return best;
}

/** The variables an index expression mentions. */
function varsOf(x: IExpr, into: Map<number, Var> = new Map()): Var[] {
  for (const [a] of x.terms) {
    if (a.kind === 'var') into.set(a.v.id, a.v);
    else varsOf(a.x, into);
  }
  return [...into.values()];
}

/** `x` at the loop values `env` (by variable id). */
function evalIndex(x: IExpr, env: ReadonlyMap<number, number>): number {
  let s = x.c;
  for (const [a, k] of x.terms) {
    let v: number;
    if (a.kind === 'var') v = env.get(a.v.id)!;
    else {
      const y = evalIndex(a.x, env);
      v =
        a.kind === 'div'
          ? Math.floor(y / a.d)
          : a.kind === 'mod'
            ? ((y % a.d) + a.d) % a.d
            : Math.min(Math.max(y, a.lo), a.hi);
    }
    s += k * v;
  }
  return s;
}

/** Calls `f(rank, env)` for every element of `vars` in row-major order. */
function eachElement(
  vars: readonly Var[],
  f: (rank: number, env: Map<number, number>) => void,
  env = new Map<number, number>(),
): void {
  const total = vars.reduce((p, v) => p * v.size, 1);
  for (let r = 0; r < total; r++) {
    let rest = r;
    for (let i = vars.length - 1; i >= 0; i--) {
      const v = vars[i]!;
      env.set(v.id, rest % v.size);
      rest = Math.floor(rest / v.size);
    }
    f(r, env);
  }
}

/** Whether walking loop `axis` in order keeps `k`'s row-major meaning: the windows of its data-chosen rows, or why not. */
function checkAxis(
  k: LoopKernel,
  axis: number,
  reads: readonly (Expr & { t: 'load' })[],
  extra: readonly Var[][],
  sizeOf: (buf: number) => number,
): Map<Store, number> | string {
  const av = k.vars[axis]!;
  const others = k.vars.filter((_, i) => i !== axis);
  // Who stored each element of each written buffer: rank and step, -1 where none did.
  const rankOf = new Map<number, Int32Array>();
  const stepOf = new Map<number, Int32Array>();
  const windows = new Map<Store, number>();
  for (const st of k.stores) {
    if (st.dyn !== undefined || rankOf.has(st.buf)) continue;
    const n = sizeOf(st.buf);
    rankOf.set(st.buf, new Int32Array(n).fill(-1));
    stepOf.set(st.buf, new Int32Array(n).fill(-1));
  }
  let bad: string | undefined;
  // Stores, in row-major order: the same element stored twice needs a later step the second time.
  eachElement(k.vars, (r, env) => {
    if (bad !== undefined) return;
    const step = env.get(av.id)!;
    for (const st of k.stores) {
      if (st.dyn !== undefined) continue;
      const i = evalIndex(st.index, env);
      const ranks = rankOf.get(st.buf)!;
      const steps = stepOf.get(st.buf)!;
      if (i < 0 || i >= ranks.length) {
        bad = `stores outside its buffer (element ${i})`;
        return;
      }
      if (ranks[i]! >= 0 && steps[i]! >= step) {
        bad = `loop ${axis} stores an element twice in one step or out of order`;
        return;
      }
      ranks[i] = r;
      steps[i] = step;
    }
  });
  if (bad !== undefined) return bad;
  // Reads: a stored element is read after its step exactly when row-major order reads it after its store.
  for (const [j, e] of reads.entries()) {
    const ranks = rankOf.get(e.buf)!;
    const steps = stepOf.get(e.buf)!;
    eachElement(k.vars, (r, env) => {
      if (bad !== undefined) return;
      const step = env.get(av.id)!;
      eachElement(
        extra[j]!,
        () => {
          if (bad !== undefined) return;
          const i = evalIndex(e.index, env);
          if (i < 0 || i >= ranks.length || ranks[i]! < 0) return; // never stored here: the value before the kernel, on both
          if (steps[i] === step) bad = `loop ${axis} reads a value stored in the same step`;
          else if (ranks[i]! < r !== steps[i]! < step)
            bad = `loop ${axis} reads a value in another order than row-major`;
        },
        env,
      );
    });
    if (bad !== undefined) return bad;
  }
  // Accumulations into rows chosen by data: each element's window of the destination its own.
  for (const st of k.stores) {
    if (st.dyn === undefined) continue;
    const lo = new Map<number, number>();
    const hi = new Map<number, number>();
    eachElement(k.vars, (_r, env) => {
      let p = 0;
      for (const v of others) p = p * v.size + env.get(v.id)!;
      const i = evalIndex(st.index, env);
      lo.set(p, Math.min(lo.get(p) ?? i, i));
      hi.set(p, Math.max(hi.get(p) ?? i, i));
    });
    // The windows tile the destination as rows of one axis: equal spacing, each window's row range that spacing.
    const starts = [...lo.keys()].map((p) => [lo.get(p)!, hi.get(p)!] as const).sort((a, b) => a[0] - b[0]);
    if (starts.some(([l, h]) => l !== h)) return `loop ${axis} moves an accumulation's row within the step`;
    const last = starts[starts.length - 1]![0];
    const spacing = starts.length > 1 ? starts[1]![0] - starts[0]![0] : sizeOf(st.buf) - last;
    if (starts.some(([l], i) => i > 0 && l - starts[i - 1]![0] !== spacing))
      return `loop ${axis}'s accumulations are not rows of one axis`;
    const rows = Math.floor(spacing / st.dyn.stride);
    if (rows < 1 || rows * st.dyn.stride !== spacing || last + spacing > sizeOf(st.buf) || starts[0]![0] < 0)
      return `loop ${axis}'s accumulations are not rows of one axis`;
    windows.set(st, rows);
  }
  return windows;
}

/**
 * A loop kernel in the steps form: one workgroup of STEPS_WG invocations; for each value of the
 * step loop in order, the invocations share the step's elements (row-major over the other loops),
 * then a storage barrier.
 */
export function renderSteps(
  k: LoopKernel,
  s: Schedule,
  indexNodes: ReadonlySet<Expr>,
  plan: StepsPlan,
  bufs: BufferInfo,
  binds: number[],
  written: number[],
): WgslKernel {
  const w = new Writer(
    bufs,
    (e) => s.loadIndex.get(e),
    (e) => indexNodes.has(e),
  );
  const av = k.vars[plan.axis]!;
  const others = k.vars.filter((_, i) => i !== plan.axis);
  const width = others.reduce((p, v) => p * v.size, 1);
  const lines: string[] = [`let i${av.id} = step;`];
  let stride = width;
  for (const v of others) {
    stride /= v.size;
    lines.push(v.size === 1 ? `let i${v.id} = 0i;` : `let i${v.id} = (i / ${stride}i) % ${v.size}i;`);
  }
  writeScopes(w, s, new Set(k.vars.map((v) => v.id)), lines);
  for (const st of s.stores) {
    const store = st.store;
    const ty = bufs.storage(store.buf)!;
    const rows = plan.windows.get(store);
    const index =
      store.dyn !== undefined && rows !== undefined
        ? `(${iexprCode(store.index)} + clamp(${w.code(store.dyn.row, 'i32')}, 0i, ${rows - 1}i) * ${store.dyn.stride}i)`
        : w.code(st.index, 'i32');
    const v = w.code(st.value, 'f32');
    const value =
      store.accumulate === true ? `${ty === 'f32' ? `b${store.buf}[j]` : `f32(b${store.buf}[j])`} + ${v}` : v;
    const rounded = roundAs(store.dtype, value);
    lines.push(`{ let j = ${index}; b${store.buf}[j] = ${storeAs(ty, rounded)}; }`);
  }
  const body = [
    `@compute @workgroup_size(${STEPS_WG})`,
    'fn main(@builtin(local_invocation_index) lid: u32) {',
    `  for (var step = 0i; step < ${av.size}i; step++) {`,
    `    for (var i = i32(lid); i < ${width}i; i += ${STEPS_WG}i) {`,
    ...lines.map((l) => `      ${l}`),
    '    }',
    '    storageBarrier();',
    '  }',
    '}',
  ];
  return assemble(k.label, body, binds, written, bufs, [1, 1, 1]);
}
