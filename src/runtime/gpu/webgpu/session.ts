// The WebGPU device and the channel to it. In Node, a worker thread (worker.ts) holds Dawn's
// device (the `webgpu` npm package, an optional peer), and a synchronous call blocks in
// Atomics.wait on a shared flag until the worker answers, reading the answer with
// receiveMessageOnPort (the onnx backend's technique, src/runtime/onnx/session.ts). In a browser
// the device is navigator.gpu's, driven on the page's own thread (page.ts): only callAsync can
// wait for it there.
import { platform } from '#platform';
import { BlockingWorker } from '../../worker-call.js';
import { WORKER_SOURCE } from './worker.js';
import { PageDevice, NO_WEBGPU_ON_PAGE } from './page.js';

type WorkerThreads = typeof import('node:worker_threads');
const threads = (): WorkerThreads =>
  platform.nodeBuiltin('worker_threads', "the gpu device's webgpu mode") as WorkerThreads;

export const WEBGPU_PACKAGE = 'webgpu';

/** What the worker counts: uploads (buffer writes), read-backs, dispatches, buffer copies, command buffers, live buffers and their bytes. */
export interface WebGpuCounts {
  uploads: number;
  readbacks: number;
  dispatches: number;
  copies: number;
  submits: number;
  buffers: number;
  bytes: number;
}

export interface Reply {
  readonly ok: boolean;
  readonly error?: string;
  readonly data?: readonly ArrayBuffer[];
  readonly counts?: WebGpuCounts;
  readonly info?: { description: string; maxStorageBuffers: number; maxBufferSize: number; timestamps: boolean };
  /** A profiled run's milliseconds per dispatch, in order. */
  readonly times?: readonly number[];
}

/** The way to the device: Node's worker, or a page's own thread. */
export interface DeviceChannel {
  /** Whether `call` can wait for a reply (Node's worker); a page's thread cannot. */
  readonly blocking: boolean;
  /** Sends a request and waits for its reply; `what` names the wait in a page's error. */
  call(req: Record<string, unknown>, what?: string): Reply;
  /** Sends a request; its reply as a promise. Requests run in the order sent, whichever way. */
  callAsync(req: Record<string, unknown>): Promise<Reply>;
  /** Sends a request whose reply nobody waits for. */
  post(req: Record<string, unknown>): void;
}

/**
 * The buffers of a request's uploads, moved to the worker rather than copied: a structured clone of
 * 16 MB costs more than its upload (bench/README.md, row sums). Every `writes` entry's data is the
 * request's own (a copy made for it), a whole ArrayBuffer.
 */
function uploaded(req: Record<string, unknown>): ArrayBuffer[] {
  const writes = req['writes'] as readonly { data: ArrayBufferView }[] | undefined;
  const out: ArrayBuffer[] = [];
  for (const w of writes ?? []) {
    const b = w.data.buffer;
    if (b instanceof ArrayBuffer && w.data.byteOffset === 0 && w.data.byteLength === b.byteLength && !out.includes(b))
      out.push(b);
  }
  return out;
}

class SyncWorker extends BlockingWorker<Reply & { id: number }> implements DeviceChannel {
  readonly blocking = true;
  /** Requests of callAsync waiting for their reply, by id. */
  private readonly waiting = new Map<number, (r: Reply) => void>();

  constructor(path: string) {
    const options = (platform.env('THEANINE_WEBGPU_OPTIONS') ?? 'backend=vulkan').split(',').filter((s) => s !== '');
    super(threads(), WORKER_SOURCE, { path, options });
    // a 'message' listener refs the port: unref it again (callAsync refs it while a reply is awaited)
    this.port.on('message', (m: Reply & { id: number }) => this.answer(m));
    this.port.unref();
  }

  /** Hands a reply to the callAsync request waiting for it (a synchronous call's own reply never comes here). */
  private answer(reply: Reply & { id: number }): void {
    const resolve = this.waiting.get(reply.id);
    if (resolve === undefined) return;
    this.waiting.delete(reply.id);
    if (this.waiting.size === 0) this.port.unref();
    resolve(reply);
  }

  /** Posts a request and resolves with its reply without blocking (the port keeps the process alive meanwhile). */
  callAsync(req: Record<string, unknown>): Promise<Reply> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.port.ref();
      this.worker.postMessage({ ...req, id }, uploaded(req));
    });
  }

  override post(req: Record<string, unknown>): void {
    super.post(req, uploaded(req));
  }

  call(req: Record<string, unknown>): Reply {
    // a callAsync request's reply that arrives meanwhile is handed on
    return this.callBlocking(
      req,
      'gpu:webgpu: the WebGPU worker did not answer within 10 minutes',
      (r) => this.answer(r),
      uploaded(req),
    );
  }
}

/** The process-wide WebGPU device: its channel, or why there is none. */
export interface WebGpu {
  readonly worker: DeviceChannel;
  /** The adapter's vendor, architecture and description (THEANINE_DEBUG, the test targets' line); on a page, known once `opened` settles. */
  description: string;
  maxStorageBuffers: number;
  /** Settles when the device has opened (Node: at once, opening is synchronous); rejects where no adapter opens. */
  readonly opened: Promise<void>;
  /** Whether the device has timestamp queries ('timestamp-query'): the profiler times kernels with them, else with a submit per kernel. On a page, known once `opened` settles. */
  timestamps: boolean;
}

const KEY = Symbol.for('theanine.gpu.webgpu');
const shared = globalThis as { [KEY]?: WebGpu | string };

/** Why the webgpu mode cannot run here, or undefined when it can (starts the device on first use). */
export function webgpuMissing(): string | undefined {
  const d = openWebGpu();
  return typeof d === 'string' ? d : undefined;
}

/** The device, or the reason there is none (the package is missing, or Dawn finds no adapter). */
export function openWebGpu(): WebGpu | string {
  const have = shared[KEY];
  if (have !== undefined) return have;
  if (platform.name !== 'node') return openOnPage();
  let path: string;
  try {
    // THEANINE_WEBGPU_MODULE: another copy of the package (gpu.js depends on webgpu 0.2.9, whose Dawn needs glibc 2.38).
    path = (platform.env('THEANINE_WEBGPU_MODULE') || undefined) ?? platform.resolveModule(WEBGPU_PACKAGE);
  } catch {
    shared[KEY] = `the optional package ${WEBGPU_PACKAGE} is not installed (\`npm install ${WEBGPU_PACKAGE}\`)`;
    return shared[KEY];
  }
  const worker = new SyncWorker(path);
  const r = worker.call({ kind: 'init' });
  shared[KEY] = r.ok
    ? {
        worker,
        description: r.info!.description,
        maxStorageBuffers: r.info!.maxStorageBuffers,
        opened: Promise.resolve(),
        timestamps: r.info!.timestamps,
      }
    : `${WEBGPU_PACKAGE}: ${r.error}`;
  return shared[KEY];
}

/**
 * A page's device: navigator.gpu, driven on the page's thread. Opening it awaits requestAdapter,
 * so the device is returned at once and fills in its adapter when `opened` settles (callAsync
 * awaits that first); where no adapter opens, the reason replaces it.
 */
function openOnPage(): WebGpu | string {
  const gpu = (globalThis as { navigator?: { gpu?: unknown } }).navigator?.gpu;
  if (gpu === undefined || gpu === null) {
    shared[KEY] = NO_WEBGPU_ON_PAGE;
    return shared[KEY];
  }
  const worker = new PageDevice(gpu);
  const d: WebGpu = {
    worker,
    description: 'an adapter not opened yet',
    maxStorageBuffers: 8,
    timestamps: false,
    opened: worker.callAsync({ kind: 'init' }).then((r) => {
      if (!r.ok) {
        shared[KEY] = `WebGPU: ${r.error}`;
        throw new Error(`device "gpu" in mode webgpu is unavailable: ${shared[KEY]}`);
      }
      d.description = r.info!.description;
      d.maxStorageBuffers = r.info!.maxStorageBuffers;
      d.timestamps = r.info!.timestamps;
    }),
  };
  d.opened.catch(() => undefined); // (its rejection is the next caller's, through webgpuOpened)
  shared[KEY] = d;
  return d;
}

/** The device once it has opened (a page's awaits its adapter), or an error naming why there is none. */
export async function webgpuOpened(): Promise<WebGpu> {
  await webgpu().opened;
  return webgpu();
}

/** The device if this process has opened it (clear_session never starts one). */
export function openedWebGpu(): WebGpu | undefined {
  const d = shared[KEY];
  return d !== undefined && typeof d !== 'string' ? d : undefined;
}

/** The device, or an error naming why it is missing. */
export function webgpu(): WebGpu {
  const d = openWebGpu();
  if (typeof d === 'string') throw new Error(`device "gpu" in mode webgpu is unavailable: ${d}`);
  return d;
}

/** The worker's counters (tests: a training step uploads its inputs and reads back its outputs only). */
export function webgpuCounts(): WebGpuCounts {
  const r = webgpu().worker.call({ kind: 'counts' }, "the device's counters");
  return r.counts!;
}

/** As webgpuCounts, without blocking (a page's). */
export async function webgpuCountsAsync(): Promise<WebGpuCounts> {
  const r = await (await webgpuOpened()).worker.callAsync({ kind: 'counts' });
  return r.counts!;
}

// The process's numbering, as the device is: a second copy of this module (loaded by require and by import) numbers on from the first's.
const BUFFERS = Symbol.for('theanine.gpu.webgpu.buffers');
const numbering = ((globalThis as { [BUFFERS]?: { next: number } })[BUFFERS] ??= { next: 1 });
/** A fresh device buffer number (the worker allocates it at the first request naming it). */
export function newBufferId(): number {
  return numbering.next++;
}

// Buffers of collected owners are freed in the worker without waiting.
const registry = new FinalizationRegistry<number>((id) => {
  const d = shared[KEY];
  if (d !== undefined && typeof d !== 'string') {
    try {
      d.worker.post({ kind: 'free', ids: [id], quiet: true });
    } catch {
      /* the worker is gone */
    }
  }
});

/** Frees device buffer `id` when `owner` is collected. */
export function freeWith(owner: object, id: number, token?: object): void {
  registry.register(owner, id, token);
}

export function unfreeWith(token: object): void {
  registry.unregister(token);
}
