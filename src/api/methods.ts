// Tensor methods for chaining: x.add(y).mul(2).T. They build the same nodes as the
// K.* functions. Declared on the IR's Node class from here, so `ir` stays free of the API.
import { apply } from '../ir/build.js';
import { Node } from '../ir/node.js';
import { ValueError } from '../ir/errors.js';
import { add, divide, dot, multiply, negative, pow, subtract } from './math.js';
import type { TensorLike } from './args.js';
import { constraintOf, setConstraint, type Constraint } from './tensors.js';
import { traced } from './trace.js';

declare module '../ir/node.js' {
  interface Node {
    add(y: TensorLike): Node;
    sub(y: TensorLike): Node;
    mul(y: TensorLike): Node;
    div(y: TensorLike): Node;
    neg(): Node;
    pow(a: TensorLike): Node;
    dot(y: TensorLike): Node;
    /** `x[i]`: index along the first axis (negative counts from the end). */
    get(i: number): Node;
    /** Transpose (all axes reversed). */
    readonly T: Node;
    /** A variable's constraint (K.variable's `constraint`), or null: Keras' `p.constraint`; assignable, as on a TensorFlow variable. */
    constraint: Constraint | null;
    /** Set by Keras' engine (or ported layer code) on a layer's output: what makes K.is_keras_tensor true. */
    _keras_history?: unknown;
  }
}

const proto = Node.prototype as unknown as Record<string, unknown>;
proto['add'] = traced('Tensor.add', function (this: Node, y: TensorLike) {
  return add(this, y);
});
proto['sub'] = traced('Tensor.sub', function (this: Node, y: TensorLike) {
  return subtract(this, y);
});
proto['mul'] = traced('Tensor.mul', function (this: Node, y: TensorLike) {
  return multiply(this, y);
});
proto['div'] = traced('Tensor.div', function (this: Node, y: TensorLike) {
  return divide(this, y);
});
proto['neg'] = traced('Tensor.neg', function (this: Node) {
  return negative(this);
});
proto['pow'] = traced('Tensor.pow', function (this: Node, a: TensorLike) {
  return pow(this, a);
});
proto['dot'] = traced('Tensor.dot', function (this: Node, y: TensorLike) {
  return dot(this, y);
});
proto['get'] = traced('Tensor.get', function (this: Node, i: number) {
  if (this.ndim === 0) throw new ValueError(`get: cannot index the scalar tensor ${this.name}`);
  if (!Number.isInteger(i)) throw new ValueError(`get: index must be an integer, got ${String(i)}`);
  return apply('index', [this], { index: i }, 'get');
});
Object.defineProperty(Node.prototype, 'T', {
  get: traced('Tensor.T', function (this: Node) {
    const perm = Array.from({ length: this.ndim }, (_, k) => this.ndim - 1 - k);
    return apply('transpose', [this], { perm }, 'T');
  }),
});
Object.defineProperty(Node.prototype, 'constraint', {
  get(this: Node) {
    return constraintOf(this);
  },
  set(this: Node, c: unknown) {
    setConstraint('constraint', this, c);
  },
});
