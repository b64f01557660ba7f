// Gradient rules of the control-flow and CTC ops. A Scan's gradient is another Scan that walks
// the steps in reverse (backprop through time): per step it recomputes the body on that step's
// inputs and the state before it (read from the forward scan's state sequences), and pulls the
// cotangents of the step's outputs and new state back through the body's own gradient graph.
import { apply } from '../../ir/build.js';
import { topoSort } from '../../ir/graph.js';
import type { Node } from '../../ir/node.js';
import { buildScan, scanArg } from '../../ir/scan.js';
import { ScanBody } from '../../ir/scanbody.js';
import { scanItems, type KeepMode } from '../../ir/ops/control.js';
import type { SliceAxis } from '../../ir/ops/shape.js';
import { add, differentiable, mul, reduce } from '../ops.js';
import type { OpNode } from '../../ir/registry.js';
import type { GradContext, GradTableFor, TupleGradRule } from './types.js';

const FN = 'K.gradients';
const FULL: SliceAxis = { start: null, stop: null, step: 1 };

function axis0(x: Node, s: SliceAxis): Node {
  return apply('slice', [x], { axes: [{ ...s }, ...x.shape.slice(1).map(() => ({ ...FULL }))] }, FN);
}
const reverse0 = (x: Node) => axis0(x, { start: null, stop: null, step: -1 });
const zerosLike = (x: Node) => apply('fill_like', [x], { value: 0, dtype: x.dtype }, FN);

/** [s0, s1, ..., s_{T-1}]: the state before each step, from s0 and the states after each step. */
function statesBefore(s0: Node, after: Node): Node {
  const joined = apply('concat', [apply('expand_dims', [s0], { axis: 0 }, FN), after], { axis: 0 }, FN);
  return axis0(joined, { start: null, stop: -1, step: 1 });
}

/** The body's results recomputed on other args (same types), node by node; and each node's twin. */
function recompute(results: readonly Node[], subst: Map<Node, Node>): { results: Node[]; twin: Map<Node, Node> } {
  const value = new Map(subst);
  for (const n of topoSort(results)) {
    if (value.has(n) || n.inputs.length === 0) continue;
    value.set(
      n,
      apply(
        n.op,
        n.inputs.map((i) => value.get(i) ?? i),
        n.attrs,
        FN,
      ),
    );
  }
  return { results: results.map((r) => value.get(r) ?? r), twin: value };
}

/** `nodes` with every node of `subst` replaced by its value, their graph rebuilt where it changed. */
function substitute(nodes: readonly Node[], subst: ReadonlyMap<Node, Node>): Node[] {
  const value = new Map(subst);
  for (const n of topoSort(nodes)) {
    if (value.has(n) || n.inputs.length === 0) continue;
    const ins = n.inputs.map((i) => value.get(i) ?? i);
    if (ins.some((x, i) => x !== n.inputs[i])) value.set(n, apply(n.op, ins, n.attrs, FN));
  }
  return nodes.map((r) => value.get(r) ?? r);
}

/**
 * Ops whose per-step values the forward Scan stacks for its reverse Scan instead of the reverse
 * Scan computing them again (JAX's scan keeps its residuals; Theano's scan gradient recomputes):
 * matrix products, the work that dominates a recurrent step. Elementwise work is recomputed.
 */
const SAVED_OPS = new Set(['dot', 'batch_dot', 'conv', 'conv_transpose']);

/** Elementwise ops whose result is stacked in place of saved operands that only it reads (see promoteResiduals). */
const PROMOTED_OPS = new Set(['add', 'sub']);

/** Whether `r` reads its input `k` for its shape only (the adjoints' `_like` ops, fill_like, shape_of). */
function readsShapeOnly(r: Node, k: number): boolean {
  return (
    ((r.op === 'sum_to_like' || r.op === 'broadcast_like' || r.op === 'reshape_like') && k >= 1) ||
    r.op === 'fill_like' ||
    r.op === 'shape_of'
  );
}

/**
 * The residuals, moved forward past sums: where the pullback reads saved products only through one
 * sum of them (an LSTM's pre-activations, x Wx + h Wh + b), the sum is stacked instead. That stacks
 * one value where it stacked two and leaves the reverse step nothing to add; the forward step's
 * products are then read only by the sum, which becomes the epilogue of the second product. The
 * values are the same: the pullback would have computed the sum from the same saved products.
 * Reads of a product for its shape only (the adjoint of the sum: sum_to_like(g, product)) read the
 * sum instead, which has the product's static shape (required; a dim unknown in both is the batch
 * of the step, which a Scan's states and sequences share).
 * `body` in topological order; `saved` the products; `readOrder` the pullback's nodes, which read
 * the body's nodes through their twins. Returns the stacked nodes and, for each product no longer
 * stacked, the stacked sum that stands for it.
 */
function promoteResiduals(
  body: readonly Node[],
  saved: Set<Node>,
  variant: ReadonlySet<Node>,
  twin: ReadonlyMap<Node, Node>,
  readOrder: readonly Node[],
): { saved: Node[]; standsFor: Map<Node, Node> } {
  const readers = new Map<Node, Set<Node>>();
  for (const r of readOrder) {
    r.inputs.forEach((i, k) => {
      if (readsShapeOnly(r, k)) return;
      let s = readers.get(i);
      if (s === undefined) readers.set(i, (s = new Set()));
      s.add(r);
    });
  }
  const same = (x: Node, y: Node) => x.ndim === y.ndim && x.shape.every((d, k) => d === y.shape[k]);
  const standsFor = new Map<Node, Node>();
  for (const x of body) {
    if (saved.has(x) || !PROMOTED_OPS.has(x.op) || !variant.has(x) || !readers.has(twin.get(x)!)) continue;
    const vin = x.inputs.filter((i) => variant.has(i));
    // every variant operand saved, of the sum's own shape, and read (for its value) by the pullback only through this sum
    if (
      vin.length === 0 ||
      !vin.every(
        (i) => saved.has(i) && same(i, x) && [...(readers.get(twin.get(i)!) ?? [])].every((r) => r === twin.get(x)),
      )
    )
      continue;
    for (const i of vin) {
      saved.delete(i);
      standsFor.set(i, x);
      for (const [d, y] of standsFor) if (y === i) standsFor.set(d, x);
    }
    saved.add(x);
  }
  return { saved: body.filter((x) => saved.has(x)), standsFor };
}

/**
 * Cotangents of the scan's inputs from those of its items. Outputs and state sequences kept
 * 'all' give per-step cotangents (walked in reverse as sequences); an output kept 'last' gives
 * one cotangent for the last step (carried as a state that is spent at the first reverse step);
 * final states and state sequences kept 'last' seed the state cotangent.
 */
function scanVjp(n: OpNode<'scan'>, gs: readonly (Node | null)[], { gradients }: GradContext): (Node | null)[] {
  const a = n.attrs;
  const b = a.body;
  const [nSeq, nState, nOut] = [b.sequences.length, b.states.length, b.outputs.length];
  const layout = scanItems(b);
  const seqs = n.inputs.slice(0, nSeq);
  const inits = n.inputs.slice(nSeq, nSeq + nState);
  const consts = n.inputs.slice(nSeq + nState);
  const keepOut = (k: number): KeepMode => a.keep[k]!;
  const keepSeq = (j: number): KeepMode => a.keep[nOut + j]!;

  // Walk order: the reverse scan reads every sequence in the forward walking order, backwards.
  const walk = (x: Node) => (a.go_backwards ? reverse0(x) : x);

  const bx = b.sequences.map((s, i) => scanArg(s.type, `seq${i}`));
  const bs = b.states.map((s, j) => scanArg(s.type, `seq${nSeq + j}`));
  const bc = b.constants.map((c, k) => scanArg(c.type, `const${k}`));
  const { results: fwd, twin } = recompute(
    b.results,
    new Map<Node, Node>([...b.args].map((arg, i) => [arg, [...bx, ...bs, ...bc][i]!])),
  );

  const seqIn: Node[] = [];
  const seqArgs: Node[] = [...bx, ...bs];
  const stateIn: Node[] = [];
  const stateArgs: Node[] = [];
  const newStates: (() => Node)[] = [];
  const addState = (init: Node, arg: Node, next: () => Node) => {
    stateIn.push(init);
    stateArgs.push(arg);
    newStates.push(next);
  };

  // Cotangent of each output at this step: its per-step sequence and/or the pending last-step one.
  const gy: (Node | null)[] = b.outputs.map((o, k) => {
    const g = gs[layout.outputs[k]!] ?? null;
    if (g === null || !differentiable(o)) return null;
    if (keepOut(k) === 'all') {
      const arg = scanArg(o.type, `seq${seqArgs.length}`);
      seqIn.push(g);
      seqArgs.push(arg);
      return arg;
    }
    if (keepOut(k) === 'none') return null;
    const arg = scanArg(o.type, `state${stateArgs.length}`);
    addState(g, arg, () => zerosLike(arg));
    return arg;
  });
  // Cotangent of each new state: the carried one plus this step's from a state sequence kept 'all'.
  const carried: (Node | null)[] = [];
  const ds: (Node | null)[] = b.states.map((s, j) => {
    carried.push(null);
    if (!differentiable(s)) return null;
    const seed = [
      gs[layout.finalStates[j]!] ?? null,
      keepSeq(j) === 'last' ? (gs[layout.stateSequences[j]!] ?? null) : null,
    ]
      .filter((g): g is Node => g !== null)
      .reduce<Node | null>((p, g) => (p === null ? g : add(p, g)), null);
    const arg = scanArg(s.type, `state${stateArgs.length}`);
    addState(seed ?? zerosLike(inits[j]!), arg, () => gradOf(bs[j]!));
    carried[j] = arg;
    const gseq = keepSeq(j) === 'all' ? (gs[layout.stateSequences[j]!] ?? null) : null;
    if (gseq === null) return arg;
    const sarg = scanArg(s.type, `seq${seqArgs.length}`);
    seqIn.push(gseq);
    seqArgs.push(sarg);
    return add(arg, sarg);
  });
  const dc = b.constants.map((c, k) => {
    if (!differentiable(c)) return null;
    const arg = scanArg(c.type, `state${stateArgs.length}`);
    addState(zerosLike(consts[k]!), arg, () => add(arg, gradOf(bc[k]!)));
    return arg;
  });

  // One step's pullback: the gradient of sum(y * gy) + sum(s' * ds) with respect to the args.
  const terms = [...gy.map((g, k) => [fwd[k]!, g] as const), ...ds.map((g, j) => [fwd[nOut + j]!, g] as const)]
    .filter((p): p is readonly [Node, Node] => p[1] !== null)
    .map(([v, g]) =>
      reduce(
        'sum',
        mul(v, g),
        v.shape.map((_, i) => i),
        false,
      ),
    );
  if (terms.length === 0) return n.inputs.map(() => null);
  const loss = terms.reduce((p, t) => add(p, t));
  const wrt = [...bx, ...bs, ...bc].filter(differentiable);
  const grads = new Map(gradients(loss, wrt, FN).map((g, i) => [wrt[i]!, g]));
  const gradOf = (arg: Node) => grads.get(arg)!;

  const dxs = bx.filter(differentiable);
  let results = [...dxs.map(gradOf), ...newStates.map((f) => f())];
  // Residuals: matrix products of the step that depend on the step's args and that the pullback
  // reads are stacked by the forward scan (as extra outputs) and read back here, not recomputed.
  const variant = new Set<Node>([...b.sequences, ...b.states]);
  for (const x of topoSort(b.results)) if (x.inputs.some((i) => variant.has(i))) variant.add(x);
  const readOrder = topoSort(results);
  const read = new Set(readOrder);
  const bodyOrder = topoSort(b.results);
  const { saved, standsFor } = promoteResiduals(
    bodyOrder,
    new Set(bodyOrder.filter((x) => SAVED_OPS.has(x.op) && variant.has(x) && read.has(twin.get(x)!))),
    variant,
    twin,
    readOrder,
  );
  const savedArgs = saved.map((x, i) => scanArg(x.type, `saved${i}`));
  if (saved.length > 0) {
    const argOf = new Map(saved.map((x, i) => [x, savedArgs[i]!]));
    results = substitute(
      results,
      new Map([
        ...saved.map((x) => [twin.get(x)!, argOf.get(x)!] as const),
        ...[...standsFor].map(([d, x]) => [twin.get(d)!, argOf.get(x)!] as const),
      ]),
    );
  }
  // The forward scan with every item kept whole (the states before each step are read from its
  // state sequences) and the residuals as extra outputs; the scan pass merges it with the scan
  // the loss reads, as both have the same inputs and body.
  const fullBody =
    saved.length === 0 ? b : new ScanBody(b.sequences, b.states, b.constants, [...b.outputs, ...saved], b.newStates);
  const full =
    fullBody === b && a.keep.every((k) => k === 'all')
      ? n
      : apply(
          'scan',
          n.inputs,
          { ...a, body: fullBody, keep: new Array<KeepMode>(nOut + saved.length + nState).fill('all') },
          FN,
        );
  const fullItems = scanItems(fullBody);
  const before = b.states.map((_, j) =>
    statesBefore(inits[j]!, apply('tuple_get', [full], { index: fullItems.stateSequences[j]! }, FN)),
  );
  seqIn.unshift(...seqs.map(walk), ...before);
  for (let i = 0; i < saved.length; i++) {
    seqIn.push(apply('tuple_get', [full], { index: nOut + i }, FN)); // stacked in walking order, as the state sequences
    seqArgs.push(savedArgs[i]!);
  }
  const r = buildScan({
    fn: FN,
    outer: { sequences: seqIn, states: stateIn, constants: consts },
    args: { sequences: seqArgs, states: stateArgs, constants: bc },
    outputs: results.slice(0, dxs.length),
    newStates: results.slice(dxs.length),
    goBackwards: true,
    nSteps: a.n_steps,
  });
  // The reverse scan stacks in its own walking order (last forward step first).
  const dx = new Map(dxs.map((x, i) => [x, a.go_backwards ? r.outputs[i]! : reverse0(r.outputs[i]!)]));
  const finals = new Map(stateArgs.map((s, i) => [s, r.finalStates[i]!]));
  return [
    ...bx.map((x) => dx.get(x) ?? null),
    ...carried.map((c) => (c === null ? null : finals.get(c)!)),
    ...dc.map((d) => (d === null ? null : finals.get(d)!)),
  ];
}

const scanGrad: TupleGradRule<OpNode<'scan'>> = { tuple: scanVjp };

export const controlGrads: GradTableFor<'scan_arg' | 'scan' | 'tuple_get'> = {
  scan_arg: 'leaf',
  scan: scanGrad,
  // The walker itself routes a tuple_get's cotangent to its tuple's item.
  tuple_get: 'none',
};
