// The slice of gpu.js (an optional dependency, CommonJS) that the gpu device uses, typed here so
import { platform } from '#platform';
// nothing else sees `any`. Loaded lazily: device `cpu` never loads it.

/** What a pipeline kernel returns: a GL texture, or (webasm) a fresh Float32Array. */
export interface GpuTexture {
  readonly output: readonly number[];
  toArray(): Float32Array | Float32Array[] | Float32Array[][];
  clone(): GpuTexture;
  delete(): void;
}

export type KernelArg = Float32Array | GpuTexture | number;

export interface GpuKernel {
  (...args: KernelArg[]): GpuTexture | Float32Array;
  destroy(): void;
}

export interface KernelSettings {
  output: number[];
  pipeline: boolean;
  immutable?: boolean;
  precision: 'single';
  tactic?: 'speed' | 'balanced' | 'precision';
  loopMaxIterations?: number;
  argumentTypes?: Record<string, string>;
  dynamicArguments?: boolean;
  strictIntegers?: boolean;
  /** Helper function sources the kernel may call. */
  functions?: string[];
}

export interface GpuInstance {
  readonly mode: string;
  createKernel(source: string, settings: KernelSettings): GpuKernel;
}

interface KernelClass {
  readonly isSupported: boolean;
  readonly testContext?: unknown;
}

export interface GpuModule {
  GPU: {
    new (settings: { mode: string }): GpuInstance;
    readonly isHeadlessGLSupported: boolean;
    readonly isWebGL2Supported: boolean;
    readonly isWebAssemblySupported: boolean;
  };
  HeadlessGLKernel?: KernelClass;
}

export interface Loaded {
  readonly module: GpuModule;
  readonly version: string;
  /** Why `require('gl')` failed, when it did (gpu.js then has no headless-gl backend). */
  readonly glError: string | undefined;
}

let cached: Loaded | Error | undefined;

/** gpu.js' version from its package.json; a page that provided the module alone: 'provided'. */
function gpuJsVersion(): string {
  try {
    return (platform.requireModule('gpu.js/package.json') as { version: string }).version;
  } catch {
    return 'provided';
  }
}

/** gpu.js, or an Error saying why it cannot be loaded (not installed). */
export function loadGpuJs(): Loaded | Error {
  if (cached !== undefined) return cached;
  try {
    const module = platform.requireModule('gpu.js') as GpuModule;
    const version = gpuJsVersion();
    // gpu.js swallows a failed `require('gl')`; load it from gpu.js' own folder to learn why.
    let glError: string | undefined;
    try {
      if (platform.name === 'node') platform.requireModule('gl', platform.resolveModule('gpu.js'));
      else glError = 'headless-gl is for Node; a browser runs gpu.js on its own WebGL';
    } catch (e) {
      glError = (e as Error).message.split('\n')[0];
    }
    cached = { module, version, glError };
  } catch (e) {
    cached = new Error(
      `the optional package gpu.js is not installed (${(e as Error).message.split('\n')[0]}); ${platform.installHint('gpu.js')}`,
    );
  }
  return cached;
}
