// Rendering a scheduled loop kernel as a JavaScript function: nested for-loops with constant
// bounds, one `const` per expression that is shared or hoisted, reductions as local
// accumulators, stores into typed arrays. No closures, no allocation, numbers only.
import type { ScalarFn, Expr } from '../kernel/expr.js';
import type { IExpr } from '../kernel/index-expr.js';
import { ExprBuilder, children, exprOrder } from '../kernel/expr.js';
import type { LoopKernel } from '../kernel/ir.js';
import { REDUCE_INIT } from '../kernel/expr.js';
import { schedule, type Schedule, type Scope } from '../transform/schedule.js';
import { splitInnerLoop } from '../transform/split.js';
import { castCode, commentText, foldCode, jsString, literal, opCode, storeRounds } from './js.js';

export interface RenderEnv {
  bufName(id: number): string;
  fnName(fn: ScalarFn): string;
}

export interface KernelSource {
  readonly source: string;
  readonly buffers: number[];
  /** Size of the outermost loop, whose bounds are the last two parameters (lo, hi). */
  readonly rows?: number | undefined;
  /** Takes the matmul's tile sums (a view of the packing arena) as its first parameter. */
  readonly needsAcc?: boolean;
}

/** Spells expressions of one schedule, giving temporaries to shared and hoisted ones. */
export class ExprWriter {
  private readonly temp = new Set<Expr>();
  private readonly indices = new Set<Expr>();
  private readonly done = new Set<Expr>();
  constructor(
    private readonly s: Schedule | undefined,
    private readonly env: RenderEnv,
    /** How the matmul accumulator is spelled (in epilogues). */
    private readonly accName = 'acc',
    /** Without a schedule (matmul epilogues), indices are spelled inline by this. */
    private readonly indexCode: (x: IExpr) => string = () => {
      throw new Error('no index renderer');
    },
  ) {
    if (s === undefined) return;
    // The index trees' own nodes (integers: a clamp's max(x, 0) stays Math.max, exact and cheap on small integers)
    const visit = (e: Expr): void => {
      if (this.indices.has(e) || e.t !== 'op' || !INDEX_OPS.has(e.op)) return;
      this.indices.add(e);
      e.args.forEach(visit);
    };
    for (const ix of s.loadIndex.values()) visit(ix);
    for (const st of s.stores) visit(st.index);
    for (const [e, n] of s.uses) if (n > 1 && isComputed(e)) this.temp.add(e);
    for (const [e, sc] of s.scopeOf) {
      for (const k of kidsOf(e, s)) if (isComputed(k) && s.scopeOf.get(k) !== sc) this.temp.add(k);
    }
  }
  /** Without a schedule: `const` lines for subexpressions used more than once (children first). */
  sharedLines(roots: readonly Expr[]): string[] {
    const uses = new Map<Expr, number>();
    const order = exprOrder(roots);
    for (const e of order) for (const c of children(e)) uses.set(c, (uses.get(c) ?? 0) + 1);
    const lines: string[] = [];
    for (const e of order) {
      if ((uses.get(e) ?? 0) > 1 && isComputed(e) && e.t !== 'acc') {
        this.temp.add(e);
        lines.push(this.line(e));
      }
    }
    return lines;
  }
  needsLine(e: Expr): boolean {
    return this.temp.has(e) && e.t !== 'reduce';
  }
  line(e: Expr): string {
    const s = `const t${e.id} = ${this.raw(e)};`;
    this.done.add(e);
    return s;
  }
  code(e: Expr): string {
    if (e.t === 'reduce') return `a${e.id}`;
    if (this.done.has(e)) return `t${e.id}`;
    return this.raw(e);
  }
  /** A JavaScript boolean for "e is nonzero", without the 1 : 0 round trip for comparisons. */
  private cond(e: Expr): string {
    if (e.t === 'op' && !this.done.has(e)) {
      const a = e.args;
      switch (e.op) {
        case 'eq':
          return `${this.code(a[0]!)} === ${this.code(a[1]!)}`;
        case 'ne':
          return `${this.code(a[0]!)} !== ${this.code(a[1]!)}`;
        case 'gt':
          return `${this.code(a[0]!)} > ${this.code(a[1]!)}`;
        case 'ge':
          return `${this.code(a[0]!)} >= ${this.code(a[1]!)}`;
        case 'lt':
          return `${this.code(a[0]!)} < ${this.code(a[1]!)}`;
        case 'le':
          return `${this.code(a[0]!)} <= ${this.code(a[1]!)}`;
        case 'and':
          return `(${this.cond(a[0]!)}) && (${this.cond(a[1]!)})`;
        case 'or':
          return `(${this.cond(a[0]!)}) || (${this.cond(a[1]!)})`;
        case 'not':
          return `!(${this.cond(a[0]!)})`;
        default:
          break;
      }
    }
    return `${this.code(e)} !== 0`;
  }
  private raw(e: Expr): string {
    switch (e.t) {
      case 'const':
        return literal(e.v);
      case 'var':
        return `i${e.v.id}`;
      case 'load':
        return `${this.env.bufName(e.buf)}[${this.s === undefined ? this.indexCode(e.index) : this.code(this.s.loadIndex.get(e)!)}]`;
      case 'index':
        return this.s === undefined ? this.indexCode(e.i) : this.code(this.s.loadIndex.get(e)!);
      case 'op':
        if (e.op === 'select')
          return `(${this.cond(e.args[0]!)} ? ${this.code(e.args[1]!)} : ${this.code(e.args[2]!)})`;
        if (e.op === 'max' || e.op === 'min') {
          // max(x, 0) (relu) and min(x, 0): the runtime's branch-free forms, equal to Math's for every x
          const z = e.args.findIndex((a) => a.t === 'const' && Object.is(a.v, 0));
          if (z >= 0 && !this.indices.has(e)) return `rt.${e.op}0(${this.code(e.args[1 - z]!)})`;
        }
        return opCode(
          e.op,
          e.args.map((a) => this.code(a)),
        );
      case 'call':
        return `${this.env.fnName(e.fn)}(${e.args.map((a) => this.code(a)).join(', ')})`;
      case 'cast':
        return castCode(e.dtype, this.code(e.x));
      case 'reduce':
        return `a${e.id}`;
      case 'acc':
        return this.accName;
      case 'row':
        return `rt.row(${this.code(e.x)}, ${e.rows}, ${jsString(e.op)}, ${jsString(e.shape)})`;
    }
  }
}

/** Ops of the schedule's integer index trees (schedule.ts toInt). */
const INDEX_OPS: ReadonlySet<string> = new Set(['add', 'mul', 'min', 'max', 'idiv', 'imod', 'floor', 'div', 'mod']);

const isComputed = (e: Expr) => e.t !== 'const' && e.t !== 'var';

function kidsOf(e: Expr, s: Schedule): Expr[] {
  if (e.t === 'load' || e.t === 'index') return [s.loadIndex.get(e)!];
  if (e.t === 'op' || e.t === 'call') return [...e.args];
  if (e.t === 'cast' || e.t === 'row') return [e.x];
  if (e.t === 'reduce') return [e.body];
  return [];
}

/** The store's value without a final cast that the typed-array store performs anyway. */
function storedValue(v: Expr, dtype: string): Expr {
  return v.t === 'cast' && v.dtype === dtype && storeRounds(v.dtype) ? v.x : v;
}

/**
 * A kernel's source, the buffers it takes, and (when it has loops) the size of its outermost loop,
 * whose bounds are parameters: the driver runs row 0 alone first, so every path of the loop body
 * has run once before V8 compiles the hot loop (otherwise the optimized loop deoptimizes at the
 * first outer-loop increment it has never seen executed: "insufficient type feedback").
 */
export function renderLoopKernel(step: LoopKernel, name: string, env: RenderEnv, js: JsLoop): KernelSource {
  if (js.kernel.label !== step.label || js.kernel.stores !== step.stores)
    throw new Error(`internal: the prepared loop of ${js.kernel.label} is rendered for ${step.label}`);
  const k = js.kernel;
  // Selects on the inner loop's index (a concatenation's adjoint): one block per column range,
  // as the strategy step cut it (./strategy.ts, ../split.ts).
  if (js.split) {
    const pieces = js.pieces;
    const parts = pieces.map((p) => renderKernelBody(p.kernel, p.schedule, env));
    const params = [...new Set(parts.flatMap((p) => p.buffers))].sort((p, q) => p - q);
    const lines = parts.flatMap((p, i) => [
      `  { // columns ${pieces[i]!.start} to ${pieces[i]!.start + pieces[i]!.kernel.vars.at(-1)!.size}`,
      ...p.lines.map((l) => `  ${l}`),
      '  }',
    ]);
    const args = [...params.map((q) => env.bufName(q)), 'lo', 'hi'];
    return {
      source: `function ${name}(${args.join(', ')}) { // ${commentText(k.label)}\n${lines.join('\n')}\n}`,
      buffers: params,
      rows: k.vars[0]!.size,
    };
  }
  const r = renderKernelBody(k, js.pieces[0]!.schedule, env);
  const args = [...r.buffers.map((p) => env.bufName(p)), ...(r.rows !== undefined ? ['lo', 'hi'] : [])];
  return {
    source: `function ${name}(${args.join(', ')}) { // ${commentText(k.label)}\n${r.lines.join('\n')}\n}`,
    buffers: r.buffers,
    rows: r.rows,
  };
}

/** A JavaScript loop kernel as the strategy step prepares it: whole or cut into column ranges (../split.ts), each piece scheduled (../schedule.ts). */
export interface JsLoop {
  /** The kernel as rendered: the step's, its output loops in the order chosen (./loop-order.ts). */
  readonly kernel: LoopKernel;
  readonly split: boolean;
  readonly pieces: readonly { readonly start: number; readonly kernel: LoopKernel; readonly schedule: Schedule }[];
}

/**
 * Cuts (../split.ts) and schedules (../schedule.ts) a loop kernel for the JavaScript renderer, its
 * output loops in `order` (positions in `k.vars`, outermost first; a tuned order, only where
 * ./loop-order.ts reorderable says it cannot change a value), else in the kernel's own order.
 */
export function jsLoop(k0: LoopKernel, order?: readonly number[]): JsLoop {
  const k = order === undefined || order.every((x, i) => x === i) ? k0 : { ...k0, vars: order.map((i) => k0.vars[i]!) };
  const sched = (kernel: LoopKernel) => schedule(kernel.vars, kernel.stores, new ExprBuilder(() => 'float64'));
  const cut = splitInnerLoop(k);
  if (cut === undefined) return { kernel: k, split: false, pieces: [{ start: 0, kernel: k, schedule: sched(k) }] };
  return {
    kernel: k,
    split: true,
    pieces: cut.map((p) => ({ start: p.start, kernel: p.kernel, schedule: sched(p.kernel) })),
  };
}

/** A loop kernel's statements, the buffers it reads and writes, and its outermost loop's size (bounds lo, hi). */
function renderKernelBody(
  k: LoopKernel,
  s: Schedule,
  env: RenderEnv,
): { lines: string[]; buffers: number[]; rows: number | undefined } {
  // schedule() expands 'index' expressions into integer trees; give them the same lookup as loads.
  const w = new ExprWriter(s, env);
  const bufs = new Set<number>();
  for (const e of s.loadIndex.keys()) if (e.t === 'load') bufs.add(e.buf);
  for (const st of k.stores) bufs.add(st.buf);
  const lines: string[] = [];
  const emit = (scope: Scope, ind: string) => {
    for (const it of scope.items) {
      if (it.kind === 'loop') {
        emitLoop(it.scope, ind);
        continue;
      }
      const e = it.e;
      if (e.t === 'reduce') {
        emitReduce(e, ind);
        continue;
      }
      if (w.needsLine(e)) lines.push(ind + w.line(e));
    }
    if (scope === s.inner) {
      for (const st of s.stores) {
        const op = st.store.accumulate === true ? '+=' : '=';
        lines.push(
          `${ind}${env.bufName(st.store.buf)}[${w.code(st.index)}] ${op} ${w.code(storedValue(st.value, st.store.dtype))};`,
        );
      }
    }
    if (scope.reduce !== undefined && s.reduceLoops.get(scope.reduce)!.last === scope) {
      const r = scope.reduce;
      if (r.t === 'reduce') lines.push(ind + foldCode(r.op, `a${r.id}`, w.code(r.body)));
    }
  };
  const outermost = k.vars.length > 0 ? s.top.items.find((it) => it.kind === 'loop')?.scope : undefined;
  const emitLoop = (scope: Scope, ind: string) => {
    const v = `i${scope.v!.id}`;
    if (scope === outermost) lines.push(`${ind}for (let ${v} = lo; ${v} < hi; ${v}++) {`);
    else lines.push(`${ind}for (let ${v} = 0; ${v} < ${scope.v!.size}; ${v}++) {`);
    emit(scope, ind + '  ');
    lines.push(`${ind}}`);
  };
  const emitReduce = (r: Expr & { t: 'reduce' }, ind: string) => {
    lines.push(`${ind}let a${r.id} = ${literal(REDUCE_INIT[r.op])};`);
    const loops = s.reduceLoops.get(r)!;
    if (loops.first === s.scopeOf.get(r)) lines.push(ind + foldCode(r.op, `a${r.id}`, w.code(r.body)));
    else emitLoop(loops.first, ind);
  };
  emit(s.top, '  ');
  return { lines, buffers: [...bufs].sort((p, q) => p - q), rows: outermost?.v!.size };
}
