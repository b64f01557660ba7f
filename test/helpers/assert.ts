// Numeric comparison with stated tolerances, printing both arrays on failure.
import { expect } from 'chai';
import { NDArray, type NestedArray } from '../../src/ir/ndarray.js';

export interface Tol {
  atol?: number;
  rtol?: number;
}

function flat(x: NDArray | NestedArray): { data: number[]; shape: number[] } {
  const nd = x instanceof NDArray ? x : NDArray.from(x, 'float64');
  return { data: Array.from(nd.data, Number), shape: [...nd.shape] };
}

/** |a - b| <= atol + rtol * |b| elementwise, same shape; NaN matches NaN, equal infinities match. */
export function expectClose(actual: NDArray | NestedArray, expected: NDArray | NestedArray, tol: Tol = {}, what = 'value'): void {
  const atol = tol.atol ?? 1e-6;
  const rtol = tol.rtol ?? 1e-6;
  const a = flat(actual);
  const b = flat(expected);
  expect(a.shape, `${what}: shape`).to.deep.equal(b.shape);
  for (let i = 0; i < a.data.length; i++) {
    const x = a.data[i]!;
    const y = b.data[i]!;
    if (Number.isNaN(y) && Number.isNaN(x)) continue;
    if (x === y) continue;
    if (!(Math.abs(x - y) <= atol + rtol * Math.abs(y))) {
      const show = (d: number[]) => (d.length > 20 ? `${JSON.stringify(d.slice(0, 20))}…` : JSON.stringify(d));
      expect.fail(`${what}: element ${i} is ${x}, expected ${y} (atol ${atol}, rtol ${rtol})\nactual:   ${show(a.data)}\nexpected: ${show(b.data)}`);
    }
  }
}
