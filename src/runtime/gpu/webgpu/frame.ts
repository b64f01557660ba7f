// One call's state on the WebGPU device: the batch of requests gathered for the worker (shaders
// to compile, buffers to allocate, uploads, then dispatches and buffer copies in order), and per
// program (the function's, or a Scan body's) which buffers hold current values on the host and
// which on the device. Something read back sends the batch; otherwise a call sends it once.
import { NDArray } from '../../../ir/ndarray.js';
import type { VariableCell } from '../../../ir/node.js';
import type { EvalContext } from '../../../ir/op.js';
import type { Program } from '../../../codegen/kernel/ir.js';
import type { WgslKernel } from '../../../codegen/wgsl/render.js';
import { storageBytes, type Storage } from '../../../codegen/wgsl/scalar.js';
import { fromDevice, paddedBytes, toDevice } from './half.js';
import { storageIn } from '../../../codegen/wgsl/strategy.js';
import { newBufferId, type Reply, type WebGpu } from './session.js';
import { residentId, uploadVariable } from './resident.js';
import type { Pack, PackedKernel } from '../../../codegen/wgsl/pack.js';
import type { KernelTimer, StepInfo } from '../../profile.js';

/** Keys of packed bindings in a program's device buffers (negative: program buffers are numbered from 0). */
const packKeys = new WeakMap<Pack, number>();
let nextPackKey = -1;

/** A program prepared for the device: its buffers' device copies (by program buffer), constants uploaded. */
export interface DeviceBuffers {
  readonly program: Program;
  readonly dev: Map<number, number>;
  readonly uploaded: Set<number>;
}

type Op =
  | { readonly k: 'd'; readonly key: string; readonly binds: readonly number[]; readonly groups: readonly number[] }
  | {
      readonly k: 'c';
      readonly src: number;
      readonly so: number;
      readonly dst: number;
      readonly do: number;
      readonly bytes: number;
    }
  | {
      readonly k: 'h';
      readonly src: number;
      readonly so: number;
      readonly dst: number;
      readonly do: number;
      readonly n: number;
    };

export const PIPELINES = 64;

/**
 * `compiled`: shader sources the worker has compiled (the source is the key: equal kernels share
 * one pipeline), least recently dispatched first. At most PIPELINES stay: a function called with
 * many shapes makes a shader per shape, and each pipeline holds the driver's compiled code (about
 * 1 MB on lavapipe), so the oldest are dropped, as the compile cache drops specialisations.
 * `keys`: the worker's name of each, short, so that a request of a thousand dispatches (a Scan's
 * steps) does not carry and hash a thousand sources. Both are the process's, as the device is
 * (session.ts): a second copy of this module (loaded by require and by import) shares them.
 */
const SHADERS = Symbol.for('theanine.gpu.webgpu.shaders');
const shaders = ((globalThis as { [SHADERS]?: { compiled: Set<string>; keys: Map<string, string>; next: number } })[
  SHADERS
] ??= { compiled: new Set(), keys: new Map(), next: 1 });
const { compiled, keys } = shaders;
function keyOf(code: string): string {
  let k = keys.get(code);
  if (k === undefined) keys.set(code, (k = `k${shaders.next++}`));
  return k;
}

export function forgetPipelines(): void {
  compiled.clear();
  keys.clear();
}

/** How a profiled call's kernels are timed: timestamp queries where the device has them, else a submit per kernel (THEANINE_WEBGPU_TIMING=submits chooses that one). */
export type Timing = 'timestamps' | 'submits';

/** A profiled dispatch: its row's path and what it is. */
export interface DispatchTag {
  readonly path: string;
  readonly info: () => StepInfo;
}

/** Requests gathered for one message to the worker. */
export class Batch {
  /** The profiled dispatches gathered, in order (each dispatch has one when the batch is timed), and those of the request sent. */
  private tags: DispatchTag[] = [];
  private sent: DispatchTag[] = [];
  private compile: { key: string; code: string }[] = [];
  allocs: { id: number; bytes: number }[] = [];
  writes: { id: number; data: Float32Array | Int32Array | Uint16Array }[] = [];
  private ops: Op[] = [];
  /** Shaders this batch dispatches (never dropped by it). */
  private used = new Set<string>();

  /** `timed`: the profiler's timer and how the worker times each dispatch. */
  constructor(
    readonly gpu: WebGpu,
    readonly timed?: { readonly timer: KernelTimer; readonly timing: Timing },
  ) {}

  dispatch(k: WgslKernel, binds: readonly number[], tag?: DispatchTag): void {
    if (this.timed !== undefined) {
      if (tag === undefined) throw new Error('internal: a dispatch of a profiled call without its row');
      this.tags.push(tag);
    }
    const key = keyOf(k.code);
    if (compiled.delete(k.code))
      compiled.add(k.code); // (most recently used last)
    else {
      this.compile.push({ key, code: k.code });
      compiled.add(k.code);
    }
    this.used.add(k.code);
    this.ops.push({ k: 'd', key, binds, groups: k.groups });
  }

  /**
   * Copies `n` elements of `ty` between device buffers, in order with the dispatches. Buffer copies
   * move 4-byte words: f16 values at an odd element (of either buffer), or an odd count unless the
   * destination's next element is padding (`padded`: pack.ts' parts), are copied by the worker's
   * f16 copy kernel instead (worker.ts), element by element.
   */
  copy(src: number, srcAt: number, dst: number, dstAt: number, n: number, ty: Storage = 'f32', padded = false): void {
    if (n === 0 || (src === dst && srcAt === dstAt)) return;
    if (ty === 'f16' && (srcAt % 2 !== 0 || dstAt % 2 !== 0 || (n % 2 !== 0 && !padded))) {
      this.ops.push({ k: 'h', src, so: srcAt, dst, do: dstAt, n });
      return;
    }
    const e = storageBytes(ty);
    this.ops.push({ k: 'c', src, so: srcAt * e, dst, do: dstAt * e, bytes: paddedBytes(n * e) });
  }

  /** Sends what is gathered with these reads; returns their bytes. */
  send(reads: readonly { id: number; bytes: number }[]): readonly ArrayBuffer[] {
    const req = this.take(reads);
    return req === undefined
      ? []
      : this.received(
          this.gpu.worker.call(
            req,
            "a step that runs on the host, reading the device's values in the middle of a call,",
          ),
        );
  }

  /** As send, without blocking: the reply is awaited (callAsync). */
  async sendAsync(reads: readonly { id: number; bytes: number }[]): Promise<readonly ArrayBuffer[]> {
    const req = this.take(reads);
    return req === undefined ? [] : this.received(await this.gpu.worker.callAsync(req));
  }

  /** The request of what is gathered (undefined where there is nothing to send); the batch starts empty again. */
  private take(reads: readonly { id: number; bytes: number }[]): Record<string, unknown> | undefined {
    if (reads.length === 0 && this.ops.length === 0 && this.writes.length === 0 && this.allocs.length === 0)
      return undefined;
    const evict: string[] = [];
    for (const key of compiled) {
      if (compiled.size - evict.length <= PIPELINES) break;
      if (!this.used.has(key)) evict.push(key);
    }
    for (const code of evict) compiled.delete(code);
    const evictKeys = evict.map((code) => {
      const key = keyOf(code);
      keys.delete(code);
      return key;
    });
    const req = {
      kind: 'run',
      evict: evictKeys,
      compile: this.compile,
      allocs: this.allocs,
      writes: this.writes,
      ops: this.ops,
      reads,
      ...(this.timed !== undefined ? { timing: this.timed.timing } : {}),
    };
    this.compile = [];
    this.allocs = [];
    this.writes = [];
    this.ops = [];
    this.used = new Set();
    this.sent = this.tags;
    this.tags = [];
    return req;
  }

  private received(r: Reply): readonly ArrayBuffer[] {
    if (!r.ok) {
      // a failed compile is not cached in the worker
      compiled.clear();
      throw new Error(`gpu:webgpu: ${r.error}`);
    }
    if (this.timed !== undefined) {
      const times = r.times ?? [];
      if (times.length !== this.sent.length)
        throw new Error(`internal: the worker timed ${times.length} dispatches of ${this.sent.length}`);
      this.sent.forEach((t, i) => this.timed!.timer.add(t.path, t.info, times[i]!));
    }
    return r.data!;
  }
}

/** Values a step needs from the device before it runs (runSteps yields them; its driver reads them back). */
export interface ReadNeed {
  readonly frame: Frame;
  readonly ids: readonly number[];
}
/** A run of steps that yields the read-backs it needs. */
export type Steps = Generator<ReadNeed, void, void>;

/** One program's buffers during a call. */
export class Frame {
  readonly host = new Map<number, NDArray>();
  readonly onDev = new Set<number>();
  readonly p: Program;

  constructor(
    readonly pp: DeviceBuffers,
    readonly batch: Batch,
    readonly cells: readonly VariableCell[],
    ctx: EvalContext,
    inputs?: readonly NDArray[],
  ) {
    this.p = pp.program;
    for (const b of this.p.buffers) {
      switch (b.role) {
        case 'input':
          if (inputs !== undefined) this.host.set(b.id, inputs[b.slot!]!.reshape([b.size]));
          break;
        case 'variable':
          if (residentId(cells[b.slot!]!) !== undefined) this.onDev.add(b.id);
          else this.host.set(b.id, cells[b.slot!]!.value.reshape([b.size]));
          break;
        case 'constant':
          if (pp.uploaded.has(b.id)) this.onDev.add(b.id);
          else this.host.set(b.id, b.value!.reshape([b.size]));
          break;
        case 'phase':
          this.host.set(b.id, new NDArray([ctx.learningPhase], [1], 'uint8'));
          break;
        case 'epoch':
          this.host.set(b.id, new NDArray([ctx.epoch >>> 0], [1], 'float64'));
          break;
        default:
          break;
      }
    }
  }

  /** How the device holds program buffer `id`. */
  storage(id: number): Storage | undefined {
    return storageIn(this.p, id, this.batch.gpu.f16);
  }

  private bytes(id: number): number {
    return paddedBytes(this.p.buffers[id]!.size * storageBytes(this.storage(id)));
  }

  /** The device buffer of program buffer `id` (allocated in this batch where new). */
  devId(id: number): number {
    const b = this.p.buffers[id]!;
    if (b.role === 'variable') {
      const cell = this.cells[b.slot!]!;
      const r = residentId(cell);
      if (r !== undefined) return r;
      const nid = newBufferId();
      this.batch.allocs.push({ id: nid, bytes: this.bytes(id) });
      uploadVariable(cell, nid);
      return nid;
    }
    let d = this.pp.dev.get(id);
    if (d === undefined) {
      d = newBufferId();
      this.pp.dev.set(id, d);
      this.batch.allocs.push({ id: d, bytes: this.bytes(id) });
    }
    return d;
  }

  /** The device buffer of `id`, its host value uploaded first where the device has none. */
  toDev(id: number): number {
    const d = this.devId(id);
    if (!this.onDev.has(id)) {
      const h = this.host.get(id);
      if (h === undefined) throw new Error(`internal: buffer ${id} read before it was written`);
      this.batch.writes.push({ id: d, data: toDevice(this.storage(id), h.data) });
      this.onDev.add(id);
      if (this.p.buffers[id]!.role === 'constant') this.pp.uploaded.add(id);
    }
    return d;
  }

  /** Marks `id` as written on the device (its host copy is stale). */
  deviceWrote(id: number): void {
    this.host.delete(id);
    this.onDev.add(id);
  }

  /** Marks `id` as written on the host. */
  hostWrote(id: number, v: NDArray): void {
    this.host.set(id, v);
    this.onDev.delete(id);
  }

  /** Sends the batch, reading back those of `ids` that only the device holds. */
  flush(ids: readonly number[]): void {
    const want = this.unread(ids);
    this.readBack(want, this.batch.send(want.map((id) => ({ id: this.devId(id), bytes: this.bytes(id) }))));
  }

  /** As flush, without blocking (callAsync's last request). */
  async flushAsync(ids: readonly number[]): Promise<void> {
    const want = this.unread(ids);
    this.readBack(want, await this.batch.sendAsync(want.map((id) => ({ id: this.devId(id), bytes: this.bytes(id) }))));
  }

  private unread(ids: readonly number[]): number[] {
    return [...new Set(ids)].filter((id) => !this.host.has(id) && this.onDev.has(id));
  }

  private readBack(want: readonly number[], data: readonly ArrayBuffer[]): void {
    want.forEach((id, k) =>
      this.host.set(id, fromDevice(this.p.buffers[id]!.dtype, this.storage(id), data[k]!, this.p.buffers[id]!.size)),
    );
  }

  /** Yields the read-back of those of `ids` that only the device holds, if any (a step's need, for runSteps' driver). */
  *need(ids: readonly number[]): Steps {
    const want = this.unread(ids);
    if (want.length > 0) yield { frame: this, ids: want };
  }

  hostOf(id: number): NDArray {
    if (!this.host.has(id)) this.flush([id]);
    const h = this.host.get(id);
    if (h === undefined) throw new Error(`internal: buffer ${id} read before it was written`);
    return h;
  }

  /** The device buffer of a kernel's packed binding (codegen/wgsl/pack.ts), its parts copied in on the device. */
  private packed(pack: Pack): number {
    let key = packKeys.get(pack);
    if (key === undefined) {
      key = nextPackKey--;
      packKeys.set(pack, key);
    }
    let d = this.pp.dev.get(key);
    if (d === undefined) {
      d = newBufferId();
      this.pp.dev.set(key, d);
      this.batch.allocs.push({ id: d, bytes: paddedBytes(pack.total * storageBytes(pack.ty)) });
    }
    for (const part of pack.parts) this.batch.copy(this.toDev(part.buf), 0, d, part.at, part.n, pack.ty, true);
    return d;
  }

  /** Where this program's steps are, for the profiler (a Scan body's: under its Scan's path and name). */
  at = { path: '', name: '', depth: 0 };

  /** A kernel dispatched: what it reads uploaded where needed, what it writes marked; `tag`: its profile row. */
  dispatch(k: PackedKernel, tag?: DispatchTag): void {
    const binds = k.binds.map((id) => (k.writes.includes(id) ? this.devId(id) : this.toDev(id)));
    if (k.packed !== undefined) binds.push(this.packed(k.packed));
    for (const id of k.writes) {
      // A store that does not cover its buffer keeps the rest: the buffer's host copy goes up first.
      if (this.host.has(id) && !this.onDev.has(id)) this.toDev(id);
      this.deviceWrote(id);
    }
    this.batch.dispatch(k, binds, tag);
  }
}
