// callAsync: every compiled function's call as a Promise. On gpu:webgpu the device's reply is
// awaited without blocking (no Atomics.wait on the caller's thread); calls are applied in order,
// variable updates included; a synchronous call while asynchronous ones are pending is an error.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import { webgpuCounts } from '../../src/runtime/gpu/webgpu/session.js';
import { blockingRequests } from '../../src/runtime/worker-call.js';
import { expectClose } from '../helpers/assert.js';
import { onWebgpu } from '../helpers/webgpu.js';

const rand = (shape: number[], seed: number): NDArray => {
  const n = shape.reduce((a, b) => a * b, 1);
  return NDArray.from(Array.from({ length: n }, (_, i) => Math.sin(seed * 1000 + i * 1.7) * 0.8), 'float32').reshape(shape);
};

/** A training step of a small perceptron on `device`, over its own variables from the same start. */
function trainingStep(device: 'cpu' | 'gpu') {
  const W = K.variable(rand([4, 3], 5), 'float32', 'W');
  const x = K.placeholder([8, 4]);
  const y = K.placeholder([8, 3]);
  const loss = K.mean(K.square(K.tanh(K.dot(x, W)).sub(y)));
  const [gW] = K.gradients(loss, [W]);
  return { W, step: K.function([x, y], [loss], [K.update_sub(W, gW!.mul(0.5))], { device }) };
}

/**
 * Counts, while `f` runs, the blocking requests to a worker this thread makes and its Atomics.wait calls (a blocking
 * request polls first, so a worker that answers at once is not waited on: `blocking` is the measure of blocking).
 */
async function countWaits<T>(f: () => Promise<T>): Promise<{ value: T; waits: number; blocking: number }> {
  const orig = Atomics.wait;
  let waits = 0;
  const before = blockingRequests();
  Atomics.wait = ((...a: Parameters<typeof Atomics.wait>) => { waits++; return orig(...a); }) as typeof Atomics.wait;
  try {
    const value = await f();
    return { value, waits, blocking: blockingRequests() - before };
  } finally {
    Atomics.wait = orig;
  }
}

describe('callAsync', function () {
  this.timeout(300_000);

  it('on the cpu: the same values as a call, and updates applied in the order of the calls', async () => {
    const a = trainingStep('cpu');
    const b = trainingStep('cpu');
    const xs = rand([8, 4], 6), ys = rand([8, 3], 7);
    const want = [0, 1, 2].map(() => a.step([xs, ys])[0]!.item());
    const got = await Promise.all([0, 1, 2].map(() => b.step.callAsync([xs, ys])));
    expect(got.map((r) => r[0]!.item())).to.deep.equal(want);
    expect(K.get_value(b.W).toArray()).to.deep.equal(K.get_value(a.W).toArray());
  });

  it('on the tensorflow backend: the same values as a call', async () => {
    const x = K.placeholder([2, 3]);
    const f = K.function([x], [K.softmax(x), K.sum(x, 1)], [], { backend: 'tensorflow' });
    const v = rand([2, 3], 3);
    const want = f([v]);
    const got = await f.callAsync([v]);
    got.forEach((g, k) => expect(g.toArray()).to.deep.equal(want[k]!.toArray()));
  });

  it('rejects bad input with the call\'s error', async () => {
    const x = K.placeholder([2]);
    const f = K.function([x], [x.mul(2)]);
    let err: unknown;
    try { await f.callAsync([[1, 2, 3]]); } catch (e) { err = e; }
    expect(String(err)).to.match(/does not fit the placeholder's shape/);
  });

  it('K.get_value_async: a variable\'s and an expression\'s values, as K.get_value', async () => {
    const W = K.variable(rand([3, 2], 4), 'float32', 'W');
    expect((await K.get_value_async(W)).toArray()).to.deep.equal(K.get_value(W).toArray());
    const e = K.sum(K.exp(W), 0);
    expect((await K.get_value_async(e)).toArray()).to.deep.equal(K.get_value(e).toArray());
    let err: unknown;
    try { await K.get_value_async(3 as never); } catch (x) { err = x; }
    expect(String(err)).to.match(/get_value_async: expected a tensor/);
  });

  describe('on gpu:webgpu', () => {
    onWebgpu();

    it('K.get_value_async reads a variable the device holds without blocking; later get_value uses that copy', async () => {
      const cpu = trainingStep('cpu');
      const gpu = trainingStep('gpu');
      const xs = rand([8, 4], 6), ys = rand([8, 3], 7);
      await gpu.step.callAsync([xs, ys]);
      cpu.step([xs, ys]);
      const before = webgpuCounts();
      const read = await countWaits(() => K.get_value_async(gpu.W));
      const after = webgpuCounts();
      expect(read.waits, 'no Atomics.wait').to.equal(0);
      expect(read.blocking, 'no blocking request').to.equal(0);
      expect(after.readbacks - before.readbacks, 'one read-back').to.equal(1);
      expectClose(read.value, K.get_value(cpu.W), { atol: 1e-5, rtol: 1e-4 });
      const again = webgpuCounts();
      expect(K.get_value(gpu.W).toArray()).to.deep.equal(read.value.toArray());
      expect(webgpuCounts().readbacks - again.readbacks, 'get_value: the host copy').to.equal(0);
    });

    it('callAsync awaits the read-backs a step needs mid-call (a gather\'s index check) without blocking', async () => {
      const x = K.placeholder([5, 4]);
      const i = K.placeholder([3], null, 'int32');
      const out = K.gather(x, K.mod(K.abs(i), 5)).mul(2);
      const f = K.function([x, i], [out], [], { device: 'gpu', fallback: 'error' });
      const xv = rand([5, 4], 2), iv = NDArray.from([-7, 3, 12], 'int32');
      const want = K.function([x, i], [out], [], { optimizer: 'none' })([xv, iv]);
      f([xv, iv]);
      const before = webgpuCounts();
      const got = await countWaits(() => f.callAsync([xv, iv]));
      const after = webgpuCounts();
      expect(got.waits, 'no Atomics.wait').to.equal(0);
      expect(got.blocking, 'no blocking request').to.equal(0);
      expect(after.submits - before.submits, 'the indices read back mid-call, then the rest').to.equal(2);
      expectClose(got.value[0]!, want[0]!, { atol: 1e-6, rtol: 1e-6 });
    });

    it('awaits the device without blocking, and matches the synchronous call and the cpu', async () => {
      const cpu = trainingStep('cpu');
      const gpu = trainingStep('gpu');
      expect(gpu.step.device).to.equal('gpu:webgpu');
      const xs = rand([8, 4], 6), ys = rand([8, 3], 7);
      gpu.step([xs, ys]); // compiles (the worker's shaders) and uploads the variable
      cpu.step([xs, ys]);
      const sync = await countWaits(async () => gpu.step([xs, ys]));
      expect(sync.blocking, 'a synchronous call blocks for the worker').to.be.above(0);
      const before = webgpuCounts();
      const asy = await countWaits(() => Promise.all([gpu.step.callAsync([xs, ys]), gpu.step.callAsync([xs, ys])]));
      const after = webgpuCounts();
      expect(asy.waits, 'callAsync never waits on Atomics.wait').to.equal(0);
      expect(asy.blocking, 'callAsync makes no blocking request').to.equal(0);
      expect(after.submits - before.submits, 'one command buffer per call').to.equal(2);
      expect(after.readbacks - before.readbacks, 'the loss per call').to.equal(2);
      const want = [0, 1, 2].map(() => cpu.step([xs, ys])[0]!.item());
      expectClose([sync.value[0]!.item(), ...asy.value.map((r) => r[0]!.item())], want, { rtol: 1e-4 });
      expectClose(K.get_value(gpu.W), K.get_value(cpu.W), { atol: 1e-5, rtol: 1e-4 });
    });

    it('refuses a synchronous call while callAsync calls are pending, naming callAsync', async () => {
      const { step } = trainingStep('gpu');
      const xs = rand([8, 4], 6), ys = rand([8, 3], 7);
      const pending = step.callAsync([xs, ys]);
      expect(() => step([xs, ys])).to.throw(/while callAsync calls on gpu:webgpu are pending.*callAsync/);
      await pending;
      expect(step([xs, ys])[0]!.shape).to.deep.equal([]);
    });
  });
});
