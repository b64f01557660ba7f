// The Keras-like progress text of `theanine train` (src/cli/progress.ts).
import { expect } from 'chai';
import { bar, epochBar, epochLine, formatDuration, progressLine } from '../../src/cli/progress.js';

const epoch = { epoch: 2, loss: 0.29581, accuracy: 0.91544, valLoss: 0.14093, valAccuracy: 0.95811, seconds: 3.04, examplesPerSecond: 2633.2 };

describe('cli: progress text', () => {
  it('formats durations as Keras does', () => {
    expect([0.4, 45, 59.6, 65, 3723].map(formatDuration)).to.deep.equal(['0s', '45s', '1:00', '1:05', '1:02:03']);
  });

  it('draws a 30-wide bar: done steps as =, the current as >', () => {
    expect(bar(0, 10)).to.equal(`[>${'.'.repeat(29)}]`);
    expect(bar(5, 10)).to.equal(`[${'='.repeat(14)}>${'.'.repeat(15)}]`);
    expect(bar(10, 10)).to.equal(`[${'='.repeat(30)}]`);
  });

  it('shows steps, ETA, ms/step and the running loss and accuracy during an epoch', () => {
    const line = progressLine({ epoch: 1, batch: 25, batches: 100, loss: 0.5, accuracy: 0.8, seconds: 2.5, examplesPerSecond: 320 });
    expect(line).to.equal(` 25/100 [${'='.repeat(6)}>${'.'.repeat(23)}] - ETA: 8s - 100ms/step - loss: 0.5000 - accuracy: 0.8000`);
  });

  it('keeps a full bar per epoch with its time, ms/step and the validation metrics', () => {
    expect(epochBar(epoch, 501)).to.equal(`501/501 [${'='.repeat(30)}] - 3s 6ms/step - loss: 0.2958 - accuracy: 0.9154 - val_loss: 0.1409 - val_accuracy: 0.9581`);
  });

  it('prints one line per epoch with the same fields where no bar is drawn', () => {
    expect(epochLine(epoch, 5, 501)).to.equal('epoch 2/5: 501 steps - 3.0s 6ms/step - loss: 0.2958 - accuracy: 0.9154 - val_loss: 0.1409 - val_accuracy: 0.9581 - 2633 examples/s');
  });
});
