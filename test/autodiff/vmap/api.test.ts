// autodiff.vmap's arguments (in_axes, out_axes, null entries, errors), Scan batched without a
// loop, per-example gradients of a small MLP compiled on the cpu target against a loop of
// gradient calls, and vmap over random graphs (fast-check).
import { expect } from 'chai';
import fc from 'fast-check';
import { autodiff, backend as K, defineOp, ValueError } from '../../../src/index.js';
import { NDArray } from '../../../src/ir/ndarray.js';
import type { Node } from '../../../src/ir/node.js';
import { topoSort } from '../../../src/ir/graph.js';
import { checkVmap, expectClose } from '../../helpers/vmap.js';
import { runPasses } from '../../../src/passes/pass.js';
import { mergePass } from '../../../src/passes/merge.js';
import { canonicalizePass } from '../../../src/passes/canonicalize.js';
import { stabilizePass } from '../../../src/passes/stabilize.js';
import { specializePass } from '../../../src/passes/specialize.js';

const { vmap } = autodiff;
const nd = (v: unknown) => NDArray.from(v, 'float64');
const A = nd([[0.3, -1.2, 0.7], [1.5, 0.4, -0.6]]);
const V = nd([0.5, -0.25, 1.5]);

describe('autodiff.vmap: in_axes and out_axes', () => {
  const f = (x: Node, y: Node) => K.sum(K.tanh(x.mul(y)), -1);
  it('a batched and a shared (null) argument', () => { checkVmap(f, [A, V], [0, null]); });
  it('batch along axis 1 and along the last axis (negative in_axes)', () => {
    checkVmap(f, [A, V], [1, 0]);
    checkVmap((x) => K.dot(x, K.transpose(x)), [A], [-1]);
  });
  it('several results with out_axes per result, unbatched results broadcast over the batch', () => {
    const g = (x: Node, w: Node) => [K.dot(x, w), K.sum(w), K.exp(x)];
    checkVmap(g, [V, nd([[1, 2], [3, 4], [5, 6]])], [0, null], 3, [0, 0, 1]);
  });
  it('out_axes null keeps a result that is the same for every example unbatched', () => {
    const x = K.placeholder([4, 3], undefined, 'float64');
    const w = K.placeholder([3], undefined, 'float64');
    const [y, s] = vmap((xi: Node, wi: Node) => [xi.mul(wi), K.sum(wi)], [0, null], [0, null])(x, w) as Node[];
    expect(y!.shape).to.deep.equal([4, 3]);
    expect(s!.shape).to.deep.equal([]);
    expect(s).to.equal(K.sum(w));
  });
  it('per-example gradients for a batch of unknown size, compiled', () => {
    const W = K.variable(NDArray.from([[0.1, 0.2], [0.3, -0.4], [0.5, 0.6]], 'float32'));
    const grads = (x: Node) => K.gradients(K.sum(K.tanh(K.dot(x, W))), [W]);
    const x = K.placeholder([null, 3]);
    const [g] = vmap(grads)(x) as Node[];
    expect(g!.shape).to.deep.equal([null, 3, 2]);
    const rows = [[1, 2, 3], [0, 1, 0]];
    const [got] = K.function([x], [g!])([rows]) as NDArray[];
    const x1 = K.placeholder([3]);
    const one = K.function([x1], grads(x1));
    rows.forEach((r, i) => expectClose(new NDArray(got!.data.slice(i * 6, (i + 1) * 6), [3, 2], 'float32'), (one([r]) as NDArray[])[0]!, `example ${i}`, 1e-6));
  });
  it('a batch of unknown size (null dim) is batched without it', () => {
    const x = K.placeholder([null, 3], undefined, 'float64');
    const y = vmap((xi: Node) => K.softmax(K.expand_dims(xi, 0)))(x) as Node;
    expect(y.shape).to.deep.equal([null, 1, 3]);
    const f1 = K.function([x], [y]);
    const [got] = f1([A]) as NDArray[];
    const want = K.function([x], [K.expand_dims(K.softmax(x), 1)])([A]) as NDArray[];
    expectClose(got!, want[0]!, 'softmax rows', 1e-6);
  });

  it('a random draw inside fn is one draw shared by every example (its arguments are not batched)', () => {
    const x = K.placeholder([3, 6], undefined, 'float64');
    const y = vmap((xi: Node) => K.dropout(xi, 0.5, null, 7))(x) as Node;
    const [got] = K.function([x], [y])([nd([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]])]) as NDArray[];
    const rows = [0, 1, 2].map((i) => Array.from(got!.data.slice(i * 6, (i + 1) * 6)));
    expect(rows[1]).to.deep.equal(rows[0]);
    expect(rows[2]).to.deep.equal(rows[0]);
    expect(new Set(rows[0]).size, 'some kept, some dropped').to.equal(2);
  });
  it('a random draw whose size differs per example is an error naming the op', () => {
    const s = K.placeholder([3, 2], undefined, 'int32');
    expect(() => vmap((si: Node) => K.random_normal(si))(s)).to.throw(ValueError, /autodiff\.vmap: cannot batch random_normal: a random draw whose arguments differ per example/);
  });

  describe('errors name the function, the argument and what is allowed', () => {
    const x = K.placeholder([4, 3], undefined, 'float64');
    const y = K.placeholder([5, 3], undefined, 'float64');
    const id = (t: Node) => t.mul(2);
    const cases: [string, () => unknown, RegExp][] = [
      ['axis out of range', () => vmap(id, 2)(x), /autodiff\.vmap: in_axes\[0\] = 2 is out of range for a tensor of shape \(4, 3\) \(allowed: -2\.\.1, or null\)/],
      ['axis not an integer', () => vmap(id, 0.5)(x), /in_axes\[0\] = number 0\.5; an axis is an integer or null/],
      ['in_axes of the wrong length', () => vmap(id, [0, 0])(x), /in_axes has 2 entries but the function was called with 1/],
      ['in_axes of the wrong type', () => vmap(id, 'a' as unknown as number)(x), /in_axes must be an integer, null, or an array of them; got string a/],
      ['no batched argument', () => vmap(id, null)(x), /in_axes gives no batched argument/],
      ['batch sizes that differ', () => vmap((a: Node, b: Node) => a.add(b))(x, y), /argument 0 has 4 \(axis 0\) but argument 1 has 5/],
      ['a batched result with out_axes null', () => vmap(id, 0, null)(x), /out_axes\[0\] is null but result 0 differs per example/],
      ['out_axes out of range', () => vmap(id, 0, 3)(x), /out_axes\[0\] = 3 is out of range/],
      ['a result that is not a tensor', () => vmap(() => 3 as unknown as Node)(x), /fn must return a tensor or an array of tensors; result 0 is number 3/],
      ['an argument that is not a tensor', () => vmap(id)(3 as unknown as Node), /argument 0 must be a tensor, got number 3/],
      ['per-example kernel gradients with an unknown batch size', () => {
        const k = K.variable(new NDArray(new Float32Array(36).fill(0.1), [3, 3, 1, 4], 'float32'));
        return vmap((t: Node) => K.gradients(K.sum(K.conv2d(t, k, [1, 1], 'same')), [k])[0]!)(K.placeholder([null, 1, 5, 5, 1]));
      }, /autodiff\.vmap: batching a convolution with batched kernels \(or per-example kernel gradients\) needs a static batch size/],
    ];
    for (const [name, f, re] of cases) it(name, () => { expect(f).to.throw(re); });
    it('fn must be a function', () => { expect(() => vmap(3 as unknown as () => Node)).to.throw(TypeError, /fn must be a function/); });
    it('the errors are ValueErrors', () => { expect(() => vmap(id, 2)(x)).to.throw(ValueError); });
  });
});

describe('autodiff.vmap: user ops (defineOp) are batched by applying them to each example', () => {
  // A row-wise op: the per-example reference sees one example's (2, 3) rows.
  const rowMax = defineOp({
    name: 'vmap_test_row_argmax_value',
    arity: 1,
    infer: ([t]) => ({ dtype: t!.dtype, shape: t!.shape.slice(0, -1) }),
    reference: ([t]) => {
      const n = t!.shape[t!.shape.length - 1]!;
      const out = Array.from({ length: t!.size / n }, (_, r) => Math.max(...Array.from(t!.data.slice(r * n, (r + 1) * n))));
      return new NDArray(out, t!.shape.slice(0, -1), t!.dtype);
    },
  });
  it('matches the per-example results, stacked', () => { checkVmap((x) => rowMax(x).mul(2), [A], [0]); checkVmap((x) => rowMax(x), [A], [1]); });
});

describe('autodiff.vmap: the example of docs/autodiff.md', () => {
  it('runs as written and gives the per-example losses and gradients', () => {
    const W = K.variable([[1, 2, 3], [4, 5, 6]]);
    const loss = (x: Node) => K.sum(K.tanh(K.dot(x, W)));
    const grad = (x: Node) => K.gradients(loss(x), [W])[0]!;
    const X = K.placeholder([4, 2]);
    const perExample = autodiff.vmap(grad)(X) as Node;
    expect(perExample.shape).to.deep.equal([4, 2, 3]);
    const f = K.function([X], [autodiff.vmap(loss)(X) as Node, perExample]);
    const rows = [[0.1, 0.2], [0.3, -0.4], [1, 2], [0, 0.5]];
    const [losses, grads] = f([rows]) as NDArray[];
    const x1 = K.placeholder([2]);
    const one = K.function([x1], [loss(x1), grad(x1)]);
    rows.forEach((r, i) => {
      const [l, g] = one([r]) as NDArray[];
      expect(losses!.data[i]).to.be.closeTo(l!.data[0]!, 1e-6);
      expectClose(new NDArray(grads!.data.slice(i * 6, (i + 1) * 6), [2, 3], 'float32'), g!, `example ${i}`, 1e-6);
    });
  });
});

describe('autodiff.vmap: Scan', () => {
  const W = nd([[0.5, -0.3], [0.2, 0.8]]);
  const S = nd([[[0.1, 0.2], [0.3, -0.1], [0.0, 0.5]], [[0.4, -0.2], [0.1, 0.1], [-0.3, 0.2]]]); // (N=2, T=3, D=2)
  const H0 = nd([[0.1, -0.1], [0.2, 0.0]]);
  const rnn = (x: Node, h0: Node, w: Node) => {
    const [last, outs] = K.rnn((xt, [h]) => { const hn = K.tanh(K.dot(xt, w).add(K.dot(h!, w))); return [hn, [hn]]; }, x, [h0]);
    return [last, outs];
  };
  it('batched sequences: values and per-example gradients (the reverse scan batched too)', () => {
    checkVmap(rnn, [S, H0, W], [0, null, null]);
    checkVmap((x, h0, w) => K.gradients(K.sum(rnn(x, h0, w)[1]!), [w, h0]), [S, H0, W], [0, null, null]);
  });
  it('only the initial state batched, or only a constant (the state becomes batched by the body)', () => {
    checkVmap(rnn, [S, H0, W], [null, 2, null]);
    checkVmap(rnn, [S, H0, W], [null, null, 1]);
    checkVmap((x, h0, w) => K.gradients(K.sum(rnn(x, h0, w)[0]!), [w]), [S, H0, W], [null, null, 0]);
  });
  it('the batched scan is one scan node, no loop over examples', () => {
    const x = K.placeholder([5, 2, 3, 2], undefined, 'float64');
    const h0 = K.placeholder([2, 2], undefined, 'float64');
    const w = K.placeholder([2, 2], undefined, 'float64');
    const [, outs] = vmap(rnn, [0, null, null])(x, h0, w) as Node[];
    expect(topoSort([outs!]).filter((n) => n.op === 'scan')).to.have.length(1);
  });
  it('foldl with a batched initializer', () => {
    checkVmap((e, i) => K.foldl((acc, v) => acc.mul(0.5).add(v), e, i), [nd([[1, 2], [3, 4], [5, 6]]), nd([0.5, -1])], [null, 0]);
  });
});

describe('autodiff.vmap: per-example gradients of an MLP (vmap(grad)) against a loop, compiled', () => {
  it('matches one gradient call per example, and the products stay products', () => {
    const [n, d, h, c] = [8, 6, 5, 3];
    const rnd = (shape: number[], s: number) => NDArray.from(Array.from({ length: shape.reduce((p, q) => p * q, 1) }, (_, i) => Math.sin(i * 1.7 + s) * 0.5), 'float32').reshape(shape);
    const W1 = K.variable(rnd([d, h], 1));
    const b1 = K.variable(rnd([h], 2));
    const W2 = K.variable(rnd([h, c], 3));
    const loss = (x: Node, y: Node) => {
      const z = K.dot(K.relu(K.dot(x, W1).add(b1)), W2);
      return K.logsumexp(z).sub(K.sum(y.mul(z))); // softmax crossentropy of one example
    };
    const grads = (x: Node, y: Node) => K.gradients(loss(x, y), [W1, b1, W2]);
    const X = K.placeholder([n, d]);
    const Y = K.placeholder([n, c]);
    const per = vmap(grads)(X, Y) as Node[];
    // No loop over examples: the batched graph has as many nodes for a batch of 2n.
    const twice = vmap(grads)(K.placeholder([2 * n, d]), K.placeholder([2 * n, c])) as Node[];
    expect(topoSort(twice).length).to.equal(topoSort(per).length);
    expect(topoSort(per).filter((m) => m.op === 'concat')).to.have.length(0);
    const xs = rnd([n, d], 4);
    const ys = NDArray.from(Array.from({ length: n * c }, (_, i) => (i % c === (Math.floor(i / c) % c) ? 1 : 0)), 'float32').reshape([n, c]);
    const got = K.function([X, Y], per)([xs, ys]) as NDArray[];
    const x1 = K.placeholder([d]);
    const y1 = K.placeholder([c]);
    const one = K.function([x1, y1], grads(x1, y1));
    for (let i = 0; i < n; i++) {
      const want = one([NDArray.from(Array.from(xs.data.slice(i * d, (i + 1) * d)), 'float32'), NDArray.from(Array.from(ys.data.slice(i * c, (i + 1) * c)), 'float32')]) as NDArray[];
      want.forEach((w, k) => {
        const size = w.size;
        const g = new NDArray(got[k]!.data.slice(i * size, (i + 1) * size), w.shape, 'float32');
        expectClose(g, w, `example ${i} gradient ${k}`, 1e-5);
      });
    }
  });
});

describe('autodiff.vmap: per-example squared gradient norms (DP-SGD clipping) from the factors', () => {
  const [n, d, h, c] = [8, 6, 5, 3];
  const rnd = (shape: number[], s: number) => NDArray.from(Array.from({ length: shape.reduce((p, q) => p * q, 1) }, (_, i) => Math.sin(i * 1.3 + s) * 0.7), 'float64').reshape(shape);
  const W1 = K.variable(rnd([d, h], 1), 'float64');
  const W2 = K.variable(rnd([h, c], 2), 'float64');
  const loss = (x: Node, y: Node) => { const z = K.dot(K.tanh(K.dot(x, W1)), W2); return K.logsumexp(z).sub(K.sum(y.mul(z))); };
  const norms = (x: Node, y: Node) => K.gradients(loss(x, y), [W1, W2]).map((g) => K.sum(K.square(g))).reduce((p, q) => p.add(q));
  const X = K.placeholder([n, d], null, 'float64');
  const Y = K.placeholder([n, c], null, 'float64');
  const per = vmap(norms)(X, Y) as Node;
  const rewrites = [mergePass, canonicalizePass, stabilizePass, specializePass, canonicalizePass];
  const size = (m: Node) => m.shape.reduce((p: number, q) => p * (q ?? 0), 1);
  const outerShapes = (outs: readonly Node[]) => topoSort(outs).filter((m) => size(m) === n * d * h || size(m) === n * h * c).map((m) => m.shape);

  it('the optimizer never forms the per-example outer products (vmap\'s graph does)', () => {
    expect(outerShapes([per])).to.not.deep.equal([]);
    expect(outerShapes(runPasses(rewrites, { outputs: [per] }).outputs)).to.deep.equal([]);
  });

  it('the compiled norms equal the reference interpreter\'s, example by example', () => {
    const xs = rnd([n, d], 3);
    const ys = NDArray.from(Array.from({ length: n * c }, (_, i) => (i % c === Math.floor(i / c) % c ? 1 : 0)), 'float64').reshape([n, c]);
    const got = (K.function([X, Y], [per])([xs, ys]) as NDArray[])[0]!;
    const want = (K.function([X, Y], [per], [], { optimizer: 'none' })([xs, ys]) as NDArray[])[0]!;
    expectClose(got, want, 'norms', 1e-12);
  });
});

/** vmap compiled on the cpu target against one compiled call per example. */
function againstLoop(build: (...xs: Node[]) => Node[], batch: readonly NDArray[], tol: number): void {
  const ph = batch.map((b) => K.placeholder([...b.shape], null, b.dtype));
  const got = K.function(ph, vmap(build)(...ph) as Node[])([...batch]) as NDArray[];
  const one = batch.map((b) => K.placeholder(b.shape.slice(1), null, b.dtype));
  const f = K.function(one, build(...one));
  const n = batch[0]!.shape[0]!;
  for (let i = 0; i < n; i++) {
    const row = (b: NDArray) => { const k = b.size / n; return new NDArray(b.data.slice(i * k, (i + 1) * k), b.shape.slice(1), b.dtype); };
    (f(batch.map(row)) as NDArray[]).forEach((w, k) => expectClose(row(got[k]!), w, `example ${i} result ${k}`, tol));
  }
}

describe('autodiff.vmap: per-example gradients through convolutions, pooling and a recurrence, compiled', () => {
  const rnd = (shape: number[], s: number) => NDArray.from(Array.from({ length: shape.reduce((p, q) => p * q, 1) }, (_, i) => Math.sin(i * 1.3 + s) * 0.5), 'float32').reshape(shape);
  it('a small CNN: conv2d, relu, max pooling, dense (batched kernels become conv groups)', () => {
    const k = K.variable(rnd([3, 3, 2, 4], 1));
    const w = K.variable(rnd([16, 3], 2));
    // one example is a batch of one image (1, 6, 6, 2)
    const cnn = (x: Node, y: Node) => {
      const h = K.pool2d(K.relu(K.conv2d(x, k, [1, 1], 'same')), [3, 3], [3, 3]);
      const z = K.dot(K.reshape(h, [1, 16]), w);
      return K.gradients(K.sum(K.square(z.sub(y))), [k, w]);
    };
    againstLoop(cnn, [rnd([5, 1, 6, 6, 2], 3), rnd([5, 1, 3], 4)], 1e-4);
  });
  it('an LSTM-free recurrence: K.rnn with tanh, gradients through the reverse scan', () => {
    const W = K.variable(rnd([3, 3], 5));
    const U = K.variable(rnd([2, 3], 6));
    const rec = (x: Node) => {
      const [last] = K.rnn((xt, [h]) => { const hn = K.tanh(K.dot(xt, U).add(K.dot(h!, W))); return [hn, [hn]]; }, x, [K.zeros([1, 3])]);
      return K.gradients(K.sum(last), [W, U]);
    };
    againstLoop(rec, [rnd([4, 1, 5, 2], 7)], 1e-4);
  });
});

/** Random graphs: a small op vocabulary applied to batched and shared inputs. */
describe('autodiff.vmap: random graphs (fast-check)', () => {
  type Step = { op: number; a: number; b: number; axis: number };
  const unary: ((x: Node) => Node)[] = [K.tanh, K.exp, (x) => K.square(x), (x) => K.relu(x), (x) => x.mul(0.5)];
  const build = (steps: readonly Step[]) => (x: Node, y: Node, w: Node) => {
    const vals: Node[] = [x, y];
    for (const s of steps) {
      const p = vals[s.a % vals.length]!;
      const q = vals[s.b % vals.length]!;
      let out: Node;
      switch (s.op % 8) {
        case 0: out = unary[s.axis % unary.length]!(p); break;
        case 1: out = K.add(p, q); break;
        case 2: out = K.multiply(p, q); break;
        case 3: out = K.dot(p, w); break;
        case 4: out = K.transpose(p); break;
        case 5: out = K.reverse(p, s.axis % 2); break;
        case 6: out = K.concatenate([p, q], s.axis % 2); break;
        default: out = K.repeat_elements(K.sum(p, s.axis % 2, true), 3, s.axis % 2).add(K.max(q, s.axis % 2, true)); break;
      }
      // keep every value (3, 3) so any two combine
      vals.push(out.ndim === 2 && out.shape[0] === 3 && out.shape[1] === 3 ? out : K.slice(K.concatenate([out, out], 0), [0, 0], [3, 3]));
    }
    return vals[vals.length - 1]!;
  };
  const X = nd([[0.3, -1.2, 0.7], [1.5, 0.4, -0.6], [0.2, 0.1, -0.4]]);
  const Y = nd([[0.1, 0.2, 0.3], [-0.5, 0.4, 0.0], [0.6, -0.7, 0.8]]);
  const W = nd([[0.5, -0.3, 0.1], [0.2, 0.8, -0.4], [0.0, 0.3, 0.6]]);
  it('vmap(f)(X) is f on each example, stacked, values and gradients', () => {
    const step = fc.record({ op: fc.nat(7), a: fc.nat(9), b: fc.nat(9), axis: fc.nat(9) });
    const axis = fc.option(fc.integer({ min: 0, max: 2 }), { nil: null });
    fc.assert(fc.property(fc.array(step, { minLength: 1, maxLength: 6 }), axis, axis, axis, (steps, ax, ay, aw) => {
      const f = build(steps);
      const axes = ax === null && ay === null && aw === null ? [0, ay, aw] : [ax, ay, aw];
      checkVmap(f, [X, Y, W], axes);
      checkVmap((x, y, w) => K.gradients(K.sum(f(x, y, w)), [x, w]), [X, Y, W], axes);
    }), { numRuns: 40 });
  });
});
