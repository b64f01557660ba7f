// gather, scatter_add_rows (Embedding's gradient), the random ops and the scans (cumsum, cumprod) as loop kernels: compiled
// code with no extern step, the reference interpreter's numbers bit for bit, index checks with
// the reference's error, and exportModule accepting them (same numbers in the standalone module).
import { expect } from 'chai';
import { backend as K, NDArray, ValueError } from '../../src/index.js';
import type { Tensor } from '../../src/index.js';
import { philoxDraw, DRAW } from '../../src/codegen/lower/random-fn.js';
import { elementBits, normalFromBits, seededKey, truncatedNormal, unit32, unitFloat, unseededKey } from '../../src/ir/random.js';
import { emptyFolder, runCalls, typecheck, writeModules } from '../helpers/exported.js';

const COMPILED = [{ optimizer: 'fast_run', device: 'cpu' }, { optimizer: 'fast_compile', device: 'cpu' }] as const;
const arr = (shape: number[], f: (i: number) => number) => new NDArray(Float32Array.from({ length: shape.reduce((p, d) => p * d, 1) }, (_, i) => f(i)), shape);

/** Embedding forward and gradient (repeated and negative indices), and every random op with a seed. */
function graph(): { inputs: Tensor[]; outputs: Tensor[]; feed: NDArray[] } {
  const ref = K.placeholder([7, 3], null, 'float32', false, 'ref');
  const ind = K.placeholder([2, 5], null, 'int32', false, 'ind');
  const rows = K.gather(ref, ind);
  const loss = K.sum(K.square(rows).mul(arr([2, 5, 3], (i) => (i % 4) - 1.5)));
  const [dref] = K.gradients(loss, [ref]);
  const x = K.placeholder([4, 6], null, 'float64', false, 'x');
  return {
    inputs: [ref, ind, x],
    outputs: [
      rows, dref!,
      K.random_normal([3, 5], 0.5, 2, 'float32', 11), K.random_normal([3, 5], 0, 1, 'float64', 2 ** 40 + 3),
      K.random_uniform([4, 3], -1, 3, 'float32', 5), K.random_uniform([4, 3], 0, 1, 'float64', 5), K.random_uniform([9], 0, 1, 'float16', 5),
      K.random_binomial([4, 4], 0.3, 'float32', 9), K.truncated_normal([2, 8], 1, 0.5, 'float32', 13),
      // long enough for the WebAssembly SIMD draws (src/codegen/cpu/wasm/philox.ts), which exported modules compute in JavaScript
      K.random_binomial([9, 16], 0.3, 'float32', 9), K.random_uniform([10, 10], -1, 3, 'float32', 2 ** 35 + 5),
      K.dropout(x, 0.4, null, 21), K.dropout(x, 0.5, [1, 6], 22),
      // scans: along the first, a middle and the last axis; float32 and float64; and their gradients
      K.cumsum(x, 0), K.cumprod(x.mul(0.5).add(1), 1), K.cumsum(K.reshape(x, [2, 3, 4]), 1), K.cumprod(K.reshape(rows, [10, 3]), 0),
      K.cumsum(ref, -1), K.cumsum(K.reshape(x, [12, 2]), 1), K.cumprod(K.reshape(x, [24, 1]), 1), K.cumsum(K.reshape(x, [3, 2, 2, 2]), 2), ...K.gradients(K.sum(K.cumprod(x.add(2), 1).mul(x)), [x]),
    ],
    feed: [
      arr([7, 3], (i) => Math.sin(i) * 3),
      new NDArray(Int32Array.from([0, 3, -1, 3, 6, 2, -7, 3, 0, 5]), [2, 5], 'int32'),
      new NDArray(Float64Array.from({ length: 24 }, (_, i) => i / 7 - 1), [4, 6], 'float64'),
    ],
  };
}

describe('gather, scatter_add_rows and random ops as kernels', () => {
  it('compile with no extern step and give the reference numbers bit for bit', () => {
    const g = graph();
    const want = K.function(g.inputs, g.outputs, [], { optimizer: 'none' })(g.feed);
    for (const o of COMPILED) {
      const f = K.function(g.inputs, g.outputs, [], o);
      const got = f(g.feed);
      const src = f.source();
      expect(src, o.optimizer).not.to.match(/extern|not compiled/);
      expect(src, o.optimizer).to.match(/rt\.row\(b\d+\[.*"gather"/);
      expect(src, o.optimizer).to.match(/\+= /); // the scatter accumulates
      got.forEach((r, k) => {
        expect(r.dtype, `${o.optimizer} output ${k}`).to.equal(want[k]!.dtype);
        expect(Array.from(r.data), `${o.optimizer} output ${k}`).to.deep.equal(Array.from(want[k]!.data));
      });
    }
  });

  it('an index out of range is the reference\'s error, naming the op, and changes no variable', () => {
    const ref = K.variable(arr([4, 2], (i) => i), 'float32', 'table');
    const ind = K.placeholder([3], null, 'int32', false, 'ind');
    const loss = K.sum(K.gather(ref, ind));
    const [g] = K.gradients(loss, [ref]);
    for (const o of [{ optimizer: 'none' }, ...COMPILED] as const) {
      const f = K.function([ind], [loss], [K.update_sub(ref, g!)], o);
      for (const bad of [[0, 4, 1], [-5, 0, 1]]) {
        expect(() => f([new NDArray(Int32Array.from(bad), [3], 'int32')]), `${o.optimizer} ${bad}`)
          .to.throw(ValueError, new RegExp(`gather: index ${bad.find((v) => v >= 4 || v < -4)} is out of range for reference of shape \\(4, 2\\) \\(allowed: -4\\.\\.3\\)`));
      }
      expect(Array.from(K.get_value(ref).data), o.optimizer).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7]);
    }
    // The gradient's scatter checks too (its indices reach it directly here).
    const gv = K.placeholder([2, 2], null, 'float32', false, 'gv');
    const iv = K.placeholder([2], null, 'int32', false, 'iv');
    const sc = K.function([gv, iv], [K.gradients(K.sum(K.gather(K.variable(arr([3, 2], (i) => i)), iv).mul(gv)), [gv])[0]!]);
    expect(sc([arr([2, 2], (i) => i), new NDArray(Int32Array.from([0, 2]), [2], 'int32')])[0]!.toArray()).to.deep.equal([[0, 1], [4, 5]]);
  });

  it('unseeded draws differ per call and per op, in compiled code as in the reference', () => {
    const f = K.function([], [K.random_uniform([64]), K.random_uniform([64]), K.dropout(K.ones([64]), 0.5)]);
    expect(f.source()).not.to.match(/extern/);
    const [a, b] = f([]);
    const [c] = f([]);
    expect(Array.from(a!.data)).not.to.deep.equal(Array.from(b!.data));
    expect(Array.from(a!.data)).not.to.deep.equal(Array.from(c!.data));
    expect(Array.from(a!.data).every((v) => v >= 0 && v < 1)).to.equal(true);
  });

  it('philoxDraw is the reference\'s numbers for every draw, key and index (past 2^32 too)', () => {
    const w = new Uint32Array(4);
    const keys = [seededKey(7), seededKey(2 ** 45 + 99), unseededKey(12, 3456)];
    const idx = [0, 1, 2, 1023, 2 ** 31 + 5, 2 ** 32 + 17, 2 ** 40 + 1];
    for (const key of keys) {
      for (const i of idx) {
        const at = (kind: number, a: number, b: number, bits: number) => philoxDraw(kind, i, key.k0, key.k1, key.stream, a, b, bits);
        for (const bits of [53, 24, 11]) expect(at(DRAW.uniform, -2, 5, bits)).to.equal(-2 + 7 * unitFloat(elementBits(key, i, 0, w), bits));
        expect(at(DRAW.normal, 0.5, 3, 53)).to.equal(0.5 + 3 * normalFromBits(elementBits(key, i, 0, w)));
        expect(at(DRAW.binomial, 0.37, 0, 53)).to.equal(unit32(elementBits(key, i, 0, w)) < 0.37 ? 1 : 0);
        expect(at(DRAW.truncated, 1, 2, 53)).to.equal(1 + 2 * truncatedNormal(key, i, w));
      }
    }
  });

  it('exportModule accepts them and the module gives the same numbers', function () {
    this.timeout(120000);
    const g = graph();
    const f = K.function(g.inputs, g.outputs);
    const live = f(g.feed);
    expect(f.source().match(/WebAssembly SIMD Philox/g)?.length).to.equal(3); // the 4x4 and 9x16 binomials, the 10x10 uniform
    const mod = f.exportModule({ name: 'datak' });
    const bad = K.function([g.inputs[0]!, g.inputs[1]!], [K.gather(g.inputs[0]!, g.inputs[1]!)]).exportModule({ name: 'badk' });
    const dir = emptyFolder();
    writeModules(dir, [mod, bad]);
    typecheck(dir, [mod, bad]);
    const [out] = runCalls(dir, [{ module: 'datak', inputs: g.feed }]);
    // JSON carries -0 as 0
    live.forEach((r, k) => expect(out![k], `output ${k}`).to.deep.equal(Array.from(r.data, (v) => Number(v) + 0)));
    const badFeed = [g.feed[0]!, new NDArray(Int32Array.from([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]), [2, 5], 'int32')];
    expect(() => runCalls(dir, [{ module: 'badk', inputs: badFeed }])).to.throw(/RangeError: gather: index 7 is out of range for reference of shape \(7, 3\)/);
  });
});
