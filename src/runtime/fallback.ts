// The fallback rule: compiled means compiled. A compiled function that runs the
// reference interpreter, whole (a shape the input shapes do not fix) or for one step (an extern
// step: an op without a kernel), says so: a warning once per function naming each op and why, or,
// with `fallback: 'error'` (K.function's option, or THEANINE_FALLBACK=error for every function),
// an error at the first call, before anything runs or any variable changes. `f.source()` says the
// same in its comments.
import { ValueError } from '../ir/errors.js';
import type { Program } from '../codegen/kernel/ir.js';
import { withBuiltBy, type Provenance } from '../ir/provenance.js';
import { warn } from './warn.js';
import { platform } from '#platform';

export { NO_KERNEL_YET } from '../codegen/lower/no-kernel.js';

export type FallbackMode = 'warn' | 'error';
export const FALLBACK_MODES: readonly FallbackMode[] = ['warn', 'error'];

/** K.function's `fallback` option: a mode, or `error` except for the listed ops (the test tables' form). */
export type FallbackOption = FallbackMode | { readonly mode: FallbackMode; readonly allow?: readonly string[] };

/** One thing a compiled function does not run as generated code. */
export interface Fallback {
  /** The op (for a whole-function fallback, the op whose shape could not be fixed). */
  readonly op: string;
  readonly reason: string;
  /** The whole function runs the reference interpreter (rather than one extern step). */
  readonly whole: boolean;
  /** The provenance of the extern step's node (src/ir/provenance.ts). */
  readonly origin?: readonly Provenance[];
}

/** Every extern step of a program, Scan bodies included. */
export function externFallbacks(p: Program): Fallback[] {
  const out: Fallback[] = [];
  for (const s of p.steps) {
    if (s.kind === 'extern')
      out.push({
        op: s.def.name,
        reason: s.reason,
        whole: false,
        ...(s.origin !== undefined ? { origin: s.origin } : {}),
      });
    else if (s.kind === 'scan') out.push(...externFallbacks(s.body));
  }
  return out;
}

/** THEANINE_FALLBACK, checked: unset or empty is `warn`. */
export function envFallbackMode(): FallbackMode {
  const v = platform.env('THEANINE_FALLBACK');
  if (v === undefined || v === '') return 'warn';
  if (!(FALLBACK_MODES as readonly string[]).includes(v)) {
    throw new ValueError(
      `THEANINE_FALLBACK: unknown mode ${JSON.stringify(v)} (allowed: ${FALLBACK_MODES.map((m) => JSON.stringify(m)).join(', ')})`,
    );
  }
  return v as FallbackMode;
}

export interface FallbackPolicy {
  readonly mode: FallbackMode;
  readonly allow: ReadonlySet<string>;
}

/** K.function's option checked and resolved against the environment (the option wins). */
export function fallbackPolicy(fn: string, opt: unknown): FallbackPolicy {
  if (opt === undefined) return { mode: envFallbackMode(), allow: new Set() };
  const bad = () =>
    new ValueError(`${fn}: fallback must be "warn", "error" or { mode, allow: op names }, got ${JSON.stringify(opt)}`);
  if (typeof opt === 'string') {
    if (!(FALLBACK_MODES as readonly string[]).includes(opt)) throw bad();
    return { mode: opt as FallbackMode, allow: new Set() };
  }
  if (typeof opt !== 'object' || opt === null) throw bad();
  const o = opt as { mode?: unknown; allow?: unknown };
  if (typeof o.mode !== 'string' || !(FALLBACK_MODES as readonly string[]).includes(o.mode)) throw bad();
  if (o.allow !== undefined && (!Array.isArray(o.allow) || o.allow.some((a) => typeof a !== 'string'))) throw bad();
  return { mode: o.mode as FallbackMode, allow: new Set((o.allow ?? []) as string[]) };
}

/** Raised at a call when the function would run the reference interpreter and fallback is `error`. */
export class FallbackError extends Error {
  override name = 'FallbackError';
}

/**
 * A device function's `source()`: why its latest call ran in the reference interpreter, that it has
 * not run yet, or its latest program described.
 */
export function sourceOrWhy<P>(
  notCompiled: readonly Fallback[] | undefined,
  last: P | undefined,
  describe: (p: P) => string,
): string {
  if (notCompiled !== undefined)
    return `// not compiled: ${describeFallbacks(notCompiled)}; this function runs in the reference interpreter on the host`;
  return last === undefined ? '// not run yet: call the function once, then ask again' : describe(last);
}

export function describeFallbacks(fs: readonly Fallback[]): string {
  const seen = new Set<string>();
  const parts: string[] = [];
  for (const f of fs) {
    const s = f.whole ? `the whole function (${f.op}: ${f.reason})` : `op ${f.op} (${f.reason})`;
    if (!seen.has(s)) {
      seen.add(s);
      parts.push(s);
    }
  }
  return parts.join('; ');
}

/**
 * Applies the rule to one specialisation's fallbacks: throws in `error` mode (ops in `allow` are
 * accepted), else warns once per function (`state.warned`).
 */
export function checkFallbacks(
  fnName: string,
  fs: readonly Fallback[],
  policy: FallbackPolicy,
  state: { warned: boolean },
): void {
  if (fs.length === 0) return;
  const what = `function ${JSON.stringify(fnName)} runs the reference interpreter instead of generated code for ${describeFallbacks(fs)}`;
  if (policy.mode === 'error') {
    const refused = fs.filter((f) => f.whole || !policy.allow.has(f.op));
    if (refused.length > 0) {
      const e = new FallbackError(
        `K.function: function ${JSON.stringify(fnName)} would run the reference interpreter instead of generated code for ${describeFallbacks(refused)}; fallback is "error" (the K.function option or THEANINE_FALLBACK=error)`,
      );
      throw withBuiltBy(e, refused.find((f) => f.origin !== undefined)?.origin); // the user's call behind the first refused step
    }
    return; // the rest was accepted by name
  }
  if (state.warned) return;
  state.warned = true;
  warn(`theanine: ${what} (set fallback "error" or THEANINE_FALLBACK=error to make this an error)`);
}
