// The tfjs kernel table's types. One entry per op name, typed by the op's own attribute type,
// so adding an op to the registry without a TensorFlow.js implementation is a type error.
import type * as Tfjs from '@tensorflow/tfjs';
import type { DType } from '../../ir/dtype.js';
import type { Node } from '../../ir/node.js';
import type { ScanBody } from '../../ir/scanbody.js';
import type { AttrsOf, OpName } from '../../ir/registry.js';
import type { TF } from './load.js';

export type Tensor = Tfjs.Tensor;
export type TfDType = 'float32' | 'int32' | 'bool';

export interface KernelContext {
  readonly tf: TF;
  /** The node being evaluated: its static type and its inputs' dtypes. */
  readonly node: Node;
  readonly learningPhase: number;
  /** Distinguishes evaluations (unseeded random ops draw afresh on each). */
  readonly epoch: number;
  print(message: string): void;
  /** Evaluates an inner graph as it is (a fused kernel's body) with its leaves fed: one tensor per result. */
  evaluate(results: readonly Node[], feeds: ReadonlyMap<Node, Tensor>): Tensor[];
  /** Evaluates a Scan's body after the function's passes (src/runtime/target.ts bodyOptimizer): one tensor per result. */
  evaluateBody(body: ScanBody, feeds: ReadonlyMap<Node, Tensor>): Tensor[];
}

/** Computes one node's value from its inputs' values (each in the tfjs dtype of its node's dtype). */
export type TfKernel<A> = (inputs: Tensor[], attrs: A, ctx: KernelContext) => Tensor;

/** A tuple-valued op (a Scan): one tensor per item of its tuple type. */
export interface TfTupleKernel<A> {
  readonly tuple: (inputs: Tensor[], attrs: A, ctx: KernelContext) => Tensor[];
}

/**
 * A kernel, a tuple kernel, or 'executor' for nodes whose value the executor supplies itself
 * (placeholders and scan args from feeds, variables from their tf.Variable, tuple items).
 */
export type TfEntry<A> = TfKernel<A> | TfTupleKernel<A> | 'executor';

export type TfTable = { readonly [K in OpName]: TfEntry<AttrsOf<K>> };

/** A table for some ops, each kernel typed by its op's attributes. */
export type TfTableFor<K extends OpName> = { readonly [P in K]: TfEntry<AttrsOf<P>> };

/**
 * TensorFlow.js has float32, int32 and bool. Every float computes in float32, every integer in
 * int32; values are converted to the node's declared dtype when they leave the executor.
 */
export function tfDType(d: DType): TfDType {
  switch (d) {
    case 'float16':
    case 'float32':
    case 'float64':
      return 'float32';
    case 'bool':
      return 'bool';
    default:
      return 'int32';
  }
}
