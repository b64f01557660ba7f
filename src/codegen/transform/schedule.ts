// Scheduling a loop kernel: every expression is placed in the outermost loop where all the
// variables it reads are bound (loop-invariant code motion), so a broadcast operand, the max
// of a softmax row, or the outer part of an index is computed once per iteration of the loop
// that needs it, not once per element. Index expressions become integer expression trees whose
// partial sums follow the loop nesting. Target-neutral: renderers walk the resulting scopes.
import { ExprBuilder, children, exprOrder, type Dyn, type Expr } from '../kernel/expr.js';
import { range, type IExpr, type Var } from '../kernel/index-expr.js';
import type { Store } from '../kernel/ir.js';

export interface Scope {
  readonly depth: number;
  readonly parent: Scope | undefined;
  /** The loop variable this scope iterates (undefined for the kernel's top level). */
  readonly v: Var | undefined;
  /** Set on the scopes of a reduction's loops. */
  readonly reduce: Expr | undefined;
  /** In order: expressions to compute here, nested loops, reductions (whose loops follow). */
  readonly items: ScopeItem[];
}

export type ScopeItem = { readonly kind: 'expr'; readonly e: Expr } | { readonly kind: 'loop'; readonly scope: Scope };

export interface Schedule {
  readonly top: Scope;
  /** The innermost output scope, where stores happen. */
  readonly inner: Scope;
  readonly stores: readonly { readonly store: Store; readonly index: Expr; readonly value: Expr }[];
  /** Integer expression for a load's index (and for an 'index' expression's value). */
  readonly loadIndex: ReadonlyMap<Expr, Expr>;
  /** The variable an 'index' leaf stands for (a bare loop variable). */
  readonly varOf: ReadonlyMap<Expr, Var>;
  /** The first scope of each reduction's loops, and its innermost one (where the fold happens). */
  readonly reduceLoops: ReadonlyMap<Expr, { first: Scope; last: Scope }>;
  /** How many times each expression is used (stores count). */
  readonly uses: ReadonlyMap<Expr, number>;
  readonly scopeOf: ReadonlyMap<Expr, Scope>;
}

export function schedule(vars: readonly Var[], stores: readonly Store[], b: ExprBuilder): Schedule {
  // Variable ranks: output loops in order, then reductions' loops in nesting order (top-down).
  const rank = new Map<number, number>();
  vars.forEach((v, i) => rank.set(v.id, i));
  let nextRank = vars.length;
  const rankReduces = (roots: readonly Expr[]) => {
    const seen = new Set<Expr>();
    const walk = (e: Expr) => {
      if (seen.has(e)) return;
      seen.add(e);
      if (e.t === 'reduce') for (const v of e.vars) rank.set(v.id, nextRank++);
      for (const c of children(e)) walk(c);
    };
    roots.forEach(walk);
  };
  rankReduces(stores.map((s) => s.value));

  // Index expressions -> integer expression trees, terms ordered by loop depth so partial sums hoist.
  const varOf = new Map<Expr, Var>();
  const leafOf = (v: Var): Expr => {
    const e = b.var(v);
    varOf.set(e, v);
    return e;
  };
  const conv = new Map<string, Expr>();
  const toInt = (x: IExpr): Expr => {
    const hit = conv.get(x.key);
    if (hit !== undefined) return hit;
    const terms = x.terms
      .map(([a, k]) => {
        let base: Expr;
        let r: number;
        if (a.kind === 'var') {
          base = leafOf(a.v);
          r = rank.get(a.v.id) ?? 0;
        } else {
          const inner = toInt(a.x);
          const [alo] = range(a.x);
          if (a.kind === 'clamp') base = b.op('min', b.op('max', inner, b.const(a.lo)), b.const(a.hi));
          else if (alo >= 0) base = b.op(a.kind === 'div' ? 'idiv' : 'imod', inner, b.const(a.d));
          else
            base =
              a.kind === 'div' ? b.op('floor', b.op('div', inner, b.const(a.d))) : b.op('mod', inner, b.const(a.d));
          r = Math.max(-1, ...[...atomVars(a.x)].map((id) => rank.get(id) ?? 0));
        }
        return { e: k === 1 ? base : b.op('mul', base, b.const(k)), r };
      })
      .sort((p, q) => p.r - q.r);
    let acc: Expr | undefined = x.c !== 0 || terms.length === 0 ? b.const(x.c) : undefined;
    for (const t of terms) acc = acc === undefined ? t.e : b.op('add', acc, t.e);
    conv.set(x.key, acc!);
    return acc!;
  };
  const loadIndex = new Map<Expr, Expr>();
  // A data-dependent row (gather, scatter_add_rows) adds row * stride to the affine index.
  const withDyn = (ix: Expr, dyn: Dyn | undefined): Expr =>
    dyn === undefined ? ix : b.op('add', ix, dyn.stride === 1 ? dyn.row : b.op('mul', dyn.row, b.const(dyn.stride)));
  const storeExprs = stores.map((s) => ({ store: s, index: withDyn(toInt(s.index), s.dyn), value: s.value }));
  // Dependencies (with load indices and index leaves expanded).
  const kids = (e: Expr): Expr[] => {
    if (e.t === 'load') {
      let ix = loadIndex.get(e);
      if (ix === undefined) {
        ix = withDyn(toInt(e.index), e.dyn);
        loadIndex.set(e, ix);
      }
      return [ix];
    }
    if (e.t === 'index') {
      let ix = loadIndex.get(e);
      if (ix === undefined) {
        ix = toInt(e.i);
        loadIndex.set(e, ix);
      }
      return [ix];
    }
    return [...children(e)];
  };
  const roots = storeExprs.flatMap((s) => [s.index, s.value]);
  const kidCache = new Map<Expr, Expr[]>();
  const kidsOf = (e: Expr) => {
    let k = kidCache.get(e);
    if (k === undefined) {
      k = kids(e);
      kidCache.set(e, k);
    }
    return k;
  };
  const order = exprOrder(roots, kidsOf, true);
  const uses = new Map<Expr, number>();
  for (const e of order) for (const k of kids(e)) uses.set(k, (uses.get(k) ?? 0) + 1);
  for (const r of roots) uses.set(r, (uses.get(r) ?? 0) + 1);

  // Free variables, bottom-up.
  const fv = new Map<Expr, Set<number>>();
  for (const e of order) {
    const s = new Set<number>();
    const v = varOf.get(e);
    if (v !== undefined) s.add(v.id);
    for (const k of kids(e)) for (const id of fv.get(k)!) s.add(id);
    if (e.t === 'reduce') for (const rv of e.vars) s.delete(rv.id);
    fv.set(e, s);
  }

  // Scopes: the output loops, then each reduction's loops under the scope it is placed in.
  const top: Scope = { depth: 0, parent: undefined, v: undefined, reduce: undefined, items: [] };
  const varScope = new Map<number, Scope>();
  let cur = top;
  for (const v of vars) {
    const s: Scope = { depth: cur.depth + 1, parent: cur, v, reduce: undefined, items: [] };
    cur.items.push({ kind: 'loop', scope: s });
    varScope.set(v.id, s);
    cur = s;
  }
  const inner = cur;
  const deepest = (ids: Iterable<number>): Scope => {
    let best = top;
    for (const id of ids) {
      const s = varScope.get(id)!;
      if (s.depth > best.depth) best = s;
    }
    return best;
  };
  const reduceLoops = new Map<Expr, { first: Scope; last: Scope }>();
  const scopeOf = new Map<Expr, Scope>();
  // Top-down over reductions (reverse of bottom-up order), so enclosing reductions are placed first.
  for (let i = order.length - 1; i >= 0; i--) {
    const e = order[i]!;
    if (e.t !== 'reduce') continue;
    const at = deepest(fv.get(e)!);
    scopeOf.set(e, at);
    let s = at;
    let first: Scope | undefined;
    for (const v of e.vars) {
      const n: Scope = { depth: s.depth + 1, parent: s, v, reduce: e, items: [] };
      if (first === undefined) first = n;
      else s.items.push({ kind: 'loop', scope: n });
      varScope.set(v.id, n);
      s = n;
    }
    reduceLoops.set(e, { first: first ?? at, last: s });
  }
  for (const e of order) {
    if (varOf.has(e) || e.t === 'const') continue;
    const s = e.t === 'reduce' ? scopeOf.get(e)! : deepest(fv.get(e)!);
    scopeOf.set(e, s);
    // A reduction's loops are emitted where the reduction stands; its first loop is not an item of the scope.
    s.items.splice(firstLoopIndex(s), 0, { kind: 'expr', e });
  }
  return { top, inner, stores: storeExprs, loadIndex, varOf, reduceLoops, uses, scopeOf };
}

/** Expressions go before the scope's nested loop (the next output loop, or the reduction's next loop). */
function firstLoopIndex(s: Scope): number {
  const i = s.items.findIndex((it) => it.kind === 'loop');
  return i < 0 ? s.items.length : i;
}

function atomVars(x: IExpr): Set<number> {
  const out = new Set<number>();
  for (const [a] of x.terms) {
    if (a.kind === 'var') out.add(a.v.id);
    else for (const id of atomVars(a.x)) out.add(id);
  }
  return out;
}

export { exprOrder };
