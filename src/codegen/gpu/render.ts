// Rendering the kernel IR (src/codegen/kernel.ts) as gpu.js kernels. gpu.js runs a kernel once
// per element of its output, so a loop kernel's output loops become the coordinates of the
// element being computed (`this.thread.x` unravelled), and only reduction loops remain loops;
// a matmul kernel becomes one dot product per output element with its epilogue. Expressions
// are placed by the same schedule as on the cpu (src/codegen/schedule.ts), so a softmax row's
// max is computed once per element, not once per term of its sum.
//
// What the gpu cannot do is reported as `Unsupported` (the step then runs on the host): dtypes
// other than float32 and the small integer types, ops without a gpu spelling, stores that do
// not cover their buffer in row-major order, loops longer than the device allows.
import type { DType } from '../../ir/dtype.js';
import type { OpName } from '../../ir/registry.js';
import { ExprBuilder, FOLD_ROWS, REDUCE_INIT, exprOrder, type Expr, type ReduceOp, type ScalarOp } from '../expr.js';
import { range, type IExpr, type Var } from '../index-expr.js';
import type { LoopKernel, MatmulKernel, Store } from '../kernel.js';
import { schedule, type Scope } from '../schedule.js';
import { userCallOf, userGpuHelper, userTemplates } from '../user.js';
import type { Node } from '../../ir/node.js';
import { spell } from '../cpu/js.js';
import { GPU_CALLS, floatLiteral, gpuOpCode, helperSources, helpersIn, storeAs } from './scalar.js';
import { MAX_ELEMENTS, loopIterations, rowMajorStrides, type KernelSource } from './source.js';

export class Unsupported extends Error {}

/** dtypes a float32 texel holds exactly (float16 values are float32 values; ints within 2^24). */
const STORED: ReadonlySet<DType> = new Set(['float32', 'int32', 'int16', 'int8', 'uint8', 'bool']);
const LOADED: ReadonlySet<DType> = new Set([...STORED, 'float16']);

/** A kernel argument: a buffer of the program, or infinity (GLSL has no literal for it). */
export type ArgRef = { readonly kind: 'buf'; readonly buf: number } | { readonly kind: 'inf' };

export interface GpuKernel {
  readonly kernel: KernelSource;
  readonly args: readonly ArgRef[];
  /** The buffer it writes (all of it). */
  readonly out: number;
  readonly label: string;
}

export interface BufferInfo {
  dtype(buf: number): DType;
  size(buf: number): number;
}

/** Spells expressions: a `const` per computed expression, index arithmetic in integers. */
class Writer {
  usesInf = false;
  /** Helpers of user ops' gpu templates, by name. */
  readonly extra = new Map<string, string>();
  private readonly declared = new Set<Expr>();
  /** Index temporaries of unscheduled loads, declared just before the line that reads them. */
  private pending: string[] = [];
  private nextIndex = 0;
  constructor(
    readonly bufs: BufferInfo,
    /** The integer expression of a load's (or index leaf's) index, when scheduled. */
    private readonly indexOf: (e: Expr & { t: 'load' | 'index' }) => Expr | undefined,
    /** Expressions that are index arithmetic (integer spelling). */
    private readonly isIndex: (e: Expr) => boolean,
  ) {}

  name(e: Expr): string {
    return e.t === 'reduce' ? `a${e.id}` : `t${e.id}`;
  }

  /** The `const` line of a computed expression (its operands spelled by `code`). */
  line(e: Expr): string | undefined {
    if (e.t === 'const' || e.t === 'var' || e.t === 'reduce' || e.t === 'acc' || this.declared.has(e)) return undefined;
    const s = `const ${this.name(e)} = ${this.raw(e)};`;
    this.declared.add(e);
    const pre = this.pending;
    this.pending = [];
    return [...pre, s].join(' ');
  }

  forget(es: Iterable<Expr>): void {
    for (const e of es) this.declared.delete(e);
  }

  code(e: Expr, index = false): string {
    switch (e.t) {
      case 'const': return index && Number.isFinite(e.v) ? String(e.v) : this.literal(e.v);
      case 'var': return `i${e.v.id}`;
      case 'acc': return 'acc';
      case 'reduce': return `a${e.id}`;
      default: return this.declared.has(e) ? `t${e.id}` : this.raw(e);
    }
  }

  literal(v: number): string {
    if (Number.isFinite(v)) return floatLiteral(v);
    this.usesInf = true;
    return Number.isNaN(v) ? '(inf - inf)' : v > 0 ? 'inf' : '(-inf)';
  }

  private raw(e: Expr): string {
    switch (e.t) {
      case 'load': {
        const dt = this.bufs.dtype(e.buf);
        if (!LOADED.has(dt)) throw new Unsupported(`reads a ${dt} buffer`);
        return `buf${e.buf}[${this.indexCode(e)}]`;
      }
      case 'index': return this.indexCode(e);
      case 'cast':
        if (e.dtype === 'float32') return this.code(e.x);
        if (!STORED.has(e.dtype)) throw new Unsupported(`rounds to ${e.dtype}`);
        return storeAs(e.dtype, this.code(e.x));
      case 'call': {
        const args = e.args.map((a) => this.code(a));
        const f = GPU_CALLS[e.name as OpName];
        if (f !== undefined) return f(args);
        // A user op's cpu template: its gpu template instead, as a helper of the kernel.
        const u = userCallOf(e.fn);
        if (u === undefined || userTemplates(u.op)?.gpu === undefined) throw new Unsupported(`calls ${e.name}, which has no gpu spelling`);
        const h = userGpuHelper({ op: u.op, attrs: u.attrs, inputs: Array.from({ length: u.nInputs }) as Node[] });
        this.extra.set(h.name, h.source);
        return `${h.name}(${args.join(', ')})`;
      }
      case 'op': {
        const idx = this.isIndex(e);
        const a = e.args.map((x) => this.code(x, idx));
        if (idx) return indexOp(e.op, a);
        if (e.op === 'idiv') return `Math.floor(${a[0]} / ${a[1]})`;
        if (e.op === 'imod') return `t_mod(${a[0]}, ${a[1]})`;
        const code = gpuOpCode(e.op, a);
        if (code === undefined) throw new Unsupported(`op ${e.op}`);
        return code;
      }
      // Negative rows count from the end; the range is checked on the host before the kernel runs (rowChecks).
      case 'row': { const x = this.code(e.x, true); return `(${x} < 0.0 ? ${x} + ${e.rows}.0 : ${x})`; }
      default: throw new Error(`internal: ${e.t} has no line`);
    }
  }

  private indexCode(e: Expr & { t: 'load' | 'index' }): string {
    const ix = this.indexOf(e);
    if (ix !== undefined) return this.code(ix, true);
    // Never inline in brackets: gpu.js would type the arithmetic as integers (no GLSL max/min).
    const name = `x${this.nextIndex++}`;
    this.pending.push(`const ${name} = ${iexprCode(e.t === 'load' ? e.index : e.i)};`);
    return name;
  }
}

function indexOp(op: ScalarOp, a: readonly string[]): string {
  const [x, y] = a;
  switch (op) {
    case 'add': return `(${x} + ${y})`;
    case 'sub': return `(${x} - ${y})`;
    case 'mul': return `(${x} * ${y})`;
    case 'idiv': return `Math.floor(${x} / ${y})`;
    case 'div': return `(${x} / ${y})`;
    case 'imod': return `(${x} % ${y})`;
    case 'mod': return `t_mod(${x}, ${y})`;
    case 'floor': return `Math.floor(${x})`;
    // Always in a `const` of its own: inside an array index gpu.js would want integer max/min,
    // which GLSL ES 1.0 lacks.
    case 'max': return `Math.max(${x}, ${y})`;
    case 'min': return `Math.min(${x}, ${y})`;
    default: throw new Unsupported(`index op ${op}`);
  }
}

/** An index expression in integer arithmetic (matmul operands, which are not scheduled). */
export function iexprCode(x: IExpr): string {
  const parts: string[] = [];
  for (const [a, k] of x.terms) {
    let t: string;
    if (a.kind === 'var') t = `i${a.v.id}`;
    else {
      const inner = iexprCode(a.x);
      const nonNeg = range(a.x)[0] >= 0;
      if (a.kind === 'clamp') t = `Math.min(Math.max(${inner}, ${a.lo}), ${a.hi})`;
      else if (a.kind === 'div') t = `Math.floor(${inner} / ${a.d})`;
      else t = nonNeg ? `(${inner} % ${a.d})` : `t_mod(${inner}, ${a.d})`;
    }
    parts.push(k === 1 ? t : `${t} * ${k}`);
  }
  if (x.c !== 0 || parts.length === 0) parts.push(String(x.c));
  return parts.length === 1 ? parts[0]! : `(${parts.join(' + ')})`;
}

/**
 * Kahan's compensated sum (c carries the low bits lost by the last addition): webasm keeps it;
 * Mesa's optimizer folds it back to a plain sum, which is then no worse than without it.
 */
function kahanStep(r: Expr & { t: 'reduce' }, v: string): string {
  const [a, c, y, z] = [`a${r.id}`, `c${r.id}`, `y${r.id}`, `z${r.id}`];
  // An infinite sum has no low bits: c would become NaN, so it is reset.
  return `const ${y} = ${v} - ${c}; const ${z} = ${a} + ${y}; ${c} = (${z} - ${a}) - ${y}; if (${c} != ${c}) { ${c} = 0.0; } ${a} = ${z};`;
}

/** The gpu's override of the rows' fold statements: these folds are Kahan-compensated sums (kahanStep). */
export const COMPENSATED: ReadonlySet<ReduceOp> = new Set<ReduceOp>(['sum']);

/** The fold of `v` into accumulator `acc`: the fold row's gpu spelling, else its JavaScript's. */
function foldCode(op: ReduceOp, acc: string, v: string): string {
  const sp = FOLD_ROWS.get(op)!.spelling;
  return spell(sp.gpu ?? sp.js!, [acc, v]);
}

/**
 * `const` lines giving the output loop variables their values at output element `i`, when the
 * store writes the whole buffer in row-major order of its variables taken in some order (the
 * output of lowering; a grouped convolution's group variable sits between its rows and columns);
 * else Unsupported.
 */
function coordLines(vars: readonly Var[], index: IExpr, bufSize: number): string[] {
  const total = vars.reduce((p, v) => p * v.size, 1);
  // The variables by falling stride; size-1 variables are 0 wherever they stand.
  const used = vars.filter((v) => v.size > 1).sort((p, q) => index.coef(q) - index.coef(p));
  const st = rowMajorStrides(used.map((v) => v.size));
  const ok = index.c === 0 && total === bufSize && index.terms.every(([a]) => a.kind === 'var' && vars.some((v) => v.id === a.v.id))
    && used.every((v, p) => index.coef(v) === st[p]);
  if (!ok) throw new Unsupported('a store that does not write its whole buffer in order');
  return vars.map((v) => {
    if (v.size === 1) return `const i${v.id} = 0;`;
    const p = used.indexOf(v);
    const q = st[p] === 1 ? 'i' : `Math.floor(i / ${st[p]})`;
    return `const i${v.id} = ${p === 0 ? q : `${q} % ${v.size}`};`;
  });
}

function finish(label: string, lines: readonly string[], result: string, w: Writer, bufs: readonly number[], out: number, size: number, maxLoop: number): GpuKernel {
  if (size > MAX_ELEMENTS) throw new Unsupported(`${size} elements (indices are exact in float32 below 2^24)`);
  if (size === 0 || bufs.some((b) => w.bufs.size(b) === 0)) throw new Unsupported('no elements');
  const args: ArgRef[] = bufs.map((b) => ({ kind: 'buf', buf: b }));
  if (w.usesInf) args.push({ kind: 'inf' });
  const params = args.map((a) => (a.kind === 'buf' ? `buf${a.buf}` : 'inf'));
  const raw = `function (${params.join(', ')}) {\n  const i = this.thread.x;\n${lines.map((l) => `  ${l}`).join('\n')}\n  return ${result};\n}`;
  const source = canonicalNames(raw);
  const it = loopIterations(source);
  if (it > maxLoop) throw new Unsupported(`${it} loop iterations per element (this GL stops at ${maxLoop})`);
  return { kernel: { source, functions: [...helperSources(helpersIn(source)), ...w.extra.values()], size }, args, out, label };
}

/**
 * Renames buffers, temporaries, accumulators and loop variables in order of first appearance,
 * so equal kernels from different compiles (whose ids differ) have equal sources and share one
 * compiled gpu.js kernel.
 */
function canonicalNames(src: string): string {
  const maps = new Map<string, Map<string, string>>();
  return src.replace(/\b(buf|t|a|i|x|c|y|z)(\d+)\b/g, (m, p: string) => {
    let mp = maps.get(p);
    if (mp === undefined) { mp = new Map(); maps.set(p, mp); }
    let n = mp.get(m);
    if (n === undefined) { n = `${p === 'buf' ? 'b' : p}${mp.size}`; mp.set(m, n); }
    return n;
  });
}

/** The buffers an expression tree loads. */
function loadedBuffers(roots: readonly Expr[]): number[] {
  const out = new Set<number>();
  for (const e of exprOrder(roots)) if (e.t === 'load') out.add(e.buf);
  return [...out].sort((p, q) => p - q);
}

/**
 * What a store keeps: a texture holds float32, so a store of another dtype rounds explicitly
 * (the cpu's typed arrays round as they store) unless the value is that rounding already.
 */
function storedResult(w: Writer, value: Expr, dtype: DType): string {
  if (value.t === 'cast' && value.dtype === dtype) return w.code(dtype === 'float32' ? value.x : value);
  return dtype === 'float32' ? w.code(value) : storeAs(dtype, w.code(value));
}

/** One store of a loop kernel as a gpu.js kernel. */
export function renderLoopStore(k: LoopKernel, st: Store, bufs: BufferInfo, maxLoop: number): GpuKernel {
  if (!STORED.has(st.dtype)) throw new Unsupported(`stores ${st.dtype}`);
  // One thread per output element cannot add into rows chosen by data (scatter_add_rows).
  if (st.accumulate === true || st.dyn !== undefined) throw new Unsupported('scatters into rows chosen by data');
  // A scan (cumsum): each element reads the one stored before it, so its elements are not independent.
  if (loadedBuffers([st.value]).some((buf) => k.stores.some((o) => o.buf === buf))) throw new Unsupported('a running value along an axis');
  const b = new ExprBuilder(() => 'float64');
  const s = schedule(k.vars, [st], b);
  const indexNodes = new Set<Expr>();
  for (const ix of s.loadIndex.values()) for (const e of exprOrder([ix])) indexNodes.add(e);
  const w = new Writer(bufs, (e) => s.loadIndex.get(e), (e) => indexNodes.has(e));
  const outputVars = new Set(k.vars.map((v) => v.id));
  const lines = coordLines(k.vars, st.index, bufs.size(st.buf));
  const emit = (scope: Scope, ind: string): void => {
    for (const it of scope.items) {
      if (it.kind === 'loop') {
        if (outputVars.has(it.scope.v!.id)) emit(it.scope, ind);
        else loop(it.scope, ind);
        continue;
      }
      const e = it.e;
      if (e.t === 'reduce') { reduce(e, ind); continue; }
      const l = w.line(e);
      if (l !== undefined) lines.push(ind + l);
    }
    if (scope.reduce !== undefined && s.reduceLoops.get(scope.reduce)!.last === scope) {
      const r = scope.reduce as Expr & { t: 'reduce' };
      lines.push(ind + (COMPENSATED.has(r.op) ? kahanStep(r, w.code(r.body)) : foldCode(r.op, w.name(r), w.code(r.body))));
    }
  };
  const loop = (scope: Scope, ind: string): void => {
    const v = `i${scope.v!.id}`;
    const before = new Set(declaredIn(scope));
    lines.push(`${ind}for (let ${v} = 0; ${v} < ${scope.v!.size}; ${v}++) {`);
    emit(scope, `${ind}  `);
    lines.push(`${ind}}`);
    // Names declared inside the loop are out of scope after it.
    w.forget(before);
  };
  const reduce = (r: Expr & { t: 'reduce' }, ind: string): void => {
    lines.push(`${ind}let ${w.name(r)} = ${w.literal(REDUCE_INIT[r.op])};${COMPENSATED.has(r.op) ? ` let c${r.id} = ${w.literal(0)};` : ''}`);
    const loops = s.reduceLoops.get(r)!;
    if (loops.first === s.scopeOf.get(r)) lines.push(ind + (COMPENSATED.has(r.op) ? kahanStep(r, w.code(r.body)) : foldCode(r.op, w.name(r), w.code(r.body))));
    else loop(loops.first, ind);
  };
  /** Expressions placed in `scope` or the scopes inside it. */
  const declaredIn = (scope: Scope): Expr[] => scope.items.flatMap((it) => (it.kind === 'loop' ? declaredIn(it.scope) : [it.e]));
  emit(s.top, '');
  return finish(k.label, lines, storedResult(w, s.stores[0]!.value, st.dtype), w, loadedBuffers([st.value]), st.buf, bufs.size(st.buf), maxLoop);
}

/** A matmul kernel: per output element, the dot product over k, then the epilogue. */
export function renderMatmul(k: MatmulKernel, bufs: BufferInfo, maxLoop: number): GpuKernel {
  const st = k.out;
  if (!STORED.has(st.dtype)) throw new Unsupported(`stores ${st.dtype}`);
  if (exprOrder([k.a, k.b, st.value]).some((e) => e.t === 'reduce')) throw new Unsupported('a reduction inside a matmul');
  const w = new Writer(bufs, () => undefined, () => false);
  const lines = coordLines([k.batch, k.m, k.n], st.index, bufs.size(st.buf));
  const declare = (roots: readonly Expr[], ind: string): Expr[] => {
    const es = exprOrder(roots);
    for (const e of es) { const l = w.line(e); if (l !== undefined) lines.push(ind + l); }
    return es;
  };
  lines.push('let acc = 0.0;');
  lines.push(`for (let i${k.k.id} = 0; i${k.k.id} < ${k.k.size}; i${k.k.id}++) {`);
  const inner = declare([k.a, k.b], '  ');
  lines.push(`  acc += ${w.code(k.a)} * ${w.code(k.b)};`);
  lines.push('}');
  w.forget(inner);
  declare([st.value], '');
  const result = storedResult(w, st.value, st.dtype);
  return finish(k.label, lines, result, w, loadedBuffers([k.a, k.b, st.value]), st.buf, bufs.size(st.buf), maxLoop);
}


/** A row index the host checks before a kernel runs (gpu kernels cannot throw). */
export interface RowCheck {
  readonly buf: number;
  /** Elements [lo, hi] of the buffer are row numbers. */
  readonly lo: number;
  readonly hi: number;
  readonly rows: number;
  readonly op: string;
  readonly shape: string;
}

/** The data-chosen rows a loop kernel reads ('row' expressions over plain loads). */
export function rowChecks(k: LoopKernel): RowCheck[] {
  const out: RowCheck[] = [];
  for (const e of exprOrder(k.stores.map((st) => st.value))) {
    if (e.t !== 'row') continue;
    if (e.x.t !== 'load' || e.x.dyn !== undefined) throw new Unsupported('a row number that is not a plain read');
    const [lo, hi] = range(e.x.index);
    out.push({ buf: e.x.buf, lo, hi, rows: e.rows, op: e.op, shape: e.shape });
  }
  return out;
}
