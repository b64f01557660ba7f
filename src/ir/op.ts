// What an op is: a name, type inference, and a reference implementation on NDArrays.
// Gradient rules live in src/autodiff and code templates in src/codegen, each in a table
// keyed by op name, so the op record itself stays small.
import type { NDArray } from './ndarray.js';
import type { TensorType } from './types.js';
import type { DType } from './dtype.js';
import type { Node } from './node.js';

/** Attributes: JSON-like data, NDArrays, or objects that give their own structural key. */
export type AttrValue =
  | null
  | boolean
  | number
  | string
  | readonly AttrValue[]
  | { readonly [k: string]: AttrValue }
  | NDArray
  | Keyed;
export type Attrs = { readonly [k: string]: AttrValue };

/** An attribute value with its own structural key (e.g. a Scan's inner graph). */
export interface Keyed {
  attrKey(): string;
}

/** What the reference interpreter offers an op while evaluating. */
export interface EvalContext {
  /** Learning phase for `learning_phase` leaves not fed explicitly (0 test, 1 train). */
  readonly learningPhase: number;
  /** Distinguishes evaluations, so unseeded random ops draw afresh on each. */
  readonly epoch: number;
  /** Where `print_tensor` writes. */
  print(message: string): void;
  /** Evaluates an inner graph (a Scan's step, a fused kernel's body) with its leaves fed, in this context. */
  evaluate(outputs: readonly Node[], feeds: ReadonlyMap<Node, NDArray>): NDArray[];
}

export type OpKind = 'leaf' | 'elementwise' | 'reduction' | 'shape' | 'other';

export interface OpDef<A = Attrs> {
  readonly name: string;
  readonly kind: OpKind;
  /** Number of inputs, or 'variadic'. */
  readonly arity: number | 'variadic';
  /** Result type; throws InferError naming both shapes and the offending axis. */
  infer(inputs: readonly TensorType[], attrs: A): TensorType;
  /** Reference semantics: straightforward, obviously correct, never fast. */
  impl(inputs: readonly NDArray[], attrs: A, ctx: EvalContext): NDArray;
  /**
   * Reference semantics of a tuple-valued op (its `infer` returns a `tupleType`): one value per
   * item. Used instead of `impl`, which such ops define to throw.
   */
  implTuple?(inputs: readonly NDArray[], attrs: A, ctx: EvalContext): NDArray[];
  /** Results depend on more than inputs and attrs (random draws, printing): never folded or merged. */
  readonly impure?: boolean;
  /**
   * Sized ops (src/ir/ops/sized.ts), whose sizes are input values: the static op the node is at one
   * specialisation, given the inputs' values where known (shape arithmetic) and concrete types;
   * undefined while a size is not known.
   */
  resolve?(known: readonly (NDArray | undefined)[], types: readonly ConcreteType[], attrs: A): Resolved | undefined;
}

export interface ConcreteType {
  readonly shape: readonly number[];
  readonly dtype: DType;
}

/** What a sized op becomes once its sizes are known: a static op over some of its inputs. */
export interface Resolved {
  readonly op: string;
  /** Positions of the inputs the static op takes, in order. */
  readonly inputs: readonly number[];
  readonly attrs: Attrs;
}

/** Declares an op with its attribute type checked at the definition. */
export function defineOp<A>(def: OpDef<A>): OpDef<A> {
  return def;
}
