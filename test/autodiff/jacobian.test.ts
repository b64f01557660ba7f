// autodiff.jacobian, hessian and hessian_vector_product: Theano's tests of them (tests/test_gradient.py:
// test_jacobian_vector, test_jacobian_matrix, test_jacobian_scalar, test_hessian,
// test_jacobian_disconnected_inputs, TestHessianVectorProdudoct) ported with their numbers, and
// the identities between the modes: forward = reverse Jacobian, jvp = J v, vjp = u^T J, Hessians
// symmetric and equal to finite differences of the gradient. Compiled on device cpu (fallback: error).
import { expect } from 'chai';
import { autodiff, backend as K } from '../../src/index.js';
import { NDArray } from '../../src/ir/ndarray.js';
import type { Node } from '../../src/ir/node.js';
import { mulberry32 } from '../../src/ir/random.js';
import { expectClose } from '../helpers/assert.js';

const CPU = { device: 'cpu' as const, fallback: 'error' as const };
const run = (ins: Node[], outs: Node[], vals: NDArray[]) => K.function(ins, outs, [], CPU)(vals);
const rand = mulberry32(2012);
const uniform = (shape: number[], lo = 0, hi = 1) => new NDArray(Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => lo + (hi - lo) * rand()), shape, 'float64');
const ph = (shape: number[], name: string) => K.placeholder(shape, null, 'float64', false, name);
const eye = (n: number, s = 1) => NDArray.from(Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? s : 0))), 'float64');
const diag = (v: NDArray) => NDArray.from(Array.from({ length: v.size }, (_, i) => Array.from({ length: v.size }, (_, j) => (i === j ? Number(v.data[i]) : 0))), 'float64');
const MODES = ['reverse', 'forward'] as const;

describe('autodiff.jacobian: Theano test_gradient.py', () => {
  for (const mode of MODES) {
    it(`vector: d(2x)/dx = 2I; list wrt; d(x z)/[x, z] = [diag z, diag x] (test_jacobian_vector, ${mode})`, () => {
      const x = ph([10], 'x');
      const vx = uniform([10]);
      expectClose(run([x], [autodiff.jacobian(K.multiply(x, 2), x, { mode })], [vx])[0]!, eye(10, 2));
      const J = autodiff.jacobian(K.multiply(x, 2), [x], { mode });
      expect(Array.isArray(J)).to.equal(true);
      expectClose(run([x], J, [vx])[0]!, eye(10, 2));
      const z = ph([10], 'z');
      const vz = uniform([10]);
      const [jx, jz] = run([x, z], autodiff.jacobian(K.multiply(x, z), [x, z], { mode }), [vx, vz]);
      expectClose(jx!, diag(vz));
      expectClose(jz!, diag(vx));
    });

    it(`matrix: d(2 sum_0 x)/dx and d(sum_1 x z)/[x, z] (test_jacobian_matrix, ${mode})`, () => {
      const x = ph([10, 10], 'x');
      const ev = new NDArray(new Float64Array(1000), [10, 10, 10], 'float64');
      for (let d = 0; d < 10; d++) for (let i = 0; i < 10; i++) ev.data[d * 100 + i * 10 + d] = 2;
      const vx = uniform([10, 10]);
      expectClose(run([x], [autodiff.jacobian(K.multiply(K.sum(x, 0), 2), x, { mode })], [vx])[0]!, ev);
      const z = ph([10, 10], 'z');
      const vz = uniform([10, 10]);
      const [jx, jz] = run([x, z], autodiff.jacobian(K.sum(K.multiply(x, z), 1), [x, z], { mode }), [vx, vz]);
      const evx = new NDArray(new Float64Array(1000), [10, 10, 10], 'float64');
      const evz = evx.clone();
      for (let d = 0; d < 10; d++) {
        for (let j = 0; j < 10; j++) {
          evx.data[d * 100 + d * 10 + j] = vx.data[d * 10 + j]!;
          evz.data[d * 100 + d * 10 + j] = vz.data[d * 10 + j]!;
        }
      }
      expectClose(jx!, evz);
      expectClose(jz!, evx);
    });

    it(`scalar: d(2x)/dx = 2; d(x z)/[x, z] = [z, x] (test_jacobian_scalar, ${mode})`, () => {
      const x = ph([], 'x');
      const z = ph([], 'z');
      const [vx, vz] = [uniform([]), uniform([])];
      expectClose(run([x], [autodiff.jacobian(K.multiply(x, 2), x, { mode })], [vx])[0]!, NDArray.from(2, 'float64'));
      const [jx, jz] = run([x, z], autodiff.jacobian(K.multiply(x, z), [x, z], { mode }), [vx, vz]);
      expectClose(jx!, vz);
      expectClose(jz!, vx);
    });
  }

  it('disconnected inputs give zeros when ignored, and raise by default (test_jacobian_disconnected_inputs)', () => {
    const [v1, v2] = [ph([4], 'v1'), ph([4], 'v2')];
    const val = NDArray.from([0, 1, 2, 3], 'float64');
    expectClose(run([v1, v2], [autodiff.jacobian(K.add(v1, 1), v2, { disconnected_inputs: 'ignore' })], [val, val])[0]!, NDArray.zeros([4, 4], 'float64'));
    const [s1, s2] = [ph([], 's1'), ph([], 's2')];
    expectClose(run([s1, s2], [autodiff.jacobian(K.add(s1, 1), s2, { disconnected_inputs: 'ignore' })], [uniform([]), NDArray.from(1, 'float64')])[0]!, NDArray.from(0, 'float64'));
    expect(() => autodiff.jacobian(K.add(v1, 1), v2)).to.throw(/autodiff.jacobian: the expression does not depend on wrt \(v2\)/);
  });

  it('needs static shapes, and says so', () => {
    const x = K.placeholder([null, 3], null, 'float64', false, 'x');
    expect(() => autodiff.jacobian(K.tanh(x), x)).to.throw(/autodiff.jacobian: expression has shape \(None, 3\); a Jacobian needs static shapes/);
  });
});

describe('autodiff.hessian and hessian_vector_product: Theano test_gradient.py', () => {
  it('sum(x^2) has Hessian 2I at arange(10) (test_hessian)', () => {
    const x = ph([10], 'x');
    const vx = NDArray.from(Array.from({ length: 10 }, (_, i) => i), 'float64');
    expectClose(run([x], [autodiff.hessian(K.sum(K.square(x)), x)], [vx])[0]!, eye(10, 2));
  });

  it("Rosenbrock's Hessian times p equals scipy's rosen_hess_prod (TestHessianVectorProdudoct.test_rosen)", () => {
    const x = ph([9], 'x');
    const p = ph([9], 'p');
    const head = K.slice_along(x, 0, 0, -1);
    const tail = K.slice_along(x, 0, 1, null);
    const rosen = K.sum(K.add(K.multiply(K.square(K.subtract(tail, K.square(head))), 100), K.square(K.subtract(1, head))));
    const xt = Array.from({ length: 9 }, (_, i) => 0.1 * i);
    const pt = Array.from({ length: 9 }, (_, i) => 0.5 * i);
    // rosen_hess_prod: H p with H tridiagonal, H_ii = 1200 x_i^2 - 400 x_{i+1} + 2 [i < n-1] + 200 [i > 0], H_{i,i+1} = -400 x_i
    const want = xt.map((xi, i) => {
      const h = (i < 8 ? 1200 * xi * xi - 400 * xt[i + 1]! + 2 : 0) + (i > 0 ? 200 : 0);
      let s = h * pt[i]!;
      if (i < 8) s += -400 * xi * pt[i + 1]!;
      if (i > 0) s += -400 * xt[i - 1]! * pt[i - 1]!;
      return s;
    });
    const got = run([x, p], [autodiff.hessian_vector_product(rosen, x, p)], [NDArray.from(xt, 'float64'), NDArray.from(pt, 'float64')])[0]!;
    expectClose(got, NDArray.from(want, 'float64'), { atol: 1e-10, rtol: 1e-12 });
  });

  it('several wrt: (x^2 - y^2) gives [2 p_x, -2 p_y], whatever x and y, NaN included (test_multiple_wrt)', () => {
    const [x, y, px, py] = [ph([3], 'x'), ph([3], 'y'), ph([3], 'p_x'), ph([3], 'p_y')];
    const cost = K.sum(K.subtract(K.square(x), K.square(y)));
    const nan = NDArray.from([Number.NaN, Number.NaN, Number.NaN], 'float64');
    const [hx, hy] = run([x, y, px, py], autodiff.hessian_vector_product(cost, [x, y], [px, py]), [nan, nan, NDArray.from([1, 2, 3], 'float64'), NDArray.from([3, 2, 1], 'float64')]);
    expectClose(hx!, NDArray.from([2, 4, 6], 'float64'));
    expectClose(hy!, NDArray.from([-6, -4, -2], 'float64'));
  });
});

/** A small two-layer network's pieces on static shapes: x (5), W1 (5, 4), W2 (4, 3). */
function mlp() {
  const x = ph([5], 'x');
  const W1 = ph([5, 4], 'W1');
  const W2 = ph([4, 3], 'W2');
  const h = K.tanh(K.dot(K.expand_dims(x, 0), W1));
  const y = K.reshape(K.sigmoid(K.dot(h, W2)), [3]);
  const vals = [uniform([5], -1, 1), uniform([5, 4], -1, 1), uniform([4, 3], -1, 1)];
  return { x, W1, W2, y, vals, ins: [x, W1, W2] };
}

describe('autodiff: identities between forward and reverse mode', () => {
  it('the forward, reverse and auto Jacobians agree', () => {
    const { y, vals, ins } = mlp();
    const [r1, r2, r3] = autodiff.jacobian(y, ins, { mode: 'reverse' });
    const [f1, f2, f3] = autodiff.jacobian(y, ins, { mode: 'forward' });
    const [a1] = autodiff.jacobian(y, [ins[0]!]);
    const out = run(ins, [r1!, r2!, r3!, f1!, f2!, f3!, a1!], vals);
    expect(out[1]!.shape).to.deep.equal([3, 5, 4]);
    for (let i = 0; i < 3; i++) expectClose(out[3 + i]!, out[i]!, { atol: 1e-14, rtol: 1e-12 });
    expectClose(out[6]!, out[0]!, { atol: 1e-14, rtol: 1e-12 });
  });

  it('jvp is the Jacobian times v; vjp is u times the Jacobian', () => {
    const { y, vals, ins, W1 } = mlp();
    const v = ph([5, 4], 'v');
    const u = ph([3], 'u');
    const J = autodiff.jacobian(y, W1, { mode: 'reverse' });
    const Jv = K.dot(K.reshape(J, [3, 20]), K.reshape(v, [20]));
    const uJ = K.reshape(K.dot(K.expand_dims(u, 0), K.reshape(J, [3, 20])), [5, 4]);
    const out = run([...ins, v, u], [autodiff.jvp(y, W1, v), Jv, autodiff.vjp(y, W1, u), uJ], [...vals, uniform([5, 4], -1, 1), uniform([3], -1, 1)]);
    expectClose(out[0]!, out[1]!, { atol: 1e-14, rtol: 1e-12 });
    expectClose(out[2]!, out[3]!, { atol: 1e-14, rtol: 1e-12 });
  });

  it('Lop with several outputs equals the gradient of the summed projections', () => {
    const { y, vals, ins } = mlp();
    const s = K.sum(K.square(y));
    const [u1, u2] = [ph([3], 'u1'), ph([], 'u2')];
    const lop = autodiff.Lop([y, s], ins, [u1, u2]);
    const viaGrad = autodiff.grad(K.add(K.sum(K.multiply(u1, y)), K.multiply(u2, s)), ins) as Node[];
    const out = run([...ins, u1, u2], [...lop, ...viaGrad], [...vals, uniform([3]), uniform([])]);
    for (let i = 0; i < 3; i++) expectClose(out[i]!, out[3 + i]!, { atol: 1e-14, rtol: 1e-12 });
  });

  it('the Hessian is symmetric and equals central differences of the gradient', () => {
    const { x, W1, W2, y, vals } = mlp();
    const cost = K.sum(K.log(y));
    const H = autodiff.hessian(cost, W1);
    const g = autodiff.grad(cost, W1)!;
    const [h] = run([x, W1, W2], [H], vals);
    expect(h!.shape).to.deep.equal([5, 4, 5, 4]);
    const n = 20;
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) expect(Math.abs(Number(h!.data[i * n + j]) - Number(h!.data[j * n + i]))).to.be.below(1e-13);
    const grad = K.function([x, W1, W2], [g], [], CPU);
    const eps = 1e-6;
    for (let j = 0; j < n; j++) {
      const [plus, minus] = [1, -1].map((s) => {
        const w = vals[1]!.clone();
        w.data[j] = w.data[j]! + s * eps;
        return grad([vals[0]!, w, vals[2]!])[0]!;
      });
      for (let i = 0; i < n; i++) {
        const fd = (Number(plus!.data[i]) - Number(minus!.data[i])) / (2 * eps);
        expect(Math.abs(fd - Number(h!.data[i * n + j])), `H[${i}, ${j}]`).to.be.below(1e-6);
      }
    }
  });

  it('hessian_vector_product equals the Hessian times v', () => {
    const { x, W1, W2, y, vals } = mlp();
    const cost = K.sum(K.log(y));
    const v = ph([5, 4], 'v');
    const Hv = K.reshape(K.dot(K.reshape(autodiff.hessian(cost, W1), [20, 20]), K.reshape(v, [20])), [5, 4]);
    const out = run([x, W1, W2, v], [autodiff.hessian_vector_product(cost, W1, v), Hv], [...vals, uniform([5, 4], -1, 1)]);
    expectClose(out[0]!, out[1]!, { atol: 1e-13, rtol: 1e-12 });
  });
});

describe('autodiff through a Scan (K.rnn)', () => {
  it('the Hessian-vector product of a recurrent loss equals central differences of its gradient', () => {
    const x = ph([2, 5, 3], 'x');
    const Wx = ph([3, 4], 'Wx');
    const Wh = ph([4, 4], 'Wh');
    const h0 = K.zeros([2, 4], 'float64');
    const [last] = K.rnn((xt, [h]) => {
      const hn = K.tanh(K.add(K.dot(xt, Wx), K.dot(h!, Wh)));
      return [hn, [hn]];
    }, x, [h0]);
    const cost = K.sum(K.square(last));
    const v = ph([4, 4], 'v');
    const hv = autodiff.hessian_vector_product(cost, [Wx, Wh], [K.zeros([3, 4], 'float64'), v])[1]!;
    const g = autodiff.grad(cost, Wh)!;
    const vals = [uniform([2, 5, 3], -1, 1), uniform([3, 4], -0.5, 0.5), uniform([4, 4], -0.5, 0.5)];
    const dir = uniform([4, 4], -1, 1);
    const [got] = run([x, Wx, Wh, v], [hv], [...vals, dir]);
    const eps = 1e-6;
    const [plus, minus] = [1, -1].map((s) => {
      const w = vals[2]!.clone();
      for (let j = 0; j < w.size; j++) w.data[j] = w.data[j]! + s * eps * dir.data[j]!;
      return run([x, Wx, Wh], [g], [vals[0]!, vals[1]!, w])[0]!;
    });
    const fd = new NDArray(Array.from({ length: 16 }, (_, j) => (Number(plus!.data[j]) - Number(minus!.data[j])) / (2 * eps)), [4, 4], 'float64');
    expectClose(got!, fd, { atol: 1e-6, rtol: 1e-6 });
  });
});
