// Walking a scheduled loop kernel's scopes (schedule.ts) into statements: the same walk for the
// gpu.js (gpu/render.ts) and WGSL (wgsl/render.ts) renderers, each with its own spelling.
import type { Expr } from '../kernel/expr.js';
import type { Schedule, Scope } from './schedule.js';

type Reduce = Expr & { t: 'reduce' };

/** How a renderer spells the statements of a scheduled kernel (each without its indentation). */
export interface ScopeSpelling {
  /** The declaration of an expression that is not a reduction, or undefined when it needs none. */
  line(e: Expr): string | undefined;
  /** The opening line of a loop of `size` iterations over the variable named `v` (closed by `}`). */
  loopHead(v: string, size: number): string;
  /** The declaration of a reduction's accumulator. */
  init(r: Reduce): string;
  /** One fold of a reduction's body into its accumulator. */
  fold(r: Reduce): string;
  /** The names declared inside a loop, out of scope after it. */
  forget(es: Iterable<Expr>): void;
}

/** Pushes the statements of schedule `s` onto `lines`; the loops of `outputVars` are the invocation's own coordinates, so their scopes stand inline. */
export function walkScopes(s: Schedule, outputVars: ReadonlySet<number>, sp: ScopeSpelling, lines: string[]): void {
  const emit = (scope: Scope, ind: string): void => {
    for (const it of scope.items) {
      if (it.kind === 'loop') {
        if (outputVars.has(it.scope.v!.id)) emit(it.scope, ind);
        else loop(it.scope, ind);
        continue;
      }
      const e = it.e;
      if (e.t === 'reduce') {
        reduce(e, ind);
        continue;
      }
      const l = sp.line(e);
      if (l !== undefined) lines.push(ind + l);
    }
    if (scope.reduce !== undefined && s.reduceLoops.get(scope.reduce)!.last === scope)
      lines.push(ind + sp.fold(scope.reduce as Reduce));
  };
  const loop = (scope: Scope, ind: string): void => {
    const inside = declaredIn(scope);
    lines.push(ind + sp.loopHead(`i${scope.v!.id}`, scope.v!.size));
    emit(scope, `${ind}  `);
    lines.push(`${ind}}`);
    sp.forget(inside);
  };
  const reduce = (r: Reduce, ind: string): void => {
    lines.push(ind + sp.init(r));
    const loops = s.reduceLoops.get(r)!;
    if (loops.first === s.scopeOf.get(r)) lines.push(ind + sp.fold(r));
    else loop(loops.first, ind);
  };
  emit(s.top, '');
}

/** Expressions placed in `scope` or the scopes inside it. */
function declaredIn(scope: Scope): Expr[] {
  return scope.items.flatMap((it) => (it.kind === 'loop' ? declaredIn(it.scope) : [it.e]));
}
