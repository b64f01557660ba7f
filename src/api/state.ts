// Session state of the Keras API: learning phase, name scopes, and what clear_session resets.
import { leaf } from '../ir/build.js';
import { ValueError } from '../ir/errors.js';
import type { Node } from '../ir/node.js';
import { describe } from '../ir/ndarray.js';
import { reset_uids } from './config.js';

let phaseValue: 0 | 1 = 0;
let phaseNode: Node | undefined;
const scopes: string[] = [];
const clearHooks: (() => void)[] = [];

/**
 * The learning-phase tensor: a uint8 scalar leaf. A function that lists it among its inputs is
 * fed it; otherwise it reads the value set by `set_learning_phase` (0, test, by default).
 */
export function learning_phase(): Node {
  phaseNode ??= leaf('learning_phase', { name: 'keras_learning_phase' });
  return phaseNode;
}

export function currentLearningPhase(): 0 | 1 {
  return phaseValue;
}

export function set_learning_phase(value: 0 | 1): void {
  if (value !== 0 && value !== 1) {
    throw new ValueError(`set_learning_phase: expected 0 or 1, got ${describe(value)}`);
  }
  phaseValue = value;
}

/**
 * Runs `fn` with `name` pushed on the name scope; variables and placeholders created inside are
 * named `scope/name` (Keras' `with K.name_scope(...)`, as a callback).
 */
export function name_scope<T>(name: string, fn: () => T): T {
  if (typeof name !== 'string' || name === '')
    throw new ValueError(`name_scope: name must be a non-empty string, got ${describe(name)}`);
  if (typeof fn !== 'function')
    throw new TypeError(
      `name_scope: the second argument must be the function to run inside the scope, got ${describe(fn)}`,
    );
  scopes.push(name);
  try {
    return fn();
  } finally {
    scopes.pop();
  }
}

export function scopedName(name: string): string {
  return scopes.length === 0 ? name : `${scopes.join('/')}/${name}`;
}

/** Registers something clear_session must reset (compile caches, for instance). */
export function onClearSession(hook: () => void): void {
  clearHooks.push(hook);
}

/** Resets uids, the learning phase and its tensor, name scopes, and registered caches. */
export function clear_session(): void {
  reset_uids();
  phaseValue = 0;
  phaseNode = undefined;
  scopes.length = 0;
  for (const h of clearHooks) h();
}
