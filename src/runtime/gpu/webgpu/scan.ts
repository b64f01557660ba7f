// A Scan on the WebGPU device: every step's kernels recorded into the call's one command buffer,
// with no read-back between steps. Per step, each sequence's slice is copied into the body's input
// buffer, the body's kernels are dispatched, its outputs are copied into the stacked items at the
// step's offset, and its new states into the body's state inputs for the next step (buffer copies
// between passes; WebGPU orders them with the dispatches). The body's buffers are the same for
// every step, so memory does not grow with the number of steps.
import type { EvalContext } from '../../../ir/op.js';
import type { ScanStep } from '../../../codegen/kernel/ir.js';
import { Frame, type DeviceBuffers, type Steps } from './frame.js';

const count = (shape: readonly number[]): number => shape.reduce((a, d) => a * d, 1);

/** Runs `s` with its body prepared as `body`; `run` runs a program's steps in a frame (yielding the read-backs they need); `at`: where the body's steps are (the profiler's rows). */
export function* runScan<B extends DeviceBuffers & { readonly steps: readonly S[] }, S>(
  outer: Frame,
  s: ScanStep,
  body: B,
  ctx: EvalContext,
  run: (f: Frame, steps: readonly S[], ctx: EvalContext) => Steps,
  at?: Frame['at'],
): Steps {
  const f = new Frame(body, outer.batch, outer.cells, ctx);
  if (at !== undefined) f.at = at;
  const bp = body.program;
  const T = s.steps;
  const nSeq = s.seqs.length,
    nState = s.inits.length,
    nOut = s.outItems.length;
  /** The body's input buffer of slot `k`, if the body reads it. */
  const slot = (k: number): number | undefined => bp.buffers.find((b) => b.role === 'input' && b.slot === k)?.id;
  /** Copies `n` elements from outer buffer `buf` at `at` into body input slot `k`. */
  const fill = (k: number, buf: number, at: number, n: number): void => {
    const id = slot(k);
    if (id === undefined) return;
    outer.batch.copy(outer.toDev(buf), at, f.devId(id), 0, n, outer.storage(buf));
    f.deviceWrote(id);
  };
  /** The device buffer of a body target (uploaded if the body only passes a constant through). */
  const src = (buf: number): number => (f.onDev.has(buf) ? f.devId(buf) : f.toDev(buf));
  s.consts.forEach((c, j) => fill(nSeq + nState + j, c.buf, c.offset, count(c.shape)));
  s.inits.forEach((c, j) => fill(nSeq + j, c.buf, c.offset, count(c.shape)));
  const items = [...s.outItems, ...s.stateItems];
  const itemIds = items.map((it) => (it.keep === 'none' ? undefined : outer.devId(it.buf)));
  for (let k = 0; k < T; k++) {
    const t = s.backwards ? T - 1 - k : k;
    s.seqs.forEach((q, j) => {
      const n = count(q.shape.slice(1));
      fill(j, q.buf, q.offset + t * n, n);
    });
    yield* run(f, body.steps, ctx);
    // The step's outputs, then its new states, into the stacked items (each kept whole, last, or not at all).
    bp.targets.forEach((tg, i) => {
      const it = items[i]!;
      const n = count(tg.shape);
      if (it.keep === 'all') outer.batch.copy(src(tg.buf), tg.offset, itemIds[i]!, k * n, n, f.storage(tg.buf));
      else if (it.keep === 'last' && k === T - 1)
        outer.batch.copy(src(tg.buf), tg.offset, itemIds[i]!, 0, n, f.storage(tg.buf));
    });
    for (let j = 0; j < nState; j++) {
      const tg = bp.targets[nOut + j]!;
      const n = count(tg.shape);
      if (k === T - 1) outer.batch.copy(src(tg.buf), tg.offset, outer.devId(s.finalItems[j]!), 0, n, f.storage(tg.buf));
      else {
        const id = slot(nSeq + j);
        if (id !== undefined) {
          outer.batch.copy(src(tg.buf), tg.offset, f.devId(id), 0, n, f.storage(tg.buf));
          f.deviceWrote(id);
        }
      }
    }
  }
  items.forEach((it) => {
    if (it.keep !== 'none') outer.deviceWrote(it.buf);
  });
  for (const id of s.finalItems) outer.deviceWrote(id);
}
