// Finding TensorFlow.js at run time. The `tensorflow` backend is chosen by configuration, so
// its packages are loaded on first use (createRequire), never imported statically: theanine
// works without them, and a missing one is an error that says what to install.
//
// Order: @tensorflow/tfjs-node (native TensorFlow), else @tensorflow/tfjs with
// @tensorflow/tfjs-backend-wasm, else @tensorflow/tfjs's pure-JS cpu backend.
// THEANINE_TFJS_BACKEND=node|wasm|cpu asks for one of them only.
// In a browser (the page hands @tensorflow/tfjs over with provideModule): the TensorFlow.js
// backend the page made active ('webgl', 'wasm' after its own `await tf.setBackend('wasm')`,
// 'cpu'), else webgl, else cpu; as TensorFlow.js itself ranks them (webgl before cpu).
import type * as Tfjs from '@tensorflow/tfjs';
import type * as TfjsWasm from '@tensorflow/tfjs-backend-wasm';
import { platform } from '#platform';

export type TF = typeof Tfjs;
export type Flavour = 'node' | 'wasm' | 'cpu' | 'webgl';
/** The flavours THEANINE_TFJS_BACKEND may ask for (Node's; 'webgl' is a browser's). */
export const FLAVOURS: readonly Flavour[] = ['node', 'wasm', 'cpu'];

/** How packages are found: Node's require, or a stand-in in tests. */
export interface ModuleLoader {
  require(id: string): unknown;
  resolve(id: string): string;
}

export interface TfRuntime {
  readonly tf: TF;
  /** The tfjs backend name theanine runs on ('tensorflow', 'wasm' or 'cpu'). */
  readonly backendName: string;
  readonly flavour: Flavour;
  /** Why faster flavours were not used (for THEANINE_DEBUG and error messages). */
  readonly notes: readonly string[];
  /** Runs `fn` with this runtime's backend active, restoring the caller's tfjs backend after. */
  withBackend<T>(fn: () => T): T;
}

export const defaultLoader: ModuleLoader = {
  require: (id) => platform.requireModule(id),
  resolve: (id) => platform.resolveModule(id),
};

const TFJS = '@tensorflow/tfjs';
const TFJS_NODE = '@tensorflow/tfjs-node';
const TFJS_WASM = '@tensorflow/tfjs-backend-wasm';

/** The package itself is absent (not: present but failing to load one of its own files). */
function isMissing(e: unknown, id: string): boolean {
  return (
    typeof e === 'object' &&
    e !== null &&
    'code' in e &&
    e.code === 'MODULE_NOT_FOUND' &&
    e instanceof Error &&
    e.message.includes(`'${id}'`)
  );
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message.split('\n')[0]! : String(e);
}

/**
 * Why flavour `f` (package `pkg`) did not start, as a note; thrown where THEANINE_TFJS_BACKEND asked for
 * `f` only. `failed` says what failed where the package is there.
 */
function didNotStart(e: unknown, f: Flavour, pkg: string, failed: string, only: Flavour | undefined): string {
  if (only === f)
    throw new Error(
      isMissing(e, pkg)
        ? `backend "tensorflow": THEANINE_TFJS_BACKEND=${f} needs ${pkg}; install it with \`npm install ${pkg}\``
        : `backend "tensorflow": ${failed} (${messageOf(e)})`,
    );
  return isMissing(e, pkg) ? `${pkg} is not installed` : `${failed}: ${messageOf(e)}`;
}

/** Loads the first flavour that works (or exactly `only`); throws naming the package to install. */
export function loadTfjs(loader: ModuleLoader = defaultLoader, only?: Flavour): TfRuntime {
  if (platform.name === 'browser' && loader === defaultLoader) return loadTfjsInBrowser(loader);
  const notes: string[] = [];
  const want = (f: Flavour) => only === undefined || only === f;
  if (want('node')) {
    try {
      const tf = loader.require(TFJS_NODE) as TF;
      return activate(tf, 'tensorflow', 'node', notes);
    } catch (e) {
      notes.push(didNotStart(e, 'node', TFJS_NODE, `${TFJS_NODE} failed to load`, only));
    }
  }
  let tf: TF;
  try {
    tf = loader.require(TFJS) as TF;
  } catch (e) {
    if (!isMissing(e, TFJS)) throw new Error(`backend "tensorflow": ${TFJS} failed to load (${messageOf(e)})`);
    throw new Error(
      `backend "tensorflow" needs TensorFlow.js, and neither ${TFJS_NODE} nor ${TFJS} is installed: ` +
        `install one with \`npm install ${TFJS}\` (add ${TFJS_WASM} for speed, or ${TFJS_NODE} for native TensorFlow), ` +
        'or select the "theanine" backend (KERAS_BACKEND=theanine)',
    );
  }
  if (want('wasm')) {
    try {
      initWasmSync(tf, loader);
      return activate(tf, 'wasm', 'wasm', notes);
    } catch (e) {
      notes.push(didNotStart(e, 'wasm', TFJS_WASM, 'the wasm backend failed to start', only));
    }
  }
  return activate(tf, 'cpu', 'cpu', notes);
}

/** The browser's order: the page's active backend, else webgl, else cpu (see the top of this file). */
function loadTfjsInBrowser(loader: ModuleLoader): TfRuntime {
  let tf: TF;
  try {
    tf = loader.require(TFJS) as TF;
  } catch (e) {
    throw new Error(
      `backend "tensorflow" in a browser needs TensorFlow.js handed over: \`import * as tf from '${TFJS}'; provideModule('${TFJS}', tf)\` (${messageOf(e)})`,
    );
  }
  const notes: string[] = [];
  const active = tf.engine().backendName as string | null;
  // The page started the wasm backend itself: its module prints XNNPack's statuses to the
  // console, where watchBackendErrors takes them (the console is watched once TensorFlow.js is
  // handed over, see platform/browser.ts).
  if (active === 'wasm') status.foreign = true;
  if (active === 'webgl' || active === 'wasm' || active === 'cpu') return activate(tf, active, active, notes);
  try {
    return activate(tf, 'webgl', 'webgl', notes);
  } catch (e) {
    notes.push(`the webgl backend could not start: ${messageOf(e)}`);
  }
  return activate(tf, 'cpu', 'cpu', notes);
}

function activate(tf: TF, backendName: string, flavour: Flavour, notes: string[]): TfRuntime {
  const rt: TfRuntime = {
    tf,
    backendName,
    flavour,
    notes,
    withBackend<T>(fn: () => T): T {
      const prev = tf.engine().backendName as string | null;
      if (prev === backendName) return fn();
      switchTo(tf, backendName);
      try {
        return fn();
      } finally {
        if (prev !== null && prev !== undefined) switchTo(tf, prev);
      }
    },
  };
  // Activated once to prove it works; a backend the caller already had stays the active one.
  const prev = tf.engine().backendName as string | null;
  switchTo(tf, backendName);
  if (prev !== null && prev !== undefined && prev !== backendName) switchTo(tf, prev);
  return rt;
}

/**
 * setBackend is async in tfjs' API, but for a backend whose factory is synchronous (cpu,
 * tensorflow, our wasm registration below) or that is already initialised, it completes before
 * returning its promise. We check that it did.
 */
function switchTo(tf: TF, name: string): void {
  void tf.setBackend(name);
  if (tf.engine().backendName !== name)
    throw new Error(`backend "tensorflow": the TensorFlow.js backend "${name}" could not be activated synchronously`);
}

// The few WebAssembly JS-API members used here (this project's lib settings carry no DOM types).
interface WasmInstance {
  readonly exports: object;
}
interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => WasmInstance;
}
const WA = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/** The part of the Emscripten module object that BackendWasm uses (cwrap'ed entry points). */
interface WasmModuleObject {
  cwrap?: (name: string, ret: string | null, args: string[]) => unknown;
  calledRun?: boolean;
  tfjs?: unknown;
  instantiateWasm?: (imports: object, receive: (i: WasmInstance, m: object) => void) => object;
  printErr?: (text: string) => void;
}

/**
 * What the wasm backend wrote to stderr since the last look. tfjs-backend-wasm reports a failed
 * XNNPack call (an unsupported rank, for one) only there, and returns the unwritten output as if
 * it were a result: the executor turns any such line into an error naming the op.
 */
// Kept on globalThis: TensorFlow.js' backends are process-wide, while this module can be loaded
// twice in one process (as an ES module and through a CommonJS hook, as mocha with tsx does); each
// copy must see the statuses of the wasm module whichever copy built it.
interface WasmStatusState {
  errors: string[];
  readonly own: WeakSet<object>;
  foreign: boolean;
}
const STATE = Symbol.for('theanine.tfjs.wasmStatus');
const shared = globalThis as { [STATE]?: WasmStatusState };
/** `own`: the wasm backends this module built (their statuses reach `printErr` below). */
const status: WasmStatusState = (shared[STATE] ??= { errors: [], own: new WeakSet<object>(), foreign: false });

/**
 * Runs `fn` (one call of a function on the tensorflow backend) with the statuses of a wasm
 * backend that TensorFlow.js initialised itself collected like ours: that module writes them
 * to stderr through console.error, so XNNPack's lines written to stderr during the call are
 * taken as statuses (every other write passes through).
 */
export function watchBackendErrors<T>(fn: () => T): T {
  if (!status.foreign) return fn();
  return platform.divertStderr((text) => {
    if (!/\bXNN\b/.test(text)) return false;
    for (const line of text.split('\n')) if (line.trim() !== '') status.errors.push(line);
    return true;
  }, fn);
}
export function takeBackendErrors(): readonly string[] {
  if (status.errors.length === 0) return status.errors;
  const r = status.errors;
  status.errors = [];
  return r;
}

/**
 * tfjs-backend-wasm registers an async factory (it fetches and compiles the .wasm). Node can
 * compile and instantiate WebAssembly synchronously, and Emscripten finishes start-up
 * synchronously when `instantiateWasm` hands it the instance at once. So: build the module
 * ourselves, wrap it in BackendWasm, and re-register 'wasm' with a synchronous factory. The
 * kernels tfjs-backend-wasm registered for 'wasm' are unaffected (they are keyed by name).
 * SIMD binary when this Node validates it, else the plain one; no threads (they need workers).
 */
function initWasmSync(tf: TF, loader: ModuleLoader): void {
  const wasmPkg = loader.require(TFJS_WASM) as typeof TfjsWasm;
  if (tf.engine().registry['wasm'] !== undefined) {
    // Already initialised: by us, or by TensorFlow.js' own asynchronous factory (the user's
    // `await tf.setBackend('wasm')`, or tfjs picking its best backend). The latter's module prints
    // XNNPack's statuses to stderr, where watchBackendErrors picks them up instead.
    if (!status.own.has(tf.engine().registry['wasm'] as object)) status.foreign = true;
    return;
  }
  const dir = platform.join(platform.dirname(loader.resolve(`${TFJS_WASM}/package.json`)), 'wasm-out');
  const factory = loader.require(platform.join(dir, 'tfjs-backend-wasm.js')) as (
    m: WasmModuleObject,
  ) => Promise<unknown>;
  const simd = platform.readFile(platform.join(dir, 'tfjs-backend-wasm-simd.wasm')) as Uint8Array<ArrayBuffer>;
  const bytes = WA.validate(simd)
    ? simd
    : (platform.readFile(platform.join(dir, 'tfjs-backend-wasm.wasm')) as Uint8Array<ArrayBuffer>);
  const compiled = new WA.Module(bytes);
  const mod: WasmModuleObject = {
    printErr: (text) => {
      status.errors.push(text);
    },
    instantiateWasm(imports, receive) {
      const instance = new WA.Instance(compiled, imports);
      receive(instance, compiled);
      return instance.exports;
    },
  };
  // Emscripten's Node glue installs process handlers that rethrow; theanine leaves process-wide behaviour alone.
  platform.withoutNewProcessHandlers(() => factory(mod).catch(() => undefined));
  const cwrap = mod.cwrap;
  if (mod.calledRun !== true || cwrap === undefined)
    throw new Error('the WebAssembly module did not start synchronously');
  mod.tfjs = {
    init: cwrap('init', null, []),
    initWithThreadsCount: cwrap('init_with_threads_count', null, ['number']),
    getThreadsCount: cwrap('get_threads_count', 'number', []),
    registerTensor: cwrap('register_tensor', null, ['number', 'number', 'number']),
    disposeData: cwrap('dispose_data', null, ['number']),
    dispose: cwrap('dispose', null, []),
  };
  const backend = new wasmPkg.BackendWasm(mod as ConstructorParameters<typeof wasmPkg.BackendWasm>[0]);
  const priority = 2; // tfjs-backend-wasm's own
  if (tf.engine().registryFactory['wasm'] !== undefined) tf.removeBackend('wasm');
  status.own.add(backend);
  tf.registerBackend('wasm', () => backend, priority);
}

let cached: TfRuntime | undefined;
let override: ModuleLoader | undefined;

function flavourFromEnv(): Flavour | undefined {
  const v = platform.env('THEANINE_TFJS_BACKEND');
  if (v === undefined || v === '') return undefined;
  if (!(FLAVOURS as readonly string[]).includes(v)) {
    throw new Error(
      `environment variable THEANINE_TFJS_BACKEND is ${JSON.stringify(v)}; allowed: ${FLAVOURS.map((f) => JSON.stringify(f)).join(', ')}`,
    );
  }
  return v as Flavour;
}

/** The process-wide TensorFlow.js runtime, loaded at the first tensorflow-backend compile. */
export function tfjsRuntime(): TfRuntime {
  if (override !== undefined) return loadTfjs(override, flavourFromEnv());
  cached ??= loadTfjs(defaultLoader, flavourFromEnv());
  return cached;
}

/** Tests: resolve packages through `loader` (undefined restores Node's); the real runtime stays cached. */
export function _setTfjsLoader(loader: ModuleLoader | undefined): void {
  override = loader;
}
