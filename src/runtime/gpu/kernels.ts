// Compiled gpu.js kernels, shared by every function: one per distinct source, output size and
// argument kinds (texture or array), so equal subgraphs of equal shapes compile once. Sharing
// is safe because every result is its own reference (DeviceBuffer), and a kernel that renders
// again while a reference is held renders into a fresh texture.
import type { KernelSource } from '../../codegen/gpu/source.js';
import { debugEnabled, debugLog } from '../debug.js';
import { DeviceBuffer } from './buffer.js';
import type { GpuDevice } from './device.js';
import type { GpuKernel, KernelArg } from './gpujs.js';
import { stats } from './stats.js';

const cache = new Map<string, GpuKernel>();
/**
 * At most this many compiled kernels (one function called with 200 batch sizes
 * kept 200 sets of kernels, RSS 163 -> 483 MB). Least recently used first out; an evicted kernel
 * is destroyed (its program and its own textures; results already returned hold their own
 * references), and compiles again if needed.
 */
export const MAX_GPU_KERNELS = 256;
let maxKernels = MAX_GPU_KERNELS;
/** Tests: a smaller cap, so eviction is reached in a few calls (undefined restores the default). */
export function _setMaxGpuKernels(n: number | undefined): void {
  maxKernels = n ?? MAX_GPU_KERNELS;
}

export function gpuKernelCount(): number {
  return cache.size;
}

/** Destroys every compiled kernel (clear_session). */
export function clearGpuKernels(): void {
  for (const k of cache.values()) destroyKernel(k);
  cache.clear();
}

function destroyKernel(k: GpuKernel): void {
  try {
    k.destroy();
  } catch {
    // a kernel whose context is already gone has nothing left to free
  }
}

/** `kinds`: each argument's kind and size, which gpu.js bakes into the compiled kernel. */
function kernelFor(device: GpuDevice, k: KernelSource, kinds: string): GpuKernel {
  const key = `${k.size}|${kinds}|${k.source}`;
  let kernel = cache.get(key);
  if (kernel !== undefined) {
    cache.delete(key); // most recently used last
    cache.set(key, kernel);
  } else {
    if (cache.size >= maxKernels) {
      const [oldKey, old] = cache.entries().next().value!;
      cache.delete(oldKey);
      destroyKernel(old);
    }
    kernel = device.gpu.createKernel(k.source, {
      output: [k.size],
      pipeline: true,
      // Each run returns its own clone of the output texture; gpu.js then also handles a kernel
      // whose argument is its own previous output (a variable updated by the same kernel).
      immutable: true,
      precision: 'single',
      // highp everywhere: float32 results must not depend on the driver's default precision.
      tactic: 'precision',
      functions: [...k.functions],
    });
    cache.set(key, kernel);
    stats.kernelsCompiled++;
    if (debugEnabled('gpu')) debugLog(`gpu kernel (${device.name}, ${k.size} elements):\n${k.source}`);
  }
  return kernel;
}

/** The kernel run last (its GL context is the device's). */
let lastKernel: GpuKernel | undefined;

/**
 * Waits until the device has finished every kernel run so far: gl.finish() on the GL context
 * (gpu.js' headless-gl, WebGL and WebGL2 modes); webasm kernels run synchronously. The profiler
 * times a step up to here.
 */
export function finishKernels(): void {
  const ctx = (lastKernel as { kernel?: { context?: { finish?: () => void } } } | undefined)?.kernel?.context;
  ctx?.finish?.();
}

/** Runs a kernel on device buffers, host arrays and numbers (offsets and slots in scans). */
export function runKernel(
  device: GpuDevice,
  k: KernelSource,
  args: readonly (DeviceBuffer | Float32Array | number)[],
): DeviceBuffer {
  const raw: KernelArg[] = args.map((a) => (a instanceof DeviceBuffer ? a.arg : a));
  const kinds = args
    .map((a) => (typeof a === 'number' ? 'n' : a instanceof Float32Array ? `a${a.length}` : `t${a.size}`))
    .join(',');
  const kernel = kernelFor(device, k, kinds);
  lastKernel = kernel;
  return DeviceBuffer.fromKernel(kernel(...raw), k.size);
}

const UPLOAD = 'function (a0) {\n  return a0[this.thread.x];\n}';

/** Copies host data to a device buffer (a variable's first use on the gpu). */
export function uploadKernelRun(device: GpuDevice, data: Float32Array): DeviceBuffer {
  return runKernel(device, { source: UPLOAD, functions: [], size: data.length }, [data]);
}
