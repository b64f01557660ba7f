// Error classes, named after the Python exceptions Keras raises in the same places.

/** A bad argument value (Python's ValueError). */
export class ValueError extends Error {
  override name = 'ValueError';
}

/** Operand shapes that do not fit an op (Keras raises ValueError; this subclass says why). */
export class ShapeError extends ValueError {
  override name = 'ShapeError';
}

/** Thrown by an op's type inference without the user-facing function name; `apply` adds it. */
export class InferError extends Error {
  constructor(
    message: string,
    readonly kind: 'shape' | 'value' | 'type' = 'shape',
  ) {
    super(message);
  }
}
