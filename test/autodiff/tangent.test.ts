// Forward mode against finite differences on every case of every gradient table: for each case,
// the jvp of its graph along a random direction (autodiff.Rop, one forward pass) must match the
// central difference (f(x + eps v) - f(x - eps v)) / 2 eps in float64, and the double-reverse
// construction (Rop's method 'reverse') must give the same graph value. Every op with a tangent
// rule appears in some case (checked below), so every tangent rule is checked. On the targets that
// compute in float32 (tensorflow, the gpu device) each case's jvp is checked against the
// reference's float64 jvp instead (below). Loading the tables registers their own tests too: run
// this file alone with --grep 'autodiff.Rop'.
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { autodiff, backend as K } from '../../src/index.js';
import { tangentRules } from '../../src/autodiff/tangent/index.js';
import { topoSort } from '../../src/ir/graph.js';
import { NDArray } from '../../src/ir/ndarray.js';
import type { Node } from '../../src/ir/node.js';
import { mulberry32 } from '../../src/ir/random.js';
import { caseInputs, gradCases, type GradCase } from '../helpers/gradtable.js';
import { computesInFloat32 } from '../../src/api/gradients.js';
import { targets, runsCase } from '../helpers/targets.js';
import type { FunctionOptions } from '../../src/api/function.js';

// The gradient tables of this folder, loaded as coverage.test.ts loads them (require: one module each).
const here = path.dirname(fileURLToPath(import.meta.url));
const load = createRequire(import.meta.url);
for (const f of fs.readdirSync(here).filter((n) => n.endsWith('.test.ts')).sort()) {
  const file = path.join(here, f);
  if (file !== fileURLToPath(import.meta.url)) load(file);
}

/** Steps and tolerances: float64 results, and float32 ones (cases that cast), as verify_grad's. */
const STEP = { float64: { eps: 1e-6, tol: 1e-5 }, float32: { eps: 3e-4, tol: 1e-2 } };

/** Placeholders for a case's float64 inputs, its graph, and a random direction for each float input. */
function setup(c: GradCase, seed: number) {
  const values = caseInputs(c, 'float64');
  const xs = values.map((v, i) => K.placeholder(v.shape, null, v.dtype, false, `x${i}`));
  const out = c.build(...xs);
  const rand = mulberry32(seed);
  const floats = values.map((v, i) => (v.dtype === 'float64' ? i : -1)).filter((i) => i >= 0);
  const dirs = floats.map((i) => new NDArray(Array.from({ length: values[i]!.size }, () => rand() * 2 - 1), values[i]!.shape, 'float64'));
  const vs = floats.map((i) => K.placeholder(values[i]!.shape, null, 'float64', false, `v${i}`));
  return { values, xs, out, floats, dirs, vs };
}

/** values moved by s * eps along the directions. */
function moved(values: readonly NDArray[], floats: readonly number[], dirs: readonly NDArray[], step: number): NDArray[] {
  return values.map((v, i) => {
    const k = floats.indexOf(i);
    if (k < 0) return v;
    const m = v.clone();
    for (let j = 0; j < m.size; j++) m.data[j] = m.data[j]! + step * dirs[k]!.data[j]!;
    return m;
  });
}

const near = (a: number, e: number, tol: number) => Math.abs(a - e) <= tol * Math.max(1, Math.abs(a), Math.abs(e));

/**
 * Each element of `actual` near one of the references: the central difference, or where a case
 * sits on a kink (round at 1.5, a tie), a one-sided difference (verify_grad itself takes one).
 */
function close(actual: NDArray, refs: readonly NDArray[], tol: number, what: string): void {
  expect(actual.shape, `${what}: shape`).to.deep.equal(refs[0]!.shape);
  for (let j = 0; j < actual.size; j++) {
    const a = Number(actual.data[j]);
    const es = refs.map((r) => Number(r.data[j]));
    expect(es.some((e) => near(a, e, tol)), `${what}: element ${j}: ${a} vs ${es.join(' / ')}`).to.equal(true);
  }
}

/** (hi - lo) / width, elementwise. */
function difference(hi: NDArray, lo: NDArray, width: number): NDArray {
  const d = new NDArray(new Float64Array(hi.size), hi.shape, 'float64');
  for (let j = 0; j < d.size; j++) d.data[j] = (Number(hi.data[j]) - Number(lo.data[j])) / width;
  return d;
}

/** The float64 runs: targets that compute float64 as float64 (a device computing it in float32 cannot take 1e-6 steps). */
const float64Targets = targets.filter((t) => t.gradDTypes.includes('float64') && !computesInFloat32(t.options));

describe('autodiff.Rop: jvp of every gradient-table case against central differences', () => {
  let seed = 7;
  for (const [key, c] of gradCases) {
    const caseSeed = seed++;
    const [title, name] = key.split(' > ') as [string, string];
    for (const t of float64Targets) {
      if (!runsCase(t, title, name)) continue;
      it(`${key} [${t.name}]`, () => {
        const { values, xs, out, floats, dirs, vs } = setup(c, caseSeed);
        const wrt = floats.map((i) => xs[i]!);
        const fwd = autodiff.Rop(out, wrt, vs);
        const rev = autodiff.Rop(out, wrt, vs, { method: 'reverse' });
        const f = K.function([...xs, ...vs], [out, fwd, rev], [], t.options);
        // copies: a function with borrowed outputs (the cpu-borrow target) writes the same arrays at each call
        const run = (vals: NDArray[]) => f([...vals, ...dirs]).map((r) => r.clone());
        const { eps, tol } = STEP[out.dtype === 'float32' ? 'float32' : 'float64'];
        const [f0, jf, jr] = run(values);
        const [plus] = run(moved(values, floats, dirs, eps));
        const [minus] = run(moved(values, floats, dirs, -eps));
        close(jf!, [difference(plus!, minus!, 2 * eps), difference(plus!, f0!, eps), difference(f0!, minus!, eps)], tol, 'forward mode vs finite differences');
        close(jr!, [jf!], 1e-9, 'double reverse vs forward mode');
      });
    }
  }

  it('every op with a tangent rule appears in a case, on a path from an input', () => {
    const seen = new Set<string>();
    for (const c of gradCases.values()) {
      const xs = caseInputs(c, 'float64').map((v) => K.placeholder(v.shape, null, v.dtype));
      const live = new Set<Node>(xs);
      for (const n of topoSort([c.build(...xs)])) {
        if (!n.inputs.some((i) => live.has(i))) continue;
        live.add(n);
        seen.add(n.op);
      }
    }
    const withRule = Object.entries(tangentRules).filter(([, r]) => typeof r === 'function' || (typeof r === 'object' && 'tuple' in r)).map(([op]) => op);
    expect(withRule.filter((op) => !seen.has(op)).sort()).to.deep.equal([]);
  });
});

/**
 * The float32 targets (tensorflow, the gpu device): a 1e-6 step is below float32's resolution, so
 * the jvp there is checked against the jvp of the same graph on the reference interpreter in
 * float64 (itself checked against central differences above), from the same float32 inputs and
 * directions, read exactly in float64. What differs is rounding only: u = 2^-24 = 6e-8 per
 * operation, through value and tangent graphs a few dozen operations deep with sums of at most a
 * few hundred terms. Measured (tensorflow; gpu:headlessgl on Mesa), the worst case is 1.3e-6
 * (about 21 u, a K.rnn case: rounding carried through the time steps); the tolerance, relative to
 * max(1, |a|, |e|) as verify_grad's, is 1e-5 (about 170 u), or the target's own float tolerance
 * where that is larger (the gpu device's rtol 1e-4: GL's exp and tanh are not correctly rounded).
 * float64Only cases are left out, as the gradient tables leave them out on these targets.
 */
const TOL32 = 1e-5;
const float32Targets = targets.filter((t) => computesInFloat32(t.options));

describe('autodiff.Rop on the float32 targets: jvp against the reference\'s float64 jvp', () => {
  let seed = 7;
  for (const [key, c] of gradCases) {
    const caseSeed = seed++;
    const [title, name] = key.split(' > ') as [string, string];
    if (c.float64Only !== undefined) continue;
    for (const t of float32Targets) {
      if (!runsCase(t, title, name)) continue;
      it(`${key} [${t.name}]`, () => {
        const jvpOf = (dtype: 'float32' | 'float64', values: readonly NDArray[], dirs: readonly NDArray[], options: FunctionOptions) => {
          const xs = values.map((v, i) => K.placeholder(v.shape, null, v.dtype === 'float32' || v.dtype === 'float64' ? dtype : v.dtype, false, `x${i}`));
          const floats = values.map((v, i) => (v.dtype === 'float32' || v.dtype === 'float64' ? i : -1)).filter((i) => i >= 0);
          const vs = floats.map((i) => K.placeholder(values[i]!.shape, null, dtype, false, `v${i}`));
          const out = c.build(...xs);
          const f = K.function([...xs, ...vs], [autodiff.Rop(out, floats.map((i) => xs[i]!), vs)], [], options);
          return f([...values.map((v) => (v.dtype.startsWith('float') ? v.astype(dtype) : v)), ...dirs.map((d) => d.astype(dtype))])[0]!;
        };
        // float32 inputs and directions, read exactly in float64 by the reference
        const { values, floats, dirs } = setup(c, caseSeed);
        const v32 = values.map((v) => (v.dtype === 'float64' ? v.astype('float32') : v));
        const d32 = dirs.map((d) => d.astype('float32'));
        expect(floats.length).to.be.greaterThan(0);
        const got = jvpOf('float32', v32, d32, t.options);
        const want = jvpOf('float64', v32, d32, { optimizer: 'none' });
        close(got, [want], Math.max(TOL32, t.tol.rtol), `${t.name} float32 jvp vs the reference's float64 jvp`);
      });
    }
  }
});
