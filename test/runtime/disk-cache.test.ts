// The compile cache on disk (src/runtime/disk-cache.ts, compile-disk.ts): a second process
// compiles from it and computes the same numbers; in one process, clear_session drops the
// in-memory caches, so the next K.function reads the disk; a damaged or foreign file is discarded
// with a THEANINE_DEBUG line and compiled again; the folder stays within its bound in bytes.
import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { backend as K, NDArray } from '../../src/index.js';
import { lstm } from '../helpers/disk-cache-lstm.js';
import { clearCompileCache, setDebugSink } from '../../src/runtime/cpu/compile.js';
import { diskCacheDir, diskCacheStats, setDiskCacheDir, setDiskCacheMaxBytes } from '../../src/runtime/disk-cache.js';
import { ConfigError, loadConfig, reloadConfig } from '../../src/api/config.js';
import { platform as browserPlatform } from '../../src/platform/browser.js';

const url = (p: string) => JSON.stringify(pathToFileURL(path.resolve(p)).href);

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'theanine-disk-cache-'));
const cacheFiles = (dir: string) => fs.readdirSync(dir).filter((n) => n.endsWith('.json'));

describe('compile cache on disk', function () {
  this.timeout(120000);
  let dir: string;
  beforeEach(() => {
    dir = tmp();
    setDiskCacheDir(dir);
    clearCompileCache();
    Object.assign(diskCacheStats, { hits: 0, misses: 0, writes: 0, discarded: 0, evicted: 0 });
  });
  afterEach(() => {
    setDiskCacheDir(undefined);
    setDiskCacheMaxBytes(undefined);
    setDebugSink(undefined);
    delete process.env['THEANINE_DEBUG'];
    clearCompileCache();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a second process compiles from the cache and computes the same numbers; it takes the matmul kernel module\'s bytes from the entry', () => {
    const code = `
      const { backend: K } = await import(${url('src/index.ts')});
      const { diskCacheStats } = await import(${url('src/runtime/disk-cache.ts')});
      const { tileModuleStats } = await import(${url('src/codegen/cpu/wasm-kernel.ts')});
      const { twoCalls } = await import(${url('test/helpers/disk-cache-lstm.ts')});
      const out = twoCalls(K, 4);
      console.log(JSON.stringify({ out, stats: diskCacheStats, tiles: tileModuleStats }));`;
    const run = (cacheDir: string | undefined) => {
      const env: NodeJS.ProcessEnv = { ...process.env };
      delete env['THEANINE_CACHE_DIR'];
      if (cacheDir !== undefined) env['THEANINE_CACHE_DIR'] = cacheDir;
      const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { env, encoding: 'utf8', timeout: 100000 });
      expect(r.status, r.stderr).to.equal(0);
      return JSON.parse(r.stdout.trim().split('\n').pop()!) as { out: number[]; stats: typeof diskCacheStats; tiles: { assembled: number; handedOver: number } };
    };
    const first = run(dir);
    expect(first.stats.hits).to.equal(0);
    expect(first.tiles.assembled, 'the first process assembles the kernel module').to.be.greaterThan(0);
    expect(first.stats.writes).to.be.greaterThan(0);
    expect(cacheFiles(dir)).to.have.length(first.stats.writes);
    const second = run(dir);
    expect(second.stats.hits).to.be.greaterThan(0);
    expect(second.stats.misses).to.equal(0);
    expect(second.stats.writes).to.equal(0);
    expect(second.out).to.deep.equal(first.out);
    expect(second.tiles, 'the second process compiles the kernel modules from the entry\'s bytes').to.deep.equal({ assembled: 0, handedOver: first.tiles.assembled });
    // and the numbers are those of a process without the cache
    expect(run(undefined).out).to.deep.equal(first.out);
    expect(fs.readdirSync(dir).filter((n) => n.endsWith('.tmp'))).to.deep.equal([]);
  });

  it('two processes compiling the same function at once both write it whole; a third reads it', async () => {
    const code = `
      const { backend: K } = await import(${url('src/index.ts')});
      const { diskCacheStats } = await import(${url('src/runtime/disk-cache.ts')});
      const { twoCalls } = await import(${url('test/helpers/disk-cache-lstm.ts')});
      const out = twoCalls(K, 7);
      console.log(JSON.stringify({ out, stats: diskCacheStats }));`;
    const env: NodeJS.ProcessEnv = { ...process.env, THEANINE_CACHE_DIR: dir };
    const start = () => new Promise<{ out: number[]; stats: typeof diskCacheStats }>((resolve, reject) => {
      const c = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { env });
      let stdout = '';
      let stderr = '';
      c.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
      c.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
      c.on('close', (status) => (status === 0 ? resolve(JSON.parse(stdout.trim().split('\n').pop()!)) : reject(new Error(stderr))));
    });
    const [a, b] = await Promise.all([start(), start()]);
    expect(b.out).to.deep.equal(a.out);
    expect(fs.readdirSync(dir).filter((n) => !n.endsWith('.json'))).to.deep.equal([]);
    const c = await start();
    expect(c.stats).to.include({ hits: a.stats.writes + a.stats.hits, misses: 0, discarded: 0 });
    expect(c.out).to.deep.equal(a.out);
  });

  it('after clear_session, K.function reads the disk: same numbers, same source', () => {
    const { f, xs } = lstm(K, 3);
    const cold = f(xs).map((r) => Array.from(r.data));
    const coldSource = f.source();
    expect(diskCacheStats).to.include({ hits: 0, misses: 1, writes: 1 });
    clearCompileCache();
    const again = lstm(K, 3);
    expect(again.f(again.xs).map((r) => Array.from(r.data))).to.deep.equal(cold);
    expect(diskCacheStats).to.include({ hits: 1, misses: 1, writes: 1 });
    expect(again.f.source()).to.equal(coldSource);
  });

  it("a loaded function's run-time errors name the user's line", () => {
    const build = () => {
      const x = K.placeholder([4, 3], null, 'float32', false, 'x');
      const i = K.placeholder([null], null, 'int32', false, 'i');
      return K.function([x, i], [K.gather(x, i).mul(2)]);
    };
    const ins = [new NDArray(new Float32Array(12), [4, 3]), new NDArray(Int32Array.from([1, 9]), [2], 'int32')];
    const message = (f: ReturnType<typeof build>) => {
      try { f(ins); } catch (e) { return (e as Error).message; }
      return 'no error';
    };
    const cold = message(build());
    expect(cold).to.match(/out of range[\s\S]*built by K\.gather at .*disk-cache\.test\.ts:\d+/);
    clearCompileCache();
    const again = build();
    expect(message(again)).to.equal(cold);
    expect(diskCacheStats.hits).to.equal(1);
  });

  it('another batch size is another entry', () => {
    lstm(K, 2).f(lstm(K, 2).xs);
    const { f, xs } = lstm(K, 5);
    f(xs);
    expect(diskCacheStats).to.include({ hits: 0, misses: 2, writes: 2 });
    expect(cacheFiles(dir)).to.have.length(2);
  });

  it('kernel module bytes handed over that do not compile are dropped: the module is assembled here instead', () => {
    const code = `
      const { matmulFma, seedTileModules, tileModuleStats, wasmTileModule } = await import(${url('src/codegen/cpu/wasm-kernel.ts')});
      seedTileModules([['wasm-tiles;shared:false;fma:' + matmulFma(), new Uint8Array([0, 97, 115, 109, 9, 9, 9, 9])]]);
      const ok = wasmTileModule() !== null;
      console.log(JSON.stringify({ ok, tiles: tileModuleStats }));`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { encoding: 'utf8', timeout: 100000 });
    expect(r.status, r.stderr).to.equal(0);
    expect(JSON.parse(r.stdout.trim().split('\n').pop()!)).to.deep.equal({ ok: true, tiles: { assembled: 1, handedOver: 0 } });
  });

  it('a function whose products the worker threads share starts them when it is specialised, before its first call; one without does not', () => {
    const code = `
      const { backend: K, NDArray } = await import(${url('src/index.ts')});
      const { setThreads, threadPool } = await import(${url('src/codegen/cpu/threads.ts')});
      setThreads(2);
      const x = K.placeholder([4], null, 'float32', false, 'x');
      K.function([x], [K.exp(x)]).source();
      const small = threadPool()?.size ?? 0;
      const a = K.placeholder([256, 256], null, 'float32', false, 'a');
      const w = K.variable(new NDArray(new Float32Array(256 * 256).fill(0.5), [256, 256]), 'float32', 'w');
      K.function([a], [K.dot(a, w)]).source();
      console.log(JSON.stringify({ small, big: threadPool()?.size ?? 0 }));`;
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env['THEANINE_CACHE_DIR'];
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { env, encoding: 'utf8', timeout: 100000 });
    expect(r.status, r.stderr).to.equal(0);
    expect(JSON.parse(r.stdout.trim().split('\n').pop()!)).to.deep.equal({ small: 0, big: 1 });
  });

  for (const [what, damage, why] of [
    ['garbage', (_t: string) => 'not a cache file \u0000\u00ff garbage', /not a theanine-compile-cache\/1 file|no header line|header is not JSON/],
    ['a cut body', (t: string) => t.slice(0, t.length - 40), /the body is damaged/],
    ['another version', (t: string) => t.replace(/"version":"[^"]*"/, '"version":"0.0.0-other"'), /written by theanine "0\.0\.0-other"/],
    ['another key', (t: string) => t.replace(/"key":"cpu;/, '"key":"cpu;other;'), /another key/],
  ] as const) {
    it(`a file holding ${what} is discarded with a THEANINE_DEBUG line and compiled again`, () => {
      const { f, xs } = lstm(K, 3);
      const cold = f(xs).map((r) => Array.from(r.data));
      const [file] = cacheFiles(dir);
      const at = path.join(dir, file!);
      fs.writeFileSync(at, damage(fs.readFileSync(at, 'utf8')));
      clearCompileCache();
      const lines: string[] = [];
      process.env['THEANINE_DEBUG'] = 'cache';
      setDebugSink((t) => lines.push(t));
      const again = lstm(K, 3);
      expect(again.f(again.xs).map((r) => Array.from(r.data))).to.deep.equal(cold);
      expect(diskCacheStats).to.include({ hits: 0, discarded: 1, writes: 2 });
      const line = lines.find((l) => l.includes('discarded'));
      expect(line, lines.join('')).to.match(/^\[theanine cache\] discarded \w+\.json in .*compiling again/);
      expect(line).to.match(why);
      // compiled again and stored anew: the next process (here: after clear_session) hits
      clearCompileCache();
      const third = lstm(K, 3);
      third.f(third.xs);
      expect(diskCacheStats.hits).to.equal(1);
    });
  }

  it('keeps the folder within its bound in bytes, dropping the least recently used files', () => {
    lstm(K, 1).f(lstm(K, 1).xs);
    const one = fs.statSync(path.join(dir, cacheFiles(dir)[0]!)).size;
    const bound = Math.floor(one * 2.5);
    setDiskCacheMaxBytes(bound);
    for (const B of [2, 3, 4, 5]) { const { f, xs } = lstm(K, B); f(xs); }
    const sizes = cacheFiles(dir).map((n) => fs.statSync(path.join(dir, n)).size);
    expect(sizes.reduce((a, b) => a + b, 0)).to.be.at.most(bound);
    expect(sizes.length).to.be.within(1, 2);
    expect(diskCacheStats.evicted).to.equal(5 - sizes.length);
    // the latest entry stays
    clearCompileCache();
    const last = lstm(K, 5);
    last.f(last.xs);
    expect(diskCacheStats.hits).to.equal(1);
  });

  it('keras.json "cache_dir" names the folder; THEANINE_CACHE_DIR wins; anything but a path is a ConfigError', () => {
    const home = tmp();
    const write = (cfg: unknown) => fs.writeFileSync(path.join(home, 'keras.json'), JSON.stringify(cfg));
    try {
      write({ cache_dir: 5 });
      expect(() => loadConfig({ env: { KERAS_HOME: home }, home })).to.throw(ConfigError, /"cache_dir" is 5; allowed: a folder path/);
      write({ cache_dir: dir });
      expect(loadConfig({ env: { KERAS_HOME: home }, home }).cache_dir).to.equal(dir);
      reloadConfig({ env: { KERAS_HOME: home }, home });
      setDiskCacheDir(undefined);
      const saved = process.env['THEANINE_CACHE_DIR'];
      delete process.env['THEANINE_CACHE_DIR'];
      try {
        expect(diskCacheDir()).to.equal(dir);
        process.env['THEANINE_CACHE_DIR'] = path.join(dir, 'env');
        expect(diskCacheDir()).to.equal(path.join(dir, 'env'));
      } finally {
        if (saved === undefined) delete process.env['THEANINE_CACHE_DIR'];
        else process.env['THEANINE_CACHE_DIR'] = saved;
      }
    } finally {
      // as test/helpers/setup.ts configures every test file
      reloadConfig({ env: { KERAS_HOME: process.env['KERAS_HOME'], ...(process.env['THEANINE_MODE'] !== undefined ? { THEANINE_MODE: process.env['THEANINE_MODE'] } : {}) } });
      fs.rmSync(home, { recursive: true, force: true });
    }
  });

  it('is off without a folder, and a page has no cache files', () => {
    setDiskCacheDir(null);
    const { f, xs } = lstm(K, 2);
    f(xs);
    expect(diskCacheStats).to.include({ hits: 0, misses: 0, writes: 0 });
    expect(cacheFiles(dir)).to.deep.equal([]);
    expect(browserPlatform.cacheFiles('/tmp/anything')).to.equal(undefined);
  });
});
