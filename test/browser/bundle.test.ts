// The package bundled for a browser: esbuild with platform "browser" on
// `import { backend as K } from 'theanine'`, no shims, no externals. Any `node:*` import left
// reachable fails the build (esbuild cannot resolve built-ins for the browser); the bundle must
// also hold no `process`/`Buffer` use and take the platform module's browser half. Resolved
// through package.json's own "exports"/"imports" with the "theanine-source" condition, which
// maps each entry to its TypeScript source (the published package maps the same conditions to dist/).
import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bundleForBrowser } from '../helpers/bundle.js';
import { needs } from '../helpers/needs.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

describe('browser bundle (esbuild, platform "browser")', function () {
  this.timeout(120000);
  let bundle: { text: string; inputs: string[] };

  before(async () => {
    bundle = await bundleForBrowser("import { backend as K } from 'theanine';\nexport { K };\n");
  });

  it('builds with no node: import and no shim', () => {
    expect(bundle.text.length).to.be.greaterThan(100000);
    expect(bundle.inputs.filter((f) => f.startsWith('node:'))).to.deep.equal([]);
  });

  it('pulls in no optional peer (a user who did not install them can bundle it)', () => {
    const peers = ['@viz-js/viz', 'gpu.js', '@tensorflow/', 'ts-morph', 'onnxruntime', 'gl/'];
    expect(bundle.inputs.filter((f) => peers.some((p) => f.includes(`node_modules/${p}`)))).to.deep.equal([]);
  });

  it('takes the browser platform module, never the Node one', () => {
    expect(bundle.inputs).to.include('src/platform/browser.ts');
    expect(bundle.inputs).not.to.include('src/platform/node.ts');
  });

  it('reads no process.env / process.stderr and uses no Buffer', () => {
    // Only theanine's own sources: a dependency's guarded feature test (`typeof process`) is its business.
    const own = bundle.inputs.filter((f) => f.startsWith('src/'));
    expect(own.length).to.be.greaterThan(50);
    for (const f of own) {
      // Comments and template strings (the onnx worker's source, run in a Node worker) are not code here.
      const text = readFileSync(root + f, 'utf8').replace(/^\s*(\/\/|\/?\*).*$/gm, '').replace(/`[^`]*`/g, '``');
      expect(text, f).not.to.match(/\bprocess\s*[.[]|\bBuffer\s*\.|(?<![.\w])require\s*\(\s*['"]|createRequire/);
    }
  });

  it('fails on a node: import (the check above can fail)', async () => {
    let error: unknown;
    try {
      await bundleForBrowser("import { existsSync, readFileSync } from 'node:fs';\nconsole.log(readFileSync);\n");
    } catch (e) {
      error = e;
    }
    expect(String(error)).to.match(/node:fs/);
  });

  it('builds from dist/ as published (no "theanine-source" condition)', async function () {
    needs(this, 'bundling dist/ for the browser', existsSync(root + 'dist/platform/browser.js') ? undefined : 'dist/ is not built with the platform module (npm run build)');
    const dist = await bundleForBrowser("import { backend as K } from 'theanine';\nexport { K };\n", { source: false });
    expect(dist.inputs).to.include('dist/platform/browser.js');
    expect(dist.inputs.filter((f) => f.startsWith('node:') || f.startsWith('src/'))).to.deep.equal([]);
  });

  it('maps #platform by the "browser" and "node" conditions in package.json', () => {
    const pkg = JSON.parse(readFileSync(root + 'package.json', 'utf8')) as { imports: Record<string, Record<string, Record<string, string>>> };
    const p = pkg.imports['#platform']!;
    expect(p['browser']).to.deep.equal({ 'theanine-source': './src/platform/browser.ts', default: './dist/platform/browser.js' });
    expect(p['node']).to.deep.equal({ 'theanine-source': './src/platform/node.ts', default: './dist/platform/node.js' });
  });
});
