// A model file for `npx theanine export examples/build.ts --out net.ts` (the README's tour): its
// default export builds and returns a compiled function, which export writes as a standalone,
// type-checked TypeScript module that does not import theanine. TypeScript files are loaded
// through tsx (a dev dependency of the repository).
import { backend as K, NDArray } from 'theanine';

/** Deterministic weights, so the exported module is the same on every run. */
const weights = (rows: number, cols: number, scale: number) =>
  new NDArray(Float32Array.from({ length: rows * cols }, (_, i) => Math.sin(i + 1) * scale), [rows, cols]);

export default function build() {
  const x = K.placeholder([1, 4], null, 'float32', false, 'x');
  const W1 = K.variable(weights(4, 8, 0.5), 'float32', 'W1');
  const b1 = K.variable(new NDArray(new Float32Array(8), [8]), 'float32', 'b1');
  const W2 = K.variable(weights(8, 3, 0.5), 'float32', 'W2');
  const hidden = K.relu(K.bias_add(K.dot(x, W1), b1));
  return K.function([x], [K.softmax(K.dot(hidden, W2))], [], { name: 'net' });
}

/** A second builder, picked with `--builder buildPredictor`: the class index instead of probabilities. */
export function buildPredictor() {
  const x = K.placeholder([1, 4], null, 'float32', false, 'x');
  const W = K.variable(weights(4, 3, 0.5), 'float32', 'W');
  return K.function([x], [K.argmax(K.dot(x, W), -1)], [], { name: 'predictor' });
}
