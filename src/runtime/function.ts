// Compiled functions: the callable K.function returns. Outputs and update values are computed
// from the variables' values before the call; then every update is written at once (Theano).
import { NDArray, describe, formatShape, sizeOf } from '../ir/ndarray.js';
import type { Node, VariableCell } from '../ir/node.js';
import { isInt, type DType } from '../ir/dtype.js';
import { ValueError, ShapeError } from '../ir/errors.js';
import { evaluate } from '../ir/interpret.js';
import { debugprintNodes } from '../ir/printer.js';
import { withBuiltBy } from '../ir/provenance.js';
import { densify, isSparseValue } from './values.js';
import { fusedLabel } from '../passes/fusion.js';
import type { OptimizerLevel } from '../passes/pipeline.js';
import type { Program } from '../codegen/kernel/ir.js';
import { exportFunction, type ExportOptions, type ExportedModule } from './export/module.js';
import { exportOnnx, type OnnxExportOptions } from './onnx/export.js';
import {
  profileTable,
  profileTrace,
  type FunctionProfile,
  type KernelTime,
  type Profiler,
  type TimedProgram,
} from './profile.js';

export interface FunctionSpec {
  readonly inputs: readonly Node[];
  readonly outputs: readonly Node[];
  /** [variable, new value] pairs, already checked. */
  readonly updates: readonly (readonly [Node, Node])[];
  readonly device: string;
  /** 'theanine' or 'tensorflow': which executor runs the graph. */
  readonly backend: string;
  readonly optimizer: OptimizerLevel;
  /** The learning phase for graphs that use it without feeding it. */
  readonly learningPhase: () => number;
  readonly name: string;
  /** Set when the function is profiled (K.function's `profile`). */
  readonly profiler?: Profiler;
}

/**
 * An update value an executor keeps on its device: the variable's cell takes it as is, and it
 * is copied to the host only when someone reads the variable (get_value).
 */
export interface DeviceResult {
  readonly shape: readonly number[];
  readonly dtype: DType;
  storeInto(cell: VariableCell): void;
}

/**
 * Runs a graph: all outputs (function outputs then update values) from converted inputs.
 * Function outputs are always NDArrays; update values may stay on the executor's device.
 */
export interface Executor {
  run(inputs: readonly NDArray[], learningPhase: number): (NDArray | DeviceResult)[];
  /** As run, without blocking where the device answers asynchronously (gpu:webgpu's worker); absent: callAsync runs `run`. */
  runAsync?(inputs: readonly NDArray[], learningPhase: number): Promise<(NDArray | DeviceResult)[]>;
  /** The graph it runs, for debugprint. */
  readonly graph: readonly Node[];
  /** The generated source (compiled executors). */
  source?(): string;
  /** Results are fresh arrays nobody else holds (no defensive copies needed). */
  readonly freshResults?: boolean;
  /** Compiled executors: the lowered program for input shapes, and the function's variables by slot (for exportModule). */
  lowered?(shapes: readonly (readonly number[])[]): { program: Program; variables: readonly Node[] };
  /** A profiled function's program and step timer of the latest call (the cpu; src/runtime/profile.ts). */
  lastTimed?(): TimedProgram | undefined;
  /** A profiled function's kernel times of the latest call, on a target that times kernels itself (src/runtime/profile.ts' KernelTimer); taking them resets them. */
  kernelTimes?(): readonly KernelTime[];
  /** Whether kernelTimes is read when the profile is asked for (f.profile()), not after each call (the onnx backend: reading ONNX Runtime's profile ends it). */
  readonly kernelTimesOnDemand?: boolean;
  /** How this target times kernels in a profile (its `note`; src/runtime/profile.ts' PROFILE_NOTES). */
  readonly profileNote?: string;
  /** The input shapes of the latest call. */
  lastInputShapes?(): readonly (readonly number[])[] | undefined;
  /** The onnx backend's execution provider (of the latest call). */
  executionProvider?(): string | undefined;
  /** The device it runs on where it says more than the device asked for (the gpu's gpu.js mode: gpu:headlessgl, gpu:webasm...). */
  readonly device?: string;
}

/** The reference interpreter as an executor (the `none` path, and the definition of meaning). */
export function interpreterExecutor(inputs: readonly Node[], targets: readonly Node[]): Executor {
  return {
    graph: targets,
    run(values, learningPhase) {
      const feeds = new Map<Node, NDArray>();
      inputs.forEach((n, i) => feeds.set(n, values[i]!));
      return evaluate(targets, { feeds, learningPhase });
    },
  };
}

export interface CompiledFunction
  extends Pick<FunctionSpec, 'inputs' | 'outputs' | 'updates' | 'device' | 'backend' | 'optimizer'> {
  (values: readonly unknown[]): NDArray[];
  /**
   * The call, as a Promise: on gpu:webgpu the device's reply is awaited without blocking (a page's
   * main thread can run it); elsewhere the call runs at once. Calls made this way are applied in
   * order (each one's variable updates before the next starts).
   */
  callAsync(values: readonly unknown[]): Promise<NDArray[]>;
  /** The graph this function runs, in debugprint form (after the optimizer; fused kernels as one node each). */
  debugprint(opts?: { readonly trace?: boolean }): string;
  /** The generated JavaScript (for the input shapes of the latest call). */
  source(): string;
  /** The output nodes of the graph this function runs (outputs, then update values). */
  readonly graph: readonly Node[];
  /**
   * This function as a standalone TypeScript module (no import of theanine): its kernels, its
   * variables' current values, one exported function `name` (docs/extending.md).
   */
  exportModule(options: ExportOptions): ExportedModule;
  /**
   * This function's optimized graph as a serialized ONNX model (src/runtime/onnx/README.md):
   * inputs named after the placeholders, outputs in order, variables as initializers.
   */
  exportOnnx(options?: OnnxExportOptions): Uint8Array;
  /** The onnx backend: the ONNX Runtime execution provider its latest call ran on (undefined elsewhere or before a call). */
  readonly executionProvider: string | undefined;
  /**
   * A function made with `{ profile: true }`: its profile so far (docs/debugging.md), as a plain
   * object, the printed table (`format: 'table'`) or Chrome trace-event JSON (`format: 'trace'`).
   */
  profile(options?: { readonly format?: 'object'; readonly reset?: boolean }): FunctionProfile;
  profile(options: { readonly format: 'table' | 'trace'; readonly reset?: boolean }): string;
}

/** Converts and checks one input value against its placeholder. */
export function convertInput(fnName: string, ph: Node, i: number, v: unknown): NDArray {
  // An NDArray of the placeholder's dtype, intact and of a shape that fits: taken as it is (the checks below, without their messages).
  if (v instanceof NDArray && v.dtype === ph.dtype && intactFits(v, ph.shape)) return v;
  const what = `${fnName}: input ${i} (${JSON.stringify(ph.name)})`;
  let nd: NDArray;
  if (isSparseValue(v)) nd = densify(what, v, ph.dtype);
  else {
    if (v instanceof NDArray) checkIntact(what, v);
    if (isInt(ph.dtype)) checkIntegral(what, ph.dtype, v);
    try {
      nd = NDArray.from(v, ph.dtype, what);
    } catch (e) {
      throw new TypeError(`${(e as Error).message}`);
    }
  }
  const want = ph.shape;
  if (nd.shape.length !== want.length || want.some((d, k) => d !== null && d !== nd.shape[k])) {
    throw new ShapeError(
      `${what}: value of shape ${formatShape(nd.shape)} does not fit the placeholder's shape ${formatShape(want)}`,
    );
  }
  return nd;
}

/** Whether nd's shape is a list of non-negative integers that its data fills and that fits `want` (checkIntact and the shape check of convertInput, as one test). */
function intactFits(nd: NDArray, want: readonly (number | null)[]): boolean {
  const shape: unknown = nd.shape;
  if (!Array.isArray(shape) || shape.length !== want.length || !ArrayBuffer.isView(nd.data)) return false;
  let n = 1;
  for (let k = 0; k < shape.length; k++) {
    const d: unknown = shape[k];
    if (!Number.isInteger(d) || (d as number) < 0 || (want[k] !== null && want[k] !== d)) return false;
    n *= d as number;
  }
  return (nd.data as { length: number }).length === n;
}

/**
 * An NDArray's shape is frozen, but a value built around the constructor (or with its data
 * replaced) could still claim more elements than it has, which compiled code would read past:
 * checked on every call, on every target.
 */
function checkIntact(what: string, nd: NDArray): void {
  const shape: unknown = nd.shape;
  const ok = Array.isArray(shape) && shape.every((d) => Number.isInteger(d) && d >= 0);
  if (!ok)
    throw new ShapeError(
      `${what}: NDArray shape ${Array.isArray(shape) ? `[${shape.map(String).join(', ')}]` : describe(shape)} is not a list of non-negative integers`,
    );
  const n = sizeOf(shape as number[]);
  const len = ArrayBuffer.isView(nd.data) ? (nd.data as { length: number }).length : -1;
  if (len !== n)
    throw new ShapeError(
      `${what}: NDArray of shape ${formatShape(shape as number[])} (${n} elements) holds ${len < 0 ? describe(nd.data) : `${len} values`}; shape and data must agree`,
    );
}

/** Typed arrays whose every value an integer dtype holds as is. */
const SAME_ARRAY: Readonly<Record<string, abstract new (...a: never[]) => unknown>> = {
  int8: Int8Array,
  int16: Int16Array,
  int32: Int32Array,
  uint8: Uint8Array,
  int64: Int32Array,
};

const INT_RANGE: Readonly<Record<string, readonly [number, number]>> = {
  int8: [-128, 127],
  int16: [-32768, 32767],
  int32: [-2147483648, 2147483647],
  uint8: [0, 255],
  int64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
};

/**
 * Values fed to an integer placeholder must be integers it can hold. Theano
 * refuses such downcasts too; silent truncation turned 1.5, 3e10 and NaN into 2, -129542144
 * and 0. K.cast is the explicit way to convert.
 */
function checkIntegral(what: string, dtype: DType, v: unknown): void {
  const [lo, hi] = INT_RANGE[dtype]!;
  const bad = (x: number) => !Number.isInteger(x) || x < lo || x > hi;
  if (v instanceof NDArray && v.dtype === dtype) return; // already held exactly
  if (v instanceof SAME_ARRAY[dtype]!) return;
  let values: ArrayLike<unknown> | undefined;
  if (v instanceof NDArray) values = v.data;
  else if (ArrayBuffer.isView(v) && !(v instanceof DataView)) values = v as unknown as ArrayLike<number>;
  else if (typeof v === 'number') values = [v];
  else if (Array.isArray(v)) values = v.flat(Infinity) as unknown[];
  if (values === undefined) return; // other kinds are refused by NDArray.from with their own message
  for (let i = 0; i < values.length; i++) {
    const x = values[i];
    if (typeof x !== 'number') continue; // booleans are 0 and 1; anything else is NDArray.from's error
    if (bad(x)) {
      const why =
        Number.isNaN(x) || !Number.isFinite(x)
          ? 'not finite'
          : !Number.isInteger(x)
            ? 'not an integer'
            : `outside ${dtype}'s range ${lo}..${hi}`;
      throw new TypeError(
        `${what}: element ${i} is ${x}, ${why}; a ${dtype} placeholder takes integers in ${lo}..${hi} (convert explicitly with K.cast, or round first)`,
      );
    }
  }
}

/** callAsync calls not yet settled (process-wide: they share the devices' queues), and the last one's end. */
const asyncCalls: { pending: number; tail: Promise<void> } = { pending: 0, tail: Promise.resolve() };

export function makeFunction(spec: FunctionSpec, executor: Executor): CompiledFunction {
  const nOut = spec.outputs.length;
  const convert = (values: readonly unknown[]): NDArray[] => {
    if (!Array.isArray(values)) {
      throw new TypeError(
        `${spec.name}: call with an array of ${spec.inputs.length} input values, got ${describe(values)}`,
      );
    }
    if (values.length !== spec.inputs.length) {
      throw new ValueError(
        `${spec.name}: expected ${spec.inputs.length} input values (${spec.inputs.map((n) => n.name).join(', ')}), got ${values.length}`,
      );
    }
    const out = new Array<NDArray>(values.length);
    for (let i = 0; i < values.length; i++) {
      try {
        out[i] = convertInput(spec.name, spec.inputs[i]!, i, values[i]);
      } catch (e) {
        throw withBuiltBy(e, spec.inputs[i]!.provenance); // the placeholder the value does not fit, and where it was made
      }
    }
    return out;
  };
  const tooLarge = (e: unknown, converted: readonly NDArray[]): unknown => {
    // Dims known only now can make a value too large for any typed array: say so, with the shapes that caused it.
    if (
      e instanceof RangeError &&
      /Invalid typed array length|Array buffer allocation failed|Invalid array buffer length/.test(e.message)
    ) {
      return new ValueError(
        `${spec.name}: a value computed for inputs of shapes ${converted.map((v) => formatShape(v.shape)).join(', ')} is too large to allocate (${e.message}); a typed array holds at most 2^32 - 1 elements. Split the computation or feed smaller inputs`,
      );
    }
    return e;
  };
  const call = (values: readonly unknown[]): NDArray[] => {
    if (asyncCalls.pending > 0 && executor.runAsync !== undefined) {
      throw new ValueError(
        `${spec.name}: a synchronous call while callAsync calls on ${executor.device ?? spec.device} are pending (their variable updates follow their replies): await them first, or make this call with callAsync too`,
      );
    }
    const converted = convert(values);
    let results: (NDArray | DeviceResult)[];
    try {
      results = executor.run(converted, spec.learningPhase());
    } catch (e) {
      throw tooLarge(e, converted);
    }
    return settle(converted, results);
  };
  const callAsync = async (values: readonly unknown[]): Promise<NDArray[]> => {
    const converted = convert(values);
    // Calls are applied in the order they were made: each waits for the one before it, updates included.
    const before = asyncCalls.tail;
    let release!: () => void;
    asyncCalls.tail = new Promise<void>((r) => {
      release = r;
    });
    asyncCalls.pending++;
    try {
      await before;
      let results: (NDArray | DeviceResult)[];
      try {
        results =
          executor.runAsync !== undefined
            ? await executor.runAsync(converted, spec.learningPhase())
            : executor.run(converted, spec.learningPhase());
      } catch (e) {
        throw tooLarge(e, converted);
      }
      return settle(converted, results);
    } finally {
      asyncCalls.pending--;
      release();
    }
  };
  const settle = (converted: readonly NDArray[], results: (NDArray | DeviceResult)[]): NDArray[] => {
    const fresh = executor.freshResults === true;
    // Function outputs are NDArrays whatever the executor (only update values stay on a device).
    if (spec.updates.length === 0) return fresh ? (results as NDArray[]) : (results as NDArray[]).map((r) => r.clone());
    // Every value is computed before any variable changes, so a failed call changes nothing.
    spec.updates.forEach(([variable], k) => {
      const v = results[nOut + k]!;
      const want = variable.shape as number[];
      if (v.shape.length !== want.length || v.shape.some((d, j) => d !== want[j])) {
        throw withBuiltBy(
          new ShapeError(
            `${spec.name}: the update of variable ${JSON.stringify(variable.name)} has shape ${formatShape(v.shape)}, not the variable's ${formatShape(want)}`,
          ),
          spec.updates[k]![1].provenance,
        );
      }
    });
    // Values that share storage with the caller's inputs are copied before a variable keeps them,
    // and outputs are copies, so later changes to the caller's arrays never reach a variable.
    const fromCaller = new Set(converted.map((v) => v.data));
    spec.updates.forEach(([variable], k) => {
      const r = results[nOut + k]!;
      if (!(r instanceof NDArray)) {
        r.storeInto(variable.cell!);
        return;
      } // same dtype: checked when built
      const v = r.astype(variable.dtype);
      variable.cell!.value = !fresh && fromCaller.has(v.data) ? v.clone() : v;
    });
    // Function outputs are NDArrays whatever the executor (only update values stay on a device).
    const outputs = results.slice(0, nOut) as NDArray[];
    return fresh ? outputs : outputs.map((r) => r.clone());
  };
  const fn = Object.assign(call, {
    callAsync,
    inputs: spec.inputs,
    outputs: spec.outputs,
    updates: spec.updates,
    device: spec.device,
    backend: spec.backend,
    optimizer: spec.optimizer,
    debugprint: (opts?: { readonly trace?: boolean }) =>
      debugprintNodes(executor.graph, { label: fusedLabel, trace: opts?.trace === true }),
    exportModule: (options: ExportOptions) => {
      const lowered = executor.lowered;
      if (lowered === undefined) {
        throw new ValueError(
          spec.optimizer === 'none'
            ? 'exportModule: this function has optimizer "none" (it runs the reference interpreter); compile it with "fast_run" or "fast_compile" to export it'
            : `exportModule: only functions compiled for device "cpu" can be exported (this one is for ${JSON.stringify(spec.device)}); compile it again with { device: 'cpu' }`,
        );
      }
      return exportFunction(
        {
          name: spec.name,
          optimizer: spec.optimizer,
          inputs: spec.inputs,
          nOutputs: nOut,
          updates: spec.updates,
          lowered: (shapes) => lowered.call(executor, shapes),
          lastInputShapes: () => executor.lastInputShapes?.(),
        },
        options,
      );
    },
    exportOnnx: (options?: OnnxExportOptions) =>
      exportOnnx(
        {
          name: spec.name,
          inputs: spec.inputs,
          outputs: spec.outputs,
          updates: spec.updates,
          optimizer: spec.optimizer,
        },
        options,
      ),
    profile: (options?: { readonly format?: 'object' | 'table' | 'trace'; readonly reset?: boolean }) => {
      const p = spec.profiler;
      if (p === undefined)
        throw new ValueError(
          `${spec.name}.profile: this function was not made with { profile: true }; compile it with K.function(inputs, outputs, updates, { profile: true })`,
        );
      const format = options?.format ?? 'object';
      if (!['object', 'table', 'trace'].includes(format))
        throw new ValueError(
          `${spec.name}.profile: format must be "object", "table" or "trace", got ${JSON.stringify(format)}`,
        );
      const got = p.profile();
      if (options?.reset === true) p.reset(); // the calls so far leave the figures (compile phases and peak stay)
      return format === 'table' ? profileTable(got) : format === 'trace' ? profileTrace(got) : got;
    },
    source: () =>
      executor.source?.() ??
      `// optimizer ${JSON.stringify(spec.optimizer)}: this function runs the reference interpreter; there is no generated source`,
  });
  // a getter: a target may optimize the graph only when it is first read (target.ts deferPasses)
  Object.defineProperty(fn, 'graph', { get: () => executor.graph, enumerable: true });
  // a getter (Object.assign would copy its value once): the provider of the latest call
  Object.defineProperty(fn, 'executionProvider', { get: () => executor.executionProvider?.(), enumerable: true });
  return fn as unknown as CompiledFunction;
}
