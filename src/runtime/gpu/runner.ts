// One call's state on the gpu device: values on the host, on the device or both, and the
// kernel runs of the call (each result a device buffer owned by the current scope, released
// when the scope ends: the call, or one step of a Scan loop).
import type { DType } from '../../ir/dtype.js';
import type { NDArray } from '../../ir/ndarray.js';
import type { EvalContext } from '../../ir/op.js';
import type { KernelSource } from '../../codegen/gpu/source.js';
import type { DeviceBuffer } from './buffer.js';
import type { GpuDevice } from './device.js';
import { runKernel } from './kernels.js';
import { stats } from './stats.js';
import type { KernelTimer } from '../profile.js';
import { sizeOf } from '../../ir/ndarray.js';

/** A value during a call: on the host, on the device, or both (a read-back copy). */
export interface Val {
  readonly shape: readonly number[];
  readonly dtype: DType;
  host: NDArray | undefined;
  dev: DeviceBuffer | undefined;
}

export { sizeOf };

export function hostValue(v: Val): NDArray {
  v.host ??= v.dev!.toNDArray(v.shape, v.dtype);
  return v.host;
}

export const hostVal = (nd: NDArray): Val => ({ shape: nd.shape, dtype: nd.dtype, host: nd, dev: undefined });

/** One call's evaluation state: the device, the call's context, and the buffers it owns. */
export class Runner {
  /** Buffers made in the current scope, released when it ends (scan steps open their own). */
  owned: DeviceBuffer[] = [];

  /** Where the steps run now are (a Scan body's: under its Scan's path and name), for the profiler. */
  at = { path: '', name: '', depth: 0 };

  /** `timer`: the profiler's (K.function's `profile`), which times each step, the device finished (`finish`), and the steps' rows. */
  constructor(
    readonly device: GpuDevice,
    readonly ctx: EvalContext,
    readonly timer?: KernelTimer,
    readonly finish: () => void = () => {},
  ) {}

  /** Runs a kernel; its result belongs to the current scope. */
  run(k: KernelSource, args: readonly (DeviceBuffer | Float32Array | number)[]): DeviceBuffer {
    const buf = runKernel(this.device, k, args);
    this.owned.push(buf);
    stats.kernelRuns++;
    return buf;
  }
}
