// Keras 2.3's TensorFlow-only session names: get_session / set_session, control_dependencies and
// manual_variable_initialization, with what each means in a graph compiler without sessions.
import { ValueError } from '../ir/errors.js';
import { NDArray, describe } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import { leavesOf } from '../ir/graph.js';
import { isPlainObject, isTensor } from './args.js';
import { compileFunction, Update, type FunctionOptions } from './function.js';
import { onClearSession } from './state.js';

type Fetch = Node | Update | readonly Fetch[];
type FetchResult<F> = F extends Node
  ? NDArray
  : F extends Update
    ? null
    : F extends readonly unknown[]
      ? { [K in keyof F]: FetchResult<F[K]> }
      : never;

/** What `feed_dict` may be: a Map from placeholders to values, or a list of [placeholder, value] pairs. */
export type FeedDict = ReadonlyMap<Node, unknown> | readonly (readonly [Node, unknown])[];

/**
 * The object `K.get_session()` returns. `run(fetches, feed_dict)` evaluates tensors as
 * TensorFlow's `Session.run` does: `fetches` is a tensor, an update record or a nested list of
 * them; the result has the same structure with NDArrays for tensors (null for updates, which
 * are applied after the outputs are computed, as K.function does). Each run compiles through
 * K.function (its compile cache makes repeated runs of one graph cheap); `options` are
 * K.function's (backend, device, optimizer).
 */
export class Session {
  constructor(readonly options: FunctionOptions = {}) {}

  run<const F extends Fetch>(fetches: F, feed_dict?: FeedDict | null): FetchResult<F> {
    const tensors: Node[] = [];
    const updates: Update[] = [];
    const walk = (f: unknown, path: string): void => {
      if (isTensor(f)) tensors.push(f);
      else if (f instanceof Update) updates.push(f);
      else if (Array.isArray(f)) f.forEach((g, i) => walk(g, `${path}[${i}]`));
      else
        throw new TypeError(
          `Session.run: fetch ${path} is ${describe(f)}; expected a tensor, an update (K.update...) or a list of them`,
        );
    };
    walk(fetches, 'fetches');
    const feeds = feedPairs(feed_dict);
    const fed = new Set(feeds.map(([p]) => p));
    const missing = leavesOf([...tensors, ...updates.map((u) => u.value)], 'placeholder').find((p) => !fed.has(p));
    if (missing !== undefined) {
      throw new ValueError(
        `Session.run: the fetches depend on placeholder ${JSON.stringify(missing.name)}, which feed_dict does not feed`,
      );
    }
    const f = compileFunction(
      feeds.map(([p]) => p),
      tensors,
      updates,
      this.options,
    );
    const values = f(feeds.map(([, v]) => v as NDArray));
    let k = 0;
    const rebuild = (x: unknown): unknown => {
      if (isTensor(x)) return values[k++]!;
      if (x instanceof Update) return null;
      return (x as readonly unknown[]).map(rebuild);
    };
    return rebuild(fetches) as FetchResult<F>;
  }
}

function feedPairs(feed: unknown): (readonly [Node, unknown])[] {
  if (feed === undefined || feed === null) return [];
  const pairs: unknown[] = feed instanceof Map ? [...feed.entries()] : Array.isArray(feed) ? feed : [];
  if (!(feed instanceof Map) && !Array.isArray(feed)) {
    const hint = isPlainObject(feed)
      ? ' (a plain object cannot be keyed by tensors: use a Map or [[placeholder, value], ...])'
      : '';
    throw new TypeError(
      `Session.run: feed_dict must be a Map from placeholders to values or a list of [placeholder, value] pairs, got ${describe(feed)}${hint}`,
    );
  }
  return pairs.map((p, i) => {
    if (!Array.isArray(p) || p.length !== 2)
      throw new TypeError(`Session.run: feed_dict entry ${i} is not a [placeholder, value] pair`);
    const ph: unknown = p[0];
    if (!isTensor(ph) || (ph.op !== 'placeholder' && ph.op !== 'learning_phase')) {
      throw new TypeError(
        `Session.run: feed_dict entry ${i} feeds ${isTensor(ph) ? `the ${ph.op} tensor ${ph.name}` : describe(ph)}; only placeholders (and K.learning_phase()) can be fed`,
      );
    }
    return [ph, p[1]] as const;
  });
}

let session: Session | undefined;
onClearSession(() => {
  session = undefined;
});

/** Keras' get_session(): the current session (one is made on first use and by clear_session). */
export function get_session(): Session {
  session ??= new Session();
  return session;
}

/** Keras' set_session(session): later get_session() calls return it. */
export function set_session(s: Session): void {
  if (!(s instanceof Session))
    throw new TypeError(
      `set_session: expected a Session (from K.get_session() or new Session(options)), got ${describe(s)}`,
    );
  session = s;
}

let manualInit = false;
/**
 * Keras' manual_variable_initialization(value): under TensorFlow, whether Keras leaves variable
 * initialisation to the user. A theanine variable holds its value from creation (as Theano's
 * shared variables do), so there is nothing left to initialise; the flag is kept and readable
 * with manualVariableInitialization() for code that branches on it.
 */
export function manual_variable_initialization(value: boolean): void {
  if (typeof value !== 'boolean')
    throw new ValueError(`manual_variable_initialization: value must be a boolean, got ${describe(value)}`);
  manualInit = value;
}
export function manualVariableInitialization(): boolean {
  return manualInit;
}

/**
 * Keras' `with K.control_dependencies(control_inputs): ...`, as a callback: runs `body` and
 * returns its result. theanine graphs are pure data flow and K.function applies every update
 * after all outputs are computed (Theano's order), so, as in Keras' Theano backend (whose
 * control_dependencies is a context manager that does nothing), an output built inside does
 * not wait for the listed updates: `K.identity(x)` inside still reads x's old value. Called
 * without a body it returns `{ run(body) }`, the context object.
 */
export function control_dependencies<T>(control_inputs: readonly (Node | Update)[] | null, body: () => T): T;
export function control_dependencies(control_inputs: readonly (Node | Update)[] | null): { run<T>(body: () => T): T };
export function control_dependencies<T>(
  control_inputs: readonly (Node | Update)[] | null,
  body?: () => T,
): T | { run<U>(body: () => U): U } {
  if (control_inputs !== null && !Array.isArray(control_inputs)) {
    throw new TypeError(
      `control_dependencies: control_inputs must be a list of tensors or updates (or null), got ${describe(control_inputs)}`,
    );
  }
  (control_inputs ?? []).forEach((c: unknown, i) => {
    if (!isTensor(c) && !(c instanceof Update))
      throw new TypeError(
        `control_dependencies: control_inputs[${i}] is ${describe(c)}; expected a tensor or an update`,
      );
  });
  const run = <U>(b: () => U): U => {
    if (typeof b !== 'function')
      throw new TypeError(`control_dependencies: the body must be a function, got ${describe(b)}`);
    return b();
  };
  return body === undefined ? { run } : run(body);
}
