// The results of a long softmax or log-softmax whose rows are split over the worker threads
// (src/codegen/cpu/wasm/reduce.ts parallelRows, results made by rt.fresh without zeros): each call
// returns an array of its own, which later calls (same input or another) never write, with the
// numbers of one thread bit for bit.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import { setThreads, threadPool } from '../../src/codegen/cpu/threads.js';
import { setHandoffModel } from '../../src/codegen/cpu/handoff.js';
import { PARALLEL_MIN_ELEMENTS } from '../../src/codegen/cpu/wasm/reduce-body.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';

const ROWS = Math.ceil((2 * PARALLEL_MIN_ELEMENTS) / 1000) + 3; // past the split threshold, several passes, an edge block
const shape = [ROWS, 1000];
const fill = (k: number) =>
  new NDArray(
    Float32Array.from({ length: ROWS * 1000 }, (_, i) => Math.sin(i * 0.37 + k) * (1 + (i % 7))),
    shape,
  );
const same = (a: Float32Array, b: Float32Array) =>
  Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)) === 0;

function build(log: boolean) {
  const x = K.placeholder(shape, null, 'float32');
  const f = K.function([x], [log ? K.log(K.softmax(x)) : K.softmax(x)]);
  return {
    run: (v: NDArray) => f([v])[0]!.data as Float32Array,
    source: (f as unknown as { source(): string }).source(),
  };
}

describe('codegen/cpu results of rows split over the threads', function () {
  this.timeout(120000);
  beforeEach(() => setHandoffModel(false));
  afterEach(() => {
    setThreads(undefined);
    setHandoffModel(true);
    clearCompileCache();
  });

  for (const log of [false, true]) {
    const name = log ? 'log-softmax' : 'softmax';
    it(`${name}: a returned array is not changed by later calls; 2 threads give 1 thread's bits`, async () => {
      const a = fill(1),
        b = fill(2);
      setThreads(1);
      clearCompileCache();
      const one = build(log);
      const wantA = one.run(a).slice();
      const wantB = one.run(b).slice();
      // 2 threads only: threads.test.ts, after this file, expects one worker started when it asks for 2
      setThreads(2);
      clearCompileCache();
      const many = build(log);
      expect(many.source).to.contain('w.par(');
      const before = threadPool()!.workerChunks;
      let ra = many.run(a);
      for (let i = 0; i < 200 && threadPool()!.workerChunks === before; i++) {
        await new Promise((r) => setTimeout(r, 20));
        ra = many.run(a);
      }
      expect(threadPool()!.workerChunks, 'row blocks computed by workers').to.be.greaterThan(before);
      expect(same(ra, wantA), 'x1').to.equal(true);
      const keep = ra.slice();
      const rb = many.run(b);
      const ra2 = many.run(a);
      const rb2 = many.run(b);
      for (const r of [rb, ra2, rb2]) expect(r.buffer).to.not.equal(ra.buffer);
      expect(rb2.buffer).to.not.equal(rb.buffer);
      expect(same(ra, keep), 'the first result after three later calls').to.equal(true);
      expect(same(rb, wantB), 'x2').to.equal(true);
      expect(same(ra2, wantA), 'x1 again').to.equal(true);
      expect(same(rb2, wantB), 'x2 again').to.equal(true);
      expect(same(rb, rb2), 'the second result after the fourth call').to.equal(true);
    });
  }
});
