// Training a model on the MNIST split with the backend API: one K.function computes the mean
// crossentropy of a batch and applies the Adam updates; another predicts classes for scoring.
import { NDArray, backend as K, type CompiledFunction } from '../index.js';
import { CLASSES, PIXELS, type Mnist, type Split } from './mnist.js';
import { buildModel, type Model, type ModelName } from './models.js';
import { adam } from './optimizers.js';
import { Rng } from './random.js';

export interface TrainOptions {
  readonly model: ModelName;
  readonly epochs: number;
  readonly batchSize: number;
  readonly lr: number;
  readonly decay?: number;
  readonly seed: number;
  readonly device: 'cpu' | 'gpu';
  /** lstm: unroll K.rnn (see models.ts). */
  readonly unroll?: boolean;
}

export interface EpochStats {
  readonly epoch: number;
  /** Mean training loss over the epoch's batches. */
  readonly loss: number;
  /** Share of the epoch's training examples classified right (as the weights were at each step). */
  readonly accuracy: number;
  /** Mean loss and accuracy on the held-out split after the epoch (Keras' val_loss, val_accuracy). */
  readonly valLoss: number;
  readonly valAccuracy: number;
  /** Seconds of the training steps (validation excluded). */
  readonly seconds: number;
  readonly examplesPerSecond: number;
}

/** Running means over the batches an epoch has done so far. */
export interface BatchStats {
  readonly epoch: number;
  readonly batch: number;
  readonly batches: number;
  readonly loss: number;
  readonly accuracy: number;
  readonly seconds: number;
  readonly examplesPerSecond: number;
}

export interface TrainHooks {
  onEpochStart?(epoch: number, batches: number): void;
  onBatch?(stats: BatchStats): void;
  onEpochEnd?(stats: EpochStats): void;
}

export interface TrainResult {
  readonly model: Model;
  readonly epochs: readonly EpochStats[];
  readonly testAccuracy: number;
  /** Seconds to build the graphs and compile both functions. */
  /** The compiled classifier (images -> class indices), e.g. for exportModule. */
  readonly predict: CompiledFunction;
  readonly buildSeconds: number;
  /** Seconds of the training steps, and of the validation after each epoch. */
  readonly trainSeconds: number;
  readonly validationSeconds: number;
  readonly evalSeconds: number;
}

/** A batch of images shaped as the model reads them, and one-hot labels. */
function batchOf(s: Split, order: Int32Array, start: number, n: number, shape: readonly number[]): [NDArray, NDArray] {
  const x = new Float32Array(n * PIXELS);
  const y = new Float32Array(n * CLASSES);
  for (let r = 0; r < n; r++) {
    const i = order[start + r]!;
    x.set(s.images.subarray(i * PIXELS, (i + 1) * PIXELS), r * PIXELS);
    y[r * CLASSES + s.labels[i]!] = 1;
  }
  return [new NDArray(x, [n, ...shape], 'float32'), new NDArray(y, [n, CLASSES], 'float32')];
}

const seconds = (t0: number) => (performance.now() - t0) / 1000;

export function trainMnist(data: Mnist, opts: TrainOptions, hooks: TrainHooks = {}): TrainResult {
  const t0 = performance.now();
  const rng = new Rng(opts.seed);
  const model = buildModel(opts.model, rng, { unroll: opts.unroll === true });
  const x = K.placeholder([null, ...model.exampleShape], null, 'float32', false, 'x');
  const y = K.placeholder([null, CLASSES], null, 'float32', false, 'y');
  const logits = model.logits(x);
  const loss = K.mean(K.categorical_crossentropy(logits, y, true));
  // Examples classified right in the batch (a sum: means over an epoch weight batches by size):
  // the true class's logit (exact: one-hot y picks it) is the largest. Without argmax's int64
  // result, which the gpu device keeps on the host. A tie for the largest counts as right.
  const right = K.sum(K.cast(K.equal(K.max(logits, -1), K.sum(logits.mul(y), -1)), 'float32'));
  const grads = K.gradients(loss, model.params);
  const { updates } = adam(model.params, grads, {
    lr: opts.lr,
    ...(opts.decay !== undefined ? { decay: opts.decay } : {}),
  });
  // Outputs read the weights before the step's updates (K.function's rule), as Keras' metrics do.
  const step = K.function([x, y], [loss, right], updates, { device: opts.device, name: 'train_step' });
  const evaluate = K.function([x, y], [loss, right], [], { device: opts.device, name: 'evaluate' });
  const predict = K.function([x], [K.argmax(logits, -1)], [], { device: opts.device, name: 'predict' });
  const buildSeconds = seconds(t0);

  const t1 = performance.now();
  const n = data.train.count;
  const batches = Math.ceil(n / opts.batchSize);
  const epochs: EpochStats[] = [];
  let validationSeconds = 0;
  for (let e = 1; e <= opts.epochs; e++) {
    const order = rng.permutation(n);
    const te = performance.now();
    let total = 0;
    let rightSoFar = 0;
    hooks.onEpochStart?.(e, batches);
    for (let b = 0; b < batches; b++) {
      const start = b * opts.batchSize;
      const size = Math.min(opts.batchSize, n - start);
      const [xb, yb] = batchOf(data.train, order, start, size, model.exampleShape);
      const [lossOut, rightOut] = step([xb, yb]);
      const lossValue = lossOut!.item() as number;
      if (!Number.isFinite(lossValue))
        throw new Error(
          `training diverged: the loss is ${lossValue} at epoch ${e}, batch ${b + 1} (try a smaller --lr)`,
        );
      total += lossValue;
      rightSoFar += rightOut!.item() as number;
      const sec = seconds(te);
      hooks.onBatch?.({
        epoch: e,
        batch: b + 1,
        batches,
        loss: total / (b + 1),
        accuracy: rightSoFar / (start + size),
        seconds: sec,
        examplesPerSecond: (start + size) / sec,
      });
    }
    const s = seconds(te);
    const tv = performance.now();
    const val = evaluateSplit(evaluate, data.test, model.exampleShape);
    validationSeconds += seconds(tv);
    const stats = {
      epoch: e,
      loss: total / batches,
      accuracy: rightSoFar / n,
      valLoss: val.loss,
      valAccuracy: val.accuracy,
      seconds: s,
      examplesPerSecond: n / s,
    };
    epochs.push(stats);
    hooks.onEpochEnd?.(stats);
  }
  const trainSeconds = seconds(t1) - validationSeconds;
  const t2 = performance.now();
  const testAccuracy = accuracy(predict, data.test, model.exampleShape);
  return {
    model,
    epochs,
    testAccuracy,
    predict,
    buildSeconds,
    trainSeconds,
    validationSeconds,
    evalSeconds: seconds(t2),
  };
}

/** Mean loss and accuracy of `evaluate` ([loss, right] of a batch) over `s`, in batches of 500. */
function evaluateSplit(
  evaluate: (v: unknown[]) => NDArray[],
  s: Split,
  shape: readonly number[],
): { loss: number; accuracy: number } {
  const order = Int32Array.from({ length: s.count }, (_, i) => i);
  let loss = 0;
  let right = 0;
  for (let start = 0; start < s.count; start += 500) {
    const n = Math.min(500, s.count - start);
    const [lossOut, rightOut] = evaluate(batchOf(s, order, start, n, shape));
    loss += (lossOut!.item() as number) * n;
    right += rightOut!.item() as number;
  }
  return { loss: loss / s.count, accuracy: right / s.count };
}

/** Fraction of `s` whose predicted class is the label, predicting in batches of 500. */
export function accuracy(predict: (v: unknown[]) => NDArray[], s: Split, shape: readonly number[]): number {
  const order = Int32Array.from({ length: s.count }, (_, i) => i);
  let right = 0;
  for (let start = 0; start < s.count; start += 500) {
    const n = Math.min(500, s.count - start);
    const [xb] = batchOf(s, order, start, n, shape);
    const pred = predict([xb])[0]!.data;
    for (let r = 0; r < n; r++) if (pred[r] === s.labels[start + r]) right++;
  }
  return right / s.count;
}
