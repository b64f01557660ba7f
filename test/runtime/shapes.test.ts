// One function fed many batch sizes: the compile cache's shape policy (src/runtime/program-cache.ts):
// every shape of a function compiles once while kept (MAX_SHED_SPECIALIZATIONS per program), the
// byte budget lets buffers go and keeps code, and the numbers are those of a function made for
// that one shape.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import { clearCompileCache, compileCacheBytes, compileCacheStats, compileStats, SPEC_BUDGET_BYTES, storeBytes } from '../../src/runtime/cpu/compile.js';
import { MAX_SHED_SPECIALIZATIONS, ProgramCache } from '../../src/runtime/program-cache.js';
import type { Node } from '../../src/ir/node.js';
import { packArena } from '../../src/codegen/cpu/wasm-kernel.js';

const fill = (shape: number[], seed: number) =>
  new NDArray(Float32Array.from({ length: shape.reduce((p, d) => p * d, 1) }, (_, i) => Math.sin(seed * 7.3 + i * 0.37)), shape, 'float32');

/** An MLP training step over inputs [batch, d], batch fixed or unknown; the loss and the updated variables. */
function step(batch: number | null, d: number) {
  const x = K.placeholder([batch, d], null, 'float32');
  const t = K.placeholder([batch, 4], null, 'float32');
  const W1 = K.variable(fill([d, 16], 1), 'float32');
  const W2 = K.variable(fill([16, 4], 2), 'float32');
  const h = K.relu(K.dot(x, W1));
  const loss = K.mean(K.categorical_crossentropy(K.softmax(K.dot(h, W2)), t));
  const gs = K.gradients(loss, [W1, W2]);
  const f = K.function([x, t], [loss], [W1, W2].map((v, i) => K.update(v, v.sub((gs[i] as Node).mul(0.1)))));
  return { f, W1, W2 };
}

const bits = (a: NDArray) => Array.from(new Uint32Array(new Float32Array(a.data as Float32Array).buffer));

describe('runtime: one function fed many batch sizes', () => {
  beforeEach(() => clearCompileCache());

  it('compiles each of 40 batch sizes once; later rounds compile nothing and give the numbers of a function made for that size', () => {
    const sizes = Array.from({ length: 40 }, (_, i) => 1 + i);
    const many = step(null, 12);
    const c0 = compileStats.specializations;
    for (const b of sizes) many.f([fill([b, 12], b), fill([b, 4], b + 100)]);
    expect(compileStats.specializations - c0, 'compiles in the first round').to.equal(40);
    const c1 = compileStats.specializations;
    for (let r = 0; r < 2; r++) for (const b of sizes) many.f([fill([b, 12], b), fill([b, 4], b + 100)]);
    expect(compileStats.specializations - c1, 'compiles after the first round').to.equal(0);
    // each batch size against its own function (fixed-shape placeholders: another program), same start
    for (const b of [1, 7, 33, 40]) {
      const own = step(b, 12);
      K.set_value(many.W1, fill([12, 16], 1));
      K.set_value(many.W2, fill([16, 4], 2));
      const xs = [fill([b, 12], b), fill([b, 4], b + 100)];
      const got = many.f(xs)[0]!;
      const want = own.f(xs)[0]!;
      expect(bits(got), `loss at batch ${b}`).to.deep.equal(bits(want));
      expect(bits(K.get_value(many.W1)), `W1 at batch ${b}`).to.deep.equal(bits(K.get_value(own.W1)));
    }
  });

  it('past the byte budget, buffers go and code stays: no recompiles, the same numbers, bytes within the budget', () => {
    // a product's result of 128 KB per row is planned: 40 batch sizes from 20 hold more than the 64 MB budget
    const x = K.placeholder([null, 8], null, 'float32');
    const W = K.variable(fill([8, 32768], 3), 'float32');
    const h = K.dot(x, W);
    const f = K.function([x], [K.sum(K.tanh(h), 1).add(K.max(h, 1))]);
    const sizes = Array.from({ length: 40 }, (_, i) => 20 + i);
    const first = sizes.map((b) => f([fill([b, 8], b)])[0]!);
    expect(compileCacheStats().shed, 'buffers let go in the first round').to.be.greaterThan(0);
    const c1 = compileStats.specializations;
    const s1 = compileCacheStats().shed;
    const again = sizes.map((b) => f([fill([b, 8], b)])[0]!);
    expect(compileStats.specializations - c1, 'compiles in the second round').to.equal(0);
    expect(compileCacheStats().shed - s1, 'buffers let go in the second round').to.be.greaterThan(0);
    expect(compileCacheBytes()).to.be.at.most(SPEC_BUDGET_BYTES);
    again.forEach((a, i) => expect(bits(a), `batch ${sizes[i]}`).to.deep.equal(bits(first[i]!)));
  });

  it('the shapes of one function share planned arrays: after 40 batch sizes they hold what the largest holds', () => {
    const x = K.placeholder([null, 8], null, 'float32');
    const W = K.variable(fill([8, 4096], 3), 'float32');
    const h = K.dot(x, W);
    const f = K.function([x], [K.sum(K.tanh(h), 1).add(K.max(h, 1))]);
    f([fill([40, 8], 40)]);
    const largest = storeBytes();
    expect(largest, 'a [40, 4096] float32 result planned').to.be.at.least(40 * 4096 * 4);
    for (let b = 1; b <= 40; b++) f([fill([b, 8], b)]);
    expect(storeBytes()).to.equal(largest);
    // a shape larger than every earlier one grows the arrays; the others run on prefixes of them
    const big = f([fill([41, 8], 41)])[0]!;
    expect(storeBytes()).to.be.greaterThan(largest);
    const x41 = K.placeholder([41, 8], null, 'float32');
    const h41 = K.dot(x41, W);
    expect(bits(K.function([x41], [K.sum(K.tanh(h41), 1).add(K.max(h41, 1))])([fill([41, 8], 41)])[0]!)).to.deep.equal(bits(big));
  });

  it('a Scan (the Keras-style LSTM step) fed many batch sizes: the numbers of a function made for each size', () => {
    const make = (batch: number | null) => {
      const x = K.placeholder([batch, 5, 3], null, 'float32');
      const Wx = K.variable(fill([3, 8], 4), 'float32');
      const Wh = K.variable(fill([2, 8], 5), 'float32');
      const stepFn = (xt: Node, states: Node[]): [Node, Node[]] => {
        const z = K.dot(xt, Wx).add(K.dot(states[0]!, Wh));
        const c = K.sigmoid(K.slice(z, [0, 0], [-1, 2])).mul(states[1]!).add(K.tanh(K.slice(z, [0, 2], [-1, 2])));
        const hh = K.sigmoid(K.slice(z, [0, 4], [-1, 2])).mul(K.tanh(c));
        return [hh, [hh, c]];
      };
      const h0 = K.tile(K.expand_dims(K.sum(K.zeros_like(x), [1, 2]), 1), [1, 2]);
      const [last] = K.rnn(stepFn, x, [h0, h0]);
      const loss = K.mean(K.square(last));
      const gs = K.gradients(loss, [Wx, Wh]);
      return K.function([x], [loss, ...gs]);
    };
    const many = make(null);
    const sizes = Array.from({ length: 20 }, (_, i) => 1 + 2 * i);
    for (const b of sizes) many([fill([b, 5, 3], b)]);
    const c1 = compileStats.specializations;
    for (const b of sizes) {
      const xs = [fill([b, 5, 3], b)];
      const got = many(xs);
      const want = make(b)(xs);
      got.forEach((g, i) => expect(bits(g), `output ${i} at batch ${b}`).to.deep.equal(bits(want[i]!)));
    }
    expect(compileStats.specializations - c1, 'compiles: only the fixed-size functions').to.equal(sizes.length);
  });

  it('a weight is packed once for every batch size of a function, and kept once', () => {
    const x = K.placeholder([null, 64], null, 'float32');
    const W = K.variable(fill([64, 48], 6), 'float32');
    const f = K.function([x], [K.relu(K.dot(x, W))]);
    f([fill([9, 64], 9)]);
    const made = packArena.packsMade;
    expect(packArena.keptDoubles, 'the weight is kept packed').to.be.greaterThan(0);
    for (let b = 1; b <= 20; b++) {
      const xs = [fill([b, 64], b)];
      const xb = K.placeholder([b, 64], null, 'float32');
      expect(bits(f(xs)[0]!), `batch ${b}`).to.deep.equal(bits(K.function([xb], [K.relu(K.dot(xb, W))])(xs)[0]!));
    }
    // the fixed-size functions pack W once each (their own programs); the function fed 20 sizes, not again
    expect(packArena.packsMade - made).to.be.at.most(20);
    const again = packArena.packsMade;
    for (let b = 1; b <= 20; b++) f([fill([b, 64], b)]);
    expect(packArena.packsMade - again, 'packs made for 20 batch sizes after the first').to.equal(0);
  });

  it('the cache sheds the least recently used first, and drops only past the count bound', () => {
    type Spec = { id: number; shed: number; dropped: boolean };
    const program = { specs: new Map<string, Spec>() };
    const cache = new ProgramCache<typeof program, Spec>({
      bytes: () => 10, budgetBytes: 30, shed: (s) => { s.shed++; }, onDropSpec: (_p, _k, s) => { s.dropped = true; },
    });
    const specs: Spec[] = [];
    const use = (i: number) => cache.spec(program, `k${i}`, () => { const s = { id: i, shed: 0, dropped: false }; specs[i] = s; return s; });
    for (let i = 0; i < 5; i++) use(i);
    expect(cache.heldBytes()).to.equal(30);
    expect(specs.map((s) => s.shed)).to.deep.equal([1, 1, 0, 0, 0]);
    expect(program.specs.size, 'code kept').to.equal(5);
    expect(use(0), 'a shed specialisation is the same one').to.equal(specs[0]);
    expect(specs[2]!.shed, 'the least recently used holding buffers went next').to.equal(1);
    for (let i = 5; i < MAX_SHED_SPECIALIZATIONS + 3; i++) use(i);
    expect(program.specs.size).to.equal(MAX_SHED_SPECIALIZATIONS);
    expect(specs.filter((s) => s.dropped).map((s) => s.id)).to.deep.equal([1, 2, 3]);
  });
});
