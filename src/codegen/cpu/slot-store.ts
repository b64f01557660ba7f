// Planned buffers shared by the shape specialisations of one program. A function fed many batch
// sizes holds one set of arrays, grown on demand to the largest shape seen (a capacity), and each
// specialisation runs on prefixes of them: its memory is the largest shape's, not the sum over
// shapes (tinygrad's symbolic-shape buffers are likewise sized for the variable's maximum). Only
// one call at a time runs on the store: a call made while another runs (re-entrancy: a user op or
// a print sink calling the function) runs on arrays of its own.
import type { TypedArray } from '../../ir/dtype.js';
import type { Plan } from '../transform/plan.js';
import { CTOR } from './runtime.js';

export class SlotStore {
  private readonly arrays = new Map<string, TypedArray>();
  /** Specialisations whose instance runs on the arrays now: when none is left, the arrays go. */
  private readonly holders = new Set<object>();
  /** Bumped when an array is replaced (grown) or the arrays go: instances made before make their views again. */
  gen = 0;
  /** Whether a call runs on the store now. */
  busy = false;

  /** Views of the store's arrays for `plan`'s slots (growing those too small), for specialisation `holder`. */
  slots(plan: Pick<Plan, 'slots'>, holder: object): TypedArray[] {
    this.holders.add(holder);
    return plan.slots.map((s, i) => {
      const key = `${i}:${s.cls}`;
      let a = this.arrays.get(key);
      if (a === undefined || a.length < s.size) {
        a = CTOR[s.cls](s.size);
        this.arrays.set(key, a);
        this.gen++;
      }
      return a.length === s.size ? a : a.subarray(0, s.size);
    });
  }

  /** `holder` no longer runs on the store (its buffers were let go or it was dropped). */
  unhold(holder: object): void {
    if (!this.holders.delete(holder) || this.holders.size > 0) return;
    this.arrays.clear();
    this.gen++;
  }

  /** Bytes the store's arrays hold (tests). */
  get bytes(): number {
    let n = 0;
    for (const a of this.arrays.values()) n += a.byteLength;
    return n;
  }
}
