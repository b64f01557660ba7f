// pool_grad and pool_select (max and average pooling's adjoints), grouped and depthwise
// convolutions with their adjoints, and in_top_k as kernels: compiled code with no extern step,
// checked against the reference interpreter (pooling adjoints bit for bit: they add the same
// float64 terms in the same order; convolutions within 1e-12 in float64, as the kernels sum over
// taps and channels in one pass where the reference sums each tap's channels first), on the gpu
// device within float32 tolerances, and exportModule accepting them.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import type { Tensor } from '../../src/index.js';
import { apply } from '../../src/ir/build.js';
import { expectClose } from '../helpers/assert.js';
import { emptyFolder, runCalls, typecheck, writeModules } from '../helpers/exported.js';
import { loadGpuJs } from '../../src/runtime/gpu/gpujs.js';
import { needs } from '../helpers/needs.js';

const COMPILED = [{ optimizer: 'fast_run', device: 'cpu' }, { optimizer: 'fast_compile', device: 'cpu' }] as const;
const size = (s: readonly number[]) => s.reduce((p, d) => p * d, 1);
/** Values with many ties (multiples of 0.5 in [-2, 2]), a NaN at `nan` when given. */
const tied = (shape: number[], seed: number, dtype: 'float32' | 'float64', nan: number[] = []) => {
  const data = Array.from({ length: size(shape) }, (_, i) => (nan.includes(i) ? NaN : (((i * 7 + seed) * 13) % 9) / 2 - 2));
  return new NDArray(dtype === 'float64' ? Float64Array.from(data) : Float32Array.from(data), shape, dtype);
};
const smooth = (shape: number[], seed: number, dtype: 'float32' | 'float64' = 'float64') => {
  const data = Array.from({ length: size(shape) }, (_, i) => Math.sin(i * 1.3 + seed));
  return new NDArray(dtype === 'float64' ? Float64Array.from(data) : Float32Array.from(data), shape, dtype);
};
const win = (strides: number[], padding: string, dilation = strides.map(() => 1)) => ({ strides, dilation, padding });

interface Case { readonly name: string; readonly feed: NDArray[]; build(...xs: Tensor[]): Tensor; readonly exact: boolean }

const poolCase = (name: string, xs: number[], window: number[], w: ReturnType<typeof win>, mode: 'max' | 'avg', dtype: 'float32' | 'float64', nan: number[] = []): Case[] => {
  const d = window.length;
  const outSizes = xs.slice(1, d + 1).map((s, i) => {
    const eff = w.dilation[i]! * (window[i]! - 1) + 1;
    return w.padding === 'valid' ? Math.floor((s - eff) / w.strides[i]!) + 1 : Math.ceil(s / w.strides[i]!);
  });
  const ys = [xs[0]!, ...outSizes, xs[d + 1]!];
  const a = { window, ...w, mode };
  const cases: Case[] = [{
    name: `pool_grad ${mode} ${name} ${dtype}`, feed: [tied(xs, 1, dtype, nan), smooth(ys, 2, dtype)], exact: true,
    build: (x, dy) => apply('pool_grad', [x, dy], a) as unknown as Tensor,
  }];
  if (mode === 'max') {
    cases.push({
      name: `pool_select ${name} ${dtype}`, feed: [tied(xs, 3, dtype, nan), smooth(xs, 4, dtype)], exact: true,
      build: (x, g) => apply('pool_select', [x, g], a) as unknown as Tensor,
    });
  }
  return cases;
};

const cases: Case[] = [
  ...poolCase('2x2 strides 2 valid', [2, 4, 6, 3], [2, 2], win([2, 2], 'valid'), 'max', 'float32'),
  ...poolCase('3x3 strides 1 same (overlapping), NaN', [1, 5, 4, 2], [3, 3], win([1, 1], 'same'), 'max', 'float64', [7, 20]),
  ...poolCase('3x2 strides (2, 1) same, dilation (1, 2)', [2, 5, 6, 2], [3, 2], win([2, 1], 'same', [1, 2]), 'max', 'float32'),
  ...poolCase('3x3 strides 2 same', [1, 5, 4, 2], [3, 3], win([2, 2], 'same'), 'avg', 'float64'),
  ...poolCase('2x3 strides 1 valid, dilation 2', [2, 5, 7, 1], [2, 3], win([1, 1], 'valid', [2, 2]), 'avg', 'float32'),
  ...poolCase('3d 2x1x2 strides 2 same', [1, 3, 2, 5, 2], [2, 1, 2], win([2, 1, 2], 'same'), 'max', 'float32'),
  ...poolCase('1d 3 causal strides 2', [2, 7, 2], [3], win([2], 'causal'), 'avg', 'float32'),
  // Windows that tile the input (strides = window, no padding) take the one-kernel form of pool_grad.
  ...poolCase('2x2 strides 2 valid (tiling), NaN', [2, 4, 6, 2], [2, 2], win([2, 2], 'valid'), 'max', 'float64', [5, 30]),
  ...poolCase('2x3 strides (2, 3) valid (tiling)', [2, 4, 6, 3], [2, 3], win([2, 3], 'valid'), 'avg', 'float32'),
  ...poolCase('3d 2x2x1 strides (2, 2, 1) valid (tiling)', [1, 2, 4, 3, 2], [2, 2, 1], win([2, 2, 1], 'valid'), 'max', 'float32'),
  ...poolCase('2x2 strides 2 valid, a row left over (not tiling)', [1, 5, 4, 2], [2, 2], win([2, 2], 'valid'), 'max', 'float32'),
  // Windows of up to 9 taps fold their maxima as straight-line code; larger ones keep reduction loops.
  ...poolCase('4x3 strides 2 same (12 taps: reduction loops), NaN', [1, 7, 6, 2], [4, 3], win([2, 2], 'same'), 'max', 'float64', [9, 40]),
  {
    // The reference adds each cell's one term to 0, so a -0 gradient becomes +0.
    name: 'pool_grad max 2x2 strides 2 (tiling), gradients of -0 and 0', exact: true,
    feed: [tied([1, 4, 4, 2], 2, 'float32'), new NDArray(Float32Array.from([-0, 0, -0, 1, -0, -0, 2, 0]), [1, 2, 2, 2], 'float32')],
    build: (x, dy) => apply('pool_grad', [x, dy], { window: [2, 2], ...win([2, 2], 'valid'), mode: 'max' }) as unknown as Tensor,
  },
  {
    name: 'conv with 3 groups, same, strides 2', feed: [smooth([2, 5, 6, 6], 5), smooth([3, 2, 2, 9], 6)], exact: false,
    build: (x, w) => apply('conv', [x, w], { ...win([2, 2], 'same'), groups: 3 }) as unknown as Tensor,
  },
  {
    name: 'conv with 2 groups of 4 channels (a batched matmul) and its gradients', feed: [smooth([2, 5, 6, 8], 11), smooth([3, 2, 4, 8], 12)], exact: false,
    build: (x, w) => {
      const y = apply('conv', [x, w], { ...win([2, 1], 'same'), groups: 2 }) as unknown as Tensor;
      const [gx, gw] = K.gradients(K.sum(K.square(y)), [x, w]);
      return K.concatenate([K.flatten(y), K.flatten(gx!), K.flatten(gw!)], 0);
    },
  },
  {
    name: 'depthwise_conv2d (multiplier 2), dilation 2', feed: [smooth([2, 6, 7, 3], 7), smooth([3, 2, 3, 2], 8)], exact: false,
    build: (x, k) => K.depthwise_conv2d(x, k, 1, 'same', null, 2),
  },
  {
    name: 'depthwise_conv2d gradients (conv_transpose and conv_kernel_grad with groups)', feed: [smooth([2, 5, 6, 3], 9), smooth([3, 3, 3, 1], 10)], exact: false,
    build: (x, k) => { const [gx, gk] = K.gradients(K.sum(K.square(K.depthwise_conv2d(x, k, 2, 'same'))), [x, k]); return K.concatenate([K.flatten(gx!), K.flatten(gk!)], 0); },
  },
  {
    name: 'in_top_k (ties, NaN, targets out of range)', feed: [tied([5, 4], 1, 'float32', [6]), new NDArray(Int32Array.from([1, 2, -1, 3, 4]), [5], 'int32')], exact: true,
    build: (p, t) => K.concatenate([K.cast(K.in_top_k(p, t, 1), 'int32'), K.cast(K.in_top_k(p, t, 2), 'int32')], 0),
  },
];

function built(c: Case): { inputs: Tensor[]; out: Tensor } {
  const inputs = c.feed.map((v, i) => K.placeholder(v.shape, null, v.dtype, false, `in${i}`));
  return { inputs, out: c.build(...inputs) };
}

describe('pooling adjoints, grouped convolutions and in_top_k as kernels', () => {
  for (const c of cases) {
    it(`${c.name}: compiled with no extern step, the reference's numbers`, () => {
      const { inputs, out } = built(c);
      const want = K.function(inputs, [out], [], { optimizer: 'none' })(c.feed)[0]!;
      for (const o of COMPILED) {
        const f = K.function(inputs, [out], [], { ...o, fallback: 'error' });
        const got = f(c.feed)[0]!;
        expect(f.source(), o.optimizer).not.to.match(/extern|not compiled/);
        // Groups of 4 channels or more are batched matmuls; narrower ones (depthwise) reductions per element.
        if (c.name.includes('batched matmul')) expect(f.source(), o.optimizer).to.match(/matmul[^\n]*conv_transpose/).and.match(/matmul[^\n]*conv_kernel_grad/);
        if (c.name.startsWith('depthwise')) expect(f.source(), o.optimizer).not.to.match(/matmul/);
        // Index clamps (padding) are integer code: Math.max/min, not the float helpers relu's max(x, 0) takes.
        expect(f.source(), o.optimizer).not.to.contain('rt.max0');
        expect(got.dtype).to.equal(want.dtype);
        if (c.exact) expect(Array.from(got.data), o.optimizer).to.deep.equal(Array.from(want.data));
        else expectClose(Array.from(got.data), Array.from(want.data), { atol: 1e-12, rtol: 1e-12 }, o.optimizer);
      }
    });
  }

  it('on the gpu device: every kernel on the device, float32 tolerances', function () {
    const loaded = loadGpuJs();
    needs(this, 'the gpu device (test/codegen/kernels-window.test.ts)', loaded instanceof Error ? loaded.message : undefined);
    for (const c of cases) {
      if (c.feed.some((v) => v.dtype === 'float64' || Array.from(v.data).some((x) => !Number.isFinite(x)))) continue; // float64 runs on the host; NaN is not IEEE on GL
      const { inputs, out } = built(c);
      const want = K.function(inputs, [out], [], { optimizer: 'none' })(c.feed)[0]!;
      const f = K.function(inputs, [out], [], { device: 'gpu', fallback: 'error' });
      const got = f(c.feed)[0]!;
      expect(f.source(), c.name).not.to.match(/on the host|extern/);
      expectClose(Array.from(got.data), Array.from(want.data), { atol: 1e-5, rtol: 1e-5 }, c.name);
    }
  });

  it('exportModule accepts them and the module gives the same numbers', function () {
    this.timeout(120000);
    // Inputs travel to the module's process as JSON, which has no NaN: those cases are left to the tests above.
    const finite = cases.filter((c) => c.feed.every((v) => Array.from(v.data).every((x) => Number.isFinite(x))));
    const mods = finite.map((c, k) => {
      const { inputs, out } = built(c);
      const f = K.function(inputs, [out]);
      return { c, live: f(c.feed)[0]!, mod: f.exportModule({ name: `w${k}` }) };
    });
    const dir = emptyFolder();
    writeModules(dir, mods.map((m) => m.mod));
    typecheck(dir, mods.map((m) => m.mod));
    const outs = runCalls(dir, mods.map((m) => ({ module: m.mod.name, inputs: m.c.feed })));
    mods.forEach((m, k) => {
      const want = Array.from(m.live.data, (v) => Number(v) + 0);
      expectClose(outs[k]![0]!, want, { atol: 0, rtol: 0 }, m.c.name);
    });
  });
});
