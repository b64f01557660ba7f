// Device buffers: a value computed by a kernel and kept on the device (a GL texture), or in
// webasm mode the Float32Array gpu.js returns instead. Each DeviceBuffer is one reference to
// the texture (gpu.js counts clones). Kernels are immutable pipeline kernels: each run returns
// a clone of the kernel's output texture, and a kernel that runs again while a clone is held
// renders into a fresh texture, so held results are never overwritten; once every clone is
// released the kernel renders into its old texture again (no allocation in a steady loop).
import type { DType } from '../../ir/dtype.js';
import { NDArray } from '../../ir/ndarray.js';
import type { GpuTexture } from './gpujs.js';
import { stats } from './stats.js';

export class DeviceBuffer {
  private released = false;

  private constructor(
    private readonly value: GpuTexture | Float32Array,
    readonly size: number,
  ) {}

  /** Owns what an immutable pipeline kernel returned (already a reference of its own). */
  static fromKernel(result: GpuTexture | Float32Array, size: number): DeviceBuffer {
    return new DeviceBuffer(result, size);
  }

  /** What to pass to a kernel. */
  get arg(): GpuTexture | Float32Array {
    if (this.released) throw new Error('internal: a released device buffer was used');
    return this.value;
  }

  /** Another reference to the same data (for a second owner such as a second variable). */
  share(): DeviceBuffer {
    return new DeviceBuffer(this.value instanceof Float32Array ? this.value : this.value.clone(), this.size);
  }

  /** Reads the values back to the host as a flat Float32Array of `size` elements. */
  read(): Float32Array {
    if (this.released) throw new Error('internal: a released device buffer was read');
    stats.readbacks++;
    // webasm's array stays the buffer's (a kernel may read it again), so the host gets a copy.
    if (this.value instanceof Float32Array) return this.value.slice(0, this.size);
    const a = this.value.toArray();
    if (a instanceof Float32Array) return a.length === this.size ? a : a.subarray(0, this.size);
    throw new Error('internal: gpu kernels have 1-D outputs');
  }

  toNDArray(shape: readonly number[], dtype: DType): NDArray {
    // The NDArray constructor converts float32 to the dtype's storage (exact: the kernels
    // already stored each value as its dtype keeps it).
    return new NDArray(this.read(), shape, dtype);
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    if (!(this.value instanceof Float32Array)) this.value.delete();
  }
}
