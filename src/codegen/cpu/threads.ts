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
import { getConfig } from '../../api/config.js';
import type { WasmMemory, WasmModule } from '../wasm/encode.js';

let override: number | undefined;

/** Sets the thread count for this process (undefined: back to the configured one). Tests compare 1 and N. */
export function setThreads(n: number | undefined): void {
  if (n !== undefined && !(Number.isInteger(n) && n >= 1 && n <= 256)) {
    throw new RangeError(`setThreads: argument n is ${n}; allowed: an integer from 1 to 256, or undefined`);
  }
  override = n;
}

/** Threads large kernels are split over: setThreads', else the configuration's, else the cores. */
export function threadCount(): number {
  return override ?? getConfig().threads ?? Math.max(1, platform.cores());
}

/** Multiply-adds below which a product stays on the calling thread (handing work over costs tens of microseconds). */
export const PARALLEL_MIN_MACS = 1 << 21;

/** G A panels against n consecutive B panels (the kernel's panelBlock, ../wasm/matmul.ts; byte offsets). */
export type PanelBlock = (pa: number, sa: number, G: number, pb: number, K: number, acc: number, sacc: number, n: number) => void;

// The control words (an Int32Array over a SharedArrayBuffer).
const MAX_WORKERS = 255;
const PENDING = 0; // workers still at the current job
const NEXT = 1; // next panel to hand out
const FAILED = 2; // set by a worker whose kernel threw
const TAKEN = 15; // panels workers have summed (since the pool started; tests read it)
const JOB = 3; // claims, MP, G, pa0, strideA, pb0, strideB, K, acc0, NP
const GO = 16; // per worker: bumped to start a job (the worker waits on it)
const CMD = GO + MAX_WORKERS; // per worker: 1 = leave the loop and take the next message
const READY = CMD + MAX_WORKERS; // per worker: the memory generation it is waiting with (0: not waiting)
const WORDS = READY + MAX_WORKERS;

/**
 * The panels of one job, handed out in blocks of up to G A panels of one batch (claim c: batch
 * floor(c/GB), A panels (c mod GB)*G ..): A panel (b, i) at pa0 + (b*MP + i)*sa, against the
 * NP B panels of batch b (pb0 + b*sb), K long, the sums of tile (b, i, q) at
 * acc0 + (b*MP + i)*NP*128 + 128q. Shared by both sides as source.
 */
const WORK = `function work(ctrl, block, counted) {
  const total = ctrl[${JOB}], MP = ctrl[${JOB + 1}], G = ctrl[${JOB + 2}], pa0 = ctrl[${JOB + 3}], sa = ctrl[${JOB + 4}], pb0 = ctrl[${JOB + 5}], sb = ctrl[${JOB + 6}], K = ctrl[${JOB + 7}], acc0 = ctrl[${JOB + 8}], NP = ctrl[${JOB + 9}];
  const GB = Math.ceil(MP / G);
  for (;;) {
    const c = Atomics.add(ctrl, ${NEXT}, 1);
    if (c >= total) return;
    const b = Math.floor(c / GB), i = (c - b * GB) * G, p = b * MP + i;
    const n = MP - i < G ? MP - i : G;
    block(pa0 + p * sa, sa, n, pb0 + b * sb, K, acc0 + p * NP * 128, NP * 128, NP);
    if (counted) Atomics.add(ctrl, ${TAKEN}, n);
  }
}`;

const WORKER_SOURCE = `'use strict';
const { workerData, parentPort } = require('node:worker_threads');
const { ctrlBuffer, index, module } = workerData;
const ctrl = new Int32Array(ctrlBuffer);
${WORK}
function serve(run, gen) {
  let seen = Atomics.load(ctrl, ${GO} + index);
  Atomics.store(ctrl, ${READY} + index, gen);
  for (;;) {
    Atomics.wait(ctrl, ${GO} + index, seen);
    seen = Atomics.load(ctrl, ${GO} + index);
    if (Atomics.load(ctrl, ${CMD} + index) !== 0) { Atomics.store(ctrl, ${CMD} + index, 0); return; }
    try { work(ctrl, run, true); } catch (e) { Atomics.store(ctrl, ${FAILED}, 1); }
    if (Atomics.sub(ctrl, ${PENDING}, 1) === 1) Atomics.notify(ctrl, ${PENDING});
  }
}
parentPort.on('message', (m) => {
  if (m.memory === undefined) return; // the arena let its memory go: keep none
  const run = new WebAssembly.Instance(module, { env: { mem: m.memory } }).exports.panelBlock;
  serve(run, m.gen);
});
`;

// The same job loop as the workers', compiled once here.
const workHere = new Function(`${WORK}\nreturn work;`)() as (ctrl: Int32Array, run: PanelBlock, counted: boolean) => void;

/** claims (batches x blocks), MP, G, pa0, strideA, pb0, strideB, K, acc0, NP: see WORK. */
export type Job = readonly [claims: number, MP: number, G: number, pa0: number, strideA: number, pb0: number, strideB: number, K: number, acc0: number, NP: number];

/** Runs a job on the calling thread alone. */
export function runHere(block: PanelBlock, job: Job): void {
  const c = new Int32Array(JOB + job.length);
  for (let j = 0; j < job.length; j++) c[JOB + j] = job[j]!;
  workHere(c, block, false);
}

interface Worker { readonly port: PlatformWorker; dead: boolean }

/** The pool: workers started on demand, each holding an instance over the arena's current memory. */
export class ThreadPool {
  private readonly ctrl = new Int32Array(new SharedArrayBuffer(WORDS * 4));
  private readonly workers: Worker[] = [];
  private gen = 1;
  private memory: WasmMemory | undefined;

  constructor(private readonly module: WasmModule) {}

  /** The memory the kernels sum in from now on (undefined: none; workers drop theirs). */
  setMemory(memory: WasmMemory | undefined): void {
    this.gen++;
    this.memory = memory;
    for (let i = 0; i < this.workers.length; i++) {
      this.workers[i]!.port.postMessage({ gen: this.gen, memory });
      this.kickIfStale(i);
    }
  }

  /** Sends a worker waiting with an older memory back to its messages (the newest is among them). */
  private kickIfStale(i: number): void {
    const c = this.ctrl;
    const r = Atomics.load(c, READY + i);
    if (r === 0 || r === this.gen) return;
    Atomics.store(c, READY + i, 0);
    Atomics.store(c, CMD + i, 1);
    Atomics.add(c, GO + i, 1);
    Atomics.notify(c, GO + i);
  }

  private grow(n: number): void {
    while (this.workers.length < Math.min(n, MAX_WORKERS)) {
      const index = this.workers.length;
      const port = platform.startWorker(WORKER_SOURCE, { ctrlBuffer: this.ctrl.buffer, index, module: this.module });
      if (port === undefined) return;
      const w: Worker = { port, dead: false };
      port.onError(() => { w.dead = true; });
      this.workers.push(w);
      if (this.memory !== undefined) port.postMessage({ gen: this.gen, memory: this.memory });
    }
  }

  /**
   * Runs a job's blocks of panels (see WORK) on this thread and up to threads - 1 workers. Workers still
   * starting (or taking a new memory) sit this job out; the calling thread then does more.
   */
  run(threads: number, run: PanelBlock, job: Job): void {
    const c = this.ctrl;
    this.grow(threads - 1);
    const helpers: number[] = [];
    for (let i = 0; i < this.workers.length && helpers.length < threads - 1 && helpers.length < job[0] - 1; i++) {
      if (this.workers[i]!.dead) continue;
      this.kickIfStale(i);
      if (Atomics.load(c, READY + i) === this.gen) helpers.push(i);
    }
    for (let j = 0; j < job.length; j++) c[JOB + j] = job[j]!;
    Atomics.store(c, NEXT, 0);
    Atomics.store(c, FAILED, 0);
    Atomics.store(c, PENDING, helpers.length);
    for (const i of helpers) { Atomics.add(c, GO + i, 1); Atomics.notify(c, GO + i); }
    workHere(c, run, false);
    for (let p = Atomics.load(c, PENDING); p !== 0; p = Atomics.load(c, PENDING)) Atomics.wait(c, PENDING, p);
    if (Atomics.load(c, FAILED) !== 0) throw new Error('internal: a matmul worker thread failed (its kernel threw)');
  }

  /** Workers started so far (tests). */
  get size(): number {
    return this.workers.length;
  }

  /** Panels the workers (not the calling thread) have summed so far (tests). */
  get workerPanels(): number {
    return Atomics.load(this.ctrl, TAKEN);
  }
}
