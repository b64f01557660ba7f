// K.function and the update records it takes.
import { tuneOptions, type TuneOption } from '../runtime/tune.js';
import { apply } from '../ir/build.js';
import { ValueError, ShapeError } from '../ir/errors.js';
import { NDArray, describe, formatShape } from '../ir/ndarray.js';
import { coerce, isFloat } from '../ir/dtype.js';
import type { Node } from '../ir/node.js';
import { leavesOf } from '../ir/graph.js';
import { makeFunction, type CompiledFunction } from '../runtime/function.js';
import { OPTIMIZER_LEVELS, type OptimizerLevel } from '../passes/pipeline.js';
import type { Target, TargetRequest } from '../runtime/target.js';
import { checkedExecutor, guardedExecutor } from '../runtime/check.js';
import { PROFILE_NOTES, Profiler, profiledExecutor } from '../runtime/profile.js';
import { compileStats, compileTimes } from '../runtime/target.js';
import { platform } from '#platform';
import { cpuTarget } from '../runtime/cpu/compile.js';
import { gpuTarget } from '../runtime/gpu/compile.js';
import { webgpuRequested } from '../runtime/gpu/device.js';
import { tfjsTarget } from '../runtime/tfjs/executor.js';
import { onnxTarget } from '../runtime/onnx/executor.js';
import type { PassSelection } from '../passes/user.js';
import { fallbackPolicy, type FallbackOption } from '../runtime/fallback.js';
import { allOptions, constantNode, isTensor, need, operands, options, toTensor, type TensorLike } from './args.js';
import {
  backend as configuredBackend,
  device as configuredDevice,
  getConfig,
  optimizerLevel as configuredOptimizer,
  BACKENDS,
  COMPILE_MODES,
  type BackendName,
  type CompileMode,
  type DeviceName,
} from './config.js';
import { currentLearningPhase, onClearSession } from './state.js';
import { byRank } from './unknown-rank.js';

/**
 * Where a function runs (src/runtime/target.ts): the theanine backend's devices, and the other
 * backends (PyTensor's Mode: one linker and its rewrites per target). TensorFlow.js picks its own
 * device (native TensorFlow, WebAssembly or JavaScript); ONNX Runtime its kernels, on
 * THEANINE_ONNX_PROVIDER's execution provider (cpu by default).
 */
const targets: Readonly<Record<DeviceName | Exclude<BackendName, 'theanine'>, Target>> = {
  cpu: cpuTarget,
  gpu: gpuTarget,
  tensorflow: tfjsTarget,
  onnx: onnxTarget,
};
for (const t of Object.values(targets)) onClearSession(() => t.clear());

/** An assignment `variable := value` applied after a compiled function's outputs are computed. */
export class Update {
  constructor(
    readonly variable: Node,
    readonly value: Node,
  ) {}
}

function variableTarget(fn: string, x: unknown): Node {
  if (!isTensor(x) || x.op !== 'variable') {
    throw new TypeError(
      `${fn}: the update target must be a variable (from K.variable), got ${isTensor(x) ? `the ${x.op} tensor ${x.name}` : describe(x)}`,
    );
  }
  return x;
}

/**
 * The new value of an assignment. A literal (number, boolean, nested array) whose elements an int
 * or bool variable holds exactly takes the variable's dtype: `update(flag, 1)`, `[counter, 0]`.
 */
function assignedValue(fn: string, target: Node, value: unknown, what: string): Node {
  if (!isFloat(target.dtype) && (typeof value === 'number' || typeof value === 'boolean' || Array.isArray(value))) {
    const nd = NDArray.from(value, 'float64', `${fn}: ${what}`);
    if (nd.data.every((x) => coerce(target.dtype, x) === x)) return constantNode(nd.astype(target.dtype));
  }
  return toTensor(fn, value, what, target.dtype);
}

export function update(x: Node, new_x: TensorLike): Update {
  const v = variableTarget('update', x);
  return new Update(v, assignedValue('update', v, new_x, 'new_x'));
}
export function update_add(x: Node, increment: TensorLike): Update {
  const v = variableTarget('update_add', x);
  return new Update(v, apply('add', operands('update_add', v, increment, ['x', 'increment']), {}, 'K.update_add'));
}
export function update_sub(x: Node, decrement: TensorLike): Update {
  const v = variableTarget('update_sub', x);
  return new Update(v, apply('sub', operands('update_sub', v, decrement, ['x', 'decrement']), {}, 'K.update_sub'));
}
type MovingAverageOpts = { x?: Node; variable?: Node; value?: TensorLike; momentum?: TensorLike };

/**
 * x := x * momentum + value * (1 - momentum) (Keras' formulation). Keras 2.3 names the first
 * parameter `x` (2.0: `variable`); the options form takes either spelling.
 */
export function moving_average_update(x: Node | MovingAverageOpts, value?: TensorLike, momentum?: TensorLike): Update {
  const fn = 'moving_average_update';
  if (!isTensor(x) && typeof x === 'object' && x !== null && !Array.isArray(x)) {
    const o = allOptions(fn, [x], ['x', 'value', 'momentum'], { variable: 'x' });
    return moving_average_update(
      need(fn, o, 'x') as Node,
      need(fn, o, 'value') as TensorLike,
      need(fn, o, 'momentum') as TensorLike,
    );
  }
  if (value === undefined) throw new ValueError(`${fn}: value is required`);
  if (momentum === undefined) throw new ValueError(`${fn}: momentum is required`);
  const variable = x;
  const v = variableTarget('moving_average_update', variable);
  const [, m] = operands('moving_average_update', v, momentum, ['variable', 'momentum']);
  const [, val] = operands('moving_average_update', v, value, ['variable', 'value']);
  const one = toTensor('moving_average_update', 1, 'one', m.dtype);
  const keep = apply('mul', [v, m], {}, 'K.moving_average_update');
  const take = apply('mul', [val, apply('sub', [one, m])], {}, 'K.moving_average_update');
  return new Update(v, apply('add', [keep, take], {}, 'K.moving_average_update'));
}

export interface FunctionOptions {
  /** Overrides the configured backend (keras.json / KERAS_BACKEND) for this function. */
  backend?: BackendName;
  device?: DeviceName;
  optimizer?: OptimizerLevel;
  name?: string;
  /** User passes to add and passes to remove, by name (docs/extending.md). */
  passes?: PassSelection;
  /**
   * What a compiled function does when part of it cannot run as generated code (src/runtime/fallback.ts):
   * `warn` (once per function), `error` (at the first call), or `{ mode: 'error', allow: [op names] }`
   * to accept extern steps of those ops. Default: THEANINE_FALLBACK, else `warn`.
   */
  fallback?: FallbackOption;
  /**
   * "debug": checking mode (docs/debugging.md): every rewrite and every kernel is compared with the
   * reference interpreter, and a difference raises BadOptimization or BadKernel. Default:
   * keras.json "mode" / THEANINE_MODE, else "default".
   */
  mode?: CompileMode;
  /** Raise at the first kernel that writes NaN or Inf from finite inputs (default: THEANINE_NAN_GUARD=1). */
  nanGuard?: boolean;
  /** Time every kernel: `f.profile()` (docs/debugging.md). */
  profile?: boolean;
  /**
   * Tune the kernels' schedules on this machine (the cpu's, and gpu:webgpu's workgroup sizes;
   * docs/optimizer-research.md, "Kernel autotuning"): true, a beam width, or `{ beam, budgetMs }`.
   * Default: THEANINE_BEAM=N, else off.
   */
  tune?: TuneOption;
  /**
   * Theano's `Out(borrow=True)` for every output: a result may be storage the function keeps and
   * overwrites at its next call, which saves allocating (and the first writes to) fresh arrays.
   * Copy a result (`.clone()`) to keep it past the next call. Targets that keep no storage return
   * fresh arrays, which the contract allows (the cpu device keeps them). Default false.
   */
  borrow?: boolean;
}

const FUNCTION_OPTIONS: (keyof FunctionOptions)[] = [
  'backend',
  'device',
  'optimizer',
  'name',
  'passes',
  'fallback',
  'mode',
  'nanGuard',
  'profile',
  'tune',
  'borrow',
];

/** THEANINE_NAN_GUARD: unset, empty or 0 is off, 1 on. */
function nanGuardEnv(): boolean {
  const v = platform.env('THEANINE_NAN_GUARD');
  if (v !== undefined && !['', '0', '1'].includes(v))
    throw new ValueError(`THEANINE_NAN_GUARD is ${JSON.stringify(v)}; allowed: "0", "1"`);
  return v === '1';
}

/** The checking options of a function, checked, with their configured defaults. */
function checking(opts: FunctionOptions): { mode: CompileMode; nanGuard: boolean; profile: boolean } {
  const mode = opts.mode ?? getConfig().mode ?? 'default';
  if (!COMPILE_MODES.includes(mode))
    throw new ValueError(
      `function: unknown mode ${JSON.stringify(mode)} (allowed: ${COMPILE_MODES.map((m) => JSON.stringify(m)).join(', ')})`,
    );
  const nanGuard = opts.nanGuard ?? nanGuardEnv();
  if (typeof nanGuard !== 'boolean')
    throw new TypeError(`function: nanGuard must be true or false, got ${describe(nanGuard)}`);
  const profile = opts.profile ?? false;
  if (typeof profile !== 'boolean')
    throw new TypeError(`function: profile must be true or false, got ${describe(profile)}`);
  return { mode, nanGuard, profile };
}

type UpdateArg = Update | readonly [Node, TensorLike];

function checkUpdate(u: unknown, i: number): readonly [Node, Node] {
  let target: Node;
  let value: Node;
  if (u instanceof Update) {
    target = u.variable;
    value = u.value;
  } else if (Array.isArray(u) && u.length === 2) {
    target = variableTarget(`function: update ${i}`, u[0]);
    value = assignedValue('function', target, u[1], `update ${i} value`);
  } else {
    throw new TypeError(
      `function: update ${i} is ${describe(u)}; expected a K.update* record or a [variable, value] pair`,
    );
  }
  if (value.dtype !== target.dtype) {
    throw new TypeError(
      `function: update ${i} assigns a ${value.dtype} value to the ${target.dtype} variable ${JSON.stringify(target.name)}; cast it with K.cast (Theano requires the same type)`,
    );
  }
  const want = target.shape;
  if (value.ndim !== want.length || value.shape.some((d, k) => d !== null && d !== want[k])) {
    throw new ShapeError(
      `function: update ${i} gives variable ${JSON.stringify(target.name)} of shape ${formatShape(want)} a value of shape ${formatShape(value.shape)}`,
    );
  }
  return [target, value];
}

/** K.function(inputs, outputs, updates, options): a callable `f(values[]) => NDArray[]`. */
export function compileFunction(
  inputs: readonly Node[],
  outputs: readonly Node[] | Node,
  updates: readonly UpdateArg[] | null | (FunctionOptions & { updates?: readonly UpdateArg[] | null }) = [],
  opts: FunctionOptions = {},
): CompiledFunction {
  // Keras 2.3's function(inputs, outputs, updates=None, **kwargs): updates may be null, or given
  // by name with the other options in one object.
  if (updates === null) updates = [];
  else if (
    !Array.isArray(updates) &&
    typeof updates === 'object' &&
    Object.getPrototypeOf(updates) === Object.prototype
  ) {
    const o = options<Record<string, unknown>>(
      'function',
      [updates],
      [...FUNCTION_OPTIONS, 'updates'],
    ) as FunctionOptions & { updates?: readonly UpdateArg[] | null };
    const { updates: u, ...rest } = o;
    return compileFunction(inputs, outputs, u ?? [], { ...rest, ...opts });
  }
  if (opts !== null && typeof opts === 'object') options<Record<string, unknown>>('function', [opts], FUNCTION_OPTIONS);
  if (!Array.isArray(inputs))
    throw new TypeError(`function: inputs must be an array of placeholders, got ${describe(inputs)}`);
  inputs.forEach((x, i) => {
    if (!isTensor(x) || (x.op !== 'placeholder' && x.op !== 'learning_phase')) {
      throw new TypeError(
        `function: input ${i} must be a placeholder (or K.learning_phase()), got ${isTensor(x) ? `the ${x.op} tensor ${x.name}` : describe(x)}`,
      );
    }
  });
  if (new Set(inputs).size !== inputs.length)
    throw new ValueError('function: the same placeholder is listed twice in inputs');
  const outs = Array.isArray(outputs) ? outputs : [outputs];
  outs.forEach((o, i) => {
    if (!isTensor(o)) throw new TypeError(`function: output ${i} must be a tensor, got ${describe(o)}`);
  });
  if (!Array.isArray(updates)) throw new TypeError(`function: updates must be an array, got ${describe(updates)}`);
  const ups = updates.map((u, i) => checkUpdate(u, i));
  const seen = new Set<Node>();
  for (const [t] of ups) {
    if (seen.has(t)) throw new ValueError(`function: variable ${JSON.stringify(t.name)} is updated twice`);
    seen.add(t);
  }
  const computed = [...outs, ...ups.map(([, v]) => v)];
  const fed = new Set(inputs);
  const missing = leavesOf(computed, 'placeholder').find((p) => !fed.has(p));
  if (missing !== undefined) {
    throw new ValueError(
      `function: the outputs depend on placeholder ${JSON.stringify(missing.name)}, which is not among the inputs`,
    );
  }
  const backend = opts.backend ?? configuredBackend();
  if (!BACKENDS.includes(backend))
    throw new ValueError(
      `function: unknown backend ${JSON.stringify(backend)} (allowed: ${BACKENDS.map((b) => JSON.stringify(b)).join(', ')})`,
    );
  const device = opts.device ?? configuredDevice();
  if (device !== 'cpu' && device !== 'gpu')
    throw new ValueError(`function: unknown device ${JSON.stringify(device)} (allowed: "cpu", "gpu")`);
  const optimizer = opts.optimizer ?? configuredOptimizer();
  if (!OPTIMIZER_LEVELS.includes(optimizer))
    throw new ValueError(
      `function: unknown optimizer ${JSON.stringify(optimizer)} (allowed: ${OPTIMIZER_LEVELS.map((o) => JSON.stringify(o)).join(', ')})`,
    );
  if (inputs.some((p) => p.type.unknownRank === true)) {
    return byRank(opts.name ?? 'function', inputs, outs, ups, { backend, device, optimizer }, (i, o, u) =>
      compileFunction(i, o, u, opts),
    );
  }
  const name = opts.name ?? 'function';
  const fallback = fallbackPolicy('function', opts.fallback);
  if (opts.passes !== undefined && optimizer === 'none')
    throw new ValueError(
      'function: passes were given but optimizer "none" runs no passes; use "fast_run", "fast_compile" or "eqsat"',
    );
  const chk = checking(opts);
  if (opts.borrow !== undefined && typeof opts.borrow !== 'boolean')
    throw new TypeError(`function: borrow must be true or false, got ${describe(opts.borrow)}`);
  const tune = tuneOptions(opts.tune);
  // the cpu's schedules; WebGPU's workgroup sizes (the gpu device's gpu.js mode has nothing tuned)
  const tunable = backend === 'theanine' && (device === 'cpu' || (device === 'gpu' && webgpuRequested()));
  if (tune !== undefined && opts.tune !== undefined && !tunable) {
    throw new ValueError(
      `function: tune applies to the theanine backend's cpu device and the gpu device's webgpu mode only, got backend ${JSON.stringify(backend)}, device ${JSON.stringify(device)}${backend === 'theanine' && device === 'gpu' ? ' in its gpu.js mode' : ''}`,
    );
  }
  const target = targets[backend === 'theanine' ? device : backend];
  const req: TargetRequest = {
    inputs,
    targets: computed,
    updates: ups,
    nOut: outs.length,
    optimizer,
    name,
    fallback,
    ...(opts.passes !== undefined ? { passes: opts.passes } : {}),
    ...(chk.mode === 'debug' ? { mode: 'debug' } : {}),
    ...(chk.profile ? { profile: true } : {}),
    ...(tune !== undefined && tunable ? { tune } : {}),
    ...(opts.borrow === true ? { borrow: true } : {}),
  };
  const programs = compileStats.programs;
  let executor = target.executor(req);
  const where = executor.device ?? device;
  const untimed = executor.lastTimed === undefined && executor.kernelTimes === undefined;
  const note = executor.profileNote ?? (untimed ? PROFILE_NOTES.none : undefined);
  const profiler = chk.profile ? new Profiler(name, backend === 'theanine' ? where : backend, note) : undefined;
  if (profiler !== undefined) {
    if (compileStats.programs !== programs) profiler.compiled({ passes: compileTimes.passes }, false);
    executor = profiledExecutor(executor, profiler);
  }
  if (chk.mode === 'debug' && optimizer !== 'none')
    executor = checkedExecutor(target, req, backend === 'theanine' ? where : backend, executor);
  if (chk.nanGuard) executor = guardedExecutor(target, req, executor);
  const spec = {
    inputs,
    outputs: outs,
    updates: ups,
    device: where,
    backend,
    optimizer,
    learningPhase: currentLearningPhase,
    name,
    ...(profiler !== undefined ? { profiler } : {}),
  };
  return makeFunction(spec, executor);
}
