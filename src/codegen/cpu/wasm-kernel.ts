// The WebAssembly matmul kernel's module and the packing arena it sums from. The kernel is
// assembled in ../wasm/matmul.ts; packing buffers live in the instance's memory, so the kernel
// reads them in place; where WebAssembly SIMD is missing, compiled functions use the JavaScript
// kernel (microkernel.ts).
import { SHARED_MAX_PAGES, WA, type WasmMemory, type WasmModule } from '../wasm/encode.js';
import { matmulModuleBytes } from '../wasm/matmul.js';
import { type PanelBlock, runHere, threadCount, threadPool } from './threads.js';

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

let sharedCompiled: WasmModule | null | undefined;
/** The module over a shared memory (threads.ts), or null where the runtime has no shared WebAssembly memory. */
function sharedTileModule(): WasmModule | null {
  if (wasmTileModule() === null) return null;
  if (sharedCompiled === undefined) {
    try {
      sharedCompiled = typeof SharedArrayBuffer === 'function' ? new WA!.Module(matmulModuleBytes(true)) : null;
    } catch {
      sharedCompiled = null;
    }
  }
  return sharedCompiled;
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
  /** Whether the memory is shared with the thread pool (made so when more than one thread is configured). */
  private shared = false;
  /** The kernel over this arena's memory (undefined: use the JavaScript kernel). */
  tile: WasmTile | undefined;
  /** Its blocked form (panelBlock), for whole products (tiles()). */
  private block: PanelBlock | undefined;
  /** Bytes it holds now. */
  get bytes(): number {
    return this.memory?.buffer.byteLength ?? this.view.byteLength;
  }

  /**
   * Lets the memory go (clear_session; one 1200x1200 matmul kept 27.6 MB). A
   * WebAssembly memory cannot shrink, so the next matmul makes a new one of the size it needs.
   */
  release(): void {
    if (this.shared) threadPool()?.setMemory(undefined);
    this.shared = false;
    this.memory = undefined;
    this.tile = undefined;
    this.view = new Float64Array(0);
  }

  f64(n: number): Float64Array {
    const m = wasmTileModule();
    // Shared (for the worker threads) where more than one thread is configured and n fits a shared memory.
    // A shared arena stays shared while n fits (one thread then sums in it alone), so that changing
    // the thread count does not make a new memory per call.
    const sm = m !== null && (this.shared || threadCount() > 1) && n * 8 <= SHARED_MAX_PAGES * 65536 ? sharedTileModule() : null;
    const shared = sm !== null;
    if (n <= this.view.length && (m !== null) === (this.tile !== undefined) && shared === this.shared) return this.view;
    if (m === null) {
      this.memory = undefined;
      this.tile = undefined;
      this.view = new Float64Array(Math.max(n, 2 * this.view.length));
      return this.view;
    }
    const pages = Math.min(Math.ceil(Math.max(n * 8, 2 * this.view.length * 8) / 65536), shared ? SHARED_MAX_PAGES : Infinity);
    if (this.memory === undefined || this.tile === undefined || this.memory.buffer.byteLength === 0 || shared !== this.shared) {
      if (this.shared) threadPool()?.setMemory(undefined);
      this.shared = shared;
      this.memory = shared ? new WA!.Memory({ initial: pages, maximum: SHARED_MAX_PAGES, shared: true }) : new WA!.Memory({ initial: pages });
      const ex = new WA!.Instance(shared ? sm : m, { env: { mem: this.memory } }).exports;
      this.tile = ex['rowPanel'] as WasmTile;
      this.block = ex['panelBlock'] as PanelBlock;
      if (shared) threadPool(true)?.setMemory(this.memory, sm);
    } else {
      this.memory.grow(pages - this.memory.buffer.byteLength / 65536);
    }
    this.view = new Float64Array(this.memory.buffer);
    return this.view;
  }

  /**
   * The tile sums of a whole product, split over the thread pool where the memory is shared:
   * B batches of MP A panels, A panel (b, i) at pa0 + (b*MP + i)*strideA, against the NP B panels
   * of its batch (pb0 + b*strideB), K long; tile (b, i, q)'s sums at acc0 + ((b*MP + i)*NP + q)*128
   * (byte offsets). Blocks of A panels that fit L2 together go to one thread at a time.
   */
  tiles(pa0: number, strideA: number, pb0: number, strideB: number, MP: number, K: number, acc0: number, NP: number, B: number): void {
    const G = Math.max(1, Math.min(16, Math.floor(BLOCK_BYTES / strideA)));
    const job = [0, B * Math.ceil(MP / G), MP, G, pa0, strideA, pb0, strideB, K, acc0, NP] as const;
    const threads = this.shared ? threadCount() : 1;
    const pool = threadPool();
    if (threads > 1 && job[1] > 1 && pool !== undefined) pool.run(threads, this.block!, [], job);
    else runHere(this.block!, [], job);
  }
}

/** Bytes of a block of A panels (summed against each B panel in turn while it is in L1): a share of L2. */
const BLOCK_BYTES = 256 * 1024;

/** The thread pool, once started (tests). */
export { threadPool };

export const packArena = new PackArena();
