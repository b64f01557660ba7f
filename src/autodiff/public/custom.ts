// custom_gradient(fn, grad): fn's values, with gradients given by `grad` instead of fn's graph
// (JAX's custom_vjp, Theano's OpFromGraph with grad_overrides). The call is a one-step Scan whose
// body is fn's graph on its own args, so it is one node of the graph that the gradient walk meets
// as a whole; its rule (registered for that node) is `grad`. The scan pass inlines it when compiling.
import { apply } from '../../ir/build.js';
import { ValueError } from '../../ir/errors.js';
import { Node } from '../../ir/node.js';
import { describe, formatShape } from '../../ir/ndarray.js';
import { buildScan, scanArg } from '../../ir/scan.js';
import type { OpNode } from '../../ir/registry.js';
import type { KeepMode } from '../../ir/ops/control.js';
import { registerNodeRule } from '../grad.js';
import { zerosOf } from '../forward.js';
import { listOf } from './args.js';

/**
 * The cotangents of a custom_gradient call's arguments: given the arguments, fn's outputs, and
 * one cotangent per output (zeros where the loss does not reach it), one per argument (null: none).
 */
export type CustomGrad = (
  inputs: readonly Node[],
  outputs: readonly Node[],
  cotangents: readonly Node[],
) => readonly (Node | null)[];

/**
 * fn with a user-defined gradient: the values are fn's; reverse mode sends the outputs' cotangents
 * through `grad` to fn's arguments. Tensors fn reads from outside its arguments (weights) get no
 * gradient through the call: pass them as arguments. Forward mode (Rop, jvp) differentiates fn itself.
 */
export function custom_gradient<A extends Node[], R extends Node | Node[]>(
  fn: (...args: A) => R,
  grad: CustomGrad,
): (...args: A) => R {
  const name = 'autodiff.custom_gradient';
  if (typeof fn !== 'function')
    throw new TypeError(`${name}: fn must be a function that builds a graph, got ${describe(fn)}`);
  if (typeof grad !== 'function')
    throw new TypeError(
      `${name}: grad must be a function (inputs, outputs, cotangents) => cotangents, got ${describe(grad)}`,
    );
  return (...args: A): R => {
    args.forEach((a, i) => {
      if (!(a instanceof Node)) throw new TypeError(`${name}: argument ${i} must be a tensor, got ${describe(a)}`);
    });
    const inner = args.map((a, i) => scanArg(a.type, `const${i}`)) as A;
    const result = fn(...inner);
    const outs = listOf(name, 'the result of fn', result);
    const built = buildScan({
      fn: name,
      outer: { sequences: [], states: [], constants: args },
      args: { sequences: [], states: [], constants: inner },
      outputs: outs,
      newStates: [],
      nSteps: 1,
    });
    const attrs = (built.node as OpNode<'scan'>).attrs;
    const call = apply('scan', built.node.inputs, { ...attrs, keep: outs.map((): KeepMode => 'last') }, name);
    const values = outs.map((_, k) => apply('tuple_get', [call], { index: k }, name));
    registerNodeRule(call, {
      tuple: (_n, gs) => {
        const cts = grad(
          args,
          values,
          values.map((v, k) => gs[k] ?? zerosOf(v, name)),
        );
        if (!Array.isArray(cts) || cts.length !== args.length) {
          throw new ValueError(
            `${name}: grad returned ${Array.isArray(cts) ? `${cts.length} cotangents` : describe(cts)} for ${args.length} arguments; it must return one per argument (null for none)`,
          );
        }
        cts.forEach((c, i) => {
          const x = args[i]!;
          if (
            c !== null &&
            (!(c instanceof Node) ||
              c.ndim !== x.ndim ||
              c.shape.some((d, j) => d !== null && x.shape[j] !== null && d !== x.shape[j]))
          ) {
            throw new ValueError(
              `${name}: grad's cotangent ${i} is ${c instanceof Node ? `of shape ${formatShape(c.shape)}` : describe(c)}; argument ${i} has shape ${formatShape(x.shape)}`,
            );
          }
        });
        // The call's inputs: the arguments, then the tensors the body captured (no gradient).
        return call.inputs.map((_, i) => (i < cts.length ? cts[i]! : null));
      },
    });
    return (Array.isArray(result) ? values : values[0]!) as R;
  };
}
