// Buffer planning, once per shape specialisation: intermediates share a few preallocated
// arrays. Liveness is by step order; a buffer's array returns to the pool after its last
// reader. An elementwise kernel may write over an input that dies there (in place) when it
// reads that input only at the index it writes. Inputs, variables, constants and results
// handed to the caller are never pooled.
import type { DType } from '../../ir/dtype.js';
import { exprOrder } from '../kernel/expr.js';
import { stepBuffers, type Program, type Step } from '../kernel/ir.js';

/** Typed-array kind a dtype is stored in: pooled arrays are shared within a class only. */
export type StorageClass = 'f32' | 'f64' | 'i32' | 'i16' | 'i8' | 'u8';

export function storageClass(d: DType): StorageClass {
  switch (d) {
    case 'float16':
    case 'float32':
      return 'f32';
    case 'float64':
    case 'int64':
      return 'f64';
    case 'int32':
      return 'i32';
    case 'int16':
      return 'i16';
    case 'int8':
      return 'i8';
    case 'uint8':
    case 'bool':
      return 'u8';
  }
}

/** The typed array each storage class is held in, as generated code names it. */
export const CLASS_ARRAY: Record<StorageClass, string> = {
  f32: 'Float32Array',
  f64: 'Float64Array',
  i32: 'Int32Array',
  i16: 'Int16Array',
  i8: 'Int8Array',
  u8: 'Uint8Array',
};

export interface Slot {
  readonly cls: StorageClass;
  size: number;
}

export interface Plan {
  readonly slots: readonly Slot[];
  /** Pooled buffer id -> slot index. */
  readonly slotOf: ReadonlyMap<number, number>;
  /** Steps that write in place over one of their inputs (for tests and f.source() comments). */
  readonly inPlace: ReadonlySet<number>;
}

/** Whether step `s` reads buffer `x` only at exactly the index it stores to `out` (so it may overwrite x). */
export function readsOnlyAtStore(s: Step, x: number, out: number): boolean {
  if (s.kind !== 'loop' || s.stores.length !== 1) return false;
  const st = s.stores[0]!;
  if (st.buf !== out || st.dyn !== undefined || st.accumulate === true) return false;
  return (
    exprOrder([st.value]).every(
      (e) => e.t !== 'load' || e.buf !== x || (e.index.key === st.index.key && e.dyn === undefined),
    ) && !exprOrder([st.value]).some((e) => e.t === 'reduce')
  );
}

export function planBuffers(p: Program): Plan {
  const pooled = (id: number) => p.buffers[id]!.role === 'temp' || p.buffers[id]!.role === 'scratch';
  const lastUse = new Map<number, number>();
  p.steps.forEach((s, i) => {
    const io = stepBuffers(s);
    for (const b of [...io.reads, ...io.writes, ...io.scratch]) lastUse.set(b, i);
  });
  for (const t of p.targets) lastUse.set(t.buf, p.steps.length);

  const slots: Slot[] = [];
  const slotOf = new Map<number, number>();
  const free: number[] = [];
  const inPlace = new Set<number>();

  const take = (id: number): void => {
    const { dtype, size } = p.buffers[id]!;
    const cls = storageClass(dtype);
    let best = -1;
    for (const f of free) {
      const sl = slots[f]!;
      if (sl.cls !== cls) continue;
      if (best < 0) {
        best = f;
        continue;
      }
      const cur = slots[best]!;
      // Smallest slot that fits; failing that, the largest (it grows least).
      const fits = sl.size >= size;
      const curFits = cur.size >= size;
      if ((fits && (!curFits || sl.size < cur.size)) || (!fits && !curFits && sl.size > cur.size)) best = f;
    }
    if (best < 0) {
      slots.push({ cls, size });
      best = slots.length - 1;
    } else free.splice(free.indexOf(best), 1);
    slots[best]!.size = Math.max(slots[best]!.size, size);
    slotOf.set(id, best);
  };

  p.steps.forEach((s, i) => {
    const io = stepBuffers(s);
    const handedOver = new Set<number>();
    for (const w of io.writes) {
      if (!pooled(w) || slotOf.has(w)) continue;
      const victim = io.reads.find(
        (r) =>
          pooled(r) &&
          slotOf.has(r) &&
          lastUse.get(r) === i &&
          !handedOver.has(r) &&
          storageClass(p.buffers[r]!.dtype) === storageClass(p.buffers[w]!.dtype) &&
          readsOnlyAtStore(s, r, w),
      );
      if (victim !== undefined) {
        const sl = slotOf.get(victim)!;
        slotOf.set(w, sl);
        slots[sl]!.size = Math.max(slots[sl]!.size, p.buffers[w]!.size);
        handedOver.add(victim);
        inPlace.add(i);
      } else take(w);
    }
    for (const sc of io.scratch) if (pooled(sc)) take(sc);
    const release = new Set<number>();
    for (const b of [...io.reads, ...io.writes, ...io.scratch]) {
      if (pooled(b) && lastUse.get(b) === i && !handedOver.has(b)) release.add(slotOf.get(b)!);
    }
    for (const w of io.writes)
      if (pooled(w) && slotOf.get(w) !== undefined && lastUse.get(w)! > i) release.delete(slotOf.get(w)!);
    for (const sl of release) if (!free.includes(sl)) free.push(sl);
  });
  return { slots, slotOf, inPlace };
}
