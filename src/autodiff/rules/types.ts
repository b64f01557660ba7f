// The shape of a gradient rule.
import type { Node } from '../../ir/node.js';
import type { OpName, OpNode } from '../../ir/registry.js';

/**
 * Given a node and the cotangent `g` of its output (same shape and dtype as the node), returns one
 * cotangent per input, with that input's shape, or null where no gradient flows (integer inputs,
 * indices, conditions). Rules build graphs: gradients are IR too.
 */
export type GradRule<N extends Node = Node> = (node: N, g: Node) => readonly (Node | null)[];

/** What a rule that differentiates an inner graph (a Scan's step) needs of reverse mode itself: handed in by the walker (grad.ts). */
export interface GradContext {
  readonly gradients: (loss: Node, wrt: readonly Node[], fn: string) => Node[];
}

/** For tuple-valued ops (Scan): one cotangent per item, null for items the loss does not reach. */
export interface TupleGradRule<N extends Node = Node> {
  readonly tuple: (node: N, gs: readonly (Node | null)[], ctx: GradContext) => readonly (Node | null)[];
}

/** An op whose gradient is not provided: differentiating through it is an error with this reason. */
export interface UnsupportedRule {
  readonly unsupported: string;
}

/**
 * 'leaf': no inputs. 'none': no gradient reaches any input (comparisons, argmax, shape_of...).
 */
export type RuleEntry<N extends Node = Node> = GradRule<N> | TupleGradRule<N> | UnsupportedRule | 'leaf' | 'none';

/** Rules for some built-in ops, each given its op's node (attrs typed), as TfTableFor is for tfjs kernels. */
export type GradTableFor<K extends OpName> = { readonly [P in K]: RuleEntry<OpNode<P>> };

/** The rule of every built-in op: a missing one is a type error. */
export type GradTable = GradTableFor<OpName>;
