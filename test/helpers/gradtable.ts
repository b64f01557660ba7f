// Gradient tables: every case runs Theano's verify_grad (SPEC §4) in float64 and in float32 with
// Theano's float32 tolerances, on every target of targets.ts.
import { verify_grad } from '../../src/index.js';
import { computesInFloat32 } from '../../src/api/gradients.js';
import { NDArray, type NestedArray } from '../../src/ir/ndarray.js';
import type { Node } from '../../src/ir/node.js';
import { runsCase, targets } from './targets.js';

export interface GradCase {
  readonly name: string;
  readonly inputs: readonly (NDArray | NestedArray)[];
  readonly build: (...xs: Node[]) => Node;
  /** Skip the float32 run only with a stated reason (e.g. a formula too ill-conditioned for 3e-4 steps). */
  readonly float64Only?: string;
}

/** Every gradTable case, keyed `title > case name`, for the coverage test (test/autodiff/coverage.test.ts). */
export const gradCases = new Map<string, GradCase>();

/** The inputs of a case in `dtype` (float inputs only; integer and bool inputs keep theirs). */
export function caseInputs(c: GradCase, dtype: 'float32' | 'float64'): NDArray[] {
  return c.inputs.map((v) => (v instanceof NDArray ? (v.dtype.startsWith('float') ? v.astype(dtype) : v) : NDArray.from(v, dtype)));
}

export function gradTable(title: string, cases: readonly GradCase[]): void {
  describe(title, () => {
    for (const c of cases) {
      const key = `${title} > ${c.name}`;
      if (gradCases.has(key)) throw new Error(`gradTable: two cases named ${JSON.stringify(key)}`);
      gradCases.set(key, c);
      for (const t of targets) {
        if (!runsCase(t, title, c.name)) continue;
        for (const dtype of t.gradDTypes) {
          // float64Only: too ill-conditioned for float32's step, which a float32 target takes for float64 too
          if (c.float64Only !== undefined && (dtype === 'float32' || computesInFloat32(t.options))) continue;
          it(`${c.name} ${dtype} [${t.name}]`, () => {
            verify_grad(c.build, caseInputs(c, dtype), { functionOptions: t.options });
          });
        }
      }
    }
  });
}
