// The installed command as a user meets it (bin/theanine.js, built first): defaults from
// keras.json and the environment, a closed stdout, Ctrl-C during the progress bar, warnings
// before the results, the help text.
import { expect } from 'chai';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { needs } from '../helpers/needs.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const QUICK = ['train', 'mnist', '--limit', '64', '--epochs', '1', '--batch-size', '32'];

/** Runs bin/theanine.js with `env` on top of a clean environment (no Keras settings of ours). */
function theanine(args: readonly string[], env: Record<string, string> = {}) {
  const base = { ...process.env };
  for (const k of ['KERAS_BACKEND', 'THEANINE_DEVICE', 'THEANINE_DEBUG', 'THEANINE_GPU_MODE']) delete base[k];
  return spawnSync(process.execPath, ['bin/theanine.js', ...args], { cwd: root, encoding: 'utf8', env: { ...base, ...env } });
}

function hasScript(): boolean {
  return spawnSync('sh', ['-c', 'command -v script'], { encoding: 'utf8' }).status === 0;
}

describe('cli: behaviour of the installed command', function () {
  this.timeout(120000);
  let home: string;
  before(() => {
    execFileSync(process.execPath, [fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url)), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'pipe' });
    home = mkdtempSync(join(tmpdir(), 'theanine-cli-home-'));
  });
  after(() => rmSync(home, { recursive: true, force: true }));

  describe('backend and device defaults', () => {
    it('KERAS_BACKEND=tensorflow trains on the tensorflow backend and says which tfjs flavour runs', () => {
      const r = theanine(QUICK, { KERAS_HOME: home, KERAS_BACKEND: 'tensorflow' });
      expect(r.status, r.stderr).to.equal(0);
      expect(r.stdout.split('\n')[0]).to.match(/^backend tensorflow, tfjs flavour (node|wasm|cpu) /);
    });

    it('keras.json\'s backend and device are the defaults, and the flags override them', () => {
      const dir = join(home, 'configured');
      execFileSync('mkdir', ['-p', dir]);
      writeFileSync(join(dir, 'keras.json'), JSON.stringify({ backend: 'tensorflow', device: 'cpu' }));
      const configured = theanine(QUICK, { KERAS_HOME: dir });
      expect(configured.status, configured.stderr).to.equal(0);
      expect(configured.stdout).to.match(/^backend tensorflow, /);
      const flagged = theanine([...QUICK, '--backend', 'theanine'], { KERAS_HOME: dir, KERAS_BACKEND: 'tensorflow' });
      expect(flagged.status, flagged.stderr).to.equal(0);
      expect(flagged.stdout.split('\n')[0]).to.equal('backend theanine, device cpu (generated JavaScript)');
    });

    it('THEANINE_DEVICE=gpu is the default device; a bad value is a one-line error naming it', () => {
      const gpu = theanine(QUICK, { KERAS_HOME: home, THEANINE_DEVICE: 'gpu', THEANINE_GPU_MODE: 'webasm' });
      if (gpu.status === 2 && /gpu\.js is not installed/.test(gpu.stderr)) return; // a checkout without gpu.js: the message is the point
      expect(gpu.status, gpu.stderr).to.equal(0);
      expect(gpu.stdout.split('\n')[0]).to.match(/^backend theanine, device gpu:webasm \(gpu\.js /);
      const bad = theanine(QUICK, { KERAS_HOME: home, THEANINE_DEVICE: 'tpu' });
      expect(bad.status).to.equal(2);
      expect(bad.stderr).to.equal('theanine: environment variable THEANINE_DEVICE is "tpu"; allowed: "cpu", "gpu"\n');
    });

    it('--device gpu with the tensorflow backend is refused in one line', () => {
      const r = theanine([...QUICK, '--backend', 'tensorflow', '--device', 'gpu'], { KERAS_HOME: home });
      expect(r.status).to.equal(2);
      expect(r.stderr).to.match(/^theanine: --device gpu is a device of the theanine backend; .*\n$/);
    });
  });

  it('a closed stdout (| head -1) ends the command at once and quietly', async () => {
    // 1000 epochs would take many minutes: the command must end soon after its reader goes.
    const child = spawn(process.execPath, ['bin/theanine.js', 'train', 'mnist', '--limit', '256', '--epochs', '1000'], {
      cwd: root, env: { ...process.env, KERAS_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let first = '';
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    child.stdout.once('data', (d: Buffer) => { first = d.toString(); child.stdout.destroy(); });
    const code = await new Promise<number | null>((done) => child.on('close', (c) => done(c)));
    expect(first).to.match(/^backend theanine, /);
    expect(stderr).to.equal('');
    expect(code).to.equal(0);
  });

  it('passes | head -1 prints one line, no EPIPE error', () => {
    const r = spawnSync('sh', ['-c', 'node bin/theanine.js passes mlp-gradient | head -1; exit 0'], { cwd: root, encoding: 'utf8' });
    expect(r.stdout).to.match(/^mlp-gradient: [^\n]*\n$/);
    expect(r.stderr).to.equal('');
  });

  it('Ctrl-C during the progress bar: the terminal was never changed (cursor shown, line wrapping on)', async function () {
    needs(this, 'the Ctrl-C test on a pseudo-terminal (test/cli/behaviour.test.ts)', hasScript() ? undefined : 'util-linux\'s `script` is not installed (apt-get install bsdutils)');
    // script(1) runs the command on a pseudo-terminal; a ^C written to it is the terminal's SIGINT.
    const child = spawn('script', ['-qfec', 'stty cols 120; node bin/theanine.js train mnist --limit 2000 --epochs 1000', '/dev/null'], {
      cwd: root, env: { ...process.env, KERAS_HOME: home }, stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let interrupted = false;
    child.stdin.on('error', () => undefined); // script may be gone before the pipe closes
    const sent = new Promise<void>((done) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (!interrupted && /\] - ETA: /.test(out)) { interrupted = true; child.stdin.write('\x03'); done(); }
      });
    });
    const code = new Promise<number | null>((done) => child.on('close', (c) => done(c)));
    await sent;
    expect(await code).to.equal(130); // ended by SIGINT, at once
    expect(out).to.include('Epoch 1/1000');
    expect(out, 'hides the cursor').to.not.include('\x1b[?25l');
    expect(out, 'turns line wrapping off').to.not.include('\x1b[?7l');
  });

  it('warnings come before the results, without Node\'s --trace-warnings hint', () => {
    const r = spawnSync('sh', ['-c', `node bin/theanine.js ${QUICK.join(' ')} --device gpu 2>&1`], {
      cwd: root, encoding: 'utf8', env: { ...process.env, KERAS_HOME: home, THEANINE_GPU_MODE: 'webasm' },
    });
    if (/gpu\.js is not installed/.test(r.stdout)) return;
    expect(r.status, r.stdout).to.equal(0);
    const warning = r.stdout.indexOf('theanine: device "gpu": kernel');
    expect(warning, r.stdout).to.be.above(-1);
    expect(warning).to.be.below(r.stdout.indexOf('test accuracy:'));
    expect(r.stdout).to.not.include('--trace-warnings');
    expect(r.stdout).to.not.include('Warning:');
  });

  it('--help documents the environment, THEANINE_DEBUG=cli included', () => {
    const r = theanine(['--help']);
    expect(r.status).to.equal(0);
    expect(r.stdout).to.match(/THEANINE_DEBUG=cli\s+print the stack trace/);
    expect(r.stdout).to.match(/KERAS_BACKEND=theanine\|tensorflow/);
    expect(theanine(['train', '--help']).stdout).to.match(/--backend <name>\s+Keras backend \(default: KERAS_BACKEND/);
  });
});
