// The gpu device itself: which gpu.js mode runs and how it is reported, variables that stay on
// the device, buffers that must not alias, host fallbacks, Scan. The op, gradient and property
// tables run on the gpu through test/helpers/targets.ts.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { backend as K, NDArray, ValueError, defineOp } from '../../src/index.js';
import { loadGpuJs } from '../../src/runtime/gpu/gpujs.js';
import { stats } from '../../src/runtime/gpu/stats.js';
import { expectClose } from '../helpers/assert.js';
import { needs } from '../helpers/needs.js';

const GPU = { device: 'gpu' } as const;

/** Runs a module snippet in a fresh node (tsx) with `env` changes; returns its output. */
function child(code: string, env: Record<string, string | undefined>): { status: number | null; stdout: string; stderr: string } {
  const e: NodeJS.ProcessEnv = { ...process.env };
  for (const [k, v] of Object.entries(env)) { if (v === undefined) delete e[k]; else e[k] = v; }
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { env: e, encoding: 'utf8', timeout: 60000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const loaded = loadGpuJs();

if (loaded instanceof Error) {
  describe('gpu device (gpu.js not installed)', () => {
    it('K.function with device "gpu" says gpu.js is missing', () => {
      const x = K.placeholder([2]);
      expect(() => K.function([x], [x.add(1)], [], GPU)).to.throw(ValueError, /device "gpu" is unavailable: the optional package gpu.js is not installed/);
    });
  });
} else {
  describe('gpu device', () => {
    after(() => K.clear_session());

    it('reports the gpu.js mode it runs in as f.device (THEANINE_GPU_EXPECT pins it in CI)', () => {
      const x = K.placeholder([2]);
      const f = K.function([x], [x.add(1)], [], GPU);
      expect(f.device).to.match(/^gpu:(headlessgl|webgl2|webgl|webasm)$/);
      const want = process.env['THEANINE_GPU_EXPECT'];
      if (want !== undefined) expect(f.device).to.equal(`gpu:${want}`);
      expect(K.function([x], [x.add(1)]).device).to.equal('cpu');
    });

    it('runs on a GL context (headless GL: a desktop, or Mesa under an X display)', function () {
      const x = K.placeholder([2]);
      const f = K.function([x], [x.add(1)], [], GPU);
      // THEANINE_GPU_MODE=webasm asks for webasm on purpose (CI's second pass): nothing is missing then.
      if (process.env['THEANINE_GPU_MODE'] === 'webasm') return void expect(f.device).to.equal('gpu:webasm');
      needs(this, 'the gpu device on a GL context (test/runtime/gpu.test.ts; the gpu tables ran in webasm mode)',
        f.device === 'gpu:webasm' ? 'no GL context here (no X display, or gl not built); run the tests under `xvfb-run -a` (Debian: apt-get install xvfb libgl1-mesa-dri)' : undefined);
      expect(f.device).to.match(/^gpu:(headlessgl|webgl2|webgl)$/);
      expect(f([[1, 2]])[0]!.toArray()).to.deep.equal([2, 3]);
    });

    it('runs the README example', () => {
      const x = K.placeholder([null, 3], null, 'float32', false, 'x');
      const W = K.variable([[1, 2], [3, 4], [5, 6]], null, 'W');
      const f = K.function([x], [K.sum(K.dot(x, W).add(1), 1)], [], GPU);
      expect(f([[[1, 1, 1], [0, 1, 0]]])[0]!.toArray()).to.deep.equal([23, 9]);
    });

    it('keeps updated variables on the device: a training loop reads back only its outputs, get_value reads once', () => {
      const w = K.variable([1, 2, 3], 'float32', 'w');
      const x = K.placeholder([3]);
      const loss = K.sum(K.square(w.sub(x)));
      const [g] = K.gradients(loss, [w]);
      const step = K.function([x], [loss], [K.update_sub(w, g!.mul(0.25))], GPU);
      const before = stats.readbacks;
      const losses = [0, 1, 2, 3].map(() => step([[0, 0, 0]])[0]!.item());
      expect(stats.readbacks - before, 'one read back per call (the loss)').to.equal(4);
      // w halves each step: 14, 3.5, 0.875, 0.21875
      expectClose(losses, [14, 3.5, 0.875, 0.21875], { rtol: 1e-6 });
      expectClose(K.get_value(w), [1 / 16, 2 / 16, 3 / 16], { rtol: 1e-6 });
      const once = stats.readbacks;
      K.get_value(w);
      expect(stats.readbacks, 'the host copy is cached').to.equal(once);
    });

    it('outputs read the old values, then updates apply (the accumulator), and set_value replaces the device copy', () => {
      const acc = K.variable(0);
      const inc = K.placeholder([]);
      const f = K.function([inc], [acc], [K.update_add(acc, inc)], GPU);
      expect(f([1])[0]!.item()).to.equal(0);
      expect(f([1])[0]!.item()).to.equal(1);
      expect(K.get_value(acc).item()).to.equal(2);
      K.set_value(acc, 10);
      expect(f([1])[0]!.item()).to.equal(10);
      expect(K.get_value(acc).item()).to.equal(11);
      // a cpu function reads the value the gpu wrote
      expect(K.function([], [acc.mul(2)])([])[0]!.item()).to.equal(22);
      // and the gpu reads what the cpu wrote
      K.function([inc], [], [K.update(acc, inc)])([5]);
      expect(f([0])[0]!.item()).to.equal(5);
    });

    it('two variables updated to one computed value stay independent', () => {
      const a = K.variable([1, 2]);
      const b = K.variable([0, 0]);
      const x = K.placeholder([2]);
      const z = x.mul(2);
      K.function([x], [], [K.update(a, z), K.update(b, z)], GPU)([[3, 4]]);
      K.function([x], [], [K.update_add(a, x)], GPU)([[1, 1]]);
      expect(K.get_value(a).toArray()).to.deep.equal([7, 9]);
      expect(K.get_value(b).toArray()).to.deep.equal([6, 8]);
      // a variable assigned another variable's value, then the source changes
      K.function([], [], [K.update(b, a)], GPU)([]);
      K.function([x], [], [K.update(a, x)], GPU)([[0, 0]]);
      expect(K.get_value(b).toArray()).to.deep.equal([7, 9]);
    });

    it('one kernel used twice in a call does not overwrite its first result', () => {
      const x = K.placeholder([3]);
      const y = K.placeholder([3]);
      const f = K.function([x, y], [K.exp(x), K.exp(y), K.exp(x).sub(K.exp(y))], [], GPU);
      const [ex, ey, d] = f([[0, 1, 2], [2, 1, 0]]);
      expectClose(ex!, [1, Math.E, Math.E ** 2], { rtol: 1e-6 });
      expectClose(ey!, [Math.E ** 2, Math.E, 1], { rtol: 1e-6 });
      expectClose(d!, [1 - Math.E ** 2, 0, Math.E ** 2 - 1], { rtol: 1e-6, atol: 1e-6 });
    });

    it('computes float64 nodes on the host, exactly, and f.source() says so', () => {
      const x = K.placeholder([2], null, 'float64');
      const f = K.function([x], [x.div(3)], [], GPU);
      const [y] = f([[1, 2]]);
      expect(y!.dtype).to.equal('float64');
      expect(y!.toArray()).to.deep.equal([1 / 3, 2 / 3]);
      expect(f.source()).to.equal('// on the host: loop kernel (stores float64)');
    });

    it('runs Scan as a loop on the device (rnn, foldl) with the reference results', () => {
      const xs = K.placeholder([2, 4, 3]);
      const w = K.variable(NDArray.from([[0.5, -0.2], [0.1, 0.3], [-0.4, 0.2]], 'float32'));
      const h0 = K.zeros([2, 2]);
      const [last, outs, states] = K.rnn((x, [h]) => {
        const hn = K.tanh(K.dot(x, w).add(h!));
        return [hn, [hn]];
      }, xs, [h0]);
      const sum = K.foldl((acc, x) => acc.add(x), K.sum(xs, 2), K.zeros([4]));
      const v = NDArray.from(Array.from({ length: 24 }, (_, i) => Math.sin(i)), 'float32').reshape([2, 4, 3]);
      const graph = [last!, outs!, states![0]!, sum];
      const want = K.function([xs], graph)([v]);
      const got = K.function([xs], graph, [], GPU)([v]);
      got.forEach((g, k) => expectClose(g, want[k]!, { atol: 1e-6, rtol: 1e-5 }, `output ${k}`));
    });

    it('checks gather indices like the reference, and handles empty values', () => {
      const ref = K.placeholder([3, 2]);
      const ind = K.placeholder([2], null, 'int32');
      const f = K.function([ref, ind], [K.gather(ref, ind)], [], GPU);
      expect(f([[[1, 2], [3, 4], [5, 6]], [2, -3]])[0]!.toArray()).to.deep.equal([[5, 6], [1, 2]]);
      expect(() => f([[[1, 2], [3, 4], [5, 6]], [3, 0]])).to.throw(ValueError, /index 3 is out of range for reference of shape \(3, 2\)/);
      const e = K.placeholder([null, 3]);
      const [s] = K.function([e], [K.sum(e, 0)], [], GPU)([NDArray.zeros([0, 3], 'float32')]);
      expect(s!.toArray()).to.deep.equal([0, 0, 0]);
    });

    it('runs gather and its gradient (scatter_add_rows as a gather over the indices) and cumsum/cumprod (a fold over k\' <= k) on the device', () => {
      const ref = K.placeholder([5, 3]);
      const ind = K.placeholder([2, 3], null, 'int32');
      const rows = K.gather(ref, ind);
      const [g] = K.gradients(K.sum(K.square(rows)), [ref]);
      const rv = NDArray.from(Array.from({ length: 15 }, (_, i) => i - 4), 'float32').reshape([5, 3]);
      const iv = new NDArray(Int32Array.from([0, 4, -1, 2, 2, -5]), [2, 3], 'int32');
      const outs = [rows, g!, K.cumsum(ref, 0), K.cumprod(ref.mul(0.1), 1)];
      const host = () => [...stats.hostNodes.entries()].filter(([k]) => /gather|scatter|cumsum|cumprod/.test(k)).reduce((p, [, v]) => p + v, 0);
      const before = host();
      const want = K.function([ref, ind], outs)([rv, iv]);
      const f = K.function([ref, ind], outs, [], GPU);
      f([rv, iv]).forEach((o, k) => expectClose(o, want[k]!, { atol: 1e-5, rtol: 1e-6 }, `output ${k}`));
      expect(host(), 'kernels run on the host').to.equal(before);
      // the scatter's rows are checked on the host first, with the reference's error
      expect(() => f([rv, new NDArray(Int32Array.from([0, 5, 1, 1, 1, 1]), [2, 3], 'int32')])).to.throw(ValueError, /index 5 is out of range for reference of shape \(5, 3\)/);
    });

    it('reduces more elements per output than software GL loops in one shader (65535)', () => {
      const v = NDArray.from(Array.from({ length: 200000 }, (_, i) => Math.sin(i) + 0.5), 'float32').reshape([2, 100000]);
      const x = K.placeholder([2, 100000]);
      const outs = [K.sum(x), K.mean(x, 1), K.max(x, 1), K.min(x, 0), K.any(K.greater(x, 1.4999)), K.sum(K.transpose(x), 0)];
      const want = K.function([x], outs)([v]);
      K.function([x], outs, [], GPU)([v]).forEach((g, k) => expectClose(g, want[k]!, { rtol: 1e-5 }, `output ${k}`));
    });

    it("runs user ops through their gpu templates, fused or on their own", () => {
      const sig = (v: number) => 1 / (1 + Math.exp(-v));
      const base = {
        arity: 1,
        infer: ([x]: readonly { dtype: 'float32'; shape: (number | null)[] }[]) => ({ dtype: x!.dtype, shape: x!.shape }),
        reference: ([x]: readonly NDArray[], { beta }: { beta: number }) => new NDArray(Array.from(x!.data, (v) => v * sig(beta * v)), x!.shape, x!.dtype),
        gpu: 'x0 / (1.0 + Math.exp(-beta * x0))',
      };
      const fused = defineOp<{ beta: number }>({ ...base, name: 'swish_gpu_fused_test', cpu: 'x0 / (1 + Math.exp(-beta * x0))' } as never);
      const alone = defineOp<{ beta: number }>({ ...base, name: 'swish_gpu_alone_test' } as never);
      const x = K.placeholder([4]);
      const v = [-2, -0.5, 0.5, 3];
      for (const op of [fused, alone]) {
        const f = K.function([x], [op(x.mul(2), { attrs: { beta: 1.5 } }).add(1)], [], GPU);
        expectClose(f([v])[0]!, v.map((a) => 2 * a * sig(3 * a) + 1), { rtol: 1e-5 });
        expect(f.source()).to.match(/function u_swish_gpu_(fused|alone)_test_\d+\(x0\) \{ const beta = 1\.5; return/);
        expect(f.source()).to.not.include('on the host');
      }
    });

    it('f.source() shows the gpu.js kernels it ran', () => {
      const x = K.placeholder([4]);
      const line = Number(/:(\d+):\d+\)?$/.exec(new Error().stack!.split('\n')[1]!)![1]) + 1;
      const f = K.function([x], [K.sigmoid(x)], [], GPU);
      f([[0, 1, 2, 3]]);
      expect(f.source()).to.equal([
        '// sigmoid: 4 elements',
        `// built by K.sigmoid at gpu.test.ts:${line}`,
        'function t_sigmoid(x) { if (x >= 0.0) { return 1.0 / (1.0 + Math.exp(-x)); } const e = Math.exp(x); return e / (1.0 + e); }',
        'function (b0) {\n  const i = this.thread.x;\n  const i0 = i;\n  const t0 = b0[i0];\n  const t1 = t_sigmoid(t0);\n  const t2 = t1;\n  return t1;\n}',
      ].join('\n'));
    });

    it('without a GL context says so once and runs in webasm; THEANINE_DEBUG shows the device and kernels', () => {
      const code = `
        import { backend as K } from './src/index.js';
        const x = K.placeholder([2]);
        const f = K.function([x], [x.mul(3)], [], { device: 'gpu' });
        const g = K.function([x], [x.add(3)], [], { device: 'gpu' });
        console.log(f.device, f([[1, 2]])[0].toArray().join(','), g([[1, 2]])[0].toArray().join(','));`;
      const r = child(code, { DISPLAY: undefined, THEANINE_GPU_MODE: undefined, THEANINE_DEBUG: 'gpu' });
      expect(r.status, r.stderr).to.equal(0);
      expect(r.stdout.trim()).to.equal('gpu:webasm 3,6 4,5');
      expect(r.stderr.match(/no GL context/g), r.stderr).to.have.length(1);
      expect(r.stderr).to.match(/running gpu\.js kernels in its WebAssembly mode \(gpu:webasm\)/);
      expect(r.stderr).to.match(/\[theanine\] gpu device: gpu\.js \d+\.\d+\.\d+, mode webasm/);
      expect(r.stderr).to.match(/\[theanine\] gpu kernel \(gpu:webasm, 2 elements\):\nfunction \(b0\)/);
    });

    it('THEANINE_GPU_MODE chooses the mode; an unknown one is an error naming it', () => {
      const code = `
        import { backend as K } from './src/index.js';
        const x = K.placeholder([2]);
        try { console.log(K.function([x], [x.neg()], [], { device: 'gpu' }).device); } catch (e) { console.log(e.name + ': ' + e.message); }`;
      expect(child(code, { THEANINE_GPU_MODE: 'webasm' }).stdout.trim()).to.equal('gpu:webasm');
      expect(child(code, { THEANINE_GPU_MODE: 'cuda' }).stdout.trim()).to.equal(
        'ValueError: THEANINE_GPU_MODE: unknown mode "cuda" (allowed: "auto", "webgpu", "headlessgl", "webgl2", "webgl", "webasm")',
      );
    });
  });
}
