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
import { NO_KERNEL_YET } from '../../src/codegen/lower/no-kernel.js';
import { GPU_CALLS } from '../../src/codegen/gpu/scalar.js';
import { COMPENSATED } from '../../src/codegen/gpu/render.js';
import type { ReduceOp } from '../../src/codegen/kernel/expr.js';
import { templates } from '../../src/codegen/lower/templates.js';
import { tfKernels } from '../../src/runtime/tfjs/kernels/index.js';
import { onnxTranslations } from '../../src/runtime/onnx/ops/index.js';
import { reductionRows } from '../../src/ir/ops/reduce.js';

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

const RED_START = '<!-- reduction-matrix: written by test/docs/op-matrix.test.ts (UPDATE_DOCS=1) -->';
const RED_END = '<!-- reduction-matrix end -->';

/** The reduction rows (src/ir/ops/reduce.ts) as each backend spells them. */
function reductionMatrix(): string {
  const code = (x: string | undefined) => (x === undefined ? '-' : `\`${x.replace(/\|/g, '\\|')}\``);
  return [
    RED_START,
    '',
    '| reduction | family | identity | kernel fold | cpu (JavaScript) | gpu.js | WebAssembly SIMD | tfjs | ONNX | gradient |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...reductionRows.map((r) => {
      const sp = r.spelling;
      const fold = sp.mean === true ? `${sp.kernel} / count` : sp.kernel;
      return `| \`${r.name}\` | ${r.family} | ${r.identity} | ${fold} | ${code(sp.js)} | ${COMPENSATED.has(r.name as ReduceOp) ? 'Kahan-compensated sum' : code(sp.gpu ?? sp.js)} | ${code(sp.wasm)} | \`tf.${sp.tf}\` | ${sp.onnx} | ${gradient(r.name as OpName)} |`;
    }),
    '',
    RED_END,
  ].join('\n');
}

function section(page: string, start: string, end: string, want: string): string {
  const a = page.indexOf(start);
  const b = page.indexOf(end);
  expect(a >= 0 && b > a, `docs/adding-an-op.md needs the markers ${start} ... ${end}`).to.equal(true);
  return page.slice(0, a) + want + page.slice(b + end.length);
}

describe('docs/adding-an-op.md: the op matrix', () => {
  it('its reduction matrix is what the rows say', () => {
    const page = readFileSync(PAGE, 'utf8');
    const want = section(page, RED_START, RED_END, reductionMatrix());
    if (process.env['UPDATE_DOCS'] === '1') writeFileSync(PAGE, want);
    expect(readFileSync(PAGE, 'utf8'), 'run with UPDATE_DOCS=1 and read the diff').to.equal(want);
  });

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
