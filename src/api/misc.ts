// print_tensor and Keras' tf2-era decorators `symbolic` / `eager`.
import { apply } from '../ir/build.js';
import { ValueError } from '../ir/errors.js';
import { NDArray, describe } from '../ir/ndarray.js';
import { Node } from '../ir/node.js';
import { leavesOf } from '../ir/graph.js';
import { evaluate } from '../ir/interpret.js';
import { options, toTensor, type TensorLike } from './args.js';
import { currentLearningPhase } from './state.js';

/**
 * Returns x unchanged; each evaluation of the result prints `message` followed by x's value
 * (through the evaluator's print hook, console.log by default).
 */
export function print_tensor(x: TensorLike, message: string | { message?: string } = ''): Node {
  const m = options<{ message: string }>('print_tensor', [message], ['message']).message ?? '';
  if (typeof m !== 'string') throw new ValueError(`print_tensor: message must be a string, got ${describe(m)}`);
  // TensorFlow's tf.print(message, x): the message, a space, the value ('msg [[1]]')
  return apply('print', [toTensor('print_tensor', x)], { message: `${m} ` }, 'K.print_tensor');
}

/** Keras' `symbolic` decorator: functions here always build graphs, so `fn` is returned as is. */
export function symbolic<F extends (...args: never[]) => unknown>(fn: F): F {
  if (typeof fn !== 'function') throw new TypeError(`symbolic: expected a function, got ${describe(fn)}`);
  return fn;
}

/** What an eager function returns: its result with every tensor replaced by its value. */
export type Eager<T> = T extends Node ? NDArray : T extends readonly unknown[] ? { [K in keyof T]: Eager<T[K]> } : T;

function collect(v: unknown, out: Node[]): void {
  if (v instanceof Node) out.push(v);
  else if (Array.isArray(v)) for (const x of v) collect(x, out);
}

function substitute(v: unknown, values: Map<Node, NDArray>): unknown {
  if (v instanceof Node) return values.get(v);
  if (Array.isArray(v)) return v.map((x) => substitute(x, values));
  return v;
}

/**
 * Keras' `eager` decorator: the returned function takes values (NDArrays, nested arrays, numbers)
 * or constant tensors, runs `fn` on them as constants, and returns NDArrays where `fn` returned
 * tensors (also inside arrays). All results come from one evaluation, so they agree with each
 * other (one draw per random op). A result that depends on a placeholder is an error.
 */
export function eager<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => Eager<R> {
  if (typeof fn !== 'function') throw new TypeError(`eager: expected a function, got ${describe(fn)}`);
  return (...args: A): Eager<R> => {
    const ins = args.map((a) => (a instanceof NDArray || Array.isArray(a) ? toTensor('eager', a, 'argument') : a)) as A;
    const result = fn(...ins);
    const nodes: Node[] = [];
    collect(result, nodes);
    const ph = leavesOf(nodes, 'placeholder');
    if (ph.length > 0) {
      throw new ValueError(
        `eager: the result depends on placeholder ${JSON.stringify(ph[0]!.name)}; an eager function computes values, so pass values instead`,
      );
    }
    const vals = evaluate(nodes, { learningPhase: currentLearningPhase() });
    const map = new Map<Node, NDArray>(nodes.map((n, i) => [n, vals[i]!]));
    return substitute(result, map) as Eager<R>;
  };
}
