// The `theanine graph` examples built by autodiff: vmap's per-example gradients are each example's
// own gradient (K.gradients of its loss alone), computed in one graph for the batch.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import { buildExample } from '../../src/examples/graphs.js';
import { Rng } from '../../src/examples/random.js';

describe('theanine graph vmap: per-example gradients of the perceptron', function () {
  this.timeout(60000);

  it('each slice of the batched result is K.gradients of that example\'s loss alone (float32, 1e-5)', () => {
    const ex = buildExample('vmap');
    const [x, y] = ex.inputs as [ReturnType<typeof K.placeholder>, ReturnType<typeof K.placeholder>];
    const rng = new Rng(2);
    const B = 3;
    const xs = new NDArray(rng.uniform(B * 784, 1), [B, 784]);
    const ys = new NDArray(Float32Array.from({ length: B * 10 }, (_, i) => (i % 10 === (3 * Math.floor(i / 10) + 1) % 10 ? 1 : 0)), [B, 10]);
    const [batched] = K.function(ex.inputs, ex.outputs, [], { device: 'cpu' })([xs, ys]);
    expect(batched!.shape).to.deep.equal([B, 784, 32]);
    // The variable vmap differentiates: the one the graph reads with the batched result's last two dims.
    const W1 = findVariable(ex.outputs[0]!, 'dense1/W');
    expect(W1, 'the graph reads dense1/W').to.not.equal(undefined);
    const loss = K.mean(K.categorical_crossentropy(logitsOf(ex), y, true));
    const one = K.function([x, y], K.gradients(loss, [W1!]), [], { device: 'cpu' });
    const got = batched!.data as Float32Array;
    for (let b = 0; b < B; b++) {
      const xb = new NDArray((xs.data as Float32Array).slice(b * 784, (b + 1) * 784), [1, 784]);
      const yb = new NDArray((ys.data as Float32Array).slice(b * 10, (b + 1) * 10), [1, 10]);
      const want = one([xb, yb])[0]!.data as Float32Array;
      let worst = 0;
      for (let j = 0; j < want.length; j++) worst = Math.max(worst, Math.abs(got[b * want.length + j]! - want[j]!) / Math.max(1, Math.abs(want[j]!)));
      expect(worst, `example ${b}`).to.be.at.most(1e-5);
      expect(Math.max(...Array.from(want, Math.abs)), 'a gradient that is not all zeros').to.be.above(0);
    }
  });
});

type Tensor = ReturnType<typeof K.placeholder>;

function findVariable(root: Tensor, name: string): Tensor | undefined {
  const seen = new Set<Tensor>();
  const stack = [root];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (seen.has(n)) continue;
    seen.add(n);
    if (n.op === 'variable' && n.name === name) return n;
    stack.push(...n.inputs);
  }
  return undefined;
}

/** The perceptron of the example (same weights: mlp(new Rng(1), 32)) applied to a batch. */
function logitsOf(ex: ReturnType<typeof buildExample>): Tensor {
  const [x] = ex.inputs as Tensor[];
  const v = (n: string) => findVariable(ex.outputs[0]!, n)!;
  const h = K.relu(K.add(K.dot(x!, v('dense1/W')), v('dense1/b')));
  return K.add(K.dot(h, v('dense2/W')), v('dense2/b'));
}
