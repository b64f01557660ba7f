// docs/autodiff.md: the tangent graph's listing is what debugprint prints, and the `ts` blocks of
// "The autodiff functions, by example" run as one program (imports merged, 'theanine' meaning this
// package) whose assertions hold; the viewer program of "In the CLI and the viewer" steps through
// forward mode as the viewer's jvp example does.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { autodiff, backend as K, debugprint } from '../../src/index.js';
import { emptyFolder } from '../helpers/exported.js';
import { VIEWER_EXAMPLES } from '../../src/examples/viewer-programs.js';
import { analyze, runProgram, stepThrough } from '../../viewer/model.js';

const page = readFileSync('docs/autodiff.md', 'utf8');

describe('docs/autodiff.md', function () {
  this.timeout(120000);

  it("the tangent graph's listing is debugprint's", () => {
    K.clear_session();
    const listing = /<!-- listing: autodiff-tangent[^>]*-->\n```text\n([\s\S]*?)```/.exec(page);
    expect(listing, 'the page has the autodiff-tangent listing').to.not.equal(null);
    const x = K.placeholder([null, 3], null, 'float32', false, 'x');
    const t = K.placeholder([null, 1], null, 'float32', false, 't');
    const W = K.variable([[0.1], [0.2], [0.3]], 'float32', 'W');
    const loss = K.mean(K.square(K.subtract(K.dot(x, W), t)));
    const V = K.placeholder([3, 1], null, 'float32', false, 'V');
    expect(debugprint(autodiff.jvp(loss, W, V))).to.equal(listing![1]!.trimEnd());
  });

  it("the viewer program with tangents is stepped through in forward mode, with the jvp example's tangents", () => {
    const block = /## In the CLI and the viewer[\s\S]*?```js\n([\s\S]*?)```/.exec(page);
    expect(block, 'the section has a js block').to.not.equal(null);
    const tangentsOf = (code: string) => {
      const s = stepThrough(analyze(runProgram(code)));
      expect(s.mode).to.equal('forward');
      expect(s.check).to.deep.equal({ ok: true });
      return s.forward.map((f) => [f.label, Array.from(f.tangent?.data as ArrayLike<number> ?? [])]);
    };
    const docs = tangentsOf(block![1]!);
    expect(docs.at(-1)![1]![0]).to.be.closeTo(-1.5375, 1e-6);
    expect(docs).to.deep.equal(tangentsOf(VIEWER_EXAMPLES.jvp));
  });

  it('the examples run and their assertions hold', () => {
    const section = page.slice(page.indexOf('## The autodiff functions, by example'));
    const blocks = [...section.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
    expect(blocks.length).to.be.at.least(7);
    const imports = new Set<string>();
    const body: string[] = [];
    for (const line of blocks.join('\n').split('\n')) {
      if (line.startsWith('import ')) imports.add(line.replace("'theanine'", JSON.stringify(resolve('src/index.ts'))));
      else body.push(line);
    }
    const dir = emptyFolder();
    writeFileSync(join(dir, 'main.ts'), [...imports, ...body, "console.log('autodiff docs: ok');"].join('\n'));
    const r = spawnSync(resolve('node_modules/.bin/tsx'), ['main.ts'], { cwd: dir, encoding: 'utf8' });
    expect(r.status, `${r.stdout}${r.stderr}`).to.equal(0);
    expect(r.stdout).to.contain('autodiff docs: ok');
  });
});
