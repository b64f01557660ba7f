// Codegen step 4 on the gpu device's WebGPU mode (src/codegen/pipeline.ts): where each step
// runs, chosen before rendering, so render.ts and matmul.ts only spell what is chosen here (as
// cpu/strategy.ts and gpu/strategy.ts do; tinygrad decides on the kernel AST before its
// renderer sees it). A loop step on the device comes scheduled (../schedule.ts) in its form: one
// invocation per element, or one workgroup or one invocation per row (rows.ts `rowsForm`, `rowLanes`). A step runs on the
// host with the reason where WGSL has no spelling for it yet: dtypes the device does not hold,
// ops and calls without a WGSL spelling (scalar.ts; user ops: user.ts), scatters and running values, more
// elements than i32 indices reach, more bindings than the device allows; extern and print
// steps always.
import type { OpName } from '../../ir/registry.js';
import { ExprBuilder, exprOrder, type Expr } from '../kernel/expr.js';
import type { LoopKernel, MatmulKernel, Program, Step } from '../kernel/ir.js';
import { DRAW, philoxDraw } from '../lower/random-fn.js';
import { rowChecks, type RowCheck } from '../kernel/row-checks.js';
import { schedule, type Schedule } from '../transform/schedule.js';
import type { MatmulForm } from './matmul.js';
import { rowLanes, rowsForm } from './rows.js';
import { planSteps, type StepsPlan } from './steps.js';
import { CHECKED_CALLS } from './checked.js';
import { unspelledCall, userWgslCall } from './user.js';
import { planPack, type Pack } from './pack.js';
import { INDEX_OPS, WGSL_CALLS, WGSL_OPS, storageOf, type Storage } from './scalar.js';
import { MAX_BINDINGS, MAX_GROUPS, WG, loaded, type BufferInfo } from './writer.js';

/** A loop kernel as render.ts spells it: scheduled, its index arithmetic, its form and bindings. */
export interface LoopPlan {
  readonly sched: Schedule;
  readonly indexNodes: ReadonlySet<Expr>;
  /** Output loops that make a row in the rows form (rows.ts); undefined: one invocation per element. */
  readonly rows: number | undefined;
  readonly total: number;
  readonly written: readonly number[];
  readonly binds: readonly number[];
  /** The steps form (steps.ts): elements read what others stored, or accumulate into rows chosen by data. */
  readonly steps?: StepsPlan;
  /** The kernel calls a function the host checks its arguments with (checked.ts): the cpu's code runs first on the host, its results unused. */
  readonly hostCheck?: boolean;
  /** Read-only buffers packed into one binding, where the kernel reads more than the device binds (pack.ts). */
  readonly pack?: Pack;
  /** Invocations per workgroup (the default, or what the workgroup chooser gave); in the rows form, per row (1: each invocation a row, ROW_LANES rows a workgroup). */
  readonly workgroup: number;
}

/** The workgroup sizes the loop renderers take: powers of two up to 256, WebGPU's least maxComputeInvocationsPerWorkgroup. */
export const WORKGROUP_SIZES: readonly number[] = [16, 32, 64, 128, 256];

/** The sizes a chooser may take for `plan`: WORKGROUP_SIZES and the plan's own default (1 in the rows form of one row per invocation). */
export function workgroupSizes(plan: LoopPlan): readonly number[] {
  return WORKGROUP_SIZES.includes(plan.workgroup) ? WORKGROUP_SIZES : [plan.workgroup, ...WORKGROUP_SIZES];
}

/**
 * The tuning hook for workgroup sizes: asked once per loop step the device runs, with its plan at
 * the default size (`plan.rows` set: one workgroup per row, its invocations folding the row's
 * reductions together; else one invocation per element); undefined keeps the default. A size
 * only regroups invocations: an elementwise kernel computes the same values, a row's folds
 * combine their parts in another order. (Matrix products keep their tiling: matmul.ts.)
 */
export interface WorkgroupChooser {
  loop(k: LoopKernel, plan: LoopPlan): number | undefined;
}

let chooser: WorkgroupChooser | undefined;

/** Installs the workgroup chooser the strategy step asks from now on (undefined: the defaults); returns the one it replaces. */
export function setWorkgroupChooser(c: WorkgroupChooser | undefined): WorkgroupChooser | undefined {
  const was = chooser;
  chooser = c;
  return was;
}

/** Where a step runs. */
export type WebStrategy =
  | { readonly where: 'device'; readonly kind: 'loop'; readonly plan: LoopPlan; readonly checks: readonly RowCheck[] }
  | { readonly where: 'device'; readonly kind: 'matmul'; readonly form: MatmulForm }
  /** a Scan whose body's steps all run on the device (recorded into the call's command buffer) */
  | { readonly where: 'device'; readonly kind: 'scan'; readonly body: readonly WebStrategy[] }
  /** a kernel of no elements: nothing to run (its buffers hold none) */
  | { readonly where: 'device'; readonly kind: 'empty' }
  | { readonly where: 'host'; readonly kind: 'host'; readonly why: string };

/** A step WGSL cannot spell yet, with the reason. */
class HostStep extends Error {}
class Empty extends Error {}

/**
 * How the device holds buffer `b` of `p`: f32, i32 (the epoch of unseeded random keys: its u32
 * bits), or f16 for float16 where `half` (the device has `shader-f16`).
 */
export function storageIn(p: Program, b: number, half = false): Storage | undefined {
  return p.buffers[b]!.role === 'epoch' ? 'i32' : storageOf(p.buffers[b]!.dtype, half);
}

/** The buffers of `p` as the renderer sees them on a device binding at most `maxBindings` storage buffers per shader; `half`: float16 held as f16. */
export function webBufferInfo(p: Program, maxBindings: number, half = false): BufferInfo {
  return {
    dtype: (b) => p.buffers[b]!.dtype,
    size: (b) => p.buffers[b]!.size,
    storage: (b) => storageIn(p, b, half),
    maxBindings,
  };
}

/**
 * Whether an adapter runs a workgroup's invocations as SIMD lanes on CPU threads (Mesa's lavapipe,
 * SwiftShader), from its vendor, architecture and description: there a barrier switches between
 * the lanes' coroutines, and the strategy avoids them (rows.ts `rowLanes`, matmul.ts' lanes form).
 */
export function simdAdapter(description: string): boolean {
  return /\b(software|llvmpipe|lavapipe|swiftshader)\b/i.test(description);
}

/**
 * The strategy of every step of `p`, in step order, on a device binding at most `maxBindings`
 * storage buffers per shader; `simdLanes`: the device is one `simdAdapter` says so of.
 */
export function chooseWebStrategies(p: Program, maxBindings: number, simdLanes = false, half = false): WebStrategy[] {
  const info = webBufferInfo(p, maxBindings, half);
  return p.steps.map((s) => webStrategy(s, info, maxBindings, simdLanes, half));
}

function webStrategy(s: Step, info: BufferInfo, maxBindings: number, simdLanes: boolean, half: boolean): WebStrategy {
  try {
    switch (s.kind) {
      case 'loop': {
        const checks = rowChecks(s, (why) => new HostStep(why));
        return { where: 'device', kind: 'loop', plan: chosenWorkgroup(s, planLoop(s, info, simdLanes)), checks };
      }
      case 'matmul':
        checkMatmul(s, info);
        return { where: 'device', kind: 'matmul', form: simdLanes ? 'lanes' : 'tiles' };
      case 'scan': {
        const body = chooseWebStrategies(s.body, maxBindings, simdLanes, half);
        body.forEach((b, i) => {
          const step = s.body.steps[i]!;
          if (b.kind === 'host')
            throw new HostStep(
              `its body's ${step.kind === 'extern' ? 'op' : 'kernel'} ${step.kind === 'extern' ? step.def.name : step.label} runs on the host (${b.why})`,
            );
          if (b.kind === 'loop' && b.checks.length > 0)
            throw new HostStep('its body checks row numbers read from data on the host');
          if (b.kind === 'loop' && b.plan.hostCheck === true)
            throw new HostStep('its body checks values read from data on the host');
        });
        return { where: 'device', kind: 'scan', body };
      }
      case 'extern':
        throw new HostStep(`op ${s.def.name} has no kernel (${s.reason})`);
      case 'print':
        throw new HostStep('print_tensor is a host callback');
    }
  } catch (e) {
    if (e instanceof Empty) return { where: 'device', kind: 'empty' };
    if (!(e instanceof HostStep)) throw e;
    return { where: 'host', kind: 'host', why: e.message };
  }
}

function planLoop(k: LoopKernel, info: BufferInfo, simdLanes: boolean): LoopPlan {
  const written = new Set(k.stores.map((st) => st.buf));
  let ordered = false;
  for (const st of k.stores) {
    if (storageOf(st.dtype) === undefined) throw new HostStep(`stores ${st.dtype}`);
    if (st.accumulate === true || st.dyn !== undefined) ordered = true;
  }
  const reads = loaded(k.stores.flatMap((st) => (st.dyn !== undefined ? [st.value, st.dyn.row] : [st.value])));
  if (reads.some((b) => written.has(b))) ordered = true;
  const total = k.vars.reduce((p, v) => p * v.size, 1);
  if (total === 0) throw new Empty();
  if (total > 2 ** 31 - 1) throw new HostStep(`${total} elements (i32 indices)`);
  const steps = ordered ? planSteps(k, info.size, (why) => new HostStep(why)) : undefined;
  const sched = schedule(k.vars, k.stores, new ExprBuilder(() => 'float64'));
  const indexNodes = new Set<Expr>();
  for (const ix of sched.loadIndex.values()) for (const e of exprOrder([ix])) indexNodes.add(e);
  for (const st of sched.stores) for (const e of exprOrder([st.index])) indexNodes.add(e);
  const checked = checkSpelled(
    [...sched.stores.flatMap((st) => [st.value, st.index]), ...sched.loadIndex.values()],
    info,
    (e) => indexNodes.has(e),
  );
  const binds = [...new Set([...written, ...reads])].sort((p, q) => p - q);
  const pack = planPack(binds, [...written], info);
  if (typeof pack === 'string') throw new HostStep(pack);
  checkBinds(binds, [...written], pack === undefined ? info : { ...info, maxBindings: Number.POSITIVE_INFINITY });
  const rows = steps === undefined ? rowsForm(k, sched) : undefined;
  return {
    sched,
    indexNodes,
    rows,
    total,
    written: [...written],
    binds,
    workgroup: rows === undefined ? WG : rowLanes(k, rows, simdLanes),
    ...(steps !== undefined ? { steps } : {}),
    ...(checked ? { hostCheck: true } : {}),
    ...(pack !== undefined ? { pack } : {}),
  };
}

function chosenWorkgroup(k: LoopKernel, plan: LoopPlan): LoopPlan {
  if (plan.steps !== undefined) return plan; // one workgroup walks the steps (steps.ts)
  const wg = chooser?.loop(k, plan);
  if (wg === undefined || wg === plan.workgroup) return plan;
  if (!WORKGROUP_SIZES.includes(wg))
    throw new Error(
      `the workgroup chooser gave ${wg} invocations for kernel ${k.label}; allowed: ${WORKGROUP_SIZES.join(', ')}`,
    );
  return { ...plan, workgroup: wg };
}

function checkMatmul(k: MatmulKernel, info: BufferInfo): void {
  const st = k.out;
  if (storageOf(st.dtype) === undefined) throw new HostStep(`stores ${st.dtype}`);
  if (st.accumulate === true || st.dyn !== undefined) throw new HostStep('a product stored into rows chosen by data');
  if (exprOrder([k.a, k.b, st.value]).some((e) => e.t === 'reduce')) throw new HostStep('a reduction inside a matmul');
  if (k.batch.size * k.m.size * k.n.size === 0) throw new Empty();
  const reads = loaded([k.a, k.b, st.value]);
  if (reads.includes(st.buf)) throw new HostStep('a product reading its own output');
  if (checkSpelled([k.a, k.b, st.value], info, () => false)) throw new HostStep('a checked call inside a product');
  if (k.batch.size > MAX_GROUPS)
    throw new HostStep(`${k.batch.size} products in a batch (at most ${MAX_GROUPS} per dispatch)`);
  checkBinds(
    [...new Set([st.buf, ...reads])].sort((p, q) => p - q),
    [st.buf],
    info,
  );
}

const DRAWS: ReadonlySet<number> = new Set(Object.values(DRAW));

/** Every expression the Writer (writer.ts) would spell has a WGSL spelling (`isIndex`: the index arithmetic); whether one is a checked call. */
function checkSpelled(roots: readonly Expr[], info: BufferInfo, isIndex: (e: Expr) => boolean): boolean {
  let checked = false;
  for (const e of exprOrder(roots)) {
    switch (e.t) {
      case 'load':
        if (info.storage(e.buf) === undefined) throw new HostStep(`reads a ${info.dtype(e.buf)} buffer`);
        break;
      case 'cast':
        if (storageOf(e.dtype) === undefined) throw new HostStep(`rounds to ${e.dtype}`);
        break;
      case 'call':
        if (e.fn === philoxDraw) {
          if ([0, 2, 4, 5, 6, 7].some((k) => e.args[k]!.t !== 'const'))
            throw new HostStep('a random draw whose parameters are not constants');
          const kind = (e.args[0] as Expr & { t: 'const' }).v;
          if (!DRAWS.has(kind)) throw new HostStep(`random draw kind ${kind}`);
        } else if (CHECKED_CALLS[e.name] !== undefined) checked = true;
        else if (WGSL_CALLS[e.name as OpName] === undefined && userWgslCall(e.fn) === undefined)
          throw new HostStep(unspelledCall(e.fn, e.name));
        break;
      case 'op': {
        const idx = isIndex(e);
        if ((idx ? INDEX_OPS : WGSL_OPS)[e.op] === undefined)
          throw new HostStep(`${idx ? 'index ' : ''}op ${e.op} has no WGSL spelling yet`);
        break;
      }
      default:
        break;
    }
  }
  return checked;
}

/** The shader's bindings: at most the device's count, each buffer in a storage the device holds. */
function checkBinds(binds: readonly number[], writes: readonly number[], info: BufferInfo): void {
  const most = info.maxBindings ?? MAX_BINDINGS;
  if (binds.length > most)
    throw new HostStep(`binds ${binds.length} buffers (a shader binds at most ${most} on this device)`);
  for (const b of binds)
    if (info.storage(b) === undefined)
      throw new HostStep(`${writes.includes(b) ? 'stores' : 'reads'} a ${info.dtype(b)} buffer`);
}
