// An elementwise op is one row (src/ir/ops/elementwise.ts): its names in the other backends are
// data there, and the backends' tables derive from the rows. These tests check the names a
// compiler cannot (ONNX operators are strings; the tfjs names are checked by the type-checker in
// src/runtime/tfjs/kernels/elementwise.ts), and keep the op's definition in few places: the files
// of src/ that name `tanh`, as a word in theanine's spelling, are its row, its gradient rule,
// K.tanh, the gpu's helper for it and the SIMD tier's vector approximation of it. src/examples is
// left out: its models call K.tanh, they do not define it.
import { expect } from 'chai';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { elementwiseOps, rowsSpelledIn } from '../../../src/ir/ops/elementwise.js';
import { ONNX_OPERATORS } from '../../../src/runtime/onnx/operators.js';
import { KERNEL_ROWS, type ScalarOp } from '../../../src/codegen/kernel/expr.js';
import { opCode } from '../../../src/codegen/cpu/js.js';
import { gpuOpCode } from '../../../src/codegen/gpu/scalar.js';
import { ONNX_IMPORTABLE } from '../../../src/api/onnx.js';

const SRC = join(import.meta.dirname, '../../../src');

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? tsFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

describe('elementwise rows', () => {
  it('every ONNX name of a row is an ai.onnx operator, and importOnnx reads it', () => {
    const names = rowsSpelledIn('onnx').map((r) => r.name);
    expect(names.length).to.be.greaterThan(20);
    expect(names.filter((n) => ONNX_OPERATORS[n] === undefined)).to.deep.equal([]);
    expect(names.filter((n) => !ONNX_IMPORTABLE.includes(n))).to.deep.equal([]);
  });

  it('every kernel op of a row is spelled on the cpu, and on the gpu unless it calls a cpu runtime helper', () => {
    const rows = rowsSpelledIn('kernel');
    expect(new Set(rows.map((r) => r.name)).size, 'one row per kernel op').to.equal(rows.length);
    for (const { name, row } of rows) {
      const args = ['a', 'b'].slice(0, row.arity as number);
      expect(KERNEL_ROWS.get(name as ScalarOp)).to.equal(row);
      const cpu = opCode(name as ScalarOp, args);
      expect(cpu, name).to.match(row.arity === 1 ? /\ba\b/ : /\ba\b.*\bb\b/);
      const gpu = gpuOpCode(name as ScalarOp, args);
      expect(gpu, `${name} on the gpu`).to.be.a('string');
      expect(gpu!, `${name} on the gpu`).not.to.match(/\brt\./);
    }
    expect(opCode('tanh', ['x'])).to.equal('Math.tanh(x)');
    expect(opCode('add', ['x', 'y'])).to.equal('(x + y)');
    expect(gpuOpCode('tanh', ['x'])).to.equal('t_tanh(x)');
    expect(gpuOpCode('add', ['x', 'y'])).to.equal('(x + y)');
  });

  it('a row names a kernel op and its JavaScript together', () => {
    for (const [op, row] of Object.entries(elementwiseOps)) {
      const s = row.spelling as { kernel?: string; js?: string };
      expect(s.kernel === undefined, op).to.equal(s.js === undefined);
    }
  });

  it('at most 5 files of src/ (outside src/examples) name tanh', () => {
    const naming = tsFiles(SRC).filter((f) => !relative(SRC, f).startsWith('examples/') && /\btanh\b/.test(readFileSync(f, 'utf8'))).map((f) => relative(SRC, f)).sort();
    expect(naming).to.include('ir/ops/elementwise.ts');
    expect(naming.length, `files naming tanh: ${naming.join(', ')}`).to.be.at.most(5);
  });
});
