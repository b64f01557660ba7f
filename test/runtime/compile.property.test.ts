// Property: on random graphs (elementwise ops with broadcasting, reductions, reshapes,
// transposes, index, dot, where, casts), every optimizer level on the cpu gives the reference
// interpreter's numbers (float64, tight tolerance; eqsat's reassociation stays within it). Fixed seed; FUZZ_RUNS=n for more graphs.
import * as fc from 'fast-check';
import { expect } from 'chai';
import { backend as K, debugprint } from '../../src/index.js';
import { apply } from '../../src/ir/build.js';
import { NDArray } from '../../src/ir/ndarray.js';
import type { Node } from '../../src/ir/node.js';
import { verify } from '../../src/ir/verify.js';
import { expectClose } from '../helpers/assert.js';
import { values } from '../passes/helpers.js';
import { isInt, type DType } from '../../src/ir/dtype.js';

const UNARY = ['neg', 'abs', 'exp', 'tanh', 'sigmoid', 'softplus', 'square', 'floor', 'sin', 'sign', 'expm1'];
const SAFE = ['sqrt', 'log', 'log1p', 'reciprocal']; // applied to abs(x) + 0.5
const BINARY = ['add', 'sub', 'mul', 'maximum', 'minimum', 'div', 'pow'];
const REDUCE = ['sum', 'mean', 'max', 'min', 'prod'];

type Cmd = readonly [number, number, number, number];

function pick<T>(xs: readonly T[], k: number): T {
  return xs[k % xs.length]!;
}

/** Interprets commands against a pool of nodes; a command that does not fit (shapes) is skipped. */
function buildGraph(cmds: readonly Cmd[], shapesSeed: number): { inputs: Node[]; outputs: Node[]; feeds: NDArray[] } {
  const shapeChoices: number[][] = [[], [3], [2, 3], [1, 3], [2, 1], [4, 2, 3], [2, 3, 4], [4, 1, 3]];
  const inputs = [0, 1, 2].map((i) => K.placeholder(pick(shapeChoices, shapesSeed >> (i * 3)), null, 'float64', false, `in${i}`));
  const pool: Node[] = [...inputs, apply('constant', [], { value: new NDArray([0.5], [], 'float64') })];
  const half = pool[3]!;
  for (const [a, b, c, d] of cmds) {
    const x = pick(pool, b);
    const y = pick(pool, c);
    let n: Node | undefined;
    try {
      switch (a % 19) {
        case 0: n = apply(pick(UNARY, d), [x]); break;
        case 1: n = apply(pick(SAFE, d), [apply('add', [apply('abs', [x]), half])]); break;
        case 2: case 3: {
          const op = pick(BINARY, d);
          const rhs = op === 'div' || op === 'pow' ? apply('add', [apply('abs', [y]), half]) : y;
          n = apply(op, [op === 'pow' ? apply('abs', [x]) : x, rhs]);
          break;
        }
        case 4: {
          if (x.ndim === 0) break;
          const axes = [...new Set([d % x.ndim, (d >> 2) % x.ndim])].slice(0, 1 + ((d >> 4) & 1)).sort();
          n = apply(pick(REDUCE, c), [x], { axes, keepdims: ((d >> 5) & 1) === 1 });
          break;
        }
        case 5: {
          const size = x.shape.reduce<number>((p, q) => p * (q ?? 1), 1);
          const targets = [[size], [-1, 1], [1, size], ...(size % 2 === 0 ? [[2, -1], [size / 2, 2]] : [])];
          n = apply('reshape', [x], { shape: pick(targets, d) });
          break;
        }
        case 6: {
          if (x.ndim < 2) break;
          const perms = x.ndim === 2 ? [[1, 0]] : [[2, 1, 0], [1, 0, 2], [0, 2, 1], [1, 2, 0]];
          n = apply('transpose', [x], { perm: pick(perms, d) });
          break;
        }
        case 7: n = apply('dot', [x, y]); break;
        case 8: n = apply('where', [apply('greater', [x, y]), x, apply('mul', [y, half])]); break;
        case 9: n = x.ndim > 0 && (x.shape[0] ?? 1) > 0 ? apply('index', [x], { index: d % (x.shape[0] ?? 1) }) : apply('cast', [apply('cast', [x], { dtype: 'float32' })], { dtype: 'float64' }); break;
        case 10: {
          const steps = [1, 1, 2, -1];
          n = apply('slice', [x], { axes: x.shape.map((dim, i) => ({ start: (d >> i) % 2 === 0 ? null : 1, stop: (c >> i) % 3 === 0 ? null : -1 + ((dim ?? 2) > 2 ? 0 : 2), step: pick(steps, (d >> (2 * i)) + i) })) });
          break;
        }
        case 11: n = apply('pad', [x], { pads: x.shape.map((_, i) => [(d >> i) % 2, (c >> i) % 3] as [number, number]) }); break;
        case 12: n = x.ndim > 0 ? apply('concat', [x, apply('exp', [x]), x], { axis: d % x.ndim }) : undefined; break;
        case 13: n = apply('tile', [x], { reps: x.shape.map((_, i) => 1 + ((d >> i) % 2)) }); break;
        case 14: n = x.ndim > 0 ? apply('repeat_elements', [x], { axis: d % x.ndim, rep: 1 + (c % 3) }) : apply('expand_dims', [x], { axis: 0 }); break;
        case 15: n = x.ndim >= 2 && x.shape[0] === y.shape[0] && y.ndim >= 2 ? apply('batch_dot', [x, y], { axes: [1 + (d % (x.ndim - 1)), 1 + (c % (y.ndim - 1))] }) : apply('batch_dot', [x, x], { axes: [1, 1] }); break;
        case 16: n = apply('sum_to_like', [apply('mul', [x, y]), y]); break;
        case 17: n = x.ndim > 0 ? apply(d % 2 === 0 ? 'argmax' : 'argmin', [x], { axis: c % x.ndim }) : undefined; break;
        case 18: {
          // a Scan: K.rnn over axis 1 of a rank-3 tensor, the state mixing in the step's slice
          if (x.ndim !== 3) break;
          const h0 = apply('mul', [apply('sum', [x], { axes: [1], keepdims: false }), half]);
          const [last, outs] = K.rnn((xt: Node, st: Node[]) => {
            const h = apply('tanh', [apply('add', [apply('mul', [xt, half]), st[0]!])]);
            return [apply('mul', [h, h]), [h]];
          }, x, [h0], d % 2 === 1);
          pool.push(last);
          n = outs;
          break;
        }
      }
    } catch {
      n = undefined;
    }
    if (n !== undefined && n.ndim <= 4 && n.shape.reduce<number>((p, q) => p * (q ?? 1), 1) <= 4096) pool.push(n);
  }
  const outputs = pool.length > 4 ? [pool[pool.length - 1]!, pick(pool.slice(4), shapesSeed)] : [apply('exp', [inputs[0]!])];
  const feeds = inputs.map((p, i) => values(p.shape as number[], 'float64', shapesSeed * 7 + i + 1));
  return { inputs, outputs, feeds };
}

describe('runtime/compile: random graphs agree with the reference interpreter', () => {
  const runs = Number(process.env['FUZZ_RUNS'] ?? 200);
  it(`every optimizer level on cpu, ${runs} graphs`, () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(1000), fc.nat(1000), fc.nat(1000), fc.nat(1000)), { minLength: 1, maxLength: 24 }),
        fc.nat(1 << 12),
        (cmds, shapesSeed) => {
          const { inputs, outputs, feeds } = buildGraph(cmds, shapesSeed);
          verify(outputs);
          let want: NDArray[];
          try {
            want = K.function(inputs, outputs, [], { optimizer: 'none' })(feeds);
          } catch (e) {
            // a graph the reference rejects at run time: so must every level
            for (const optimizer of ['fast_compile', 'fast_run', 'eqsat'] as const) {
              expect(() => K.function(inputs, outputs, [], { optimizer })(feeds), `${optimizer}; the reference said: ${String(e)}\n${debugprint(outputs)}`).to.throw();
            }
            return;
          }
          for (const optimizer of ['fast_compile', 'fast_run', 'eqsat'] as const) {
            const f = K.function(inputs, outputs, [], { optimizer });
            const got = f(feeds);
            want.forEach((w, i) => expectClose(got[i]!, w, { atol: 1e-9, rtol: 1e-9 }, `${optimizer} output ${i}\n${f.debugprint()}\n${f.source()}`));
          }
        },
      ),
      { seed: 20240611, numRuns: runs },
    );
  });
});

/** Graphs of one narrower dtype: stores round (or wrap) at every node, and the compiled code must do the same. */
function buildTypedGraph(cmds: readonly Cmd[], seed: number, dtype: DType): { inputs: Node[]; outputs: Node[]; feeds: NDArray[] } {
  const shapes: number[][] = [[5], [2, 5], [2, 1], [3, 2, 5]];
  const inputs = [0, 1].map((i) => K.placeholder(pick(shapes, seed >> (2 * i)), null, dtype, false, `in${i}`));
  const pool: Node[] = [...inputs];
  const ops = ['add', 'sub', 'mul', 'maximum', 'minimum'];
  for (const [a, b, c, d] of cmds) {
    const x = pick(pool, b);
    const y = pick(pool, c);
    let n: Node | undefined;
    try {
      switch (a % 6) {
        case 0: n = apply(pick(ops, d), [x, y]); break;
        case 1: n = apply(pick(['neg', 'abs', 'square', 'sign'], d), [x]); break;
        case 2: n = x.ndim === 0 ? undefined : apply(pick(['sum', 'max', 'min', 'prod'], d), [x], { axes: [d % x.ndim], keepdims: c % 2 === 0 }); break;
        case 3: n = x.ndim < 2 ? apply('reshape', [x], { shape: [-1, 1] }) : apply('transpose', [x], { perm: [...Array.from({ length: x.ndim }, (_, i) => x.ndim - 1 - i)] }); break;
        case 4: n = apply('cast', [apply('cast', [x], { dtype: pick(['int8', 'uint8', 'int32', 'float16', 'float32'] as DType[], d) })], { dtype }); break;
        case 5: n = apply('where', [apply('greater', [x, y]), x, y]); break;
      }
    } catch {
      n = undefined;
    }
    if (n !== undefined && n.shape.reduce<number>((p, q) => p * (q ?? 1), 1) <= 4096) pool.push(n);
  }
  const outputs = pool.length > 2 ? [pool[pool.length - 1]!, pick(pool.slice(2), seed)] : [apply('neg', [inputs[0]!])];
  const feeds = inputs.map((p, i) => values(p.shape as number[], 'float64', seed * 5 + i + 1, -40, 40).astype(dtype));
  return { inputs, outputs, feeds };
}

describe('runtime/compile: random graphs of narrow dtypes are bit-identical to the reference', () => {
  const runs = Math.max(50, Math.floor(Number(process.env['FUZZ_RUNS'] ?? 200) / 2));
  for (const dtype of ['float32', 'float16', 'int32', 'int8', 'uint8'] as DType[]) {
    it(`${dtype}, ${runs} graphs`, () => {
      fc.assert(
        fc.property(
          fc.array(fc.tuple(fc.nat(1000), fc.nat(1000), fc.nat(1000), fc.nat(1000)), { minLength: 1, maxLength: 12 }),
          fc.nat(1 << 10),
          (cmds, seed) => {
            const { inputs, outputs, feeds } = buildTypedGraph(cmds, seed, dtype);
            const want = K.function(inputs, outputs, [], { optimizer: 'none' })(feeds);
            // eqsat may reassociate float sums (rounding moves), never integer ones (wrapping arithmetic is associative).
            const levels = isInt(dtype) ? (['fast_compile', 'fast_run', 'eqsat'] as const) : (['fast_compile', 'fast_run'] as const);
            for (const optimizer of levels) {
              const got = K.function(inputs, outputs, [], { optimizer })(feeds);
              want.forEach((w, i) => {
                expect(got[i]!.dtype).to.equal(w.dtype);
                expect(Array.from(got[i]!.data), `${optimizer} output ${i}\n${debugprint(outputs)}`).to.deep.equal(Array.from(w.data));
              });
            }
          },
        ),
        { seed: 7, numRuns: runs },
      );
    });
  }
});
