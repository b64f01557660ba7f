// Every CLI error path: one line on stderr starting `theanine: `, exit code 2, nothing on stdout
// before the failure is known.
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli, runCliWith } from '../helpers/cli.js';

async function expectError(args: string[], pattern: RegExp, opts = {}): Promise<void> {
  const r = await runCliWith(opts, ...args);
  expect(r.code, `exit code of theanine ${args.join(' ')}`).to.equal(2);
  const lines = r.err.trimEnd().split('\n');
  expect(lines, `stderr of theanine ${args.join(' ')}:\n${r.err}`).to.have.length(1);
  expect(lines[0]).to.match(/^theanine: /);
  expect(lines[0]).to.match(pattern);
  expect(r.err).not.to.match(/\n\s+at /); // no stack trace
}

describe('cli: error paths', () => {
  let tmp: string;
  before(() => { tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'theanine-cli-')); });
  after(() => fs.rmSync(tmp, { recursive: true, force: true }));

  it('unknown command', () => expectError(['frobnicate'], /unknown command 'frobnicate'/));
  it('unknown data set', () => expectError(['train', 'cifar'], /'cifar' is invalid .*Allowed choices are mnist/));
  it('missing data set argument', () => expectError(['train'], /missing required argument 'dataset'/));
  it('unknown model', () => expectError(['train', 'mnist', '--model', 'resnet'], /--model .*'resnet' is invalid.*mlp, cnn, lstm/));
  it('unknown device', () => expectError(['train', 'mnist', '--device', 'tpu'], /--device .*'tpu' is invalid.*cpu, gpu/));
  it('unknown backend', () => expectError(['train', 'mnist', '--backend', 'cntk'], /--backend .*'cntk' is invalid/));
  it('unknown option', () => expectError(['train', 'mnist', '--epoch', '3'], /unknown option '--epoch'/));
  for (const [opt, bad] of [
    ['--epochs', '0'], ['--epochs', 'three'], ['--epochs', '1.5'], ['--batch-size', '-4'], ['--batch-size', ''],
    ['--lr', '0'], ['--lr', 'fast'], ['--lr', 'Infinity'], ['--decay', '-1'], ['--seed', '-1'], ['--seed', '2.5'], ['--limit', '0'],
  ] as const) {
    it(`bad number: ${opt} ${JSON.stringify(bad)}`, () => expectError(['train', 'mnist', opt, bad], new RegExp(`${opt} <\\w+>' argument '${bad.replace('.', '\\.')}' is invalid\\. expected`)));
  }
  it('missing data folder', () => expectError(['train', 'mnist', '--data', path.join(tmp, 'nowhere')], /MNIST data not found: .*nowhere.*0\.json is missing/));
  it('data that is not JSON', async () => {
    const dir = path.join(tmp, 'bad-json');
    fs.mkdirSync(dir);
    for (let d = 0; d < 10; d++) fs.writeFileSync(path.join(dir, `${d}.json`), '{"data": [0, 1,');
    await expectError(['train', 'mnist', '--data', dir], /0\.json is not valid JSON/);
  });
  it('data of the wrong size', async () => {
    const dir = path.join(tmp, 'bad-size');
    fs.mkdirSync(dir);
    for (let d = 0; d < 10; d++) fs.writeFileSync(path.join(dir, `${d}.json`), JSON.stringify({ data: [0, 0.5, 1] }));
    await expectError(['train', 'mnist', '--data', dir], /0\.json is malformed: expected .* multiple of 784/);
  });
  it('unknown example', () => expectError(['graph', 'resnet'], /'resnet' is invalid for argument 'example'.*mlp-forward, mlp-gradient, lstm, softmax-crossentropy/));
  it('unknown example for passes', () => expectError(['passes', 'nope'], /'nope' is invalid for argument 'example'/));
  it('--dot and --svg together', () => expectError(['graph', 'mlp-forward', '--dot', '--svg', path.join(tmp, 'x.svg')], /option '--dot' cannot be used with option '--svg/));
  it('an SVG path that cannot be written', () => expectError(['graph', 'mlp-forward', '--svg', path.join(tmp, 'no', 'such', 'dir', 'g.svg')], /cannot write .*g\.svg: ENOENT/));
  it('export without --out', () => expectError(['export', 'test/cli/fixtures/export-model.ts'], /required option '--out <file>' not specified/));
  it('export of a missing file', () => expectError(['export', path.join(tmp, 'nope.ts'), '--out', path.join(tmp, 'm.ts')], /cannot read .*nope\.ts: no such file/));
  it('export with a bad --bin-threshold', () => expectError(['export', 'x.ts', '--out', 'm.ts', '--bin-threshold', 'big'], /--bin-threshold <bytes>' argument 'big' is invalid/));
  it('export of a file whose builder returns no compiled function', () => expectError(
    ['export', 'test/cli/fixtures/export-two.ts', '--out', path.join(tmp, 'm.ts'), '--builder', 'notCompiled'], /notCompiled\(\) returned number; it must return a compiled function/));
  it('bench without a suite', () => expectError(['bench'], /bench runs the benchmark suite of a theanine checkout, which an installed package does not include \(no bench\/run\.ts or bench\/index\.ts under .*clone the repository, run npm install there, then npx theanine bench$/, { benchRoot: tmp }));
  it('bench when the suite fails', async () => {
    // Inside the package, so the suite's `--import tsx` resolves as it does for bench/.
    const root = fs.mkdtempSync(path.join(fileURLToPath(new URL('../../', import.meta.url)), '.bench-test-'));
    try {
      fs.mkdirSync(path.join(root, 'bench'));
      fs.writeFileSync(path.join(root, 'bench', 'run.ts'), 'process.exit(3);\n');
      await expectError(['bench'], /the benchmark suite failed \(exit code 3\)/, { benchRoot: root });
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('cli: help and version', () => {
  it('--version prints the package version and exits 0', async () => {
    const r = await runCli('--version');
    expect(r.code).to.equal(0);
    expect(r.out.trim()).to.match(/^\d+\.\d+\.\d+$/);
  });
  it('train --help lists every option', async () => {
    const r = await runCli('train', '--help');
    expect(r.code).to.equal(0);
    for (const o of ['--model', '--epochs', '--batch-size', '--device', '--lr', '--seed', '--backend']) expect(r.out).to.include(o);
  });
});
