// vmap(f)(X) against f on each example, stacked, for every case of the gradient tables of this
// folder (their forward graphs and their gradients, vmap(grad) being per-example gradients),
// with in_axes fuzzed by fast-check: each input batched along a random axis or shared (null).
// Then every op with a batching rule must have been reached by some case.
import { expect } from 'chai';
import fc from 'fast-check';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { backend as K } from '../../../src/index.js';
import { batchRules } from '../../../src/autodiff/vmap/index.js';
import type { Node } from '../../../src/ir/node.js';
import { caseInputs, gradCases, type GradCase } from '../../helpers/gradtable.js';
import { NDArray } from '../../../src/ir/ndarray.js';
import { apply } from '../../../src/ir/build.js';
import { checkVmap, type Build } from '../../helpers/vmap.js';
import { opCases, toND } from '../../helpers/table.js';

// The gradient tables of this folder, loaded as coverage.test.ts loads them (require: one module each).
const here = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const load = createRequire(import.meta.url);
for (const f of fs.readdirSync(here).filter((n) => n.endsWith('.test.ts')).sort()) load(path.join(here, f));
// And the op tables of test/api (forward values of every K function), except the files that import
// test/helpers/tfref-math.ts, whose top-level await require() cannot load (listed in NOT_LOADED).
const api = path.join(here, '../api');
const notLoaded: string[] = [];
for (const f of fs.readdirSync(api).filter((n) => n.endsWith('.test.ts')).sort()) {
  const text = fs.readFileSync(path.join(api, f), 'utf8');
  if (!text.includes('opTable(')) continue;
  if (text.includes('tfref-math')) notLoaded.push(f);
  else load(path.join(api, f));
}
const NOT_LOADED = ['activations.test.ts', 'losses.test.ts', 'nn.test.ts', 'numeric.test.ts'];

const X = [[0.3, -1.2, 0.7, 2.0], [1.5, 0.4, -0.6, 0.0], [0.1, 0.1, -2.0, 0.5]];
const Y = [[0.3, 1.2, -0.7, 2.0], [1.5, -0.4, -0.6, 0.0], [0.2, 0.1, -2.0, 0.4]];
const I = (v: unknown) => NDArray.from(v, 'int32');

/** Ops without gradients (so outside the gradient tables), as rows of the same form. */
const NO_GRAD: readonly (Omit<GradCase, 'build'> & { build: Build })[] = [
  { name: 'comparisons and logic', inputs: [X, Y], build: (x, y) => K.cast(K.stack([
    K.equal(x, y), K.not_equal(x, y), K.greater(x, y), K.greater_equal(x, 0), K.less(x, y), K.less_equal(y, 0.5),
    apply('logical_and', [K.greater(x, 0), K.less(y, 1)], {}), apply('logical_or', [K.greater(x, 0), K.less(y, 1)], {}),
    apply('logical_not', [K.greater(x, 0)], {}), apply('isnan', [K.log(x)], {}),
  ]), 'float64') },
  { name: 'any and all', inputs: [X], build: (x) => K.cast(K.stack([K.any(K.greater(x, 0.2), 1), K.all(K.greater(x, -1), 1)]), 'float64') },
  { name: 'argmax and argmin', inputs: [X], build: (x) => K.cast(K.stack([K.argmax(x, -1), K.argmin(x, 1)]), 'float64') },
  { name: 'shape_of', inputs: [X], build: (x) => K.cast(K.shape(x), 'float64') },
  { name: 'in_top_k', inputs: [X, I([3, 0, 1])], build: (p, t) => K.cast(K.in_top_k(p, t, 2), 'float64') },
  { name: 'ctc_interleave_blanks and skip indices (loop)', inputs: [I([1, 2, 2])], build: (y) => K.cast(K.concatenate([K.ctc_interleave_blanks(y), K.ctc_create_skip_idxs(y)], -1), 'float64') },
  { name: 'reshape_dims with a size vector that may be batched (loop)', inputs: [X, I([4, 3])], build: (x, d) => apply('reshape_dims', [x, d], { known: [null, null] }) },
  {
    name: 'ctc_path_probs, a tuple (loop)',
    inputs: [[[0.5, 0.2, 0.3], [0.1, 0.6, 0.3], [0.3, 0.3, 0.4], [0.2, 0.2, 0.6]], I([1, 2])],
    build: (p, y) => K.ctc_path_probs(p, y).map((t) => K.cast(t, 'float64')),
  },
];

/** Cases vmap does not take, each with its reason. */
const EXCLUDED: Record<string, string> = {};

/** Ops whose rule the tables do not reach, each with the test that checks it instead. */
const LOOP = 'batched by the one generic loop (walk.ts loopBatch), which the ctc_interleave_blanks, ctc_create_skip_idxs and ctc_path_probs rows check';
const ELSEWHERE: Record<string, string> = {
  scan: 'test/autodiff/vmap/api.test.ts (Scan)',
  // Sized ops see batched sizes only when sizes depend on the batched data (their sizes usually come from shape_of, which is unbatched).
  fill_dims: LOOP,
  arange_dims: LOOP,
  ctc_update_log_p: LOOP,
  ctc_decode: LOOP,
  ctc_label_dense_to_sparse: LOOP,
  ctc_trim: LOOP,
};

const reached = new Set<string>();

describe('vmap: every gradient-table case, batched against stacked per-example results', () => {
  for (const [key, c] of [...gradCases, ...NO_GRAD.map((c) => [`no gradient > ${c.name}`, c] as const)]) {
    if (EXCLUDED[key] !== undefined) continue;
    const inputs = caseInputs(c as GradCase, 'float64');
    const floats = key.startsWith('no gradient') ? [] : inputs.map((x, i) => (x.dtype.startsWith('float') ? i : -1)).filter((i) => i >= 0);
    const grad = (...xs: Node[]) => {
      const wrt = floats.map((i) => xs[i]!);
      return K.gradients(K.sum(c.build(...xs) as Node), wrt);
    };
    const axesArb = fc.tuple(...inputs.map((x) => fc.option(fc.integer({ min: 0, max: x.shape.length }), { nil: null })))
      .map((axes) => (axes.every((a) => a === null) ? [0, ...axes.slice(1)] : axes));
    it(`${key}: values and per-example gradients`, () => {
      const first = inputs.map(() => 0);
      checkVmap(c.build, inputs, first, 3, 0, true);
      if (floats.length > 0) checkVmap(grad, inputs, first, 3, 0, true);
      fc.assert(fc.property(axesArb, (axes) => {
        for (const op of checkVmap(c.build, inputs, axes)) reached.add(op);
        if (floats.length > 0) for (const op of checkVmap(grad, inputs, axes)) reached.add(op);
      }), { numRuns: 3 });
    });
  }

  // Cases without inputs (K.arange(5), a random draw of a given shape) have nothing to batch.
  for (const [key, c] of [...opCases].filter(([, c]) => c.inputs.length > 0)) {
    if (EXCLUDED[key] !== undefined) continue;
    const inputs = c.inputs.map((v, i) => toND(v, c.dtypes?.[i] ?? (v instanceof NDArray ? v.dtype : 'float64')));
    const axesArb = fc.tuple(...inputs.map((x) => fc.option(fc.integer({ min: 0, max: x.shape.length }), { nil: null })))
      .map((axes) => (axes.every((a) => a === null) ? [0, ...axes.slice(1)] : axes));
    it(`op table ${key}`, () => {
      checkVmap(c.build, inputs, inputs.map(() => 0), 3, 0, true);
      fc.assert(fc.property(axesArb, (axes) => {
        for (const op of checkVmap(c.build, inputs, axes)) reached.add(op);
      }), { numRuns: 2 });
    });
  }

  it('loads every op table of test/api but those it names', () => {
    expect(notLoaded).to.deep.equal(NOT_LOADED);
  });

  it('every op with a batching rule was reached by a case (or is checked elsewhere)', () => {
    const ruled = Object.entries(batchRules).filter(([, e]) => e !== 'leaf' && !(typeof e === 'object' && 'unsupported' in e)).map(([op]) => op);
    const missing = ruled.filter((op) => !reached.has(op) && ELSEWHERE[op] === undefined);
    expect(missing, 'ops with a batching rule that no case reached').to.deep.equal([]);
  });
});
