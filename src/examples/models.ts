// The three models `theanine train mnist` offers, written with the backend API only. Weights
// start from Glorot-uniform draws of a seeded generator (Keras' default initialiser), biases at 0.
import { NDArray, backend as K, type Tensor } from '../index.js';
import { CLASSES, IMAGE_SIZE, PIXELS } from './mnist.js';
import type { Rng } from './random.js';
import { sizeOf } from '../ir/ndarray.js';

export const MODELS = ['mlp', 'cnn', 'lstm'] as const;
export type ModelName = (typeof MODELS)[number];

export interface Model {
  readonly name: ModelName;
  /** One line saying what the layers are. */
  readonly summary: string;
  /** The shape of one example as the model reads it (the batch axis comes first). */
  readonly exampleShape: readonly number[];
  readonly params: readonly Tensor[];
  /** Class scores before the softmax, (batch, 10). */
  logits(x: Tensor): Tensor;
}

function glorot(rng: Rng, shape: number[], fanIn: number, fanOut: number, name: string): Tensor {
  const size = sizeOf(shape);
  return K.variable(new NDArray(rng.uniform(size, Math.sqrt(6 / (fanIn + fanOut))), shape, 'float32'), 'float32', name);
}

function bias(n: number, name: string, value = 0): Tensor {
  return K.variable(new NDArray(new Float32Array(n).fill(value), [n], 'float32'), 'float32', name);
}

interface Dense {
  readonly W: Tensor;
  readonly b: Tensor;
}

function dense(rng: Rng, nIn: number, nOut: number, name: string, biasValue = 0): Dense {
  return { W: glorot(rng, [nIn, nOut], nIn, nOut, `${name}/W`), b: bias(nOut, `${name}/b`, biasValue) };
}

function applyDense(d: Dense, x: Tensor): Tensor {
  return K.add(K.dot(x, d.W), d.b);
}

/** 784 -> hidden (relu) -> 10. */
export function mlp(rng: Rng, hidden = 256): Model {
  const h = dense(rng, PIXELS, hidden, 'dense1');
  const o = dense(rng, hidden, CLASSES, 'dense2');
  return {
    name: 'mlp',
    summary: `dense ${PIXELS}->${hidden} relu, dense ${hidden}->${CLASSES}`,
    exampleShape: [PIXELS],
    params: [h.W, h.b, o.W, o.b],
    logits: (x) => applyDense(o, K.relu(applyDense(h, x))),
  };
}

/** Two 5x5 convolutions with max pooling, then a dense layer: 28x28x1 -> 24x24x8 -> 12x12x8 -> 8x8x16 -> 4x4x16 -> 10. */
export function cnn(rng: Rng, filters: readonly [number, number] = [8, 16]): Model {
  const [f1, f2] = filters;
  const k1 = glorot(rng, [5, 5, 1, f1], 25, 25 * f1, 'conv1/kernel');
  const c1 = bias(f1, 'conv1/b');
  const k2 = glorot(rng, [5, 5, f1, f2], 25 * f1, 25 * f2, 'conv2/kernel');
  const c2 = bias(f2, 'conv2/b');
  const o = dense(rng, 16 * f2, CLASSES, 'dense');
  return {
    name: 'cnn',
    summary: `conv 5x5x${f1} relu, maxpool 2, conv 5x5x${f2} relu, maxpool 2, dense ${16 * f2}->${CLASSES}`,
    exampleShape: [IMAGE_SIZE, IMAGE_SIZE, 1],
    params: [k1, c1, k2, c2, o.W, o.b],
    logits: (x) => {
      const pool = (t: Tensor) => K.pool2d(t, [2, 2], { strides: [2, 2], pool_mode: 'max' });
      const h1 = pool(K.relu(K.add(K.conv2d(x, k1, { padding: 'valid' }), c1)));
      const h2 = pool(K.relu(K.add(K.conv2d(h1, k2, { padding: 'valid' }), c2)));
      return applyDense(o, K.batch_flatten(h2));
    },
  };
}

/**
 * An LSTM reading each digit row by row (28 steps of 28 pixels) through K.rnn, then a dense layer
 * on its last output. `unroll` is K.rnn's own flag: 28 copies of the step instead of one Scan node
 * (the same numbers; both compile, and the Scan, Keras' default, compiles and trains faster).
 */
export function lstm(rng: Rng, units = 64, unroll = false): Model {
  // One input, recurrent and bias weight per gate (Keras 1's W_i, U_i, b_i ...); forget bias starts at 1.
  const gate = (g: string, b = 0) => ({
    W: glorot(rng, [IMAGE_SIZE, units], IMAGE_SIZE, units, `lstm/W_${g}`),
    U: glorot(rng, [units, units], units, units, `lstm/U_${g}`),
    b: bias(units, `lstm/b_${g}`, b),
  });
  const gi = gate('i'),
    gf = gate('f', 1),
    gc = gate('c'),
    go = gate('o');
  const o = dense(rng, units, CLASSES, 'dense');
  const params = [gi, gf, gc, go].flatMap((g) => [g.W, g.U, g.b]);
  return {
    name: 'lstm',
    summary: `lstm ${IMAGE_SIZE}->${units} over ${IMAGE_SIZE} rows${unroll ? ' (unrolled)' : ''}, dense ${units}->${CLASSES}`,
    exampleShape: [IMAGE_SIZE, IMAGE_SIZE],
    params: [...params, o.W, o.b],
    logits: (x) => {
      const pre = (g: typeof gi, xt: Tensor, h: Tensor) => K.add(K.add(K.dot(xt, g.W), K.dot(h, g.U)), g.b);
      const step = (xt: Tensor, [h, c]: Tensor[]): [Tensor, Tensor[]] => {
        const i = K.sigmoid(pre(gi, xt, h!));
        const f = K.sigmoid(pre(gf, xt, h!));
        const cNew = K.add(K.multiply(f, c!), K.multiply(i, K.tanh(pre(gc, xt, h!))));
        const out = K.sigmoid(pre(go, xt, h!));
        const hNew = K.multiply(out, K.tanh(cNew));
        return [hNew, [hNew, cNew]];
      };
      // Zeros of shape (batch, units) for a batch of unknown size, as Keras' RNN.get_initial_state builds them.
      const zero = K.add(K.sum(K.sum(K.zeros_like(x), 1), -1, true), K.zeros([units]));
      const [last] = K.rnn(step, x, [zero, zero], { unroll });
      return applyDense(o, last);
    },
  };
}

export interface ModelOptions {
  /** lstm: unroll K.rnn's 28 steps (default false: one Scan node). */
  readonly unroll?: boolean;
}

export function buildModel(name: ModelName, rng: Rng, opts: ModelOptions = {}): Model {
  switch (name) {
    case 'mlp':
      return mlp(rng);
    case 'cnn':
      return cnn(rng);
    case 'lstm':
      return lstm(rng, 64, opts.unroll === true);
  }
}
