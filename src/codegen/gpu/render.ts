// Rendering the kernel IR (src/codegen/kernel/ir.ts) as gpu.js kernels. gpu.js runs a kernel once
// per element of its output, so a loop kernel's output loops become the coordinates of the
// element being computed (`this.thread.x` unravelled), and only reduction loops remain loops;
// a matmul kernel becomes one dot product per output element with its epilogue. Expressions
// are placed by the same schedule as on the cpu (src/codegen/transform/schedule.ts), so a softmax row's
// max is computed once per element, not once per term of its sum.
//
// What runs here is chosen before rendering (strategy.ts, codegen step 4): a loop kernel's store
// comes with its schedule, and an expression without a gpu spelling is an internal error here.
import type { DType } from '../../ir/dtype.js';
import type { OpName } from '../../ir/registry.js';
import { getOrInsertComputed } from '../../ir/maps.js';
import { FOLD_ROWS, REDUCE_INIT, exprOrder, type Expr, type ReduceOp, type ScalarOp } from '../kernel/expr.js';
import { spellIndex, type IExpr, type IndexSpelling, type Var } from '../kernel/index-expr.js';
import type { LoopKernel, MatmulKernel } from '../kernel/ir.js';
import { walkScopes } from '../transform/scope-walk.js';
import { userCallOf, userGpuHelper, userTemplates } from '../lower/user.js';
import type { Node } from '../../ir/node.js';
import { spell } from '../cpu/js.js';
import { GPU_CALLS, floatLiteral, gpuOpCode, helperSources, helpersIn, storeAs } from './scalar.js';
import type { KernelSource } from './source.js';
import { loadedBuffers, outputLayout, type BufferInfo, type StorePlan } from './strategy.js';

export type { BufferInfo } from './strategy.js';

/** An expression strategy.ts should have sent to the host. */
const unspelled = (what: string): Error =>
  new Error(`internal: the gpu renderer has no spelling for ${what} (strategy.ts runs such a step on the host)`);

/** A kernel argument: a buffer of the program, or infinity (GLSL has no literal for it). */
export type ArgRef = { readonly kind: 'buf'; readonly buf: number } | { readonly kind: 'inf' };

export interface GpuKernel {
  readonly kernel: KernelSource;
  readonly args: readonly ArgRef[];
  /** The buffer it writes (all of it). */
  readonly out: number;
  readonly label: string;
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
      case 'const':
        return index && Number.isFinite(e.v) ? String(e.v) : this.literal(e.v);
      case 'var':
        return `i${e.v.id}`;
      case 'acc':
        return 'acc';
      case 'reduce':
        return `a${e.id}`;
      default:
        return this.declared.has(e) ? `t${e.id}` : this.raw(e);
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
        return `buf${e.buf}[${this.indexCode(e)}]`;
      }
      case 'index':
        return this.indexCode(e);
      case 'cast':
        if (e.dtype === 'float32') return this.code(e.x);
        return storeAs(e.dtype, this.code(e.x));
      case 'call': {
        const args = e.args.map((a) => this.code(a));
        const f = GPU_CALLS[e.name as OpName];
        if (f !== undefined) return f(args);
        // A user op's cpu template: its gpu template instead, as a helper of the kernel.
        const u = userCallOf(e.fn);
        if (u === undefined || userTemplates(u.op)?.gpu === undefined) throw unspelled(`a call of ${e.name}`);
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
        if (code === undefined) throw unspelled(`op ${e.op}`);
        return code;
      }
      // Negative rows count from the end; the range is checked on the host before the kernel runs (strategy.ts `RowCheck`).
      case 'row': {
        const x = this.code(e.x, true);
        return `(${x} < 0.0 ? ${x} + ${e.rows}.0 : ${x})`;
      }
      default:
        throw new Error(`internal: ${e.t} has no line`);
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
    case 'add':
      return `(${x} + ${y})`;
    case 'sub':
      return `(${x} - ${y})`;
    case 'mul':
      return `(${x} * ${y})`;
    case 'idiv':
      return `Math.floor(${x} / ${y})`;
    case 'div':
      return `(${x} / ${y})`;
    case 'imod':
      return `(${x} % ${y})`;
    case 'mod':
      return `t_mod(${x}, ${y})`;
    case 'floor':
      return `Math.floor(${x})`;
    // Always in a `const` of its own: inside an array index gpu.js would want integer max/min,
    // which GLSL ES 1.0 lacks.
    case 'max':
      return `Math.max(${x}, ${y})`;
    case 'min':
      return `Math.min(${x}, ${y})`;
    default:
      throw unspelled(`index op ${op}`);
  }
}

const GPU_INDEX: IndexSpelling = {
  int: String,
  clamp: (inner, lo, hi) => `Math.min(Math.max(${inner}, ${lo}), ${hi})`,
  div: (inner, d) => `Math.floor(${inner} / ${d})`,
  mod: (inner, d, nonNeg) => (nonNeg ? `(${inner} % ${d})` : `t_mod(${inner}, ${d})`),
};

/** An index expression in integer arithmetic (matmul operands, which are not scheduled). */
export function iexprCode(x: IExpr): string {
  return spellIndex(x, GPU_INDEX);
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

/** `const` lines giving the output loop variables their values at output element `i` (the layout strategy.ts checked). */
function coordLines(vars: readonly Var[], index: IExpr, bufSize: number): string[] {
  const layout = outputLayout(vars, index, bufSize);
  if (layout === undefined) throw new Error('internal: a gpu store that does not write its whole buffer in order');
  const { used, strides: st } = layout;
  return vars.map((v) => {
    if (v.size === 1) return `const i${v.id} = 0;`;
    const p = used.indexOf(v);
    const q = st[p] === 1 ? 'i' : `Math.floor(i / ${st[p]})`;
    return `const i${v.id} = ${p === 0 ? q : `${q} % ${v.size}`};`;
  });
}

function finish(
  lines: readonly string[],
  result: string,
  w: Writer,
  bufs: readonly number[],
  out: number,
  size: number,
  label: string,
): GpuKernel {
  const args: ArgRef[] = bufs.map((b) => ({ kind: 'buf', buf: b }));
  if (w.usesInf) args.push({ kind: 'inf' });
  const params = args.map((a) => (a.kind === 'buf' ? `buf${a.buf}` : 'inf'));
  const raw = `function (${params.join(', ')}) {\n  const i = this.thread.x;\n${lines.map((l) => `  ${l}`).join('\n')}\n  return ${result};\n}`;
  const source = canonicalNames(raw);
  return {
    kernel: { source, functions: [...helperSources(helpersIn(source)), ...w.extra.values()], size },
    args,
    out,
    label,
  };
}

/**
 * Renames buffers, temporaries, accumulators and loop variables in order of first appearance,
 * so equal kernels from different compiles (whose ids differ) have equal sources and share one
 * compiled gpu.js kernel.
 */
function canonicalNames(src: string): string {
  const maps = new Map<string, Map<string, string>>();
  return src.replace(/\b(buf|t|a|i|x|c|y|z)(\d+)\b/g, (m, p: string) => {
    const mp = getOrInsertComputed(maps, p, () => new Map<string, string>());
    return getOrInsertComputed(mp, m, () => `${p === 'buf' ? 'b' : p}${mp.size}`);
  });
}

/**
 * What a store keeps: a texture holds float32, so a store of another dtype rounds explicitly
 * (the cpu's typed arrays round as they store) unless the value is that rounding already.
 */
function storedResult(w: Writer, value: Expr, dtype: DType): string {
  if (value.t === 'cast' && value.dtype === dtype) return w.code(dtype === 'float32' ? value.x : value);
  return dtype === 'float32' ? w.code(value) : storeAs(dtype, w.code(value));
}

/** One store of a loop kernel as a gpu.js kernel, scheduled by strategy.ts. */
export function renderLoopStore(k: LoopKernel, plan: StorePlan, bufs: BufferInfo): GpuKernel {
  const { store: st, sched: s, indexNodes } = plan;
  const w = new Writer(
    bufs,
    (e) => s.loadIndex.get(e),
    (e) => indexNodes.has(e),
  );
  const outputVars = new Set(k.vars.map((v) => v.id));
  const lines = coordLines(k.vars, st.index, bufs.size(st.buf));
  const fold = (r: Expr & { t: 'reduce' }): string =>
    COMPENSATED.has(r.op) ? kahanStep(r, w.code(r.body)) : foldCode(r.op, w.name(r), w.code(r.body));
  walkScopes(
    s,
    outputVars,
    {
      line: (e) => w.line(e),
      loopHead: (v, size) => `for (let ${v} = 0; ${v} < ${size}; ${v}++) {`,
      init: (r) =>
        `let ${w.name(r)} = ${w.literal(REDUCE_INIT[r.op])};${COMPENSATED.has(r.op) ? ` let c${r.id} = ${w.literal(0)};` : ''}`,
      fold,
      forget: (es) => w.forget(es),
    },
    lines,
  );
  return finish(
    lines,
    storedResult(w, s.stores[0]!.value, st.dtype),
    w,
    loadedBuffers([st.value]),
    st.buf,
    bufs.size(st.buf),
    k.label,
  );
}

/** A matmul kernel: per output element, the dot product over k, then the epilogue. */
export function renderMatmul(k: MatmulKernel, bufs: BufferInfo): GpuKernel {
  const st = k.out;
  const w = new Writer(
    bufs,
    () => undefined,
    () => false,
  );
  const lines = coordLines([k.batch, k.m, k.n], st.index, bufs.size(st.buf));
  const declare = (roots: readonly Expr[], ind: string): Expr[] => {
    const es = exprOrder(roots);
    for (const e of es) {
      const l = w.line(e);
      if (l !== undefined) lines.push(ind + l);
    }
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
  return finish(lines, result, w, loadedBuffers([k.a, k.b, st.value]), st.buf, bufs.size(st.buf), k.label);
}
