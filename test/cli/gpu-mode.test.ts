// The gpu device's mode where the other settings are: `theanine train --gpu-mode`, keras.json's
// "gpu_mode" (THEANINE_GPU_MODE wins), and the first line of the CLI saying which mode runs.
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCli } from '../helpers/cli.js';
import { needs } from '../helpers/needs.js';
import { ConfigError, loadConfig, reloadConfig } from '../../src/api/config.js';
import { requestedMode } from '../../src/runtime/gpu/device.js';
import { webgpuMissing } from '../../src/runtime/gpu/webgpu/session.js';

const ARGS = ['train', 'mnist', '--limit', '64', '--epochs', '1', '--batch-size', '32', '--seed', '3'];

describe('the gpu device\'s mode in the CLI and keras.json', function () {
  this.timeout(300_000);
  let home: string;
  let saved: string | undefined;
  before(() => {
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'theanine-gpumode-'));
    saved = process.env['THEANINE_GPU_MODE'];
    delete process.env['THEANINE_GPU_MODE'];
  });
  after(() => {
    fs.rmSync(home, { recursive: true, force: true });
    if (saved !== undefined) process.env['THEANINE_GPU_MODE'] = saved;
    reloadConfig();
  });

  it('keras.json "gpu_mode" is read and checked; THEANINE_GPU_MODE wins over it', () => {
    fs.writeFileSync(path.join(home, 'keras.json'), JSON.stringify({ device: 'gpu', gpu_mode: 'webgpu' }));
    expect(loadConfig({ env: { KERAS_HOME: home } }).gpu_mode).to.equal('webgpu');
    reloadConfig({ env: { KERAS_HOME: home } });
    expect(requestedMode()).to.equal('webgpu');
    process.env['THEANINE_GPU_MODE'] = 'webasm';
    try {
      expect(requestedMode()).to.equal('webasm');
    } finally {
      delete process.env['THEANINE_GPU_MODE'];
    }
    fs.writeFileSync(path.join(home, 'keras.json'), JSON.stringify({ gpu_mode: 'cuda' }));
    expect(() => loadConfig({ env: { KERAS_HOME: home } })).to.throw(ConfigError, /"gpu_mode" is "cuda"; allowed: "auto", "webgpu", "headlessgl", "webgl2", "webgl", "webasm"/);
    reloadConfig();
    expect(requestedMode()).to.equal(undefined);
  });

  it('--gpu-mode needs --device gpu, and takes only the modes', async () => {
    const r = await runCli(...ARGS, '--gpu-mode', 'webgpu');
    expect(r.code).to.equal(2);
    expect(r.err).to.equal('theanine: --gpu-mode webgpu is a mode of the gpu device; add --device gpu (the device here is cpu)\n');
    const bad = await runCli(...ARGS, '--device', 'gpu', '--gpu-mode', 'cuda');
    expect(bad.code).to.equal(2);
    expect(bad.err).to.match(/--gpu-mode .*'cuda' is invalid.*auto, webgpu, headlessgl, webgl2, webgl, webasm/);
  });

  it('--device gpu --gpu-mode webgpu trains on gpu:webgpu, says so with the adapter, to the cpu\'s numbers', async function () {
    needs(this, 'the gpu device\'s webgpu mode', webgpuMissing());
    const g = await runCli(...ARGS, '--device', 'gpu', '--gpu-mode', 'webgpu');
    expect(g.code, g.err).to.equal(0);
    expect(g.out.split('\n')[0]).to.match(/^backend theanine, device gpu:webgpu \(WGSL on WebGPU, adapter .+\)$/);
    expect(process.env['THEANINE_GPU_MODE'], 'the flag holds for the run only').to.equal(undefined);
    expect(requestedMode()).to.equal(undefined);
    const c = await runCli(...ARGS);
    const pick = (out: string) => Number(/test accuracy: (\d\.\d+)/.exec(out)![1]);
    expect(pick(g.out)).to.be.closeTo(pick(c.out), 0.02);
  });
});
