// K.function's `borrow` (Theano's Out(borrow=True)): on the cpu device a result may be an array the
// function keeps and writes again at its next call; every value is the one a function without
// borrow returns, whatever the previous call left in the array (zero-filled where a step
// accumulates); update values never share a kept array; checking mode and the other targets return
// fresh arrays, which the contract allows.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import { expectClose } from '../helpers/assert.js';
import { targets } from '../helpers/targets.js';
import { compileCacheStats } from '../../src/runtime/cpu/compile.js';

const arr = (shape: number[], f: (i: number) => number, dtype: 'float32' | 'float64' = 'float32') => {
  const values = Array.from({ length: shape.reduce((p, d) => p * d, 1) }, (_, i) => f(i));
  return new NDArray(dtype === 'float32' ? Float32Array.from(values) : Float64Array.from(values), shape, dtype);
};
const EXACT = { atol: 0, rtol: 0 };

describe('K.function borrow: outputs kept between calls (cpu)', () => {
  it('returns the same arrays at the next call, holding that call\'s values', () => {
    const x = K.placeholder([null, 300], null, 'float32', false, 'x');
    const outs = [K.softmax(x), K.sum(K.square(x), 1), K.max(x, 0)];
    const f = K.function([x], outs, [], { borrow: true });
    const plain = K.function([x], outs);
    const a = arr([4, 300], (i) => Math.sin(i));
    const b = arr([4, 300], (i) => Math.cos(3 * i) * 2);
    const r1 = f([a]);
    expect(f.source()).to.contain('rt.held(');
    const kept = r1.map((r) => r.data);
    const r2 = f([b]);
    r2.forEach((r, k) => {
      expect(r.data, `output ${k}`).to.equal(kept[k]);
      expectClose(r, plain([b])[k]!, EXACT);
    });
    // the first call's results now hold the second call's values (what borrow allows)
    expectClose(r1[1]!, plain([b])[1]!, EXACT);
    // another batch size: arrays of its own length, the right values
    const c = arr([7, 300], (i) => (i % 13) - 6);
    f([c]).forEach((r, k) => expectClose(r, plain([c])[k]!, EXACT));
    f([a]).forEach((r, k) => expectClose(r, plain([a])[k]!, EXACT));
  });

  it('a gather\'s gradient (a step that adds into the kept array) has each call\'s values', () => {
    const W = K.placeholder([50, 8], null, 'float64', false, 'W');
    const ids = K.placeholder([6], null, 'int32', false, 'ids');
    const [g] = K.gradients(K.sum(K.square(K.gather(W, ids))), [W]);
    const f = K.function([W, ids], [g!], [], { borrow: true });
    const plain = K.function([W, ids], [g!]);
    const w = arr([50, 8], (i) => Math.sin(i), 'float64');
    const i1 = new NDArray(Int32Array.from([1, 3, 3, 7, 49, 1]), [6], 'int32');
    const i2 = new NDArray(Int32Array.from([0, 2, 2, 2, 5, 9]), [6], 'int32');
    for (const ids of [i1, i2, i1, i1]) expectClose(f([w, ids])[0]!, plain([w, ids])[0]!, EXACT);
    const twice = [f([w, i1])[0]!.data, f([w, i1])[0]!.data];
    expect(twice[0]).to.equal(twice[1]);
  });

  it('keeps no array that is also an update value: the variable owns its own', () => {
    const v = K.variable(arr([1000], (i) => i, 'float32'), 'float32', 'v');
    const x = K.placeholder([1000], null, 'float32', false, 'x');
    const next = K.add(v, x);
    const y = K.multiply(next, 2);
    const f = K.function([x], [next, y], [K.update(v, next)], { borrow: true });
    const one = arr([1000], () => 1);
    const r1 = f([one]);
    const held = K.get_value(v).clone();
    const r2 = f([one]);
    expect(r2[1]!.data).to.equal(r1[1]!.data); // y: kept
    expect(r2[0]!.data).to.not.equal(r1[0]!.data); // next: the variable's value, fresh each call
    expectClose(K.get_value(v), arr([1000], (i) => i + 2), EXACT);
    expectClose(held, arr([1000], (i) => i + 1), EXACT);
    expectClose(r2[1]!, arr([1000], (i) => 2 * (i + 2)), EXACT);
  });

  it('passes an input or a variable through as a copy, never as the caller\'s array', () => {
    const v = K.variable(arr([3], (i) => i), 'float32', 'pv');
    const x = K.placeholder([3], null, 'float32', false, 'px');
    const f = K.function([x], [x, v], [], { borrow: true });
    const a = arr([3], (i) => 10 + i);
    const [rx, rv] = f([a]);
    expect(rx!.data).to.not.equal(a.data);
    rv!.data[0] = 99;
    expect(K.get_value(v).data[0]).to.equal(0);
  });

  it('counts kept results in the byte budget of compiled shapes: many batch sizes let old ones go', () => {
    const x = K.placeholder([null, 16384], null, 'float32', false, 'mx');
    const f = K.function([x], [K.exp(x)], [], { borrow: true });
    const shed0 = compileCacheStats().shed;
    // 60 batch sizes, 190 MB of results if every shape kept its own; the budget is 64 MB
    for (let b = 20; b < 80; b++) {
      const r = f([arr([b, 16384], (i) => (i % 7) / 7)])[0]!;
      expect(r.data[16384 * b - 1]).to.be.closeTo(Math.exp(((16384 * b - 1) % 7) / 7), 1e-6);
    }
    expect(compileCacheStats().shed - shed0).to.be.greaterThan(0);
  });

  it('checking mode returns fresh arrays (it runs its kernels more than once a call)', () => {
    const x = K.placeholder([3], null, 'float32', false, 'cx');
    const f = K.function([x], [K.exp(x)], [], { borrow: true, mode: 'debug' });
    const r1 = f([arr([3], (i) => i)]);
    const r2 = f([arr([3], (i) => -i)]);
    expect(r2[0]!.data).to.not.equal(r1[0]!.data);
    expectClose(r1[0]!, arr([3], (i) => Math.exp(i)), { atol: 1e-6, rtol: 1e-6 });
  });

  it('refuses a borrow that is not true or false, naming the option', () => {
    const x = K.placeholder([3], null, 'float32', false, 'bx');
    expect(() => K.function([x], [x], [], { borrow: 'yes' as never })).to.throw(TypeError, /function: borrow must be true or false, got the string "yes"/);
  });
});

describe('K.function borrow on every target: the values of a function without it', () => {
  for (const t of targets.filter((t) => t.name !== 'reference')) {
    it(`[${t.name}] two calls, each call's values`, () => {
      const x = K.placeholder([null, 5], null, 'float32', false, 'tx');
      const outs = [K.softmax(x), K.sum(x, 1)];
      const f = K.function([x], outs, [], { ...t.options, borrow: true });
      const ref = K.function([x], outs, [], { optimizer: 'none' });
      for (const a of [arr([2, 5], (i) => i / 3), arr([2, 5], (i) => -i), arr([3, 5], (i) => (i % 4) - 1)]) {
        const got = f([a]).map((r) => r.clone());
        got.forEach((r, k) => expectClose(r, ref([a])[k]!, { atol: 1e-5, rtol: 1e-5 }));
      }
    });
  }
});
