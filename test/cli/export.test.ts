// `theanine export <file> --out model.ts` as a function (the CLI registers exportCommand).
import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportCommand, exportOnnxCommand, nameFromPath } from '../../src/cli/export.js';
import { runOnnx, checkOperators, decoded } from '../helpers/onnx.js';
import build, { INPUT } from './fixtures/export-model.js';
import { expectClose } from '../helpers/assert.js';
import { emptyFolder, runCalls, typecheck } from '../helpers/exported.js';

describe('theanine export', function () {
  this.timeout(120000);

  it('writes the module a model file builds, which runs from an empty folder and matches the function', async () => {
    const dir = emptyFolder();
    const out = join(dir, 'my-model.ts');
    const r = await exportCommand('test/cli/fixtures/export-model.ts', out);
    expect(r).to.deep.equal({ name: 'my_model', written: [out] });
    const src = readFileSync(out, 'utf8');
    expect(src).to.match(/export function my_model\(x: Float32Array\): \[Float32Array\]/);
    typecheck(dir, [{ name: 'my-model' }]);
    const [got] = runCalls(dir, [{ module: 'my-model', exportName: 'my_model', inputs: [INPUT] }]);
    expectClose(got![0]!, Array.from(build()([INPUT])[0]!.data), { atol: 1e-6, rtol: 0 });
  });

  it('--format onnx writes the function as an ONNX model that ONNX Runtime runs to the same numbers', async () => {
    const dir = emptyFolder();
    const out = join(dir, 'model.onnx');
    const r = await exportOnnxCommand('test/cli/fixtures/export-model.ts', out, { opset: 18 });
    expect(r.written).to.deep.equal([out]);
    expect(r.opset).to.equal(18);
    const bytes = new Uint8Array(readFileSync(out));
    expect(bytes.length).to.equal(r.bytes);
    const m = decoded(bytes);
    expect(m.graph.name).to.equal('model');
    checkOperators(m);
    const [got] = runOnnx(bytes, { x: INPUT }, ['output_0']);
    expectClose(got!, build()([INPUT])[0]!, { atol: 1e-6, rtol: 1e-6 });
  });

  it('takes --name, --builder and --bin-threshold', async () => {
    const dir = emptyFolder();
    const r = await exportCommand('test/cli/fixtures/export-two.ts', join(dir, 'm.ts'), { builder: 'small', name: 'double', binThreshold: 0 });
    expect(r.name).to.equal('double');
    expect(r.written).to.deep.equal([join(dir, 'm.ts')]); // 3 floats of data: array literals, no .bin
    expect(readFileSync(join(dir, 'm.ts'), 'utf8')).to.match(/export function double\(x: Float32Array\)/);
    const big = await exportCommand('test/cli/fixtures/export-model.ts', join(dir, 'big.ts'), { binThreshold: 0 });
    expect(big.written).to.deep.equal([join(dir, 'big.ts'), join(dir, 'big.bin')]);
    expect(existsSync(join(dir, 'big.bin'))).to.equal(true);
    // a hidden output file was refused for a binFile the user never gave
    const hidden = await exportCommand('test/cli/fixtures/export-model.ts', join(dir, '.hidden.ts'), { binThreshold: 0 });
    expect(hidden.name).to.equal('hidden');
    expect(hidden.written).to.deep.equal([join(dir, '.hidden.ts'), join(dir, '.hidden.bin')]);
    expect(readFileSync(join(dir, '.hidden.ts'), 'utf8')).to.contain('.hidden.bin');
  });

  it('says what is wrong with the file', async () => {
    const dir = emptyFolder();
    const fail = async (p: Promise<unknown>, re: RegExp) => {
      try { await p; } catch (e) { expect((e as Error).message).to.match(re); return; }
      expect.fail('expected an error');
    };
    await fail(exportCommand('nope.ts', join(dir, 'm.ts')), /cannot read nope.ts: no such file/);
    await fail(exportCommand('test/cli/fixtures/export-two.ts', join(dir, 'm.ts')), /must export a function .* it exports the functions (small, notCompiled|notCompiled, small): say which with --builder/);
    await fail(exportCommand('test/cli/fixtures/export-two.ts', join(dir, 'm.ts'), { builder: 'notCompiled' }), /notCompiled\(\) returned number; it must return a compiled function/);
    await fail(exportCommand('test/cli/fixtures/export-two.ts', join(dir, 'm.ts'), { builder: 'absent' }), /has no exported function "absent"/);
  });

  it('names modules after their file', () => {
    expect(nameFromPath('out/model.ts')).to.equal('model');
    expect(nameFromPath('my-net.v2.ts')).to.equal('my_net_v2');
    expect(nameFromPath('2d.ts')).to.equal('model_2d');
  });
});
