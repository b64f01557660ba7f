// checkpoint(fn): fn's graph, marked so that gradients recompute it instead of keeping its nodes.
import { Node } from '../../ir/node.js';
import { describe } from '../../ir/ndarray.js';
import { markRegion } from '../checkpoint.js';
import { listOf } from './args.js';

/**
 * `fn` wrapped so that the graph it builds on its tensor arguments is a checkpointed region (JAX's
 * jax.checkpoint, everything recomputed): the values are fn's; a gradient through the region does
 * not read fn's intermediate nodes but recomputes them from the arguments once the backward pass
 * reaches the region, so they need not stay in memory between the forward and backward passes.
 * Tensors fn reads from outside (weights) are read as they are, not recomputed. The mark is on
 * the graph: the same function applied to the same tensors again builds the same (shared) nodes,
 * which are then the same region.
 */
export function checkpoint<A extends Node[], R extends Node | Node[]>(fn: (...args: A) => R): (...args: A) => R {
  const name = 'autodiff.checkpoint';
  if (typeof fn !== 'function')
    throw new TypeError(`${name}: fn must be a function that builds a graph, got ${describe(fn)}`);
  return (...args: A): R => {
    args.forEach((a, i) => {
      if (!(a instanceof Node))
        throw new TypeError(`${name}: argument ${i} of the checkpointed function must be a tensor, got ${describe(a)}`);
    });
    const out = fn(...args);
    const outs = listOf(name, 'the result of fn', out);
    markRegion(args, outs);
    return out;
  };
}
