// The inner graph of a Scan: an ordinary IR graph over `scan_arg` leaves that the Scan owns.
// It is an attribute of the `scan` node, keyed by its structure (args by position), so two
// Scans built from equal step functions over the same inputs hash-cons to one node.
import { topoSort } from './graph.js';
import { attrsKey, type Node } from './node.js';
import type { Keyed } from './op.js';
import { formatShape } from './ndarray.js';

/**
 * One step of a loop. Per step, the Scan feeds:
 * - `sequences[i]`: slice t (axis 0) of the Scan's i-th sequence input;
 * - `states[j]`: the j-th recurrent state, its initial value at the first step, else the
 *   previous step's `newStates[j]`;
 * - `constants[k]`: the k-th non-sequence input, the same at every step.
 * It computes `outputs` (stacked over the steps into the Scan's items) and `newStates`.
 * The body is closed: its leaves are its own args and `constant` leaves only.
 */
export class ScanBody implements Keyed {
  private readonly key: string;

  constructor(
    readonly sequences: readonly Node[],
    readonly states: readonly Node[],
    readonly constants: readonly Node[],
    readonly outputs: readonly Node[],
    readonly newStates: readonly Node[],
  ) {
    if (newStates.length !== states.length) {
      throw new Error(`internal: scan body has ${states.length} states but ${newStates.length} new states`);
    }
    for (const a of this.args)
      if (a.op !== 'scan_arg') throw new Error(`internal: scan body arg ${a.name} is a ${a.op}, not a scan_arg`);
    if (new Set(this.args).size !== this.args.length) throw new Error('internal: a scan body lists the same arg twice');
    Object.freeze(this.sequences);
    Object.freeze(this.states);
    Object.freeze(this.constants);
    Object.freeze(this.outputs);
    Object.freeze(this.newStates);
    this.key = this.structuralKey();
  }

  /** All args in input order: sequences, states, constants (the Scan's inputs follow it). */
  get args(): Node[] {
    return [...this.sequences, ...this.states, ...this.constants];
  }

  /** All results: per-step outputs, then new states. */
  get results(): Node[] {
    return [...this.outputs, ...this.newStates];
  }

  attrKey(): string {
    return this.key;
  }

  toString(): string {
    return `<body: ${this.sequences.length} seq, ${this.states.length} state, ${this.constants.length} const, ${this.outputs.length} out>`;
  }

  /**
   * Nodes numbered in topological order, args by their position; any other leaf than a
   * constant or an own arg means the body is not closed, which the builder prevents.
   */
  private structuralKey(): string {
    const local = new Map<Node, number>();
    const argPos = new Map<Node, number>(this.args.map((a, i) => [a, i]));
    const parts: string[] = [];
    for (const n of topoSort(this.results)) {
      local.set(n, local.size);
      const pos = argPos.get(n);
      if (pos !== undefined) {
        parts.push(`arg${pos}:${n.dtype}${formatShape(n.shape)}`);
      } else if (n.inputs.length === 0 && n.op !== 'constant' && !isPureLeaf(n)) {
        throw new Error(`internal: scan body is not closed: it reads the ${n.op} leaf ${n.name}`);
      } else {
        parts.push(`${n.op}(${n.inputs.map((i) => local.get(i)!).join(',')})${attrsKey(n.attrs)}`);
      }
    }
    const refs = (ns: readonly Node[]) => ns.map((n) => local.get(n)!).join(',');
    // Args that no result reads still count: they fix the Scan's input list.
    const unread = this.args.map((a, i) => (local.has(a) ? '' : `arg${i}:${a.dtype}${formatShape(a.shape)}`)).join(',');
    return `body[${this.sequences.length},${this.states.length},${this.constants.length}|${parts.join(';')}|out=${refs(this.outputs)}|new=${refs(this.newStates)}|${unread}]`;
  }
}

/** Leaves whose value is a function of their attrs alone (seeded draws and the like may stay inside). */
function isPureLeaf(n: Node): boolean {
  return n.op === 'constant';
}
