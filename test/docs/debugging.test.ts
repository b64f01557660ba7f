// docs/debugging.md runs: its `ts` blocks are one program (imports merged and hoisted, 'theanine'
// meaning this package's sources), run with tsx in an empty folder; their own checks throw on a wrong result.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { emptyFolder } from '../helpers/exported.js';

function program(markdown: string, theanine: string): string {
  const blocks = [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
  expect(blocks.length).to.be.at.least(4);
  const named = new Map<string, Set<string>>();
  const body: string[] = [];
  for (const line of blocks.join('\n').split('\n')) {
    const m = /^import \{ ([^}]+) \} from '([^']+)';$/.exec(line);
    if (m === null) { body.push(line); continue; }
    const from = m[2] === 'theanine' ? theanine : m[2]!;
    for (const n of m[1]!.split(',').map((s) => s.trim())) named.set(from, (named.get(from) ?? new Set()).add(n));
  }
  return [...[...named].map(([from, ns]) => `import { ${[...ns].join(', ')} } from ${JSON.stringify(from)};`), ...body].join('\n');
}

describe('docs/debugging.md', function () {
  this.timeout(120000);

  it('its examples run: the planted rule and kernel are named, the NaN guard fires, the profile has kernels', () => {
    const dir = emptyFolder();
    writeFileSync(join(dir, 'main.ts'), program(readFileSync('docs/debugging.md', 'utf8'), resolve('src/index.ts')));
    const r = spawnSync(resolve('node_modules/.bin/tsx'), ['--conditions=theanine-source', 'main.ts'], { cwd: dir, encoding: 'utf8', env: { ...process.env, THEANINE_MODE: '', THEANINE_NAN_GUARD: '' } });
    expect(r.status, `${r.stdout}${r.stderr}`).to.equal(0);
    expect(r.stdout).to.match(/BadOptimization: rewrite "my_broken_rule" replaced exp_\d+ \(exp, float32 \(2, 3\)\)/);
    expect(r.stdout).to.match(/fused\{sin,twice_wrong\} \[ 0 \]/);
    expect(r.stdout).to.match(/NaN guard: function "function": kernel \S*log\S* \(node [^)]+\) wrote NaN at element 0 from finite inputs; the K call is K\.log, at .*main\.ts:\d+:\d+/);
    expect(r.stdout).to.match(/^matmul 16x64x32 \[dot\]: [\d.]+ ms, 655360 flops$/m);
    expect(r.stdout).to.match(/profile of function "function" on cpu: 10 calls/);
  });
});
