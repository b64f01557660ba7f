// The WebAssembly matmul kernel's module and the packing arena it sums from. The kernel is
// assembled in ../wasm/matmul.ts; packing buffers live in the instance's memory, so the kernel
// reads them in place; where WebAssembly SIMD is missing, compiled functions use the JavaScript
// kernel (microkernel.ts).
import { handoffMeasured, handoffThreads } from './handoff.js';
import { hasRelaxedSimd, SHARED_MAX_PAGES, WA, type WasmMemory, type WasmModule } from './wasm/encode.js';
import { matmulModuleBytes, TILE32, TILE32_WIDE } from './wasm/matmul.js';
import { rowsModuleBytes } from './wasm/rows.js';
import {
  BLOCK_EXPORTS,
  type MatmulJob,
  NO_OPERAND,
  type PackOperand,
  type PackPanel,
  type PanelBlock,
  type RowVec,
  runHere,
  threadCount,
  threadPool,
} from './threads.js';

export type { WasmMemory };

let compiled: WasmModule | null | undefined;
let sharedCompiled: WasmModule | null | undefined;
let enabled = true;

/** Turns the WebAssembly kernel off or on (tests run the JavaScript kernel with it off). */
export function setWasmKernel(on: boolean): void {
  if (on !== enabled) packArena.tile = undefined; // the arena switches kind at its next use
  enabled = on;
}

let relaxed: boolean | undefined;
let fmaOverride: boolean | undefined;

/**
 * Whether the float32 kernels use relaxed-SIMD multiply-adds (f32x4.relaxed_madd): where the
 * runtime validates a module using them (hasRelaxedSimd), unless setMatmulFma turned them off.
 */
export function matmulFma(): boolean {
  relaxed ??= hasRelaxedSimd();
  return relaxed && (fmaOverride ?? true);
}

/**
 * Turns the relaxed-SIMD multiply-add of the float32 kernels off (false), on (true: an error
 * where the runtime has no relaxed SIMD) or back to the runtime's choice (undefined). The kernel
 * module is rebuilt and the packing arena let go (tests run both forms).
 */
export function setMatmulFma(on: boolean | undefined): void {
  if (on !== undefined && typeof on !== 'boolean')
    throw new TypeError(`setMatmulFma: argument on is ${String(on)}; allowed: true, false or undefined`);
  relaxed ??= hasRelaxedSimd();
  if (on === true && !relaxed)
    throw new Error(
      'setMatmulFma: argument on is true, but this runtime has no relaxed SIMD (f32x4.relaxed_madd does not validate)',
    );
  if (on === fmaOverride) return;
  fmaOverride = on;
  compiled = undefined;
  sharedCompiled = undefined;
  packArena.release();
}

/**
 * The float32 register tile a matrix product is lowered for: 8 x 4 (./wasm/matmul.ts), with
 * fused multiply-adds or without. The 12 x 4 tile (TILE32_WIDE, panelBlock32w) holds 12 sums,
 * 3 A vectors and 4 splats, more than V8's 15 vector registers on x64 once TurboFan schedules a
 * step's loads ahead of its arithmetic, so it spills: 1024 x 1024 x 1024 with relaxed SIMD, one
 * thread, 27 GFLOP/s at one step of K per pass and 39.5 at two, against 49.8 for 8 x 4 at one
 * (AMD EPYC, Node 20 with relaxed SIMD on, CPU time).
 */
export function tile32(): { readonly mr: number; readonly nr: number } {
  return TILE32;
}

/**
 * The blocked kernel (BLOCK_EXPORTS' index) that sums a product of this tile: float64 4 x 4,
 * float32 8 x 4 or 12 x 4; with `rows`, the float32 ones that store their sums row-major.
 */
export function blockVariant(mr: number, f32: boolean, rows = false): number {
  if (!f32) return 0;
  if (mr === TILE32.mr) return rows ? 3 : 1;
  if (mr === TILE32_WIDE.mr) return rows ? 4 : 2;
  throw new Error(`internal: no float32 kernel of ${mr} rows`);
}

/**
 * The dtype float32 matrix products sum in: "float32" (four-lane SIMD, within the bound of
 * docs/architecture.md, as XNNPACK and BLAS sum them) or "float64" (two lanes, equal to the
 * reference interpreter bit for bit). JAX's default_matmul_precision is the anchor: a stated,
 * switchable accuracy choice ("float64" is its "highest").
 */
export type MatmulPrecision = 'float32' | 'float64';
export const MATMUL_PRECISIONS: readonly MatmulPrecision[] = ['float32', 'float64'];
/** The precision when neither keras.json nor THEANINE_MATMUL_PRECISION sets one: float32 sums, as TensorFlow.js, XNNPACK and JAX on cpu. */
export const DEFAULT_MATMUL_PRECISION: MatmulPrecision = 'float32';

let configuredPrecision: () => MatmulPrecision | undefined = () => undefined;

/** Where the configured precision comes from (src/api/config.ts; codegen does not import the API). */
export function setConfiguredMatmulPrecision(read: () => MatmulPrecision | undefined): void {
  configuredPrecision = read;
}

/** The matmul precision functions made now are compiled with (keras.json "matmul_precision", THEANINE_MATMUL_PRECISION). */
export function matmulPrecision(): MatmulPrecision {
  return configuredPrecision() ?? DEFAULT_MATMUL_PRECISION;
}

/** The kernel module's bytes by what they depend on (tileKey), as assembled or handed over (seedTileModules) in this process. */
const tileBytes = new Map<string, Uint8Array>();
const tileKey = (shared: boolean, fma: boolean): string => `wasm-tiles;shared:${shared};fma:${fma}`;

/** The kernel module's bytes for this process's settings, assembled once per key. */
function tileModuleBytes(shared: boolean): { key: string; bytes: Uint8Array } {
  const fma = matmulFma();
  const key = tileKey(shared, fma);
  let bytes = tileBytes.get(key);
  if (bytes === undefined) {
    tileBytes.set(key, (bytes = matmulModuleBytes(shared, fma)));
    tileModuleStats.assembled++;
  }
  return { key, bytes };
}

/** Kernel modules whose bytes were assembled here, and compiled from bytes handed over (tests). */
export const tileModuleStats = { assembled: 0, handedOver: 0 };

/** The compiled kernel module: from bytes handed over (seedTileModules) when they compile, else from bytes assembled here. */
function compileTiles(shared: boolean): WasmModule {
  const { key, bytes } = tileModuleBytes(shared);
  try {
    const m = new WA!.Module(bytes);
    if (seeded.has(key)) tileModuleStats.handedOver++;
    return m;
  } catch (e) {
    if (!seeded.delete(key)) throw e;
    tileBytes.delete(key);
    return new WA!.Module(tileModuleBytes(shared).bytes);
  }
}
const seeded = new Set<string>();

/**
 * The kernel modules' bytes a compiled function needs with this process's settings (the compile
 * cache on disk stores them beside a specialisation, runtime/compile-disk.ts): the module's, and
 * the shared-memory module's where more than one thread is configured. Empty without WebAssembly.
 */
export function tileModuleImages(): (readonly [string, Uint8Array])[] {
  if (wasmTileModule() === null) return [];
  const kinds = threadCount() > 1 && typeof SharedArrayBuffer === 'function' ? [false, true] : [false];
  return kinds.map((shared) => {
    const t = tileModuleBytes(shared);
    return [t.key, t.bytes] as const;
  });
}

/** Hands over kernel modules' bytes by key (tileModuleImages' of another process): a module not compiled yet compiles from them instead of assembling its bytes. */
export function seedTileModules(images: readonly (readonly [string, Uint8Array])[]): void {
  for (const [key, bytes] of images) {
    if (tileBytes.has(key) || !(bytes instanceof Uint8Array)) continue;
    tileBytes.set(key, bytes);
    seeded.add(key);
  }
}

/** The compiled module, or null where WebAssembly SIMD is not available (or it is turned off). */
export function wasmTileModule(): WasmModule | null {
  if (!enabled) return null;
  if (compiled === undefined) {
    try {
      compiled = WA === undefined ? null : compileTiles(false);
    } catch {
      compiled = null;
    }
  }
  return compiled;
}

/** The module over a shared memory (threads.ts), or null where the runtime has no shared WebAssembly memory. */
export function sharedTileModule(): WasmModule | null {
  if (wasmTileModule() === null) return null;
  if (sharedCompiled === undefined) {
    try {
      sharedCompiled = typeof SharedArrayBuffer === 'function' ? compileTiles(true) : null;
    } catch {
      sharedCompiled = null;
    }
  }
  return sharedCompiled;
}

/** rows32's modules (./wasm/rows.ts) by form: over a shared memory or not, fused multiply-adds or not. */
const rowsModules = new Map<string, WasmModule>();

/** rows32's module for an arena memory that is `shared` (or not), in the tile kernels' form (matmulFma). */
export function rowsModule(shared: boolean): WasmModule {
  const fused = matmulFma();
  const key = `${shared}|${fused}`;
  let m = rowsModules.get(key);
  if (m === undefined) rowsModules.set(key, (m = new WA!.Module(rowsModuleBytes(shared, fused))));
  return m;
}

/** One A panel against n consecutive B panels; tile q's sums at acc + 128 q (../wasm/matmul.ts). */
export type WasmTile = (pa: number, pb: number, K: number, acc: number, n: number) => void;

/**
 * A packed operand kept in the packing arena across calls: a product operand that is a graph
 * constant, a variable's value, or a Scan's step-invariant operand. `at` is its offset in the
 * arena (doubles; -1 while it has no place), `source` the array it was last packed from: the
 * pack is current while the operand reads that same array. Constants' arrays never change, and
 * a variable's value is never written in place (set_value, batch_set_value and K.function's
 * updates give its cell a new NDArray), so the array's identity is the variable's version.
 * XNNPACK is the anchor: it packs static weights once, when the operator is created.
 */
export class KeptPack {
  at = -1;
  /** The arena's generation it was placed in (a released arena places it anew). */
  gen = -1;
  source: unknown = undefined;
  /** The array last read in place of this pack (rowsFirst), and in how many calls in a row. */
  rowSource: unknown = undefined;
  rowUses = 0;
  /** Whose it is (KeptSlot.pick), and when it was last picked. */
  owner: unknown = undefined;
  used = 0;
  constructor(
    /** Doubles it takes. */
    readonly size: number,
  ) {}
}

/** Kept packs one product operand of a compiled function may have: one per variable it reads. */
export const KEPT_PER_SLOT = 2;

/**
 * The kept packs of one product operand of a compiled function. Functions rebuilt over other
 * variables share the compiled program (the program cache's twins: two models of one
 * architecture, a network and its target copy), so the operand has a pack per variable cell it
 * has read, up to KEPT_PER_SLOT, the least recently used given to the next; a constant's operand
 * (owner null) has one.
 */
export class KeptSlot {
  readonly packs: KeptPack[] = [];
  constructor(
    /** Doubles each pack takes. */
    readonly size: number,
  ) {}
}

/** Kept packs start on 64-byte boundaries (8 doubles). */
const KEPT_ALIGN = 8;

/**
 * The packing arena, one per process: matmul operands are packed into it and summed from it,
 * one matmul step at a time (steps never overlap). With WebAssembly it is the kernel instance's
 * memory, grown on demand (a memory per compiled function would exhaust the address space V8
 * reserves per memory); otherwise a Float64Array. Its first `base` doubles hold the kept packs
 * (KeptPack: placed first fit, freed with the function that owns them); each matmul step's own
 * packs and sums come after them. `f64(n)` returns a view of the arena with at least n doubles
 * past `base`, valid until the next call (growing detaches the old one).
 */
export class PackArena {
  private memory: WasmMemory | undefined;
  /** Kept packs placed now, by offset. */
  private kept: KeptPack[] = [];
  private gen = 0;
  /** Where a step's own packs and sums start (doubles): past every kept pack. */
  base = 0;
  /** Whether kept packs are reused while current (off: made again at every use, as packs of other operands are; bench/ compares). */
  reuse = true;
  /** Kept packs made so far (tests count them). */
  packsMade = 0;
  /** Kept operands copied row-major instead of packed (rowsFirst; tests count them). */
  rowCopies = 0;
  private picks = 0;
  private view = new Float64Array(0);
  private view32 = new Float32Array(0);
  /** Whether the memory is shared with the thread pool (made so when more than one thread is configured). */
  private shared = false;
  /** The kernel over this arena's memory (undefined: use the JavaScript kernel). */
  tile: WasmTile | undefined;
  /** The blocked kernels (panelBlock, panelBlock32, panelBlock32w...) and pack32 (BLOCK_EXPORTS), for whole products (tiles()) and float32 rows of tiles. */
  blocks: (PanelBlock | PackPanel | RowVec)[] = [];
  /** Operands staged (stage()) and not packed yet: tiles() packs them first. */
  private pending: PackOperand[] = [];
  /** The WebAssembly memory the packs and sums live in (undefined: the JavaScript kernel's Float64Array); other kernels over it (./wasm/rows.ts) instantiate on it. */
  get wasmMemory(): WasmMemory | undefined {
    return this.tile === undefined ? undefined : this.memory;
  }

  /** Bytes it holds now. */
  get bytes(): number {
    return this.memory?.buffer.byteLength ?? this.view.byteLength;
  }

  /**
   * Lets the memory go (clear_session; one 1200x1200 matmul kept 27.6 MB). A
   * WebAssembly memory cannot shrink, so the next matmul makes a new one of the size it needs.
   */
  release(): void {
    this.gen++;
    this.kept = [];
    this.base = 0;
    if (this.shared) threadPool()?.setMemory(undefined);
    this.shared = false;
    this.memory = undefined;
    this.tile = undefined;
    this.blocks = [];
    this.pending = [];
    this.view = new Float64Array(0);
    this.view32 = new Float32Array(0);
  }

  /** A float32 view of the arena as the last f64(n) made it (float32 products' packs and sums live there). */
  f32(): Float32Array {
    return this.view32;
  }

  /**
   * Whether kept pack `p` must be packed (from `source`) before this step reads it: it has no
   * place in the arena yet (placed now, which may move `base`: call it before f64), or it was
   * packed from another array. The step then packs it and calls packed(p, source).
   */
  stale(p: KeptPack, source: unknown): boolean {
    if (p.gen !== this.gen || p.at < 0) this.place(p);
    return p.source !== source || !this.reuse;
  }

  /** The pack of `slot` that `owner` (a variable's cell, or null) uses. */
  pick(slot: KeptSlot, owner: unknown): KeptPack {
    let lru: KeptPack | undefined;
    for (const p of slot.packs) {
      if (p.owner === owner) {
        p.used = ++this.picks;
        return p;
      }
      if (lru === undefined || p.used < lru.used) lru = p;
    }
    let p = lru;
    if (p === undefined || slot.packs.length < KEPT_PER_SLOT) slot.packs.push((p = new KeptPack(slot.size)));
    p.owner = owner;
    p.source = undefined;
    p.used = ++this.picks;
    return p;
  }

  /** Gives back the places of every pack of `slot`. */
  freeSlot(slot: KeptSlot): void {
    for (const p of slot.packs) this.free(p);
  }

  /**
   * Whether a stale pack `p` of `source`, which a few-row product can also read row-major from a
   * copy (small-matmul.ts smallB), is read so at this call instead of packed: until `source` has
   * been read so in `uses` calls in a row (then packing pays: the caller packs it), always where
   * reuse is off. The copy goes into p's place, so p holds no pack until packed again.
   */
  rowsFirst(p: KeptPack, source: unknown, uses: number): boolean {
    if (p.rowSource === source) p.rowUses++;
    else {
      p.rowSource = source;
      p.rowUses = 1;
    }
    if (this.reuse && p.rowUses > uses) return false;
    p.source = undefined;
    this.rowCopies++;
    return true;
  }

  /** Records that `p` now holds the pack of `source`. */
  packed(p: KeptPack, source: unknown): void {
    p.source = source;
    this.packsMade++;
  }

  /** Gives p's place back (its function is dropped); a later stale(p) places it again. */
  free(p: KeptPack): void {
    if (p.gen === this.gen && p.at >= 0) {
      this.kept.splice(this.kept.indexOf(p), 1);
      const last = this.kept[this.kept.length - 1];
      this.base = last === undefined ? 0 : align(last.at + last.size);
    }
    p.at = -1;
    p.source = undefined;
  }

  /** Doubles the kept packs hold (tests). */
  get keptDoubles(): number {
    return this.kept.reduce((a, p) => a + p.size, 0);
  }

  /** First fit among the kept packs, else at the end (moving `base`). */
  private place(p: KeptPack): void {
    let at = 0,
      i = 0;
    for (; i < this.kept.length; i++) {
      const q = this.kept[i]!;
      if (q.at - at >= p.size) break;
      at = align(q.at + q.size);
    }
    this.kept.splice(i, 0, p);
    p.at = at;
    p.gen = this.gen;
    p.source = undefined;
    this.base = Math.max(this.base, align(at + p.size));
  }

  f64(n: number): Float64Array {
    // A matrix product's step starts here: operands staged by an earlier one that never reached
    // its tiles() (an error in between) are dropped, not packed over this one's buffers.
    this.pending = [];
    n += this.base;
    const m = wasmTileModule();
    // Shared (for the worker threads) where more than one thread is configured and n fits a shared memory.
    // A shared arena stays shared while n fits (one thread then sums in it alone), so that changing
    // the thread count does not make a new memory per call.
    const sm =
      m !== null && (this.shared || threadCount() > 1) && n * 8 <= SHARED_MAX_PAGES * 65536 ? sharedTileModule() : null;
    const shared = sm !== null;
    if (n <= this.view.length && (m !== null) === (this.tile !== undefined) && shared === this.shared) return this.view;
    // A new memory takes the kept packs along (a grown WebAssembly memory keeps its bytes).
    const old = this.view;
    const carry = () => {
      if (this.base > 0) this.view.set(old.subarray(0, Math.min(this.base, old.length)));
    };
    if (m === null) {
      this.memory = undefined;
      this.tile = undefined;
      this.blocks = [];
      this.view = new Float64Array(Math.max(n, 2 * this.view.length));
      this.view32 = new Float32Array(this.view.buffer);
      carry();
      return this.view;
    }
    let made = false;
    const pages = Math.min(
      Math.ceil(Math.max(n * 8, 2 * this.view.length * 8) / 65536),
      shared ? SHARED_MAX_PAGES : Infinity,
    );
    if (
      this.memory === undefined ||
      this.tile === undefined ||
      this.memory.buffer.byteLength === 0 ||
      shared !== this.shared
    ) {
      if (this.shared) threadPool()?.setMemory(undefined);
      this.shared = shared;
      this.memory = shared
        ? new WA!.Memory({ initial: pages, maximum: SHARED_MAX_PAGES, shared: true })
        : new WA!.Memory({ initial: pages });
      made = true;
      const ex = new WA!.Instance(shared ? sm : m, { env: { mem: this.memory } }).exports;
      this.tile = ex['rowPanel'] as WasmTile;
      this.blocks = BLOCK_EXPORTS.map((k) => ex[k] as PanelBlock | PackPanel | RowVec);
      if (shared) threadPool(true)?.setMemory(this.memory, sm, rowsModule(true));
    } else {
      this.memory.grow(pages - this.memory.buffer.byteLength / 65536);
    }
    this.view = new Float64Array(this.memory.buffer);
    this.view32 = new Float32Array(this.memory.buffer);
    if (made) carry();
    return this.view;
  }

  /**
   * Stages a strided float32 operand for packing by the thread pool: copies src[lo, hi) (every
   * element the operand reads) into the arena at byte offset `at` (TypedArray.set, a memory
   * copy: workers cannot read the caller's arrays) and queues its packing, which the next
   * tiles() runs on the pool before the sums: element (b, r, t) is src[base + b*sb + r*sr + t*st],
   * panels of p rows (rows past `rows` zero) at byte offset dst, as packStrided lays them out.
   * Only for arenas of the WebAssembly kernel (whole products).
   */
  stage(
    src: Float32Array,
    lo: number,
    hi: number,
    at: number,
    base: number,
    sb: number,
    sr: number,
    st: number,
    dst: number,
    batch: number,
    rows: number,
    K: number,
    p: number,
  ): void {
    this.view32.set(hi - lo === src.length ? src : src.subarray(lo, hi), at / 4);
    const panels = Math.ceil(rows / p);
    // claims of about 64 KiB of packed panels, at least 4 per thread
    const threads = this.shared ? threadCount() : 1;
    const per = Math.max(1, Math.min(Math.floor(65536 / (K * p * 4)), Math.ceil((batch * panels) / (4 * threads))));
    this.pending.push([
      batch * Math.ceil(panels / per),
      at + (base - lo) * 4,
      sb * 4,
      sr * 4,
      st * 4,
      dst,
      rows,
      K,
      p,
      per,
    ]);
  }

  /**
   * The tile sums of a whole product, split over the thread pool where the memory is shared:
   * B batches of MP A panels, A panel (b, i) at pa0 + (b*MP + i)*strideA, against the NP B panels
   * of its batch (pb0 + b*strideB), K long; tile (b, i, q)'s sums at acc0 + ((b*MP + i)*NP + q)*T
   * (byte offsets; T the tile's bytes, 128 for float64's 4 x 4), by the blocked kernel `variant`
   * (BLOCK_EXPORTS). Blocks of A panels that fit L2 together go to one thread at a time.
   * Operands staged since the last call are packed by the same job's first claims (threads.ts'
   * WORK: every panel is packed before any tile reads it, and the workers wake once per product:
   * 2 threads, dot 256 0.88-0.95 -> 0.84-0.89 ms, dot 1024 35.2 -> 33.3 ms against a job for
   * the packing and another for the sums). With `par` false, all on the calling thread
   * (small products: matmul.ts sumsAlone). `blockBytes`, `maxPanels` and `perThread` bound a block of A panels
   * (its schedule: strategy.ts MatmulSchedule; they change which panels go together, never a sum).
   */
  tiles(
    pa0: number,
    strideA: number,
    pb0: number,
    strideB: number,
    MP: number,
    K: number,
    acc0: number,
    NP: number,
    B: number,
    T = 128,
    variant = 0,
    par = true,
    blockBytes = BLOCK_BYTES,
    maxPanels = MAX_BLOCK_PANELS,
    perThread = MIN_BLOCKS_PER_THREAD,
  ): void {
    // multiply-adds (float64 tiles count twice: half the lanes), and the threads the hand-off model gives them (./handoff.ts)
    const work = B * MP * NP * K * (T / 4);
    const threads = handoffThreads(work, this.shared && par ? threadCount() : 1);
    const t0 = performance.now();
    // Staged operands are packed by the job's first claims (pairs of them; a product stages two at most).
    const ops = this.pending;
    this.pending = [];
    while (ops.length > 2)
      this.run(threads, [
        0,
        ops[0]![0] + ops[1]![0],
        0,
        1,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        ops[0]![0] + ops[1]![0],
        ...ops.shift()!,
        ...ops.shift()!,
      ]);
    const o1 = ops[0] ?? NO_OPERAND,
      o2 = ops[1] ?? NO_OPERAND;
    // Blocks of A panels that fit L2; with threads, at least `perThread` blocks per thread, so that a worker
    // that wakes late still finds work and the caller waits for a small block at most.
    const fit = Math.max(1, Math.min(maxPanels, Math.floor(blockBytes / strideA)));
    const G = threads > 1 && B === 1 ? Math.max(1, Math.min(fit, Math.ceil(MP / (perThread * threads)))) : fit;
    const P = o1[0] + o2[0];
    this.run(threads, [
      0,
      P + B * Math.ceil(MP / G),
      MP,
      G,
      pa0,
      strideA,
      pb0,
      strideB,
      K,
      acc0,
      NP,
      T,
      variant,
      P,
      ...o1,
      ...o2,
    ]);
    handoffMeasured(work, threads, performance.now() - t0);
  }

  private run(threads: number, job: MatmulJob): void {
    const pool = threadPool();
    if (threads > 1 && job[1] > 1 && pool !== undefined) pool.run(threads, this.blocks, [], job);
    else runHere(this.blocks, [], job);
  }
}

const align = (x: number): number => Math.ceil(x / KEPT_ALIGN) * KEPT_ALIGN;

/**
 * Bytes of a block of A panels (summed against each B panel in turn while it is in L1): half of a
 * 1 MiB L2. Goto's GEMM and BLIS are the anchor, without their K split (kc): products are not
 * blocked along K, so at K = 1024 a B panel (16 KiB of float32) stays in L1 while the block's A
 * panels (32 KiB each) stream from L2, and B streams from L3 once per block. Measured with the
 * 8 x 4 kernel at one step per pass (1024 x 1024 x 1024, one thread, CPU time, alternating,
 * AMD EPYC with 1 MiB L2 per core, load 22): blocks of 256 KiB (8 panels) 48.2-48.6 GFLOP/s,
 * 512 KiB (16) 51.1-51.2, 1 MiB (32) 51.8, 2 MiB (64) 52.0. Products whose A panels take at most
 * 16 KiB (K <= 512 at 8 rows) get MAX_BLOCK_PANELS of them per block at either size.
 */
export const BLOCK_BYTES = 512 * 1024;
/** Most A panels in one block. */
export const MAX_BLOCK_PANELS = 16;
/** With threads, the fewest blocks each thread gets. */
export const MIN_BLOCKS_PER_THREAD = 4;

/** The thread pool, once started (tests). */
export { threadPool };

export const packArena = new PackArena();
