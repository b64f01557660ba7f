// Keras 2.3.1's losses.py and metrics.py ported line by line, on targets the way Keras' engine
// makes them (K.placeholder(ndim=...), every dim None), checked against numbers computed by hand.
// The crossentropies take theanine's (output, target) order: a literal port of Keras 2.2/2.3's
// K.categorical_crossentropy(y_true, y_pred) warns once per call site and gives the wrong numbers
// the issue quotes; the port written with the arguments swapped gives Keras' numbers.
import { expect } from 'chai';
import { backend as K, type Tensor } from '../../src/index.js';
import { setWarningSink } from '../../src/runtime/warn.js';
import { expectClose } from '../helpers/assert.js';

type T = Tensor;
const EPS = 1e-7;

// --- losses.py (Keras 2.3.1), argument order fixed to theanine's where the backend is called ---
const mean_squared_error = (y_true: T, y_pred: T): T => K.mean(K.square(K.subtract(y_pred, y_true)), -1);
const mean_absolute_percentage_error = (y_true: T, y_pred: T): T => {
  const diff = K.abs(K.divide(K.subtract(y_true, y_pred), K.clip(K.abs(y_true), K.epsilon(), null)));
  return K.multiply(100, K.mean(diff, -1));
};
const categorical_hinge = (y_true: T, y_pred: T): T => {
  const pos = K.sum(K.multiply(y_true, y_pred), -1);
  const neg = K.max(K.multiply(K.subtract(1, y_true), y_pred), -1);
  return K.maximum(0, K.add(K.subtract(neg, pos), 1));
};
const logcosh = (y_true: T, y_pred: T): T => {
  const _logcosh = (x: T) => K.subtract(K.add(x, K.softplus(K.multiply(-2, x))), Math.log(2));
  return K.mean(_logcosh(K.subtract(y_pred, y_true)), -1);
};
const kullback_leibler_divergence = (y_true: T, y_pred: T): T => {
  const t = K.clip(y_true, K.epsilon(), 1);
  const p = K.clip(y_pred, K.epsilon(), 1);
  return K.sum(K.multiply(t, K.log(K.divide(t, p))), -1);
};
const categorical_crossentropy = (y_true: T, y_pred: T): T => K.categorical_crossentropy(y_pred, y_true);
const sparse_categorical_crossentropy = (y_true: T, y_pred: T): T => K.sparse_categorical_crossentropy(y_pred, y_true);
const binary_crossentropy = (y_true: T, y_pred: T): T => K.mean(K.binary_crossentropy(y_pred, y_true), -1);
// --- metrics.py (Keras 2.3.1) ---
const sparse_categorical_accuracy = (y_true: T, y_pred: T): T => {
  let yt = y_true;
  if (K.ndim(yt) === K.ndim(y_pred)) yt = K.squeeze(yt, -1);
  const labels = K.cast(K.argmax(y_pred, -1), K.floatx());
  return K.cast(K.equal(yt, labels), K.floatx());
};
const top_k_categorical_accuracy = (y_true: T, y_pred: T, k = 2): T => K.cast(K.in_top_k(y_pred, K.argmax(y_true, -1), k), K.floatx());

// One batch: 3 samples, 4 classes.
const logits = [[2, 1, 0.1, -1], [0.5, 2.5, 0.3, 0.2], [-1, 0, 3, 0.5]];
const softmaxRows = logits.map((r) => { const e = r.map(Math.exp); const s = e.reduce((a, b) => a + b); return e.map((v) => v / s); });
const onehot = [[0, 1, 0, 0], [0, 1, 0, 0], [1, 0, 0, 0]];
const ids = [1, 1, 0];

/** Keras' engine: y_pred from the model, y_true a placeholder with every dim unknown. */
function engine(loss: (t: T, p: T) => T, targets: number[][], ndim = 2) {
  const x = K.placeholder([null, 4]);
  const yTrue = K.placeholder({ ndim });
  const yPred = K.softmax(x);
  const f = K.function([x, yTrue], [loss(yTrue, yPred)]);
  return f([logits, targets])[0]!;
}

const captured: string[] = [];
let previous: ((m: string) => void) | undefined;
before(() => { previous = setWarningSink((m) => { captured.push(m); }); });
after(() => { setWarningSink(previous); });

describe('Keras 2.3.1 losses.py, ported', () => {
  it('categorical_crossentropy: -sum(y log p)', () => {
    const want = onehot.map((t, n) => -t.reduce((s, tv, c) => s + tv * Math.log(softmaxRows[n]![c]!), 0));
    expectClose(engine(categorical_crossentropy, onehot), want, { atol: 1e-6, rtol: 1e-5 });
  });
  it('sparse_categorical_crossentropy with a target of unknown dims (ndim 2, (None, None)) is flattened', () => {
    const want = ids.map((c, n) => -Math.log(softmaxRows[n]![c]!));
    expectClose(engine(sparse_categorical_crossentropy, ids.map((c) => [c])), want, { atol: 1e-6, rtol: 1e-5 });
    expectClose(engine(sparse_categorical_crossentropy, ids as never, 1), want, { atol: 1e-6, rtol: 1e-5 }); // ndim 1
  });
  it('binary_crossentropy, mean over the last axis', () => {
    const want = onehot.map((t, n) => -t.reduce((s, tv, c) => {
      const p = Math.min(Math.max(softmaxRows[n]![c]!, EPS), 1 - EPS);
      return s + tv * Math.log(p) + (1 - tv) * Math.log(1 - p);
    }, 0) / 4);
    expectClose(engine(binary_crossentropy, onehot), want, { atol: 1e-6, rtol: 1e-5 });
  });
  it('mean_squared_error, mean_absolute_percentage_error, categorical_hinge, logcosh, kullback_leibler_divergence', () => {
    const p = softmaxRows;
    const mse = onehot.map((t, n) => t.reduce((s, tv, c) => s + (p[n]![c]! - tv) ** 2, 0) / 4);
    const mape = onehot.map((t, n) => 100 * t.reduce((s, tv, c) => s + Math.abs((tv - p[n]![c]!) / Math.max(Math.abs(tv), EPS)), 0) / 4);
    const hinge = onehot.map((t, n) => {
      const pos = t.reduce((s, tv, c) => s + tv * p[n]![c]!, 0);
      const neg = Math.max(...t.map((tv, c) => (1 - tv) * p[n]![c]!));
      return Math.max(0, neg - pos + 1);
    });
    const lc = onehot.map((t, n) => t.reduce((s, tv, c) => s + Math.log(Math.cosh(p[n]![c]! - tv)), 0) / 4);
    const kl = onehot.map((t, n) => t.reduce((s, tv, c) => { const a = Math.min(Math.max(tv, EPS), 1); const b = Math.min(Math.max(p[n]![c]!, EPS), 1); return s + a * Math.log(a / b); }, 0));
    const tol = { atol: 1e-5, rtol: 1e-5 };
    expectClose(engine(mean_squared_error, onehot), mse, tol);
    expectClose(engine(mean_absolute_percentage_error, onehot), mape, { atol: 1e-3, rtol: 1e-5 });
    expectClose(engine(categorical_hinge, onehot), hinge, tol);
    expectClose(engine(logcosh, onehot), lc, tol);
    expectClose(engine(kullback_leibler_divergence, onehot), kl, tol);
  });
});

describe('Keras 2.3.1 metrics.py, ported', () => {
  it('sparse_categorical_accuracy squeezes a (None, None) target', () => {
    expectClose(engine(sparse_categorical_accuracy, [[0], [2], [2]]), [1, 0, 1]); // argmax of the logits: 0, 1, 2
  });
  it('top_k_categorical_accuracy', () => {
    expectClose(engine((t, p) => top_k_categorical_accuracy(t, p, 2), [[0, 0, 1, 0], [1, 0, 0, 0], [0, 0, 0, 1]]), [0, 1, 1]);
  });
});

describe('the crossentropy argument order', () => {
  // Keras 2.2/2.3 losses.py as written: K.categorical_crossentropy(y_true, y_pred).
  const literal = (y_true: T, y_pred: T): T => K.categorical_crossentropy(y_true, y_pred);
  it('a literal port of Keras 2.3 warns once per call site, naming both orders, and its numbers are those of the swapped call', () => {
    captured.length = 0;
    const got = engine(literal, onehot);
    engine(literal, onehot); // same call site: no second warning
    const warnings = captured.filter((m) => m.includes('K.categorical_crossentropy'));
    expect(warnings).to.have.length(1);
    expect(warnings[0]).to.match(/the arguments look swapped: the first \(output\) is a placeholder .* and the second \(target\) is computed by softmax/);
    expect(warnings[0]).to.match(/theanine takes \(output, target\).*Keras 2\.0\.7 and later .* write \(target, output\)/);
    expect(warnings[0]).to.match(/losses\.test\.ts/); // the call site
    // What the swapped call computes: output = the one-hot targets (scaled, clipped), target = the softmax.
    const want = onehot.map((t, n) => -softmaxRows[n]!.reduce((s, pv, c) => s + pv * Math.log(Math.min(Math.max(t[c]!, EPS), 1 - EPS)), 0));
    expectClose(got, want, { atol: 1e-4, rtol: 1e-5 });
    const right = onehot.map((t, n) => -t.reduce((s, tv, c) => s + tv * Math.log(softmaxRows[n]![c]!), 0));
    expect(Math.abs(Number(got.data[0]) - right[0]!)).to.be.greaterThan(1);
  });
  it('another call site warns again; sigmoid outputs and binary_crossentropy too', () => {
    captured.length = 0;
    const x = K.placeholder([null, 4]);
    const t = K.placeholder({ ndim: 2 });
    K.categorical_crossentropy(t, K.softmax(x));
    K.binary_crossentropy(t, K.sigmoid(x));
    expect(captured.filter((m) => /K\.(categorical|binary)_crossentropy/.test(m))).to.have.length(2);
    expect(captured.some((m) => /computed by sigmoid/.test(m))).to.equal(true);
  });
  it('the right order does not warn; neither do two placeholders', () => {
    captured.length = 0;
    const x = K.placeholder([null, 4]);
    const t = K.placeholder({ ndim: 2 });
    K.categorical_crossentropy(K.softmax(x), t);
    K.categorical_crossentropy(x, t, true);
    K.sparse_categorical_crossentropy(K.softmax(x), K.placeholder({ ndim: 1 }));
    expect(captured).to.deep.equal([]);
  });
});
