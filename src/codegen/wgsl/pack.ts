// A loop kernel that reads more buffers than a shader may bind (16 storage buffers on lavapipe,
// 8 by WebGPU's default): its smallest read-only buffers of one storage type are packed into one
// binding. Before each dispatch the runtime copies them into the packed buffer on the device
// (copyBufferToBuffer in the same command buffer: no read-back), and the shader reads
// `pk[offset + index]` where it read `b<id>[index]` (tfjs-backend-webgpu binds its small uniforms
// in one buffer likewise).
import type { WgslKernel } from './writer.js';
import type { BufferInfo } from './writer.js';
import { MAX_BINDINGS } from './writer.js';
import type { Storage } from './scalar.js';

/** The buffers packed into one binding: each at its element offset. */
export interface Pack {
  readonly ty: Storage;
  readonly parts: readonly { readonly buf: number; readonly at: number; readonly n: number }[];
  readonly total: number;
}

/** A kernel whose last binding is a packed buffer the runtime fills before the dispatch. */
export interface PackedKernel extends WgslKernel {
  readonly packed?: Pack;
}

/** The packing that brings `binds` within the device's bindings, undefined where none is needed, or the reason none fits. */
export function planPack(
  binds: readonly number[],
  writes: readonly number[],
  info: BufferInfo,
): Pack | undefined | string {
  const most = info.maxBindings ?? MAX_BINDINGS;
  if (binds.length <= most) return undefined;
  const need = binds.length - most + 1;
  let best: Pack | undefined;
  for (const ty of ['f32', 'i32', 'f16'] as const) {
    const free = binds
      .filter((b) => !writes.includes(b) && info.storage(b) === ty && info.size(b) > 0)
      .sort((p, q) => info.size(p) - info.size(q) || p - q);
    if (free.length < need) continue;
    let at = 0;
    // f16 parts start on even elements: buffer copies move 4-byte words
    const parts = free.slice(0, need).map((buf) => {
      const part = { buf, at, n: info.size(buf) };
      at += ty === 'f16' ? part.n + (part.n % 2) : part.n;
      return part;
    });
    if (at > 2 ** 31 - 1) continue;
    if (best === undefined || at < best.total) best = { ty, parts, total: at };
  }
  return (
    best ??
    `binds ${binds.length} buffers (a shader binds at most ${most} on this device, and too few of them are read-only of one type to pack)`
  );
}

/** `k` rendered with every binding, rewritten to read the packed buffers from one binding after the others. */
export function packKernel(k: WgslKernel, pack: Pack): PackedKernel {
  const packed = new Map(pack.parts.map((p) => [p.buf, p.at]));
  let code = k.code;
  for (const [buf, at] of packed) code = code.replace(new RegExp(`\\bb${buf}\\[`, 'g'), `pk[${at}i + `);
  // the bindings: the packed buffers' declarations gone, the others numbered again, the packed one last
  const binds = k.binds.filter((b) => !packed.has(b));
  const lines = code.split('\n').filter((l) => {
    const m = /^@group\(0\) @binding\(\d+\) var<storage, \w+> b(\d+): /.exec(l);
    return m === null || !packed.has(Number(m[1]));
  });
  let slot = 0;
  const renumbered = lines.map((l) => l.replace(/^@group\(0\) @binding\(\d+\)/, () => `@group(0) @binding(${slot++})`));
  let last = -1;
  renumbered.forEach((l, i) => {
    if (l.startsWith('@group(0) @binding(')) last = i;
  });
  renumbered.splice(last + 1, 0, `@group(0) @binding(${slot}) var<storage, read> pk: array<${pack.ty}>;`);
  return { ...k, code: renumbered.join('\n'), binds, packed: pack };
}
