// The shape of a tangent (forward-mode, jvp) rule: the dual of rules/types.ts.
import type { Node } from '../../ir/node.js';
import type { OpName, OpNode } from '../../ir/registry.js';
import type { UnsupportedRule } from '../rules/types.js';

/**
 * Given a node and the tangents of its inputs (each with that input's shape and dtype, or null
 * for a zero tangent: an input that does not depend on the seeds, or an integer one), returns the
 * tangent of the output, or null when it is zero. The walker broadcasts and casts the result to
 * the node's shape and dtype. Rules build graphs: tangents are IR too.
 */
export type TangentRule<N extends Node = Node> = (node: N, ts: readonly (Node | null)[]) => Node | null;

/** What a rule that pushes tangents through an inner graph (a Scan's step) needs of forward mode itself: handed in by the walker (forward.ts). */
export interface TangentContext {
  readonly tangents: (
    outputs: readonly Node[],
    wrt: readonly Node[],
    points: readonly Node[],
    fn: string,
  ) => (Node | null)[];
}

/** For tuple-valued ops (Scan): one tangent per item, null for items that stay constant. */
export interface TupleTangentRule<N extends Node = Node> {
  readonly tuple: (node: N, ts: readonly (Node | null)[], ctx: TangentContext) => readonly (Node | null)[];
}

/** 'leaf': no inputs. 'none': the output's tangent is zero (comparisons, argmax, shape_of...). */
export type TangentEntry<N extends Node = Node> =
  | TangentRule<N>
  | TupleTangentRule<N>
  | UnsupportedRule
  | 'leaf'
  | 'none';

/** Tangent rules for some built-in ops, each given its op's node (attrs typed). */
export type TangentTableFor<K extends OpName> = { readonly [P in K]: TangentEntry<OpNode<P>> };

/** The tangent rule of every built-in op: a missing one is a type error. */
export type TangentTable = TangentTableFor<OpName>;
