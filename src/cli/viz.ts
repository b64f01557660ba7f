// `theanine viz [file] [--port N]`: a local server for the viewer page (viewer/ in the
// repository), where theanine runs in the browser on a program one writes or loads: its graph and
// gradient graph, the optimizer pass by pass, the kernels, reverse mode step by step. The page is
// bundled with esbuild from viewer/page.ts (a checkout), or served as built into dist/viewer by
// `npm run build` (an installed package); `npm run site` writes the same files for static hosting.
import { existsSync, readFileSync, readdirSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, InvalidArgumentError, Option } from 'commander';
import { VIEWER_EXAMPLE_NAMES } from '../examples/viewer-programs.js';
import { CliError, type Io } from './io.js';

/** The package root (this file is src/cli/viz.ts or dist/cli/viz.js). */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The viewer's files by path ('index.html', 'viewer.js'), as served and as `npm run site` writes them. */
export type SiteFiles = ReadonlyMap<string, string>;

interface EsbuildApi {
  build(o: Record<string, unknown>): Promise<{ outputFiles: { path: string; text: string }[] }>;
}

/**
 * Bundles viewer/page.ts for the browser with esbuild (no shims: the page imports theanine's
 * sources, and #platform resolves to the browser module by package.json's conditions).
 */
export async function bundleViewer(root = ROOT, { minify = true } = {}): Promise<SiteFiles> {
  let esbuild: EsbuildApi;
  try {
    // A computed specifier: esbuild is a development tool, not a dependency of the package.
    const id = 'esbuild';
    esbuild = (await import(id)) as EsbuildApi;
  } catch (e) {
    throw new CliError(
      `bundling the viewer needs esbuild (npm install --save-dev esbuild): ${(e as Error).message.split('\n')[0]}`,
    );
  }
  const r = await esbuild.build({
    entryPoints: [join(root, 'viewer', 'page.ts')],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    write: false,
    outfile: join(root, 'viewer-out', 'viewer.js'),
    logLevel: 'silent',
    conditions: ['theanine-source'],
    tsconfigRaw: {},
    minify,
    legalComments: 'linked',
  });
  const files = new Map<string, string>([['index.html', readFileSync(join(root, 'viewer', 'index.html'), 'utf8')]]);
  for (const f of r.outputFiles) files.set(f.path.slice(f.path.lastIndexOf('/') + 1), f.text);
  return files;
}

/** The built viewer in `dir` (dist/viewer of an installed package). */
function readBuilt(dir: string): SiteFiles {
  return new Map(readdirSync(dir).map((f) => [f, readFileSync(join(dir, f), 'utf8')] as const));
}

/** The viewer's files: bundled from viewer/ in a checkout, else the prebuilt dist/viewer. */
export async function viewerFiles(root = ROOT): Promise<SiteFiles> {
  if (existsSync(join(root, 'viewer', 'page.ts'))) return bundleViewer(root);
  const built = join(root, 'dist', 'viewer');
  if (existsSync(join(built, 'index.html'))) return readBuilt(built);
  throw new CliError(
    `the viewer is not built: neither ${join(root, 'viewer', 'page.ts')} nor ${join(built, 'index.html')} exists`,
  );
}

/** Writes the viewer's files into `dir` (made if missing): a static site. */
export function writeSite(files: SiteFiles, dir: string): string[] {
  mkdirSync(dir, { recursive: true });
  const written: string[] = [];
  for (const [name, text] of files) {
    writeFileSync(join(dir, name), text);
    written.push(join(dir, name));
  }
  return written;
}

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

export interface VizServer {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Serves `files` on 127.0.0.1:`port` (0: a free port). `program`, when given, is served as
 * /program.js (read again on every request, so a reload shows the file's latest text); the page
 * opens it in its editor instead of an example.
 */
export function serveViewer(files: SiteFiles, port: number, program?: string): Promise<VizServer> {
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const name = path === '/' ? 'index.html' : path.slice(1);
    let body: string | undefined;
    if (name === 'program.js' && program !== undefined) {
      try {
        body = readFileSync(program, 'utf8');
      } catch (e) {
        res.writeHead(500, { 'content-type': TYPES['.txt']! }).end(`cannot read ${program}: ${(e as Error).message}`);
        return;
      }
    } else body = files.get(name);
    if (body === undefined || req.method !== 'GET') {
      res.writeHead(404, { 'content-type': TYPES['.txt']! }).end('not found');
      return;
    }
    const ext = name.slice(name.lastIndexOf('.'));
    res
      .writeHead(200, { 'content-type': TYPES[ext] ?? 'application/octet-stream', 'cache-control': 'no-cache' })
      .end(body);
  });
  return new Promise((ok, fail) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      fail(new CliError(`cannot listen on port ${port}: ${e.code ?? e.message}`)),
    );
    server.listen(port, '127.0.0.1', () => {
      const addr = server.address();
      const p = typeof addr === 'object' && addr !== null ? addr.port : port;
      ok({
        url: `http://127.0.0.1:${p}/`,
        port: p,
        close: () =>
          new Promise((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

function portNumber(v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || n > 65535)
    throw new InvalidArgumentError(
      `expected a port number from 0 to 65535 (0: any free port), got ${JSON.stringify(v)}`,
    );
  return n;
}

export function vizCommand(io: Io): Command {
  return new Command('viz')
    .description(
      'serve the viewer: write K code (or load an example) and see its graph, gradient graph, passes, kernels, and reverse mode (forward mode for a program with tangents) step by step, computed in the page',
    )
    .argument(
      '[file]',
      'a program to open in the editor (JavaScript with K and rand in scope returning { inputs, loss, wrt?, tangents? }; see the examples in the page)',
    )
    .option('--port <n>', 'the port to listen on (0: any free port)', portNumber, 8080)
    .addOption(new Option('--example <name>', 'the example the printed address opens').choices(VIEWER_EXAMPLE_NAMES))
    .action(async (file: string | undefined, f: { port: number; example?: string }) => {
      const program = file === undefined ? undefined : resolve(file);
      if (program !== undefined && !existsSync(program)) throw new CliError(`cannot read ${file}: no such file`);
      const files = await viewerFiles();
      const s = await serveViewer(files, f.port, program);
      const url = f.example !== undefined ? `${s.url}#${f.example}` : s.url;
      io.out(
        `theanine viz: serving the viewer at ${url}${program !== undefined ? ` with ${file}` : ''} (Ctrl-C stops it)\n`,
      );
    });
}
