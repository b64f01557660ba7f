// The browser host (see types.ts): no files and no environment. Configuration comes from
// K.set_* calls, diagnostics go to the console, optional packages are the modules a page hands
// to provideModule, and export returns its text and bytes instead of writing them.
import { moduleNotFound, type Platform, providedModules } from './types.js';

function nodeOnly(what: string): Error {
  return new Error(`${what} needs Node.js; this is theanine's browser build (package.json condition "browser")`);
}

function trimNewline(text: string): string {
  return text.endsWith('\n') ? text.slice(0, -1) : text;
}

export const platform: Platform = {
  name: 'browser',
  env: () => undefined,
  environment: () => ({}),
  kerasConfigPath: () => undefined,
  readConfig: () => ({ kind: 'missing' }),
  writeConfigDefaults: () => undefined,
  writeStderr: (text) => { console.warn(trimNewline(text)); },
  requireModule(id) {
    if (providedModules.has(id)) return providedModules.get(id);
    throw moduleNotFound(id, `a browser page imports it itself and hands it over: provideModule(${JSON.stringify(id)}, module)`);
  },
  async importModule(id) {
    if (providedModules.has(id)) return providedModules.get(id);
    throw moduleNotFound(id, `a browser page imports it itself and hands it over: provideModule(${JSON.stringify(id)}, module)`);
  },
  installHint: (id) => `import it in the page and hand it over: \`provideModule(${JSON.stringify(id)}, module)\``,
  resolveModule: (id) => { throw nodeOnly(`resolving the package ${JSON.stringify(id)}`); },
  nodeBuiltin: (name, why) => { throw nodeOnly(`${why} (node:${name})`); },
  cores: () => 1,
  startWorker: () => undefined,
  readFile: (p) => { throw nodeOnly(`reading ${JSON.stringify(p)}`); },
  writeFile: (p) => { throw nodeOnly(`writing ${JSON.stringify(p)}`); },
  join: (...parts) => parts.filter((p) => p !== '').join('/').replace(/\/+/g, '/'),
  dirname: (p) => { const i = p.lastIndexOf('/'); return i < 0 ? '.' : i === 0 ? '/' : p.slice(0, i); },
  basename: (p) => p.slice(p.lastIndexOf('/') + 1),
  base64(bytes) {
    let s = '';
    const CHUNK = 0x8000;
    for (let i = 0; i < bytes.length; i += CHUNK) s += String.fromCharCode(...bytes.subarray(i, i + CHUNK));
    return btoa(s);
  },
  withoutNewProcessHandlers: (fn) => fn(),
  divertStderr: (_take, fn) => fn(),
};
