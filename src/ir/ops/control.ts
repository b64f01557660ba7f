// Control flow: the Scan loop (Theano's scan), the leaves of its inner graph, and tuple items.
import { NDArray, formatShape, sizeOf } from '../ndarray.js';
import { defineOp, type EvalContext } from '../op.js';
import { InferError } from '../errors.js';
import { compatibleTypes, tensorType, tupleType, typeToString, type Dim, type TensorType } from '../types.js';
import type { ScanBody } from '../scanbody.js';
import type { Node } from '../node.js';

/** A leaf of a Scan's inner graph: a per-step slice, a recurrent state or a constant. */
export const scanArgOp = defineOp<{
  readonly uid: number;
  readonly name: string;
  readonly dtype: TensorType['dtype'];
  readonly shape: TensorType['shape'];
}>({
  name: 'scan_arg',
  kind: 'leaf',
  arity: 0,
  infer: (_, a) => tensorType(a.dtype, a.shape),
  impl: (_, a) => {
    throw new InferError(`scan_arg ${JSON.stringify(a.name)} has no value outside its scan's body`, 'value');
  },
});

/** How much of a per-step result a Scan keeps: every step, the last step only, or nothing. */
export type KeepMode = 'all' | 'last' | 'none';

export type ScanAttrs = {
  readonly body: ScanBody;
  /** Walk the steps from the last to the first; stacked items are in walking order. */
  readonly go_backwards: boolean;
  /** Number of steps when there are no sequences, or to fix it statically; else null. */
  readonly n_steps: number | null;
  /** One per stacked item: body outputs, then state sequences (see `scanItems`). */
  readonly keep: readonly KeepMode[];
};

/**
 * Item layout of a Scan's tuple, for `tuple_get`:
 * - `outputs[k]`: body output k stacked over the steps, (T, ...); (...) if kept 'last'; (0, ...) if 'none';
 * - `finalStates[j]`: state j after the last step (the initial value when T = 0);
 * - `stateSequences[j]`: state j after each step, stacked (T, ...) in walking order (what
 *   backprop through time reads: the state before step k is initial for k = 0, else item k - 1).
 */
export function scanItems(body: ScanBody): { outputs: number[]; finalStates: number[]; stateSequences: number[] } {
  const nOut = body.outputs.length;
  const nState = body.states.length;
  const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);
  return { outputs: range(0, nOut), finalStates: range(nOut, nState), stateSequences: range(nOut + nState, nState) };
}

function stackedType(t: TensorType, steps: Dim, keep: KeepMode): TensorType {
  if (keep === 'last') return t;
  return tensorType(t.dtype, [keep === 'none' ? 0 : steps, ...t.shape]);
}

function checkInput(what: string, given: TensorType, arg: Node): void {
  if (!compatibleTypes(arg.type, given)) {
    throw new InferError(`${what} is ${typeToString(given)} but the body reads ${typeToString(arg.type)}`);
  }
}

export const scanOp = defineOp<ScanAttrs>({
  name: 'scan',
  kind: 'other',
  arity: 'variadic',
  infer: (ins, a) => {
    const b = a.body;
    const nSeq = b.sequences.length;
    const nState = b.states.length;
    const nIn = nSeq + nState + b.constants.length;
    if (ins.length !== nIn) {
      throw new InferError(
        `scan takes ${nIn} inputs (${nSeq} sequences, ${nState} initial states, ${b.constants.length} constants), got ${ins.length}`,
        'value',
      );
    }
    let steps: Dim = a.n_steps;
    if (steps !== null && (!Number.isInteger(steps) || steps < 0))
      throw new InferError(`n_steps ${steps} is not a non-negative integer`, 'value');
    if (nSeq === 0 && steps === null) throw new InferError('a scan without sequences needs n_steps', 'value');
    ins.slice(0, nSeq).forEach((t, i) => {
      if (t.shape.length === 0)
        throw new InferError(`sequence ${i} is a scalar; sequences are walked along axis 0`, 'value');
      checkInput(
        `a step of sequence ${i} (shape ${formatShape(t.shape)})`,
        tensorType(t.dtype, t.shape.slice(1)),
        b.sequences[i]!,
      );
      const d = t.shape[0]!;
      if (steps === null) steps = d;
      else if (d !== null && d !== steps)
        throw new InferError(
          `sequence ${i} of shape ${formatShape(t.shape)} has ${d} steps but the scan runs ${steps}`,
        );
    });
    b.states.forEach((s, j) => {
      checkInput(`initial state ${j}`, ins[nSeq + j]!, s);
      if (!compatibleTypes(s.type, b.newStates[j]!.type)) {
        throw new InferError(
          `the body's new state ${j} is ${typeToString(b.newStates[j]!.type)} but the state is ${typeToString(s.type)}`,
        );
      }
    });
    b.constants.forEach((c, k) => checkInput(`constant ${k}`, ins[nSeq + nState + k]!, c));
    const nStacked = b.outputs.length + nState;
    if (a.keep.length !== nStacked || a.keep.some((k) => k !== 'all' && k !== 'last' && k !== 'none')) {
      throw new InferError(
        `keep must give 'all', 'last' or 'none' for each of the ${nStacked} stacked items, got ${JSON.stringify(a.keep)}`,
        'value',
      );
    }
    const items: TensorType[] = [
      ...b.outputs.map((o, k) => stackedType(o.type, steps, a.keep[k]!)),
      ...b.states.map((s) => s.type),
      ...b.states.map((s, j) => stackedType(s.type, steps, a.keep[b.outputs.length + j]!)),
    ];
    return tupleType(items);
  },
  impl: () => {
    throw new Error('internal: scan is tuple-valued; the interpreter calls implTuple');
  },
  implTuple: (ins, a, ctx) => runScan(ins, a, ctx),
});

/** Slice t of `x` along axis 0. */
export function sliceAxis0(x: NDArray, t: number): NDArray {
  const inner = sizeOf(x.shape.slice(1));
  return new NDArray(x.data.slice(t * inner, (t + 1) * inner), x.shape.slice(1), x.dtype);
}

/** The runtime value must fit the static type the body was traced with. */
/** A value with a shape, and a dtype where the executor keeps the declared ones (tfjs does not). */
interface Shaped {
  readonly shape: readonly number[];
}

/** A runtime value must fit the static type the body was traced with. */
export function checkFits(what: string, v: Shaped, t: TensorType, dtype: string | undefined): void {
  if (
    (dtype !== undefined && dtype !== t.dtype) ||
    v.shape.length !== t.shape.length ||
    t.shape.some((d, i) => d !== null && d !== v.shape[i])
  ) {
    throw new InferError(
      `${what} is ${dtype ?? t.dtype} ${formatShape(v.shape)} but the body expects ${typeToString(t)}`,
    );
  }
}

/** A scan's outer inputs (of any kind: values, tensors, names) split into sequences, initial states and constants. */
export function splitScanInputs<T>(ins: readonly T[], body: ScanBody): { seqs: T[]; initial: T[]; consts: T[] } {
  const nSeq = body.sequences.length;
  const nState = body.states.length;
  return { seqs: ins.slice(0, nSeq), initial: ins.slice(nSeq, nSeq + nState), consts: ins.slice(nSeq + nState) };
}

/**
 * A scan's outer inputs split into sequences, initial states and constants, each checked against
 * the type the body was traced with, and the number of steps. Every executor starts a scan here.
 */
export function scanInputs<T extends Shaped>(
  ins: readonly T[],
  a: ScanAttrs,
  dtypeOf: (v: T) => string | undefined = () => undefined,
): {
  seqs: T[];
  initial: T[];
  consts: T[];
  steps: number;
} {
  const b = a.body;
  const { seqs, initial, consts } = splitScanInputs(ins, b);
  const steps = a.n_steps ?? seqs[0]!.shape[0]!;
  seqs.forEach((s, i) => {
    if (s.shape[0] !== steps)
      throw new InferError(
        `sequence ${i} of shape ${formatShape(s.shape)} has ${s.shape[0]} steps but the scan runs ${steps}`,
        'value',
      );
  });
  initial.forEach((s, j) => checkFits(`initial state ${j}`, s, b.states[j]!.type, dtypeOf(s)));
  consts.forEach((c, k) => checkFits(`constant ${k}`, c, b.constants[k]!.type, dtypeOf(c)));
  return { seqs, initial, consts, steps };
}

/**
 * What a loop on the host over a Scan's body needs from an executor: its values are NDArrays in
 * the reference, tensors in the tfjs executor.
 */
export interface ScanHost<T extends Shaped> {
  /** The dtype a value is checked for, where the executor keeps the declared ones (tfjs does not). */
  dtypeOf(v: T): string | undefined;
  /** Step t of a sequence (its slice t along axis 0). */
  slice(seq: T, t: number): T;
  /** The body's results for one step, given the step's feeds (built inside, so an executor can scope them). */
  step(results: readonly Node[], feeds: () => Map<Node, T>): T[];
  /** Equal-shaped steps stacked along a new axis 0. */
  stack(steps: readonly T[]): T;
  /** The stack of no steps, of type t (unknown dims as 0). */
  empty(t: TensorType): T;
}

/** Stacks the steps of one item after checking they keep one shape. */
function stackSteps<T extends Shaped>(host: ScanHost<T>, what: string, steps: readonly T[], t: TensorType): T {
  const first = steps[0];
  if (first === undefined) return host.empty(t);
  steps.forEach((s, k) => {
    if (s.shape.length !== first.shape.length || s.shape.some((d, i) => d !== first.shape[i])) {
      throw new InferError(
        `${what}: step ${k} has shape ${formatShape(s.shape)} but step 0 had ${formatShape(first.shape)}; stacked results keep one shape`,
      );
    }
  });
  return host.stack(steps);
}

/**
 * A Scan run as a loop on the host: each step feeds the sequences' slices, the states and the
 * constants to the body; the results are the scan's tuple (`scanItems`), stacked items in walking
 * order. The reference interpreter and the tfjs executor both run scans here.
 */
export function scanLoop<T extends Shaped>(ins: readonly T[], a: ScanAttrs, host: ScanHost<T>): T[] {
  const b = a.body;
  const { seqs, initial, consts, steps } = scanInputs(ins, a, host.dtypeOf);
  let states = initial;
  const outs: T[][] = b.outputs.map(() => []);
  const stateSeqs: T[][] = b.states.map(() => []);
  for (let k = 0; k < steps; k++) {
    const t = a.go_backwards ? steps - 1 - k : k;
    const vals = host.step(b.results, () => {
      const feeds = new Map<Node, T>();
      b.sequences.forEach((arg, i) => feeds.set(arg, host.slice(seqs[i]!, t)));
      b.states.forEach((arg, j) => feeds.set(arg, states[j]!));
      b.constants.forEach((arg, c) => feeds.set(arg, consts[c]!));
      return feeds;
    });
    b.outputs.forEach((_, o) => outs[o]!.push(vals[o]!));
    const next = vals.slice(b.outputs.length);
    next.forEach((s, j) => {
      checkFits(`new state ${j} at step ${k}`, s, b.states[j]!.type, host.dtypeOf(s));
      const prev = states[j]!;
      if (s.shape.some((d, i) => d !== prev.shape[i])) {
        throw new InferError(
          `new state ${j} at step ${k} has shape ${formatShape(s.shape)} but the state had ${formatShape(prev.shape)}; states keep their shape`,
        );
      }
      stateSeqs[j]!.push(s);
    });
    states = next;
  }
  const kept = (what: string, list: readonly T[], t: TensorType, keep: KeepMode): T => {
    if (keep === 'last') {
      const last = list[list.length - 1];
      if (last === undefined)
        throw new InferError(`${what}: the last step is asked for, but the scan ran 0 steps`, 'value');
      return last;
    }
    return stackSteps(host, what, keep === 'none' ? [] : list, t);
  };
  return [
    ...b.outputs.map((o, k) => kept(`output ${k}`, outs[k]!, o.type, a.keep[k]!)),
    ...states,
    ...b.states.map((s, j) => kept(`state ${j}`, stateSeqs[j]!, s.type, a.keep[b.outputs.length + j]!)),
  ];
}

function runScan(ins: readonly NDArray[], a: ScanAttrs, ctx: EvalContext): NDArray[] {
  return scanLoop(ins, a, {
    dtypeOf: (v) => v.dtype,
    slice: sliceAxis0,
    step: (results, feeds) => ctx.evaluate(results, feeds()),
    stack: (steps) => {
      const first = steps[0]!;
      const out = new Float64Array(first.size * steps.length);
      steps.forEach((s, k) => out.set(s.data, k * first.size));
      return new NDArray(out, [steps.length, ...first.shape], first.dtype);
    },
    empty: (t) => NDArray.zeros([0, ...t.shape.map((d) => d ?? 0)], t.dtype),
  });
}

/** Item `index` of a tuple-valued node, as an ordinary tensor. The interpreter reads it directly. */
export const tupleGetOp = defineOp<{ readonly index: number }>({
  name: 'tuple_get',
  kind: 'other',
  arity: 1,
  infer: ([t], a) => {
    const items = t!.items;
    if (items === undefined) throw new InferError('tuple_get takes a tuple-valued node (a scan)', 'type');
    const item = items[a.index];
    if (!Number.isInteger(a.index) || item === undefined)
      throw new InferError(`tuple_get index ${a.index} is out of range for a tuple of ${items.length} items`, 'value');
    return item;
  },
  impl: () => {
    throw new Error('internal: tuple_get is evaluated by the interpreter from its input tuple');
  },
});
