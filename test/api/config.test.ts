import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { backend as K } from '../../src/index.js';
import {
  ConfigError, DEFAULT_CONFIG, ValueError, backend, configPath, device, epsilon, floatx, getConfig, get_uid,
  image_data_format, image_dim_ordering, loadConfig, reloadConfig, reset_uids, set_device, set_epsilon,
  set_floatx, set_image_data_format, set_image_dim_ordering,
} from '../../src/api/config.js';

/** Lets a test pass a value of the wrong type, as an untyped caller could. */
function bad(v: unknown): never {
  return v as never;
}

function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    if (e instanceof Error) return e;
    throw new Error(`threw a non-Error: ${String(e)}`);
  }
  throw new Error('expected an error');
}

const tmpDirs: string[] = [];
function tmpHome(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'theanine-config-'));
  tmpDirs.push(dir);
  return dir;
}

function writeJson(dir: string, value: unknown): string {
  const file = path.join(dir, 'keras.json');
  fs.writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value));
  return file;
}

describe('api/config', () => {
  after(() => {
    for (const dir of tmpDirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  describe('loadConfig', () => {
    // Issue 14 item 6: a FIFO made readFileSync block forever, so the check runs in a child
    // process with a time limit (a hang is a failure, not a stuck test run).
    it('refuses a keras.json that is a FIFO or a directory with a ConfigError naming the path, without blocking', function () {
      this.timeout(60000);
      const dir = tmpHome();
      const fifo = path.join(dir, 'keras.json');
      const made = spawnSync('mkfifo', [fifo]);
      expect(made.status, `mkfifo: ${String(made.stderr)}`).to.equal(0);
      const script = `import { loadConfig } from ${JSON.stringify(path.resolve('src/api/config.ts'))};
        try { loadConfig({ env: { KERAS_HOME: ${JSON.stringify(dir)} } }); console.log('no error'); }
        catch (e) { console.log(e.name + ': ' + e.message); }`;
      const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { timeout: 30000, encoding: 'utf8' });
      expect(r.signal, 'the child was killed: reading the FIFO blocked').to.equal(null);
      expect(r.stdout.trim()).to.equal(`ConfigError: keras.json (${fifo}): is a FIFO; only a regular file is read as the Keras config (remove it or point KERAS_HOME elsewhere)`);
      const d2 = tmpHome();
      fs.mkdirSync(path.join(d2, 'keras.json'));
      const e = errorOf(() => loadConfig({ env: { KERAS_HOME: d2 } }));
      expect(e).to.be.instanceOf(ConfigError);
      expect(e.message).to.equal(`keras.json (${path.join(d2, "keras.json")}): is a directory; only a regular file is read as the Keras config (remove it or point KERAS_HOME elsewhere)`);
    });

    it('writes the defaults as pretty JSON to a missing KERAS_HOME/keras.json', () => {
      const dir = tmpHome();
      expect(loadConfig({ env: { KERAS_HOME: dir } })).to.deep.equal(DEFAULT_CONFIG);
      const text = fs.readFileSync(path.join(dir, 'keras.json'), 'utf8');
      expect(text).to.include('\n    "floatx": "float32"');
      expect(JSON.parse(text)).to.deep.equal({
        backend: 'theanine', floatx: 'float32', epsilon: 1e-7, image_data_format: 'channels_last', device: 'cpu',
      });
    });

    it('creates a missing KERAS_HOME folder', () => {
      const dir = path.join(tmpHome(), 'a', 'b');
      loadConfig({ env: { KERAS_HOME: dir } });
      expect(fs.existsSync(path.join(dir, 'keras.json'))).to.equal(true);
    });

    it('falls back to <home>/.keras when KERAS_HOME is unset', () => {
      const home = tmpHome();
      expect(configPath({ env: {}, home })).to.equal(path.join(home, '.keras', 'keras.json'));
      loadConfig({ env: {}, home });
      expect(fs.existsSync(path.join(home, '.keras', 'keras.json'))).to.equal(true);
    });

    it('uses process.env when no env is given', () => {
      const dir = tmpHome();
      const saved = { ...process.env };
      try {
        process.env['KERAS_HOME'] = dir;
        process.env['KERAS_BACKEND'] = 'tensorflow';
        delete process.env['THEANINE_DEVICE'];
        expect(loadConfig().backend).to.equal('tensorflow');
        expect(fs.existsSync(path.join(dir, 'keras.json'))).to.equal(true);
      } finally {
        for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
        Object.assign(process.env, saved);
      }
    });

    it('silently uses the defaults when the folder cannot be created', () => {
      const root = tmpHome();
      fs.writeFileSync(path.join(root, 'plainfile'), 'x');
      const dir = path.join(root, 'plainfile', 'sub');
      expect(loadConfig({ env: { KERAS_HOME: dir } })).to.deep.equal(DEFAULT_CONFIG);
    });

    it('reads an existing file without rewriting it', () => {
      const dir = tmpHome();
      const content = JSON.stringify({
        backend: 'tensorflow', floatx: 'float64', epsilon: 1e-5, image_data_format: 'channels_first', device: 'gpu',
      });
      const file = writeJson(dir, content);
      expect(loadConfig({ env: { KERAS_HOME: dir } })).to.deep.equal({
        backend: 'tensorflow', floatx: 'float64', epsilon: 1e-5, image_data_format: 'channels_first', device: 'gpu',
      });
      expect(fs.readFileSync(file, 'utf8')).to.equal(content);
    });

    it('fills missing fields with defaults and ignores unknown ones', () => {
      const dir = tmpHome();
      writeJson(dir, { floatx: 'float16', something_else: [1, 2] });
      expect(loadConfig({ env: { KERAS_HOME: dir } })).to.deep.equal({ ...DEFAULT_CONFIG, floatx: 'float16' });
      writeJson(dir, {});
      expect(loadConfig({ env: { KERAS_HOME: dir } })).to.deep.equal(DEFAULT_CONFIG);
    });

    const badFields: Array<[string, unknown, string[]]> = [
      ['backend', 'theano', ['"theanine"', '"tensorflow"']],
      ['backend', null, ['"theanine"', '"tensorflow"']],
      ['floatx', 'beerfloat', ['"float16", "float32", "float64"']],
      ['floatx', 32, ['"float16", "float32", "float64"']],
      ['epsilon', 'a', ['positive finite number']],
      ['epsilon', 0, ['positive finite number']],
      ['epsilon', -1e-7, ['positive finite number']],
      ['image_data_format', 'nchw', ['"channels_first", "channels_last"']],
      ['device', 'tpu', ['"cpu", "gpu"']],
      ['image_dim_ordering', 'nchw', ['"th", "tf"']],
    ];
    for (const [field, value, allowed] of badFields) {
      it(`rejects ${field}: ${JSON.stringify(value)} in the file`, () => {
        const dir = tmpHome();
        const file = writeJson(dir, { [field]: value });
        const err = errorOf(() => loadConfig({ env: { KERAS_HOME: dir } }));
        expect(err).to.be.instanceOf(ConfigError);
        expect(err.message).to.include(file);
        expect(err.message).to.include(`"${field}" is ${JSON.stringify(value)}`);
        for (const a of allowed) expect(err.message).to.include(a);
      });
    }

    it('gives the exact message for floatx "beerfloat"', () => {
      const dir = tmpHome();
      const file = writeJson(dir, { floatx: 'beerfloat' });
      expect(() => loadConfig({ env: { KERAS_HOME: dir } })).to.throw(
        ConfigError, `keras.json (${file}): "floatx" is "beerfloat"; allowed: "float16", "float32", "float64"`);
    });

    for (const text of ['{"floatx": "float32",', '', 'floatx = float32']) {
      it(`rejects unparsable JSON ${JSON.stringify(text)}`, () => {
        const dir = tmpHome();
        const file = writeJson(dir, text);
        const err = errorOf(() => loadConfig({ env: { KERAS_HOME: dir } }));
        expect(err).to.be.instanceOf(ConfigError);
        expect(err.message).to.include(file).and.include('unparsable JSON').and.include('JSON object');
      });
    }

    for (const text of ['[]', '42', 'null', '"float32"']) {
      it(`rejects the non-object JSON ${text}`, () => {
        const dir = tmpHome();
        const file = writeJson(dir, text);
        const err = errorOf(() => loadConfig({ env: { KERAS_HOME: dir } }));
        expect(err).to.be.instanceOf(ConfigError);
        expect(err.message).to.include(file).and.include(`is ${text}`).and.include('JSON object');
      });
    }

    it('accepts the legacy image_dim_ordering when image_data_format is absent', () => {
      const dir = tmpHome();
      writeJson(dir, { image_dim_ordering: 'th' });
      expect(loadConfig({ env: { KERAS_HOME: dir } }).image_data_format).to.equal('channels_first');
      writeJson(dir, { image_dim_ordering: 'tf' });
      expect(loadConfig({ env: { KERAS_HOME: dir } }).image_data_format).to.equal('channels_last');
      writeJson(dir, { image_dim_ordering: 'th', image_data_format: 'channels_last' });
      expect(loadConfig({ env: { KERAS_HOME: dir } }).image_data_format).to.equal('channels_last');
    });

    it('lets KERAS_BACKEND and THEANINE_DEVICE override the file', () => {
      const dir = tmpHome();
      writeJson(dir, { backend: 'theanine', device: 'cpu' });
      const cfg = loadConfig({ env: { KERAS_HOME: dir, KERAS_BACKEND: 'tensorflow', THEANINE_DEVICE: 'gpu' } });
      expect(cfg.backend).to.equal('tensorflow');
      expect(cfg.device).to.equal('gpu');
      expect(loadConfig({ env: { KERAS_HOME: dir, KERAS_BACKEND: 'theanine' } }).backend).to.equal('theanine');
    });

    it('reads "threads" from keras.json and THEANINE_THREADS (the environment wins); absent by default', () => {
      const dir = tmpHome();
      expect(loadConfig({ env: { KERAS_HOME: dir } }).threads).to.equal(undefined);
      writeJson(dir, { threads: 3 });
      expect(loadConfig({ env: { KERAS_HOME: dir } }).threads).to.equal(3);
      expect(loadConfig({ env: { KERAS_HOME: dir, THEANINE_THREADS: '1' } }).threads).to.equal(1);
      expect(loadConfig({ env: { KERAS_HOME: dir, THEANINE_THREADS: '' } }).threads).to.equal(3);
      for (const bad of [0, 1.5, -2, '4', 257]) {
        writeJson(dir, { threads: bad });
        expect(() => loadConfig({ env: { KERAS_HOME: dir } })).to.throw(ConfigError, `"threads" is ${JSON.stringify(bad)}; allowed: a positive integer (at most 256)`);
      }
    });

    it('reads "matmul_precision" from keras.json and THEANINE_MATMUL_PRECISION (the environment wins); absent by default', () => {
      const dir = tmpHome();
      expect(loadConfig({ env: { KERAS_HOME: dir } }).matmul_precision).to.equal(undefined);
      writeJson(dir, { matmul_precision: 'float64' });
      expect(loadConfig({ env: { KERAS_HOME: dir } }).matmul_precision).to.equal('float64');
      expect(loadConfig({ env: { KERAS_HOME: dir, THEANINE_MATMUL_PRECISION: 'float32' } }).matmul_precision).to.equal('float32');
      expect(loadConfig({ env: { KERAS_HOME: dir, THEANINE_MATMUL_PRECISION: '' } }).matmul_precision).to.equal('float64');
      expect(() => loadConfig({ env: { KERAS_HOME: dir, THEANINE_MATMUL_PRECISION: 'highest' } })).to.throw(
        ConfigError, 'environment variable THEANINE_MATMUL_PRECISION is "highest"; allowed: "float32", "float64"');
      writeJson(dir, { matmul_precision: 'bfloat16' });
      expect(() => loadConfig({ env: { KERAS_HOME: dir } })).to.throw(ConfigError, '"matmul_precision" is "bfloat16"; allowed: "float32", "float64"');
    });

    it('reads "optimizer" from keras.json and THEANINE_OPTIMIZER (the environment wins); K.function uses it when given no optimizer', () => {
      const dir = tmpHome();
      expect(loadConfig({ env: { KERAS_HOME: dir } }).optimizer).to.equal(undefined);
      writeJson(dir, { optimizer: 'eqsat' });
      expect(loadConfig({ env: { KERAS_HOME: dir } }).optimizer).to.equal('eqsat');
      expect(loadConfig({ env: { KERAS_HOME: dir, THEANINE_OPTIMIZER: 'fast_compile' } }).optimizer).to.equal('fast_compile');
      expect(loadConfig({ env: { KERAS_HOME: dir, THEANINE_OPTIMIZER: '' } }).optimizer).to.equal('eqsat');
      expect(() => loadConfig({ env: { KERAS_HOME: dir, THEANINE_OPTIMIZER: 'O3' } })).to.throw(
        ConfigError, 'environment variable THEANINE_OPTIMIZER is "O3"; allowed: "fast_run", "fast_compile", "eqsat", "none"');
      writeJson(dir, { optimizer: 'fast' });
      expect(() => loadConfig({ env: { KERAS_HOME: dir } })).to.throw(ConfigError, '"optimizer" is "fast"; allowed: "fast_run", "fast_compile", "eqsat", "none"');
      writeJson(dir, { optimizer: 'eqsat' });
      try {
        reloadConfig({ env: { KERAS_HOME: dir } });
        const x = K.placeholder([2], null, 'float64');
        expect(K.function([x], [K.exp(x)]).optimizer).to.equal('eqsat');
        expect(K.function([x], [K.exp(x)], [], { optimizer: 'fast_run' }).optimizer).to.equal('fast_run');
      } finally {
        reloadConfig({ env: { KERAS_HOME: tmpHome() } });
      }
    });

    for (const bad of ['0', 'two', '1.5', '-1', ' 2', '300']) {
      it(`rejects THEANINE_THREADS=${JSON.stringify(bad)}`, () => {
        const dir = tmpHome();
        expect(() => loadConfig({ env: { KERAS_HOME: dir, THEANINE_THREADS: bad } })).to.throw(
          ConfigError, `environment variable THEANINE_THREADS is ${JSON.stringify(bad)}; allowed: a positive integer (at most 256)`);
      });
    }

    const badEnv: Array<[string, string, string]> = [
      ['KERAS_BACKEND', 'theano', '"theanine", "tensorflow"'],
      ['KERAS_BACKEND', '', '"theanine", "tensorflow"'],
      ['THEANINE_DEVICE', 'tpu', '"cpu", "gpu"'],
      ['THEANINE_DEVICE', 'GPU', '"cpu", "gpu"'],
    ];
    for (const [name, value, allowed] of badEnv) {
      it(`rejects ${name}=${JSON.stringify(value)}`, () => {
        const dir = tmpHome();
        expect(() => loadConfig({ env: { KERAS_HOME: dir, [name]: value } })).to.throw(
          ConfigError, `environment variable ${name} is ${JSON.stringify(value)}; allowed: ${allowed}`);
      });
    }
  });

  describe('current config and setters', () => {
    let home = '';
    const reset = (): void => {
      reloadConfig({ env: { KERAS_HOME: home } });
    };
    before(() => {
      home = tmpHome();
      reset();
    });
    beforeEach(reset);
    after(() => {
      reset();
      reset_uids();
    });

    it('starts from the defaults and hands out frozen snapshots', () => {
      const cfg = getConfig();
      expect(cfg).to.deep.equal(DEFAULT_CONFIG);
      expect(Object.isFrozen(cfg)).to.equal(true);
      set_floatx('float64');
      expect(cfg.floatx).to.equal('float32');
      expect(getConfig().floatx).to.equal('float64');
    });

    it('reloadConfig re-reads the file, and keeps the old config on error', () => {
      writeJson(home, { floatx: 'float16', epsilon: 1e-3 });
      expect(reloadConfig({ env: { KERAS_HOME: home } }).floatx).to.equal('float16');
      expect(epsilon()).to.equal(1e-3);
      writeJson(home, { floatx: 'beerfloat' });
      expect(() => reloadConfig({ env: { KERAS_HOME: home } })).to.throw(ConfigError);
      expect(floatx()).to.equal('float16');
      writeJson(home, {});
    });

    it('backend() is the active backend name, env override included', () => {
      expect(backend()).to.equal('theanine');
      reloadConfig({ env: { KERAS_HOME: home, KERAS_BACKEND: 'tensorflow' } });
      expect(backend()).to.equal('tensorflow');
    });

    it('setters change memory only, not keras.json', () => {
      const file = path.join(home, 'keras.json');
      const before = fs.readFileSync(file, 'utf8');
      set_floatx('float16');
      set_epsilon(0.5);
      set_device('gpu');
      set_image_data_format('channels_first');
      expect(fs.readFileSync(file, 'utf8')).to.equal(before);
    });

    it('epsilon / set_epsilon', () => {
      expect(epsilon()).to.equal(1e-7);
      set_epsilon(1e-4);
      expect(epsilon()).to.equal(1e-4);
      for (const v of ['a', 0, -1, Number.NaN, Number.POSITIVE_INFINITY, null, undefined]) {
        const err = errorOf(() => set_epsilon(bad(v)));
        expect(err).to.be.instanceOf(ValueError);
        expect(err.message).to.match(/^set_epsilon: invalid epsilon /).and.include('positive finite number');
        expect(epsilon()).to.equal(1e-4);
      }
      expect(errorOf(() => set_epsilon(bad('a'))).message).to.include('"a"');
      expect(errorOf(() => set_epsilon(Number.NaN)).message).to.include('NaN');
    });

    it('floatx / set_floatx', () => {
      expect(floatx()).to.equal('float32');
      for (const f of ['float16', 'float64', 'float32'] as const) {
        set_floatx(f);
        expect(floatx()).to.equal(f);
      }
      set_floatx('float64');
      expect(() => set_floatx(bad(''))).to.throw(
        ValueError, 'set_floatx: unknown floatx "" (allowed: "float16", "float32", "float64")');
      expect(() => set_floatx(bad(123))).to.throw(ValueError, 'set_floatx: unknown floatx 123 (allowed:');
      expect(() => set_floatx(bad('beerfloat'))).to.throw(ValueError, '"beerfloat"');
      expect(() => set_floatx(bad(undefined))).to.throw(ValueError, 'undefined');
      expect(floatx()).to.equal('float64');
    });

    it('image_data_format / set_image_data_format', () => {
      expect(image_data_format()).to.equal('channels_last');
      set_image_data_format('channels_first');
      expect(image_data_format()).to.equal('channels_first');
      expect(() => set_image_data_format(bad('nchw'))).to.throw(
        ValueError, 'set_image_data_format: unknown data_format "nchw" (allowed: "channels_first", "channels_last")');
      expect(() => set_image_data_format(bad('th'))).to.throw(ValueError);
      expect(image_data_format()).to.equal('channels_first');
    });

    it('image_dim_ordering maps both ways', () => {
      expect(image_dim_ordering()).to.equal('tf');
      set_image_data_format('channels_first');
      expect(image_dim_ordering()).to.equal('th');
      set_image_dim_ordering('tf');
      expect(image_data_format()).to.equal('channels_last');
      set_image_dim_ordering('th');
      expect(image_data_format()).to.equal('channels_first');
      expect(() => set_image_dim_ordering(bad('channels_last'))).to.throw(
        ValueError, 'set_image_dim_ordering: unknown dim_ordering "channels_last" (allowed: "th", "tf")');
      expect(() => set_image_dim_ordering(bad(''))).to.throw(ValueError);
      expect(image_data_format()).to.equal('channels_first');
    });

    it('device / set_device', () => {
      expect(device()).to.equal('cpu');
      set_device('gpu');
      expect(device()).to.equal('gpu');
      expect(() => set_device(bad('tpu'))).to.throw(
        ValueError, 'set_device: unknown device "tpu" (allowed: "cpu", "gpu")');
      expect(device()).to.equal('gpu');
      set_device('cpu');
      expect(device()).to.equal('cpu');
    });

    it('errors are Error subclasses with their own names', () => {
      const v = errorOf(() => set_device(bad('tpu')));
      expect(v).to.be.instanceOf(Error);
      expect(v.name).to.equal('ValueError');
      const c = errorOf(() => loadConfig({ env: { KERAS_HOME: home, THEANINE_DEVICE: 'tpu' } }));
      expect(c).to.be.instanceOf(Error);
      expect(c.name).to.equal('ConfigError');
    });

    it('get_uid counts per prefix; reset_uids starts over', () => {
      reset_uids();
      expect([get_uid('dense'), get_uid('dense'), get_uid('dense')]).to.deep.equal([1, 2, 3]);
      expect(get_uid('conv')).to.equal(1);
      expect([get_uid(), get_uid('')]).to.deep.equal([1, 2]);
      expect(get_uid('dense')).to.equal(4);
      reset_uids();
      expect(get_uid('dense')).to.equal(1);
      expect(get_uid()).to.equal(1);
    });
  });
});
