// K.rnn: one Scan node over the time axis, or T copies of the step with `unroll`.
import { apply } from '../ir/build.js';
import { ShapeError, ValueError } from '../ir/errors.js';
import { NDArray, describe, formatShape } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import { buildScan, checkNewStates, scanArg, stackNodes } from '../ir/scan.js';
import { isFullyKnown, tensorType } from '../ir/types.js';
import { checkInt, constantNode, options, toTensor, type TensorLike } from './args.js';

/** Keras' step function: `(x_t, states.concat(constants)) => [output_t, new_states]`. */
export type StepFunction = (x: Node, states: Node[]) => readonly [TensorLike, readonly TensorLike[]];

export interface RnnOptions {
  go_backwards?: boolean;
  mask?: TensorLike | null;
  constants?: readonly TensorLike[] | null;
  unroll?: boolean;
  input_length?: number | null;
}

const FN = 'K.rnn';
const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);

/**
 * Runs `step_function` over the time axis (axis 1) of `inputs`, shape (samples, time, ...), and
 * returns `[last_output, outputs, new_states]`: outputs (samples, time, ...) in walking order
 * (reversed with `go_backwards`). Where `mask[s, t]` is 0 the output repeats the previous one
 * (zeros before the first step) and every state keeps its value.
 */
export function rnn(
  step_function: StepFunction,
  inputs: TensorLike,
  initial_states: readonly TensorLike[],
  go_backwards?: boolean | RnnOptions,
  mask?: TensorLike | null,
  constants?: readonly TensorLike[] | null,
  unroll?: boolean,
  input_length?: number | null,
): [Node, Node, Node[]] {
  const o = options<Required<RnnOptions>>(
    'rnn',
    [go_backwards, mask, constants, unroll, input_length],
    ['go_backwards', 'mask', 'constants', 'unroll', 'input_length'],
  );
  if (typeof step_function !== 'function') {
    throw new TypeError(
      `${FN}: step_function must be a function (x_t, states) => [output_t, new_states], got ${describe(step_function)}`,
    );
  }
  const x = toTensor('rnn', inputs, 'inputs');
  if (x.ndim < 3)
    throw new ValueError(`${FN}: inputs should be at least 3D (samples, time, ...), got shape ${formatShape(x.shape)}`);
  const states = tensorList('initial_states', initial_states, x);
  const consts = o.constants === undefined || o.constants === null ? [] : tensorList('constants', o.constants, x);
  const back = flag('go_backwards', o.go_backwards);
  const doUnroll = flag('unroll', o.unroll);
  let steps = x.shape[1]!;
  if (o.input_length !== undefined && o.input_length !== null) {
    const n = checkInt(FN, o.input_length, 'input_length', 0);
    if (steps !== null && steps !== n)
      throw new ShapeError(
        `${FN}: input_length ${n} contradicts the ${steps} time steps of inputs of shape ${formatShape(x.shape)}`,
      );
    steps = n;
  }
  const m = o.mask === undefined || o.mask === null ? null : maskOf(o.mask, x);
  // Time-major: the scan (and the unrolled loop) walks axis 0.
  const xs = apply('transpose', [x], { perm: [1, 0, ...range(2, x.ndim)] }, FN);
  const ms = m === null ? null : apply('transpose', [m], { perm: [1, 0] }, FN);
  if (doUnroll) {
    if (steps === null) {
      throw new ValueError(
        `${FN}: unrolling requires a fixed number of time steps: inputs have shape ${formatShape(x.shape)}; give input_length`,
      );
    }
    if (steps === 0) throw new ValueError(`${FN}: cannot unroll over 0 time steps`);
    return unrolled(step_function, xs, ms, states, consts, steps, back);
  }
  // rnn returns the last step's output, which 0 steps do not have (this was
  // "index -1 is out of range" from inside the graph). TensorFlow's K.rnn refuses 0 steps too.
  if (steps === 0)
    throw new ValueError(
      `${FN}: inputs of shape ${formatShape(x.shape)} have 0 time steps; rnn needs at least one (it returns the last step's output). Give inputs with a time axis of length 1 or more`,
    );
  return scanned(step_function, xs, ms, states, consts, back);
}

function flag(what: string, v: unknown): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') throw new TypeError(`${FN}: ${what} must be a boolean, got ${describe(v)}`);
  return v;
}

function tensorList(what: string, v: unknown, like: Node): Node[] {
  if (!Array.isArray(v)) throw new TypeError(`${FN}: ${what} must be an array of tensors, got ${describe(v)}`);
  return v.map((t, i) => toTensor('rnn', t, `${what}[${i}]`, like.dtype));
}

/** The mask as (samples, time): Keras also takes (samples, time, 1). */
function maskOf(mask: TensorLike, x: Node): Node {
  let m = toTensor('rnn', mask, 'mask');
  const bad = () =>
    new ShapeError(
      `${FN}: mask of shape ${formatShape(m.shape)} does not fit inputs of shape ${formatShape(x.shape)}; give (samples, time)`,
    );
  if (m.ndim < 2) throw bad();
  if (m.ndim > 2) {
    if (m.shape.slice(2).some((d) => d !== 1 && d !== null)) throw bad();
    m = apply('any', [m], { axes: range(2, m.ndim), keepdims: false }, FN);
  }
  for (const i of [0, 1]) {
    const a = m.shape[i]!;
    const b = x.shape[i]!;
    if (a !== null && b !== null && a !== b) throw bad();
  }
  return m;
}

function callStep(step: StepFunction, xt: Node, states: Node[], nStates: number): [Node, Node[]] {
  const r: unknown = step(xt, states);
  if (!Array.isArray(r) || r.length !== 2)
    throw new TypeError(`${FN}: the step function must return [output, new_states], got ${describe(r)}`);
  const out = toTensor('rnn', r[0], 'the step output');
  const ns: unknown = r[1];
  if (!Array.isArray(ns))
    throw new TypeError(`${FN}: the step function's new_states must be an array of tensors, got ${describe(ns)}`);
  if (ns.length !== nStates)
    throw new ValueError(`${FN}: the step function returned ${ns.length} new states for ${nStates} initial states`);
  return [out, ns.map((s, j) => toTensor('rnn', s, `new state ${j}`, states[j]?.dtype))];
}

/** m (samples,) as (samples, 1, ...), so that it selects whole rows of a rank-`rank` tensor. */
function rowMask(m: Node, rank: number, what: string): Node {
  if (rank === 0) throw new ShapeError(`${FN}: with a mask, ${what} needs a samples axis, but it is a scalar`);
  let r = m;
  for (let i = 1; i < rank; i++) r = apply('expand_dims', [r], { axis: -1 }, FN);
  return r;
}

function masked(m: Node, now: Node, before: Node, what: string): Node {
  return apply('where', [rowMask(m, now.ndim, what), now, before], {}, FN);
}

function scanned(
  step: StepFunction,
  xs: Node,
  ms: Node | null,
  states: Node[],
  consts: Node[],
  back: boolean,
): [Node, Node, Node[]] {
  const n = states.length;
  const seqArgs = [scanArg(tensorType(xs.dtype, xs.shape.slice(1)), 'seq0')];
  const stateArgs = states.map((s, i) => scanArg(s.type, `state${i}`));
  const constArgs = consts.map((c, k) => scanArg(c.type, `const${k}`));
  let [out, newStates] = callStep(step, seqArgs[0]!, [...stateArgs, ...constArgs], n);
  const sequences = [xs];
  const initial = [...states];
  if (ms !== null) {
    const mArg = scanArg(tensorType(ms.dtype, ms.shape.slice(1)), 'seq1');
    seqArgs.push(mArg);
    sequences.push(ms);
    const zeros = zeroOutput(
      out,
      xs,
      () => callStep(step, apply('index', [xs], { index: 0 }, FN), [...states, ...consts], n)[0],
    );
    const prevArg = scanArg(zeros.type, `state${n}`);
    checkNewStates(
      FN,
      stateArgs.map((s) => s.type),
      newStates,
    );
    out = masked(mArg, out, prevArg, 'the step output');
    newStates = [...newStates.map((s, j) => masked(mArg, s, stateArgs[j]!, `state ${j}`)), out];
    stateArgs.push(prevArg);
    initial.push(zeros);
  }
  const r = buildScan({
    fn: FN,
    outer: { sequences, states: initial, constants: consts },
    args: { sequences: seqArgs, states: stateArgs, constants: constArgs },
    outputs: [out],
    newStates,
    goBackwards: back,
  });
  const outs = r.outputs[0]!;
  const last = apply('index', [outs], { index: -1 }, FN);
  const batchMajor = apply('transpose', [outs], { perm: [1, 0, ...range(2, outs.ndim)] }, FN);
  return [last, batchMajor, r.finalStates.slice(0, n)];
}

/**
 * Zeros shaped like a step output, (samples, ...), for the masked "previous output" before the
 * first step. Built from the inputs' samples axis when the output's other dims are static;
 * otherwise from a call of the step on the first input (what Keras does).
 */
function zeroOutput(out: Node, xs: Node, firstOutput: () => Node): Node {
  if (out.ndim === 0)
    throw new ShapeError(`${FN}: with a mask, the step output needs a samples axis, but it is a scalar`);
  const rest = out.shape.slice(1);
  if (isFullyKnown(out.shape)) return constantNode(NDArray.zeros(out.shape, out.dtype));
  if (!isFullyKnown(rest)) return apply('fill_like', [firstOutput()], { value: 0, dtype: out.dtype }, FN);
  // zeros (samples,) from the first input step, broadcast against zeros (1, ...rest)
  const x0 = apply('fill_like', [apply('index', [xs], { index: 0 }, FN)], { value: 0, dtype: out.dtype }, FN);
  let z = apply('sum', [x0], { axes: range(1, x0.ndim), keepdims: false }, FN);
  if (z.dtype !== out.dtype) z = apply('cast', [z], { dtype: out.dtype }, FN);
  if (rest.length === 0) return z;
  let col = z;
  for (let i = 0; i < rest.length; i++) col = apply('expand_dims', [col], { axis: -1 }, FN);
  return apply('add', [col, constantNode(NDArray.zeros([1, ...rest], out.dtype))], {}, FN);
}

function unrolled(
  step: StepFunction,
  xs: Node,
  ms: Node | null,
  initial: Node[],
  consts: Node[],
  steps: number,
  back: boolean,
): [Node, Node, Node[]] {
  const types = initial.map((s) => s.type);
  let states = initial;
  const outs: Node[] = [];
  for (let k = 0; k < steps; k++) {
    const t = back ? steps - 1 - k : k;
    const xt = apply('index', [xs], { index: t }, FN);
    let [out, ns] = callStep(step, xt, [...states, ...consts], states.length);
    checkNewStates(FN, types, ns);
    if (ms !== null) {
      const mt = apply('index', [ms], { index: t }, FN);
      const prev = outs[outs.length - 1] ?? apply('fill_like', [out], { value: 0, dtype: out.dtype }, FN);
      out = masked(mt, out, prev, 'the step output');
      ns = ns.map((s, j) => masked(mt, s, states[j]!, `state ${j}`));
    }
    outs.push(out);
    states = ns;
  }
  const outputs = stackNodes(outs, 1, FN);
  return [outs[outs.length - 1]!, outputs, states];
}
