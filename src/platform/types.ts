// What theanine needs from its host that differs between Node and a browser. Two modules
// implement it (node.ts, browser.ts); package.json's "imports" map `#platform` to one of them by
// the "browser"/"node" conditions, as bundlers and Node resolve them. Everything else in src/
// reaches Node only through here, so a browser bundle carries no `node:*` import and no `process`.

/** The text of a configuration file, or why there is none. */
export type ConfigRead =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'missing' }
  /** Not a regular file (`what`: 'a FIFO', 'a directory', ...); nothing was read from it. */
  | { readonly kind: 'special'; readonly what: string };

export interface Platform {
  /** Which host this module serves. */
  readonly name: 'node' | 'browser';
  /** The JavaScript runtime and its version (`node v20.20.2`; `browser` on a page): part of tuning-cache keys. */
  readonly runtime: string;
  /** An environment variable (a browser has none: undefined). */
  env(name: string): string | undefined;
  /** The whole environment, for the configuration loader (a browser: empty). */
  environment(): Readonly<Record<string, string | undefined>>;
  /** The keras.json path from KERAS_HOME or the home folder; undefined where there is no file system. */
  kerasConfigPath(env: Readonly<Record<string, string | undefined>>, home: string | undefined): string | undefined;
  /** Reads a configuration file without blocking on FIFOs or devices; other errors are thrown. */
  readConfig(file: string): ConfigRead;
  /** Writes `text` as a new file (never over an existing one), making its folder; failures are ignored. */
  writeConfigDefaults(file: string, text: string): void;
  /** Diagnostics (debug lines, warnings, pass reports): stderr in Node, the console in a browser. */
  writeStderr(text: string): void;
  /**
   * A package loaded synchronously on first use (the optional peers: gpu.js, TensorFlow.js,
   * ts-morph). Node: require from theanine's folder. A browser: only modules handed to
   * `provideModule` (a page imports them itself); otherwise an error naming the package.
   * Errors carry code 'MODULE_NOT_FOUND' when the package is absent, as Node's do.
   */
  requireModule(id: string, from?: string): unknown;
  /**
   * A package loaded asynchronously (@viz-js/viz for svg()). Node: a dynamic import of a computed
   * specifier, so that bundlers do not pull the optional package in; a browser: only provided modules.
   */
  importModule(id: string): Promise<unknown>;
  /** How to get an optional package here: `npm install` in Node, provideModule in a page. */
  installHint(id: string): string;
  /** The file a package id resolves to (Node only; a browser throws). */
  resolveModule(id: string): string;
  /** A Node built-in module (`worker_threads`, ...); a browser throws naming `why`. */
  nodeBuiltin(name: string, why: string): unknown;
  /** Cores this process may use (Node: os.availableParallelism; a browser: 1, as its kernels run on the page's thread). */
  cores(): number;
  /**
   * Starts a worker thread running `source` (a CommonJS script; `workerData` is what the
   * script's require('node:worker_threads').workerData holds), not keeping the process alive.
   * A browser returns undefined: compiled kernels there run on the calling thread.
   */
  startWorker(source: string, workerData: unknown): PlatformWorker | undefined;
  /** A file's bytes (Node only). */
  readFile(path: string): Uint8Array;
  /** Writes a file (Node only; in a browser export returns the text and bytes instead). */
  writeFile(path: string, data: string | Uint8Array): void;
  /** A folder of files for the compile cache on disk (Node only; a browser has none: undefined). */
  cacheFiles(dir: string): CacheFiles | undefined;
  /** Path helpers (POSIX-style in a browser). */
  join(...parts: string[]): string;
  dirname(path: string): string;
  basename(path: string): string;
  /** Standard base64 of bytes. */
  base64(bytes: Uint8Array): string;
  /** Runs `fn`, removing any process-wide error handlers it installed (a browser has none). */
  withoutNewProcessHandlers<T>(fn: () => T): T;
  /** Runs `fn` with stderr writes that `take` accepts (returns true for) diverted to it (a browser: console.warn and console.error lines). */
  divertStderr<T>(take: (text: string) => boolean, fn: () => T): T;
}

/** One folder's files as the compile cache on disk uses them (src/runtime/disk-cache.ts). */
export interface CacheFiles {
  /** theanine's version (its package.json): part of every entry's check. */
  readonly version: string;
  /** A file's bytes, or undefined when it is missing or unreadable. */
  read(name: string): Uint8Array | undefined;
  /** Writes a file whole: to a temporary file of its own, then renamed over `name` (readers in other processes see the old file or the new one, never part of one); makes the folder. */
  write(name: string, data: Uint8Array): void;
  /** The folder's files: name, bytes and last use (modification time, ms). */
  list(): { readonly name: string; readonly size: number; readonly used: number }[];
  /** Removes a file (a missing one is no error). */
  remove(name: string): void;
  /** Marks a file used now (its modification time). */
  touch(name: string): void;
}

/** A worker thread as theanine uses it: messages in, and an 'error' event when it dies. */
export interface PlatformWorker {
  postMessage(message: unknown): void;
  onError(listener: (e: unknown) => void): void;
}

// Modules handed over by a page (a browser cannot require synchronously). On globalThis, so that
// two copies of theanine in one bundle share them.
const KEY = Symbol.for('theanine.modules');
const shared = globalThis as { [KEY]?: Map<string, unknown> };
export const providedModules: Map<string, unknown> = (shared[KEY] ??= new Map());

// The environment switches set from code (setEnvironment): a browser's only environment, and in
// Node entries that win over the process environment. On globalThis, as the modules above.
const ENV = Symbol.for('theanine.environment');
const sharedEnv = globalThis as { [ENV]?: Map<string, string> };
export const environmentOverrides: Map<string, string> = (sharedEnv[ENV] ??= new Map());

const HOOKS = Symbol.for('theanine.provideHooks');
const sharedHooks = globalThis as { [HOOKS]?: Set<(id: string) => void> };
/** Called by provideModule with each id handed over (the browser host watches the console once TensorFlow.js arrives). */
export const provideHooks: Set<(id: string) => void> = (sharedHooks[HOOKS] ??= new Set());

/** An Error like Node's for an absent package. */
export function moduleNotFound(id: string, detail: string): Error {
  const e = new Error(`Cannot find module '${id}' (${detail})`) as Error & { code: string };
  e.code = 'MODULE_NOT_FOUND';
  return e;
}

/** The optional packages a page can hand over (the ids theanine loads). */
export const PROVIDABLE = [
  'gpu.js',
  '@tensorflow/tfjs',
  '@tensorflow/tfjs-backend-wasm',
  'ts-morph',
  '@viz-js/viz',
] as const;

/**
 * Hands theanine an optional package that it would otherwise `require` (a browser cannot load
 * one synchronously): `import { GPU } from 'gpu.js'; provideModule('gpu.js', { GPU })`, or
 * `import * as tf from '@tensorflow/tfjs'; provideModule('@tensorflow/tfjs', tf)`. In Node it
 * overrides the installed package. Call it before the first function that needs the package.
 */
export function provideModule(id: (typeof PROVIDABLE)[number], module: object): void {
  if (!(PROVIDABLE as readonly string[]).includes(id)) {
    throw new TypeError(
      `provideModule: argument id is ${JSON.stringify(id)}; allowed: ${PROVIDABLE.map((p) => JSON.stringify(p)).join(', ')}`,
    );
  }
  if (typeof module !== 'object' || module === null) {
    throw new TypeError(
      `provideModule: argument module for ${JSON.stringify(id)} is ${module === null ? 'null' : typeof module}; allowed: the package's module object`,
    );
  }
  providedModules.set(id, module);
  for (const hook of provideHooks) hook(id);
}
