// Merging adjacent loops: two nested loops (outer v, inner w of size n) become one loop of
// size |v|*n when every index in the kernel uses them as coef*n*v + coef*w, i.e. the pair is
// contiguous in every buffer it touches. An elementwise kernel over contiguous arrays becomes
// a single flat loop; a bias add over (batch, features) keeps its two loops.
import { ExprBuilder, exprOrder, type Expr } from '../kernel/expr.js';
import { iconst, ivar, newVar, substitute, type IExpr, type Var } from '../kernel/index-expr.js';
import type { LoopKernel, Store } from '../kernel/ir.js';

/** Every index expression of a kernel's stores and loads. */
function indices(roots: readonly Expr[], extra: readonly IExpr[]): IExpr[] {
  const out = [...extra];
  for (const e of exprOrder(roots)) {
    if (e.t === 'load') out.push(e.index);
    else if (e.t === 'index') out.push(e.i);
  }
  return out;
}

function mergeable(outer: Var, inner: Var, idx: readonly IExpr[]): boolean {
  return idx.every(
    (x) => !x.nonAffineIn(outer) && !x.nonAffineIn(inner) && x.coef(outer) === x.coef(inner) * inner.size,
  );
}

/** Rebuilds an expression with every index rewritten and reduction variable lists renamed. */
export function mapIndices(
  b: ExprBuilder,
  roots: readonly Expr[],
  f: (x: IExpr) => IExpr,
  vars: (vs: readonly Var[]) => readonly Var[],
): Expr[] {
  const memo = new Map<Expr, Expr>();
  for (const e of exprOrder(roots)) {
    let out: Expr;
    switch (e.t) {
      case 'load':
        out = b.load(
          e.buf,
          f(e.index),
          e.dyn !== undefined ? { row: memo.get(e.dyn.row)!, stride: e.dyn.stride } : undefined,
        );
        break;
      case 'row':
        out = b.row(memo.get(e.x)!, e.rows, e.op, e.shape);
        break;
      case 'index':
        out = b.index(f(e.i));
        break;
      case 'op':
        out = b.op(e.op, ...e.args.map((a) => memo.get(a)!));
        break;
      case 'call':
        out = b.call(
          e.fn,
          e.name,
          e.args.map((a) => memo.get(a)!),
        );
        break;
      case 'cast':
        out = b.cast(e.dtype, memo.get(e.x)!);
        break;
      case 'reduce':
        out = b.reduce(e.op, vars(e.vars), memo.get(e.body)!);
        break;
      default:
        out = e;
    }
    memo.set(e, out);
  }
  return roots.map((r) => memo.get(r)!);
}

/** Stores with every index rewritten (values, and the row expressions of scattering stores). */
function mapStores(
  b: ExprBuilder,
  stores: readonly Store[],
  f: (x: IExpr) => IExpr,
  vars: (vs: readonly Var[]) => readonly Var[],
): Store[] {
  const rows = stores.flatMap((s) => (s.dyn !== undefined ? [s.dyn.row] : []));
  const mapped = mapIndices(b, [...stores.map((s) => s.value), ...rows], f, vars);
  let r = stores.length;
  return stores.map((s, j) => ({
    ...s,
    index: f(s.index),
    value: mapped[j]!,
    ...(s.dyn !== undefined ? { dyn: { row: mapped[r++]!, stride: s.dyn.stride } } : {}),
  }));
}

/** Merges as many adjacent loop pairs as the indices allow, output loops and each reduction's loops. */
export function collapseLoopKernel(k: LoopKernel, b: ExprBuilder): LoopKernel {
  let stores = k.stores;
  // Loops of one iteration are no loops: their variable is 0.
  const ones = k.vars.filter((v) => v.size === 1);
  if (ones.length > 0) {
    const sub = (x: IExpr) => substitute(x, (u) => (ones.some((o) => o.id === u.id) ? iconst(0) : undefined));
    stores = mapStores(b, stores, sub, (vs) => vs);
  }
  let vars = k.vars.filter((v) => v.size !== 1);
  const redVars = new Map<string, Var[]>();
  const mergeAll = (list: Var[], key: string | undefined): Var[] => {
    let changed = true;
    while (changed) {
      changed = false;
      const idx = indices(
        stores.flatMap((s) => (s.dyn !== undefined ? [s.value, s.dyn.row] : [s.value])),
        stores.map((s) => s.index),
      );
      for (let i = list.length - 2; i >= 0; i--) {
        const [v, w] = [list[i]!, list[i + 1]!];
        if (!mergeable(v, w, idx)) continue;
        const m = newVar(v.size * w.size);
        const sub = (x: IExpr) =>
          substitute(x, (u) => (u.id === v.id ? iconst(0) : u.id === w.id ? ivar(m) : undefined));
        list = [...list.slice(0, i), m, ...list.slice(i + 2)];
        const rename = (vs: readonly Var[]) => {
          if (key === undefined || !vs.some((u) => u.id === v.id)) return vs;
          return vs.flatMap((u) => (u.id === v.id ? [m] : u.id === w.id ? [] : [u]));
        };
        stores = mapStores(b, stores, sub, rename);
        if (key !== undefined) redVars.set(key, list);
        changed = true;
        break;
      }
    }
    return list;
  };
  vars = mergeAll(vars, undefined);
  // Reductions: each one's own loops, found again after every rewrite (the expressions are rebuilt).
  for (let again = true; again; ) {
    again = false;
    for (const e of exprOrder(stores.map((s) => s.value))) {
      if (e.t !== 'reduce' || e.vars.length < 2) continue;
      const before = stores;
      mergeAll([...e.vars], `r${e.id}`);
      if (stores !== before) {
        again = true;
        break;
      }
    }
  }
  return { ...k, vars, stores };
}
