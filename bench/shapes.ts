// One function fed many batch sizes (issue 33, item 4): the MLP training step (784-256-10, batch
// unknown until the call), MLP inference (batch 1..40) and the Keras-style LSTM (K.rnn, one Scan, fwd + bwd + SGD) called with
// 40 distinct batch sizes in turn, against the same function called at one batch size; cost per
// example, after a warm-up round that compiles every shape. Same process, alternating rounds,
// medians; beside the fixed size, the same 40 sizes each called 4 times in a row (the cost of the
// sizes themselves: small batches' per-call cost, rows not a multiple of a tile's; a quarter of
// the switching between shapes). Also the compiles each side made after warm-up (0 when every shape stays cached) and
// the first round's cost per call (the compiles themselves).
//   node --expose-gc --import tsx bench/shapes.ts [rounds]
import { backend as K, NDArray } from '../src/index.js';
import { compileCacheStats, compileStats } from '../src/runtime/cpu/compile.js';
import type { Node } from '../src/ir/node.js';
import { kerasLstmGraph, nd } from './cases.js';

const ROUNDS = Number(process.argv[2] ?? 5);

function mlp(): (xs: NDArray[]) => unknown {
  const x = K.placeholder([null, 784], null, 'float32', false, 'x');
  const t = K.placeholder([null, 10], null, 'float32', false, 't');
  const W1 = K.variable(nd([784, 256], 7, -0.05, 0.05), 'float32', 'W1');
  const b1 = K.variable(new NDArray(new Float32Array(256), [256]), 'float32', 'b1');
  const W2 = K.variable(nd([256, 10], 8, -0.1, 0.1), 'float32', 'W2');
  const b2 = K.variable(new NDArray(new Float32Array(10), [10]), 'float32', 'b2');
  const h = K.relu(K.dot(x, W1).add(b1));
  const loss = K.mean(K.categorical_crossentropy(K.softmax(K.dot(h, W2).add(b2)), t));
  const params = [W1, b1, W2, b2];
  const gs = K.gradients(loss, params);
  return K.function([x, t], [loss], params.map((v, i) => K.update(v, v.sub((gs[i] as Node).mul(0.1)))));
}

function inference(): (xs: NDArray[]) => unknown {
  const x = K.placeholder([null, 784], null, 'float32', false, 'x');
  const W1 = K.variable(nd([784, 256], 7, -0.05, 0.05), 'float32', 'W1');
  const b1 = K.variable(new NDArray(new Float32Array(256), [256]), 'float32', 'b1');
  const W2 = K.variable(nd([256, 10], 8, -0.1, 0.1), 'float32', 'W2');
  return K.function([x], [K.softmax(K.dot(K.relu(K.dot(x, W1).add(b1)), W2))]);
}

function lstm(): (xs: NDArray[]) => unknown {
  const { x, y, loss, updates } = kerasLstmGraph(false);
  return K.function([x, y], [loss], updates);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function bench(name: string, f: (xs: NDArray[]) => unknown, args: (b: number) => NDArray[], sizes: number[], fixed: number): void {
  const many = sizes.map(args);
  const one = args(fixed);
  const examples = sizes.reduce((a, b) => a + b, 0);
  const c0 = compileStats.specializations;
  let t = performance.now();
  for (const xs of many) f(xs);
  const firstRound = (performance.now() - t) / sizes.length;
  const compiledWarm = compileStats.specializations - c0;
  for (let i = 0; i < 5; i++) f(one);
  const perMany: number[] = [];
  const perOne: number[] = [];
  const perEach: number[] = [];
  const c1 = compileStats.specializations;
  const s1 = compileCacheStats().shed;
  for (let r = 0; r < ROUNDS; r++) {
    t = performance.now();
    for (const xs of many) f(xs);
    perMany.push((performance.now() - t) / examples);
    t = performance.now();
    for (let i = 0; i < sizes.length; i++) f(one);
    perOne.push((performance.now() - t) / (sizes.length * fixed));
    // each size called 4 times in a row, all timed: the same sizes, a quarter of the switching
    t = performance.now();
    for (const xs of many) for (let i = 0; i < 4; i++) f(xs);
    perEach.push((performance.now() - t) / (4 * examples));
  }
  const m = median(perMany), o = median(perOne), e = median(perEach);
  const us = (x: number) => (1000 * x).toFixed(1);
  console.log(`| ${name} | ${sizes[0]}..${sizes[sizes.length - 1]} vs ${fixed} | ${us(m)} | ${us(o)} | ${(m / o).toFixed(2)}x | ${us(e)} | ${(m / e).toFixed(2)}x | ${compiledWarm} | ${compileStats.specializations - c1} | ${compileCacheStats().shed - s1} | ${firstRound.toFixed(1)} |`);
}

console.log(`rounds ${ROUNDS}; per example in microseconds, medians; load: ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')}`);
console.log('| case | batch sizes | 40 sizes in turn, us/example | fixed size | ratio | each size 4 times in a row | ratio | compiles in warm-up | compiles after | buffers shed after | warm-up ms/call |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
const range = (from: number) => Array.from({ length: 40 }, (_, i) => from + i);
bench('MLP train step 784-256-10', mlp(), (b) => [nd([b, 784], 9, 0, 1), nd([b, 10], 10, 0, 1)], range(108), 128);
bench('MLP inference 784-256-10', inference(), (b) => [nd([b, 784], 9, 0, 1)], range(1), 20);
bench('LSTM Keras-style Scan fwd+bwd T28 28->128', lstm(), (b) => [nd([b, 28, 28], 33), nd([b, 128], 34, -0.5, 0.5)], range(44), 64);
