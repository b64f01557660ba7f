// Two row kernels of the SIMD reduction tier run as one (src/codegen/cpu/wasm/reduce-pair.ts): softmax
// (max and exp, then sum and division), log-softmax (max and x - max, then log-sum-exp and the
// subtraction), attention's scaled and masked softmax. The pair runs each kernel's own loop body,
// so its results equal the two kernels' bit for bit, and so stay within the reference's bound of
// docs/numerics.md ("Reduction precision", exp within 1 ulp: a softmax element within 7 * 2^-24 relative);
// with 1 and 2 threads the same numbers.
import { expect } from 'chai';
import { setHandoffModel } from '../../src/codegen/cpu/handoff.js';
import { backend as K, NDArray } from '../../src/index.js';
import { setRowPairs } from '../../src/codegen/cpu/wasm/reduce-pair.js';
import { PARALLEL_MIN_ELEMENTS } from '../../src/codegen/cpu/wasm/reduce.js';
import { setThreads, threadPool } from '../../src/codegen/cpu/threads.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';
import type { Node } from '../../src/ir/node.js';

function values(n: number, seed: number, scale = 4): Float32Array {
  const out = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = (s / 4294967296 - 0.5) * 2 * scale;
  }
  return out;
}

const ulp32 = (x: number) => {
  const a = Math.abs(Math.fround(x));
  if (a < 2 ** -126) return 2 ** -149;
  return 2 ** (Math.floor(Math.log2(a)) - 23);
};

type Graph = (xs: readonly Node[]) => Node;
interface Run { outs: Float32Array[]; source: string }

function run(f: Graph, shapes: number[][], data: Float32Array[], how: { pairs?: boolean; reference?: boolean } = {}): Run {
  setRowPairs(how.pairs ?? true);
  clearCompileCache();
  try {
    const xs = shapes.map((s) => K.placeholder(s, null, 'float32'));
    const fn = K.function(xs, [f(xs)], [], how.reference === true ? { optimizer: 'none' } : {});
    const outs = fn(data.map((d, i) => new NDArray(d, shapes[i]!, 'float32'))).map((o) => o.data as Float32Array);
    return { outs, source: how.reference === true ? '' : (fn as unknown as { source(): string }).source() };
  } finally {
    setRowPairs(true);
    clearCompileCache();
  }
}

function expectSame(got: Float32Array, want: Float32Array, what: string): void {
  expect(got.length).to.equal(want.length);
  for (let i = 0; i < got.length; i++) if (!Object.is(got[i], want[i])) expect.fail(`${what}: element ${i} is ${got[i]}, expected ${want[i]}`);
}

const kernels = (src: string) => src.match(/^function k\d+/gm)?.length ?? 0;

describe('codegen/cpu/wasm row pairs: softmax and its relatives in one kernel', () => {
  // the hand-off model (src/codegen/cpu/handoff.ts) off: the workers take part whatever the machine's load
  before(() => setHandoffModel(false));
  after(() => setHandoffModel(undefined));
  const L = 1000;
  const cases: [string, Graph, (rows: number) => number[][], number][] = [
    ['softmax', ([x]) => K.softmax(x!), (r) => [[r, L]], 3],
    ['softmax over odd rows of 333', ([x]) => K.softmax(x!), (r) => [[r, 333]], 3],
    ['log-softmax', ([x]) => K.log(K.softmax(x!)), (r) => [[r, L]], 2],
    ['scaled, masked softmax (attention)', ([x, m]) => K.softmax(x!.mul(0.125).add(m!)), (r) => [[r, L], [r, L]], 3],
  ];
  for (const [name, f, shapes, ulps] of cases) {
    it(`${name}: one row kernel, bit-identical to the two kernels, within ${ulps} ulps of the reference`, () => {
      const sh = shapes(40);
      const data = sh.map((s, i) => {
        const d = values(s[0]! * s[1]!, 7 + i);
        // a mask: -1e9 at a spread of places (masked positions give 0)
        if (i === 1) for (let j = 0; j < d.length; j++) d[j] = j % 7 === 3 ? -1e9 : 0;
        return d;
      });
      const pair = run(f, sh, data);
      const two = run(f, sh, data, { pairs: false });
      const ref = run(f, sh, data, { reference: true }).outs[0]!;
      // the pair: one WebAssembly row kernel fewer, no intermediate array between them
      expect(pair.source).to.include('rt.red(');
      expect(kernels(pair.source)).to.equal(kernels(two.source) - 1);
      expect((two.source.match(/rt\.red\(/g) ?? []).length).to.equal((pair.source.match(/rt\.red\(/g) ?? []).length + 1);
      expectSame(pair.outs[0]!, two.outs[0]!, name);
      const cols = sh[0]![1]!;
      const gamma = (cols * 2 ** -53) / (1 - cols * 2 ** -53);
      for (let i = 0; i < ref.length; i++) {
        // log-softmax: (x - m) - log(s), the log's 1 ulp of log(s) and the subtraction's rounding
        const bound = name === 'log-softmax' ? ulps * ulp32(ref[i]!) + 2 * ulp32(Math.log(cols)) : ulps * ulp32(ref[i]!) + 2 * gamma * Math.abs(ref[i]!) * cols;
        if (!(Math.abs(pair.outs[0]![i]! - ref[i]!) <= bound)) expect.fail(`${name}: element ${i} is ${pair.outs[0]![i]}, the reference's ${ref[i]} (bound ${bound})`);
      }
    });
  }

  it('leaves the pair alone when the intermediate is also a result', () => {
    const sh = [[40, L]];
    const data = [values(40 * L, 3)];
    const r = run(([x]) => {
      const e = K.exp(x!.sub(K.max(x!, 1, true)));
      return K.concatenate([e, e.div(K.sum(e, 1, true))], 0);
    }, sh, data);
    const two = run(([x]) => {
      const e = K.exp(x!.sub(K.max(x!, 1, true)));
      return K.concatenate([e, e.div(K.sum(e, 1, true))], 0);
    }, sh, data, { pairs: false });
    expectSame(r.outs[0]!, two.outs[0]!, 'exp and softmax');
  });

  // 2 threads only: the pool is the process's, and test/codegen/threads.test.ts counts the workers it starts
  it('splits a long softmax over the threads: the same numbers with 1 and 2 threads', async () => {
    const rows = Math.ceil(PARALLEL_MIN_ELEMENTS / L) + 37;
    const data = [values(rows * L, 29)];
    const build = () => {
      const x = K.placeholder([rows, L], null, 'float32');
      const fs = [K.function([x], [K.softmax(x)]), K.function([x], [K.log(K.softmax(x))])];
      return {
        run: () => fs.map((f) => f([new NDArray(data[0]!, [rows, L], 'float32')])[0]!.data as Float32Array),
        source: fs.map((f) => (f as unknown as { source(): string }).source()).join('\n'),
      };
    };
    try {
      setThreads(1);
      clearCompileCache();
      const one = build();
      expect(one.source).to.not.contain('w.par(');
      const want = one.run();
      setThreads(2);
      clearCompileCache();
      const two = build();
      expect(two.source).to.contain('w.par(');
      expect(kernels(two.source)).to.equal(2);
      const pool = () => threadPool() as unknown as { workerChunks: number } | undefined;
      const before = pool()?.workerChunks ?? 0;
      let got = two.run();
      for (let i = 0; i < 200 && (pool()?.workerChunks ?? 0) === before; i++) {
        await new Promise((r) => setTimeout(r, 20));
        got = two.run();
      }
      expect(pool()!.workerChunks, 'blocks computed by workers').to.be.greaterThan(before);
      got.forEach((g, i) => expectSame(g, want[i]!, `output ${i}, 2 threads`));
    } finally {
      setThreads(undefined);
      clearCompileCache();
    }
  });
});
