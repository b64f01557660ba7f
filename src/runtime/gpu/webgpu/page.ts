// The webgpu mode in a browser: navigator.gpu driven on the page's own thread by the same device
// side as Node's worker (worker.ts' DEVICE_SOURCE). WebGPU answers with promises (requestAdapter,
// mapAsync) and a page's thread cannot block for one (Atomics.wait is refused on a window's main
// thread, and a worker that waited would stop the very thread WebGPU answers on), so here every
// wait is `await`: callAsync runs, and a synchronous wait is an error naming callAsync.
// The anchor is WebGPU's own read path, mapAsync, as tfjs-backend-webgpu's `data()`: its
// `dataSync()` instead copies through a canvas, a slow workaround this mode does not take.
import { ValueError } from '../../../ir/errors.js';
import type { DeviceChannel, Reply } from './session.js';
import { DEVICE_SOURCE } from './worker.js';

/** Why the webgpu mode cannot run on a page without navigator.gpu. */
export const NO_WEBGPU_ON_PAGE =
  'this page has no WebGPU (navigator.gpu is undefined): WebGPU needs a secure context (https, or http://localhost) and a browser that has it (Chrome and Edge 113 or newer, Safari 26, Firefox 141; headless Chromium: --enable-unsafe-webgpu)';

/** The error of a synchronous wait on a page; `what` names what waited. */
export function syncOnPage(what: string): ValueError {
  return new ValueError(
    `gpu:webgpu in a browser: ${what} would wait for WebGPU synchronously, which a page cannot do (WebGPU answers with promises); call the function with \`await f.callAsync(values)\`, and read a variable the device holds with \`await K.get_value_async(x)\``,
  );
}

type Handle = (req: Record<string, unknown>) => Promise<Reply | undefined>;
type MakeDeviceSide = (gpu: unknown, collect: () => void, noAdapter: string) => Handle;

/** The page's channel: requests handled one at a time, in the order sent, on this thread. */
export class PageDevice implements DeviceChannel {
  readonly blocking = false;
  private readonly handle: Handle;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(gpu: unknown) {
    // The device side is source text shared with Node's worker (as the cpu device's kernels, made with new Function).
    const make = new Function(`${DEVICE_SOURCE}\nreturn makeDeviceSide;`)() as MakeDeviceSide;
    this.handle = make(
      gpu,
      () => undefined,
      'no WebGPU adapter (navigator.gpu.requestAdapter() found none: the browser has WebGPU but no usable GPU for it)',
    );
  }

  call(_req: Record<string, unknown>, what = 'this step'): Reply {
    throw syncOnPage(what);
  }

  callAsync(req: Record<string, unknown>): Promise<Reply> {
    const reply = this.queue.then(() => this.handle(req));
    this.queue = reply.catch(() => undefined);
    return reply.then((r) => r ?? { ok: true });
  }

  post(req: Record<string, unknown>): void {
    void this.callAsync(req);
  }
}
