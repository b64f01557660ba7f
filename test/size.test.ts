// Size limits on src/: a file of more than MAX_FILE_LINES lines, or a function of more than
// MAX_FUNCTION_LINES, is a sign that it does two things. Lines are counted as Biome's formatter
// writes them (width 120); the limits are a little above the largest formatted today (a 795-line
// file, a 319-line function), so they stop growth without forcing a split.
import { expect } from 'chai';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ts } from 'ts-morph';

const SRC = join(import.meta.dirname, '../src');
const MAX_FILE_LINES = 800;
const MAX_FUNCTION_LINES = 320;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

describe('src/ sizes', () => {
  const all = files(SRC);

  it(`no file is longer than ${MAX_FILE_LINES} lines`, () => {
    expect(all.length).to.be.greaterThan(100);
    const long = all.map((f) => [relative(SRC, f), readFileSync(f, 'utf8').split('\n').length] as const).filter(([, n]) => n > MAX_FILE_LINES);
    expect(long.map(([f, n]) => `${f}: ${n} lines`)).to.deep.equal([]);
  });

  it(`no function is longer than ${MAX_FUNCTION_LINES} lines`, () => {
    const long: string[] = [];
    let seen = 0;
    for (const f of all) {
      const sf = ts.createSourceFile(f, readFileSync(f, 'utf8'), ts.ScriptTarget.Latest, true);
      const visit = (n: ts.Node): void => {
        if (ts.isFunctionLike(n) && 'body' in n && n.body !== undefined) {
          seen++;
          const first = sf.getLineAndCharacterOfPosition(n.getStart()).line;
          const last = sf.getLineAndCharacterOfPosition(n.getEnd()).line;
          if (last - first + 1 > MAX_FUNCTION_LINES) long.push(`${relative(SRC, f)}:${first + 1}: ${last - first + 1} lines`);
        }
        ts.forEachChild(n, visit);
      };
      visit(sf);
    }
    expect(seen, 'functions found').to.be.greaterThan(1000);
    expect(long).to.deep.equal([]);
  });
});
