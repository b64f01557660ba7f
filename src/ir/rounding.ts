// How many rounding steps a value goes through: the length of the longest path from a graph's
// leaves to it, where an elementwise op is one step, a reduction of n terms n steps, a contraction
// (matrix product, convolution) its contracted length, a Scan its steps times its body's depth,
// and views and copies none. Checking mode scales its float tolerance by it (compare.ts): by the
// standard forward error bounds of numerical analysis (Higham, "Accuracy and Stability of
// Numerical Algorithms", 2nd ed., 3.1 and 4.2), a value computed in d rounding steps of unit
// roundoff u is within gamma_d = d u / (1 - d u) of the exact one, relative to the magnitudes it
// was computed from; recursive summation of n terms is the worst case, n - 1 steps.
import type { Node } from './node.js';
import { getOp, isOp } from './registry.js';

/** The size of a shape (unknown dims count 1: the fewest steps they could mean). */
const sizeOf = (shape: readonly (number | null)[]): number => shape.reduce<number>((p, d) => p * (d ?? 1), 1);

/** The shape of a node's value: the caller's (a call's value) where known, else its static type. */
export type ShapeOf = (n: Node) => readonly (number | null)[] | undefined;

const staticShape: ShapeOf = (n) => (n.type.items === undefined ? n.shape : undefined);

/** The rounding steps of one node given its inputs exactly (a fused kernel: its body's longest path). */
export function roundingSteps(n: Node, shapeOf: ShapeOf = staticShape): number {
  if (n.inputs.length === 0) return 0;
  if (isOp(n, 'fused')) {
    const body = n.attrs.body;
    const params = new Set(body.params);
    return depthOf([body.root], staticShape, params);
  }
  if (n.op === 'scan') return scanSteps(n, shapeOf);
  const kind = getOp(n.op).kind;
  if (kind === 'leaf' || kind === 'shape' || n.op === 'tuple_get' || n.op === 'cast') return 0;
  if (kind === 'elementwise') return 1;
  const out = shapeOf(n);
  const outSize = out === undefined ? 1 : Math.max(1, sizeOf(out));
  // A reduction (and any op whose output is smaller than an input: pools, losses) folds
  // size(input) / size(output) terms into each result.
  let steps = 1;
  for (const i of n.inputs) {
    const s = shapeOf(i);
    if (s !== undefined) steps = Math.max(steps, Math.ceil(sizeOf(s) / outSize));
  }
  // Contractions: a matrix product sums over the first operand's last dim; a convolution over
  // its kernel's window and input channels (every dim of the kernel but the output channels).
  const a = shapeOf(n.inputs[0]!);
  const b = n.inputs[1] === undefined ? undefined : shapeOf(n.inputs[1]);
  if ((n.op === 'dot' || n.op === 'batch_dot') && a !== undefined && a.length > 0)
    steps = Math.max(steps, a[a.length - 1] ?? 1);
  if (n.op.startsWith('conv') && b !== undefined && b.length > 0)
    steps = Math.max(steps, Math.ceil(sizeOf(b) / (b[b.length - 1] ?? 1)));
  return steps;
}

/** A Scan: its steps (n_steps, else its first sequence's length) times its body's depth. */
function scanSteps(n: Node, shapeOf: ShapeOf): number {
  if (!isOp(n, 'scan')) return 1;
  const a = n.attrs;
  const body = a.body;
  let steps = a.n_steps ?? 0;
  if (a.n_steps === null && n.inputs.length > 0) {
    const s = shapeOf(n.inputs[0]!);
    steps = s?.[0] ?? 1;
  }
  const args = new Set<Node>([...body.sequences, ...body.states, ...body.constants]);
  return Math.max(1, steps) * Math.max(1, depthOf([...body.outputs, ...body.newStates], staticShape, args));
}

/**
 * The longest path of rounding steps from `stop` (or the leaves) to any of `outputs`, each node
 * counted by roundingSteps.
 */
export function depthOf(outputs: readonly Node[], shapeOf: ShapeOf = staticShape, stop?: ReadonlySet<Node>): number {
  const memo = new Map<Node, number>();
  const visit = (root: Node): number => {
    // iterative post-order: graphs are deep (a long Scan unrolled, a deep model's gradient)
    const stack: Node[] = [root];
    while (stack.length > 0) {
      const m = stack[stack.length - 1]!;
      if (memo.has(m)) {
        stack.pop();
        continue;
      }
      if (stop?.has(m) === true || m.inputs.length === 0) {
        memo.set(m, 0);
        stack.pop();
        continue;
      }
      const todo = m.inputs.filter((i) => !memo.has(i));
      if (todo.length > 0) {
        stack.push(...todo);
        continue;
      }
      stack.pop();
      memo.set(m, Math.max(0, ...m.inputs.map((i) => memo.get(i)!)) + roundingSteps(m, shapeOf));
    }
    return memo.get(root)!;
  };
  return Math.max(0, ...outputs.map(visit));
}
