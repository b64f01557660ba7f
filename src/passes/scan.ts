// Scan lowering: prepares every Scan for codegen's loop, or removes it.
// - A scan of known, small length whose unrolled body stays small becomes that many copies of
//   the body (no loop, no per-step slicing or stacking, and fusion can cross steps).
// - Otherwise each stacked item keeps only what its readers need: 'last' when every reader takes
//   the last step (`index{-1}`, e.g. K.rnn's last_output), 'none' when nothing reads it, so the
//   loop writes one step's buffer instead of T (the state buffers are reused across steps).
// - Work in the body that depends only on constants is hoisted out of the loop, and constants
//   the body no longer reads are dropped.
// Bodies are lowered first, recursively. The pass is a pure function of the graph.
import { apply } from '../ir/build.js';
import { getOp, isOp, type OpNode } from '../ir/registry.js';
import { topoSort } from '../ir/graph.js';
import { nodeIdMark, type Node } from '../ir/node.js';
import { addProvenance, inherit } from '../ir/provenance.js';
import { ScanBody } from '../ir/scanbody.js';
import { scanArg, stackNodes } from '../ir/scan.js';
import type { KeepMode } from '../ir/ops/control.js';

export interface OptimizeScansOptions {
  /** Unroll scans of at most this many steps... */
  readonly maxUnrollSteps?: number;
  /** ...when steps x body nodes stays within this. */
  readonly maxUnrolledNodes?: number;
}

const FN = 'optimizeScans';

export function optimizeScans(given: readonly Node[], opts: OptimizeScansOptions = {}): Node[] {
  const maxSteps = opts.maxUnrollSteps ?? 8;
  const maxNodes = opts.maxUnrolledNodes ?? 256;
  const outputs = mergeScans(given);
  const order = topoSort(outputs);
  const readers = new Map<Node, Node[]>();
  for (const n of order) for (const i of n.inputs) readers.set(i, [...(readers.get(i) ?? []), n]);
  const isOutput = new Set(outputs);
  const done = new Map<Node, Node>();
  const get = (n: Node) => done.get(n) ?? n;
  // Per rewritten scan: its new node, or its unrolled items; and the tuple_gets now holding a last step.
  const unrolledItems = new Map<Node, (Node | undefined)[]>();
  const lastened = new Set<Node>();
  // Per scan that lost outputs: each old item's new index (-1: dropped).
  const itemIndex = new Map<Node, number[]>();

  for (const n of order) {
    if (isOp(n, 'scan')) {
      const a = n.attrs;
      const seqLengths = n.inputs.slice(0, a.body.sequences.length).map((x) => x.shape[0]!);
      const steps = a.n_steps ?? seqLengths.find((d) => d !== null) ?? null;
      let keep = a.keep.map((k, i) => narrowKeep(n, i, k, steps, readers, isOutput, lastened));
      let lowered = lowerBody(a.body, opts);
      // Outputs nobody reads leave the body (a reverse Scan's cotangents of inputs that are not
      // differentiated, for one): their work is no longer done at every step.
      const nOut = lowered.outputs.length;
      const live = lowered.outputs.map((_, k) => keep[k] !== 'none');
      if (live.some((l) => !l)) {
        // items: outputs, final states, state sequences
        const pos: number[] = [];
        let next = 0;
        for (let i = 0; i < nOut + 2 * lowered.states.length; i++) pos.push(i < nOut && !live[i]! ? -1 : next++);
        itemIndex.set(n, pos);
        keep = keep.filter((_, i) => i >= nOut || live[i]!);
        lowered = new ScanBody(
          lowered.sequences,
          lowered.states,
          lowered.constants,
          lowered.outputs.filter((_, k) => live[k]!),
          lowered.newStates,
        );
      }
      const body = hoistInvariants(lowered, n.inputs.map(get));
      const bodySize = topoSort(body.body.results).length;
      if (steps !== null && steps >= 1 && steps <= maxSteps && steps * bodySize <= maxNodes) {
        const mark = nodeIdMark();
        const items = unroll(body.body, body.inputs, a.go_backwards, steps, keep);
        // The step's slices and the stacks that replace the Scan node stand for it.
        for (const m of topoSort(items.filter((x): x is Node => x !== undefined)))
          if (m.id >= mark) addProvenance(m, n.provenance);
        const pos = itemIndex.get(n);
        unrolledItems.set(n, pos === undefined ? items : pos.map((p) => (p < 0 ? undefined : items[p])));
      } else {
        done.set(n, withRecordsOf(apply('scan', body.inputs, { ...a, body: body.body, keep }, FN), [n]));
      }
      continue;
    }
    if (isOp(n, 'tuple_get') && itemIndex.has(n.inputs[0]!) && !unrolledItems.has(n.inputs[0]!)) {
      const index = itemIndex.get(n.inputs[0]!)![n.attrs.index]!;
      if (index < 0) throw new Error(`internal: ${FN} dropped an item that ${n.name} reads`);
      done.set(n, withRecordsOf(apply('tuple_get', [get(n.inputs[0]!)], { ...n.attrs, index }, FN), [n]));
      continue;
    }
    if (isOp(n, 'tuple_get') && unrolledItems.has(n.inputs[0]!)) {
      const item = unrolledItems.get(n.inputs[0]!)![n.attrs.index];
      if (item === undefined) throw new Error(`internal: ${FN} dropped an item that ${n.name} reads`);
      done.set(n, item);
      continue;
    }
    if (n.op === 'index' && lastened.has(n.inputs[0]!)) {
      done.set(n, get(n.inputs[0]!)); // the item now is the last step
      continue;
    }
    if (n.inputs.length === 0) continue;
    const ins = n.inputs.map(get);
    if (ins.some((x, i) => x !== n.inputs[i])) done.set(n, again(n, ins));
  }
  return outputs.map(get);
}

/** `n`'s op on new inputs; the new node inherits `n`'s provenance (src/ir/provenance.ts). */
function again(n: Node, inputs: readonly Node[]): Node {
  return withRecordsOf(apply(n.op, inputs, n.attrs, FN), [n]);
}

function withRecordsOf(m: Node, sources: readonly Node[]): Node {
  inherit(m, sources);
  return m;
}

/**
 * One loop where two scans walk the same inputs with the same body and one body's outputs
 * start with the other's (a gradient's forward scan, which also stacks the residuals its reverse
 * scan reads, and the scan the loss reads): the shorter one's items are read from the longer one.
 */
function mergeScans(outputs: readonly Node[]): readonly Node[] {
  const order = topoSort(outputs);
  const scans = order.filter((n): n is OpNode<'scan'> => isOp(n, 'scan'));
  if (scans.length < 2) return outputs;
  const into = new Map<Node, { to: Node; index: (i: number) => number }>();
  const same = (x: readonly Node[], y: readonly Node[]) => x.length === y.length && x.every((v, i) => v === y[i]);
  for (const s of scans) {
    const a = s.attrs;
    let best: OpNode<'scan'> | undefined;
    for (const t of scans) {
      const b = t.attrs;
      if (
        t === s ||
        into.has(t) ||
        b.go_backwards !== a.go_backwards ||
        b.n_steps !== a.n_steps ||
        !same(t.inputs, s.inputs)
      )
        continue;
      const [p, q] = [a.body, b.body];
      if (
        !same(p.sequences, q.sequences) ||
        !same(p.states, q.states) ||
        !same(p.constants, q.constants) ||
        !same(p.newStates, q.newStates)
      )
        continue;
      if (q.outputs.length < p.outputs.length || !p.outputs.every((o, i) => o === q.outputs[i])) continue;
      if (q.outputs.length === p.outputs.length && scans.indexOf(t) > scans.indexOf(s)) continue; // equal bodies: the first one stays
      if (best === undefined || best.attrs.body.outputs.length < q.outputs.length) best = t;
    }
    if (best === undefined) continue;
    const nOut = a.body.outputs.length;
    const extra = best.attrs.body.outputs.length - nOut;
    into.set(s, { to: best, index: (i) => (i < nOut ? i : i + extra) });
  }
  if (into.size === 0) return outputs;
  // Chains (s into t into u) end at a scan that stays.
  const target = (s: Node): { to: Node; index: (i: number) => number } => {
    const m = into.get(s)!;
    if (!into.has(m.to)) return m;
    const next = target(m.to);
    return { to: next.to, index: (i) => next.index(m.index(i)) };
  };
  const done = new Map<Node, Node>();
  const get = (n: Node) => done.get(n) ?? n;
  // A merged scan's inputs are those of the scan it joins, all before either in topological order.
  const rebuilt = (n: Node): Node => {
    let r = done.get(n);
    if (r === undefined) {
      const ins = n.inputs.map(get);
      r = ins.some((x, i) => x !== n.inputs[i]) ? again(n, ins) : n;
      done.set(n, r);
    }
    return r;
  };
  for (const n of order) {
    if (n.inputs.length === 0 || into.has(n) || done.has(n)) continue;
    if (isOp(n, 'tuple_get') && into.has(n.inputs[0]!)) {
      const m = target(n.inputs[0]!);
      done.set(
        n,
        withRecordsOf(apply('tuple_get', [rebuilt(m.to)], { ...n.attrs, index: m.index(n.attrs.index) }, FN), [
          n,
          n.inputs[0]!,
        ]),
      );
      continue;
    }
    rebuilt(n);
  }
  return outputs.map(get);
}

/** What item `i` of scan `s` must keep, given who reads it. Records tuple_gets narrowed to 'last'. */
function narrowKeep(
  s: OpNode<'scan'>,
  i: number,
  keep: KeepMode,
  steps: number | null,
  readers: Map<Node, Node[]>,
  isOutput: Set<Node>,
  lastened: Set<Node>,
): KeepMode {
  if (keep !== 'all') return keep;
  const nOut = s.attrs.body.outputs.length;
  const nState = s.attrs.body.states.length;
  const index = i < nOut ? i : i + nState; // stacked items: outputs, then state sequences
  const gets = (readers.get(s) ?? []).filter((r) => isOp(r, 'tuple_get') && r.attrs.index === index);
  if (gets.length === 0) return 'none';
  const isLast = (r: Node) =>
    isOp(r, 'index') && (r.attrs.index === -1 || (steps !== null && r.attrs.index === steps - 1));
  if (gets.some((g) => isOutput.has(g) || !(readers.get(g) ?? []).every(isLast))) return 'all';
  gets.forEach((g) => lastened.add(g));
  return 'last';
}

function lowerBody(b: ScanBody, opts: OptimizeScansOptions): ScanBody {
  const results = optimizeScans(b.results, opts);
  if (results.every((r, i) => r === b.results[i])) return b;
  const nOut = b.outputs.length;
  return new ScanBody(b.sequences, b.states, b.constants, results.slice(0, nOut), results.slice(nOut));
}

/**
 * Moves the maximal body subexpressions that read only constant args (and constant leaves)
 * out of the loop: each is rebuilt outside over the scan's constant inputs and fed in as a new
 * constant arg. Constant args no result reads any more are dropped with their inputs.
 */
function hoistInvariants(b: ScanBody, inputs: readonly Node[]): { body: ScanBody; inputs: Node[] } {
  const nLoop = b.sequences.length + b.states.length;
  const order = topoSort(b.results);
  // Impure nodes (random draws, printing) stay in the loop: they act once per step.
  const variant = new Set<Node>([...b.sequences, ...b.states]);
  for (const n of order) if (n.inputs.some((i) => variant.has(i)) || getOp(n.op).impure === true) variant.add(n);
  const outside = new Map<Node, Node>(b.constants.map((c, k) => [c, inputs[nLoop + k]!]));
  const outer = (n: Node): Node => {
    let o = outside.get(n);
    if (o === undefined) {
      o = n.inputs.length === 0 ? n : again(n, n.inputs.map(outer));
      outside.set(n, o);
    }
    return o;
  };
  const subst = new Map<Node, Node>();
  const hoisted: Node[] = [];
  const newArgs: Node[] = [];
  const hoist = (n: Node) => {
    if (variant.has(n) || n.inputs.length === 0 || n.type.items !== undefined || subst.has(n)) return;
    const arg = scanArg(n.type, `const${b.constants.length + newArgs.length}`);
    subst.set(n, arg);
    hoisted.push(outer(n));
    newArgs.push(arg);
  };
  for (const n of order) if (variant.has(n)) n.inputs.forEach(hoist);
  b.results.forEach(hoist);
  const rebuilt = new Map<Node, Node>();
  const get = (n: Node): Node => subst.get(n) ?? rebuilt.get(n) ?? n;
  for (const n of order) {
    if (!variant.has(n) || n.inputs.length === 0) continue;
    const ins = n.inputs.map(get);
    if (ins.some((x, i) => x !== n.inputs[i])) rebuilt.set(n, again(n, ins));
  }
  const results = b.results.map(get);
  const read = new Set(topoSort(results));
  const consts = [...b.constants, ...newArgs];
  const constInputs = [...inputs.slice(nLoop), ...hoisted];
  const keepK = consts.map((c) => read.has(c));
  // Sequences the step no longer reads go too (one stays: it gives the number of steps).
  const nSeq = b.sequences.length;
  const keepS = b.sequences.map((x) => read.has(x));
  if (!keepS.some((k) => k) && nSeq > 0) keepS[0] = true;
  if (hoisted.length === 0 && keepK.every((k) => k) && keepS.every((k) => k)) return { body: b, inputs: [...inputs] };
  const nOut = b.outputs.length;
  const body = new ScanBody(
    b.sequences.filter((_, i) => keepS[i]),
    b.states,
    consts.filter((_, k) => keepK[k]),
    results.slice(0, nOut),
    results.slice(nOut),
  );
  return {
    body,
    inputs: [
      ...inputs.slice(0, nSeq).filter((_, i) => keepS[i]),
      ...inputs.slice(nSeq, nLoop),
      ...constInputs.filter((_, k) => keepK[k]),
    ],
  };
}

/** The scan's items computed by `steps` copies of the body; undefined for items kept 'none'. */
function unroll(
  b: ScanBody,
  inputs: readonly Node[],
  back: boolean,
  steps: number,
  keep: readonly KeepMode[],
): (Node | undefined)[] {
  const nSeq = b.sequences.length;
  const nState = b.states.length;
  const order = topoSort(b.results);
  let states = inputs.slice(nSeq, nSeq + nState);
  const outs: Node[][] = b.outputs.map(() => []);
  const seqs: Node[][] = b.states.map(() => []);
  for (let k = 0; k < steps; k++) {
    const t = back ? steps - 1 - k : k;
    const value = new Map<Node, Node>();
    b.sequences.forEach((arg, i) => value.set(arg, apply('index', [inputs[i]!], { index: t }, FN)));
    b.states.forEach((arg, j) => value.set(arg, states[j]!));
    b.constants.forEach((arg, c) => value.set(arg, inputs[nSeq + nState + c]!));
    for (const n of order) {
      if (value.has(n) || n.inputs.length === 0) continue;
      value.set(
        n,
        again(
          n,
          n.inputs.map((i) => value.get(i) ?? i),
        ),
      );
    }
    const at = (n: Node) => value.get(n) ?? n;
    b.outputs.forEach((o, i) => outs[i]!.push(at(o)));
    states = b.newStates.map(at);
    states.forEach((s, j) => seqs[j]!.push(s));
  }
  const item = (list: Node[], mode: KeepMode): Node | undefined =>
    mode === 'none' ? undefined : mode === 'last' ? list[list.length - 1] : stackNodes(list, 0, FN);
  return [
    ...outs.map((l, i) => item(l, keep[i]!)),
    ...states,
    ...seqs.map((l, j) => item(l, keep[b.outputs.length + j]!)),
  ];
}
