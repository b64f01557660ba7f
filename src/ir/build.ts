// Building nodes: type inference runs here, at graph-build time, so shape errors surface
// where the user wrote the call, named after the Keras function they called.
import { ShapeError, ValueError, InferError } from './errors.js';
import { fresh, intern, type Node, type VariableCell } from './node.js';
import type { Attrs } from './op.js';
import { getOp, type AttrsOf, type OpName } from './registry.js';
import type { TensorType } from './types.js';
import { formatShape } from './ndarray.js';

/**
 * Applies op `op` to `inputs`; `fn` is the user-facing name used in error messages (e.g. 'K.dot').
 * `attrs` may be the op's own attrs record (a slice's `SliceAxis[]`, ...) as well as node attrs.
 */
export function apply<K extends OpName>(op: K, inputs: readonly Node[], attrs?: AttrsOf<K>, fn?: string): Node;
export function apply(op: string, inputs: readonly Node[], attrs?: Attrs, fn?: string): Node;
export function apply(op: string, inputs: readonly Node[], given: unknown = {}, fn: string = op): Node {
  // Every op's attrs record is made of attribute values: the node keeps it as such.
  const attrs = given as Attrs;
  const def = getOp(op);
  if (def.arity !== 'variadic' && def.arity !== inputs.length) {
    throw new ValueError(`${fn}: op ${op} takes ${def.arity} inputs, got ${inputs.length}`);
  }
  const unknown = inputs.find((n) => n.type.unknownRank === true);
  let type: TensorType;
  try {
    // Unknown rank is carried through elementwise ops (their dtype rule run on scalars); other
    // ops need ranks (TensorFlow's shape functions refuse too) and say which operand lacks one.
    if (unknown !== undefined) {
      if (def.kind !== 'elementwise') {
        throw new ValueError(
          `${fn}: ${op} needs the rank of its operands, but ${unknown.name} has unknown rank (a placeholder made with neither shape nor ndim); give it a shape or an ndim`,
        );
      }
      type = {
        ...def.infer(
          inputs.map((n) => ({ dtype: n.type.dtype, shape: n.type.unknownRank === true ? [] : n.type.shape })),
          attrs,
        ),
        unknownRank: true,
      };
    } else
      type = def.infer(
        inputs.map((n) => n.type),
        attrs,
      );
  } catch (e) {
    throw e instanceof InferError ? inferenceFailure(rethrow(e, fn)) : e;
  }
  for (const t of type.items ?? [type]) checkSize(fn, op, t);
  return intern(op, inputs, attrs, type);
}

/** The most elements a JavaScript typed array holds (V8, 64-bit). */
export const MAX_ELEMENTS = 2 ** 32 - 1;

/**
 * A result too large for any typed array is refused when the node is built, naming the function
 * and the shape (a 2^40-element result failed at run time with "Invalid typed
 * array length", naming nothing). Unknown dims are checked when the value is allocated.
 */
function checkSize(fn: string, op: string, t: TensorType): void {
  let n = 1;
  for (const d of t.shape) if (d !== null) n *= d;
  if (n > MAX_ELEMENTS) {
    throw inferenceFailure(
      new ValueError(
        `${fn}: the result of ${op} would have shape ${formatShape(t.shape)}, ${n} elements; a typed array holds at most ${MAX_ELEMENTS} (2^32 - 1), so no backend can hold it. Split the computation or reduce the shape`,
      ),
    );
  }
}

/** A leaf with a fresh identity (placeholders, variables, unseeded random draws). */
export function leaf(op: string, attrs: Attrs, cell?: VariableCell): Node {
  const def = getOp(op);
  const type = def.infer([], attrs);
  return fresh(op, attrs, type, cell);
}

const inferenceFailures = new WeakSet<Error>();

function inferenceFailure(e: Error): Error {
  inferenceFailures.add(e);
  return e;
}

/**
 * Whether `e` says that a node could not be built because its operands' types do not fit the
 * op (its inference refused them, or the result is too large): the rewrite engine's sign that a
 * rule's replacement does not exist here, as opposed to a bug in the rule.
 */
export function isInferenceFailure(e: unknown): boolean {
  return e instanceof Error && inferenceFailures.has(e);
}

/** Turns an InferError into the user-facing error class, prefixed with the function name. */
export function rethrow(e: unknown, fn: string): Error {
  if (e instanceof InferError) {
    const msg = `${fn}: ${e.message}`;
    return e.kind === 'shape' ? new ShapeError(msg) : e.kind === 'type' ? new TypeError(msg) : new ValueError(msg);
  }
  return e instanceof Error ? e : new Error(String(e));
}
