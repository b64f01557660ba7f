// setEnvironment: the environment switches set from code (a browser's only way; in Node entries
// win over the process environment). Names and types are checked at once, configuration switches
// are applied and validated at once, and a bad value changes nothing.
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ENVIRONMENT_SWITCHES, getConfig, reloadConfig, setEnvironment } from '../../src/api/config.js';
import { platform } from '../../src/platform/node.js';
import { environmentOverrides } from '../../src/platform/types.js';
import { debugEnabled } from '../../src/runtime/debug.js';
import { envFallbackMode } from '../../src/runtime/fallback.js';

describe('setEnvironment', () => {
  let home: string;
  before(() => {
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'theanine-env-'));
    fs.writeFileSync(path.join(home, 'keras.json'), JSON.stringify({ backend: 'theanine', device: 'cpu', floatx: 'float32' }));
  });
  afterEach(() => {
    environmentOverrides.clear();
    reloadConfig();
  });
  after(() => fs.rmSync(home, { recursive: true, force: true }));

  it('switches read where they are used: THEANINE_FALLBACK and THEANINE_DEBUG, then removed with undefined', () => {
    const saved = process.env['THEANINE_FALLBACK'];
    delete process.env['THEANINE_FALLBACK'];
    try {
      expect(envFallbackMode()).to.equal('warn');
      setEnvironment({ THEANINE_FALLBACK: 'error', THEANINE_DEBUG: 'gpu' });
      expect(envFallbackMode()).to.equal('error');
      expect(debugEnabled('gpu')).to.equal(true);
      expect(debugEnabled('passes')).to.equal(false);
      setEnvironment({ THEANINE_FALLBACK: undefined, THEANINE_DEBUG: undefined });
      expect(envFallbackMode()).to.equal('warn');
      expect(debugEnabled('gpu')).to.equal(process.env['THEANINE_DEBUG']?.split(',').some((t) => ['gpu', 'all', '1'].includes(t)) ?? false);
    } finally {
      if (saved !== undefined) process.env['THEANINE_FALLBACK'] = saved;
    }
  });

  it('in Node an entry wins over the process environment', () => {
    const saved = process.env['THEANINE_GPU_MODE'];
    process.env['THEANINE_GPU_MODE'] = 'webasm';
    try {
      setEnvironment({ THEANINE_GPU_MODE: 'headlessgl' });
      expect(platform.env('THEANINE_GPU_MODE')).to.equal('headlessgl');
      expect(platform.environment()['THEANINE_GPU_MODE']).to.equal('headlessgl');
      setEnvironment({ THEANINE_GPU_MODE: undefined });
      expect(platform.env('THEANINE_GPU_MODE')).to.equal('webasm');
    } finally {
      if (saved === undefined) delete process.env['THEANINE_GPU_MODE'];
      else process.env['THEANINE_GPU_MODE'] = saved;
    }
  });

  it('configuration switches apply at once (KERAS_HOME re-reads keras.json; THEANINE_DEVICE, KERAS_BACKEND)', () => {
    setEnvironment({ KERAS_HOME: home });
    expect(getConfig().floatx).to.equal('float32');
    setEnvironment({ THEANINE_DEVICE: 'gpu' });
    expect(getConfig().device).to.equal('gpu');
    setEnvironment({ KERAS_BACKEND: 'tensorflow' });
    expect(getConfig().backend).to.equal('tensorflow');
    expect(getConfig().device, 'other fields stay').to.equal('gpu');
  });

  it('bad input: unknown names, non-strings, and bad configuration values change nothing', () => {
    expect(() => setEnvironment({ THEANINE_DEBG: 'passes' })).to.throw(/setEnvironment: unknown switch "THEANINE_DEBG" \(allowed: KERAS_BACKEND, .*THEANINE_DEBUG/);
    expect(() => setEnvironment({ THEANINE_DEBUG: 1 as unknown as string })).to.throw(TypeError, /setEnvironment: THEANINE_DEBUG must be a string or undefined, got 1/);
    expect(() => setEnvironment(null as unknown as Record<string, string>)).to.throw(TypeError, /argument vars must be an object/);
    setEnvironment({ THEANINE_DEVICE: 'gpu' });
    expect(() => setEnvironment({ THEANINE_DEVICE: 'tpu', THEANINE_DEBUG: 'passes' })).to.throw(/THEANINE_DEVICE is "tpu"; allowed: "cpu", "gpu"/);
    expect(getConfig().device).to.equal('gpu');
    expect(environmentOverrides.get('THEANINE_DEVICE')).to.equal('gpu');
    expect(environmentOverrides.has('THEANINE_DEBUG')).to.equal(false);
  });

  it('ENVIRONMENT_SWITCHES names every switch theanine reads', () => {
    const src = path.join(path.dirname(new URL(import.meta.url).pathname), '../../src');
    const read = new Set<string>();
    const walk = (d: string): void => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) walk(path.join(d, e.name));
        else if (e.name.endsWith('.ts')) for (const m of fs.readFileSync(path.join(d, e.name), 'utf8').matchAll(/(?:env\(|env\[)'((?:THEANINE|KERAS)_[A-Z_]+)'/g)) read.add(m[1]!);
      }
    };
    walk(src);
    expect(read.size).to.be.above(5);
    for (const name of read) expect(Object.keys(ENVIRONMENT_SWITCHES), name).to.include(name);
  });
});
