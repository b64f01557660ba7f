// The ONNX translation table's types: one entry per op name, typed by the op's attributes, so an
// op added to the registry without an ONNX translation (or a stated reason why there is none)
// is a type error, as for the tfjs kernels.
import type { DType } from '../../../ir/dtype.js';
import type { Node } from '../../../ir/node.js';
import type { AttrsOf, OpName } from '../../../ir/registry.js';
import type { ScanBody } from '../../../ir/scanbody.js';
import type { GraphBuilder, Val } from '../builder.js';
import type { GraphJson } from '../schema.js';

/** 'export': a portable model (variables as initializers, seeded draws as ONNX random ops). 'run': the onnx backend's session. */
export type Mode = 'export' | 'run';

export interface TranslatedBody {
  readonly graph: GraphJson;
}

export interface Ctx {
  readonly b: GraphBuilder;
  readonly node: Node;
  readonly mode: Mode;
  /** The node's own type. */
  readonly out: Val;
  /**
   * A Loop body for `body`: inputs (iteration, condition, states...), outputs (condition,
   * new states..., per-step outputs..., new states again as per-step outputs); sequences are read
   * from the enclosing graph with Gather at the step index.
   */
  loopBody(
    body: ScanBody,
    seqs: readonly string[],
    consts: readonly string[],
    index: (b: GraphBuilder, iter: string) => string,
  ): GraphJson;
  /** Values of print nodes the backend writes on the host after a run. */
  readonly prints: { name: string; message: string }[];
}

export type Emit<A> = (c: Ctx, ins: string[], attrs: A) => string;
export interface TupleEmit<A> {
  readonly tuple: (c: Ctx, ins: string[], attrs: A) => string[];
}
/** 'leaf': the translator supplies the value (placeholders, variables, scan args, tuple items). */
export type OnnxEntry<A> = Emit<A> | TupleEmit<A> | 'leaf' | { readonly unsupported: string };

export type { AttrsOf };
export type OnnxTable = { readonly [K in OpName]: OnnxEntry<AttrsOf<K>> };
export type OnnxTableFor<K extends OpName> = { readonly [P in K]: OnnxEntry<AttrsOf<P>> };

/** The entries of ops that have no translation for one shared reason. */
export function unsupported<K extends OpName>(
  reason: string,
  ops: readonly K[],
): { readonly [P in K]: { readonly unsupported: string } } {
  return Object.fromEntries(ops.map((op) => [op, { unsupported: reason }])) as { [P in K]: { unsupported: string } };
}

/**
 * The dtype ONNX Runtime's CPU kernels compute `d` in: float16 in float32, the small integer
 * types and bool in int32 (then cast back, wrapping as a store into that type does).
 */
export function arith(d: DType): DType {
  switch (d) {
    case 'float16':
      return 'float32';
    case 'int8':
    case 'int16':
    case 'uint8':
    case 'bool':
      return 'int32';
    default:
      return d;
  }
}
