// Index-set splitting of a loop kernel's innermost loop: where selects choose by comparing that
// loop's index with constants (the adjoint of a slice or a concatenation writes each column range
// from another source: an LSTM's four gate cotangents into one [batch, 4 units] row), the loop is
// cut at the points where a comparison can change, and each piece is the kernel with the index
// offset and every decided comparison folded. A piece then reads one source, without clamped
// indices or per-element tests. Halide's loop partitioning and LLVM's loop splitting are the
// anchors. Values are unchanged: only selects whose condition holds (or fails) on the whole piece
// are folded, to the branch the JavaScript would have taken.
import { ExprBuilder, exprOrder, type Expr, type ScalarOp } from '../kernel/expr.js';
import { iadd, iconst, ivar, newVar, range, substitute, type IExpr, type Var } from '../kernel/index-expr.js';
import type { LoopKernel } from '../kernel/ir.js';
import { mapIndices } from './collapse.js';

const COMPARE = new Set<ScalarOp>(['eq', 'ne', 'lt', 'le', 'gt', 'ge']);
const BOOLEAN = new Set<ScalarOp>([...COMPARE, 'and', 'or', 'not']);
/** Most pieces one loop is cut into. */
const MAX_PIECES = 8;

/** The affine form k*v + d of an index expression in v alone, else undefined. */
function affineIn(x: IExpr, v: Var): { k: number; d: number } | undefined {
  if (x.terms.length !== 1) return undefined;
  const [a, k] = x.terms[0]!;
  return a.kind === 'var' && a.v.id === v.id ? { k, d: x.c } : undefined;
}

/** An index operand's value range, a constant's, or undefined. */
function bounds(e: Expr): [number, number] | undefined {
  if (e.t === 'const') return [e.v, e.v];
  if (e.t === 'index') return range(e.i);
  return undefined;
}

/** The comparison's value where it is the same for every value in the operands' ranges (1 or 0), else undefined. */
function decided(op: ScalarOp, a: [number, number], b: [number, number]): number | undefined {
  const [alo, ahi] = a;
  const [blo, bhi] = b;
  switch (op) {
    case 'lt':
      return ahi < blo ? 1 : alo >= bhi ? 0 : undefined;
    case 'le':
      return ahi <= blo ? 1 : alo > bhi ? 0 : undefined;
    case 'gt':
      return alo > bhi ? 1 : ahi <= blo ? 0 : undefined;
    case 'ge':
      return alo >= bhi ? 1 : ahi < blo ? 0 : undefined;
    case 'eq':
      return alo === ahi && blo === bhi && alo === blo ? 1 : ahi < blo || alo > bhi ? 0 : undefined;
    case 'ne': {
      const eq = decided('eq', a, b);
      return eq === undefined ? undefined : 1 - eq;
    }
    default:
      return undefined;
  }
}

/** Rebuilds roots with decided comparisons, logic on them and selects folded; counts the folded selects. */
function fold(b: ExprBuilder, roots: readonly Expr[]): { roots: Expr[]; folded: number } {
  const memo = new Map<Expr, Expr>();
  let folded = 0;
  const isConst = (e: Expr, v?: number) => e.t === 'const' && (v === undefined || e.v === v);
  for (const e of exprOrder(roots)) {
    let out = e;
    if (e.t === 'op') {
      const args = e.args.map((a) => memo.get(a)!);
      const [x, y] = args;
      if (COMPARE.has(e.op)) {
        const bx = bounds(x!),
          by = bounds(y!);
        const d = bx !== undefined && by !== undefined ? decided(e.op, bx, by) : undefined;
        out = d !== undefined ? b.const(d) : b.op(e.op, ...args);
      } else if (e.op === 'and' && (isConst(x!, 0) || isConst(y!, 0))) out = b.const(0);
      else if (e.op === 'and' && isConst(x!, 1) && y!.t === 'op' && BOOLEAN.has(y!.op)) out = y!;
      else if (e.op === 'and' && isConst(y!, 1) && x!.t === 'op' && BOOLEAN.has(x!.op)) out = x!;
      else if (e.op === 'and' && isConst(x!, 1) && isConst(y!, 1)) out = b.const(1);
      else if (e.op === 'or' && (isConst(x!, 1) || isConst(y!, 1))) out = b.const(1);
      else if (e.op === 'or' && isConst(x!, 0) && isConst(y!, 0)) out = b.const(0);
      else if (e.op === 'not' && x!.t === 'const') out = b.const(x!.v === 0 ? 1 : 0);
      else if (e.op === 'select' && x!.t === 'const') {
        out = x!.v !== 0 ? args[1]! : args[2]!;
        folded++;
      } else out = b.op(e.op, ...args);
    } else if (e.t === 'call')
      out = b.call(
        e.fn,
        e.name,
        e.args.map((a) => memo.get(a)!),
      );
    else if (e.t === 'cast') out = b.cast(e.dtype, memo.get(e.x)!);
    else if (e.t === 'reduce') out = b.reduce(e.op, e.vars, memo.get(e.body)!);
    else if (e.t === 'row') out = b.row(memo.get(e.x)!, e.rows, e.op, e.shape);
    memo.set(e, out);
  }
  return { roots: roots.map((r) => memo.get(r)!), folded };
}

/**
 * The kernel's innermost output loop cut into pieces [start, end) (each a kernel over the same
 * outer loops and an inner loop of end - start), or undefined where no select of the kernel
 * chooses by that loop's index alone, or the pieces would be too many. Kernels of one loop are
 * left whole (the driver splits their one loop into rows).
 */
export function splitInnerLoop(k: LoopKernel): { start: number; kernel: LoopKernel }[] | undefined {
  if (k.vars.length < 2 || k.stores.some((s) => s.dyn !== undefined || s.accumulate === true)) return undefined;
  const v = k.vars[k.vars.length - 1]!;
  // The pieces run one after another over all rows: a kernel that reads what it stores (a recursion
  // along an axis, such as the CTC loss's alpha) depends on the original order, so it stays whole.
  const order = exprOrder(k.stores.map((s) => s.value));
  const stored = new Set(k.stores.map((s) => s.buf));
  if (order.some((e) => e.t === 'load' && stored.has(e.buf))) return undefined;
  // The comparisons of an index affine in v with a constant, as functions of v.
  const tests: ((x: number) => boolean)[] = [];
  const candidates = new Set<number>();
  for (const e of order) {
    if (e.t !== 'op' || !COMPARE.has(e.op)) continue;
    const [l, r] = e.args as [Expr, Expr];
    const p = l.t === 'index' ? l : r;
    const q = l.t === 'index' ? r : l;
    if (p.t !== 'index' || q.t !== 'const') continue;
    const a = affineIn(p.i, v);
    if (a === undefined || a.k === 0) continue;
    const c = q.v;
    const cmp = (x: number, y: number) => {
      switch (e.op) {
        case 'lt':
          return x < y;
        case 'le':
          return x <= y;
        case 'gt':
          return x > y;
        case 'ge':
          return x >= y;
        case 'eq':
          return x === y;
        default:
          return x !== y;
      }
    };
    tests.push(p === l ? (x) => cmp(a.k * x + a.d, c) : (x) => cmp(c, a.k * x + a.d));
    // k v + d meets c - 1, c, c + 1 near these: the only places a comparison with c can change
    for (const t of [c - 1, c, c + 1])
      for (const x of [Math.floor((t - a.d) / a.k), Math.floor((t - a.d) / a.k) + 1])
        if (x > 0 && x < v.size) candidates.add(x);
  }
  // Cuts where some comparison differs between the last index before and the first after.
  const cuts = [...candidates].filter((x) => tests.some((t) => t(x - 1) !== t(x)));
  if (cuts.length === 0 || cuts.length + 1 > MAX_PIECES) return undefined;
  const ends = [0, ...cuts.sort((p, q) => p - q), v.size];
  const b = new ExprBuilder(() => 'float64');
  const pieces: { start: number; kernel: LoopKernel }[] = [];
  let folded = 0;
  for (let i = 0; i + 1 < ends.length; i++) {
    const [start, end] = [ends[i]!, ends[i + 1]!];
    const w = newVar(end - start);
    const f = (x: IExpr) => substitute(x, (u) => (u.id === v.id ? iadd(ivar(w), iconst(start)) : undefined));
    const values = mapIndices(
      b,
      k.stores.map((s) => s.value),
      f,
      (vs) => vs,
    );
    const r = fold(b, values);
    folded += r.folded;
    pieces.push({
      start,
      kernel: {
        ...k,
        vars: [...k.vars.slice(0, -1), w],
        stores: k.stores.map((s, j) => ({ ...s, index: f(s.index), value: r.roots[j]! })),
      },
    });
  }
  return folded > 0 ? pieces : undefined;
}
