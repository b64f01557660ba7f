// Table-driven op tests: each case feeds placeholders, checks the static shape, and compares
// every target's result with an independent expected value (closed form, hand computation,
// or TensorFlow.js), within stated tolerances.
import { expect } from 'chai';
import { backend as K } from '../../src/index.js';
import { NDArray, type NestedArray } from '../../src/ir/ndarray.js';
import type { DType } from '../../src/ir/dtype.js';
import type { Node } from '../../src/ir/node.js';
import { expectClose, type Tol } from './assert.js';
import { noteExcluded, runOn, runsCase, targets } from './targets.js';

export interface OpCase {
  readonly name: string;
  /** Input values; each is fed through a placeholder of its shape (or `shapes[i]` with nulls). */
  readonly inputs: readonly (NDArray | NestedArray)[];
  readonly dtypes?: readonly DType[];
  /** Static placeholder shapes (null dims allowed); defaults to the values' shapes. */
  readonly shapes?: readonly (readonly (number | null)[])[];
  readonly build: (...xs: Node[]) => Node;
  /** Expected value, or a function computing it independently from the input arrays. */
  readonly expected: NestedArray | NDArray | ((...xs: NDArray[]) => NDArray | NestedArray);
  /** Expected `int_shape` of the built tensor (with the placeholders' static shapes). */
  readonly staticShape?: readonly (number | null)[];
  readonly expectedDType?: DType;
  readonly tol?: Tol;
}

export function toND(v: NDArray | NestedArray, dtype: DType): NDArray {
  return v instanceof NDArray ? v : NDArray.from(v, dtype);
}

const numbers = (v: NDArray | NestedArray): number[] => (v instanceof NDArray ? Array.from(v.data, Number) : Array.isArray(v) ? v.flatMap(numbers) : [Number(v)]);

/** Every opTable case, keyed `title > case name` (test/autodiff/vmap/tables.test.ts batches them). */
export const opCases = new Map<string, OpCase>();

/** Registers one mocha test per case and target. */
export function opTable(title: string, cases: readonly OpCase[]): void {
  describe(title, () => {
    for (const c of cases) {
      opCases.set(`${title} > ${c.name}`, c);
      const dtypes = c.inputs.map((v, i) => c.dtypes?.[i] ?? (v instanceof NDArray ? v.dtype : 'float64'));
      for (const t of targets) {
        if (!runsCase(t, title, c.name)) continue;
        const nonFinite = c.inputs.some((v) => numbers(v).some((x) => !Number.isFinite(x)));
        const rule = t.excludes?.({ dtypes, nonFinite, ...(c.expectedDType !== undefined ? { expectedDType: c.expectedDType } : {}) });
        if (rule !== undefined) { noteExcluded(rule, `${title}: ${c.name}`); continue; }
        // Named rule (targets.ts): a float32 device runs float64 cases in float32.
        const demote = (d: DType): DType => (t.demoteFloat64 === true && d === 'float64' ? 'float32' : d);
        const demoted = t.demoteFloat64 === true && dtypes.includes('float64');
        it(`${c.name} [${t.name}${demoted ? ', float64 as float32' : ''}]`, () => {
          const values = c.inputs.map((v, i) => {
            const nd = toND(v, dtypes[i]!);
            return nd.dtype === demote(nd.dtype) ? nd : nd.astype(demote(nd.dtype));
          });
          const phs = values.map((v, i) => K.placeholder(c.shapes?.[i] ?? v.shape, null, v.dtype, false, `in${i}`));
          const out = c.build(...phs);
          if (c.staticShape !== undefined) expect(K.int_shape(out), 'int_shape').to.deep.equal([...c.staticShape]);
          if (c.expectedDType !== undefined) expect(out.dtype, 'dtype').to.equal(demote(c.expectedDType));
          const [got] = runOn(t, phs, [out], values);
          const want = typeof c.expected === 'function' ? c.expected(...values) : c.expected;
          // float32 results on a target summing float32 products in float32: its float32 rule (targets.ts' tol32)
          const tt = got!.dtype === 'float32' && t.tol32 !== undefined
            ? { atol: Math.max(t.tol.atol, t.tol32.atol), rtol: Math.max(t.tol.rtol, t.tol32.rtol) } : t.tol;
          const tol = { atol: Math.max(c.tol?.atol ?? 1e-9, tt.atol), rtol: Math.max(c.tol?.rtol ?? 1e-9, tt.rtol) };
          expectClose(got!, want, tol, c.name);
        });
      }
    }
  });
}
