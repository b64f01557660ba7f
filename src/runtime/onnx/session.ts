// ONNX Runtime sessions behind a synchronous call. onnxruntime-node's create and run return
// promises, and K is synchronous, so sessions live in a worker thread: the caller posts a
// request, blocks in Atomics.wait on a shared flag, and reads the worker's answer with
// receiveMessageOnPort (synckit's technique, in a few lines of our own). onnxruntime-node is an
// optional peer dependency, found at the first onnx-backend compile. Node only (the platform module
// gives worker_threads; a browser build throws saying so).
import { platform } from '#platform';
import { BlockingWorker } from '../worker-call.js';

type WorkerThreads = typeof import('node:worker_threads');
const threads = (): WorkerThreads =>
  platform.nodeBuiltin('worker_threads', 'the onnx backend (onnxruntime-node)') as WorkerThreads;

export const ORT_PACKAGE = 'onnxruntime-node';

/** Tensor data as it crosses to the worker: ORT's type name, a typed array, dims. */
export interface WireTensor {
  readonly type: string;
  readonly data: ArrayBufferView;
  readonly dims: readonly number[];
}

interface Reply {
  readonly ok: boolean;
  readonly error?: string;
  readonly outputs?: Record<string, WireTensor>;
  readonly info?: { version: string; provider: string };
  readonly events?: readonly OrtNodeEvent[];
}

/** One node's run in ONNX Runtime's profile (SessionOptions.enableProfiling): the ONNX node's name, its op type, microseconds. */
export interface OrtNodeEvent {
  readonly node: string;
  readonly op: string;
  readonly us: number;
  /** Bytes of its inputs (activations and parameters) and outputs, as ONNX Runtime states them. */
  readonly read: number;
  readonly written: number;
}

// The worker's source: CommonJS, loads onnxruntime-node from the path the main thread resolved.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const ort = require(workerData.ortPath);
const flag = new Int32Array(workerData.flag);
const port = workerData.port;
const sessions = new Map();
// profiled sessions' model bytes, options and profile file prefix (a profile is read by ending it and starting a fresh session)
const profiled = new Map();
let current = 0;
const options = (provider, prefix, threads) => ({ executionProviders: [provider], graphOptimizationLevel: 'all', ...(threads ? { intraOpNumThreads: threads, interOpNumThreads: threads } : {}), ...(prefix ? { enableProfiling: true, profileFilePrefix: prefix } : {}) });
// ONNX Runtime writes <prefix>_<date>.json: its node events ("cat": "Node", "<node>_kernel_time"), read and removed
function readProfile(prefix) {
  const fs = require('node:fs'), path = require('node:path');
  const dir = path.dirname(prefix), base = path.basename(prefix) + '_';
  const events = [];
  for (const f of fs.readdirSync(dir)) {
    if (!f.startsWith(base) || !f.endsWith('.json')) continue;
    const file = path.join(dir, f);
    const all = JSON.parse(fs.readFileSync(file, 'utf8'));
    fs.rmSync(file, { force: true });
    for (const e of all) {
      if (e.cat !== 'Node' || typeof e.name !== 'string' || !e.name.endsWith('_kernel_time')) continue;
      const a = e.args || {};
      events.push({ node: e.name.slice(0, -'_kernel_time'.length), op: a.op_name || '', us: Number(e.dur) || 0, read: (Number(a.activation_size) || 0) + (Number(a.parameter_size) || 0), written: Number(a.output_size) || 0 });
    }
  }
  return events;
}
function answer(msg) {
  port.postMessage({ ...msg, id: current });
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
}
parentPort.on('message', async (req) => {
  current = req.id;
  try {
    if (req.kind === 'create') {
      const prefix = req.profile ? require('node:path').join(require('node:os').tmpdir(), 'theanine-ort-profile-' + process.pid + '-' + req.key) : undefined;
      const s = await ort.InferenceSession.create(req.bytes, options(req.provider, prefix, req.threads));
      sessions.set(req.key, s);
      if (prefix) profiled.set(req.key, { bytes: req.bytes, provider: req.provider, prefix, threads: req.threads });
      answer({ ok: true, info: { version: ort.env.versions.node || ort.env.versions.common, provider: req.provider } });
    } else if (req.kind === 'run') {
      const s = sessions.get(req.key);
      const feeds = {};
      for (const [k, v] of Object.entries(req.feeds)) feeds[k] = new ort.Tensor(v.type, v.data, v.dims);
      const out = await s.run(feeds, req.fetches);
      const outputs = {};
      for (const k of req.fetches) {
        const t = out[k];
        outputs[k] = { type: t.type, data: t.data, dims: Array.from(t.dims) };
        if (typeof t.dispose === 'function') t.dispose();
      }
      answer({ ok: true, outputs });
    } else if (req.kind === 'profile') {
      const p = profiled.get(req.key);
      const s = sessions.get(req.key);
      s.endProfiling();
      const events = readProfile(p.prefix);
      sessions.set(req.key, await ort.InferenceSession.create(p.bytes, options(p.provider, p.prefix, p.threads)));
      await s.release();
      answer({ ok: true, events });
    } else if (req.kind === 'release') {
      const s = sessions.get(req.key);
      sessions.delete(req.key);
      const p = profiled.get(req.key);
      profiled.delete(req.key);
      if (s && p) { s.endProfiling(); readProfile(p.prefix); }
      if (s) await s.release();
      if (!req.quiet) answer({ ok: true });
    } else if (req.kind === 'ping') {
      answer({ ok: true, info: { version: ort.env.versions.node || ort.env.versions.common, provider: 'cpu' } });
    }
  } catch (e) {
    answer({ ok: false, error: String(e && e.message ? e.message : e) });
  }
});
`;

class SyncWorker extends BlockingWorker<Reply & { id: number }> {
  constructor(ortPath: string) {
    super(threads(), WORKER_SOURCE, { ortPath });
  }

  call(req: Record<string, unknown>): Reply {
    // answers to other requests (none are waited for but releases) are dropped
    return this.callBlocking(req, 'onnx backend: ONNX Runtime did not answer within 10 minutes', () => {});
  }
}

let worker: SyncWorker | undefined;
let runtimeInfo: { version: string; provider: string } | undefined;

/** Whether onnxruntime-node can be found (tests name the reason when it cannot). */
export function ortAvailable(): string | undefined {
  try {
    platform.resolveModule(ORT_PACKAGE);
    return undefined;
  } catch {
    return `backend "onnx" needs ONNX Runtime: install it with \`npm install ${ORT_PACKAGE}\` (it is an optional peer dependency of theanine)`;
  }
}

function theWorker(): SyncWorker {
  if (worker !== undefined) return worker;
  const missing = ortAvailable();
  if (missing !== undefined) throw new Error(missing);
  worker = new SyncWorker(platform.resolveModule(ORT_PACKAGE));
  const r = worker.call({ kind: 'ping' });
  if (!r.ok) throw new Error(`backend "onnx": loading ${ORT_PACKAGE} failed: ${r.error}`);
  return worker;
}

/**
 * The execution provider sessions ask for: THEANINE_ONNX_PROVIDER (e.g. `cuda`), else `cpu`,
 * the provider onnxruntime-node ships in its npm package.
 */
export function requestedProvider(): string {
  return platform.env('THEANINE_ONNX_PROVIDER') ?? 'cpu';
}

let nextKey = 1;

/** One ONNX Runtime session in the worker; `run` blocks until ORT answers. */
export class OrtSession {
  private readonly key = nextKey++;
  readonly provider: string;
  readonly version: string;

  /** Runs since the profile was last read (profiled sessions). */
  private runs = 0;

  /**
   * `profile`: ONNX Runtime profiles every run (SessionOptions.enableProfiling), read by takeProfile.
   * `threads`: its intra- and inter-op threads (ONNX Runtime's default: a pool per session).
   */
  constructor(
    bytes: Uint8Array,
    readonly profile = false,
    threads?: number,
  ) {
    const w = theWorker();
    const provider = requestedProvider();
    const r = w.call({
      kind: 'create',
      key: this.key,
      bytes,
      provider,
      profile,
      ...(threads !== undefined ? { threads } : {}),
    });
    if (!r.ok) throw new Error(`onnx backend: ONNX Runtime rejected the model: ${r.error}`);
    this.provider = r.info!.provider;
    this.version = r.info!.version;
    runtimeInfo = r.info;
    registry.register(this, this.key);
  }

  run(feeds: Record<string, WireTensor>, fetches: readonly string[]): Record<string, WireTensor> {
    const r = theWorker().call({ kind: 'run', key: this.key, feeds, fetches });
    if (!r.ok) throw new Error(`onnx backend: ONNX Runtime failed: ${r.error}`);
    this.runs++;
    return r.outputs!;
  }

  /** A profiled session's node runs since the last take: ONNX Runtime's profile is ended and read, and a fresh profiled session takes over. */
  takeProfile(): readonly OrtNodeEvent[] {
    if (!this.profile) throw new Error('internal: takeProfile of a session made without profile');
    if (this.runs === 0) return [];
    this.runs = 0;
    const r = theWorker().call({ kind: 'profile', key: this.key });
    if (!r.ok) throw new Error(`onnx backend: reading ONNX Runtime's profile failed: ${r.error}`);
    return r.events!;
  }
}

// a collected session's ORT session is released in the worker
const registry = new FinalizationRegistry<number>((key) => {
  if (worker !== undefined) {
    try {
      worker.post({ kind: 'release', key, quiet: true });
    } catch {
      /* the worker is gone */
    }
  }
});

/** ONNX Runtime's version and the provider the latest session was created with. */
export function onnxRuntimeInfo(): { version: string; provider: string } | undefined {
  return runtimeInfo;
}

/** Milliseconds one round trip to the worker takes with nothing to run (bench/). */
export function pingMs(n = 100): number {
  const w = theWorker();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) w.call({ kind: 'ping' });
  return (performance.now() - t0) / n;
}
