// The package bundled for a browser with esbuild's API, as a user's bundler would: platform
// "browser", no shims, no externals, resolved through package.json's own "exports"/"imports".
import * as esbuild from 'esbuild';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Bundles `entry` (resolved from the repository root) for the browser. `source`: the
 * "theanine-source" condition maps the package's entries to src/ (else dist/, as published).
 * `tsconfigRaw: {}` keeps tsconfig's Node-side `paths` out of it.
 */
export async function bundleForBrowser(entry: string, { minify = false, source = true } = {}): Promise<{ text: string; inputs: string[] }> {
  const r = await esbuild.build({
    stdin: { contents: entry, resolveDir: root, loader: 'ts', sourcefile: 'entry.ts' },
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    write: false,
    logLevel: 'silent',
    conditions: source ? ['theanine-source'] : [],
    tsconfigRaw: {},
    metafile: true,
    minify,
  });
  return { text: r.outputFiles[0]!.text, inputs: Object.keys(r.metafile.inputs) };
}
