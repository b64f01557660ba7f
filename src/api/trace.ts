// The public calls as traced calls: each `K.*` function and tensor method is wrapped once, so
// the nodes it creates record its name and the user's line (src/ir/provenance.ts). Internal
// modules call the unwrapped functions, so a composite call records once, not per primitive.
// THEANINE_TRACE=0 (read through the platform module) or setTrace(false) turns recording off.
import { platform } from '#platform';
import { recordCall, recording, setTracing, tracingEnabled, userCode } from '../ir/provenance.js';
import { traceSwitch } from './config.js';

type Callable = (this: unknown, ...args: unknown[]) => unknown;

/** THEANINE_TRACE, read through the platform module (setEnvironment sets it in a page). */
export function traceFromEnv(env: (name: string) => string | undefined = (n) => platform.env(n)): boolean {
  return traceSwitch(env('THEANINE_TRACE'));
}

let configured = false;
function configure(): void {
  configured = true;
  setTracing(traceFromEnv());
}

/**
 * Whether each node records the public call that built it and the user's line (default: on,
 * unless THEANINE_TRACE=0). Nodes built earlier keep their records.
 */
export function setTrace(on: boolean): void {
  if (typeof on !== 'boolean') throw new TypeError(`setTrace: argument on must be true or false, got ${typeof on}`);
  configured = true;
  setTracing(on);
}

/** Whether nodes record their provenance now. */
export function traceEnabled(): boolean {
  if (!configured) configure();
  return tracingEnabled();
}

/** User callbacks (a step function, map_fn's fn) run as user code: their own K calls record. */
function asUserCode(f: Callable): Callable {
  const w = function (this: unknown, ...args: unknown[]): unknown {
    return userCode(() => f.apply(this, args));
  };
  Object.defineProperty(w, 'length', { value: f.length });
  Object.defineProperty(w, 'name', { value: f.name });
  return w;
}

/**
 * `f` as the public call `name`: the outermost call records one provenance for every node it
 * creates. `callbacks`: the function takes user functions (K.rnn's step, map_fn's fn), which
 * run as user code so that their own K calls record.
 */
export function traced<F extends (...args: never[]) => unknown>(name: string, f: F, callbacks = false): F {
  const call = f as unknown as Callable;
  const w = function (this: unknown, ...args: unknown[]): unknown {
    if (!configured) configure();
    if (!recording()) return call.apply(this, args);
    if (callbacks) {
      for (let i = 0; i < args.length; i++) {
        const a: unknown = args[i];
        if (typeof a === 'function' && !isClass(a)) args[i] = asUserCode(a as Callable);
      }
    }
    return recordCall(name, w, call, this, args);
  };
  Object.defineProperty(w, 'length', { value: f.length });
  Object.defineProperty(w, 'name', { value: f.name });
  return w as unknown as F;
}

/**
 * Every function a module exports, traced as `K.<its export name>` (classes and values as they
 * are), so src/api/backend.ts names each K function once.
 */
export function tracedAll<M extends object>(m: M, { callbacks = false } = {}): M {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(m)) {
    out[k] = typeof v === 'function' && !isClass(v) ? traced(`K.${k}`, v as Callable, callbacks) : v;
  }
  return out as M;
}

function isClass(f: unknown): boolean {
  return Function.prototype.toString.call(f as Callable).startsWith('class');
}
