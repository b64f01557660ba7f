// The target skeleton (src/runtime/target.ts) every K.function target stands on: a rebuilt graph
// (new placeholders, new variables, same structure) reuses its twin's optimized program and
// still computes with its own variables; a Scan body is optimized once per pass list whichever
// target runs it; shapes that do not fit come back through the same rule.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import type { FunctionOptions } from '../../src/api/function.js';
import { compileStats } from '../../src/runtime/cpu/compile.js';
import { compileTimes } from '../../src/runtime/target.js';
import { ortAvailable } from '../../src/runtime/onnx/session.js';

const ortMissing = ortAvailable();
if (ortMissing !== undefined) console.log(`runtime/target: onnx not run: ${ortMissing}`);
const TARGETS: [string, FunctionOptions][] = [
  ['cpu', { device: 'cpu' }],
  ['tensorflow', { backend: 'tensorflow' }],
  ...(ortMissing === undefined ? [['onnx', { backend: 'onnx' }] as [string, FunctionOptions]] : []),
];

/** tanh(x @ W + b) * c over fresh leaves: the same structure for the same c. */
function build(w: number, c: number, opts: FunctionOptions) {
  const x = K.placeholder([null, 2], null, 'float32');
  const W = K.variable(new NDArray(Float32Array.from([w, 0, 0, w]), [2, 2]));
  const b = K.variable(new NDArray(Float32Array.from([1, 1]), [2]));
  return K.function([x], [K.tanh(K.dot(x, W).add(b)).mul(c)], [], opts);
}

describe('runtime/target: the skeleton every target shares', () => {
  TARGETS.forEach(([name, opts], t) => {
    describe(name, () => {
      it('a rebuilt graph reuses the optimized program and computes with its own variables', () => {
        const c = 1.5 + t; // a structure no other test builds
        const before = compileStats.programs;
        const f = build(0.5, c, opts);
        expect(compileStats.programs, 'programs optimized for the first function').to.equal(before + 1);
        const g = build(2, c, opts);
        expect(compileStats.programs, 'programs optimized for its twin').to.equal(before + 1);
        const x = [[1, -1], [0.25, 0.5]];
        const want = (w: number) => x.map((r) => r.map((v) => Math.tanh(v * w + 1) * c));
        const close = (got: number[][], exp: number[][]) => got.flat().forEach((v, i) => expect(v).to.be.closeTo(exp.flat()[i]!, 1e-6));
        close(g([x])[0]!.toArray() as number[][], want(2));
        close(f([x])[0]!.toArray() as number[][], want(0.5));
        close(g([x.slice(0, 1)])[0]!.toArray() as number[][], want(2).slice(0, 1)); // another batch size
      });

      it('a Scan body is optimized once for every function and batch size using it', () => {
        const make = () => {
          const x = K.placeholder([null, null, 3], null, 'float32');
          const [, outs] = K.rnn((xt, [h]) => { const hn = K.tanh(xt.mul(1).add(h!)); return [hn, [hn]]; }, x, [K.sum(K.zeros_like(x), 1)]);
          return K.function([x], [K.sum(outs)], [], opts);
        };
        const run = (f: ReturnType<typeof make>, b: number) => f([NDArray.zeros([b, 5, 3], 'float32')])[0]!.toArray();
        run(make(), 2); // the body's passes run here at the latest
        compileTimes.bodyPasses = 0;
        expect(run(make(), 2)).to.equal(0);
        expect(run(make(), 3)).to.equal(0);
        expect(compileTimes.bodyPasses, 'ms spent optimizing the body again').to.equal(0);
      });
    });
  });
});
