// A Scan step in the driver (cpu/driver.ts): run the body's program on views of each sequence's
// slice, the current states and the constants, writing its outputs into their slots of the
// stacked items; states swap two buffers (or, when stacked whole, live in the stack; or, when
// the step updates them in place, stay in one). The loop is the same for the cpu module and an
// exported module; how the body is called is the binding's.
import { exprOrder } from '../kernel/expr.js';
import { stepBuffers, type ScanStep, type ValueRef } from '../kernel/ir.js';
import { readsOnlyAtStore } from '../transform/plan.js';
import { commentText } from './js.js';
import { sizeOf } from '../../ir/ndarray.js';

/**
 * States the step updates in place (a gradient's accumulator, s + x_t^T g_t): its new value is
 * stored by one kernel that reads the state only at the element it stores, and no other kernel
 * of the step reads the state; then the step's input and output for it are one buffer.
 */
export function inPlaceStates(s: ScanStep): boolean[] {
  const p = s.body;
  const nOut = s.outStep.length;
  return s.inits.map((_, j) => {
    if (s.stateItems[j]!.keep === 'all') return false;
    const input = p.buffers.find((b) => b.role === 'input' && b.slot === s.seqs.length + j);
    const t = p.targets[nOut + j]!;
    if (input === undefined || t.copy || t.offset !== 0 || p.buffers[t.buf]!.role !== 'target') return false;
    if (p.targets.some((u, k) => k !== nOut + j && u.buf === t.buf)) return false;
    let writers = 0;
    for (const st of p.steps) {
      const io = stepBuffers(st);
      const reads = io.reads.includes(input.id);
      if (io.writes.includes(t.buf)) {
        writers++;
        if (!reads) continue;
        if (st.kind === 'loop' && readsOnlyAtStore(st, input.id, t.buf)) continue;
        if (st.kind === 'matmul' && st.out.buf === t.buf && st.out.dyn === undefined && st.out.accumulate !== true) {
          const inOperands = new Set<number>();
          for (const e of exprOrder([st.a, st.b])) if (e.t === 'load') inOperands.add(e.buf);
          const epilogue = exprOrder([st.out.value]);
          if (
            !inOperands.has(input.id) &&
            !epilogue.some((e) => e.t === 'reduce') &&
            epilogue.every(
              (e) => e.t !== 'load' || e.buf !== input.id || (e.index.key === st.out.index.key && e.dyn === undefined),
            )
          )
            continue;
        }
        return false;
      }
      if (reads) return false;
    }
    return writers === 1;
  });
}

/** An argument of a Scan's step: its expression, and whether it is the same at every step. */
export interface ScanArg {
  readonly expr: string;
  readonly fixed: boolean;
}

/**
 * The loop of a Scan step in the driver: no copies per step (views in, views out, state buffers
 * swapped). `body` binds the call of the step's program with these arguments (the sequences'
 * slices, the states, the constants; the outputs, the new states): lines before the loop, and
 * the call in it.
 */
export function renderScanLoop(
  s: ScanStep,
  k: number,
  view: (v: ValueRef) => string,
  name: (id: number) => string,
  body: (ins: readonly ScanArg[], outs: readonly ScanArg[]) => { readonly setup: string[]; readonly call: string[] },
): string[] {
  const size = (v: { shape: readonly number[] }) => sizeOf(v.shape);
  const whole = (buf: number, like: ValueRef) => view({ buf, offset: 0, shape: like.shape, dtype: like.dtype });
  const T = s.steps;
  const nOut = s.outStep.length;
  const outShapes = s.body.targets.slice(0, nOut);
  const slice = (buf: string, at: string, n: number) => `${buf}.subarray(${at} * ${n}, ${at} * ${n} + ${n})`;
  // A state stacked whole is written by the step straight into its slot of the stack, and read
  // from there at the next step; a state updated in place (inPlaceStates) stays in one buffer;
  // other states swap two buffers.
  const stacked = (j: number) => s.stateItems[j]!.keep === 'all';
  const inPlace = inPlaceStates(s);
  const c = (j: number) => `c${k}_${j}`;
  const n = (j: number) => (inPlace[j] ? c(j) : `n${k}_${j}`);
  // The step reads its slice of each sequence in place, and writes each output stacked whole
  // into its slot of the stack (the last step's, for an output kept 'last').
  const ins: ScanArg[] = [
    ...s.seqs.map((v) => {
      const m = size(v) / T;
      return { expr: `${name(v.buf)}.subarray(${v.offset} + t * ${m}, ${v.offset + m} + t * ${m})`, fixed: false };
    }),
    ...s.inits.map((_, j) => ({ expr: c(j), fixed: false })),
    ...s.consts.map((v) => ({ expr: view(v), fixed: true })),
  ];
  const outs: ScanArg[] = [
    ...s.outItems.map((it, o) => {
      const step = () => whole(s.outStep[o]!, outShapes[o]!);
      if (it.keep === 'all') return { expr: slice(name(it.buf), 'k', size(outShapes[o]!)), fixed: false };
      if (it.keep === 'last') return { expr: `k === ${T - 1} ? ${name(it.buf)} : ${step()}`, fixed: false };
      return { expr: step(), fixed: true };
    }),
    ...s.inits.map((_, j) => ({ expr: n(j), fixed: false })),
  ];
  const bound = body(ins, outs);
  const L: string[] = [`{ // ${commentText(s.label)}`, ...bound.setup.map((l) => `  ${l}`)];
  s.inits.forEach((v, j) => {
    const first = whole(s.stateA[j]!, v);
    L.push(`  rt.copy(${first}, 0, ${name(v.buf)}, ${v.offset}, ${size(v)});`);
    L.push(
      stacked(j) || inPlace[j]
        ? `  let ${c(j)} = ${first};`
        : `  let ${c(j)} = ${first}, ${n(j)} = ${whole(s.stateB[j]!, v)};`,
    );
  });
  L.push(`  for (let k = 0; k < ${T}; k++) {`);
  if (s.seqs.length > 0) L.push(`    const t = ${s.backwards ? `${T - 1} - k` : 'k'};`);
  s.inits.forEach((v, j) => {
    if (stacked(j)) L.push(`    const ${n(j)} = ${slice(name(s.stateItems[j]!.buf), 'k', size(v))};`);
  });
  L.push(...bound.call.map((l) => `    ${l}`));
  s.stateItems.forEach((it, j) => {
    if (it.keep === 'last')
      L.push(`    if (k === ${T - 1}) rt.copy(${name(it.buf)}, 0, ${n(j)}, 0, ${size(s.inits[j]!)});`);
  });
  s.inits.forEach((_, j) => {
    if (stacked(j)) L.push(`    ${c(j)} = ${n(j)};`);
    else if (!inPlace[j]) L.push(`    { const w = ${c(j)}; ${c(j)} = ${n(j)}; ${n(j)} = w; }`);
  });
  L.push('  }');
  s.finalItems.forEach((b, j) => L.push(`  rt.copy(${name(b)}, 0, ${c(j)}, 0, ${size(s.inits[j]!)});`));
  L.push('}');
  return L;
}
