// Forward mode through a Scan: the tangents ride along as extra sequences, states and constants of
// a second Scan whose body is the original body beside its own tangent graph (JAX's scan jvp: the
// primal and tangent carries advance together). The tangent of each item is read from it.
import { apply } from '../../ir/build.js';
import type { Node } from '../../ir/node.js';
import { buildScan, scanArg } from '../../ir/scan.js';
import { scanItems, type KeepMode } from '../../ir/ops/control.js';
import type { OpNode } from '../../ir/registry.js';
import { differentiable } from '../ops.js';
import { zerosLike } from './linear.js';
import type { TangentContext, TupleTangentRule } from './types.js';

const FN = 'autodiff.Rop';

function scanJvp(n: OpNode<'scan'>, ts: readonly (Node | null)[], { tangents }: TangentContext): (Node | null)[] {
  const a = n.attrs;
  const b = a.body;
  const [nSeq, nState] = [b.sequences.length, b.states.length];
  const outer = (from: number, k: number) => n.inputs.slice(from, from + k);
  const [seqs, inits, consts] = [outer(0, nSeq), outer(nSeq, nState), n.inputs.slice(nSeq + nState)];
  const tsOf = (from: number, k: number) => ts.slice(from, from + k);
  // Sequences and constants with a tangent get a tangent arg; every float state carries one.
  const seqT = pick(b.sequences, tsOf(0, nSeq), 'tseq');
  const constT = pick(b.constants, ts.slice(nSeq + nState), 'tconst');
  const stateIdx = b.states.map((_, j) => j).filter((j) => differentiable(b.states[j]!));
  const stateArgs = stateIdx.map((j) => scanArg(b.states[j]!.type, `tstate${j}`));
  const stateInit = stateIdx.map((j) => tsOf(nSeq, nState)[j] ?? zerosLike(inits[j]!));

  const wrt = [...seqT.args, ...stateIdx.map((j) => b.states[j]!), ...constT.args];
  const points = [...seqT.targs, ...stateArgs, ...constT.targs];
  const outIdx = b.outputs.map((_, k) => k).filter((k) => differentiable(b.outputs[k]!));
  const bodyT = tangents(
    [...outIdx.map((k) => b.outputs[k]!), ...stateIdx.map((j) => b.newStates[j]!)],
    wrt,
    points,
    FN,
  );
  const tOut = outIdx.map((k, i) => bodyT[i] ?? zerosLike(b.outputs[k]!));
  const tNew = stateIdx.map((_, i) => bodyT[outIdx.length + i] ?? zerosLike(stateArgs[i]!));

  const built = buildScan({
    fn: FN,
    outer: {
      sequences: [...seqs, ...seqT.outer],
      states: [...inits, ...stateInit],
      constants: [...consts, ...constT.outer],
    },
    args: {
      sequences: [...b.sequences, ...seqT.targs],
      states: [...b.states, ...stateArgs],
      constants: [...b.constants, ...constT.targs],
    },
    outputs: [...b.outputs, ...tOut],
    newStates: [...b.newStates, ...tNew],
    goBackwards: a.go_backwards,
    nSteps: a.n_steps,
  });
  // Each tangent item is kept as its primal item is.
  const nOut = b.outputs.length;
  const keep: KeepMode[] = [
    ...a.keep.slice(0, nOut),
    ...outIdx.map((k) => a.keep[k]!),
    ...a.keep.slice(nOut),
    ...stateIdx.map((j) => a.keep[nOut + j]!),
  ];
  const scan = keep.every((k) => k === 'all')
    ? built.node
    : apply('scan', built.node.inputs, { ...(built.node as OpNode<'scan'>).attrs, keep }, FN);
  const newBody = (scan as OpNode<'scan'>).attrs.body;
  const layout = scanItems(newBody);
  const get = (i: number) => apply('tuple_get', [scan], { index: i }, FN);
  const old = scanItems(b);
  const result: (Node | null)[] = new Array(old.outputs.length + 2 * nState).fill(null);
  outIdx.forEach((k, i) => {
    result[old.outputs[k]!] = get(layout.outputs[nOut + i]!);
  });
  stateIdx.forEach((j, i) => {
    result[old.finalStates[j]!] = get(layout.finalStates[nState + i]!);
    result[old.stateSequences[j]!] = get(layout.stateSequences[nState + i]!);
  });
  return result;
}

/** For each body arg whose outer input has a tangent: the arg, a tangent arg of its type, and the outer tangent. */
function pick(
  args: readonly Node[],
  ts: readonly (Node | null)[],
  name: string,
): { args: Node[]; targs: Node[]; outer: Node[] } {
  const r = { args: [] as Node[], targs: [] as Node[], outer: [] as Node[] };
  args.forEach((x, i) => {
    const t = ts[i];
    if (!t || !differentiable(x)) return;
    r.args.push(x);
    r.targs.push(scanArg(x.type, `${name}${i}`));
    r.outer.push(t);
  });
  return r;
}

export const scanTangent: TupleTangentRule<OpNode<'scan'>> = { tuple: scanJvp };
