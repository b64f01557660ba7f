// autodiff.grad's options and the gradient controls, ported from Theano's tests/test_gradient.py
// (TestGrad, test_known_grads, TestZeroGrad, TestDisconnectedGrad, test_grad_clip, test_grad_scale)
// with their numbers; plus verify_grad rows for the control ops where they act as the identity.
import { expect } from 'chai';
import { autodiff, debugprint, optimize, backend as K } from '../../src/index.js';
import { NDArray } from '../../src/ir/ndarray.js';
import { mulberry32 } from '../../src/ir/random.js';
import { gradTable } from '../helpers/gradtable.js';
import { expectClose } from '../helpers/assert.js';

const A = [[0.3, -1.2, 0.7], [1.5, 0.4, -0.6]];

gradTable('gradients: gradient controls', [
  { name: 'grad_clip wider than the gradient (the identity)', inputs: [A], build: (x) => K.square(autodiff.grad_clip(x, -100, 100)) },
  { name: 'grad_scale 1 (the identity)', inputs: [A], build: (x) => K.exp(autodiff.grad_scale(x, 1)) },
]);

const rng = (seed: number) => mulberry32(seed);
const normal = (r: () => number, shape: number[]) => new NDArray(Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => r() * 2 - 1), shape, 'float64');
const ph = (shape: (number | null)[], name: string, dtype: 'float64' | 'int32' = 'float64') => K.placeholder(shape, null, dtype, false, name);

describe('autodiff.grad: Theano semantics', () => {
  it('keeps the structure of wrt: a list gives a list, a tensor a tensor (test_grad_keep_type)', () => {
    const X = ph([2, 2], 'X');
    const y = K.sum(X);
    expect(Array.isArray(autodiff.grad(y, [X]))).to.equal(true);
    expect(Array.isArray(autodiff.grad(y, X))).to.equal(false);
  });

  it('a non-scalar cost is a TypeError (test_cost_is_scalar)', () => {
    const v = ph([3], 'v');
    const m = ph([2, 3], 'm');
    expect(() => autodiff.grad(v, v)).to.throw(TypeError, /cost must be a scalar/);
    expect(() => autodiff.grad(m, m)).to.throw(TypeError, /cost must be a scalar/);
  });

  it('a disconnected wrt raises by default, and gets zeros of its shape when ignored (test_zero_gradient_shape)', () => {
    const x = ph([3, 7], 'x');
    const s = ph([], 's');
    expect(() => autodiff.grad(s, x)).to.throw(/does not depend on wrt \(x\)/);
    const g = autodiff.grad(s, x, { disconnected_inputs: 'ignore' })!;
    const out = K.function([x, s], [g])([NDArray.from(new Array(3).fill(new Array(7).fill(1)), 'float64'), NDArray.from(1, 'float64')])[0]!;
    expect(out.shape).to.deep.equal([3, 7]);
    expect([...out.data].every((v) => v === 0)).to.equal(true);
    expect(autodiff.grad(s, x, { disconnected_inputs: 'ignore', return_disconnected: 'None' })).to.equal(null);
  });

  it('the gradient of a float32 wrt is float32, whatever the cost upcasts to (test_downcast_dtype)', () => {
    const x = K.placeholder([], null, 'float32', false, 'x');
    const y = K.multiply(x, 2);
    const z = K.placeholder([], null, 'int32', false, 'z');
    const c = K.add(y, K.cast(z, 'float64'));
    const [dx, dy, dz, dc] = autodiff.grad(c, [x, y, z, c]) as ReturnType<typeof ph>[];
    expect([dx!.dtype, dy!.dtype, dc!.dtype]).to.deep.equal(['float32', 'float32', 'float64']);
    // Integer wrt get zeros of their own dtype (K.gradients' rule; Theano gives a float zero).
    expect(dz!.dtype).to.equal('int32');
    const out = K.function([x, z], [dx!, dc!])([NDArray.from(1, 'float32'), NDArray.from(3, 'int32')]);
    expect([out[0]!.item(), out[1]!.item()]).to.deep.equal([2, 1]);
  });

  it('rejects unknown option values, naming the allowed ones', () => {
    const x = ph([], 'x');
    expect(() => autodiff.grad(x, x, { disconnected_inputs: 'maybe' as 'raise' })).to.throw(/disconnected_inputs is "maybe"; allowed: 'raise', 'warn', 'ignore'/);
    expect(() => autodiff.grad(x, x, { return_disconnected: 'Disconnected' as 'zero' })).to.throw(/return_disconnected is "Disconnected"/);
    expect(() => autodiff.grad(null, x)).to.throw(/cost is null and known_grads is empty/);
  });

  it('consider_constant gives the gradient of a constant (test_grad_constant)', () => {
    const x = ph([], 'x');
    const y = ph([], 'y');
    const one = K.constant(1, 'float64');
    const gx = autodiff.grad(K.add(x, y), x, { consider_constant: [x] })!;
    const gone = autodiff.grad(K.add(one, y), one)!;
    const [a, b] = K.function([x, y], [gx, gone])([NDArray.from(1, 'float64'), NDArray.from(0.5, 'float64')]);
    expectClose(a!, b!);
    // and a constant blocks what passes through it
    const gy = autodiff.grad(K.multiply(K.exp(y), y), y, { consider_constant: [K.exp(y)] })!;
    expectClose(K.function([y], [gy])([NDArray.from(0.5, 'float64')])[0]!, NDArray.from(Math.exp(0.5), 'float64'));
  });

  it('known_grads at any cut of the graph gives the full gradient (test_known_grads)', () => {
    const x = ph([], 'x');
    const c = ph([10], 'c');
    const t = 3;
    const ct = K.gather(c, K.constant([t], 'int32'));
    const p = K.pow(x, K.constant(t, 'float64'));
    const y = K.multiply(ct, p);
    const cost = K.sum(K.square(y));
    const r = rng(2012);
    const values = [normal(r, [10]), NDArray.from(0.7, 'float64')];
    const inputs = [c, x];
    const truth = K.function(inputs, autodiff.grad(cost, inputs, { disconnected_inputs: 'ignore' }) as never)(values);
    for (const layer of [[cost], [y], [ct, p], [ct, x]]) {
      const first = autodiff.grad(cost, layer, { disconnected_inputs: 'ignore' }) as never[];
      const known = layer.map((v, i) => [v, first[i]!] as const);
      const full = autodiff.grad(null, inputs, { known_grads: known, disconnected_inputs: 'ignore' }) as never;
      const got = K.function(inputs, full)(values);
      got.forEach((g, i) => expectClose(g, truth[i]!, { atol: 1e-12, rtol: 1e-12 }));
    }
  });
});

describe('autodiff gradient controls (Theano test_gradient.py)', () => {
  const a = normal(rng(5), [5, 5]);
  const same = (expr: (x: ReturnType<typeof ph>) => ReturnType<typeof ph>, want: (x: ReturnType<typeof ph>) => ReturnType<typeof ph>) => {
    const x = ph([5, 5], 'x');
    const g = autodiff.grad(K.sum(expr(x)), x)!;
    const [got, exp] = K.function([x], [g, want(x)])([a]);
    expectClose(got!, exp!, { atol: 1e-12, rtol: 1e-12 });
  };

  it('zero_grad: x * zero_grad(x) has gradient x; zero_grad(x) has gradient 0 (TestZeroGrad.test_grad)', () => {
    same((x) => K.multiply(x, autodiff.zero_grad(x)), (x) => x);
    same((x) => K.multiply(x, autodiff.zero_grad(K.exp(x))), (x) => K.exp(x));
    same((x) => autodiff.zero_grad(x), (x) => K.zeros_like(x));
    same((x) => K.multiply(K.square(x), autodiff.zero_grad(x)), (x) => K.multiply(K.square(x), 2));
  });

  it('zero_grad: its Rop is zero (TestZeroGrad.test_rop)', () => {
    const x = ph([5], 'x');
    const v = ph([5], 'v');
    const r = K.function([x, v], [autodiff.Rop(autodiff.zero_grad(x), x, v)])([normal(rng(1), [5]), normal(rng(2), [5])])[0]!;
    expect([...r.data].filter((e) => e !== 0)).to.have.length(0);
  });

  it('disconnected_grad: the same gradients as zero_grad where connected (TestDisconnectedGrad.test_grad)', () => {
    same((x) => K.multiply(x, autodiff.disconnected_grad(x)), (x) => x);
    same((x) => K.multiply(x, autodiff.disconnected_grad(K.exp(x))), (x) => K.exp(x));
    same((x) => K.multiply(K.square(x), autodiff.disconnected_grad(x)), (x) => K.multiply(K.square(x), 2));
  });

  it('disconnected_grad: a path only through it is disconnected (TestDisconnectedGrad.test_disconnected_paths)', () => {
    const x = ph([5, 5], 'x');
    expect(() => autodiff.grad(K.sum(autodiff.disconnected_grad(x)), x)).to.throw(/does not depend on wrt/);
    autodiff.grad(K.sum(K.add(x, autodiff.disconnected_grad(x))), x);
    const [p, b] = [ph([5, 5], 'a'), ph([5, 5], 'b')];
    const y = K.add(p, autodiff.disconnected_grad(b));
    expect(() => autodiff.grad(K.sum(y), b)).to.throw(/does not depend on wrt \(b\)/);
    autodiff.grad(K.sum(y), p);
  });

  it('the control ops leave the compiled graph (test_op_removed)', () => {
    const x = ph([5, 5], 'x');
    const outs = [K.multiply(x, autodiff.zero_grad(x)), autodiff.grad_clip(x, -1, 1), autodiff.disconnected_grad(x)];
    expect(debugprint(outs)).to.match(/grad_scale/);
    expect(optimize(outs).debugprint()).to.not.match(/grad_scale|grad_clip|stop_gradient/);
  });

  it('grad_clip: d(clip(x)^2)/dx at 2 is 1, not 4 (test_grad_clip)', () => {
    const x = ph([], 'x');
    const z = autodiff.grad(K.square(autodiff.grad_clip(x, -1, 1)), x)!;
    const z2 = autodiff.grad(K.square(x), x)!;
    const [o1, o2] = K.function([x], [z, z2])([NDArray.from(2, 'float64')]);
    expect([o1!.item(), o2!.item()]).to.deep.equal([1, 4]);
  });

  it('grad_scale: d(scale(x, 2)^2)/dx at 2 is 8 (test_grad_scale)', () => {
    const x = ph([], 'x');
    const z = autodiff.grad(K.square(autodiff.grad_scale(x, 2)), x)!;
    const z2 = autodiff.grad(K.square(x), x)!;
    const [o1, o2] = K.function([x], [z, z2])([NDArray.from(2, 'float64')]);
    expect([o1!.item(), o2!.item()]).to.deep.equal([8, 4]);
  });

  it('bad arguments are errors naming the function and argument', () => {
    const x = ph([2], 'x');
    expect(() => autodiff.grad_clip(x, 1, -1)).to.throw(/autodiff.grad_clip: lo \(1\) must not exceed hi \(-1\)/);
    expect(() => autodiff.grad_scale(x, Number.NaN)).to.throw(TypeError, /autodiff.grad_scale: scale must be a finite number/);
    expect(() => autodiff.zero_grad(3 as never)).to.throw(TypeError, /autodiff.zero_grad: x must be a tensor/);
  });
});

describe('autodiff.checkpoint: rematerialisation', () => {
  const W = () => K.variable([[0.5, -0.3], [0.2, 0.8], [-0.6, 0.1]], 'float64', 'W');
  const xv = NDArray.from([[0.1, 0.2, 0.3], [0.3, -0.1, 0.2], [0, 0, 0.1], [0.2, 0.1, -0.3]], 'float64');
  /** Lines of an optimized listing that compute op `op` (not the "printed above" references). */
  const computed = (text: string, op: string) => text.split('\n').filter((l) => new RegExp(`\\b${op}\\b`).test(l) && !l.includes('printed above')).length;

  it('gives the gradients of the function itself', () => {
    const w = W();
    const block = (h: ReturnType<typeof ph>, s: ReturnType<typeof ph>) => [K.tanh(K.exp(K.dot(h, w))), K.multiply(K.sin(h), s)] as ReturnType<typeof ph>[];
    const [x, s] = [ph([4, 3], 'x'), ph([], 's')];
    const cost = (outs: ReturnType<typeof ph>[]) => K.add(K.sum(K.square(outs[0]!)), K.sum(outs[1]!));
    const plain = autodiff.grad(cost(block(x, s)), [w, x, s]) as ReturnType<typeof ph>[];
    const remat = autodiff.grad(cost(autodiff.checkpoint(block)(x, s)), [w, x, s]) as ReturnType<typeof ph>[];
    const out = K.function([x, s], [...plain, ...remat], [], { device: 'cpu', fallback: 'error' })([xv, NDArray.from(0.7, 'float64')]);
    for (let i = 0; i < 3; i++) expectClose(out[3 + i]!, out[i]!, { atol: 1e-15, rtol: 1e-14 });
  });

  it('the backward pass recomputes the region, and the passes keep the copy', () => {
    const w = W();
    const block = (h: ReturnType<typeof ph>) => K.tanh(K.exp(K.dot(h, w)));
    const loss = (y: ReturnType<typeof ph>) => K.sum(K.square(y));
    // Two inputs: the same function on the same input is the same (hash-consed) graph, so it would be one region.
    const yPlain = block(ph([4, 3], 'x1'));
    const yRemat = autodiff.checkpoint(block)(ph([4, 3], 'x2'));
    const plain = optimize([loss(yPlain), ...K.gradients(loss(yPlain), [w])]).debugprint();
    const remat = optimize([loss(yRemat), ...K.gradients(loss(yRemat), [w])]).debugprint();
    expect(computed(plain, 'exp'), plain).to.equal(1);
    expect(computed(remat, 'exp'), remat).to.equal(2);
    expect(computed(remat, 'tanh'), remat).to.equal(2);
  });

  it('needs a function of tensors', () => {
    expect(() => autodiff.checkpoint(3 as never)).to.throw(TypeError, /autodiff.checkpoint: fn must be a function/);
    expect(() => autodiff.checkpoint((a: ReturnType<typeof ph>) => a)(2 as never)).to.throw(TypeError, /argument 0 of the checkpointed function must be a tensor/);
  });
});

describe('autodiff.custom_gradient', () => {
  type T = ReturnType<typeof ph>;
  // JAX's custom_vjp example: log(1 + e^x), whose gradient 1 - 1 / (1 + e^x) stays finite where e^x overflows.
  const log1pexp = autodiff.custom_gradient(
    (x: T) => K.log(K.add(K.exp(x), 1)),
    ([x], _outs, [g]) => [K.multiply(g!, K.subtract(1, K.divide(1, K.add(K.exp(x!), 1))))],
  );

  it("uses grad's cotangents: finite where the graph's own gradient is not (float32, x = 100)", () => {
    const x = K.placeholder([3], null, 'float32', false, 'x');
    const y = log1pexp(x);
    const [gCustom] = K.gradients(K.sum(y), [x]);
    const [gPlain] = K.gradients(K.sum(K.log(K.add(K.exp(x), 1))), [x]);
    const [v, gc, gp] = K.function([x], [y, gCustom!, gPlain!], [], { device: 'cpu', fallback: 'error' })([NDArray.from([0, 2, 100], 'float32')]);
    expect(Number(v!.data[0])).to.be.closeTo(Math.log(2), 1e-6);
    expectClose(gc!, NDArray.from([0.5, 1 - 1 / (1 + Math.exp(2)), 1], 'float32'), { atol: 1e-6, rtol: 1e-6 });
    expect(Number.isFinite(Number(gp!.data[2]))).to.equal(false);
  });

  it('several arguments and outputs; a cotangent of null gives none; grad sees zeros for an unused output', () => {
    const seen: number[] = [];
    const f = autodiff.custom_gradient(
      (a: T, b: T) => [K.multiply(a, b), K.add(a, b)],
      (_ins, _outs, [g1, g2]) => { seen.push(g2!.ndim); return [K.multiply(g1!, 10), null]; },
    );
    const [a, b] = [ph([2], 'a'), ph([2], 'b')];
    const [p] = f(a, b);
    const [ga, gb] = autodiff.grad(K.sum(p!), [a, b]) as T[];
    const [oa, ob] = K.function([a, b], [ga!, gb!])([NDArray.from([1, 2], 'float64'), NDArray.from([3, 4], 'float64')]);
    expectClose(oa!, NDArray.from([10, 10], 'float64'));
    expectClose(ob!, NDArray.from([0, 0], 'float64'));
    expect(seen).to.deep.equal([1]);
  });

  it('forward mode differentiates fn itself', () => {
    const f = autodiff.custom_gradient((x: T) => K.square(K.sin(x)), (_i, _o, [g]) => [g!]);
    const [x, v] = [ph([3], 'x'), ph([3], 'v')];
    const t = K.function([x, v], [autodiff.jvp(f(x), x, v)], [], { device: 'cpu', fallback: 'error' })([NDArray.from([0.1, 0.2, 0.3], 'float64'), NDArray.from([1, 1, 1], 'float64')])[0]!;
    expectClose(t, NDArray.from([0.1, 0.2, 0.3].map((a) => Math.sin(2 * a)), 'float64'), { atol: 1e-15, rtol: 1e-14 });
  });

  it('checks what grad returns', () => {
    const bad = autodiff.custom_gradient((x: T) => K.exp(x), () => []);
    const x = ph([2], 'x');
    expect(() => K.gradients(K.sum(bad(x)), [x])).to.throw(/autodiff.custom_gradient: grad returned 0 cotangents for 1 arguments/);
    const wrong = autodiff.custom_gradient((x: T) => K.exp(x), () => [K.ones([3], 'float64')]);
    expect(() => K.gradients(K.sum(wrong(x)), [x])).to.throw(/grad's cotangent 0 is of shape \(3,\); argument 0 has shape \(2,\)/);
    expect(() => autodiff.custom_gradient(3 as never, () => [])).to.throw(TypeError, /fn must be a function/);
  });
});
