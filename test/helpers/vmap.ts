// Checking vmap against its definition: vmap(f)(X) is the per-example results f(x_i) stacked.
// Both sides run on the reference interpreter (the definition of meaning), float64.
import { expect } from 'chai';
import { backend as K } from '../../src/index.js';
import { vmap, type Axes } from '../../src/autodiff/vmap/index.js';
import { evaluate } from '../../src/ir/interpret.js';
import { NDArray, sizeOf } from '../../src/ir/ndarray.js';
import type { Node } from '../../src/ir/node.js';
import { topoSort } from '../../src/ir/graph.js';

/** Example e of an input: float values shrunk by 4% per example (signs and ranges kept), others as they are. */
export function example(x: NDArray, e: number): NDArray {
  if (!x.dtype.startsWith('float')) return x;
  return new NDArray(Float64Array.from(x.data, (v, i) => v * (1 - 0.04 * e) + 0.01 * e * Math.sin(i + 1) * Math.abs(v)), x.shape, x.dtype);
}

/** `xs` joined along a new axis `axis`. */
export function stack(xs: readonly NDArray[], at: number): NDArray {
  const shape = xs[0]!.shape;
  const axis = at < 0 ? at + shape.length + 1 : at;
  const outer = sizeOf(shape.slice(0, axis));
  const inner = sizeOf(shape.slice(axis));
  const out = new Float64Array(xs.length * outer * inner);
  let o = 0;
  for (let i = 0; i < outer; i++) for (const x of xs) for (let k = 0; k < inner; k++) out[o++] = x.data[i * inner + k]!;
  return new NDArray(out, [...shape.slice(0, axis), xs.length, ...shape.slice(axis)], xs[0]!.dtype);
}

const placeholderFor = (x: NDArray) => K.placeholder([...x.shape], undefined, x.dtype);

function run(outs: readonly Node[], ph: readonly Node[], vals: readonly NDArray[]): NDArray[] {
  return evaluate(outs, { feeds: new Map(ph.map((p, i) => [p, vals[i]!])) });
}

export function expectClose(got: NDArray, want: NDArray, what: string, tol = 1e-9): void {
  expect(got.shape, `${what}: shape`).to.deep.equal(want.shape);
  got.data.forEach((v, i) => {
    const w = want.data[i]!;
    if (Number.isNaN(w)) { expect(Number.isNaN(v), `${what}[${i}] NaN`).to.equal(true); return; }
    expect(Math.abs(v - w), `${what}[${i}]: got ${v}, want ${w}`).to.be.at.most(tol + tol * Math.abs(w));
  });
}

export type Build = (...xs: Node[]) => Node | readonly Node[];

/**
 * Runs vmap(build, inAxes) on `count` examples of `inputs` (an input with a null axis is shared, as
 * example 0) and compares each result with build on each example, stacked along out axis 0.
 * With `compiled`, the batched graph also runs compiled on the cpu device. Returns the op names of
 * the per-example graph.
 */
export function checkVmap(build: Build, inputs: readonly NDArray[], inAxes: readonly (number | null)[], count = 3, outAxes: Axes = 0, compiled = false): Set<string> {
  const examples = Array.from({ length: count }, (_, e) => inputs.map((x, i) => (inAxes[i] === null ? x : example(x, e))));
  const batchedVals = inputs.map((x, i) => (inAxes[i] === null ? x : stack(examples.map((ex) => ex[i]!), inAxes[i]!)));
  const bph = batchedVals.map(placeholderFor);
  const res = vmap(build, [...inAxes], outAxes)(...bph);
  const got = run(Array.isArray(res) ? res : [res as Node], bph, batchedVals);
  const ph = inputs.map(placeholderFor);
  const per = build(...ph);
  const perOuts: readonly Node[] = Array.isArray(per) ? per : [per as Node];
  const perVals = examples.map((ex) => run(perOuts, ph, ex));
  const outAx = (j: number) => (typeof outAxes === 'number' ? outAxes : (outAxes as readonly number[])[j]!);
  got.forEach((g, j) => expectClose(g, stack(perVals.map((v) => v[j]!), outAx(j)), `result ${j}`));
  if (compiled) {
    // The batched graph compiled for the cpu device (its passes and kernels), against the reference.
    const outs = K.function(bph, Array.isArray(res) ? res : [res as Node])(batchedVals) as NDArray[];
    outs.forEach((g, j) => expectClose(g.astype('float64'), got[j]!.astype('float64'), `compiled result ${j}`, g.dtype === 'float32' ? 1e-4 : 1e-7));
  }
  return new Set(topoSort(perOuts).map((n) => n.op));
}
