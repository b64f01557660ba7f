// docs/adding-an-op.md's op matrix is written from the tables themselves (the gradient rules,
// the kernel-IR externs, the gpu's scalar spellings, the tfjs kernels, the ONNX translations), so
// it cannot drift from the code: this test fails when the page differs from what the tables say.
// Regenerate with UPDATE_DOCS=1 (then read the diff).
import { expect } from 'chai';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { builtinOps, getOp, type OpName } from '../../src/ir/registry.js';
import { gradRules } from '../../src/autodiff/rules/index.js';
import { tangentRules } from '../../src/autodiff/tangent/index.js';
import { isFromGradient } from '../../src/autodiff/tangent/linear.js';
import { NO_KERNEL_YET } from '../../src/codegen/no-kernel.js';
import { GPU_CALLS } from '../../src/codegen/gpu/scalar.js';
import { templates } from '../../src/codegen/templates.js';
import { tfKernels } from '../../src/runtime/tfjs/kernels/index.js';
import { onnxTranslations } from '../../src/runtime/onnx/ops/index.js';

const PAGE = join(import.meta.dirname, '../../docs/adding-an-op.md');
const START = '<!-- op-matrix: written by test/docs/op-matrix.test.ts (UPDATE_DOCS=1) -->';
const END = '<!-- op-matrix end -->';

function gradient(op: OpName): string {
  const r = gradRules[op];
  if (r === 'leaf') return 'leaf';
  if (r === 'none') return 'none';
  if (typeof r === 'object' && 'unsupported' in r) return 'unsupported';
  return 'rule';
}

function tangent(op: OpName): string {
  const r = tangentRules[op];
  if (r === 'leaf' || r === 'none') return r;
  if (typeof r === 'object' && 'unsupported' in r) return 'unsupported';
  if (typeof r === 'object' && 'tuple' in r) return 'rule';
  return isFromGradient(r) ? 'from gradient' : 'rule';
}

function row(op: OpName): string {
  const leaf = getOp(op).kind === 'leaf';
  const extern = NO_KERNEL_YET[op] !== undefined;
  const cpu = leaf ? '-' : extern ? 'extern' : 'kernel';
  // An elementwise op without a template is a call of its scalar function, which the gpu needs spelled.
  const noGpuSpelling = getOp(op).kind === 'elementwise' && templates[op] === undefined && GPU_CALLS[op] === undefined;
  const gpu = leaf ? '-' : extern || noGpuSpelling ? 'host' : 'kernel';
  const tf = tfKernels[op] === 'executor' ? 'executor' : 'kernel';
  const o = onnxTranslations[op];
  const onnx = o === 'leaf' ? '-' : typeof o === 'object' && 'unsupported' in o ? 'unsupported' : 'translation';
  return `| \`${op}\` | ${gradient(op)} | ${tangent(op)} | ${cpu} | ${gpu} | ${tf} | ${onnx} |`;
}

function matrix(): string {
  const ops = (Object.keys(builtinOps) as OpName[]).sort();
  return [
    START,
    '',
    '| op | gradient | tangent | cpu, export | gpu | tfjs | ONNX |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...ops.map(row),
    '',
    END,
  ].join('\n');
}

describe('docs/adding-an-op.md: the op matrix', () => {
  it('is what the tables say', () => {
    const page = readFileSync(PAGE, 'utf8');
    const a = page.indexOf(START);
    const b = page.indexOf(END);
    expect(a >= 0 && b > a, `docs/adding-an-op.md needs the markers ${START} ... ${END}`).to.equal(true);
    const want = matrix();
    if (process.env['UPDATE_DOCS'] === '1') writeFileSync(PAGE, page.slice(0, a) + want + page.slice(b + END.length));
    expect(readFileSync(PAGE, 'utf8').slice(a, a + want.length + 1).trimEnd(), 'run with UPDATE_DOCS=1 and read the diff').to.equal(want);
  });
});
