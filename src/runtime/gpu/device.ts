// The gpu device: one gpu.js instance per process, in the best mode this machine has.
// gpu.js' own auto mode picks headless-gl (a desktop's GPU, or Mesa's software GL under Xvfb)
// and falls back to its WebAssembly mode silently; theanine asks for the mode itself so that it
// can say which one runs (`f.device`, THEANINE_DEBUG) and warn once when there is no GL context.
import { ValueError } from '../../ir/errors.js';
import { debugAny, debugLog } from '../debug.js';
import { loadGpuJs, type GpuInstance } from './gpujs.js';
import { warn } from '../warn.js';
import { webgpuMissing } from './webgpu/session.js';
import { platform } from '#platform';

/** gpu.js' internal mode names. */
export const GPU_MODES = ['headlessgl', 'webgl2', 'webgl', 'webasm'] as const;
export type GpuMode = (typeof GPU_MODES)[number];
/**
 * What THEANINE_GPU_MODE accepts: a gpu.js mode, `webgpu` (WGSL on WebGPU, src/runtime/gpu/webgpu),
 * or `auto` (WebGPU where an adapter exists, else gpu.js' best mode).
 */
export const GPU_MODE_CHOICES = ['auto', 'webgpu', ...GPU_MODES] as const;
export type GpuModeChoice = (typeof GPU_MODE_CHOICES)[number];

/** keras.json's "gpu_mode" (src/api/config.ts sets the reader; THEANINE_GPU_MODE wins). */
let configuredMode: () => GpuModeChoice | undefined = () => undefined;
export function setConfiguredGpuMode(read: () => GpuModeChoice | undefined): void {
  configuredMode = read;
}

export interface GpuDevice {
  readonly gpu: GpuInstance;
  readonly mode: GpuMode;
  /** `gpu:<mode>`, what `K.function(...).device` reports. */
  readonly name: string;
  /** gpu.js version, and for GL modes the loop limit found. */
  readonly description: string;
  /**
   * Most loop iterations one kernel invocation may run (all its loops together). Mesa's software
   * GL (llvmpipe) stops every shader after 65535 and returns what it has; measured at start.
   */
  readonly maxLoop: number;
}

// One device and one set of warnings per process, on globalThis: a loader that gives this module
// two instances (tsx's CommonJS and ESM paths under mocha) must not open a second GL context.
const KEY = Symbol.for('theanine.gpu.device');
const shared = globalThis as { [KEY]?: { device: GpuDevice | undefined; warned: Set<string> } };
const state = (shared[KEY] ??= { device: undefined, warned: new Set() });
const warned = state.warned;

/** Prints a warning once per process per key (the gpu device's fallbacks). */
export function warnOnce(key: string, message: string): void {
  if (warned.has(key)) return;
  warned.add(key);
  warn(message);
}

/**
 * Whether functions on device "gpu" run in the WebGPU mode (src/runtime/gpu/webgpu):
 * THEANINE_GPU_MODE=webgpu, or `auto` where an adapter exists. Unset, the gpu.js modes stay the
 * default until every test table runs on WebGPU (then `auto` becomes the default). In a browser
 * `auto` keeps gpu.js: there only callAsync can wait for WebGPU, so the page chooses webgpu itself.
 */
export function webgpuRequested(): boolean {
  const m = requestedMode();
  return m === 'webgpu' || (m === 'auto' && platform.name === 'node' && webgpuMissing() === undefined);
}

/** The mode asked for: THEANINE_GPU_MODE, else keras.json's "gpu_mode", else none (gpu.js' best). */
export function requestedMode(): GpuModeChoice | undefined {
  const v = platform.env('THEANINE_GPU_MODE');
  if (v === undefined || v === '') return configuredMode();
  if (!(GPU_MODE_CHOICES as readonly string[]).includes(v)) {
    throw new ValueError(
      `THEANINE_GPU_MODE: unknown mode ${JSON.stringify(v)} (allowed: ${GPU_MODE_CHOICES.map((m) => JSON.stringify(m)).join(', ')})`,
    );
  }
  return v as GpuModeChoice;
}

/** The renderer string of gpu.js' headless-gl test context (WEBGL_debug_renderer_info), if any. */
function glRenderer(ctx: unknown): string | undefined {
  const gl = ctx as {
    getExtension?(n: string): { UNMASKED_RENDERER_WEBGL: number } | null;
    getParameter?(p: number): unknown;
  } | null;
  if (gl?.getExtension === undefined || gl.getParameter === undefined) return undefined;
  const ext = gl.getExtension('WEBGL_debug_renderer_info');
  const r = ext === null ? undefined : gl.getParameter(ext.UNMASKED_RENDERER_WEBGL);
  return typeof r === 'string' ? r : undefined;
}

const PROBE = 1 << 20;

/** Runs a loop of 2^20 iterations in one invocation; a GL that stops early returns its limit. */
function probeLoopLimit(gpu: GpuInstance): number {
  const k = gpu.createKernel(
    `function (a0) {\n  let s = a0[0];\n  for (let r = 0; r < ${PROBE}; r++) { s += 1.0; }\n  return s;\n}`,
    { output: [1], pipeline: false, precision: 'single' },
  );
  const out = k(new Float32Array([0])) as unknown as ArrayLike<number>;
  const n = Number(out[0]);
  k.destroy();
  return n >= PROBE ? Infinity : n;
}

/** The process-wide gpu device, created on first use. Throws when gpu.js is not installed. */
export function gpuDevice(): GpuDevice {
  if (state.device !== undefined) return state.device;
  const loaded = loadGpuJs();
  if (loaded instanceof Error) throw new ValueError(`function: device "gpu" is unavailable: ${loaded.message}`);
  const { GPU, HeadlessGLKernel } = loaded.module;
  const choice = requestedMode();
  const forced = choice === 'auto' || choice === 'webgpu' ? undefined : choice;
  let mode: GpuMode;
  if (forced !== undefined) mode = forced;
  else if (GPU.isHeadlessGLSupported) mode = 'headlessgl';
  else if (GPU.isWebGL2Supported) mode = 'webgl2';
  else {
    mode = 'webasm';
    const why =
      loaded.glError !== undefined
        ? `the gl package could not be loaded (${loaded.glError})`
        : 'headless-gl could not create a context (no display: on a server, run under `xvfb-run -a`)';
    warnOnce(
      'no-gl',
      `theanine: device "gpu": no GL context, because ${why}; running gpu.js kernels in its WebAssembly mode (gpu:webasm)`,
    );
  }
  let gpu: GpuInstance;
  try {
    gpu = new GPU({ mode });
  } catch (e) {
    throw new ValueError(
      `function: device "gpu": gpu.js cannot run in mode ${JSON.stringify(mode)} here (${(e as Error).message})`,
    );
  }
  const renderer = mode === 'headlessgl' ? glRenderer(HeadlessGLKernel?.testContext) : undefined;
  const maxLoop = mode === 'webasm' ? Infinity : probeLoopLimit(gpu);
  const limit = Number.isFinite(maxLoop) ? `, at most ${maxLoop} loop iterations per kernel invocation` : '';
  const description = `gpu.js ${loaded.version}, mode ${mode}${renderer !== undefined ? `, GL renderer ${renderer}` : ''}${limit}`;
  const device = { gpu, mode, name: `gpu:${mode}`, description, maxLoop };
  state.device = device;
  if (debugAny()) debugLog(`gpu device: ${description}`);
  return device;
}
