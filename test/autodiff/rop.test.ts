// Theano's tests/test_rop.py (PyTensor's copy), ported: for each op, Rop (forward mode, and the
// double-reverse construction) against the Jacobian times v, Lop against the gradient of <u, y>,
// and Rop through an op without a derivative (BreakRop) an error. Shapes as Theano draws them
// (vectors of 5..7, matrices of 5..7 by 5..7), values uniform in [0, 1) as there.
import { expect } from 'chai';
import { autodiff, debugprint, defineOp, setTrace, traceEnabled, backend as K } from '../../src/index.js';
import { NDArray } from '../../src/ir/ndarray.js';
import type { Node } from '../../src/ir/node.js';
import { mulberry32 } from '../../src/ir/random.js';
import { expectClose } from '../helpers/assert.js';
import * as publicFns from '../../src/autodiff/public/index.js';

const IN = 6;
const MAT: [number, number] = [5, 7];
const rand = mulberry32(4242);
const uniform = (shape: number[]) => new NDArray(Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => rand()), shape, 'float64');
const ph = (shape: number[], name: string) => K.placeholder(shape, null, 'float64', false, name);
const RTOL = { atol: 1e-12, rtol: 1e-7 };

/** Theano's BreakRop: the identity with neither a gradient nor a tangent. */
const breakOp = defineOp({
  name: 'break_rop',
  arity: 1,
  infer: ([x]) => ({ dtype: x!.dtype, shape: x!.shape }),
  reference: ([x]) => x!,
});

/** check_rop_lop / check_mat_rop_lop: y = build(x) for an input of `shape`, y a vector. */
function checkRopLop(build: (x: Node) => Node, shape: number[], nondiff = true): void {
  const x = ph(shape, 'x');
  const v = ph(shape, 'v');
  const y = build(x);
  expect(y.ndim, 'the checker expects a vector output').to.equal(1);
  const J = autodiff.jacobian(y, x, { mode: 'reverse' });
  const flat = (t: Node) => K.reshape(t, [-1]);
  const ref = K.dot(K.reshape(J, [y.shape[0]!, -1]), flat(v));
  const fwd = autodiff.Rop(y, x, v);
  const rev = autodiff.Rop(y, x, v, { method: 'reverse' });
  const [vx, vv] = [uniform(shape), uniform(shape)];
  const [r, a, b] = K.function([x, v], [ref, fwd, rev])([vx, vv]);
  expectClose(a!, r!, RTOL, 'Rop (forward mode) vs J v');
  expectClose(b!, r!, RTOL, 'Rop (double reverse) vs J v');
  if (nondiff) expect(() => autodiff.Rop(build(breakOp(x)), x, v)).to.throw(/break_rop/);

  const u = ph([y.shape[0]!], 'u');
  const lop = autodiff.Lop(y, x, u);
  const viaGrad = autodiff.grad(K.sum(K.multiply(u, y)), x)!;
  const [l, g] = K.function([x, u], [lop, viaGrad])([uniform(shape), uniform([y.shape[0]!])]);
  expectClose(l!, g!, RTOL, 'Lop vs grad of <u, y>');
}

describe('autodiff.Rop / Lop: Theano test_rop.py', () => {
  it('max over each axis (test_max)', () => {
    checkRopLop((m) => K.max(m, 0), MAT);
    checkRopLop((m) => K.max(m, 1), MAT);
  });

  it('argmax has no Rop (test_argmax)', () => {
    const m = ph(MAT, 'mx');
    expect(() => autodiff.Rop(K.argmax(m, 1), m, ph(MAT, 'mv'))).to.throw(/int64|int32/);
  });

  it('subtensor x[:4] (test_subtensor)', () => checkRopLop((x) => K.slice_along(x, 0, 0, 4), [IN]));

  it('inc_subtensor x[:3] += t, and t[:4] += x[:4] (test_incsubtensor1, 2)', () => {
    const t3 = K.constant(uniform([3]));
    checkRopLop((x) => K.concatenate([K.add(K.slice_along(x, 0, 0, 3), t3), K.slice_along(x, 0, 3, null)], 0), [IN]);
    const t10 = K.constant(uniform([10]));
    checkRopLop((x) => K.concatenate([K.add(K.slice_along(t10, 0, 0, 4), K.slice_along(x, 0, 0, 4)), K.slice_along(t10, 0, 4, null)], 0), [IN]);
  });

  it('set_subtensor x[:3] = t, and t[:4] = x[:4] (test_setsubtensor1, 2)', () => {
    const t3 = K.constant(uniform([3]));
    checkRopLop((x) => K.concatenate([t3, K.slice_along(x, 0, 3, null)], 0), [IN]);
    const t10 = K.constant(uniform([10]));
    checkRopLop((x) => K.concatenate([K.slice_along(x, 0, 0, 4), K.slice_along(t10, 0, 4, null)], 0), [IN]);
  });

  it('print (test_print)', () => checkRopLop((x) => K.print_tensor(x, 'x'), [IN]));

  it('dimshuffle then sum (test_dimshuffle)', () => checkRopLop((x) => K.sum(K.expand_dims(K.slice_along(x, 0, 0, 4), 0), 0), [IN]));

  it('join with a constant (test_join)', () => checkRopLop((x) => K.concatenate([x, K.constant(uniform([10]))], 0), [IN]));

  it('dot with a shared matrix (test_dot)', () => {
    const W = K.variable(uniform([IN, IN]));
    checkRopLop((x) => K.reshape(K.dot(K.expand_dims(x, 0), W), [IN]), [IN], false);
  });

  it('elementwise (x + 1)^2 and x + int(x) (test_elemwise0, 1)', () => {
    checkRopLop((x) => K.square(K.add(x, 1)), [IN], false);
    checkRopLop((x) => K.add(x, K.cast(K.cast(x, 'int32'), 'float64')), [IN]);
  });

  it('flatten (test_flatten)', () => checkRopLop((m) => K.flatten(m), MAT));

  it('sum over axis 1 (test_sum)', () => checkRopLop((m) => K.sum(m, 1), MAT));

  it('softmax (test_softmax)', () => checkRopLop((x) => K.reshape(K.softmax(K.expand_dims(x, 0)), [IN]), [IN]));

  it('alloc of a sum, and of x into a 3-D tensor, flattened (test_alloc)', () => {
    checkRopLop((x) => K.tile(K.expand_dims(K.sum(x), 0), [IN]), [IN]);
    checkRopLop((x) => K.flatten(K.tile(K.reshape(x, [1, 1, IN]), [MAT[0], MAT[1], 1])), [IN]);
  });

  it('mismatched wrt and eval_points are errors (test_invalid_input)', () => {
    expect(() => autodiff.Rop(0 as never, [ph([2, 2], 'm')], [ph([2], 'v')])).to.throw(TypeError, /autodiff.Rop: f must be a tensor/);
    expect(() => autodiff.Rop(ph([2, 2], 'y'), [ph([2, 2], 'm')], [ph([2], 'v')])).to.throw(/eval_points\[0\] has shape \(2,\) but wrt\[0\] has shape \(2, 2\)/);
    expect(() => autodiff.Lop(ph([2], 'y'), [ph([2, 2], 'm')], [ph([2, 2], 'u')])).to.throw(/eval_points\[0\] has shape \(2, 2\) but f\[0\] has shape \(2,\)/);
  });

  it('several outputs keep their structure, with wrt among them (test_multiple_outputs)', () => {
    for (const method of ['forward', 'reverse'] as const) {
      const [m, v, m_, v_] = [ph([3, 7], 'm'), ph([7], 'v'), ph([3, 7], 'm_'), ph([7], 'v_')];
      const out = autodiff.Rop([m, v, K.add(m, v)], [m, v], [m_, v_], { method });
      expect(out).to.have.length(3);
      const vals = [uniform([3, 7]), uniform([7]), uniform([3, 7]), uniform([7])];
      const [a, b, c] = K.function([m, v, m_, v_], out)(vals);
      expectClose(a!, vals[2]!);
      expectClose(b!, vals[3]!);
      const sum = K.function([m_, v_], [K.add(m_, v_)])([vals[2]!, vals[3]!])[0]!;
      expectClose(c!, sum);
    }
  });

  it('partially differentiable paths (test_Rop_partially_differentiable_paths)', () => {
    const x = ph([3, 4], 'x');
    const y = ph([4, 2], 'y');
    // Differentiable through x only: no error.
    autodiff.Rop(K.sum(K.dot(x, breakOp(y))), [x], [ph([3, 4], 'vx')]);
    for (const method of ['forward', 'reverse'] as const) {
      expect(() => autodiff.Rop(K.sum(K.dot(breakOp(x), y)), [x], [ph([3, 4], 'vx')], { method })).to.throw(/break_rop/);
    }
  });
});

/** A user op with a gradient: x^3, whose gradient is 3 x^2 g (built from K functions). */
const cube = defineOp({
  name: 'rop_test_cube',
  arity: 1,
  infer: ([x]) => ({ dtype: x!.dtype, shape: x!.shape }),
  reference: ([x]) => new NDArray(Array.from(x!.data, (v) => Number(v) ** 3), x!.shape, x!.dtype),
  cpu: 'x0 * x0 * x0',
  grad: ([x], _out, g) => [K.multiply(g, K.multiply(K.square(x!), 3))],
});

describe('autodiff.Rop of a user op (defineOp): the transpose of its gradient', () => {
  it('d x^3 . v = 3 x^2 v, by forward mode and by double reverse', () => {
    const x = ph([4], 'x');
    const v = ph([4], 'v');
    const y = cube(x);
    const [vx, vv] = [uniform([4]), uniform([4])];
    const want = NDArray.from(Array.from({ length: 4 }, (_, i) => 3 * Number(vx.data[i]) ** 2 * Number(vv.data[i])), 'float64');
    const [a, b] = K.function([x, v], [autodiff.Rop(y, x, v), autodiff.Rop(y, x, v, { method: 'reverse' })])([vx, vv]);
    expectClose(a!, want, RTOL);
    expectClose(b!, want, RTOL);
  });
});

describe('autodiff: tangent graphs in debugprint', () => {
  it('with tracing on, each tangent node names the call and the forward node it differentiates', () => {
    const was = traceEnabled();
    setTrace(true);
    try {
      const x = ph([3], 'x');
      const y = K.sum(K.exp(x));
      const text = debugprint(autodiff.jvp(y, x, ph([3], 'v')), { trace: true });
      expect(text).to.match(/^sum\{axes=\[0\], keepdims=false\} \[id A\] float64 \(\) ← autodiff\.jvp of sum_\d+ \(K\.sum at rop\.test\.ts:\d+\)/);
      expect(text).to.match(/\n \|mul \[id B\] float64 \(3,\) ← autodiff\.jvp of exp_\d+ \(K\.exp at rop\.test\.ts:\d+\)/);
    } finally {
      setTrace(was);
    }
  });
});

describe('the autodiff namespace', () => {
  it('exports every function of src/autodiff/public, traced', () => {
    const names = Object.entries(publicFns).filter(([, f]) => typeof f === 'function').map(([n]) => n).sort();
    const exported = Object.entries(autodiff).filter(([, f]) => typeof f === 'function').map(([n]) => n).sort();
    // scan_checkpoints is built on K.rnn, so it lives in src/api/scan-checkpoints.ts (traced there).
    expect(exported).to.deep.equal([...names, 'scan_checkpoints'].sort());
    for (const n of names) expect((autodiff as unknown as Record<string, unknown>)[n], n).to.not.equal((publicFns as unknown as Record<string, unknown>)[n]);
  });
});
