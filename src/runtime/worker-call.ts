// The host side of a worker bridge that blocks: the onnx backend's ONNX Runtime worker (onnx/session.ts) and the
// WebGPU worker (gpu/webgpu/session.ts) both answer on a MessagePort and wake the host through a shared flag.
import type { MessagePort, Worker } from 'node:worker_threads';

type WorkerThreads = typeof import('node:worker_threads');

/** The ends of a worker bridge: the worker, the port it answers on and the flag it raises when it has answered. */
export interface WorkerBridge {
  readonly threads: WorkerThreads;
  readonly worker: Worker;
  readonly port: MessagePort;
  readonly flag: Int32Array;
}

let blocking = 0;
/** How many blocking requests this thread has made (tests: a synchronous call blocks, callAsync never does). */
export function blockingRequests(): number {
  return blocking;
}

/**
 * Posts `req` as request `id` and blocks until its reply; replies to other requests that arrive meanwhile go to `other`.
 * 10 minutes: a request that takes longer is taken to be stuck, and `stuck` is the error's message. `transfer`: buffers
 * the request hands over to the worker (moved, not copied; the sender's views of them are detached).
 */
export function callSync<R extends { readonly id: number }>(
  b: WorkerBridge,
  id: number,
  req: Record<string, unknown>,
  stuck: string,
  other: (reply: R) => void,
  transfer: readonly ArrayBuffer[] = [],
): R {
  blocking++;
  Atomics.store(b.flag, 0, 0);
  b.worker.postMessage({ ...req, id }, [...transfer]);
  const deadline = performance.now() + 600_000;
  for (;;) {
    for (let m = b.threads.receiveMessageOnPort(b.port); m !== undefined; m = b.threads.receiveMessageOnPort(b.port)) {
      const reply = m.message as R;
      if (reply.id === id) return reply;
      other(reply);
    }
    const left = deadline - performance.now();
    if (left <= 0) throw new Error(stuck);
    Atomics.wait(b.flag, 0, 0, Math.min(left, 50));
    Atomics.store(b.flag, 0, 0);
  }
}

/**
 * A worker started from `source` with a port to answer on and a flag to raise, `workerData` handed on with both.
 * Neither the worker nor the port keeps the process alive once the user's work is done.
 */
export class BlockingWorker<R extends { readonly id: number }> implements WorkerBridge {
  readonly worker: Worker;
  readonly port: MessagePort;
  readonly flag: Int32Array;
  protected nextId = 1;

  constructor(
    readonly threads: WorkerThreads,
    source: string,
    workerData: Record<string, unknown>,
  ) {
    const sab = new SharedArrayBuffer(4);
    this.flag = new Int32Array(sab);
    const { port1, port2 } = new threads.MessageChannel();
    this.port = port1;
    this.worker = new threads.Worker(source, {
      eval: true,
      workerData: { ...workerData, flag: sab, port: port2 },
      transferList: [port2],
    });
    this.worker.unref();
    this.port.unref();
  }

  /** Posts a request whose reply nobody waits for (a reply that comes is skipped by its id); `transfer` as callSync's. */
  post(req: Record<string, unknown>, transfer: readonly ArrayBuffer[] = []): void {
    this.worker.postMessage({ ...req, id: this.nextId++ }, [...transfer]);
  }

  /** Posts a request and blocks until its reply (callSync); `stuck`, `other` and `transfer` as there. */
  protected callBlocking(
    req: Record<string, unknown>,
    stuck: string,
    other: (reply: R) => void,
    transfer: readonly ArrayBuffer[] = [],
  ): R {
    return callSync<R>(this, this.nextId++, req, stuck, other, transfer);
  }
}
