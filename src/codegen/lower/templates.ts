// Code templates, keyed by op name. The table is Partial on purpose: ops are added on other
// branches in parallel, and an op without a template still runs in a compiled function as an
// extern step that calls its reference `impl` (Theano's "Python-implemented op inside a
// compiled graph"). Templates are then added for the ops that matter for speed.
//
// A loop template gives an op's value at symbolic output coordinates from its inputs' values at
// whatever coordinates it needs: elementwise ops at the broadcast index, views at permuted or
// re-raveled indices, reductions inside a loop of their own. Fusion is then just composition.
import type { DType } from '../../ir/dtype.js';
import type { Attrs } from '../../ir/op.js';
import { getOp, type AttrsOf, type OpName } from '../../ir/registry.js';
import { reductionRows, type ArgAttrs, type ReduceAttrs, type ReductionName } from '../../ir/ops/reduce.js';
import type { Node } from '../../ir/node.js';
import { elementwiseOps, rowsSpelledIn, type KernelOp, type SpelledIn } from '../../ir/ops/elementwise.js';
import { dotAxisOfY } from '../../ir/ops/core.js';
import type { FuseKind } from '../../ir/fused.js';
import type { ExprBuilder, Expr, ReduceOp, ScalarFn, ScalarOp } from '../kernel/expr.js';
import type { IndirectA } from '../kernel/ir.js';
import { iconst, ivar, newVar, ravel, unravel, type IExpr, type Var } from '../kernel/index-expr.js';
import { broadcastCoords, shapeTemplates } from './templates-shape.js';

export { broadcastCoords };
import { adjointTemplates } from './templates-adjoint.js';
import { linalgTemplates } from './templates-linalg.js';
import { convAlternates, convTemplates, narrowGroups } from './templates-conv.js';
import { sizeOf } from '../../ir/ndarray.js';

/** What a template sees of a node: its attrs (typed by its op in the tables), concrete shapes and dtypes. */
export interface TemplateCtx<A = Attrs> {
  readonly b: ExprBuilder;
  readonly attrs: A;
  readonly inShapes: readonly (readonly number[])[];
  readonly inDTypes: readonly DType[];
  readonly outShape: readonly number[];
  readonly outDType: DType;
}

/** Value of input `input` at `coords` (in that input's own shape). */
export type At = (input: number, coords: readonly IExpr[]) => Expr;

export interface LoopTemplate<A = Attrs> {
  readonly kind: 'elementwise' | 'view' | 'reduction';
  expr(at: At, coords: readonly IExpr[], c: TemplateCtx<A>): Expr;
  /** Inputs read only for their shape (never loaded). */
  readonly shapeOnly?: (input: number) => boolean;
  /** Attrs this template handles (others run as an extern). */
  supports?(attrs: A): boolean;
}

export interface MatmulDims {
  readonly batch: number;
  readonly m: number;
  readonly n: number;
  readonly k: number;
}

/** A matmul: out[b, i, j] = sum_t A[b, i, t] * B[b, t, j], each given as coordinates of the op's inputs/output. */
export interface MatmulTemplate<A = Attrs> {
  readonly kind: 'matmul';
  /** Attrs this template handles (others run as an extern). */
  supports?(attrs: A): boolean;
  /** Inputs read only for their shape. */
  readonly shapeOnly?: (input: number) => boolean;
  /** Whether elementwise producers of the operands may be computed while packing (false: each element is read many times). */
  readonly prologue?: boolean;
  /** A's element when it is not a plain read of input 0 (a convolution's masked window). */
  aValue?(at: At, b: IExpr, i: IExpr, t: IExpr, c: TemplateCtx<A>): Expr;
  dims(c: TemplateCtx<A>): MatmulDims;
  /** A as cells of input 0 (a convolution's window, kernel.ts' IndirectA less where input 0 lives), where it is one; undefined otherwise. */
  indirect?(c: TemplateCtx<A>): Omit<IndirectA, 'buf' | 'offset'> | undefined;
  a(b: IExpr, i: IExpr, t: IExpr, c: TemplateCtx<A>): IExpr[];
  b(b: IExpr, t: IExpr, j: IExpr, c: TemplateCtx<A>): IExpr[];
  out(b: IExpr, i: IExpr, j: IExpr, c: TemplateCtx<A>): IExpr[];
}

export type OpTemplate<A = Attrs> = LoopTemplate<A> | MatmulTemplate<A>;

/** Templates for some built-in ops, each typed by its op's attrs (as TfTableFor and GradTableFor are). */
export type TemplateTableFor<K extends OpName> = { readonly [P in K]?: OpTemplate<AttrsOf<P>> };

/** An elementwise op from a function of its broadcast input values. */
function ew(f: (args: Expr[], c: TemplateCtx) => Expr): LoopTemplate {
  return {
    kind: 'elementwise',
    expr: (at, coords, c) =>
      f(
        c.inShapes.map((s, i) => at(i, broadcastCoords(coords, s, c.outShape))),
        c,
      ),
  };
}
const unary = (op: ScalarOp) => ew(([a], c) => c.b.op(op, a!));
const binary = (op: ScalarOp) => ew(([a, x], c) => c.b.op(op, a!, x!));
/** Same numbers as the reference: the op's own scalar function, called per element. */
const scalarCall = (name: string, fn: ScalarFn) => ew((args, c) => c.b.call(fn, name, args));

/** Every reduction row's template: its kernel fold (divided by the count for a mean). */
const reductionTemplates = Object.fromEntries(
  reductionRows.map((r) => [r.name, reduction(r.spelling.kernel as ReduceOp, r.spelling.mean === true)]),
) as TemplateTableFor<ReductionName>;

function reduction(op: ReduceOp, mean = false): LoopTemplate<ReduceAttrs> {
  return {
    kind: 'reduction',
    expr(at, coords, c) {
      const axes = c.attrs.axes;
      const keep = c.attrs.keepdims;
      const shape = c.inShapes[0]!;
      const vars = axes.map((a) => newVar(shape[a]!));
      const inCoords: IExpr[] = [];
      let j = 0;
      shape.forEach((_, d) => {
        const r = axes.indexOf(d);
        if (r >= 0) {
          inCoords.push(ivar(vars[r]!));
          if (keep) j++;
        } else inCoords.push(coords[j++]!);
      });
      const body = c.b.cast(c.inDTypes[0]!, at(0, inCoords));
      const red = c.b.reduce(op, vars, body);
      const count = axes.reduce((p, a) => p * shape[a]!, 1);
      return mean ? c.b.op('div', red, c.b.const(count)) : red;
    },
  };
}

/**
 * A fresh reduction variable over axis `axis` of `shape` (a reduced axis the output does not
 * keep), and the input coordinates it reads: `coords` with the variable put in at `axis`.
 */
function alongAxis(coords: readonly IExpr[], shape: readonly number[], axis: number): { v: Var; co: IExpr[] } {
  const v = newVar(shape[axis]!);
  return { v, co: [...coords.slice(0, axis), ivar(v), ...coords.slice(axis)] };
}

/**
 * argmax/argmin along one axis: the first index holding the extremum, NaN counting as the
 * extremum (the reference's rule), as two reductions: m = max (or min), then the least index k
 * with x[k] == m, or with x[k] NaN when m is NaN.
 */
function argExtreme(op: 'max' | 'min'): LoopTemplate<ArgAttrs> {
  return {
    kind: 'reduction',
    expr(at, coords, c) {
      const b = c.b;
      const read = () => {
        const { v, co } = alongAxis(coords, c.inShapes[0]!, c.attrs.axis);
        return { v, x: b.cast(c.inDTypes[0]!, at(0, co)) };
      };
      const r1 = read();
      const m = b.reduce(op, [r1.v], r1.x);
      const r2 = read();
      const hit = b.op('or', b.op('eq', r2.x, m), b.op('and', b.op('isnan', m), b.op('isnan', r2.x)));
      return b.reduce('min', [r2.v], b.op('select', hit, b.index(ivar(r2.v)), b.const(Infinity)));
    },
  };
}

const view = <A>(coords: (out: readonly IExpr[], c: TemplateCtx<A>) => IExpr[]): LoopTemplate<A> => ({
  kind: 'view',
  expr: (at, out, c) => at(0, coords(out, c)),
});

const dotTemplate: MatmulTemplate = {
  kind: 'matmul',
  dims(c) {
    const [xs, ys] = c.inShapes as [number[], number[]];
    const k = xs[xs.length - 1]!;
    const m = sizeOf(xs.slice(0, -1));
    const n = ys.filter((_, i) => i !== dotAxisOfY(ys.length)).reduce((p, d) => p * d, 1);
    return { batch: 1, m, n, k };
  },
  a(_b, i, t, c) {
    const xs = c.inShapes[0]!;
    return [...unravel(i, xs.slice(0, -1)), t];
  },
  b(_b, t, j, c) {
    const ys = c.inShapes[1]!;
    const ya = dotAxisOfY(ys.length);
    const jc = unravel(
      j,
      ys.filter((_, i) => i !== ya),
    );
    return [...jc.slice(0, ya), t, ...jc.slice(ya)];
  },
  out(_b, i, j, c) {
    const xs = c.inShapes[0]!;
    const ys = c.inShapes[1]!;
    return [
      ...unravel(i, xs.slice(0, -1)),
      ...unravel(
        j,
        ys.filter((_, k) => k !== dotAxisOfY(ys.length)),
      ),
    ];
  },
};

/** The row kernel of softmax_cross_entropy: three reductions over the axis, the max hoisted by the renderer. */
const softmaxXent: LoopTemplate<AttrsOf<'softmax_cross_entropy'>> = {
  kind: 'reduction',
  expr(at, coords, c) {
    const b = c.b;
    const mk = () => alongAxis(coords, c.inShapes[0]!, c.attrs.axis);
    const x = (co: IExpr[]) => b.cast(c.inDTypes[0]!, at(0, co));
    const t = (co: IExpr[]) => b.cast(c.inDTypes[1]!, at(1, co));
    const r1 = mk();
    const m = b.reduce('max', [r1.v], x(r1.co));
    const r2 = mk();
    const ls = b.op('log', b.reduce('sum', [r2.v], b.op('exp', b.op('sub', x(r2.co), m))));
    const r3 = mk();
    const terms = b.op('mul', t(r3.co), b.op('sub', b.op('sub', x(r3.co), m), ls));
    return b.op('neg', b.reduce('sum', [r3.v], terms));
  },
};

/**
 * in_top_k per row i: the target's score v = max_j (j == t[i] ? p[i, j] : -inf) (a NaN there
 * stays NaN; a target outside [0, classes) gives -inf and no match), then the count of classes
 * scoring strictly higher; true when the target is in range, v is not NaN and fewer than k are
 * higher (the reference's rule: ties at the boundary are in the top k).
 */
const inTopK: LoopTemplate<AttrsOf<'in_top_k'>> = {
  kind: 'reduction',
  expr(at, [i], c) {
    const b = c.b;
    const k = c.attrs.k;
    const classes = c.inShapes[0]![1]!;
    if (k < 1 || classes === 0) return b.const(0);
    const target = at(1, [i!]);
    const score = (j: IExpr) => b.cast(c.inDTypes[0]!, at(0, [i!, j]));
    const j1 = newVar(classes);
    const v = b.reduce(
      'max',
      [j1],
      b.op('select', b.op('eq', b.index(ivar(j1)), target), score(ivar(j1)), b.const(-Infinity)),
    );
    const j2 = newVar(classes);
    const higher = b.reduce('sum', [j2], b.op('gt', score(ivar(j2)), v));
    const inRange = b.op('and', b.op('ge', target, b.const(0)), b.op('lt', target, b.const(classes)));
    return b.op('and', b.op('and', inRange, b.op('not', b.op('isnan', v))), b.op('lt', higher, b.const(k)));
  },
};

/**
 * The elementwise ops whose row names a kernel-IR scalar op (src/ir/ops/elementwise.ts): their
 * templates apply it to the broadcast inputs.
 */
function scalarOpTemplates(): { -readonly [K in SpelledIn<'kernel'>]?: LoopTemplate } {
  const out: { -readonly [K in SpelledIn<'kernel'>]?: LoopTemplate } = {};
  for (const { op, name, row } of rowsSpelledIn('kernel'))
    out[op] = row.arity === 1 ? unary(name as KernelOp) : binary(name as KernelOp);
  return out;
}

const ops = elementwiseOps;

export const templates: TemplateTableFor<OpName> = {
  ...scalarOpTemplates(),
  square: ew(([a], c) => c.b.op('mul', a!, a!)),
  sigmoid: scalarCall('sigmoid', ops.sigmoid.scalar),
  softplus: scalarCall('softplus', ops.softplus.scalar),
  erf: scalarCall('erf', ops.erf.scalar),
  where: ew(([cond, a, x], c) => c.b.op('select', cond!, a!, x!)),
  cast: ew(([a]) => a!), // the cast itself is the store-rounding every node gets
  identity: ew(([a]) => a!),
  fill_like: { kind: 'elementwise', expr: (_at, _co, c) => c.b.const(c.attrs.value), shapeOnly: () => true },
  transpose: view((out, c) => {
    const perm = c.attrs.perm;
    const inC = new Array<IExpr>(perm.length);
    perm.forEach((p, k) => {
      inC[p] = out[k]!;
    });
    return inC;
  }),
  reshape: view((out, c) => unravel(ravel(out, c.outShape), c.inShapes[0]!)),
  index: view((out, c) => {
    const d = c.inShapes[0]![0]!;
    const i = c.attrs.index;
    return [iconst(i < 0 ? i + d : i), ...out];
  }),
  ...reductionTemplates,
  argmax: argExtreme('max'),
  argmin: argExtreme('min'),
  dot: dotTemplate,
  softmax_cross_entropy: softmaxXent,
  in_top_k: inTopK,
  ...shapeTemplates,
  ...adjointTemplates,
  ...linalgTemplates,
  ...convTemplates,
};

const scalarCalls = new Map<string, LoopTemplate>();

/** Templates registered at run time: user ops with a cpu expression (src/codegen/lower/user.ts). */
const registered = new Map<string, OpTemplate>();
export function registerTemplate(op: string, t: OpTemplate): void {
  registered.set(op, t);
}

/**
 * A node's template: its op's entry (when it supports the node's attrs), or for elementwise ops
 * defined with a scalar function (src/ir/ops/elementwise.ts' `ew`), a call of that function.
 */
export function templateOf(
  n: Pick<Node, 'op' | 'attrs'> & { readonly inputs?: Node['inputs'] },
): OpTemplate | undefined {
  const t = (templates as Partial<Record<string, OpTemplate>>)[n.op] ?? registered.get(n.op);
  if (t !== undefined) {
    const alt = (convAlternates as Partial<Record<string, OpTemplate>>)[n.op];
    if (alt !== undefined && narrowGroups(n)) return alt;
    return t.supports !== undefined && !t.supports(n.attrs) ? undefined : t;
  }
  const def = getOp(n.op) as { kind: string; scalar?: unknown; impure?: boolean };
  if (def.kind === 'elementwise' && typeof def.scalar === 'function' && def.impure !== true) {
    let c = scalarCalls.get(n.op);
    if (c === undefined) {
      c = scalarCall(n.op, def.scalar as ScalarFn);
      scalarCalls.set(n.op, c);
    }
    return c;
  }
  return undefined;
}

/** What the fusion pass may do with a node on the cpu target. */
export function classify(n: Node): FuseKind {
  if (n.inputs.length === 0 || getOp(n.op).impure === true) return 'opaque';
  return templateOf(n)?.kind ?? 'opaque';
}

export function shapeOnly(n: Node, input: number): boolean {
  return templateOf(n)?.shapeOnly?.(input) ?? false;
}

/** Whether elementwise producers of a matmul's operands may be folded into its packing. */
export function matmulPrologue(n: Node): boolean {
  const t = templateOf(n);
  return t?.kind === 'matmul' && t.prologue !== false;
}
