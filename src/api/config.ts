/**
 * Keras configuration: keras.json, its environment overrides, and the
 * in-memory settings behind K.floatx(), K.epsilon(), K.image_data_format()...
 */
import { ValueError } from '../ir/errors.js';
import { platform } from '#platform';
import { environmentOverrides, type ConfigRead } from '../platform/types.js';
import { setTracing } from '../ir/provenance.js';
import { setConfiguredThreads } from '../codegen/cpu/threads.js';
import { MATMUL_PRECISIONS, setConfiguredMatmulPrecision, type MatmulPrecision } from '../codegen/cpu/wasm-kernel.js';
import { OPTIMIZER_LEVELS, type OptimizerLevel } from '../passes/pipeline.js';
import { GPU_MODE_CHOICES, setConfiguredGpuMode, type GpuModeChoice } from '../runtime/gpu/device.js';
import { setConfiguredCacheDir } from '../runtime/disk-cache.js';

export type BackendName = 'theanine' | 'tensorflow' | 'onnx';
export type Floatx = 'float16' | 'float32' | 'float64';
export type DataFormat = 'channels_first' | 'channels_last';
export type DeviceName = 'cpu' | 'gpu';
export type DimOrdering = 'th' | 'tf';

export interface KerasConfig {
  backend: BackendName;
  floatx: Floatx;
  epsilon: number;
  image_data_format: DataFormat;
  device: DeviceName;
  /**
   * Threads the cpu device's large kernels are split over (theanine's addition; keras.json
   * "threads" or THEANINE_THREADS, a positive integer). Absent: the cores the process may use.
   */
  threads?: number;
  /**
   * The dtype the cpu device sums float32 matrix products in (theanine's addition; keras.json
   * "matmul_precision" or THEANINE_MATMUL_PRECISION): "float32" (four-lane SIMD, within the
   * bound of docs/numerics.md) or "float64" (equal to the reference interpreter bit for
   * bit). Absent: codegen/cpu/wasm-kernel.ts' DEFAULT_MATMUL_PRECISION. Read when K.function
   * makes a function.
   */
  matmul_precision?: MatmulPrecision;
  /**
   * The optimizer level of functions made without an `optimizer` option (Theano's `optimizer`
   * flag; keras.json "optimizer" or THEANINE_OPTIMIZER): "fast_run", "fast_compile", "eqsat" or
   * "none". Absent: "fast_run".
   */
  optimizer?: OptimizerLevel;
  /**
   * The compile mode of every function (theanine's addition; keras.json "mode" or THEANINE_MODE):
   * "debug" checks every rewrite and kernel on the reference interpreter (docs/debugging.md);
   * "default" does not. K.function's `mode` option wins.
   */
  mode?: CompileMode;
  /**
   * The gpu device's mode (theanine's addition; keras.json "gpu_mode"; THEANINE_GPU_MODE wins):
   * "webgpu" (WGSL on WebGPU), "auto" (WebGPU where an adapter opens, else gpu.js' best mode), or
   * one of gpu.js' modes "headlessgl", "webgl2", "webgl", "webasm". Absent: gpu.js' best mode.
   */
  gpu_mode?: GpuModeChoice;
  /**
   * The folder of the compile cache on disk (theanine's addition; keras.json "cache_dir" or
   * THEANINE_CACHE_DIR, which wins): compiled cpu specialisations are kept there for later
   * processes (docs/debugging.md). Absent: no cache on disk. Never used in a browser.
   */
  cache_dir?: string;
}

export type CompileMode = 'default' | 'debug';
export const COMPILE_MODES: readonly CompileMode[] = ['default', 'debug'];

export interface LoadConfigOptions {
  // A plain record rather than NodeJS.ProcessEnv: the published types need no @types/node.
  env?: Readonly<Record<string, string | undefined>>;
  home?: string;
}

export const BACKENDS: readonly BackendName[] = ['theanine', 'tensorflow', 'onnx'];
const FLOATXS: readonly Floatx[] = ['float16', 'float32', 'float64'];
const DATA_FORMATS: readonly DataFormat[] = ['channels_first', 'channels_last'];
const DEVICES: readonly DeviceName[] = ['cpu', 'gpu'];
const DIM_ORDERINGS: readonly DimOrdering[] = ['th', 'tf'];
const EPSILON_ALLOWED = 'a positive finite number';
const fromDimOrdering = (d: DimOrdering): DataFormat => (d === 'th' ? 'channels_first' : 'channels_last');

export const DEFAULT_CONFIG: Readonly<KerasConfig> = Object.freeze({
  backend: 'theanine',
  floatx: 'float32',
  epsilon: 1e-7,
  image_data_format: 'channels_last',
  device: 'cpu',
});

/** A bad keras.json or environment variable. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export { ValueError };

/** JSON-style rendering of any value, readable even for NaN, undefined, bigint. */
function show(v: unknown): string {
  if (typeof v === 'number' || typeof v === 'undefined') return String(v);
  if (typeof v === 'bigint') return `${v}n`;
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

function allowed(list: readonly string[]): string {
  return list.map((s) => JSON.stringify(s)).join(', ');
}

function isOneOf<T extends string>(list: readonly T[], v: unknown): v is T {
  return typeof v === 'string' && (list as readonly string[]).includes(v);
}

function isEpsilon(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0;
}

const THREADS_ALLOWED = 'a positive integer (at most 256)';
function isThreads(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 256;
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The keras.json path: `$KERAS_HOME/keras.json`, else `<home>/.keras/keras.json` (undefined in a browser). */
export function configPath(opts: LoadConfigOptions = {}): string | undefined {
  return platform.kerasConfigPath(opts.env ?? platform.environment(), opts.home);
}

/** The parsed file, or undefined when it does not exist (after writing the defaults). */
function readConfigFile(file: string, where: string): Record<string, unknown> | undefined {
  // A FIFO once made the first K call hang: anything but a regular file is a ConfigError naming
  // the path, before a byte is read.
  let read: ConfigRead;
  try {
    read = platform.readConfig(file);
  } catch (e) {
    throw new ConfigError(`${where}: cannot be read (${messageOf(e)})`);
  }
  if (read.kind === 'special') {
    throw new ConfigError(
      `${where}: is ${read.what}; only a regular file is read as the Keras config (remove it or point KERAS_HOME elsewhere)`,
    );
  }
  if (read.kind === 'missing') {
    platform.writeConfigDefaults(file, JSON.stringify(DEFAULT_CONFIG, null, 4) + '\n');
    return undefined;
  }
  const text = read.text;
  const objectAllowed = `a JSON object with fields ${allowed(Object.keys(DEFAULT_CONFIG))}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new ConfigError(`${where}: unparsable JSON (${messageOf(e)}); allowed: ${objectAllowed}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(`${where}: top-level value is ${show(parsed)}; allowed: ${objectAllowed}`);
  }
  return parsed as Record<string, unknown>;
}

/** Reads keras.json (writing the defaults when it is missing) and applies the environment overrides. */
export function loadConfig(opts: LoadConfigOptions = {}): KerasConfig {
  const env = opts.env ?? platform.environment();
  const file = configPath(opts);
  const where = `keras.json (${file})`;
  const raw = file === undefined ? undefined : readConfigFile(file, where);
  const cfg: KerasConfig = { ...DEFAULT_CONFIG };

  if (raw !== undefined) {
    const pick = <T extends string>(key: string, list: readonly T[]): T | undefined => {
      if (!Object.hasOwn(raw, key)) return undefined;
      const v = raw[key];
      if (!isOneOf(list, v)) throw new ConfigError(`${where}: "${key}" is ${show(v)}; allowed: ${allowed(list)}`);
      return v;
    };
    cfg.backend = pick('backend', BACKENDS) ?? cfg.backend;
    cfg.floatx = pick('floatx', FLOATXS) ?? cfg.floatx;
    cfg.device = pick('device', DEVICES) ?? cfg.device;
    const precision = pick('matmul_precision', MATMUL_PRECISIONS);
    if (precision !== undefined) cfg.matmul_precision = precision;
    const level = pick('optimizer', OPTIMIZER_LEVELS);
    if (level !== undefined) cfg.optimizer = level;
    const mode = pick('mode', COMPILE_MODES);
    if (mode !== undefined) cfg.mode = mode;
    // (THEANINE_GPU_MODE is read where a function is made, so that it wins over this at any time)
    const gpuMode = pick('gpu_mode', GPU_MODE_CHOICES);
    if (gpuMode !== undefined) cfg.gpu_mode = gpuMode;
    if (Object.hasOwn(raw, 'epsilon')) {
      const v = raw['epsilon'];
      if (!isEpsilon(v)) throw new ConfigError(`${where}: "epsilon" is ${show(v)}; allowed: ${EPSILON_ALLOWED}`);
      cfg.epsilon = v;
    }
    if (Object.hasOwn(raw, 'cache_dir')) {
      const v = raw['cache_dir'];
      if (typeof v !== 'string' || v === '')
        throw new ConfigError(`${where}: "cache_dir" is ${show(v)}; allowed: a folder path (a non-empty string)`);
      cfg.cache_dir = v;
    }
    if (Object.hasOwn(raw, 'threads')) {
      const v = raw['threads'];
      if (!isThreads(v)) throw new ConfigError(`${where}: "threads" is ${show(v)}; allowed: ${THREADS_ALLOWED}`);
      cfg.threads = v;
    }
    const format = pick('image_data_format', DATA_FORMATS);
    // Keras 1 files carry image_dim_ordering instead; it counts only when the new field is absent.
    const legacy = Object.hasOwn(raw, 'image_data_format') ? undefined : pick('image_dim_ordering', DIM_ORDERINGS);
    cfg.image_data_format = format ?? (legacy === undefined ? cfg.image_data_format : fromDimOrdering(legacy));
  }

  const fromEnv = <T extends string>(name: string, list: readonly T[]): T | undefined => {
    const v = env[name];
    if (v === undefined) return undefined;
    if (!isOneOf(list, v)) {
      throw new ConfigError(`environment variable ${name} is ${show(v)}; allowed: ${allowed(list)}`);
    }
    return v;
  };
  cfg.backend = fromEnv('KERAS_BACKEND', BACKENDS) ?? cfg.backend;
  cfg.device = fromEnv('THEANINE_DEVICE', DEVICES) ?? cfg.device;
  const precision =
    env['THEANINE_MATMUL_PRECISION'] === '' ? undefined : fromEnv('THEANINE_MATMUL_PRECISION', MATMUL_PRECISIONS);
  if (precision !== undefined) cfg.matmul_precision = precision;
  const level = env['THEANINE_OPTIMIZER'] === '' ? undefined : fromEnv('THEANINE_OPTIMIZER', OPTIMIZER_LEVELS);
  if (level !== undefined) cfg.optimizer = level;
  const mode = env['THEANINE_MODE'] === '' ? undefined : fromEnv('THEANINE_MODE', COMPILE_MODES);
  if (mode !== undefined) cfg.mode = mode;
  const threads = env['THEANINE_THREADS'];
  if (threads !== undefined && threads !== '') {
    const n = /^[0-9]+$/.test(threads) ? Number(threads) : NaN;
    if (!isThreads(n))
      throw new ConfigError(`environment variable THEANINE_THREADS is ${show(threads)}; allowed: ${THREADS_ALLOWED}`);
    cfg.threads = n;
  }
  return cfg;
}

let current: Readonly<KerasConfig> | undefined;

/** The active config; keras.json is read on first use. */
export function getConfig(): Readonly<KerasConfig> {
  current ??= Object.freeze(loadConfig());
  return current;
}

setConfiguredThreads(() => getConfig().threads);
setConfiguredMatmulPrecision(() => getConfig().matmul_precision);
setConfiguredGpuMode(() => getConfig().gpu_mode);
setConfiguredCacheDir(() => getConfig().cache_dir);

/** Re-reads keras.json and the environment; on error the current config stays. */
export function reloadConfig(opts?: LoadConfigOptions): Readonly<KerasConfig> {
  current = Object.freeze(loadConfig(opts));
  return current;
}

// Setters swap in a new frozen object, so configs handed out earlier never change.
function update(patch: Partial<KerasConfig>): void {
  current = Object.freeze({ ...getConfig(), ...patch });
}

function check<T extends string>(fn: string, what: string, list: readonly T[], v: unknown): T {
  if (!isOneOf(list, v)) throw new ValueError(`${fn}: unknown ${what} ${show(v)} (allowed: ${allowed(list)})`);
  return v;
}

export function backend(): BackendName {
  return getConfig().backend;
}

/**
 * Selects the backend for functions compiled from now on (theanine's addition: Keras reads it
 * from keras.json or KERAS_BACKEND only). Throws and keeps the old value on a bad name.
 */
export function set_backend(backend: BackendName): void {
  update({ backend: check('set_backend', 'backend', BACKENDS, backend) });
}

export function epsilon(): number {
  return getConfig().epsilon;
}

export function set_epsilon(e: number): void {
  if (!isEpsilon(e)) throw new ValueError(`set_epsilon: invalid epsilon ${show(e)} (allowed: ${EPSILON_ALLOWED})`);
  update({ epsilon: e });
}

export function floatx(): Floatx {
  return getConfig().floatx;
}

export function set_floatx(floatx: Floatx): void {
  update({ floatx: check('set_floatx', 'floatx', FLOATXS, floatx) });
}

export function image_data_format(): DataFormat {
  return getConfig().image_data_format;
}

export function set_image_data_format(data_format: DataFormat): void {
  update({ image_data_format: check('set_image_data_format', 'data_format', DATA_FORMATS, data_format) });
}

export function image_dim_ordering(): DimOrdering {
  return getConfig().image_data_format === 'channels_first' ? 'th' : 'tf';
}

export function set_image_dim_ordering(dim_ordering: DimOrdering): void {
  const d = check('set_image_dim_ordering', 'dim_ordering', DIM_ORDERINGS, dim_ordering);
  update({ image_data_format: fromDimOrdering(d) });
}

/** The optimizer level of functions made without an `optimizer` option (keras.json "optimizer", THEANINE_OPTIMIZER; default "fast_run"). */
export function optimizerLevel(): OptimizerLevel {
  return getConfig().optimizer ?? 'fast_run';
}

export function device(): DeviceName {
  return getConfig().device;
}

export function set_device(d: DeviceName): void {
  update({ device: check('set_device', 'device', DEVICES, d) });
}

const uids = new Map<string, number>();

/** 1, 2, 3, ... separately for each prefix (Keras' get_uid). */
export function get_uid(prefix = ''): number {
  const next = (uids.get(prefix) ?? 0) + 1;
  uids.set(prefix, next);
  return next;
}

export function reset_uids(): void {
  uids.clear();
}

const TRACE_ON = ['1', 'true', ''];
const TRACE_OFF = ['0', 'false'];

/** THEANINE_TRACE's value: unset, empty, 1 or true record provenance; 0 or false do not; anything else is a ConfigError. */
export function traceSwitch(v: string | undefined): boolean {
  if (v === undefined || TRACE_ON.includes(v.trim().toLowerCase())) return true;
  if (TRACE_OFF.includes(v.trim().toLowerCase())) return false;
  throw new ConfigError(
    `environment variable THEANINE_TRACE is ${JSON.stringify(v)}; allowed: ${allowed([...TRACE_ON, ...TRACE_OFF])}`,
  );
}

/**
 * The environment switches theanine reads, and what each sets. In a browser (no environment
 * variables) setEnvironment is how to set them; K.set_* covers the configuration ones too.
 */
export const ENVIRONMENT_SWITCHES = {
  KERAS_BACKEND: 'the default backend (also set_backend)',
  KERAS_HOME: 'the folder of keras.json (Node only: a browser reads no files)',
  THEANINE_DEVICE: 'the default device (also K.set_device)',
  THEANINE_THREADS: 'worker threads for large matrix products (Node only: a page uses one thread)',
  THEANINE_MATMUL_PRECISION:
    'float32 or float64: the dtype the cpu device sums float32 matrix products in (for functions made from then on)',
  THEANINE_DEBUG: "debug topics: passes, gpu, source, cli, cache, all (output: stderr, a browser's console)",
  THEANINE_FALLBACK: "warn or error when a function runs the reference interpreter (also K.function's fallback option)",
  THEANINE_TRACE: '0 or false: nodes record no provenance (the K call and user line that built them; also setTrace)',
  THEANINE_TFJS_BACKEND:
    'the TensorFlow.js flavour of the tensorflow backend in Node (a page uses its active tfjs backend)',
  THEANINE_GPU_MODE:
    'the gpu device\'s mode: webgpu, auto (WebGPU where an adapter opens), or gpu.js\' headlessgl, webgl2, webgl, webasm (also keras.json "gpu_mode")',
  THEANINE_ONNX_PROVIDER: 'the ONNX Runtime execution provider (Node only: the onnx backend)',
  THEANINE_WEBGPU_OPTIONS:
    "Dawn's options for the gpu device's webgpu mode, comma-separated (Node only; default backend=vulkan)",
  THEANINE_WEBGPU_MODULE: 'the path of the webgpu package to load (Node only; default: the installed webgpu)',
  THEANINE_WEBGPU_SIMD:
    "1 or 0: whether the webgpu adapter runs a workgroup's invocations as SIMD lanes of a CPU thread (software adapters: products as register tiles, rows one per invocation); default: from the adapter's description",
  THEANINE_WEBGPU_F16:
    "0: the gpu device's webgpu mode stores float16 as f32 rounded to half precision even where the adapter has shader-f16 (default: f16 storage there, half the bytes, the same values)",
  THEANINE_WEBGPU_TIMING:
    'submits: profiled functions on gpu:webgpu time each kernel by a submit of its own, even where the adapter has timestamp queries (docs/debugging.md)',
  THEANINE_OPTIMIZER:
    'the default optimizer level: fast_run, fast_compile, eqsat or none (also keras.json "optimizer")',
  THEANINE_EQSAT:
    'limits of the eqsat optimizer: nodes=N,iterations=N,ms=N,matches=N,gain=P (any subset; gain: the percent a search result must save)',
  THEANINE_MODE:
    "debug: every function checks its rewrites and kernels on the reference interpreter (docs/debugging.md; also K.function's mode)",
  THEANINE_NAN_GUARD:
    "1: every function raises at the first kernel that writes NaN or Inf from finite inputs (also K.function's nanGuard)",
  THEANINE_BEAM:
    "N: tune every cpu function's kernel schedules and every gpu:webgpu function's workgroup sizes with a beam of N (0: off; also K.function's tune)",
  THEANINE_BEAM_MS: 'milliseconds one specialisation may spend tuning (default 2000)',
  THEANINE_VERIFY_PASSES:
    '1: run the graph verifier after every optimizer pass (the test suite does; a cost per compile)',
  THEANINE_CACHE_DIR:
    'the folder of theanine\'s disk caches: the compile cache (Node only; also keras.json "cache_dir"; docs/debugging.md) and the tuned schedules (which default to keras.json\'s folder)',
  THEANINE_CACHE_MAX_BYTES:
    "the most bytes the compile cache's folder holds (default 256 MiB; least recently used files go first)",
} as const;
export type EnvironmentSwitch = keyof typeof ENVIRONMENT_SWITCHES;

/** Config fields the environment sets (re-read when setEnvironment changes them). */
const CONFIG_SWITCHES: Partial<Record<EnvironmentSwitch, keyof KerasConfig | 'all'>> = {
  KERAS_BACKEND: 'backend',
  THEANINE_DEVICE: 'device',
  THEANINE_THREADS: 'threads',
  THEANINE_MATMUL_PRECISION: 'matmul_precision',
  THEANINE_OPTIMIZER: 'optimizer',
  THEANINE_MODE: 'mode',
  KERAS_HOME: 'all',
};

/**
 * Sets environment switches from code: `setEnvironment({ THEANINE_DEBUG: 'passes' })`. A browser
 * has no environment variables, so this is how a page sets them; in Node an entry set here wins
 * over the process environment. `undefined` removes an entry. Names are checked (the list is
 * ENVIRONMENT_SWITCHES); the configuration switches (KERAS_BACKEND, THEANINE_DEVICE,
 * THEANINE_THREADS, THEANINE_MATMUL_PRECISION, KERAS_HOME) are checked and applied at once, the others where they are read,
 * as their environment variables are.
 */
export function setEnvironment(vars: Readonly<Record<string, string | undefined>>): void {
  if (typeof vars !== 'object' || vars === null || Array.isArray(vars))
    throw new TypeError(
      `setEnvironment: argument vars must be an object of switch names to strings, got ${show(vars)}`,
    );
  const names = Object.keys(ENVIRONMENT_SWITCHES);
  for (const [k, v] of Object.entries(vars)) {
    if (!names.includes(k))
      throw new ValueError(`setEnvironment: unknown switch ${JSON.stringify(k)} (allowed: ${names.join(', ')})`);
    if (v !== undefined && typeof v !== 'string')
      throw new TypeError(`setEnvironment: ${k} must be a string or undefined, got ${show(v)}`);
  }
  if (Object.hasOwn(vars, 'THEANINE_TRACE')) setTracing(traceSwitch(vars['THEANINE_TRACE']));
  const before = new Map(environmentOverrides);
  for (const [k, v] of Object.entries(vars)) {
    if (v === undefined) environmentOverrides.delete(k);
    else environmentOverrides.set(k, v);
  }
  const fields = Object.keys(vars)
    .map((k) => CONFIG_SWITCHES[k as EnvironmentSwitch])
    .filter((f) => f !== undefined);
  if (fields.length === 0) return;
  try {
    const fresh = loadConfig();
    if (current === undefined || fields.includes('all')) current = Object.freeze(fresh);
    else update(Object.fromEntries(fields.map((f) => [f, fresh[f as keyof KerasConfig]])) as Partial<KerasConfig>);
  } catch (e) {
    // A bad value changes nothing.
    environmentOverrides.clear();
    for (const [k, v] of before) environmentOverrides.set(k, v);
    throw e;
  }
}
