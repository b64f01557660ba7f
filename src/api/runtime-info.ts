// What a caller (the CLI, a page, a test harness) may ask of the runtime without reaching into
// it: which backend and device the configuration picks, what would run there, and where warnings
// go. The CLI uses only these and the rest of the package's surface.
import { backend, device, type BackendName, type DeviceName } from './config.js';
import { ortAvailable, requestedProvider } from '../runtime/onnx/session.js';
import { gpuDevice, webgpuRequested } from '../runtime/gpu/device.js';
import { webgpu } from '../runtime/gpu/webgpu/session.js';
import { tfjsRuntime } from '../runtime/tfjs/load.js';

export { setWarningSink } from '../runtime/warn.js';
export type { WarningSink } from '../runtime/warn.js';
export type { BackendName, DeviceName } from './config.js';
export { GPU_MODE_CHOICES } from '../runtime/gpu/device.js';

/** The backend and device a `K.function` without options uses (KERAS_BACKEND, THEANINE_DEVICE, keras.json). */
export function configuredTarget(): { backend: BackendName; device: DeviceName } {
  return { backend: backend(), device: device() };
}

/**
 * One line saying what runs for `backend` and `device`: TensorFlow.js' flavour, ONNX Runtime's
 * execution provider, or the gpu device's mode and adapter. Loads the optional package the
 * choice needs, so a missing one is an error here (naming it) rather than at the first call.
 */
export function describeTarget(backendName: BackendName, deviceName: DeviceName): string {
  const ignored = deviceName === 'gpu' ? ' (the configured device gpu applies to the theanine backend only)' : '';
  if (backendName === 'tensorflow') {
    const rt = tfjsRuntime();
    const why = rt.notes.length > 0 ? `; ${rt.notes.join('; ')}` : '';
    return `backend tensorflow, tfjs flavour ${rt.flavour} (TensorFlow.js backend "${rt.backendName}"${why}), device cpu${ignored}`;
  }
  if (backendName === 'onnx') {
    const missing = ortAvailable();
    if (missing !== undefined) throw new Error(missing);
    return `backend onnx, ONNX Runtime execution provider ${requestedProvider()}${ignored}`;
  }
  if (deviceName === 'gpu') {
    // THEANINE_GPU_MODE / keras.json "gpu_mode": webgpu, or auto where an adapter opens
    if (webgpuRequested())
      return `backend theanine, device gpu:webgpu (WGSL on WebGPU, adapter ${webgpu().description})`;
    const d = gpuDevice();
    return `backend theanine, device ${d.name} (${d.description})`;
  }
  return 'backend theanine, device cpu (generated JavaScript)';
}
