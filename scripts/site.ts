// `npm run site [dir]`: the viewer as a static site (default: site/), for docs hosting; the
// package build writes the same files to dist/viewer, which `theanine viz` serves when installed.
import { resolve } from 'node:path';
import { bundleViewer, writeSite } from '../src/cli/viz.js';

const dir = resolve(process.argv[2] ?? 'site');
const written = writeSite(await bundleViewer(), dir);
process.stdout.write(`wrote ${written.length} files to ${dir}: ${written.map((w) => w.slice(dir.length + 1)).join(', ')}\n`);
