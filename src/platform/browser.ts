// The browser host (see types.ts): no files and no environment. Configuration comes from
// K.set_* calls and setEnvironment, diagnostics go to the console, optional packages are the modules a page hands
// to provideModule, and export returns its text and bytes instead of writing them.
import { environmentOverrides, moduleNotFound, type Platform, provideHooks, providedModules } from './types.js';

function nodeOnly(what: string): Error {
  return new Error(`${what} needs Node.js; this is theanine's browser build (package.json condition "browser")`);
}

function trimNewline(text: string): string {
  return text.endsWith('\n') ? text.slice(0, -1) : text;
}

export const platform: Platform = {
  name: 'browser',
  runtime: 'browser',
  // No environment variables: only the switches a page sets with setEnvironment.
  env: (name) => environmentOverrides.get(name),
  environment: () => Object.fromEntries(environmentOverrides),
  kerasConfigPath: () => undefined,
  readConfig: () => ({ kind: 'missing' }),
  writeConfigDefaults: () => undefined,
  writeStderr: (text) => {
    console.warn(trimNewline(text));
  },
  requireModule(id) {
    if (providedModules.has(id)) return providedModules.get(id);
    throw moduleNotFound(
      id,
      `a browser page imports it itself and hands it over: provideModule(${JSON.stringify(id)}, module)`,
    );
  },
  async importModule(id) {
    if (providedModules.has(id)) return providedModules.get(id);
    throw moduleNotFound(
      id,
      `a browser page imports it itself and hands it over: provideModule(${JSON.stringify(id)}, module)`,
    );
  },
  installHint: (id) => `import it in the page and hand it over: \`provideModule(${JSON.stringify(id)}, module)\``,
  resolveModule: (id) => {
    throw nodeOnly(`resolving the package ${JSON.stringify(id)}`);
  },
  nodeBuiltin: (name, why) => {
    throw nodeOnly(`${why} (node:${name})`);
  },
  cores: () => 1,
  startWorker: () => undefined,
  // A page has no file system: the compile cache on disk is always off.
  cacheFiles: () => undefined,
  readFile: (p) => {
    throw nodeOnly(`reading ${JSON.stringify(p)}`);
  },
  writeFile: (p) => {
    throw nodeOnly(`writing ${JSON.stringify(p)}`);
  },
  join: (...parts) =>
    parts
      .filter((p) => p !== '')
      .join('/')
      .replace(/\/+/g, '/'),
  dirname: (p) => {
    const i = p.lastIndexOf('/');
    return i < 0 ? '.' : i === 0 ? '/' : p.slice(0, i);
  },
  basename: (p) => p.slice(p.lastIndexOf('/') + 1),
  base64(bytes) {
    let s = '';
    const CHUNK = 0x8000;
    for (let i = 0; i < bytes.length; i += CHUNK) s += String.fromCharCode(...bytes.subarray(i, i + CHUNK));
    return btoa(s);
  },
  withoutNewProcessHandlers: (fn) => fn(),
  // A page has no stderr: what a module would write there goes to the console (an Emscripten
  // module's printErr, TensorFlow.js' wasm backend among them). While `fn` runs, console lines
  // that `take` accepts are its; every other line passes through.
  divertStderr(take, fn) {
    const w = watchConsole();
    w.takers.push(take);
    try {
      return fn();
    } finally {
      w.takers.pop();
    }
  },
};

/**
 * console.warn and console.error wrapped once, passing every line through unless a divertStderr
 * call in progress takes it. Installed when TensorFlow.js is handed over (provideModule), so
 * before the page starts tfjs' wasm backend, whose Emscripten module binds console.warn when it
 * starts (a module started earlier keeps the unwrapped one: its statuses stay console lines).
 * On globalThis: two copies of theanine in one page share one wrapper.
 */
interface ConsoleWatch {
  readonly takers: ((text: string) => boolean)[];
}
const WATCH = Symbol.for('theanine.consoleWatch');
function watchConsole(): ConsoleWatch {
  const g = globalThis as { [WATCH]?: ConsoleWatch };
  if (g[WATCH] !== undefined) return g[WATCH];
  const w: ConsoleWatch = { takers: [] };
  g[WATCH] = w;
  const c = console as unknown as Record<'warn' | 'error', (...args: unknown[]) => void>;
  for (const k of ['warn', 'error'] as const) {
    const original = c[k];
    c[k] = (...args: unknown[]) => {
      const take = w.takers.at(-1);
      if (take?.(`${args.map(String).join(' ')}\n`) === true) return;
      original.apply(console, args);
    };
  }
  return w;
}

provideHooks.add((id) => {
  if (id.startsWith('@tensorflow/')) watchConsole();
});
