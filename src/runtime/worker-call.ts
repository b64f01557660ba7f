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
