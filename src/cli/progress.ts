// Keras-like progress for `theanine train`: what Keras' fit() prints (its Progbar), so a Keras
// user reads it at a glance. During an epoch, on a terminal:
//   Epoch 1/5
//   123/501 [=======>......................] - ETA: 3s - 6ms/step - loss: 0.3512 - accuracy: 0.8912
// and at its end the bar is kept, with the totals and the validation metrics:
//   501/501 [==============================] - 3s 6ms/step - loss: 0.2958 - accuracy: 0.9154 - val_loss: 0.1409 - val_accuracy: 0.9581
// Elsewhere (a pipe, a file) one line per epoch with the same fields.
import type { BatchStats, EpochStats } from '../examples/train.js';

const BAR = 30; // Keras' Progbar width

/** Keras' time format: `45s`, `1:05`, `1:02:03`. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${sec}` : `${m}:${sec}`;
}

/** `[=====>....]`: done steps as '=', the current one as '>' (Keras' Progbar). */
export function bar(step: number, steps: number): string {
  const filled = Math.floor((BAR * step) / steps);
  if (filled >= BAR) return `[${'='.repeat(BAR)}]`;
  const head = Math.max(filled, 1); // the arrow shows from the first step
  return `[${'='.repeat(head - 1)}>${'.'.repeat(BAR - head)}]`;
}

const msPerStep = (seconds: number, steps: number) => `${Math.round((1000 * seconds) / Math.max(1, steps))}ms/step`;
const metrics = (loss: number, accuracy: number) => `loss: ${loss.toFixed(4)} - accuracy: ${accuracy.toFixed(4)}`;
const validation = (e: EpochStats) => `val_loss: ${e.valLoss.toFixed(4)} - val_accuracy: ${e.valAccuracy.toFixed(4)}`;

/** The bar during an epoch: steps, bar, ETA, ms/step, running loss and accuracy. */
export function progressLine(b: BatchStats): string {
  const width = String(b.batches).length;
  const eta = (b.seconds / b.batch) * (b.batches - b.batch);
  return `${String(b.batch).padStart(width)}/${b.batches} ${bar(b.batch, b.batches)} - ETA: ${formatDuration(eta)} - ${msPerStep(b.seconds, b.batch)} - ${metrics(b.loss, b.accuracy)}`;
}

/** The kept bar at an epoch's end: its time, ms/step, loss and accuracy, and the validation metrics. */
export function epochBar(e: EpochStats, batches: number): string {
  return `${batches}/${batches} ${bar(batches, batches)} - ${formatDuration(e.seconds)} ${msPerStep(e.seconds, batches)} - ${metrics(e.loss, e.accuracy)} - ${validation(e)}`;
}

/** The epoch's line where no bar is drawn (stdout not a terminal): the same fields, and the speed. */
export function epochLine(e: EpochStats, epochs: number, batches: number): string {
  return `epoch ${e.epoch}/${epochs}: ${batches} steps - ${e.seconds.toFixed(1)}s ${msPerStep(e.seconds, batches)} - ${metrics(e.loss, e.accuracy)} - ${validation(e)} - ${Math.round(e.examplesPerSecond)} examples/s`;
}
