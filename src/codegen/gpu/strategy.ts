// Codegen step 4 on the gpu device (src/codegen/pipeline.ts): where each step runs, chosen
// before rendering, so render.ts only spells what is chosen here (as cpu/strategy.ts does for
// the cpu tiers; tinygrad decides on the kernel AST before its renderer sees it). A step runs
// on the device, its loop kernels scheduled (../schedule.ts) one kernel per store, or on the
// host with the reason: dtypes a float32 texel does not hold, ops and calls without a gpu
// spelling (scalar.ts), stores that do not write their buffer in row-major order, scatters
// and running values, sizes beyond exact float32 indices, loops longer than the device allows.
import type { DType } from '../../ir/dtype.js';
import { sizeOf, stridesOf } from '../../ir/ndarray.js';
import { ExprBuilder, exprOrder, type Expr, type ScalarOp } from '../kernel/expr.js';
import type { IExpr, Var } from '../kernel/index-expr.js';
import type { ExternStep, LoopKernel, MatmulKernel, Program, Step, Store } from '../kernel/ir.js';
import { rowChecks, type RowCheck } from '../kernel/row-checks.js';
import { schedule, type Schedule, type Scope } from '../transform/schedule.js';
import { userCallOf, userTemplates } from '../lower/user.js';
import { GPU_CALLS, gpuOpCode } from './scalar.js';
import { MAX_ELEMENTS } from './source.js';

/** dtypes a float32 texel holds exactly (float16 values are float32 values; ints within 2^24). */
export const STORED: ReadonlySet<DType> = new Set(['float32', 'int32', 'int16', 'int8', 'uint8', 'bool']);
const LOADED: ReadonlySet<DType> = new Set([...STORED, 'float16']);
/** Index arithmetic render.ts spells (integer literals, float32 arithmetic). */
export const INDEX_OPS: ReadonlySet<ScalarOp> = new Set<ScalarOp>([
  'add',
  'sub',
  'mul',
  'idiv',
  'div',
  'imod',
  'mod',
  'floor',
  'max',
  'min',
]);

export interface BufferInfo {
  dtype(buf: number): DType;
  size(buf: number): number;
}

/** What the device renderer needs to know of the device. */
export interface GpuTarget {
  /** Loop iterations per element this GL runs before it stops. */
  readonly maxLoop: number;
}

/** One store of a loop kernel as a device kernel: its schedule and the expressions that are index arithmetic. */
export interface StorePlan {
  readonly store: Store;
  readonly sched: Schedule;
  readonly indexNodes: ReadonlySet<Expr>;
}

/** Where a step runs. */
export type GpuStrategy =
  | {
      readonly where: 'device';
      readonly kind: 'loop';
      readonly stores: readonly StorePlan[];
      readonly checks: readonly RowCheck[];
    }
  | { readonly where: 'device'; readonly kind: 'matmul' }
  /** an extern step of a user op with only a gpu template (extern.ts) */
  | { readonly where: 'device'; readonly kind: 'op' }
  /** a host loop over its body's steps, each with its own strategy; states stay on the device */
  | { readonly where: 'device'; readonly kind: 'scan'; readonly body: readonly GpuStrategy[] }
  /** print_tensor's host callback */
  | { readonly where: 'host'; readonly kind: 'print' }
  | { readonly where: 'host'; readonly kind: 'host'; readonly why: string };

/** A step the device cannot run, with the reason. */
class HostStep extends Error {}

/** The strategy of every step of `p`, in step order. */
export function chooseGpuStrategies(p: Program, target: GpuTarget): GpuStrategy[] {
  const info: BufferInfo = { dtype: (b) => p.buffers[b]!.dtype, size: (b) => p.buffers[b]!.size };
  return p.steps.map((s) => gpuStrategy(s, info, target));
}

function gpuStrategy(s: Step, info: BufferInfo, target: GpuTarget): GpuStrategy {
  try {
    switch (s.kind) {
      case 'loop': {
        const checks = rowChecks(s, (why) => new HostStep(why));
        return {
          where: 'device',
          kind: 'loop',
          stores: s.stores.map((st) => planLoopStore(s, st, info, target)),
          checks,
        };
      }
      case 'matmul':
        checkMatmul(s, info, target);
        return { where: 'device', kind: 'matmul' };
      case 'scan':
        return {
          where: 'device',
          kind: 'scan',
          body: s.body.steps.map((b) => gpuStrategy(b, bodyInfo(s.body), target)),
        };
      case 'print':
        return { where: 'host', kind: 'print' };
      case 'extern':
        checkExtern(s);
        return { where: 'device', kind: 'op' };
    }
  } catch (e) {
    if (!(e instanceof HostStep)) throw e;
    return { where: 'host', kind: 'host', why: e.message };
  }
}

const bodyInfo = (p: Program): BufferInfo => ({ dtype: (b) => p.buffers[b]!.dtype, size: (b) => p.buffers[b]!.size });

const EXTERN_DTYPES: ReadonlySet<DType> = STORED;

/** An extern step runs on the device only as a user op's gpu template over exact float32 indices. */
function checkExtern(s: ExternStep): void {
  const out = s.outs[0]!;
  const why = `op ${s.def.name} runs its reference implementation`;
  if (
    s.tuple ||
    !EXTERN_DTYPES.has(out.dtype) ||
    sizeOf(out.shape) === 0 ||
    s.inputs.some((v) => sizeOf(v.shape) === 0)
  )
    throw new HostStep(why);
  if (userTemplates(s.def.name)?.gpu === undefined || sizeOf(out.shape) > MAX_ELEMENTS) throw new HostStep(why);
}

/** One store of a loop kernel, scheduled, or the reason it runs on the host. */
function planLoopStore(k: LoopKernel, st: Store, info: BufferInfo, target: GpuTarget): StorePlan {
  if (!STORED.has(st.dtype)) throw new HostStep(`stores ${st.dtype}`);
  // One thread per output element cannot add into rows chosen by data (scatter_add_rows).
  if (st.accumulate === true || st.dyn !== undefined) throw new HostStep('scatters into rows chosen by data');
  // A scan (cumsum): each element reads the one stored before it, so its elements are not independent.
  if (loadedBuffers([st.value]).some((buf) => k.stores.some((o) => o.buf === buf)))
    throw new HostStep('a running value along an axis');
  const sched = schedule(k.vars, [st], new ExprBuilder(() => 'float64'));
  const indexNodes = new Set<Expr>();
  for (const ix of sched.loadIndex.values()) for (const e of exprOrder([ix])) indexNodes.add(e);
  checkLayout(k.vars, st.index, info.size(st.buf));
  checkSpelled([sched.stores[0]!.value, ...sched.loadIndex.values()], info, (e) => indexNodes.has(e));
  checkSize(loadedBuffers([st.value]), st.buf, info);
  checkLoops(loopIterations(sched, new Set(k.vars.map((v) => v.id))), target);
  return { store: st, sched, indexNodes };
}

function checkMatmul(k: MatmulKernel, info: BufferInfo, target: GpuTarget): void {
  const st = k.out;
  if (!STORED.has(st.dtype)) throw new HostStep(`stores ${st.dtype}`);
  if (exprOrder([k.a, k.b, st.value]).some((e) => e.t === 'reduce')) throw new HostStep('a reduction inside a matmul');
  checkLayout([k.batch, k.m, k.n], st.index, info.size(st.buf));
  checkSpelled([k.a, k.b, st.value], info, () => false);
  checkSize(loadedBuffers([k.a, k.b, st.value]), st.buf, info);
  checkLoops(k.k.size, target);
}

/**
 * The output variables by falling stride and their row-major strides, when the store writes
 * the whole buffer in row-major order of its variables taken in some order (the output of
 * lowering; a grouped convolution's group variable sits between its rows and columns).
 */
export function outputLayout(
  vars: readonly Var[],
  index: IExpr,
  bufSize: number,
): { readonly used: readonly Var[]; readonly strides: readonly number[] } | undefined {
  const total = vars.reduce((p, v) => p * v.size, 1);
  // size-1 variables are 0 wherever they stand
  const used = vars.filter((v) => v.size > 1).sort((p, q) => index.coef(q) - index.coef(p));
  const strides = stridesOf(used.map((v) => v.size));
  const ok =
    index.c === 0 &&
    total === bufSize &&
    index.terms.every(([a]) => a.kind === 'var' && vars.some((v) => v.id === a.v.id)) &&
    used.every((v, p) => index.coef(v) === strides[p]);
  return ok ? { used, strides } : undefined;
}

function checkLayout(vars: readonly Var[], index: IExpr, bufSize: number): void {
  if (outputLayout(vars, index, bufSize) === undefined)
    throw new HostStep('a store that does not write its whole buffer in order');
}

/** Every expression render.ts would spell has a gpu spelling (`isIndex`: the index arithmetic). */
function checkSpelled(roots: readonly Expr[], info: BufferInfo, isIndex: (e: Expr) => boolean): void {
  const none = ['x', 'y', 'z'];
  for (const e of exprOrder(roots)) {
    switch (e.t) {
      case 'load':
        if (!LOADED.has(info.dtype(e.buf))) throw new HostStep(`reads a ${info.dtype(e.buf)} buffer`);
        break;
      case 'cast':
        if (e.dtype !== 'float32' && !STORED.has(e.dtype)) throw new HostStep(`rounds to ${e.dtype}`);
        break;
      case 'call': {
        if (GPU_CALLS[e.name as keyof typeof GPU_CALLS] !== undefined) break;
        // a user op's cpu template: its gpu template instead
        const u = userCallOf(e.fn);
        if (u === undefined || userTemplates(u.op)?.gpu === undefined)
          throw new HostStep(`calls ${e.name}, which has no gpu spelling`);
        break;
      }
      case 'op':
        if (isIndex(e)) {
          if (!INDEX_OPS.has(e.op)) throw new HostStep(`index op ${e.op}`);
        } else if (e.op !== 'idiv' && e.op !== 'imod' && gpuOpCode(e.op, none.slice(0, e.args.length)) === undefined)
          throw new HostStep(`op ${e.op}`);
        break;
      default:
        break;
    }
  }
}

function checkSize(loaded: readonly number[], out: number, info: BufferInfo): void {
  const size = info.size(out);
  if (size > MAX_ELEMENTS) throw new HostStep(`${size} elements (indices are exact in float32 below 2^24)`);
  if (size === 0 || loaded.some((b) => info.size(b) === 0)) throw new HostStep('no elements');
}

function checkLoops(it: number, target: GpuTarget): void {
  if (it > target.maxLoop) throw new HostStep(`${it} loop iterations per element (this GL stops at ${target.maxLoop})`);
}

/**
 * Loop iterations one element's kernel runs, all loops together (each loop's bound times the
 * bounds of the loops around it): the scopes render.ts spells as loops, that is those of
 * reduction variables (output variables are the element's coordinates).
 */
function loopIterations(s: Schedule, outputVars: ReadonlySet<number>): number {
  let total = 0;
  const walk = (scope: Scope, mult: number): void => {
    for (const it of scope.items) {
      if (it.kind === 'loop') {
        if (outputVars.has(it.scope.v!.id)) walk(it.scope, mult);
        else loop(it.scope, mult);
      } else if (it.e.t === 'reduce') {
        const loops = s.reduceLoops.get(it.e)!;
        if (loops.first !== s.scopeOf.get(it.e)) loop(loops.first, mult);
      }
    }
  };
  const loop = (scope: Scope, mult: number): void => {
    const n = mult * scope.v!.size;
    total += n;
    walk(scope, n);
  };
  walk(s.top, 1);
  return total;
}

/** The buffers an expression tree loads, in increasing order. */
export function loadedBuffers(roots: readonly Expr[]): number[] {
  const out = new Set<number>();
  for (const e of exprOrder(roots)) if (e.t === 'load') out.add(e.buf);
  return [...out].sort((p, q) => p - q);
}
