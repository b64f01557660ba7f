// float16 on gpu:webgpu where the adapter has `shader-f16` (lavapipe does): float16 buffers are
// f16 on the device, half the bytes of the f32 storage kept where the feature is absent
// (THEANINE_WEBGPU_F16=0 chooses that one, run here in a child process), with the same values,
// and the cpu's within float16's tolerance.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { backend as K, NDArray } from '../../src/index.js';
import { webgpu, webgpuCounts } from '../../src/runtime/gpu/webgpu/session.js';
import { onWebgpu } from '../helpers/webgpu.js';
import { needs } from '../helpers/needs.js';
import { f16Cases } from '../helpers/webgpu-f16-cases.js';

/** The cases on gpu:webgpu in a new process whose device stores float16 as f32. */
function casesWithF32Storage(): { f16: boolean; cases: Record<string, number[][]> } {
  // (a file, not `node -e`: the device's worker thread inherits the process' --input-type)
  const child = new URL('../helpers/webgpu-f16-child.ts', import.meta.url);
  const r = spawnSync(process.execPath, ['--import', 'tsx', child.pathname], {
    env: { ...process.env, THEANINE_WEBGPU_F16: '0' },
    encoding: 'utf8',
    timeout: 120_000,
  });
  expect(r.status, r.stderr).to.equal(0);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as { f16: boolean; cases: Record<string, number[][]> };
}

describe('gpu device, webgpu mode: float16 as f16 (shader-f16)', function () {
  this.timeout(600_000);
  onWebgpu();
  let gpu: Record<string, number[][]>;
  before(function () {
    needs(this, "an adapter with 'shader-f16'", webgpu().f16 ? undefined : "the adapter has no 'shader-f16'");
    gpu = f16Cases('gpu');
  });

  it('the kernels bind float16 buffers as array<f16> and run on the device', () => {
    const x = K.placeholder([33], null, 'float16');
    const f = K.function([x], [K.exp(x)], [], { device: 'gpu', fallback: 'error' });
    f([NDArray.from(new Array(33).fill(0.5), 'float16')]);
    expect(f.source()).to.match(/^enable f16;$/m).and.to.match(/array<f16>/).and.not.to.match(/array<f32>/);
  });

  it('gives the cpu\'s values within float16\'s tolerance', () => {
    const cpu = f16Cases('cpu');
    expect(Object.keys(gpu)).to.deep.equal(Object.keys(cpu));
    for (const [name, outs] of Object.entries(cpu))
      outs.forEach((want, k) => {
        const got = gpu[name]![k]!;
        expect(got.length, `${name} output ${k}`).to.equal(want.length);
        // (half precision: a unit in the last place is 2^-10 of the value; a few roundings differ between the devices' chains)
        got.forEach((g, i) => expect(g, `${name} output ${k}[${i}]`).to.be.closeTo(want[i]!, 4e-3 + 4e-3 * Math.abs(want[i]!)));
      });
  });

  it('gives the same values as f32 storage (THEANINE_WEBGPU_F16=0, a child process)', () => {
    const other = casesWithF32Storage();
    expect(other.f16, 'the child process stores float16 as f32').to.equal(false);
    expect(other.cases).to.deep.equal(gpu);
  });

  it('a float16 tensor takes half the device bytes of a float32 one', () => {
    const bytesOf = (dtype: 'float16' | 'float32'): number => {
      K.clear_session();
      const before = webgpuCounts().bytes;
      const x = K.placeholder([1001], null, dtype);
      const f = K.function([x], [K.add(K.multiply(x, 2), 1)], [], { device: 'gpu', fallback: 'error' });
      f([NDArray.from(new Array(1001).fill(0.25), dtype)]);
      return webgpuCounts().bytes - before;
    };
    const h = bytesOf('float16');
    const s = bytesOf('float32');
    // an input and an output buffer each: 1001 f16 values in 2004 bytes (whole 4-byte words), 4004 as f32
    expect(s).to.equal(2 * 4004);
    expect(h).to.equal(2 * 2004);
  });

  it('a Scan copying odd counts of float16 values at odd elements runs on the device (fallback error)', () => {
    // (its values are the f16 suite's 'scan-odd' case, checked above against the cpu and f32 storage)
    expect(gpu).to.have.property('scan-odd');
    expect(gpu['scan-odd']![1]!.length).to.equal(41 * 3);
    const xs = K.placeholder([2, 40, 3], null, 'float16');
    const w = K.variable(NDArray.from(new Array(9).fill(0.1), 'float16').reshape([3, 3]), 'float16');
    const [last] = K.rnn((xt, [h]) => {
      const hn = K.tanh(K.add(K.dot(xt, w), h!));
      return [hn, [hn]];
    }, xs, [K.zeros([2, 3], 'float16')]);
    const v = NDArray.from(Array.from({ length: 240 }, (_, i) => Math.cos(i)), 'float16').reshape([2, 40, 3]);
    const f = K.function([xs], [last!], [], { device: 'gpu', fallback: 'error' });
    const got = Array.from(f([v])[0]!.data, Number);
    const want = Array.from(K.function([xs], [last!], [], { device: 'cpu', fallback: 'error' })([v])[0]!.data, Number);
    got.forEach((g, i) => expect(g, `[${i}]`).to.be.closeTo(want[i]!, 4e-3 + 4e-3 * Math.abs(want[i]!)));
    // profiled (each kernel a compute pass of its own), the same values
    const p = K.function([xs], [last!], [], { device: 'gpu', fallback: 'error', profile: true });
    expect(Array.from(p([v])[0]!.data, Number)).to.deep.equal(got);
  });
});
