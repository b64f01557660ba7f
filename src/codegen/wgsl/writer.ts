// The WGSL renderer's shared parts (src/codegen/wgsl): typed expression spelling (`Writer`: a
// `let` per computed expression, f32 values and i32 indices, conversions where they meet), folds,
// bindings and a shader's assembly with the helpers it calls.
import type { DType } from '../../ir/dtype.js';
import type { OpName } from '../../ir/registry.js';
import { FOLD_ROWS, REDUCE_INIT, exprOrder, type Expr, type ReduceOp } from '../kernel/expr.js';
import { walkScopes } from '../transform/scope-walk.js';
import type { Schedule } from '../transform/schedule.js';
import { spellIndex, type IExpr, type IndexSpelling } from '../kernel/index-expr.js';
import { DRAW, philoxDraw } from '../lower/random-fn.js';
import { CHECKED_CALLS } from './checked.js';
import { userHelperSources, userWgslCall } from './user.js';
import {
  INDEX_OPS,
  WGSL_CALLS,
  WGSL_OPS,
  f32Literal,
  helperSources,
  i32Literal,
  roundAs,
  storageOf,
  type Storage,
} from './scalar.js';

/** An expression strategy.ts should have sent to the host. */
const unspelled = (what: string): Error =>
  new Error(`internal: the WGSL renderer has no spelling for ${what} (strategy.ts runs such a step on the host)`);

export interface BufferInfo {
  dtype(buf: number): DType;
  size(buf: number): number;
  /** How the device holds the buffer: f32, i32 (the epoch of unseeded random keys: its u32 bits) or f16. */
  storage(buf: number): Storage | undefined;
  /** The storage buffers a shader may bind on this device (WebGPU's default is 8). */
  readonly maxBindings?: number;
}

/** A compute shader and how to dispatch it. */
export interface WgslKernel {
  readonly label: string;
  readonly code: string;
  /** Buffers bound at bindings 0, 1, ...; `writes` says which are written (read_write). */
  readonly binds: readonly number[];
  readonly writes: readonly number[];
  /** Workgroups to dispatch (x, y, z). */
  readonly groups: readonly [number, number, number];
}

/** Invocations per workgroup of a loop kernel. */
export const WG = 64;
/** Workgroups per dispatch dimension (WebGPU's default maxComputeWorkgroupsPerDimension). */
export const MAX_GROUPS = 65535;

export type Ty = 'f32' | 'i32';

/** Spells expressions as typed WGSL: a `let` per computed expression, conversions where types meet. */
export class Writer {
  private readonly declared = new Set<Expr>();
  constructor(
    private readonly bufs: BufferInfo,
    private readonly indexOf: (e: Expr & { t: 'load' | 'index' }) => Expr | undefined,
    private readonly isIndex: (e: Expr) => boolean,
  ) {}

  name(e: Expr): string {
    return e.t === 'reduce' ? `a${e.id}` : `t${e.id}`;
  }

  /** The WGSL type of `e` as spelled (a load of an f16 buffer is f16, converted where used). */
  typeOf(e: Expr): Ty | 'f16' {
    switch (e.t) {
      case 'var':
      case 'index':
      case 'row':
        return 'i32';
      case 'load':
        return this.bufs.storage(e.buf)!;
      case 'op':
        return this.isIndex(e) ? 'i32' : 'f32';
      case 'const':
        return this.isIndex(e) ? 'i32' : 'f32';
      default:
        return 'f32';
    }
  }

  /** The `let` line of a computed expression. */
  line(e: Expr): string | undefined {
    if (e.t === 'const' || e.t === 'var' || e.t === 'reduce' || e.t === 'acc' || this.declared.has(e)) return undefined;
    const s = `let ${this.name(e)} = ${this.raw(e)};`;
    this.declared.add(e);
    return s;
  }

  forget(es: Iterable<Expr>): void {
    for (const e of es) this.declared.delete(e);
  }

  /** `e` as a value of type `want`. */
  code(e: Expr, want: Ty): string {
    if (e.t === 'const') return want === 'i32' ? i32Literal(e.v) : f32Literal(e.v);
    let s: string;
    switch (e.t) {
      case 'var':
        s = `i${e.v.id}`;
        break;
      case 'acc':
        s = 'acc';
        break;
      case 'reduce':
        s = `a${e.id}`;
        break;
      default:
        s = this.declared.has(e) ? `t${e.id}` : this.raw(e);
    }
    const have = this.typeOf(e);
    return have === want ? s : `${want}(${s})`;
  }

  private raw(e: Expr): string {
    switch (e.t) {
      case 'load': {
        if (this.bufs.storage(e.buf) === undefined) throw unspelled(`a read of a ${this.bufs.dtype(e.buf)} buffer`);
        return `b${e.buf}[${this.indexCode(e)}]`;
      }
      case 'index':
        return this.indexCode(e);
      case 'cast': {
        if (storageOf(e.dtype) === undefined) throw unspelled(`a rounding to ${e.dtype}`);
        return roundAs(e.dtype, this.code(e.x, 'f32'));
      }
      case 'call': {
        if (e.fn === philoxDraw) return this.philox(e.args);
        const f = WGSL_CALLS[e.name as OpName] ?? CHECKED_CALLS[e.name] ?? userWgslCall(e.fn);
        if (f === undefined) throw unspelled(`a call of ${e.name}`);
        return f(e.args.map((a) => this.code(a, 'f32')));
      }
      case 'op': {
        const idx = this.isIndex(e);
        const r = (idx ? INDEX_OPS : WGSL_OPS)[e.op];
        if (r === undefined) throw unspelled(`${idx ? 'index ' : ''}op ${e.op}`);
        return r(e.args.map((a) => this.code(a, idx ? 'i32' : 'f32')));
      }
      // Negative rows count from the end; the range is checked on the host before the kernel runs.
      case 'row':
        return `t_row(${this.code(e.x, 'i32')}, ${i32Literal(e.rows)})`;
      default:
        throw new Error(`internal: ${e.t} has no line`);
    }
  }

  /**
   * A random op's element (random-fn.ts' philoxDraw(kind, i, k0, k1, stream, a, b, bits)): the
   * Philox words in u32 lanes, bit-identical to the reference's; the transform in f32.
   */
  private philox(args: readonly Expr[]): string {
    const c = (k: number): number => {
      const a = args[k]!;
      if (a.t !== 'const') throw unspelled('a random draw whose parameters are not constants');
      return a.v;
    };
    const [kind, k0, stream, lo, hi, bits] = [c(0), c(2), c(4), c(5), c(6), c(7)];
    const i = `u32(${this.code(args[1]!, 'i32')})`;
    const k1e = args[3]!;
    const k1 = k1e.t === 'const' ? `${k1e.v >>> 0}u` : `bitcast<u32>(${this.code(k1e, 'i32')})`;
    const key = `${stream}u, ${k0 >>> 0}u, ${k1}`;
    const w = `t_philox(${i}, 0u, ${key})`;
    const [fa, fb] = [f32Literal(lo), f32Literal(hi)];
    switch (kind) {
      case DRAW.uniform: {
        const u =
          bits >= 53 ? `t_unit53(${w}.x, ${w}.y)` : `(f32(${w}.x >> ${32 - bits}u) * ${f32Literal(2 ** -bits)})`;
        return `(${fa} + (${fb} - ${fa}) * ${u})`;
      }
      case DRAW.normal:
        return `(${fa} + ${fb} * t_normal(${w}))`;
      case DRAW.truncated:
        return `(${fa} + ${fb} * t_truncnormal(${i}, ${key}))`;
      case DRAW.binomial: {
        // x0 * 2^-32 < p exactly: x0 below the count of grid points under p.
        const n = Math.ceil(lo * 2 ** 32);
        if (n <= 0) return f32Literal(0);
        if (n >= 2 ** 32) return f32Literal(1);
        return `select(0.0, 1.0, ${w}.x < ${n}u)`;
      }
      default:
        throw unspelled(`random draw kind ${kind}`);
    }
  }

  private indexCode(e: Expr & { t: 'load' | 'index' }): string {
    const ix = this.indexOf(e);
    return ix !== undefined ? this.code(ix, 'i32') : iexprCode(e.t === 'load' ? e.index : e.i);
  }
}

const WGSL_INDEX: IndexSpelling = {
  int: i32Literal,
  clamp: (inner, lo, hi) => `clamp(${inner}, ${i32Literal(lo)}, ${i32Literal(hi)})`,
  div: (inner, d, nonNeg) => (nonNeg ? `(${inner} / ${d}i)` : `t_fdiv(${inner}, ${d}i)`),
  mod: (inner, d, nonNeg) => (nonNeg ? `(${inner} % ${d}i)` : `t_fmod(${inner}, ${d}i)`),
};

/**
 * Coordinate `k` of the loops `sizes` (row-major) from their flat index `flat`, which is below
 * their product: no modulo for the outermost, no division for the innermost.
 */
export function coordCode(flat: string, sizes: readonly number[], k: number): string {
  if (sizes[k] === 1) return '0i';
  const stride = sizes.slice(k + 1).reduce((p, s) => p * s, 1);
  const q = stride === 1 ? flat : `(${flat} / ${stride}i)`;
  return k === 0 ? q : `(${q} % ${sizes[k]}i)`;
}

/** An index expression in i32 (matmul operands, which are not scheduled). */
export function iexprCode(x: IExpr): string {
  return spellIndex(x, WGSL_INDEX);
}

/** The fold of `v` into accumulator `acc`: the fold row's WGSL spelling, else its gpu.js one, else its JavaScript one (src/ir/ops/reduce.ts). */
/**
 * A scheduled loop kernel's scopes spelled into `lines` (./render.ts, ./steps.ts): its loops, the
 * reductions' accumulators and folds (sums with Kahan compensation), over the variables outside `outer`.
 */
export function writeScopes(w: Writer, s: Schedule, outer: ReadonlySet<number>, lines: string[]): void {
  const fold = (r: Expr & { t: 'reduce' }): string =>
    r.op === 'sum' ? kahanStep(r.id, w.code(r.body, 'f32')) : foldCode(r.op, w.name(r), w.code(r.body, 'f32'));
  walkScopes(
    s,
    outer,
    {
      line: (e) => w.line(e),
      loopHead: (v, size) => `for (var ${v} = 0i; ${v} < ${size}i; ${v}++) {`,
      init: (r) =>
        `var ${w.name(r)}: f32 = ${f32Literal(REDUCE_INIT[r.op])};${r.op === 'sum' ? ` var c${r.id}: f32 = 0.0;` : ''}`,
      fold,
      forget: (es) => w.forget(es),
    },
    lines,
  );
}

export function foldCode(op: ReduceOp, acc: string, v: string): string {
  const sp = FOLD_ROWS.get(op)!.spelling;
  return (sp.wgsl ?? sp.gpu ?? sp.js!).replaceAll('$0', acc).replaceAll('$1', v);
}

/** Kahan's compensated sum (an f32 accumulator over long loops), reset where the sum is infinite. */
export function kahanStep(id: number, v: string): string {
  return `{ let y = ${v} - c${id}; let z = a${id} + y; c${id} = (z - a${id}) - y; if (c${id} != c${id}) { c${id} = 0.0; } a${id} = z; }`;
}

/** Storage declarations: binding k holds buffer binds[k]. */
export function bindings(binds: readonly number[], writes: readonly number[], bufs: BufferInfo): string[] {
  return binds.map((b, k) => {
    const ty = bufs.storage(b);
    if (ty === undefined) throw unspelled(`a binding of a ${bufs.dtype(b)} buffer`);
    return `@group(0) @binding(${k}) var<storage, ${writes.includes(b) ? 'read_write' : 'read'}> b${b}: array<${ty}>;`;
  });
}

/** The module's enable directives: `enable f16;` where a binding holds f16 (it comes first in the module). */
export function enables(binds: readonly number[], bufs: BufferInfo): string[] {
  return binds.some((b) => bufs.storage(b) === 'f16') ? ['enable f16;'] : [];
}

export function loaded(roots: readonly Expr[]): number[] {
  const out = new Set<number>();
  for (const e of exprOrder(roots)) if (e.t === 'load') out.add(e.buf);
  return [...out].sort((p, q) => p - q);
}

/** A 1-D dispatch of `n` invocations in workgroups of `wg`, split over y where x would pass the per-dimension limit. */
export function groups1d(n: number, wg = WG): [number, number, number] {
  const g = Math.ceil(n / wg);
  if (g <= MAX_GROUPS) return [g, 1, 1];
  return [MAX_GROUPS, Math.ceil(g / MAX_GROUPS), 1];
}

/** The storage buffers a shader may bind where the device says nothing (WebGPU's default maxStorageBuffersPerShaderStage). */
export const MAX_BINDINGS = 8;

export function assemble(
  label: string,
  body: string[],
  binds: number[],
  writes: number[],
  bufs: BufferInfo,
  groups: [number, number, number],
  header: string[] = [],
): WgslKernel {
  const most = bufs.maxBindings ?? MAX_BINDINGS;
  if (binds.length > most) throw unspelled(`${binds.length} bindings (at most ${most} on this device)`);
  const text = body.join('\n');
  const users = userHelperSources(text);
  const code = [
    ...enables(binds, bufs),
    ...bindings(binds, writes, bufs),
    ...header,
    ...helperSources([text, ...users].join('\n')),
    ...users,
    text,
  ].join('\n');
  return { label, code, binds, writes, groups };
}
