// Rendering the kernel IR (src/codegen/kernel.ts) as WGSL compute shaders for the gpu device's
// WebGPU mode. A loop kernel is one invocation per element of its output loops (all its stores
// in one shader, each at its own index), reduction loops inside the invocation; expressions are
// placed by the same schedule as on the cpu and the gpu.js renderer (src/codegen/schedule.ts).
// A matmul kernel is a workgroup-tiled product: 16 x 16 tiles of A and B staged in workgroup
// memory, each invocation summing a 2 x 2 register tile of the output, then the epilogue.
// Values are f32; index arithmetic i32 (WGSL has exact integers). What is not rendered yet is
// `Unsupported` with its reason; the runtime runs that step on the host and reports it.
import type { DType } from '../../ir/dtype.js';
import type { OpName } from '../../ir/registry.js';
import { ExprBuilder, REDUCE_INIT, exprOrder, type Expr, type ReduceOp } from '../expr.js';
import { range, type IExpr, type Var } from '../index-expr.js';
import type { LoopKernel, MatmulKernel } from '../kernel.js';
import { schedule, type Scope } from '../schedule.js';
import { DRAW, philoxDraw } from '../random-fn.js';
import { INDEX_OPS, WGSL_CALLS, WGSL_OPS, f32Literal, helperSources, i32Literal, roundAs, storageOf } from './scalar.js';

export class Unsupported extends Error {}
/** A kernel of no elements: nothing to run (its buffers have no elements either). */
export class NoElements extends Error {}

export interface BufferInfo {
  dtype(buf: number): DType;
  size(buf: number): number;
  /** How the device holds the buffer: f32 or i32 (the epoch of unseeded random keys: its u32 bits). */
  storage(buf: number): 'f32' | 'i32' | undefined;
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
const MAX_GROUPS = 65535;

type Ty = 'f32' | 'i32';

/** Spells expressions as typed WGSL: a `let` per computed expression, conversions where types meet. */
class Writer {
  private readonly declared = new Set<Expr>();
  constructor(
    private readonly bufs: BufferInfo,
    private readonly indexOf: (e: Expr & { t: 'load' | 'index' }) => Expr | undefined,
    private readonly isIndex: (e: Expr) => boolean,
  ) {}

  name(e: Expr): string { return e.t === 'reduce' ? `a${e.id}` : `t${e.id}`; }

  typeOf(e: Expr): Ty {
    switch (e.t) {
      case 'var': case 'index': case 'row': return 'i32';
      case 'load': return this.bufs.storage(e.buf)!;
      case 'op': return this.isIndex(e) ? 'i32' : 'f32';
      case 'const': return this.isIndex(e) ? 'i32' : 'f32';
      default: return 'f32';
    }
  }

  /** The `let` line of a computed expression. */
  line(e: Expr): string | undefined {
    if (e.t === 'const' || e.t === 'var' || e.t === 'reduce' || e.t === 'acc' || this.declared.has(e)) return undefined;
    const s = `let ${this.name(e)} = ${this.raw(e)};`;
    this.declared.add(e);
    return s;
  }

  forget(es: Iterable<Expr>): void { for (const e of es) this.declared.delete(e); }

  /** `e` as a value of type `want`. */
  code(e: Expr, want: Ty): string {
    if (e.t === 'const') return want === 'i32' ? i32Literal(e.v) : f32Literal(e.v);
    let s: string;
    switch (e.t) {
      case 'var': s = `i${e.v.id}`; break;
      case 'acc': s = 'acc'; break;
      case 'reduce': s = `a${e.id}`; break;
      default: s = this.declared.has(e) ? `t${e.id}` : this.raw(e);
    }
    const have = this.typeOf(e);
    return have === want ? s : `${want}(${s})`;
  }

  private raw(e: Expr): string {
    switch (e.t) {
      case 'load': {
        if (this.bufs.storage(e.buf) === undefined) throw new Unsupported(`reads a ${this.bufs.dtype(e.buf)} buffer`);
        return `b${e.buf}[${this.indexCode(e)}]`;
      }
      case 'index': return this.indexCode(e);
      case 'cast': {
        if (storageOf(e.dtype) === undefined) throw new Unsupported(`rounds to ${e.dtype}`);
        return roundAs(e.dtype, this.code(e.x, 'f32'));
      }
      case 'call': {
        if (e.fn === philoxDraw) return this.philox(e.args);
        const f = WGSL_CALLS[e.name as OpName];
        if (f === undefined) throw new Unsupported(`calls ${e.name}, which has no WGSL spelling yet`);
        return f(e.args.map((a) => this.code(a, 'f32')));
      }
      case 'op': {
        const idx = this.isIndex(e);
        const r = (idx ? INDEX_OPS : WGSL_OPS)[e.op];
        if (r === undefined) throw new Unsupported(`${idx ? 'index ' : ''}op ${e.op} has no WGSL spelling yet`);
        return r(e.args.map((a) => this.code(a, idx ? 'i32' : 'f32')));
      }
      // Negative rows count from the end; the range is checked on the host before the kernel runs.
      case 'row': return `t_row(${this.code(e.x, 'i32')}, ${i32Literal(e.rows)})`;
      default: throw new Error(`internal: ${e.t} has no line`);
    }
  }

  /**
   * A random op's element (random-fn.ts' philoxDraw(kind, i, k0, k1, stream, a, b, bits)): the
   * Philox words in u32 lanes, bit-identical to the reference's; the transform in f32.
   */
  private philox(args: readonly Expr[]): string {
    const c = (k: number): number => {
      const a = args[k]!;
      if (a.t !== 'const') throw new Unsupported('a random draw whose parameters are not constants');
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
        const u = bits >= 53 ? `t_unit53(${w}.x, ${w}.y)` : `(f32(${w}.x >> ${32 - bits}u) * ${f32Literal(2 ** -bits)})`;
        return `(${fa} + (${fb} - ${fa}) * ${u})`;
      }
      case DRAW.normal: return `(${fa} + ${fb} * t_normal(${w}))`;
      case DRAW.truncated: return `(${fa} + ${fb} * t_truncnormal(${i}, ${key}))`;
      case DRAW.binomial: {
        // x0 * 2^-32 < p exactly: x0 below the count of grid points under p.
        const n = Math.ceil(lo * 2 ** 32);
        if (n <= 0) return f32Literal(0);
        if (n >= 2 ** 32) return f32Literal(1);
        return `select(0.0, 1.0, ${w}.x < ${n}u)`;
      }
      default: throw new Unsupported(`random draw kind ${kind}`);
    }
  }

  private indexCode(e: Expr & { t: 'load' | 'index' }): string {
    const ix = this.indexOf(e);
    return ix !== undefined ? this.code(ix, 'i32') : iexprCode(e.t === 'load' ? e.index : e.i);
  }
}

/** An index expression in i32 (matmul operands, which are not scheduled). */
export function iexprCode(x: IExpr): string {
  const parts: string[] = [];
  for (const [a, k] of x.terms) {
    let t: string;
    if (a.kind === 'var') t = `i${a.v.id}`;
    else {
      const inner = iexprCode(a.x);
      const nonNeg = range(a.x)[0] >= 0;
      if (a.kind === 'clamp') t = `clamp(${inner}, ${i32Literal(a.lo)}, ${i32Literal(a.hi)})`;
      else if (a.kind === 'div') t = nonNeg ? `(${inner} / ${a.d}i)` : `t_fdiv(${inner}, ${a.d}i)`;
      else t = nonNeg ? `(${inner} % ${a.d}i)` : `t_fmod(${inner}, ${a.d}i)`;
    }
    parts.push(k === 1 ? t : `${t} * ${i32Literal(k)}`);
  }
  if (x.c !== 0 || parts.length === 0) parts.push(i32Literal(x.c));
  return parts.length === 1 ? parts[0]! : `(${parts.join(' + ')})`;
}

function foldCode(op: ReduceOp, acc: string, v: string): string {
  switch (op) {
    case 'sum': return `${acc} += ${v};`;
    case 'prod': return `${acc} *= ${v};`;
    case 'max': return `${acc} = max(${acc}, ${v});`;
    case 'min': return `${acc} = min(${acc}, ${v});`;
    case 'any': return `if (${v} != 0.0) { ${acc} = 1.0; }`;
    case 'all': return `if (${v} == 0.0) { ${acc} = 0.0; }`;
  }
}

/** Kahan's compensated sum (an f32 accumulator over long loops), reset where the sum is infinite. */
function kahanStep(id: number, v: string): string {
  return `{ let y = ${v} - c${id}; let z = a${id} + y; c${id} = (z - a${id}) - y; if (c${id} != c${id}) { c${id} = 0.0; } a${id} = z; }`;
}

/** Storage declarations: binding k holds buffer binds[k]. */
function bindings(binds: readonly number[], writes: readonly number[], bufs: BufferInfo): string[] {
  return binds.map((b, k) => {
    const ty = bufs.storage(b);
    if (ty === undefined) throw new Unsupported(`${writes.includes(b) ? 'stores' : 'reads'} a ${bufs.dtype(b)} buffer`);
    return `@group(0) @binding(${k}) var<storage, ${writes.includes(b) ? 'read_write' : 'read'}> b${b}: array<${ty}>;`;
  });
}

function loaded(roots: readonly Expr[]): number[] {
  const out = new Set<number>();
  for (const e of exprOrder(roots)) if (e.t === 'load') out.add(e.buf);
  return [...out].sort((p, q) => p - q);
}

/** A 1-D dispatch of `n` invocations, split over y where x would pass the per-dimension limit. */
function groups1d(n: number): [number, number, number] {
  const g = Math.ceil(n / WG);
  if (g <= MAX_GROUPS) return [g, 1, 1];
  return [MAX_GROUPS, Math.ceil(g / MAX_GROUPS), 1];
}

/** The storage buffers a shader may bind (WebGPU's default maxStorageBuffersPerShaderStage). */
export const MAX_BINDINGS = 8;

function assemble(label: string, body: string[], binds: number[], writes: number[], bufs: BufferInfo, groups: [number, number, number], header: string[] = []): WgslKernel {
  if (binds.length > MAX_BINDINGS) throw new Unsupported(`binds ${binds.length} buffers (a shader binds at most ${MAX_BINDINGS})`);
  const text = body.join('\n');
  const code = [...bindings(binds, writes, bufs), ...header, ...helperSources(text), text].join('\n');
  return { label, code, binds, writes, groups };
}

/** A loop kernel: one invocation per element of its output loops, every store in the one shader. */
export function renderLoop(k: LoopKernel, bufs: BufferInfo): WgslKernel {
  const written = new Set(k.stores.map((st) => st.buf));
  for (const st of k.stores) {
    if (storageOf(st.dtype) === undefined) throw new Unsupported(`stores ${st.dtype}`);
    if (st.accumulate === true || st.dyn !== undefined) throw new Unsupported('scatters into rows chosen by data');
  }
  const reads = loaded(k.stores.map((st) => st.value));
  if (reads.some((b) => written.has(b))) throw new Unsupported('a running value along an axis (elements read the ones stored before them)');
  const total = k.vars.reduce((p, v) => p * v.size, 1);
  if (total === 0) throw new NoElements();
  if (total > 2 ** 31 - 1) throw new Unsupported(`${total} elements (i32 indices)`);
  const b = new ExprBuilder(() => 'float64');
  const s = schedule(k.vars, k.stores, b);
  const indexNodes = new Set<Expr>();
  for (const ix of s.loadIndex.values()) for (const e of exprOrder([ix])) indexNodes.add(e);
  for (const st of s.stores) for (const e of exprOrder([st.index])) indexNodes.add(e);
  const w = new Writer(bufs, (e) => s.loadIndex.get(e), (e) => indexNodes.has(e));
  const outputVars = new Set(k.vars.map((v) => v.id));
  const lines: string[] = [`let i = i32(gid.x + gid.y * nwg.x * ${WG}u);`, `if (i >= ${total}i) { return; }`];
  // Output coordinates: row-major over the kernel's output loops.
  let stride = total;
  for (const v of k.vars) {
    stride /= v.size;
    lines.push(v.size === 1 ? `let i${v.id} = 0i;` : `let i${v.id} = (i / ${stride}i) % ${v.size}i;`);
  }
  const fold = (r: Expr & { t: 'reduce' }): string => (r.op === 'sum' ? kahanStep(r.id, w.code(r.body, 'f32')) : foldCode(r.op, w.name(r), w.code(r.body, 'f32')));
  const declaredIn = (scope: Scope): Expr[] => scope.items.flatMap((it) => (it.kind === 'loop' ? declaredIn(it.scope) : [it.e]));
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
    if (scope.reduce !== undefined && s.reduceLoops.get(scope.reduce)!.last === scope) lines.push(ind + fold(scope.reduce as Expr & { t: 'reduce' }));
  };
  const loop = (scope: Scope, ind: string): void => {
    const v = `i${scope.v!.id}`;
    const inside = declaredIn(scope);
    lines.push(`${ind}for (var ${v} = 0i; ${v} < ${scope.v!.size}i; ${v}++) {`);
    emit(scope, `${ind}  `);
    lines.push(`${ind}}`);
    w.forget(inside); // names declared inside the loop are out of scope after it
  };
  const reduce = (r: Expr & { t: 'reduce' }, ind: string): void => {
    lines.push(`${ind}var ${w.name(r)}: f32 = ${f32Literal(REDUCE_INIT[r.op])};${r.op === 'sum' ? ` var c${r.id}: f32 = 0.0;` : ''}`);
    const loops = s.reduceLoops.get(r)!;
    if (loops.first === s.scopeOf.get(r)) lines.push(ind + fold(r));
    else loop(loops.first, ind);
  };
  emit(s.top, '');
  for (const st of s.stores) {
    const ty = storageOf(st.store.dtype)!;
    const v = roundAs(st.store.dtype, w.code(st.value, 'f32'));
    lines.push(`b${st.store.buf}[${w.code(st.index, 'i32')}] = ${ty === 'f32' ? v : `i32(${v})`};`);
  }
  const binds = [...new Set([...written, ...reads])].sort((p, q) => p - q);
  const body = [
    `@compute @workgroup_size(${WG})`,
    'fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {',
    ...lines.map((l) => `  ${l}`),
    '}',
  ];
  return assemble(k.label, body, binds, [...written], bufs, groups1d(total));
}

/** Output tile edge of a matmul workgroup, and the register tile each invocation sums. */
const TILE = 32;
const RT = 2;
const TK = 16;

/**
 * A matmul kernel as a workgroup-tiled product (tfjs-backend-webgpu's matmul_packed and the
 * classic shared-memory GEMM are the anchors): a workgroup of 16 x 16 invocations computes a
 * 32 x 32 output tile, staging 32 x 16 of A and 16 x 32 of B in workgroup memory per step of k;
 * each invocation sums a 2 x 2 register tile. Operands are the kernel's expressions, evaluated at
 * the staged coordinates (0 outside the product), so transposes and masks cost no copies.
 */
export function renderMatmul(k: MatmulKernel, bufs: BufferInfo): WgslKernel {
  const st = k.out;
  if (storageOf(st.dtype) === undefined) throw new Unsupported(`stores ${st.dtype}`);
  if (st.accumulate === true || st.dyn !== undefined) throw new Unsupported('a product stored into rows chosen by data');
  if (exprOrder([k.a, k.b, st.value]).some((e) => e.t === 'reduce')) throw new Unsupported('a reduction inside a matmul');
  if (k.batch.size * k.m.size * k.n.size === 0) throw new NoElements();
  const reads = loaded([k.a, k.b, st.value]);
  if (reads.includes(st.buf)) throw new Unsupported('a product reading its own output');
  const operand = (name: string, e: Expr, vars: readonly Var[]): string[] => {
    const w = new Writer(bufs, () => undefined, () => false);
    const ls = exprOrder([e]).map((x) => w.line(x)).filter((l): l is string => l !== undefined);
    return [
      `fn ${name}(${vars.map((v) => `i${v.id}: i32`).join(', ')}) -> f32 {`,
      ...ls.map((l) => `  ${l}`),
      `  return ${w.code(e, 'f32')};`,
      '}',
    ];
  };
  const ew = new Writer(bufs, () => undefined, () => false);
  const epi = exprOrder([st.value]).map((x) => ew.line(x)).filter((l): l is string => l !== undefined);
  const ty = storageOf(st.dtype)!;
  const stored = roundAs(st.dtype, ew.code(st.value, 'f32'));
  const [B, M, N, K] = [k.batch, k.m, k.n, k.k];
  const body = [
    `var<workgroup> tA: array<array<f32, ${TK}>, ${TILE}>;`,
    `var<workgroup> tB: array<array<f32, ${TILE}>, ${TK}>;`,
    ...operand('opA', k.a, [B, M, K]),
    ...operand('opB', k.b, [B, K, N]),
    `fn epilogue(i${B.id}: i32, i${M.id}: i32, i${N.id}: i32, acc: f32) {`,
    `  if (i${M.id} >= ${M.size}i || i${N.id} >= ${N.size}i) { return; }`,
    ...epi.map((l) => `  ${l}`),
    `  b${st.buf}[${iexprCode(st.index)}] = ${ty === 'f32' ? stored : `i32(${stored})`};`,
    '}',
    `@compute @workgroup_size(${TILE / RT}, ${TILE / RT})`,
    'fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {',
    '  let bz = i32(wg.z);',
    `  let row0 = i32(wg.y) * ${TILE}i;`,
    `  let col0 = i32(wg.x) * ${TILE}i;`,
    '  let tx = i32(lid.x);',
    '  let ty = i32(lid.y);',
    '  let flat = ty * 16i + tx;',
    `  var acc: array<f32, ${RT * RT}>;`,
    `  for (var k0 = 0i; k0 < ${K.size}i; k0 += ${TK}i) {`,
    // 256 invocations stage 512 values of A and of B: two each.
    '    for (var s = 0i; s < 2i; s++) {',
    '      let e = flat + s * 256i;',
    `      let ar = e / ${TK}i; let ak = e % ${TK}i;`,
    `      let gr = row0 + ar; let gk = k0 + ak;`,
    `      tA[ar][ak] = select(0.0, opA(bz, min(gr, ${M.size - 1}i), min(gk, ${K.size - 1}i)), gr < ${M.size}i && gk < ${K.size}i);`,
    `      let bk = e / ${TILE}i; let bc = e % ${TILE}i;`,
    `      let hk = k0 + bk; let hc = col0 + bc;`,
    `      tB[bk][bc] = select(0.0, opB(bz, min(hk, ${K.size - 1}i), min(hc, ${N.size - 1}i)), hk < ${K.size}i && hc < ${N.size}i);`,
    '    }',
    '    workgroupBarrier();',
    `    for (var kk = 0i; kk < ${TK}i; kk++) {`,
    `      let a0 = tA[ty * ${RT}i][kk]; let a1 = tA[ty * ${RT}i + 1i][kk];`,
    `      let c0 = tB[kk][tx * ${RT}i]; let c1 = tB[kk][tx * ${RT}i + 1i];`,
    '      acc[0] += a0 * c0; acc[1] += a0 * c1; acc[2] += a1 * c0; acc[3] += a1 * c1;',
    '    }',
    '    workgroupBarrier();',
    '  }',
    `  let r = row0 + ty * ${RT}i; let c = col0 + tx * ${RT}i;`,
    '  epilogue(bz, r, c, acc[0]); epilogue(bz, r, c + 1i, acc[1]);',
    '  epilogue(bz, r + 1i, c, acc[2]); epilogue(bz, r + 1i, c + 1i, acc[3]);',
    '}',
  ];
  const binds = [...new Set([st.buf, ...reads])].sort((p, q) => p - q);
  if (B.size > MAX_GROUPS) throw new Unsupported(`${B.size} products in a batch (at most ${MAX_GROUPS} per dispatch)`);
  return assemble(k.label, body, binds, [st.buf], bufs, [Math.ceil(N.size / TILE), Math.ceil(M.size / TILE), B.size]);
}

/** A row index the host checks before a kernel runs (shaders cannot throw). */
export interface RowCheck {
  readonly buf: number;
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
