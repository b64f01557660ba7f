// Constant folding: a pure op whose inputs are all constants is evaluated once, at compile
// time, with its reference implementation, and replaced by a constant. Impure ops (random
// draws, print_tensor) and leaves are never folded.
import { evalContext } from '../ir/interpret.js';
import { apply } from '../ir/build.js';
import type { NDArray } from '../ir/ndarray.js';
import type { EvalContext } from '../ir/op.js';
import type { Node } from '../ir/node.js';
import { getOp, isOp } from '../ir/registry.js';
import { staticSize } from '../ir/types.js';
import { definePass } from './pass.js';
import { rewriteGraph, type Rewrite } from './rewrite.js';

/** Results larger than this stay computed at run time rather than stored in the graph. */
export const MAX_FOLDED_ELEMENTS = 1 << 20;

const foldCtx: EvalContext = evalContext({
  learningPhase: 0,
  epoch: 0,
  print: () => {
    throw new Error('constant folding evaluated an impure op');
  },
});

/** Constant inputs' values, or undefined when an input is not a constant. */
function constantValues(n: Node): NDArray[] | undefined {
  const vs: NDArray[] = [];
  for (const i of n.inputs) {
    if (!isOp(i, 'constant')) return undefined;
    vs.push(i.attrs.value);
  }
  return vs;
}

export const foldRule: Rewrite = {
  name: 'constant_fold',
  on: '*',
  apply(n) {
    const def = getOp(n.op);
    if (def.kind === 'leaf' || def.impure === true) return undefined;
    const ins = constantValues(n);
    const size = staticSize(n.shape);
    if (ins === undefined || size === null || size > MAX_FOLDED_ELEMENTS) return undefined;
    let value: NDArray;
    try {
      value = def.impl(ins, n.attrs, foldCtx);
    } catch {
      // Values the op refuses (an index out of range...): left to run time, where the error names the call.
      return undefined;
    }
    return apply('constant', [], { value });
  },
};

export const constantFoldPass = definePass('constant_fold', 'evaluate pure ops whose inputs are all constants', (g) =>
  rewriteGraph(g, [foldRule]),
);
