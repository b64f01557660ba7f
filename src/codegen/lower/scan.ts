// A Scan, lowered to a loop step: its body compiled on its own (passes, then lowering with the
// per-step shapes), with step buffers for the slices and double buffers for the states.
import type { DType } from '../../ir/dtype.js';
import type { Node } from '../../ir/node.js';
import type { OpNode } from '../../ir/registry.js';
import type { BufferRole, Program, ScanStep, ValueRef } from '../kernel/ir.js';
import { sizeOf } from '../../ir/ndarray.js';
import { DynamicShapeError, type Concrete, type LowerSpec } from './types.js';

/** A Scan as a loop over its compiled body, or why it must run as an extern (no steps, a body that does not compile). */
export function lowerScan(
  n: OpNode<'scan'>,
  t: Concrete,
  spec: LowerSpec,
  values: ReadonlyMap<Node, ValueRef>,
  addBuf: (dtype: DType, size: number, role: BufferRole) => number,
  lower: (spec: LowerSpec) => Program,
): { step: ScanStep; items: ValueRef[] } | { reason: string } {
  const a = n.attrs;
  const body = a.body;
  const nSeq = body.sequences.length;
  const nState = body.states.length;
  const nOut = body.outputs.length;
  const ins = n.inputs.map((i) => values.get(i)!);
  const seqs = ins.slice(0, nSeq);
  const inits = ins.slice(nSeq, nSeq + nState);
  const consts = ins.slice(nSeq + nState);
  const steps = a.n_steps ?? seqs[0]?.shape[0];
  if (steps === undefined || steps < 1)
    return { reason: `a scan of ${steps ?? 'unknown'} steps runs its reference implementation` };
  const args = body.args;
  const argShapes = [...seqs.map((v) => v.shape.slice(1)), ...inits.map((v) => v.shape), ...consts.map((v) => v.shape)];
  let prog: Program;
  try {
    prog = lower({
      targets: spec.optimizeBody!(body),
      inputSlot: new Map(args.map((x, i) => [x, i])),
      variableSlot: new Map(),
      inputShapes: argShapes,
      tile: spec.tile,
      optimizeBody: spec.optimizeBody,
      ...(spec.gatherLoops !== undefined ? { gatherLoops: spec.gatherLoops } : {}),
    });
  } catch (e) {
    if (e instanceof DynamicShapeError) return { reason: `its body does not compile: ${e.message}` };
    throw e;
  }
  // New states keep the states' shapes (the reference checks it at every step).
  const sameAs = (x: readonly number[], y: readonly number[]) => x.length === y.length && x.every((d, i) => d === y[i]);
  const odd = inits.findIndex(
    (v, j) => !sameAs(prog.targets[nOut + j]!.shape, v.shape) || prog.targets[nOut + j]!.dtype !== v.dtype,
  );
  if (odd >= 0)
    return { reason: `the body's new state ${odd} does not keep the state's type (the reference reports it)` };
  const items = t.items!;
  const item = (k: number): ValueRef => {
    const it = items[k]!;
    return { buf: addBuf(it.dtype, sizeOf(it.shape), 'temp'), offset: 0, shape: it.shape, dtype: it.dtype };
  };
  const outRefs = body.outputs.map((_, k) => item(k));
  const finalRefs = body.states.map((_, j) => item(nOut + j));
  const stateRefs = body.states.map((_, j) => item(nOut + nState + j));
  const scratch = (v: { dtype: DType; shape: readonly number[] }) => addBuf(v.dtype, sizeOf(v.shape), 'scratch');
  const step: ScanStep = {
    kind: 'scan',
    label: `scan ${steps} steps`,
    steps,
    backwards: a.go_backwards,
    body: prog,
    seqs,
    inits,
    consts,
    seqStep: seqs.map((v) => scratch({ dtype: v.dtype, shape: v.shape.slice(1) })),
    stateA: inits.map(scratch),
    stateB: inits.map(scratch),
    outStep: prog.targets.slice(0, nOut).map(scratch),
    outItems: outRefs.map((r, k) => ({ buf: r.buf, keep: a.keep[k]! })),
    finalItems: finalRefs.map((r) => r.buf),
    stateItems: stateRefs.map((r, j) => ({ buf: r.buf, keep: a.keep[nOut + j]! })),
  };
  return { step, items: [...outRefs, ...finalRefs, ...stateRefs] };
}
