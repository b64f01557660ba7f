// Autodiff cases (theanine only; TensorFlow.js has no forward mode): the MLP loss's gradient and its
// Hessian-vector product (forward mode over the gradient), whose ratio is the cost of second order;
// and Jacobians of a tanh layer by forward and by reverse mode, square (256 -> 256) and wide
// (256 -> 32: reverse needs 32 passes, forward 256), to show where each mode wins.
import { autodiff, backend as K, NDArray } from '../src/index.js';
import type { Node } from '../src/ir/node.js';
import type { Case } from './cases.js';

const B = 128;

function data(n: number, seed: number, lo: number, hi: number): Float32Array {
  let s = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = lo + (s / 4294967296) * (hi - lo);
  }
  return out;
}
const nd = (shape: number[], seed: number, lo = -1, hi = 1) => new NDArray(data(shape.reduce((p, d) => p * d, 1), seed, lo, hi), shape, 'float32');

/** The bench's MLP (784-256-10, relu, softmax crossentropy, batch 128) and its loss. */
function mlp() {
  const x = K.placeholder([B, 784], null, 'float32', false, 'x');
  const t = K.placeholder([B, 10], null, 'float32', false, 't');
  const W1 = K.variable(nd([784, 256], 7, -0.05, 0.05), 'float32', 'W1');
  const b1 = K.variable(new NDArray(new Float32Array(256), [256]), 'float32', 'b1');
  const W2 = K.variable(nd([256, 10], 8, -0.1, 0.1), 'float32', 'W2');
  const b2 = K.variable(new NDArray(new Float32Array(10), [10]), 'float32', 'b2');
  const h = K.maximum(K.dot(x, W1).add(b1), 0);
  const logits = K.dot(h, W2).add(b2);
  const e = K.exp(logits.sub(K.stop_gradient(K.max(logits, -1, true))));
  const p = e.div(K.sum(e, -1, true));
  const loss = K.mean(K.negative(K.sum(t.mul(K.log(p)), -1)));
  const tv = new Float32Array(B * 10);
  for (let i = 0; i < B; i++) tv[i * 10 + ((i * 7 + 1) % 10)] = 1;
  return { x, t, loss, params: [W1, b1, W2, b2], values: [nd([B, 784], 9, 0, 1), new NDArray(tv, [B, 10], 'float32')] };
}

function mlpCase(name: string, outputs: (loss: Node, params: Node[]) => Node[]): Case {
  const make = () => {
    const { x, t, loss, params, values } = mlp();
    const outs = outputs(loss, params);
    const f = K.function([x, t], outs);
    return { call: () => { f(values); }, recompile: () => { K.function([x, t], outs); } };
  };
  return {
    name,
    noOnnx: 'an autodiff ratio: theanine against itself',
    impls: { theanine: async () => { const m = make(); return { run: m.call }; } },
    compile: () => { const m = make(); return { firstCall: m.call, recompile: m.recompile }; },
  };
}

const gradCase = mlpCase('autodiff MLP gradient b128', (loss, params) => K.gradients(loss, params));
const hvpCase = mlpCase('autodiff MLP Hessian-vector product b128', (loss, params) =>
  autodiff.hessian_vector_product(loss, params, params.map((p, i) => K.constant(nd(p.shape as number[], 20 + i, -0.01, 0.01), 'float32'))));

/** d tanh(x W + b) / dx for x (n), W (n, m): a Jacobian (m, n) by `mode`. */
function jacobianCase(n: number, m: number, mode: 'forward' | 'reverse'): Case {
  const make = () => {
    const x = K.placeholder([n], null, 'float32', false, 'x');
    const W = K.variable(nd([n, m], 11, -0.1, 0.1), 'float32', 'W');
    const b = K.variable(nd([m], 12, -0.1, 0.1), 'float32', 'b');
    const y = K.reshape(K.tanh(K.dot(K.expand_dims(x, 0), W).add(b)), [m]);
    const f = K.function([x], [autodiff.jacobian(y, x, { mode })]);
    const xs = [nd([n], 13)];
    return () => { f(xs); };
  };
  return {
    name: `autodiff jacobian ${n}->${m} tanh layer, ${mode}`,
    noOnnx: 'an autodiff ratio: theanine against itself',
    impls: { theanine: async () => ({ run: make() }) },
  };
}

export function autodiffCases(): Case[] {
  return [gradCase, hvpCase, jacobianCase(256, 256, 'forward'), jacobianCase(256, 256, 'reverse'), jacobianCase(256, 32, 'forward'), jacobianCase(256, 32, 'reverse')];
}
