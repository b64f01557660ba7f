// Building a Scan from a traced step: the caller makes `scan_arg` leaves, calls the user's step
// function on them once, and hands the results here. Whatever the step read from outside (weights,
// placeholders, the learning phase, an enclosing scan's args) becomes an extra constant input, as
// Theano's scan does with free variables, so the body is closed and the Scan's inputs are every
// tensor the loop depends on (which autodiff and the compiler rely on).
import { apply, leaf } from './build.js';
import { ShapeError, ValueError } from './errors.js';
import { topoSort } from './graph.js';
import { intern, nodeIdMark, type Node } from './node.js';
import { copyProvenance } from './provenance.js';
import { ScanBody } from './scanbody.js';
import { scanItems, type KeepMode, type ScanAttrs } from './ops/control.js';
import { compatibleTypes, type TensorType } from './types.js';
import { formatShape } from './ndarray.js';

let argUid = 0;

/** A fresh leaf of a Scan's inner graph with type `t`; `name` says its role (seq0, state1, ...). */
export function scanArg(t: TensorType, name: string): Node {
  return leaf('scan_arg', { uid: ++argUid, name, dtype: t.dtype, shape: t.shape });
}

/** A Scan's inputs by role, named as in its body: sequences (walked along axis 0), states, constants. */
export interface ScanInputs<T> {
  readonly sequences: readonly T[];
  readonly states: readonly T[];
  readonly constants: readonly T[];
}

export interface ScanParts {
  /** The user-facing function, for error messages ('K.rnn'). */
  readonly fn: string;
  /** The Scan's inputs (the states' initial values), and the body's args, one per input. */
  readonly outer: ScanInputs<Node>;
  readonly args: ScanInputs<Node>;
  /** What the traced step computed. */
  readonly outputs: readonly Node[];
  readonly newStates: readonly Node[];
  readonly goBackwards?: boolean;
  readonly nSteps?: number | null;
}

export interface ScanResult {
  /** The tuple-valued scan node. */
  readonly node: Node;
  /** Each body output stacked over the steps, (T, ...), in walking order. */
  readonly outputs: Node[];
  /** Each state after the last step. */
  readonly finalStates: Node[];
  /** Each state after every step, (T, ...). */
  readonly stateSequences: Node[];
}

/** Checks the step's results, closes the body over its free tensors, and builds the scan node. */
export function buildScan(p: ScanParts): ScanResult {
  const { outer, args } = p;
  if (
    args.sequences.length !== outer.sequences.length ||
    args.states.length !== outer.states.length ||
    args.constants.length !== outer.constants.length
  ) {
    throw new Error('internal: buildScan needs one arg per outer input');
  }
  checkNewStates(
    p.fn,
    args.states.map((a) => a.type),
    p.newStates,
  );
  const closed = closeBody(
    [...args.sequences, ...args.states, ...args.constants],
    [...p.outputs, ...p.newStates],
    args.constants.length,
  );
  const nOut = p.outputs.length;
  const body = new ScanBody(
    args.sequences,
    args.states,
    [...args.constants, ...closed.capturedArgs],
    closed.results.slice(0, nOut),
    closed.results.slice(nOut),
  );
  const attrs: ScanAttrs = {
    body,
    go_backwards: p.goBackwards === true,
    n_steps: p.nSteps ?? null,
    keep: new Array<KeepMode>(nOut + args.states.length).fill('all'),
  };
  const node = apply(
    'scan',
    [...outer.sequences, ...outer.states, ...outer.constants, ...closed.captured],
    attrs,
    p.fn,
  );
  return scanResult(node, body);
}

/** A loop's new states must keep the number, dtype and shape of its states. */
export function checkNewStates(fn: string, states: readonly TensorType[], newStates: readonly Node[]): void {
  if (newStates.length !== states.length) {
    throw new ValueError(
      `${fn}: the step function returned ${newStates.length} new states for ${states.length} states`,
    );
  }
  newStates.forEach((s, j) => {
    const want = states[j]!;
    if (s.dtype !== want.dtype) {
      throw new TypeError(
        `${fn}: the step function's new state ${j} is ${s.dtype} but the state is ${want.dtype}; a state keeps its dtype (cast it with K.cast)`,
      );
    }
    if (!compatibleTypes(want, s.type)) {
      throw new ShapeError(
        `${fn}: the step function's new state ${j} has shape ${formatShape(s.shape)} but the state has ${formatShape(want.shape)}; a state keeps its shape`,
      );
    }
  });
}

/** Equal-shaped tensors joined along a new axis (expand_dims + concat, as K.stack). */
export function stackNodes(xs: readonly Node[], axis: number, fn: string): Node {
  const parts = xs.map((x) => apply('expand_dims', [x], { axis }, fn));
  return parts.length === 1 ? parts[0]! : apply('concat', parts, { axis }, fn);
}

/** The tuple_get nodes of a scan's items. */
export function scanResult(node: Node, body: ScanBody): ScanResult {
  const layout = scanItems(body);
  const get = (k: number) => apply('tuple_get', [node], { index: k });
  return {
    node,
    outputs: layout.outputs.map(get),
    finalStates: layout.finalStates.map(get),
    stateSequences: layout.stateSequences.map(get),
  };
}

/**
 * Replaces each maximal subexpression of `results` that does not depend on `args` (other than a
 * `constant` leaf) by a new constant arg, returning the rewritten results and the captured
 * outer nodes with their args, in order of first use.
 */
export function closeBody(
  args: readonly Node[],
  results: readonly Node[],
  firstConst = 0,
): { results: Node[]; captured: Node[]; capturedArgs: Node[] } {
  const own = new Set(args);
  const order = topoSort(results);
  const dependent = new Set<Node>();
  for (const n of order) if (own.has(n) || n.inputs.some((i) => dependent.has(i))) dependent.add(n);
  const subst = new Map<Node, Node>();
  const captured: Node[] = [];
  const capturedArgs: Node[] = [];
  const capture = (n: Node) => {
    if (dependent.has(n) || n.op === 'constant' || subst.has(n)) return;
    const a = scanArg(n.type, `const${firstConst + captured.length}`);
    subst.set(n, a);
    captured.push(n);
    capturedArgs.push(a);
  };
  for (const n of order) if (dependent.has(n)) n.inputs.forEach(capture);
  results.forEach(capture);
  const rebuilt = new Map<Node, Node>();
  const get = (n: Node): Node => subst.get(n) ?? rebuilt.get(n) ?? n;
  for (const n of order) {
    if (!dependent.has(n) || n.inputs.length === 0) continue;
    const ins = n.inputs.map(get);
    // Args keep their types, so the rebuilt node's type is the old one.
    if (ins.some((x, i) => x !== n.inputs[i])) {
      const mark = nodeIdMark();
      const m = intern(n.op, ins, n.attrs, n.type);
      copyProvenance(m, n, mark); // the step's nodes keep the user's calls, not K.rnn's
      rebuilt.set(n, m);
    }
  }
  return { results: results.map(get), captured, capturedArgs };
}
