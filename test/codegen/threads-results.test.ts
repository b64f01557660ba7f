// Results the worker threads write (src/codegen/cpu/driver.ts workersWrite, threads.ts' rows-into-
// results jobs, wasm/reduce.ts parallelRows): a long softmax or log-softmax over several threads
// returns an array over a SharedArrayBuffer of its own, written by the threads that computed its
// rows, with the numbers of one thread bit for bit; an array a call returned is never written by a
// later call (the spare buffer made after a call is handed out once), nor shared by two calls.
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

function build(log: boolean) {
  const x = K.placeholder(shape, null, 'float32');
  const f = K.function([x], [log ? K.log(K.softmax(x)) : K.softmax(x)]);
  return {
    run: (v: NDArray) => f([v])[0]!.data as Float32Array,
    source: (f as unknown as { source(): string }).source(),
  };
}

describe('codegen/cpu results written by the worker threads', function () {
  this.timeout(120000);
  beforeEach(() => setHandoffModel(false));
  afterEach(() => {
    setThreads(undefined);
    setHandoffModel(true);
    clearCompileCache();
  });

  for (const log of [false, true]) {
    const name = log ? 'log-softmax' : 'softmax';
    it(`${name}: 2 threads write the rows they compute into a result of its own, 1-thread bits; a later call leaves it unchanged`, async () => {
      const a = fill(1),
        b = fill(2);
      setThreads(1);
      clearCompileCache();
      const one = build(log);
      expect(one.source).to.not.contain(', true)');
      const wantA = one.run(a).slice();
      const wantB = one.run(b).slice();
      expect(one.run(a).buffer instanceof SharedArrayBuffer).to.equal(false);
      // 2 threads only: threads.test.ts, after this file, expects one worker started when it asks for 2
      for (const t of [2]) {
        setThreads(t);
        clearCompileCache();
        const many = build(log);
        expect(many.source).to.contain(`rt.fresh(Float32Array, ${ROWS * 1000}, true)`);
        const before = threadPool()!.workerChunks;
        let ra = many.run(a);
        for (let i = 0; i < 200 && threadPool()!.workerChunks === before; i++) {
          await new Promise((r) => setTimeout(r, 20));
          ra = many.run(a);
        }
        expect(threadPool()!.workerChunks, `${t} threads: row blocks computed by workers`).to.be.greaterThan(before);
        expect(ra.buffer instanceof SharedArrayBuffer).to.equal(true);
        expect(ra.byteOffset).to.equal(0);
        expect(ra.buffer.byteLength).to.equal(ROWS * 1000 * 4);
        expect(Buffer.compare(Buffer.from(ra.buffer), Buffer.from(wantA.buffer)), `${t} threads: x1`).to.equal(0);
        const keep = ra.slice();
        // later calls of the same size (the spare buffer, then new ones) and another input
        const rb = many.run(b);
        const rb2 = many.run(b);
        const ra2 = many.run(a);
        for (const r of [rb, rb2, ra2]) expect(r.buffer).to.not.equal(ra.buffer);
        expect(rb.buffer).to.not.equal(rb2.buffer);
        expect(Buffer.compare(Buffer.from(ra.buffer), Buffer.from(keep.buffer)), 'the first result after later calls').to.equal(0);
        expect(Buffer.compare(Buffer.from(rb.buffer), Buffer.from(wantB.buffer)), `${t} threads: x2`).to.equal(0);
        expect(Buffer.compare(Buffer.from(rb2.buffer), Buffer.from(wantB.buffer)), `${t} threads: x2 again`).to.equal(0);
        expect(Buffer.compare(Buffer.from(ra2.buffer), Buffer.from(wantA.buffer)), `${t} threads: x1 again`).to.equal(0);
        // the spare buffer's pages are written (an atomic or with 0) by a worker while the next call may already use it
        await new Promise((r) => setTimeout(r, 50));
        const rb3 = many.run(b);
        expect(Buffer.compare(Buffer.from(rb3.buffer), Buffer.from(wantB.buffer)), `${t} threads: x2 on the spare`).to.equal(0);
      }
    });
  }

  it('a short softmax (no split) keeps a result over an ArrayBuffer', () => {
    setThreads(2);
    clearCompileCache();
    const x = K.placeholder([64, 1000], null, 'float32');
    const f = K.function([x], [K.softmax(x)]);
    const src = (f as unknown as { source(): string }).source();
    expect(src).to.not.contain(', true)');
    const r = f([new NDArray(new Float32Array(64000).fill(1), [64, 1000])])[0]!.data as Float32Array;
    expect(r.buffer instanceof SharedArrayBuffer).to.equal(false);
    expect(r[0]).to.be.closeTo(1 / 1000, 1e-9);
  });
});
