// Every `npx theanine ...` line of the README's and docs' shell blocks runs as written in a
// clone: its input files exist (examples/), and it exits 0. Training lines run with
// `--epochs 1 --data <20 digits per class>` added (flags override: the same code path, less
// data); files the commands write go to a temporary folder. `bench` is left out (the suite takes minutes;
// test/cli covers the command). `viz` lines start the server on a free port, load the address it
// prints and stop it.
import { expect } from 'chai';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { PIXELS, defaultDataDir } from '../../src/examples/mnist.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** `npx theanine` lines of the ```sh blocks of `file`, without comments. */
function commands(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const blocks = [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  return blocks.flatMap((b) => b.split('\n')).map((l) => l.replace(/\s+#.*$/, '').trim()).filter((l) => l.startsWith('npx theanine '));
}

const files = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const OUTPUT_FLAGS = new Set(['--svg', '--out', '--export']);

describe('docs: the shell commands run as written', function () {
  this.timeout(180000);
  let out: string;
  before(() => {
    execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'pipe' });
    out = mkdtempSync(join(tmpdir(), 'theanine-docs-commands-'));
    // The first 20 digits of each class, in the mnist package's format (16 train, 4 held out).
    const from = defaultDataDir()!;
    mkdirSync(join(out, 'data'));
    for (let d = 0; d < 10; d++) {
      const { data } = JSON.parse(readFileSync(join(from, `${d}.json`), 'utf8')) as { data: number[] };
      writeFileSync(join(out, 'data', `${d}.json`), JSON.stringify({ data: data.slice(0, 20 * PIXELS) }));
    }
  });
  after(() => rmSync(out, { recursive: true, force: true }));

  it('the README has the tour\'s commands', () => {
    expect(commands('README.md').length).to.be.above(12);
  });

  for (const file of files) {
    for (const line of commands(file)) {
      const args = line.split(/\s+/).slice(2);
      if (args[0] === 'bench') continue;
      if (args[0] === 'viz') {
        // The server runs until stopped: start it on a free port, load the address it prints, stop it.
        it(`${file}: ${line}`, async () => {
          const run = args.map((a, i) => (args[i - 1] === '--port' ? '0' : a));
          const child = spawn(process.execPath, ['bin/theanine.js', ...run], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
          try {
            const url = await new Promise<string>((ok, fail) => {
              let out = '';
              let err = '';
              child.stdout.on('data', (d: Buffer) => {
                out += d.toString();
                const m = /at (http:\/\/\S+)/.exec(out);
                if (m !== null) ok(m[1]!);
              });
              child.stderr.on('data', (d: Buffer) => { err += d.toString(); });
              child.on('exit', (code) => fail(new Error(`exited with ${code} before serving:\n${out}\n${err}`)));
            });
            const page = await fetch(url);
            expect(page.status).to.equal(200);
            expect(await page.text()).to.contain('theanine viewer');
            const hash = /#(.+)$/.exec(url)?.[1];
            const example = args[args.indexOf('--example') + 1];
            if (args.includes('--example')) expect(hash).to.equal(example);
          } finally {
            child.kill();
          }
        });
        continue;
      }
      it(`${file}: ${line}`, () => {
        const run = args.map((a, i) => (OUTPUT_FLAGS.has(args[i - 1] ?? '') ? join(out, a) : a));
        // Inputs the line names (a --require module, export's builder file) are in the repository.
        for (const [i, a] of args.entries()) {
          if (args[i - 1] === '--require' || (args[0] === 'export' && i === 1)) expect(existsSync(join(root, a)), `${a} exists`).to.equal(true);
        }
        if (args[0] === 'train') run.push('--epochs', '1', '--data', join(out, 'data'));
        const r = spawnSync(process.execPath, ['bin/theanine.js', ...run], { cwd: root, encoding: 'utf8', env: { ...process.env, THEANINE_GPU_MODE: 'webasm' } });
        expect(r.status, `${r.stdout}\n${r.stderr}`).to.equal(0);
        for (const [i, a] of args.entries()) if (OUTPUT_FLAGS.has(args[i - 1] ?? '')) expect(existsSync(join(out, a)), `wrote ${a}`).to.equal(true);
      });
    }
  }
});
