// Issue 14 item 1: a compiled function called while another call of it (or of a function of the
// same structure) is on the stack. Each call owns its intermediate buffers, and every call reads
// the variables' values at its start (SPEC §3), on every target.
import { expect } from 'chai';
import { backend as K, defineOp, NDArray } from '../../src/index.js';
import { noteExcluded, targets } from '../helpers/targets.js';
import { expectClose } from '../helpers/assert.js';

/** An identity op whose reference runs `hook` once (the way a user op reaches a compiled function mid-call). */
let hook: (() => void) | null = null;
const tap = defineOp({
  name: 'tap_reentrant_test',
  arity: 1,
  infer: ([t]) => ({ dtype: t!.dtype, shape: t!.shape }),
  reference: ([t]) => {
    const h = hook;
    hook = null;
    h?.();
    return new NDArray(Float32Array.from(t!.data), t!.shape, t!.dtype);
  },
});

const seq = (n: number, f: (i: number) => number) => Float32Array.from({ length: n }, (_, i) => f(i));

describe('re-entrant calls', () => {
  for (const t of targets) {
    // The user op is an extern step on compiled targets: allowed here, it is what reaches back in.
    const options = { ...t.options, fallback: 'warn' as const };
    // A user op has only a JavaScript reference, which the onnx backend cannot run inside an ONNX Runtime session (named rule, listed at the end of the run).
    const itUserOp = t.name !== 'onnx' ? it : (title: string, _fn: () => void) => noteExcluded('onnx: user ops (defineOp) have no ONNX form', `re-entrant calls: ${title}`);
    describe(t.name, () => {
      it('a print_tensor sink that calls the same function mid-call leaves the outer result intact', () => {
        const x = K.placeholder([3, 4]);
        const W = K.variable(new NDArray(seq(12, (i) => (i % 4) - 1.5), [4, 3]));
        const f = K.function([x], [K.dot(K.print_tensor(K.tanh(K.dot(x, W)), 'mid'), K.exp(K.dot(x, W)))], [], options);
        const a = new NDArray(seq(12, (i) => Math.sin(i)), [3, 4]);
        const b = new NDArray(seq(12, (i) => 3 * Math.cos(i)), [3, 4]);
        const log = console.log;
        let nested = false;
        let got: NDArray[] = [];
        let want: NDArray[] = [];
        try {
          console.log = () => undefined;
          want = [f([a])[0]!, f([b])[0]!];
          console.log = () => {
            if (nested) return;
            nested = true;
            f([b]);
          };
          got = [f([a])[0]!];
        } finally {
          console.log = log;
        }
        expect(nested, 'the sink ran').to.equal(true);
        expectClose(got[0]!, want[0]!, { atol: 1e-5, rtol: 1e-5 });
      });

      // The gpu device runs a user op only with a gpu template (test/api/extend.test.ts), and the
      // onnx backend only ops with an ONNX form, so a user op's reference cannot reach back into a
      // call there; the print_tensor case above covers them.
      if (t.name.startsWith('gpu') || t.name === 'onnx') return;

      itUserOp('a call made from inside a call of the same function leaves the outer result intact', () => {
        const x = K.placeholder([4, 4]);
        const W = K.variable(new NDArray(seq(16, (i) => (i % 5) - 2), [4, 4]));
        const f = K.function([x], [K.dot(K.dot(x, W), tap(K.sin(x)))], [], options);
        const a = new NDArray(seq(16, (i) => Math.sin(i)), [4, 4]);
        const b = new NDArray(seq(16, (i) => 10 * Math.cos(i)), [4, 4]);
        const want = f([a])[0]!;
        const wantB = f([b])[0]!;
        let inner: NDArray | undefined;
        hook = () => { inner = f([b])[0]!; };
        const got = f([a])[0]!;
        expect(inner, 'the hook ran').to.not.equal(undefined);
        expectClose(got, want, { atol: 1e-5, rtol: 1e-5 });
        expectClose(inner!, wantB, { atol: 1e-5, rtol: 1e-5 });
      });

      itUserOp('a function of the same structure (another graph, shared program) compiled and called mid-call', () => {
        const build = () => {
          const x = K.placeholder([3, 5]);
          return { x, y: K.sum(K.exp(K.multiply(tap(K.tanh(x)), 2)), 1) };
        };
        const g1 = build();
        const f1 = K.function([g1.x], [K.multiply(g1.y, 3)], [], options);
        const a = new NDArray(seq(15, (i) => i / 7 - 1), [3, 5]);
        const want = f1([a])[0]!;
        hook = () => {
          const g2 = build();
          const f2 = K.function([g2.x], [K.multiply(g2.y, 3)], [], options);
          f2([new NDArray(seq(15, (i) => 2 - i / 3), [3, 5])]);
        };
        expectClose(f1([a])[0]!, want, { atol: 1e-5, rtol: 1e-5 });
        expect(hook).to.equal(null);
      });

      itUserOp('outputs read the variables at the start of the call, even if a nested call updates them', () => {
        const v = K.variable(new NDArray(Float32Array.of(1, 1), [2]));
        const x = K.placeholder([2]);
        // the variable is read after the tap in topological order, so a lazy read would see the nested update
        const f = K.function([x], [K.add(tap(x), v)], [], options);
        const bump = K.function([], [], [[v, K.constant(new NDArray(Float32Array.of(10, 10), [2]))]], options);
        hook = () => bump([]);
        const out = f([new NDArray(Float32Array.of(0, 0), [2])])[0]!;
        expect(Array.from(out.data)).to.deep.equal([1, 1]);
        expect(Array.from(K.get_value(v).data)).to.deep.equal([10, 10]); // the nested update stands
      });
    });
  }
});
