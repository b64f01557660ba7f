// Worker threads for the cpu device's large matrix products. A pool of workers shares the packing
// arena's memory (a shared WebAssembly memory, wasm-kernel.ts) with the calling thread; each has
// its own instance of the same kernel module over it. A product's A panels are handed out one at
// a time from an atomic counter, so a thread that the machine slows down takes fewer of them; the
// calling thread takes its share too and then blocks (Atomics.wait) until every worker has
// finished, so a compiled function stays synchronous. Every panel is summed by the same kernel
// whichever thread takes it, so results are identical, bit for bit, with 1 or N threads.
// TensorFlow.js' WebAssembly backend (XNNPACK's pthreadpool) is the anchor: a fixed pool, work
// split along the output's rows, the caller working beside the pool.
//
// The number of threads is THEANINE_THREADS or keras.json's "threads", else the cores the process
// may use (platform.cores()). In a browser the platform starts no workers: one thread.
import { platform } from '#platform';
import type { PlatformWorker } from '../../platform/types.js';
import type { WasmMemory, WasmModule } from './wasm/encode.js';

let override: number | undefined;
/** The configured count (keras.json "threads", THEANINE_THREADS): the configuration registers its reader here. */
let configured: () => number | undefined = () => undefined;

/** Where the configured thread count comes from (src/api/config.ts; codegen does not import the API). */
export function setConfiguredThreads(read: () => number | undefined): void {
  configured = read;
}

/** Sets the thread count for this process (undefined: back to the configured one). Tests compare 1 and N. */
export function setThreads(n: number | undefined): void {
  if (n !== undefined && !(Number.isInteger(n) && n >= 1 && n <= 256)) {
    throw new RangeError(`setThreads: argument n is ${n}; allowed: an integer from 1 to 256, or undefined`);
  }
  override = n;
}

/** Threads large kernels are split over: setThreads', else the configuration's, else the cores. */
export function threadCount(): number {
  return override ?? configured() ?? Math.max(1, platform.cores());
}

/** Multiply-adds below which a product stays on the calling thread (handing work over costs tens of microseconds). */
export const PARALLEL_MIN_MACS = 1 << 21;

/** G A panels against n consecutive B panels (the kernel's panelBlock, ../wasm/matmul.ts; byte offsets). */
export type PanelBlock = (
  pa: number,
  sa: number,
  G: number,
  pb: number,
  K: number,
  acc: number,
  sacc: number,
  n: number,
) => void;
/** One panel of a float32 operand packed (the kernel module's pack32, ../wasm/matmul.ts; byte offsets and strides). */
export type PackPanel = (src: number, sr: number, st: number, dst: number, K: number, rows: number, p: number) => void;
/** The float32 sums of a product of a few rows against n consecutive B panels (the kernel's rowVec32_R, ../wasm/matmul.ts; byte offsets). */
export type RowVec = (pa: number, sa: number, pb: number, K: number, acc: number, n: number) => void;

/**
 * The kernel module's exports, by the number a job names: 0 panelBlock (float64 sums), 1 and 2
 * panelBlock32 and panelBlock32w (float32 sums, the two float32 tiles), 3 and 4 the same two
 * storing their sums row-major (whole products), 5 pack32 (packing jobs), 6 igemm32 (a
 * convolution's float32 sums through an indirection buffer, row-major: ../wasm/igemm.ts), 7
 * packCols32 (packing jobs: full panels of an operand contiguous along the rows), 8
 * windowGrad32 (a convolution's kernel gradient's float32 sums through a table of window
 * origins, row-major: ../wasm/igemm.ts), 9 to 11 rowVec32_1..3 (the float32 sums of a product of
 * 1 to 3 rows, row-major, on the calling thread: ROWVEC_EXPORT).
 */
export const BLOCK_EXPORTS = [
  'panelBlock',
  'panelBlock32',
  'panelBlock32w',
  'panelBlock32r',
  'panelBlock32wr',
  'pack32',
  'igemm32',
  'packCols32',
  'windowGrad32',
  'rowVec32_1',
  'rowVec32_2',
  'rowVec32_3',
] as const;
/** The kernels' list entry after BLOCK_EXPORTS: rows32 (./wasm/rows.ts) over the same memory, for rows jobs (kind 2). */
export const ROWS_EXPORT = BLOCK_EXPORTS.length;
/** rows32's arguments: M rows of A (row-major, lda bytes apart) against NP B panels, sums row-major (ldc bytes a row); byte offsets. */
export type RowsArgs = [
  pa: number,
  lda: number,
  pb: number,
  K: number,
  acc: number,
  ldc: number,
  M: number,
  NP: number,
];
export type Rows32 = (...args: RowsArgs) => void;
/** BLOCK_EXPORTS' rowVec32_1 (rowVec32_R at ROWVEC_EXPORT + R - 1). */
export const ROWVEC_EXPORT = 9;
/** BLOCK_EXPORTS' pack32. */
export const PACK_EXPORT = 5;
/** BLOCK_EXPORTS' igemm32. */
export const IGEMM_VARIANT = 6;
/** BLOCK_EXPORTS' packCols32. */
const PACK_COLS_EXPORT = 7;
/** BLOCK_EXPORTS' windowGrad32. */
export const WINDOW_GRAD_VARIANT = 8;

/** An elementwise tier kernel (../wasm/elementwise.ts): n elements of the chunk block at byte offset base. */
export type EwRun = (n: number, base: number) => void;

// The control words (an Int32Array over a SharedArrayBuffer).
const MAX_WORKERS = 255;
const DONE = 0; // claims of the current job finished
const NEXT = 1; // the current job's claim word: tag (8 bits) | next claim (12 bits) | claims (12 bits)
const FAILED = 2; // set by a worker whose kernel threw
const JOB = 3; // kind (0: matmul, 1: elementwise), then the kind's parameters (see WORK)
const JOB_WORDS = 40; // the job's words; the last two: packing claims finished (matmul), the matmul memory's generation
const OP1 = JOB + 14; // a matmul's first staged operand (see WORK), OP2 its second
const OP2 = JOB + 24;
const PACKED = JOB + JOB_WORDS - 2;
const JOB_GEN = JOB + JOB_WORDS - 1;
const TAKEN = JOB + JOB_WORDS; // matmul A panels workers have summed (since the pool started; tests read it)
const TAKEN_EW = TAKEN + 1; // elementwise chunks workers have computed (tests)
const TAKEN_PACK = TAKEN + 2; // operand panels workers have packed (tests)
const TAKEN_ROWS = TAKEN + 3; // B panels of rows jobs workers have summed (tests)
const GO = TAKEN + 4; // per worker: bumped to wake it for a job (it waits on it)
const CMD = GO + MAX_WORKERS; // per worker: 1 = leave the loop and take the messages waiting
const WAITING = CMD + MAX_WORKERS; // per worker: 1 while it waits for jobs
const GEN = WAITING + MAX_WORKERS; // per worker: the generation of the matmul memory it holds
const EW_KNOWN = GEN + MAX_WORKERS; // per worker: elementwise kernels it has instantiated (ids 0..n-1)
const WORDS = EW_KNOWN + MAX_WORKERS;
/** Claims one job may have (12 bits of the claim word); a larger job runs on the calling thread. */
export const MAX_CLAIMS = 4095;

/**
 * One job's work, claim by claim. A thread reads the claim word; while claims are left it checks
 * that it can run this kind of job (the matmul memory's generation, the elementwise kernel),
 * reads the parameters (stable: the job cannot finish while a claim is unclaimed) and takes the
 * claim with a compare-exchange (the word's tag makes a word of an earlier job fail it). So a
 * worker that wakes late takes no claim of a finished job, and the calling thread waits only for
 * claims in progress (DONE), never for workers that have not woken. `claim` runs claim c of the
 * job in the control words (counted in the TAKEN words with `counted`).
 * Matmul (kind 0): first P (JOB+13) packing claims, then blocks of up to G A panels of one batch
 * (claim P + c: batch floor(c/GB), A panels (c mod GB)*G ..): A panel (b, i) at
 * pa0 + (b*MP + i)*sa, against the NP B panels of batch b (pb0 + b*sb), K long, the sums of
 * tile (b, i, q) at acc0 + (b*MP + i)*NP*T + Tq (T: the tile's bytes), by the blocked kernel
 * `variant` (BLOCK_EXPORTS). Claims are taken in order, so every packing claim is taken before
 * any block; a block waits (PACKED) only for packing claims still in progress, and one job
 * (one wake-up of the workers) packs and sums.
 * Packing claims: the staged float32 operands at OP1 and OP2 (claims, src, sb, sr, st, dst,
 * rows, K, p, per; claims 0.. the first's, then the second's), each claim `per` panels of p rows
 * of one batch (claim c: batch floor(c/PC), panels (c mod PC)*per ..): panel q of batch b from
 * the staged operand at src + b*sb + q*p*sr (strides sr, st; bytes) to
 * dst + (b*panels + q)*K*p*4 by pack32 (full panels of an operand contiguous along the rows
 * by packCols32, step by step across the claim's panels).
 * Elementwise (kind 1): kernel id over chunk block c (byte offset base + c*blockBytes), CHUNK elements, the last one `last`.
 * Rows (kind 2): rows32 (the kernels' ROWS_EXPORT) of M rows of A at pa (lda bytes apart) against
 * B panels per*c .. per*(c+1) - 1 of NP (at pb, K steps each), their sums at acc + 16 q (ldc bytes
 * a row): claims split the product by columns, so each thread reads its own part of B. With axpy
 * set, axpy32 (ROWS_EXPORT + 1) on B row-major (ldc bytes a row: panel q at pb + 16 q).
 * Shared by both sides as source.
 */
const WORK = `function packClaim(ctrl, block, c) {
  const first = c < ctrl[${OP1}], o = first ? ${OP1} : ${OP2}, cc = first ? c : c - ctrl[${OP1}];
  const src = ctrl[o + 1], sb = ctrl[o + 2], sr = ctrl[o + 3], st = ctrl[o + 4], dst = ctrl[o + 5], rows = ctrl[o + 6], K = ctrl[o + 7], p = ctrl[o + 8], per = ctrl[o + 9];
  const panels = Math.ceil(rows / p), PC = Math.ceil(panels / per);
  const b = Math.floor(cc / PC), q0 = (cc - b * PC) * per, q1 = panels - q0 < per ? panels : q0 + per;
  const pack = block[${PACK_EXPORT}];
  let q = q0;
  if (sr === 4 && (p & 3) === 0) {
    // contiguous along the rows: the full panels step by step across up to 8 of them (packCols32;
    // more write streams, each a panel's K*p*4 bytes apart, 4 KiB at K = 256, conflict in L1:
    // B of dot 256, 16 panels at a time 91 us, 8 at a time 16 us)
    const full = Math.floor(rows / p) < q1 ? Math.floor(rows / p) : q1;
    for (; q < full; q += full - q < 8 ? full - q : 8) block[${PACK_COLS_EXPORT}](src + b * sb + q * p * 4, st, dst + (b * panels + q) * K * p * 4, K, p, full - q < 8 ? full - q : 8);
  }
  for (; q < q1; q++) pack(src + b * sb + q * p * sr, sr, st, dst + (b * panels + q) * K * p * 4, K, rows - q * p < p ? rows - q * p : p, p);
  return q1 - q0;
}
function claim(ctrl, block, ew, c, total, counted) {
  if (ctrl[${JOB}] === 1) {
    const bb = ctrl[${JOB + 3}], chunk = ctrl[${JOB + 4}], last = ctrl[${JOB + 5}];
    ew[ctrl[${JOB + 1}]](c === total - 1 ? last : chunk, ctrl[${JOB + 6}] + c * bb);
    if (counted) Atomics.add(ctrl, ${TAKEN_EW}, 1);
    return;
  }
  if (ctrl[${JOB}] === 2) {
    const K = ctrl[${JOB + 5}], NP = ctrl[${JOB + 9}], per = ctrl[${JOB + 10}], axpy = ctrl[${JOB + 11}], q0 = c * per, n = NP - q0 < per ? NP - q0 : per;
    block[${ROWS_EXPORT} + axpy](ctrl[${JOB + 2}], ctrl[${JOB + 3}], ctrl[${JOB + 4}] + q0 * (axpy ? 16 : K * 16), K, ctrl[${JOB + 6}] + q0 * 16, ctrl[${JOB + 7}], ctrl[${JOB + 8}], n);
    if (counted) Atomics.add(ctrl, ${TAKEN_ROWS}, n);
    return;
  }
  const P = ctrl[${JOB + 13}];
  if (c < P) {
    try {
      const n = packClaim(ctrl, block, c);
      if (counted) Atomics.add(ctrl, ${TAKEN_PACK}, n);
    } finally {
      if (Atomics.add(ctrl, ${PACKED}, 1) + 1 === P) Atomics.notify(ctrl, ${PACKED});
    }
    return;
  }
  for (let d = Atomics.load(ctrl, ${PACKED}); d < P; d = Atomics.load(ctrl, ${PACKED})) Atomics.wait(ctrl, ${PACKED}, d);
  c -= P;
  const MP = ctrl[${JOB + 2}], G = ctrl[${JOB + 3}], pa0 = ctrl[${JOB + 4}], sa = ctrl[${JOB + 5}], pb0 = ctrl[${JOB + 6}], sb = ctrl[${JOB + 7}], K = ctrl[${JOB + 8}], acc0 = ctrl[${JOB + 9}], NP = ctrl[${JOB + 10}], T = ctrl[${JOB + 11}];
  const GB = Math.ceil(MP / G);
  const b = Math.floor(c / GB), i = (c - b * GB) * G, p = b * MP + i;
  const n = MP - i < G ? MP - i : G;
  block[ctrl[${JOB + 12}]](pa0 + p * sa, sa, n, pb0 + b * sb, K, acc0 + p * NP * T, NP * T, NP);
  if (counted) Atomics.add(ctrl, ${TAKEN}, n);
}
function work(ctrl, block, gen, ew, counted) {
  for (;;) {
    const w = Atomics.load(ctrl, ${NEXT});
    const c = (w >>> 12) & 4095, total = w & 4095;
    if (c >= total) return;
    const kind = ctrl[${JOB}];
    if (kind === 1 ? ew[ctrl[${JOB + 1}]] === undefined : block === undefined || ctrl[${JOB_GEN}] !== gen) return;
    if (Atomics.compareExchange(ctrl, ${NEXT}, w, (w + 4096) | 0) !== w) continue;
    try {
      claim(ctrl, block, ew, c, total, counted);
    } catch (e) {
      Atomics.store(ctrl, ${FAILED}, 1);
    }
    if (Atomics.add(ctrl, ${DONE}, 1) + 1 === total) Atomics.notify(ctrl, ${DONE});
  }
}`;

// A worker: takes its messages (the matmul memory and module, the elementwise memory, each
// elementwise kernel's module), then waits for jobs until told to take messages again.
const WORKER_SOURCE = `'use strict';
const { workerData, parentPort } = require('node:worker_threads');
const { ctrlBuffer, index } = workerData;
const ctrl = new Int32Array(ctrlBuffer);
${WORK}
let block, gen = 0, ewMemory;
const ew = [];
function serve() {
  let seen = Atomics.load(ctrl, ${GO} + index);
  Atomics.store(ctrl, ${GEN} + index, gen);
  Atomics.store(ctrl, ${EW_KNOWN} + index, ew.length);
  Atomics.store(ctrl, ${WAITING} + index, 1);
  for (;;) {
    Atomics.wait(ctrl, ${GO} + index, seen);
    seen = Atomics.load(ctrl, ${GO} + index);
    if (Atomics.load(ctrl, ${CMD} + index) !== 0) { Atomics.store(ctrl, ${CMD} + index, 0); return; }
    work(ctrl, block, gen, ew, true);
  }
}
let scheduled = false;
parentPort.on('message', (m) => {
  if (m.kind === 'matmul') {
    gen = m.gen;
    if (m.memory === undefined) block = undefined;
    else {
      const ex = new WebAssembly.Instance(m.module, { env: { mem: m.memory } }).exports;
      block = ${JSON.stringify(BLOCK_EXPORTS)}.map((k) => ex[k]);
      if (m.rows !== undefined) { const r = new WebAssembly.Instance(m.rows, { env: { mem: m.memory } }).exports; block.push(r.rows32, r.axpy32); }
    }
  } else if (m.kind === 'ewMemory') {
    ewMemory = m.memory;
  } else if (m.kind === 'ew') {
    ew[m.id] = new WebAssembly.Instance(m.module, { env: { mem: ewMemory } }).exports.run;
  }
  // back to waiting for jobs once every message now queued is taken
  if (!scheduled) { scheduled = true; setImmediate(() => { scheduled = false; serve(); }); }
});
`;

type Kernels = readonly (PanelBlock | PackPanel | RowVec | Rows32)[] | undefined;

// The same job loop as the workers', compiled once here.
const [workHere, claimHere] = new Function(`${WORK}\nreturn [work, claim];`)() as [
  (ctrl: Int32Array, block: Kernels, gen: number, ew: readonly EwRun[], counted: boolean) => void,
  (ctrl: Int32Array, block: Kernels, ew: readonly EwRun[], c: number, total: number, counted: boolean) => void,
];

/** One staged operand to pack: claims, src, sb, sr, st, dst, rows, K, p, per (see WORK; bytes). */
export type PackOperand = readonly [
  claims: number,
  src: number,
  sb: number,
  sr: number,
  st: number,
  dst: number,
  rows: number,
  K: number,
  p: number,
  per: number,
];
/** No operand to pack. */
export const NO_OPERAND: PackOperand = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1];
/**
 * kind 0, claims (packing claims + batches x blocks), MP, G, pa0, strideA, pb0, strideB, K, acc0, NP, tile bytes,
 * variant, packing claims (P), the two operands to pack (NO_OPERAND: none): see WORK (the pool adds the generation).
 */
export type MatmulJob = readonly [
  kind: 0,
  claims: number,
  MP: number,
  G: number,
  pa0: number,
  strideA: number,
  pb0: number,
  strideB: number,
  K: number,
  acc0: number,
  NP: number,
  tileBytes: number,
  variant: number,
  packing: number,
  ...PackOperand,
  ...PackOperand,
];
/** kind 1, kernel id, claims (chunk blocks), block bytes, CHUNK, elements of the last block, byte offset of block 0: see WORK. */
export type EwJob = readonly [
  kind: 1,
  id: number,
  claims: number,
  blockBytes: number,
  chunk: number,
  last: number,
  base: number,
];
/** kind 2, claims, pa, lda, pb, K, acc, ldc, M, NP, panels per claim: see WORK. */
export type RowsJob = readonly [kind: 2, claims: number, ...args: RowsArgs, per: number, axpy: number];
export type Job = MatmulJob | EwJob | RowsJob;

const claimsOf = (job: Job): number => (job[0] === 1 ? job[2] : job[1]);

/** Runs a job on the calling thread alone (claims in order: packing before the blocks that read it). */
export function runHere(block: Kernels, ew: readonly EwRun[], job: Job): void {
  const claims = claimsOf(job);
  const c = new Int32Array(JOB + JOB_WORDS);
  for (let j = 0; j < job.length; j++) c[JOB + j] = job[j]!;
  if (claims <= MAX_CLAIMS) {
    c[NEXT] = claims;
    workHere(c, block, 0, ew, false);
    if (c[FAILED] !== 0) throw new Error('internal: a kernel threw on the calling thread');
    return;
  }
  // more claims than the claim word holds: one by one, outside it
  for (let k = 0; k < claims; k++) claimHere(c, block, ew, k, claims, false);
}

interface Worker {
  readonly port: PlatformWorker;
  dead: boolean;
}

/**
 * The pool: workers started on demand, each holding an instance of the matmul kernel over the
 * packing arena's current memory and of every elementwise tier kernel over the tier's memory.
 */
export class ThreadPool {
  private readonly ctrl = new Int32Array(new SharedArrayBuffer(WORDS * 4));
  private readonly workers: Worker[] = [];
  private gen = 1;
  private tag = 0;
  private matmul: { memory: WasmMemory | undefined; module: WasmModule | undefined; rows: WasmModule | undefined } = {
    memory: undefined,
    module: undefined,
    rows: undefined,
  };
  private ewMemory: WasmMemory | undefined;
  private readonly ewModules: WasmModule[] = [];

  /** The memory (and its kernel module, and rows32's) matmul and rows jobs sum in from now on (undefined: none; workers drop theirs). */
  setMemory(memory: WasmMemory | undefined, module?: WasmModule, rows?: WasmModule): void {
    this.gen++;
    this.matmul = { memory, module, rows };
    for (let i = 0; i < this.workers.length; i++) {
      this.workers[i]!.port.postMessage({ kind: 'matmul', gen: this.gen, memory, module, rows });
      if (Atomics.load(this.ctrl, WAITING + i) === 1) this.kick(i);
    }
  }

  /** The elementwise tier's shared memory (set once, before any elementwise kernel). */
  setEwMemory(memory: WasmMemory): void {
    this.ewMemory = memory;
    for (const w of this.workers) w.port.postMessage({ kind: 'ewMemory', memory });
  }

  /** An elementwise kernel's module (ids in order from 0): workers instantiate it at their next messages. */
  addEwModule(id: number, module: WasmModule): void {
    if (id !== this.ewModules.length) throw new Error(`internal: elementwise kernel ${id} added out of order`);
    this.ewModules.push(module);
    for (const w of this.workers) w.port.postMessage({ kind: 'ew', id, module });
  }

  /** Sends a waiting worker back to its messages (it sits out jobs until it waits again). */
  private kick(i: number): void {
    const c = this.ctrl;
    Atomics.store(c, WAITING + i, 0);
    Atomics.store(c, CMD + i, 1);
    Atomics.add(c, GO + i, 1);
    Atomics.notify(c, GO + i);
  }

  /** Starts workers until `n` are started (a function about to run products split over them starts them first, so that they boot meanwhile). */
  start(n: number): void {
    this.grow(n);
  }

  private grow(n: number): void {
    while (this.workers.length < Math.min(n, MAX_WORKERS)) {
      const index = this.workers.length;
      const port = platform.startWorker(WORKER_SOURCE, { ctrlBuffer: this.ctrl.buffer, index });
      if (port === undefined) return;
      const w: Worker = { port, dead: false };
      port.onError(() => {
        w.dead = true;
      });
      this.workers.push(w);
      if (this.matmul.memory !== undefined) port.postMessage({ kind: 'matmul', gen: this.gen, ...this.matmul });
      if (this.ewMemory !== undefined) port.postMessage({ kind: 'ewMemory', memory: this.ewMemory });
      this.ewModules.forEach((module, id) => port.postMessage({ kind: 'ew', id, module }));
    }
  }

  /**
   * Runs a job's claims on this thread and up to threads - 1 workers. Workers still starting (or
   * taking new kernels or a new memory) sit this job out; the calling thread then does more.
   * `during`: work of the calling thread's own that touches none of the job's memory (the next
   * pass's copies), done once the workers are woken and before it takes claims, so that it
   * overlaps theirs.
   */
  run(threads: number, block: Kernels, ew: readonly EwRun[], job: Job, during?: () => void): void {
    const c = this.ctrl;
    const claims = claimsOf(job);
    if (claims > MAX_CLAIMS || claims < 2) {
      during?.();
      runHere(block, ew, job);
      return;
    }
    this.grow(threads - 1);
    const helpers: number[] = [];
    for (let i = 0; i < this.workers.length && helpers.length < threads - 1 && helpers.length < claims - 1; i++) {
      if (this.workers[i]!.dead || Atomics.load(c, WAITING + i) !== 1) continue;
      const current = job[0] !== 1 ? Atomics.load(c, GEN + i) === this.gen : Atomics.load(c, EW_KNOWN + i) > job[1];
      if (current) helpers.push(i);
      else this.kick(i);
    }
    for (let j = 0; j < job.length; j++) c[JOB + j] = job[j]!;
    Atomics.store(c, PACKED, 0);
    c[JOB_GEN] = this.gen;
    Atomics.store(c, DONE, 0);
    Atomics.store(c, FAILED, 0);
    this.tag = (this.tag + 1) & 255;
    Atomics.store(c, NEXT, (this.tag << 24) | claims | 0);
    for (const i of helpers) {
      Atomics.add(c, GO + i, 1);
      Atomics.notify(c, GO + i);
    }
    let failed: { e: unknown } | undefined;
    if (during !== undefined)
      try {
        during();
      } catch (e) {
        failed = { e };
      }
    workHere(c, block, this.gen, ew, false);
    for (let d = Atomics.load(c, DONE); d < claims; d = Atomics.load(c, DONE)) Atomics.wait(c, DONE, d);
    if (failed !== undefined) throw failed.e;
    if (Atomics.load(c, FAILED) !== 0) throw new Error('internal: a worker thread failed (its kernel threw)');
  }

  /** Workers started so far (tests). */
  get size(): number {
    return this.workers.length;
  }

  /** Matmul A panels the workers (not the calling thread) have summed so far (tests). */
  get workerPanels(): number {
    return Atomics.load(this.ctrl, TAKEN);
  }

  /** Operand panels the workers have packed so far (tests). */
  get workerPacked(): number {
    return Atomics.load(this.ctrl, TAKEN_PACK);
  }

  /** B panels of rows jobs the workers have summed so far (tests). */
  get workerRowPanels(): number {
    return Atomics.load(this.ctrl, TAKEN_ROWS);
  }

  /** Elementwise chunks the workers have computed so far (tests). */
  get workerChunks(): number {
    return Atomics.load(this.ctrl, TAKEN_EW);
  }
}

let pool: ThreadPool | undefined;

/**
 * Starts the configured thread count's workers now (none with one thread, nor where the platform
 * starts none): a function whose products the workers will share calls it before it generates or
 * loads its code, so that they boot meanwhile rather than sit out its first call.
 */
export function startWorkers(): void {
  const n = threadCount();
  if (n > 1) threadPool(true)?.start(n - 1);
}

/** The process's pool (made on first use; undefined where SharedArrayBuffer is missing). */
export function threadPool(create = false): ThreadPool | undefined {
  if (pool === undefined && create && typeof SharedArrayBuffer === 'function') pool = new ThreadPool();
  return pool;
}
