// docs/adding-an-op.md's batching matrix is written from vmap's rule table, so it cannot drift
// from the code: this test fails when the page differs. Regenerate with UPDATE_DOCS=1.
import { expect } from 'chai';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { builtinOps, type OpName } from '../../src/ir/registry.js';
import { batchRules } from '../../src/autodiff/vmap/index.js';

const PAGE = join(import.meta.dirname, '../../docs/adding-an-op.md');
const START = '<!-- batch-matrix: written by test/docs/batch-matrix.test.ts (UPDATE_DOCS=1) -->';
const END = '<!-- batch-matrix end -->';

function kind(op: OpName): string {
  const r = batchRules[op];
  if (r === 'leaf') return 'leaf';
  if (typeof r === 'function') return 'rule';
  if ('tuple' in r) return 'rule (tuple)';
  if ('loop' in r) return 'loop';
  return 'unsupported';
}

function matrix(): string {
  const ops = (Object.keys(builtinOps) as OpName[]).sort();
  return [START, '', '| op | batching |', '| --- | --- |', ...ops.map((op) => `| \`${op}\` | ${kind(op)} |`), '', END].join('\n');
}

describe('docs/adding-an-op.md: the batching matrix', () => {
  it('is what vmap\'s rule table says', () => {
    const page = readFileSync(PAGE, 'utf8');
    const a = page.indexOf(START);
    const b = page.indexOf(END);
    expect(a >= 0 && b > a, `docs/adding-an-op.md needs the markers ${START} ... ${END}`).to.equal(true);
    const want = matrix();
    if (process.env['UPDATE_DOCS'] === '1') writeFileSync(PAGE, page.slice(0, a) + want + page.slice(b + END.length));
    expect(readFileSync(PAGE, 'utf8').slice(a, a + want.length + 1).trimEnd(), 'run with UPDATE_DOCS=1 and read the diff').to.equal(want);
  });
});
