// The shape of a batching rule (JAX's `batching.primitive_batchers`, over built graphs).
import type { Node } from '../../ir/node.js';
import type { OpName, OpNode } from '../../ir/registry.js';

/**
 * A value of the batched graph standing for a node of the per-example graph: `batched` values
 * carry the batch on axis 0 (shape `[B, ...per-example shape]`); unbatched values are the same for
 * every example and have the per-example shape.
 */
export interface BVal {
  readonly value: Node;
  readonly batched: boolean;
}

/** A tuple-valued node (Scan, CTC) maps to one value per item. */
export interface BTuple {
  readonly items: readonly BVal[];
}

export type Batched = BVal | BTuple;

/** Batches a closed graph (a Scan body): `subst` maps its batched leaves to their batched values. */
export type Recurse = (outputs: readonly Node[], subst: ReadonlyMap<Node, Node>, ctx: BatchContext) => BVal[];

/** What a rule knows besides its node: the batch size and a batched tensor giving it at run time. */
export interface BatchContext {
  /** The user-facing function, for error messages ('autodiff.vmap'). */
  readonly fn: string;
  /** The batch size when static, else null. */
  readonly size: number | null;
  /** A batched tensor of the current graph (axis 0 is the batch); its runtime shape gives B. */
  readonly ref: Node;
  /** The walker itself, for ops with inner graphs. */
  readonly recurse: Recurse;
}

/**
 * Given a node of the per-example graph and its inputs' batched values (at least one batched),
 * returns its batched value. Rules build graphs with the op's own primitives, never a loop over
 * examples, except the entries marked `loop`.
 */
export type BatchRule<N extends Node = Node> = (node: N, args: readonly BVal[], ctx: BatchContext) => BVal;

/** For tuple-valued ops: one value per item. */
export interface TupleBatchRule<N extends Node = Node> {
  readonly tuple: (node: N, args: readonly BVal[], ctx: BatchContext) => BTuple;
}

/** Batched by applying the op to each example and stacking (needs a static batch size): `reason` says why. */
export interface LoopRule {
  readonly loop: string;
}

/** Batching through this op is an error with this reason. */
export interface UnsupportedBatch {
  readonly unsupported: string;
}

/** 'leaf': no inputs (never batched by a rule; vmap's inputs are substituted). */
export type BatchEntry<N extends Node = Node> = BatchRule<N> | TupleBatchRule<N> | LoopRule | UnsupportedBatch | 'leaf';

export type BatchTableFor<K extends OpName> = { readonly [P in K]: BatchEntry<OpNode<P>> };

/** The batching rule of every built-in op: a missing one is a type error. */
export type BatchTable = BatchTableFor<OpName>;
