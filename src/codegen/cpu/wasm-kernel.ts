// The WebAssembly matmul kernel's module and the packing arena it sums from. The kernel is
// assembled in ../wasm/matmul.ts; packing buffers live in the instance's memory, so the kernel
// reads them in place; where WebAssembly SIMD is missing, compiled functions use the JavaScript
// kernel (microkernel.ts).
import { WA, type WasmMemory, type WasmModule } from '../wasm/encode.js';
import { matmulModuleBytes } from '../wasm/matmul.js';

export type { WasmMemory };

let compiled: WasmModule | null | undefined;
let enabled = true;

/** Turns the WebAssembly kernel off or on (tests run the JavaScript kernel with it off). */
export function setWasmKernel(on: boolean): void {
  if (on !== enabled) packArena.tile = undefined; // the arena switches kind at its next use
  enabled = on;
}

/** The compiled module, or null where WebAssembly SIMD is not available (or it is turned off). */
export function wasmTileModule(): WasmModule | null {
  if (!enabled) return null;
  if (compiled === undefined) {
    try {
      compiled = WA === undefined ? null : new WA.Module(matmulModuleBytes());
    } catch {
      compiled = null;
    }
  }
  return compiled;
}

/** One A panel against n consecutive B panels; tile q's sums at acc + 128 q (../wasm/matmul.ts). */
export type WasmTile = (pa: number, pb: number, K: number, acc: number, n: number) => void;

/**
 * The packing arena, one per process: matmul operands are packed into it and summed from it,
 * one matmul step at a time (steps never overlap). With WebAssembly it is the kernel instance's
 * memory, grown on demand (a memory per compiled function would exhaust the address space V8
 * reserves per memory); otherwise a Float64Array. `f64(n)` returns a view of at least n doubles,
 * valid until the next call (growing detaches the old one).
 */
export class PackArena {
  private memory: WasmMemory | undefined;
  private view = new Float64Array(0);
  /** The kernel over this arena's memory (undefined: use the JavaScript kernel). */
  tile: WasmTile | undefined;
  /** Bytes it holds now. */
  get bytes(): number {
    return this.memory?.buffer.byteLength ?? this.view.byteLength;
  }

  /**
   * Lets the memory go (clear_session; issue 14 item 4: one 1200x1200 matmul kept 27.6 MB). A
   * WebAssembly memory cannot shrink, so the next matmul makes a new one of the size it needs.
   */
  release(): void {
    this.memory = undefined;
    this.tile = undefined;
    this.view = new Float64Array(0);
  }

  f64(n: number): Float64Array {
    const m = wasmTileModule();
    if (n <= this.view.length && (m !== null) === (this.tile !== undefined)) return this.view;
    if (m === null) {
      this.memory = undefined;
      this.tile = undefined;
      this.view = new Float64Array(Math.max(n, 2 * this.view.length));
      return this.view;
    }
    const bytes = Math.max(n * 8, 2 * this.view.length * 8);
    if (this.memory === undefined || this.tile === undefined || this.memory.buffer.byteLength === 0) {
      this.memory = new WA!.Memory({ initial: Math.ceil(bytes / 65536) });
      this.tile = new WA!.Instance(m, { env: { mem: this.memory } }).exports['rowPanel'] as WasmTile;
    } else {
      this.memory.grow(Math.ceil((bytes - this.memory.buffer.byteLength) / 65536));
    }
    this.view = new Float64Array(this.memory.buffer);
    return this.view;
  }
}

export const packArena = new PackArena();
