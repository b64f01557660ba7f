// A Scan step in the driver: run the body's compiled program on views of each sequence's slice,
// the current states and the constants, writing its outputs into their slots of the stacked
// items; states swap two buffers (or, when stacked whole, live in the stack; or, when the step
// updates them in place, stay in one).
import { exprOrder } from '../expr.js';
import { stepBuffers, type ScanStep, type ValueRef } from '../kernel.js';
import { readsOnlyAtStore } from '../plan.js';
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
          if (!inOperands.has(input.id) && !epilogue.some((e) => e.t === 'reduce')
            && epilogue.every((e) => e.t !== 'load' || e.buf !== input.id || (e.index.key === st.out.index.key && e.dyn === undefined))) continue;
        }
        return false;
      }
      if (reads) return false;
    }
    return writers === 1;
  });
}

/** The loop of a Scan step in the driver: no copies per step (views in, views out, state buffers swapped). */
export function renderScan(s: ScanStep, k: number, view: (v: ValueRef) => string, body: string[], views: string[]): void {
  const size = (v: { shape: readonly number[] }) => sizeOf(v.shape);
  const whole = (buf: number, like: ValueRef) => view({ buf, offset: 0, shape: like.shape, dtype: like.dtype });
  const nSeq = s.seqs.length;
  const nState = s.inits.length;
  const outShapes = s.body.targets.slice(0, s.outStep.length);
  const si = `si${k}`;
  const so = `so${k}`;
  const seqStep = s.seqStep.map((b, i) => whole(b, { ...s.seqs[i]!, shape: s.seqs[i]!.shape.slice(1) }));
  const stA = s.stateA.map((b, j) => whole(b, s.inits[j]!));
  const stB = s.stateB.map((b, j) => whole(b, s.inits[j]!));
  const outStep = s.outStep.map((b, o) => whole(b, outShapes[o]!));
  const consts = s.consts.map((c) => view(c));
  views.push(`const ${si} = new Array(${nSeq + nState + consts.length}), ${so} = new Array(${outStep.length + nState});`);
  const T = s.steps;
  const L: string[] = [`  { // ${commentText(s.label)}`];
  [...seqStep, ...stA, ...consts].forEach((v, i) => L.push(`    ${si}[${i}] = ${v};`));
  [...outStep, ...stB].forEach((v, i) => L.push(`    ${so}[${i}] = ${v};`));
  // A state stacked whole is written by the step straight into its slot of the stack, and read
  // from there at the next step; a state updated in place (inPlaceStates) stays in one buffer;
  // other states swap two buffers.
  const stacked = (j: number) => s.stateItems[j]!.keep === 'all';
  const inPlace = inPlaceStates(s);
  const next = (j: number) => (stacked(j) ? `${so}[${s.outStep.length + j}]` : inPlace[j] ? `c${k}_${j}` : `n${k}_${j}`);
  s.inits.forEach((v, j) => {
    L.push(`    rt.copy(${stA[j]}, 0, b${v.buf}, ${v.offset}, ${size(v)});`);
    L.push(stacked(j) || inPlace[j] ? `    let c${k}_${j} = ${stA[j]};` : `    let c${k}_${j} = ${stA[j]}, n${k}_${j} = ${stB[j]};`);
  });
  L.push(`    for (let k = 0; k < ${T}; k++) {`);
  L.push(`      const t = ${s.backwards ? `${T - 1} - k` : 'k'};`);
  // The step reads its slice of each sequence in place, and writes each output stacked whole
  // into its slot of the stack (the last step's, for an output kept 'last').
  s.seqs.forEach((v, i) => {
    const n = size(v) / T;
    L.push(`      ${si}[${i}] = b${v.buf}.subarray(${v.offset} + t * ${n}, ${v.offset + n} + t * ${n});`);
  });
  s.outItems.forEach((it, o) => {
    const n = size(outShapes[o]!);
    if (it.keep === 'all') L.push(`      ${so}[${o}] = b${it.buf}.subarray(k * ${n}, k * ${n} + ${n});`);
    else if (it.keep === 'last') L.push(`      ${so}[${o}] = k === ${T - 1} ? b${it.buf} : ${outStep[o]};`);
  });
  for (let j = 0; j < nState; j++) {
    const n = size(s.inits[j]!);
    const out = stacked(j) ? `b${s.stateItems[j]!.buf}.subarray(k * ${n}, k * ${n} + ${n})` : next(j);
    L.push(`      ${si}[${nSeq + j}] = c${k}_${j}; ${so}[${s.outStep.length + j}] = ${out};`);
  }
  L.push(`      s${k}(${si}, cells, phase, ctx, ${so}, k);`);
  s.stateItems.forEach((it, j) => {
    if (it.keep === 'last') L.push(`      if (k === ${T - 1}) rt.copy(b${it.buf}, 0, ${next(j)}, 0, ${size(s.inits[j]!)});`);
  });
  for (let j = 0; j < nState; j++) {
    if (stacked(j)) L.push(`      c${k}_${j} = ${next(j)};`);
    else if (!inPlace[j]) L.push(`      { const w = c${k}_${j}; c${k}_${j} = n${k}_${j}; n${k}_${j} = w; }`);
  }
  L.push('    }');
  s.finalItems.forEach((b, j) => L.push(`    rt.copy(b${b}, 0, c${k}_${j}, 0, ${size(s.inits[j]!)});`));
  L.push('  }');
  body.push(...L);
}
