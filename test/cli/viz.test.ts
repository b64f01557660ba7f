// `theanine viz`: the server serves the bundled page, the program file given on the command line,
// and nothing else; bad ports and missing files are one-line errors. (The page itself is driven
// in Chromium by test/browser/viewer.test.ts.)
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serveViewer, viewerFiles, writeSite, type SiteFiles, type VizServer } from '../../src/cli/viz.js';
import { runCli } from '../helpers/cli.js';

describe('theanine viz', function () {
  this.timeout(120000);
  let files: SiteFiles;
  let server: VizServer | undefined;
  let dir: string;

  before(async () => {
    files = await viewerFiles();
    dir = mkdtempSync(join(tmpdir(), 'theanine-viz-'));
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('the page bundles for the browser: no node: import, theanine and the editor inside', () => {
    expect([...files.keys()]).to.include.members(['index.html', 'viewer.js']);
    const js = files.get('viewer.js')!;
    expect(js).to.not.match(/from\s*["']node:/);
    expect(js).to.contain('theanineViewer');
    expect(js).to.contain('cm-editor');
    expect(files.get('index.html')).to.contain('src="viewer.js"');
  });

  it('serves the page and the bundle on a free port; 404 for anything else', async () => {
    server = await serveViewer(files, 0);
    expect(server.port).to.be.above(0);
    const page = await fetch(server.url);
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-type')).to.contain('text/html');
    expect(await page.text()).to.equal(files.get('index.html'));
    const js = await fetch(`${server.url}viewer.js`);
    expect(js.headers.get('content-type')).to.contain('text/javascript');
    expect((await js.text()).length).to.equal(files.get('viewer.js')!.length);
    expect((await fetch(`${server.url}program.js`)).status).to.equal(404);
    expect((await fetch(`${server.url}../package.json`)).status).to.equal(404);
  });

  it('serves the file it was given as program.js, read again on each request', async () => {
    const file = join(dir, 'prog.js');
    writeFileSync(file, 'return { inputs: { x: [1] }, loss: (x) => K.sum(x) };\n');
    server = await serveViewer(files, 0, file);
    expect(await (await fetch(`${server.url}program.js`)).text()).to.contain('K.sum(x)');
    writeFileSync(file, 'return { inputs: { x: [1] }, loss: (x) => K.mean(x) };\n');
    expect(await (await fetch(`${server.url}program.js`)).text()).to.contain('K.mean(x)');
  });

  it('a port in use is a clear error', async () => {
    server = await serveViewer(files, 0);
    let err: unknown;
    try {
      await serveViewer(files, server.port);
    } catch (e) {
      err = e;
    }
    expect(String(err)).to.match(new RegExp(`cannot listen on port ${server.port}: EADDRINUSE`));
  });

  it('the command: bad --port and a missing file are one-line errors, exit 2', async () => {
    const bad = await runCli('viz', '--port', 'http');
    expect(bad.code).to.equal(2);
    expect(bad.err).to.match(/^theanine: .*--port <n>.*expected a port number from 0 to 65535 \(0: any free port\), got "http"\n$/);
    const missing = await runCli('viz', join(dir, 'nope.js'), '--port', '0');
    expect(missing.code).to.equal(2);
    expect(missing.err).to.match(/^theanine: cannot read .*nope\.js: no such file\n$/);
  });

  it('an installed package (no viewer/ sources) serves the page the build put in dist/viewer', async () => {
    const pkg = join(dir, 'installed');
    writeSite(files, join(pkg, 'dist', 'viewer'));
    const served = await viewerFiles(pkg);
    expect([...served.keys()].sort()).to.deep.equal([...files.keys()].sort());
    expect(served.get('viewer.js')).to.equal(files.get('viewer.js'));
    let err: unknown;
    try {
      await viewerFiles(join(dir, 'empty'));
    } catch (e) {
      err = e;
    }
    expect(String(err)).to.match(/the viewer is not built: neither .*viewer\/page\.ts nor .*dist\/viewer\/index\.html exists/);
  });

  it('npm run site\'s writer puts the same files in a folder', () => {
    const out = join(dir, 'site');
    const written = writeSite(files, out);
    expect(written.length).to.equal(files.size);
    expect(readFileSync(join(out, 'index.html'), 'utf8')).to.equal(files.get('index.html'));
  });
});
