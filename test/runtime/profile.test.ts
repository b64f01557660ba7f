// The profiler: f.profile() per kernel (calls, times, bytes, FLOPs of products, ops, K calls), per
// op class, compile phases and peak memory; the table; Chrome trace-event JSON; targets that time
// whole calls say why; `theanine profile mlp-gradient` prints the table.
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backend as K, NDArray, ValueError } from '../../src/index.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';
import { runCli } from '../helpers/cli.js';
import { targets } from '../helpers/targets.js';
import { openWebGpu } from '../../src/runtime/gpu/webgpu/session.js';

const arr = (shape: number[], f: (i: number) => number) => new NDArray(Float32Array.from({ length: shape.reduce((p, d) => p * d, 1) }, (_, i) => f(i)), shape);

describe('profiler', () => {
  beforeEach(() => clearCompileCache());

  it('cpu: every kernel with calls, times, bytes, FLOPs of a product, its ops and K calls; op classes; compile; peak', () => {
    const x = K.placeholder([null, 8], null, 'float32', false, 'x');
    const w = K.variable(arr([8, 4], (i) => i / 32), 'float32', 'w');
    const y = K.sum(K.tanh(K.dot(x, w)), 1);
    const f = K.function([x], [y], [], { profile: true, device: 'cpu' });
    for (let i = 0; i < 3; i++) f([arr([5, 8], (j) => Math.sin(j))]);
    const p = f.profile();
    expect(p.calls).to.equal(3);
    expect(p.target).to.equal('cpu');
    expect(p.note).to.equal(undefined);
    const mm = p.kernels.find((k) => k.name.startsWith('matmul'))!;
    expect(mm.name).to.match(/^matmul 5x8x4 \[dot/);
    expect(mm.calls).to.equal(3);
    expect(mm.flops).to.equal(3 * 2 * 5 * 8 * 4);
    expect(mm.nodes).to.include('dot');
    expect(mm.kCalls.join(';')).to.match(/K\.dot at profile\.test\.ts:\d+/);
    expect(mm.bytesRead).to.be.at.least(3 * 4 * (5 * 8 + 8 * 4)); // x and w at least, every call
    expect(mm.bytesWritten).to.be.at.least(3 * 4 * 5 * 4);
    for (const k of p.kernels) {
      expect(k.totalMs, k.name).to.be.at.least(0);
      expect(k.meanMs).to.be.closeTo(k.totalMs / k.calls, 1e-9);
    }
    const total = p.kernels.reduce((a, k) => a + k.totalMs, 0);
    expect(p.ops.reduce((a, o) => a + o.totalMs, 0)).to.be.closeTo(total, 1e-9);
    expect(p.ops.map((o) => o.op)).to.include('matmul');
    expect(p.compile.specializations).to.equal(1);
    expect(p.compile.render).to.be.greaterThan(0);
    expect(p.peakBytes).to.be.at.least(5 * 4);
    // the table
    const table = f.profile({ format: 'table' });
    expect(table).to.match(/^profile of function "function" on cpu: 3 calls/);
    expect(table).to.match(/matmul 5x8x4 \[dot[^\n]*\n/);
    expect(table).to.match(/op class +kernels +calls +total ms +share/);
    expect(table).to.match(/peak buffer memory: /);
    // reset: the calls so far leave the figures
    f.profile({ reset: true });
    f([arr([5, 8], (j) => j)]);
    expect(f.profile().calls).to.equal(1);
    expect(f.profile().kernels.every((k) => k.calls === 1)).to.equal(true);
  });

  it('cpu: a Scan body\'s kernels are rows of their own, one call per step; op classes count the Scan once', () => {
    const x = K.placeholder([null, 40, 3], null, 'float32', false, 'x'); // long enough not to be unrolled
    const w = K.variable(arr([3, 3], (i) => (i - 4) / 9), 'float32', 'w');
    const h0 = K.zeros([2, 3]);
    const [last] = K.rnn((xt, [h]) => { const h2 = K.tanh(K.dot(xt, w).add(h!)); return [h2, [h2]]; }, x, [h0]);
    const f = K.function([x], [last], [], { profile: true, device: 'cpu' });
    f([arr([2, 40, 3], (i) => Math.sin(i))]);
    f([arr([2, 40, 3], (i) => Math.cos(i))]);
    const p = f.profile();
    const scan = p.kernels.find((k) => k.nodes.includes('scan'))!;
    expect(scan.calls).to.equal(2);
    const body = p.kernels.filter((k) => k.name.startsWith('s0: '));
    expect(body.length).to.be.above(0);
    for (const k of body) expect(k.calls, k.name).to.equal(2 * 40);
    expect(scan.totalMs).to.be.at.least(body.reduce((a, k) => a + k.totalMs, 0));
    const top = p.kernels.filter((k) => !k.name.startsWith('s0: '));
    expect(p.ops.reduce((a, o) => a + o.kernels, 0)).to.equal(top.length);
    expect(p.ops.reduce((a, o) => a + o.totalMs, 0)).to.be.closeTo(top.reduce((a, k) => a + k.totalMs, 0), 1e-9);
  });

  it('Chrome trace-event JSON: one complete event per kernel, metadata, compile phases', () => {
    const x = K.placeholder([4, 4], null, 'float32', false, 'x');
    const f = K.function([x], [K.exp(K.dot(x, x))], [], { profile: true, device: 'cpu' });
    f([arr([4, 4], (i) => i / 16)]);
    const t = JSON.parse(f.profile({ format: 'trace' })) as { traceEvents: { name: string; ph: string; ts?: number; dur?: number; pid: number; tid: number; cat?: string }[] };
    const kernels = t.traceEvents.filter((e) => e.cat === 'kernel');
    expect(kernels.length).to.equal(f.profile().kernels.length);
    for (const e of kernels) {
      expect(e.ph).to.equal('X');
      expect(e.ts).to.be.a('number');
      expect(e.dur).to.be.at.least(0);
    }
    expect(t.traceEvents.some((e) => e.ph === 'M' && e.name === 'process_name')).to.equal(true);
    expect(t.traceEvents.filter((e) => e.cat === 'compile').map((e) => e.name)).to.include.members(['passes', 'lower', 'plan', 'render', 'firstRun']);
  });

  it('a function made without profile says how to get one; a bad format is refused', () => {
    const x = K.placeholder([2], null, 'float32', false, 'x');
    expect(() => K.function([x], [K.exp(x)]).profile()).to.throw(ValueError, /not made with \{ profile: true \}/);
    const f = K.function([x], [K.exp(x)], [], { profile: true });
    expect(() => f.profile({ format: 'svg' as 'table' })).to.throw(ValueError, /format must be "object", "table" or "trace", got "svg"/);
    expect(() => K.function([x], [K.exp(x)], [], { profile: 1 as unknown as boolean })).to.throw(TypeError, /profile must be true or false/);
  });

  const NOTES: Readonly<Record<string, RegExp>> = {
    reference: /reference interpreter: there are no kernels to time/,
    tensorflow: /times each graph node from its call until TensorFlow\.js has computed it/,
    onnx: /ONNX Runtime's own profile \(SessionOptions\.enableProfiling\)/,
    'gpu:webgpu': /times each kernel on the device with (timestamp queries|a submit of its own)/,
    gpu: /times each step on the host until the device has finished it/,
  };
  for (const t of targets.filter((t) => !t.name.startsWith('cpu'))) {
    const kind = t.name === 'gpu:webgpu' ? t.name : t.name.split(':')[0]!.replace(/-eqsat$/, '');
    if (t.name === 'reference') {
      it('reference: calls are timed whole and the profile says why kernels are not', () => {
        const x = K.placeholder([3], null, 'float32', false, 'x');
        const f = K.function([x], [K.exp(x)], [], { ...t.options, profile: true });
        f([arr([3], (i) => i)]);
        f([arr([3], (i) => i)]);
        const p = f.profile();
        expect(p.calls).to.equal(2);
        expect(p.totalMs).to.be.greaterThan(0);
        expect(p.kernels).to.deep.equal([]);
        expect(p.note).to.match(NOTES.reference!);
        expect(f.profile({ format: 'table' })).to.match(/\nnote: .*no kernels to time/);
      });
      continue;
    }
    it(`${t.name}: every kernel timed, named by the graph's ops and K calls, counted per call; times within the calls' time`, () => {
      const x = K.placeholder([null, 8], null, 'float32', false, 'x');
      const w = K.variable(arr([8, 4], (i) => i / 32), 'float32', 'w');
      const y = K.sum(K.tanh(K.dot(x, w)), 1);
      const f = K.function([x], [y], [], { ...t.options, profile: true });
      for (let i = 0; i < 3; i++) f([arr([5, 8], (j) => Math.sin(j))]);
      const p = f.profile();
      expect(p.calls).to.equal(3);
      expect(p.note).to.match(NOTES[kind]!);
      expect(p.kernels.length).to.be.greaterThan(0);
      const nodes = p.kernels.flatMap((k) => k.nodes);
      for (const op of ['dot', 'tanh', 'sum']) expect(nodes, `a kernel computes ${op}`).to.include(op);
      const dot = p.kernels.find((k) => k.nodes.includes('dot'))!;
      expect(dot.kCalls.join(';')).to.match(/K\.dot at profile\.test\.ts:\d+/);
      expect(dot.bytesRead, 'dot reads w at least').to.be.at.least(3 * 4 * 8 * 4);
      for (const k of p.kernels) {
        expect(k.calls, k.name).to.equal(3);
        expect(k.totalMs, k.name).to.be.at.least(0);
        expect(k.meanMs, k.name).to.be.closeTo(k.totalMs / k.calls, 1e-9);
      }
      expect(p.kernels.reduce((a, k) => a + k.totalMs, 0)).to.be.at.most(p.totalMs);
      expect(p.peakBytes, 'the results at least').to.be.at.least(5 * 4);
      expect(f.profile({ format: 'table' })).to.match(/\nnote: /);
      // reset: the calls so far leave the figures; the next call's kernels count once
      f.profile({ reset: true });
      f([arr([5, 8], (j) => j)]);
      const q = f.profile();
      expect(q.calls).to.equal(1);
      expect(q.kernels.length).to.be.greaterThan(0);
      expect(q.kernels.every((k) => k.calls === 1)).to.equal(true);
    });

    if (t.name === 'gpu:webgpu') {
      it('gpu:webgpu: kernels timed by timestamp queries where the adapter has them; THEANINE_WEBGPU_TIMING=submits times each by a submit of its own', () => {
        const d = openWebGpu();
        if (typeof d === 'string') throw new Error(d);
        const make = () => {
          const x = K.placeholder([4, 4], null, 'float32', false, 'x');
          return K.function([x], [K.exp(K.dot(x, x))], [], { ...t.options, profile: true });
        };
        const run = (f: ReturnType<typeof make>) => {
          f([arr([4, 4], (i) => i / 16)]);
          f([arr([4, 4], (i) => i / 32)]);
          const p = f.profile();
          expect(p.kernels.map((k) => k.calls)).to.deep.equal(p.kernels.map(() => 2));
          expect(p.kernels.some((k) => k.nodes.includes('dot'))).to.equal(true);
          expect(p.kernels.reduce((a, k) => a + k.totalMs, 0)).to.be.at.most(p.totalMs);
          return p.note;
        };
        const saved = process.env['THEANINE_WEBGPU_TIMING'];
        try {
          delete process.env['THEANINE_WEBGPU_TIMING'];
          expect(run(make())).to.match(d.timestamps ? /with timestamp queries/ : /with a submit of its own/);
          process.env['THEANINE_WEBGPU_TIMING'] = 'submits';
          expect(run(make())).to.match(/with a submit of its own, waited for/);
        } finally {
          if (saved === undefined) delete process.env['THEANINE_WEBGPU_TIMING'];
          else process.env['THEANINE_WEBGPU_TIMING'] = saved;
        }
      });
    }

    it(`${t.name}: a Scan's body kernels are rows of their own, one call per step`, () => {
      const xs = K.placeholder([null, 40, 3], null, 'float32', false, 'xs');
      const w = K.variable(arr([3, 3], (i) => (i - 4) / 9), 'float32', 'w');
      const [last] = K.rnn((xt, [h]) => { const h2 = K.tanh(K.dot(xt, w).add(h!)); return [h2, [h2]]; }, xs, [K.zeros([2, 3])]);
      const f = K.function([xs], [last], [], { ...t.options, profile: true });
      f([arr([2, 40, 3], (i) => Math.sin(i))]);
      f([arr([2, 40, 3], (i) => Math.cos(i))]);
      const p = f.profile();
      const body = p.kernels.filter((k) => k.nodes.includes('tanh'));
      expect(body.length, p.kernels.map((k) => k.name).join(', ')).to.be.greaterThan(0);
      for (const k of body) expect(k.calls, k.name).to.equal(2 * 40);
      for (const k of p.kernels) expect(k.totalMs, k.name).to.be.at.least(0);
    });
  }

  it('`theanine profile mlp-gradient` prints the table; --trace writes the trace; a module file works too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'theanine-profile-'));
    try {
      const trace = join(dir, 't.json');
      const r = await runCli('profile', 'mlp-gradient', '--calls', '2', '--batch', '8', '--trace', trace);
      expect(r.err).to.equal('');
      expect(r.code).to.equal(0);
      expect(r.out).to.match(/^profile of function "mlp-gradient" on cpu: 2 calls/);
      expect(r.out).to.match(/matmul 8x784x32 \[dot,add\] +2 /);
      expect(r.out).to.match(/K\.dot at models\.ts:\d+/);
      expect(r.out).to.match(/wrote .*t\.json \(Chrome trace-event JSON\)/);
      expect((JSON.parse(readFileSync(trace, 'utf8')) as { traceEvents: unknown[] }).traceEvents.length).to.be.greaterThan(5);
      const file = join(dir, 'g.ts');
      writeFileSync(file, `import { backend as K } from '${join(import.meta.dirname, '../../src/index.js')}';\nexport default () => { const x = K.placeholder([null, 3]); return { inputs: [x], outputs: [K.sum(K.exp(x))] }; };\n`);
      const m = await runCli('profile', file, '--calls', '1', '--json');
      expect(m.code, m.err).to.equal(0);
      expect((JSON.parse(m.out) as { calls: number }).calls).to.equal(1);
      const bad = await runCli('profile', 'no-such-thing');
      expect(bad.code).to.equal(2);
      expect(bad.err).to.match(/no-such-thing is neither an example \(mlp-forward, .*\) nor a file/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
