// Builds headless GL (`gl`, gpu.js' GL context in Node) from its C++ source. A clone's
// `npm install` leaves it unbuilt (package.json's allowScripts denies its install script), so
// the install takes a minute; the gpu device then runs in gpu.js' WebAssembly mode and the GL
// tests skip with a line saying so. CI runs this (`npm run setup:gl`); it needs a C++ compiler,
// pkg-config and the X11 headers (Debian: libxi-dev libx11-dev libxext-dev pkg-config).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const gl = dirname(require.resolve('gl/package.json'));
// npm passes its own node-gyp to scripts it runs; otherwise look for npm's bundled copy.
const candidates = [
  process.env.npm_config_node_gyp,
  join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
  '/usr/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js',
].filter((p) => p !== undefined && existsSync(p));
if (candidates.length === 0) {
  console.error('setup:gl: node-gyp not found (run it through npm: `npm run setup:gl`)');
  process.exit(1);
}
const r = spawnSync(process.execPath, [candidates[0], 'rebuild', `--jobs=${process.env.JOBS ?? 'max'}`], { cwd: gl, stdio: 'inherit' });
if (r.status !== 0) {
  console.error(`setup:gl: building gl failed (exit ${r.status}); it needs a C++ compiler, pkg-config and the X11 headers`);
  process.exit(r.status ?? 1);
}
console.log(`setup:gl: built ${join(gl, 'build', 'Release', 'webgl.node')}`);
