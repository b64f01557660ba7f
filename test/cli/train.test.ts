import { expect } from 'chai';
import { runCli } from '../helpers/cli.js';
import { backend as K } from '../../src/index.js';
import { loadGpuJs } from '../../src/runtime/gpu/gpujs.js';

describe('cli: theanine train mnist', function () {
  this.timeout(120000);

  it('prints what runs, the data, the settings, one Keras-like line per epoch and the test accuracy', async () => {
    const r = await runCli('train', 'mnist', '--limit', '256', '--epochs', '2', '--batch-size', '32', '--seed', '3');
    expect(r.code, r.err).to.equal(0);
    const lines = r.out.trimEnd().split('\n');
    expect(lines[0]).to.equal('backend theanine, device cpu (generated JavaScript)');
    expect(lines[1]).to.match(/^mnist: 256 training digits, 1996 held-out digits for validation and the test \(/);
    expect(lines[2]).to.match(/^model mlp; adam lr 0\.002, decay 0\.001, batch 32, 2 epochs, seed 3$/);
    const epoch = /^epoch (\d)\/2: 8 steps - \d+\.\ds \d+ms\/step - loss: (\d\.\d{4}) - accuracy: (\d\.\d{4}) - val_loss: (\d\.\d{4}) - val_accuracy: (\d\.\d{4}) - \d+ examples\/s$/;
    const e1 = epoch.exec(lines[3]!);
    const e2 = epoch.exec(lines[4]!);
    expect(e1, lines[3]).to.not.equal(null);
    expect(e2, lines[4]).to.not.equal(null);
    expect([e1![1], e2![1]]).to.deep.equal(['1', '2']);
    // Training improves both the training and the validation metrics.
    expect(Number(e2![2])).to.be.below(Number(e1![2]));
    expect(Number(e2![5])).to.be.above(Number(e1![5]));
    expect(lines[5]).to.equal('dense 784->256 relu, dense 256->10; 203530 parameters');
    expect(lines[6]).to.match(/^time: build \d+\.\d s, train \d+\.\d s, validation \d+\.\d s, test \d+\.\d s$/);
    expect(lines[7]).to.match(/^test accuracy: 0\.\d{4}$/);
    expect(Number(lines[7]!.split(': ')[1])).to.be.above(0.6);
    // The last validation is on the held-out split with the final weights: the test accuracy.
    expect(lines[7]!.split(': ')[1]).to.equal(e2![5]);
  });

  it('--backend tensorflow trains on TensorFlow.js to the same numbers, and leaves the backend as it was', async () => {
    const args = ['train', 'mnist', '--limit', '128', '--epochs', '1', '--batch-size', '32', '--seed', '3'];
    const tf = await runCli(...args, '--backend', 'tensorflow');
    expect(tf.code, tf.err).to.equal(0);
    const lines = tf.out.trimEnd().split('\n');
    expect(lines[0]).to.match(/^backend tensorflow, tfjs flavour (node|wasm|cpu) \(TensorFlow\.js backend "(tensorflow|wasm|cpu)"/);
    expect(K.backend()).to.equal('theanine');
    const th = await runCli(...args);
    const pick = (out: string, re: RegExp) => Number(re.exec(out)![1]);
    // float32 throughout on both backends; tfjs' kernels may sum in another order
    expect(pick(tf.out, /loss: (\d+\.\d+)/)).to.be.closeTo(pick(th.out, /loss: (\d+\.\d+)/), 2e-3);
    expect(pick(tf.out, /test accuracy: (\d\.\d+)/)).to.be.closeTo(pick(th.out, /test accuracy: (\d\.\d+)/), 0.01);
  });

  it('--device gpu trains on the gpu device (gpu.js) to the cpu\'s numbers, or says in one line that gpu.js is missing', async () => {
    const args = ['train', 'mnist', '--limit', '64', '--epochs', '1', '--batch-size', '32', '--seed', '3'];
    const g = await runCli(...args, '--device', 'gpu');
    if (loadGpuJs() instanceof Error) {
      expect(g.code).to.equal(2);
      expect(g.err.trimEnd().split('\n')).to.have.length(1);
      expect(g.err).to.match(/^theanine: .*device "gpu" is unavailable: the optional package gpu.js is not installed/);
      return;
    }
    expect(g.code, g.err).to.equal(0);
    expect(g.out.split('\n')[0]).to.match(/^backend theanine, device gpu:(headlessgl|webgl2|webgl|webasm) \(gpu\.js \d+\.\d+\.\d+, mode /);
    const c = await runCli(...args);
    const pick = (out: string) => Number(/test accuracy: (\d\.\d+)/.exec(out)![1]);
    expect(pick(g.out)).to.be.closeTo(pick(c.out), 0.02);
  });
});
