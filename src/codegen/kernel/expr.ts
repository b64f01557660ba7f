// The scalar side of the kernel IR: an expression per output element, built from loads
// through index expressions, constants, scalar ops, opaque scalar functions, dtype casts and
// reductions (an expression that folds its body over loop variables of its own). Expressions
// are interned per kernel, so a subexpression used twice is one object and renderers give it
// one temporary. The op names are target-neutral: the elementwise rows (src/ir/ops/elementwise.ts)
// name theirs with their JavaScript, which src/codegen/cpu spells and the gpu overrides.
import { coerce, type DType } from '../../ir/dtype.js';
import { rowsSpelledIn, type ElementwiseOp, type KernelOp } from '../../ir/ops/elementwise.js';
import { reductionRows, type KernelFold, type ReductionOp } from '../../ir/ops/reduce.js';
import type { IExpr, Var } from './index-expr.js';

export type ScalarOp =
  | KernelOp // an elementwise op's scalar op, named by its row
  | 'select' // select(c, a, b): a where c is nonzero
  | 'idiv'
  | 'imod'; // floor division / modulo of non-negative integers (index arithmetic)

/** The elementwise row whose scalar op each kernel op is. */
export const KERNEL_ROWS: ReadonlyMap<ScalarOp, ElementwiseOp> = new Map(
  rowsSpelledIn('kernel').map((r) => [r.name as KernelOp, r.row]),
);

/** Folds of a reduction, named by their rows (src/ir/ops/reduce.ts): the rows that are their own kernel fold. */
export type ReduceOp = KernelFold;

/** The reduction row that spells each fold (its identity, its fold statements). */
export const FOLD_ROWS: ReadonlyMap<ReduceOp, ReductionOp> = new Map(
  reductionRows.filter((r) => r.spelling.kernel === r.name).map((r) => [r.name as ReduceOp, r]),
);

export type ScalarFn = (...xs: number[]) => number;

const exported = new WeakMap<ScalarFn, ScalarFn>();
/**
 * Gives a scalar function the self-contained function exportModule copies in its place (by source
 * text): a library function that throws the library's error classes exports as one that throws a
 * built-in class with the same words, as the row check does.
 */
export function exportAs(fn: ScalarFn, standalone: ScalarFn): void {
  exported.set(fn, standalone);
}
/** The function exportModule copies for `fn`. */
export function exportedFn(fn: ScalarFn): ScalarFn {
  return exported.get(fn) ?? fn;
}

interface Base {
  readonly id: number;
}
export type Expr = Base &
  (
    | { readonly t: 'const'; readonly v: number }
    /**
     * A read of buf[index + row * stride]; `dyn` (gather-like ops) adds a row number that is a value
     * read at run time, as a checked 'row' expression. Without `dyn` the index is pure loop arithmetic.
     */
    | { readonly t: 'load'; readonly buf: number; readonly index: IExpr; readonly dyn?: Dyn }
    /**
     * A row number read from data: x, or x + rows when x is negative (NumPy's and Theano's rule);
     * outside [-rows, rows) it is an error naming `op` (cpu: thrown in the kernel; gpu: checked on the host).
     */
    | { readonly t: 'row'; readonly x: Expr; readonly rows: number; readonly op: string; readonly shape: string }
    | { readonly t: 'op'; readonly op: ScalarOp; readonly args: readonly Expr[] }
    /** An opaque scalar function (an elementwise op's reference `scalar`, for ops without a template). */
    | { readonly t: 'call'; readonly fn: ScalarFn; readonly name: string; readonly args: readonly Expr[] }
    /** Round to what a store of `dtype` keeps (Math.fround for float32, wrap for ints...). */
    | { readonly t: 'cast'; readonly dtype: DType; readonly x: Expr }
    | { readonly t: 'reduce'; readonly op: ReduceOp; readonly vars: readonly Var[]; readonly body: Expr }
    /** The accumulated dot product, inside a matmul epilogue. */
    | { readonly t: 'acc' }
    /** An index expression's value as a number (iota-like ops, masks). */
    | { readonly t: 'index'; readonly i: IExpr }
    /** A loop variable (made by scheduling, from index expressions). */
    | { readonly t: 'var'; readonly v: Var }
  );

/** The data-dependent part of an index: a 'row' expression times a stride. */
export interface Dyn {
  readonly row: Expr;
  readonly stride: number;
}

/** Each fold's initial value (its row's identity). */
export const REDUCE_INIT = Object.fromEntries([...FOLD_ROWS].map(([op, r]) => [op, r.identity])) as Record<
  ReduceOp,
  number
>;

/** Ops whose result is 0 or 1: exact in every dtype. */
const BOOLEAN_OPS: ReadonlySet<ScalarOp> = new Set(['eq', 'ne', 'gt', 'ge', 'lt', 'le', 'and', 'or', 'not', 'isnan']);
/** Ops that map values of a float dtype to values of that dtype (no rounding needed). */
const FLOAT_CLOSED: ReadonlySet<ScalarOp> = new Set([
  'neg',
  'abs',
  'max',
  'min',
  'floor',
  'ceil',
  'round',
  'sign',
  'select',
]);

const isFloatDT = (d: DType) => d === 'float16' || d === 'float32' || d === 'float64';

/** Interning builder for one kernel's expressions. */
export class ExprBuilder {
  private readonly table = new Map<string, Expr>();
  private readonly exact = new Map<Expr, DType>();
  /** Ids are unique across builders, so expressions of two builders never share an intern key. */
  private static nextId = 0;
  /** Dtype of each buffer, so loads know what they hold. */
  constructor(private readonly bufDType: (buf: number) => DType) {}

  private intern<E extends Expr>(key: string, make: (id: number) => E): E {
    const hit = this.table.get(key);
    if (hit !== undefined) return hit as E;
    const e = make(ExprBuilder.nextId++);
    this.table.set(key, e);
    return e;
  }

  const(v: number): Expr {
    return this.intern(`c${Object.is(v, -0) ? '-0' : String(v)}`, (id) => ({ id, t: 'const', v }));
  }
  load(buf: number, index: IExpr, dyn?: Dyn): Expr {
    const key = dyn === undefined ? `L${buf}[${index.key}]` : `L${buf}[${index.key}+${dyn.row.id}*${dyn.stride}]`;
    const e = this.intern(key, (id) =>
      dyn === undefined ? { id, t: 'load', buf, index } : { id, t: 'load', buf, index, dyn },
    );
    this.exact.set(e, this.bufDType(buf));
    return e;
  }
  op(op: ScalarOp, ...args: Expr[]): Expr {
    return this.intern(`${op}(${args.map((a) => a.id).join(',')})`, (id) => ({ id, t: 'op', op, args }));
  }
  private fnIds = new Map<ScalarFn, number>();
  call(fn: ScalarFn, name: string, args: readonly Expr[]): Expr {
    let f = this.fnIds.get(fn);
    if (f === undefined) {
      f = this.fnIds.size;
      this.fnIds.set(fn, f);
    }
    return this.intern(`F${f}(${args.map((a) => a.id).join(',')})`, (id) => ({ id, t: 'call', fn, name, args }));
  }
  reduce(op: ReduceOp, vars: readonly Var[], body: Expr): Expr {
    return this.intern(`R${op}[${vars.map((v) => v.id).join(',')}](${body.id})`, (id) => ({
      id,
      t: 'reduce',
      op,
      vars,
      body,
    }));
  }
  /** `shape`: the reference's shape as the error message gives it. */
  row(x: Expr, rows: number, op: string, shape: string): Expr {
    return this.intern(`W${rows}:${op}:${shape}(${x.id})`, (id) => ({ id, t: 'row', x, rows, op, shape }));
  }
  acc(): Expr {
    return this.intern('acc', (id) => ({ id, t: 'acc' }));
  }
  var(v: Var): Expr {
    return this.intern(`v${v.id}`, (id) => ({ id, t: 'var', v }));
  }
  index(i: IExpr): Expr {
    if (i.isConst) return this.const(i.c);
    return this.intern(`I(${i.key})`, (id) => ({ id, t: 'index', i }));
  }

  /** Whether `e`'s values are already values of `dtype` (so a cast would change nothing). */
  isExact(e: Expr, dtype: DType): boolean {
    if (dtype === 'float64') return true;
    const known = this.exact.get(e);
    if (known === dtype) return true;
    switch (e.t) {
      case 'const':
        return Object.is(coerce(dtype, e.v), e.v);
      case 'cast':
        return e.dtype === dtype;
      case 'op':
        if (BOOLEAN_OPS.has(e.op)) return true;
        if (isFloatDT(dtype) && FLOAT_CLOSED.has(e.op))
          return e.args.every((a, i) => (e.op === 'select' && i === 0) || this.isExact(a, dtype));
        return false;
      case 'load':
        return known !== undefined && VALUES_FIT[known].includes(dtype);
      // The max or min of values of a dtype is one of them (NaN included).
      case 'reduce':
        return (e.op === 'max' || e.op === 'min') && this.isExact(e.body, dtype);
      default:
        return false;
    }
  }

  /** Rounds `x` as a store of `dtype` would, unless it is exact already. */
  cast(dtype: DType, x: Expr): Expr {
    if (this.isExact(x, dtype)) return x;
    if (x.t === 'const') return this.const(coerce(dtype, x.v));
    const e = this.intern(`C${dtype}(${x.id})`, (id) => ({ id, t: 'cast', dtype, x }));
    this.exact.set(e, dtype);
    return e;
  }
}

/** Dtypes that hold every value of a dtype exactly (float64 holds all, and is handled first). */
const VALUES_FIT: Record<DType, readonly DType[]> = {
  bool: ['bool', 'uint8', 'int8', 'int16', 'int32', 'int64', 'float16', 'float32'],
  uint8: ['uint8', 'int16', 'int32', 'int64', 'float16', 'float32'],
  int8: ['int8', 'int16', 'int32', 'int64', 'float16', 'float32'],
  int16: ['int16', 'int32', 'int64', 'float32'],
  int32: ['int32', 'int64'],
  int64: ['int64'],
  float16: ['float16', 'float32'],
  float32: ['float32'],
  float64: [],
};

/**
 * Every node reachable from `roots`, children first (reduction bodies included): a depth-first
 * post-order over `kids`, from the first root (or from the last, `fromLast`).
 */
export function exprOrder(
  roots: readonly Expr[],
  kids: (e: Expr) => readonly Expr[] = children,
  fromLast = false,
): Expr[] {
  const seen = new Set<Expr>();
  const out: Expr[] = [];
  const stack: [Expr, number][] = roots.map((r) => [r, 0]);
  if (!fromLast) stack.reverse();
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    const [e, i] = top;
    if (i === 0 && seen.has(e)) {
      stack.pop();
      continue;
    }
    const ks = kids(e);
    if (i < ks.length) {
      top[1]++;
      if (!seen.has(ks[i]!)) stack.push([ks[i]!, 0]);
      continue;
    }
    stack.pop();
    if (!seen.has(e)) {
      seen.add(e);
      out.push(e);
    }
  }
  return out;
}

export function children(e: Expr): readonly Expr[] {
  switch (e.t) {
    case 'op':
    case 'call':
      return e.args;
    case 'cast':
      return [e.x];
    case 'reduce':
      return [e.body];
    case 'load':
      return e.dyn !== undefined ? [e.dyn.row] : [];
    case 'row':
      return [e.x];
    default:
      return [];
  }
}
