// autodiff.scan_checkpoints: K.rnn whose gradient keeps every N-th state and recomputes the
// states between them (Theano's scan_checkpoints, a Scan policy between "store every state"
// and "recompute everything").
import { ValueError } from '../ir/errors.js';
import { describe, formatShape } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import { toTensor, type TensorLike } from './args.js';
import { rnn, type StepFunction } from './rnn.js';
import { concatenate, slice_along } from './indexing.js';
import { reshape, squeeze } from './shape.js';

const FN = 'autodiff.scan_checkpoints';

export interface ScanCheckpointOptions {
  /**
   * Keep the states of every N-th step for the backward pass (N >= 1, at most the number of time
   * steps); the backward pass recomputes the N - 1 states after each from it. 1 keeps every state
   * (K.rnn's gradient); the number of time steps keeps only the initial state.
   */
  readonly save_every_N: number;
  /** K.rnn's constants: tensors every step reads, passed after the states. */
  readonly constants?: readonly TensorLike[] | null;
}

/**
 * K.rnn's `[last_output, outputs, new_states]` for `step_function` over the time axis (axis 1)
 * of `inputs`, with the same values, and a gradient that stores fewer states: the time axis is
 * cut into segments of `save_every_N` steps (the first T mod N steps run as a plain K.rnn before
 * them); an outer Scan walks the segments and an inner Scan the steps of each. The outer Scan's
 * gradient keeps only the states at segment starts (T / N of them, not T) and, per segment in
 * the backward pass, recomputes the inner states from the segment's start and walks them back
 * (Theano's scan_checkpoints; JAX reaches the same by nesting jax.checkpoint around scan). The
 * memory of the stored states falls from T to about T / N + N states; the forward steps run
 * about twice. The number of time steps must be static; mask and go_backwards are not supported.
 */
export function scan_checkpoints(
  step_function: StepFunction,
  inputs: TensorLike,
  initial_states: readonly TensorLike[],
  options: ScanCheckpointOptions,
): [Node, Node, Node[]] {
  if (typeof step_function !== 'function')
    throw new TypeError(
      `${FN}: step_function must be a function (x_t, states) => [output_t, new_states], got ${describe(step_function)}`,
    );
  if (options === null || typeof options !== 'object')
    throw new TypeError(`${FN}: options must be { save_every_N, constants? }, got ${describe(options)}`);
  for (const k of Object.keys(options)) {
    if (k !== 'save_every_N' && k !== 'constants')
      throw new ValueError(
        `${FN}: unknown option ${JSON.stringify(k)} (allowed: "save_every_N", "constants"; mask and go_backwards are not supported)`,
      );
  }
  const x = toTensor('scan_checkpoints', inputs, 'inputs');
  if (x.ndim < 3)
    throw new ValueError(`${FN}: inputs should be at least 3D (samples, time, ...), got shape ${formatShape(x.shape)}`);
  const T = x.shape[1];
  if (T === null || T === undefined)
    throw new ValueError(`${FN}: the number of time steps must be static, got inputs of shape ${formatShape(x.shape)}`);
  const rest = x.shape.slice(2);
  if (rest.some((d) => d === null))
    throw new ValueError(`${FN}: the feature dims of inputs must be static, got shape ${formatShape(x.shape)}`);
  const N = options.save_every_N;
  if (!Number.isInteger(N) || N < 1 || N > T)
    throw new ValueError(
      `${FN}: save_every_N must be an integer from 1 to the ${T} time steps of inputs, got ${describe(N)}`,
    );
  const consts = options.constants ?? [];
  const nState = initial_states.length;
  const segments = Math.floor(T / N);
  const head = T - segments * N;
  let states = [...initial_states].map((s, i) => toTensor('scan_checkpoints', s, `initial_states[${i}]`, x.dtype));
  const outputs: Node[] = [];
  if (head > 0) {
    const [, outs, after] = rnn(step_function, slice_along(x, 1, 0, head), states, { constants: consts });
    outputs.push(outs);
    states = after;
  }
  const body = head > 0 ? slice_along(x, 1, head, T) : x;
  const segs = reshape(body, [-1, segments, N, ...(rest as number[])]);
  // One outer step: a segment of N steps from the state at its start (a Scan inside the step).
  const segment: StepFunction = (xs, all) => {
    const [, outs, after] = rnn(step_function, xs, all.slice(0, nState), { constants: all.slice(nState) });
    return [outs, after];
  };
  const [, outer, finals] = rnn(segment, segs, states, { constants: consts });
  const stepShape = outer.shape.slice(3);
  if (stepShape.some((d) => d === null))
    throw new ValueError(
      `${FN}: the step output must have static dims after the samples axis, got ${formatShape(outer.shape.slice(2))}`,
    );
  outputs.push(reshape(outer, [-1, segments * N, ...(stepShape as number[])]));
  const all = outputs.length === 1 ? outputs[0]! : concatenate(outputs, 1);
  const last = squeeze(slice_along(all, 1, T - 1, T), 1);
  return [last, all, finals];
}
