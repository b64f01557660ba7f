#!/usr/bin/env node
// Lists the Keras backend names of api/functions.tsv (the seed pages) and api/keras23.tsv (what
// Keras 2.3.1's `K` exposes under TensorFlow; rows noted "NOT exported" are left out) that the built
// package does not export.
// Usage (from the project root, after `npm run build`): npm run coverage:api
// (A copy of the team's shared tool and lists, so that it runs in a clone.)
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const names = readFileSync(join(here, 'api', 'functions.tsv'), 'utf8')
  .split('\n').slice(1).map((l) => l.split('\t')[0]).filter(Boolean);
const pkg = JSON.parse(readFileSync(join(process.cwd(), 'package.json'), 'utf8'));
const entry = typeof pkg.exports === 'string' ? pkg.exports
  : pkg.exports?.['.']?.import ?? pkg.exports?.['.']?.default ?? pkg.exports?.['.'] ?? pkg.main;
if (typeof entry !== 'string') { console.log('api-coverage: package.json names no entry point'); process.exit(1); }
const mod = await import(pathToFileURL(join(process.cwd(), entry)).href);
const K = mod.backend ?? mod.default?.backend;
if (!K) { console.log('api-coverage: the package root exports no `backend` namespace'); process.exit(1); }
const missing = names.filter((n) => typeof K[n] !== 'function');
console.log(`api-coverage: ${names.length - missing.length} of ${names.length} Keras backend names of the seed pages exported`);
if (missing.length) console.log('missing: ' + missing.join(' '));
const k23 = readFileSync(join(here, 'api', 'keras23.tsv'), 'utf8').split('\n').slice(1)
  .map((l) => l.split('\t')).filter((c) => c[0] && !/^NOT exported/.test(c[3] ?? '')).map((c) => c[0]);
const missing23 = k23.filter((n) => typeof K[n] !== 'function');
console.log(`api-coverage: ${k23.length - missing23.length} of ${k23.length} Keras 2.3.1 backend names exported`);
if (missing23.length) console.log('missing (Keras 2.3.1): ' + missing23.join(' '));
process.exit(missing.length || missing23.length ? 1 : 0);
