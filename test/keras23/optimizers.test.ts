// Keras 2.3.1's optimizers.py ported line by line (get_gradients with clipnorm/clipvalue, SGD with
// momentum and Nesterov, RMSprop, Adam with and without AMSGrad, constraints applied to the new
// value), run through K.function on a least-squares loss, and checked against the same updates
// written in plain numbers (float64) with the gradient derived by hand.
import { backend as K, NDArray, type Tensor } from '../../src/index.js';
import type { Update } from '../../src/api/function.js';
import { expectClose } from '../helpers/assert.js';

type T = Tensor;
const sumAll = (xs: T[]): T => xs.reduce((a, b) => K.add(a, b));

/** Keras 2.3.1 `clip_norm` (its non-TensorFlow branch: K.switch). */
function clipNorm(g: T, c: number, n: T): T {
  if (c <= 0) return g;
  return K.switch(K.greater_equal(n, c), K.divide(K.multiply(g, c), n), g);
}

/** Keras 2.3.1 `Optimizer`: iterations, decay, get_gradients. */
abstract class Optimizer {
  iterations = K.variable(0, 'int64', 'iterations');
  updates: Update[] = [];
  weights: T[] = [];
  constructor(readonly learning_rate: number, readonly decay = 0, readonly clipnorm = 0, readonly clipvalue = 0) {}

  get_gradients(loss: T, params: T[]): T[] {
    let grads = K.gradients(loss, params);
    if (this.clipnorm > 0) {
      const norm = K.sqrt(sumAll(grads.map((g) => K.sum(K.square(g)))));
      grads = grads.map((g) => clipNorm(g, this.clipnorm, norm));
    }
    if (this.clipvalue > 0) grads = grads.map((g) => K.clip(g, -this.clipvalue, this.clipvalue));
    return grads;
  }

  protected lr(): T | number {
    let lr: T | number = this.learning_rate;
    // lr = lr * (1. / (1. + self.decay * K.cast(self.iterations, K.dtype(self.decay))))
    if (this.decay > 0) lr = K.multiply(lr, K.divide(1, K.add(1, K.multiply(this.decay, K.cast(this.iterations, 'float32')))));
    return lr;
  }

  abstract get_updates(loss: T, params: T[]): Update[];
}

class SGD extends Optimizer {
  constructor(lr: number, readonly momentum = 0, readonly nesterov = false, decay = 0, clipnorm = 0) { super(lr, decay, clipnorm); }
  get_updates(loss: T, params: T[]): Update[] {
    const grads = this.get_gradients(loss, params);
    this.updates = [K.update_add(this.iterations, 1)];
    const lr = this.lr();
    const moments = params.map((p, i) => K.zeros(K.int_shape(p) as number[], null, `moment_${i}`));
    this.weights = [this.iterations, ...moments];
    params.forEach((p, i) => {
      const [g, m] = [grads[i]!, moments[i]!];
      const v = K.subtract(K.multiply(this.momentum, m), K.multiply(lr, g)); // velocity
      this.updates.push(K.update(m, v));
      let newP = this.nesterov ? K.subtract(K.add(p, K.multiply(this.momentum, v)), K.multiply(lr, g)) : K.add(p, v);
      if (p.constraint !== null) newP = p.constraint(newP);
      this.updates.push(K.update(p, newP));
    });
    return this.updates;
  }
}

class RMSprop extends Optimizer {
  constructor(lr: number, readonly rho = 0.9, readonly epsilon = 1e-7) { super(lr); }
  get_updates(loss: T, params: T[]): Update[] {
    const grads = this.get_gradients(loss, params);
    const accumulators = params.map((p, i) => K.zeros(K.int_shape(p) as number[], K.dtype(p), `accumulator_${i}`));
    this.weights = accumulators;
    this.updates = [K.update_add(this.iterations, 1)];
    const lr = this.lr();
    params.forEach((p, i) => {
      const [g, a] = [grads[i]!, accumulators[i]!];
      const newA = K.add(K.multiply(this.rho, a), K.multiply(1 - this.rho, K.square(g)));
      this.updates.push(K.update(a, newA));
      let newP = K.subtract(p, K.divide(K.multiply(lr, g), K.add(K.sqrt(newA), this.epsilon)));
      if (p.constraint !== null) newP = p.constraint(newP);
      this.updates.push(K.update(p, newP));
    });
    return this.updates;
  }
}

class Adam extends Optimizer {
  constructor(lr: number, readonly amsgrad = false, readonly beta_1 = 0.9, readonly beta_2 = 0.999, readonly epsilon = 1e-7, decay = 0) { super(lr, decay); }
  get_updates(loss: T, params: T[]): Update[] {
    const grads = this.get_gradients(loss, params);
    this.updates = [K.update_add(this.iterations, 1)];
    const lr = this.lr();
    const t = K.add(K.cast(this.iterations, K.floatx()), 1);
    const lrT = K.multiply(lr, K.divide(K.sqrt(K.subtract(1, K.pow(this.beta_2, t))), K.subtract(1, K.pow(this.beta_1, t))));
    const ms = params.map((p, i) => K.zeros(K.int_shape(p) as number[], K.dtype(p), `m_${i}`));
    const vs = params.map((p, i) => K.zeros(K.int_shape(p) as number[], K.dtype(p), `v_${i}`));
    // Keras 2.2/2.3 keep a 1-element placeholder slot when amsgrad is off: K.zeros(1)
    const vhats = this.amsgrad ? params.map((p, i) => K.zeros(K.int_shape(p) as number[], K.dtype(p), `vhat_${i}`)) : params.map((_, i) => K.zeros(1, null, `vhat_${i}`));
    this.weights = [this.iterations, ...ms, ...vs, ...vhats];
    params.forEach((p, i) => {
      const [g, m, v, vhat] = [grads[i]!, ms[i]!, vs[i]!, vhats[i]!];
      const mT = K.add(K.multiply(this.beta_1, m), K.multiply(1 - this.beta_1, g));
      const vT = K.add(K.multiply(this.beta_2, v), K.multiply(1 - this.beta_2, K.square(g)));
      let pT: T;
      if (this.amsgrad) {
        const vhatT = K.maximum(vhat, vT);
        pT = K.subtract(p, K.divide(K.multiply(lrT, mT), K.add(K.sqrt(vhatT), this.epsilon)));
        this.updates.push(K.update(vhat, vhatT));
      } else {
        pT = K.subtract(p, K.divide(K.multiply(lrT, mT), K.add(K.sqrt(vT), this.epsilon)));
      }
      this.updates.push(K.update(m, mT));
      this.updates.push(K.update(v, vT));
      let newP = pT;
      if (p.constraint !== null) newP = p.constraint(newP);
      this.updates.push(K.update(p, newP));
    });
    return this.updates;
  }
}

// ---- the same in plain numbers ----

const X = [[1, 2, -1], [0.5, -1, 2], [-2, 0.5, 1], [1, 1, 1]];
const Y = [[1, 0], [0, 1], [-1, 2], [0.5, 0.5]];
const W0 = [[0.1, -0.2], [0.3, 0.1], [-0.1, 0.2]];
const B0 = [0.05, -0.05];

/** loss = mean((x W + b - y)^2): dL/dW = 2/N x^T r, dL/db = 2/N sum_rows r, N = 8 elements. */
function grads(w: number[][], b: number[]): [number[][], number[]] {
  const r = X.map((row, n) => [0, 1].map((j) => row.reduce((s, xv, k) => s + xv * w[k]![j]!, 0) + b[j]! - Y[n]![j]!));
  const gw = w.map((_, k) => [0, 1].map((j) => (2 / 8) * X.reduce((s, row, n) => s + row[k]! * r[n]![j]!, 0)));
  const gb = [0, 1].map((j) => (2 / 8) * r.reduce((s, row) => s + row[j]!, 0));
  return [gw, gb];
}

type Rule = (p: number[], g: number[], state: number[][], it: number) => number[];

/** Runs `steps` updates of each parameter (flattened) with `rule`; state slots start at zero. */
function plain(rule: Rule, steps: number, slots: number, clip?: { norm?: number; value?: number }, constrainW?: (v: number) => number): [number[], number[]] {
  let w = W0.flat();
  let b = [...B0];
  const sw = Array.from({ length: slots }, () => w.map(() => 0));
  const sb = Array.from({ length: slots }, () => b.map(() => 0));
  for (let it = 0; it < steps; it++) {
    const [gw2, gb] = grads([0, 1, 2].map((k) => w.slice(2 * k, 2 * k + 2)), b);
    let gw = gw2.flat();
    let gbb = gb;
    if (clip?.norm !== undefined) {
      const n = Math.sqrt([...gw, ...gbb].reduce((s, v) => s + v * v, 0));
      if (n >= clip.norm) { gw = gw.map((v) => v * clip.norm! / n); gbb = gbb.map((v) => v * clip.norm! / n); }
    }
    w = rule(w, gw, sw, it);
    if (constrainW !== undefined) w = w.map(constrainW);
    b = rule(b, gbb, sb, it);
  }
  return [w, b];
}

function build(opt: Optimizer, nonNegW = false): { step: (x: number[][], y: number[][]) => void; w: T; b: T } {
  const constraint = nonNegW ? (v: T) => K.multiply(v, K.cast(K.greater_equal(v, 0), K.floatx())) : null;
  const w = K.variable(W0, 'float32', 'W', constraint);
  const b = K.variable(B0, 'float32', 'b');
  const x = K.placeholder([null, 3]);
  const y = K.placeholder([null, 2]);
  const loss = K.mean(K.square(K.subtract(K.add(K.dot(x, w), b), y)));
  const f = K.function([x, y], [loss], opt.get_updates(loss, [w, b]));
  return { step: (xv, yv) => { f([xv, yv]); }, w, b };
}

const tol = { atol: 2e-6, rtol: 1e-5 };

function check(name: string, opt: () => Optimizer, rule: Rule, slots: number, extra: { clip?: { norm?: number }; nonNeg?: boolean } = {}): void {
  it(name, () => {
    const o = opt();
    const { step, w, b } = build(o, extra.nonNeg === true);
    for (let i = 0; i < 3; i++) step(X, Y);
    const [pw, pb] = plain(rule, 3, slots, extra.clip, extra.nonNeg === true ? (v) => (v >= 0 ? v : 0) : undefined);
    expectClose(K.get_value(w), new NDArray(pw, [3, 2], 'float64'), tol, 'W');
    expectClose(K.get_value(b), pb, tol, 'b');
    expectClose(K.get_value(o.iterations), 3);
  });
}

describe('Keras 2.3.1 optimizers.py, ported (get_updates)', () => {
  const sgd = (lr: number, mom: number, nesterov: boolean, decay = 0): Rule => (p, g, [m], it) => {
    const l = lr / (1 + decay * it);
    return p.map((pv, i) => {
      const v = mom * m![i]! - l * g[i]!;
      m![i] = v;
      return nesterov ? pv + mom * v - l * g[i]! : pv + v;
    });
  };
  check('SGD, momentum 0.9', () => new SGD(0.05, 0.9), sgd(0.05, 0.9, false), 1);
  check('SGD, Nesterov momentum, decay 0.1', () => new SGD(0.05, 0.9, true, 0.1), sgd(0.05, 0.9, true, 0.1), 1);
  check('SGD, clipnorm 0.5 (K.switch on the global norm)', () => new SGD(0.1, 0, false, 0, 0.5), sgd(0.1, 0, false), 1, { clip: { norm: 0.5 } });
  check('SGD with a NonNeg constraint on W (variable(..., constraint))', () => new SGD(0.5, 0.5), sgd(0.5, 0.5, false), 1, { nonNeg: true });
  check('RMSprop', () => new RMSprop(0.01), (p, g, [a]) => p.map((pv, i) => {
    a![i] = 0.9 * a![i]! + 0.1 * g[i]! ** 2;
    return pv - 0.01 * g[i]! / (Math.sqrt(a![i]!) + 1e-7);
  }), 1);
  const adam = (lr: number, ams: boolean): Rule => (p, g, [m, v, vh], it) => {
    const t = it + 1;
    const lrT = lr * Math.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t);
    return p.map((pv, i) => {
      m![i] = 0.9 * m![i]! + 0.1 * g[i]!;
      v![i] = 0.999 * v![i]! + 0.001 * g[i]! ** 2;
      vh![i] = Math.max(vh![i]!, v![i]!);
      return pv - lrT * m![i]! / (Math.sqrt(ams ? vh![i]! : v![i]!) + 1e-7);
    });
  };
  check('Adam (vhat slots are K.zeros(1))', () => new Adam(0.01), adam(0.01, false), 3);
  check('Adam, amsgrad', () => new Adam(0.01, true), adam(0.01, true), 3);
});
