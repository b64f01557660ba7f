// A small Keras-style LSTM for the compile cache's tests (test/runtime/disk-cache.test.ts), which
// also run it in child processes.
import { type backend as K, NDArray } from '../../src/index.js';
import type { Node } from '../../src/ir/node.js';

/** A small Keras-style LSTM (one Scan, its gradient Scan, SGD updates), its function and inputs; `B` the batch. */
export function lstm(k: typeof K, B: number, U = 6) {
  const T = 5, I = 3;
  const fill = (n: number, s: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 12.9898 + s) * 0.3);
  const x = k.placeholder([null, T, I], null, 'float32', false, 'x');
  const y = k.placeholder([null, U], null, 'float32', false, 'y');
  const Wx = k.variable(new NDArray(fill(I * 4 * U, 1), [I, 4 * U]), 'float32', 'Wx');
  const Wh = k.variable(new NDArray(fill(U * 4 * U, 2), [U, 4 * U]), 'float32', 'Wh');
  const gate = (z: Node, g: number) => k.slice(z, [0, g * U], [-1, U]);
  const step = (xt: Node, states: Node[]): [Node, Node[]] => {
    const [h, c] = states as [Node, Node];
    const z = k.dot(xt, Wx).add(k.dot(h, Wh));
    const c2 = k.sigmoid(gate(z, 1)).mul(c).add(k.sigmoid(gate(z, 0)).mul(k.tanh(gate(z, 2))));
    const h2 = k.sigmoid(gate(z, 3)).mul(k.tanh(c2));
    return [h2, [h2, c2]];
  };
  const h0 = k.tile(k.expand_dims(k.sum(k.zeros_like(x), [1, 2]), 1), [1, U]);
  const [last] = k.rnn(step, x, [h0, h0], {});
  const loss = k.mean(k.square(last.sub(y)));
  const gs = k.gradients(loss, [Wx, Wh]);
  const f = k.function([x, y], [loss, last], [k.update(Wx, Wx.sub(gs[0]!.mul(0.1))), k.update(Wh, Wh.sub(gs[1]!.mul(0.1)))]);
  const xs = [new NDArray(fill(B * T * I, 3), [B, T, I]), new NDArray(fill(B * U, 4), [B, U])];
  return { f, xs, Wx };
}

/** Two calls (the second sees the first's updates): the results and the updated weights, as plain numbers. */
export function twoCalls(k: typeof K, B: number): number[] {
  const { f, xs, Wx } = lstm(k, B);
  const a = f(xs);
  const b = f(xs);
  return [...a, ...b].flatMap((r) => Array.from(r.data)).concat(Array.from(k.get_value(Wx).data));
}

