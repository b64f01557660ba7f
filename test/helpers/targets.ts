// The places a graph can run. Conformance and gradient tables run every case on every target,
// so each new device, optimizer level or backend is added here once and inherits every table.
import { backend as K } from '../../src/index.js';
import type { FunctionOptions } from '../../src/api/function.js';
import type { Node } from '../../src/ir/node.js';
import type { NDArray } from '../../src/ir/ndarray.js';
import type { DType } from '../../src/ir/dtype.js';
import { gpuDevice, webgpuRequested } from '../../src/runtime/gpu/device.js';
import { openWebGpu } from '../../src/runtime/gpu/webgpu/session.js';
import { NO_SKIP } from './needs.js';
import { loadGpuJs } from '../../src/runtime/gpu/gpujs.js';
import { ortAvailable } from '../../src/runtime/onnx/session.js';
import { NO_KERNEL_YET, type FallbackOption } from '../../src/runtime/fallback.js';

/**
 * Tables run compiled targets with fallback "error": a case that runs the reference
 * interpreter fails, except extern steps of the ops that have no kernel yet (NO_KERNEL_YET, the one list).
 */
export const TABLE_FALLBACK: FallbackOption = { mode: 'error', allow: Object.keys(NO_KERNEL_YET) };

export interface Target {
  readonly name: string;
  /** K.function options selecting this target. */
  readonly options: FunctionOptions;
  /** Extra float tolerance relative to the reference (added to each case's own). */
  readonly tol: { atol: number; rtol: number };
  /**
   * Named rule: the tolerance of float32 results, where the target sums float32 matrix products
   * in float32 (matmul precision "float32", the cpu device's default) while the reference sums in
   * float64. FLOAT32_SUM_TOL below, from the bound of docs/numerics.md.
   */
  readonly tol32?: { atol: number; rtol: number };
  /**
   * The dtypes the gradient tables check here. verify_grad's step and tolerance follow the
   * precision the target computes in, so a target computing float64 in float32 runs both.
   */
  readonly gradDTypes: readonly ('float64' | 'float32')[];
  /**
   * Table cases this target cannot run, each with its reason (also in the README), keyed
   * `table title: case name` (the mocha test's title path).
   */
  readonly excluded?: Readonly<Record<string, string>>;

  /**
   * Named rule: float64 inputs are fed as float32 here (the device computes in float32), and
   * the case's float64 expectations are read as float32 ones.
   */
  readonly demoteFloat64?: boolean;
  /** Named exclusion rules: why a case with these properties does not run here, or undefined. */
  readonly excludes?: (c: { dtypes: readonly DType[]; expectedDType?: DType; nonFinite?: boolean }) => string | undefined;
}

export { noteExcluded } from './exclusions.js';

/**
 * The tolerance of float32 results of the cpu targets, from the float32 sum's bound
 * |C - C_ref| <= gamma_K * sum_t |a_t||b_t| + u |C_ref| (docs/numerics.md, "Matrix product
 * precision"; u = 2^-24, gamma_K = K u / (1 - K u)): gamma_K for the longest sum in the tables'
 * products (K <= 256, gamma = 1.53e-5), as an absolute tolerance for results whose terms sum to at
 * most 1 in magnitude and a relative one where sum |a||b| is about |C| (no cancellation). A
 * case that cancels more sets its own tolerance. float64 results keep the target's own (tight)
 * tolerance: float64 products sum in float64, as the reference does.
 */
const K_MAX = 256;
const GAMMA = (K_MAX * 2 ** -24) / (1 - K_MAX * 2 ** -24);
export const FLOAT32_SUM_TOL = { atol: GAMMA, rtol: GAMMA };

const builtin: Target[] = [
  { name: 'reference', options: { optimizer: 'none' }, tol: { atol: 0, rtol: 0 }, gradDTypes: ['float64', 'float32'] },
  // All passes and generated JavaScript. Stabilize rewrites may move results by an ulp or so.
  { name: 'cpu', options: { optimizer: 'fast_run', device: 'cpu', fallback: TABLE_FALLBACK }, tol: { atol: 1e-6, rtol: 1e-6 }, tol32: FLOAT32_SUM_TOL, gradDTypes: ['float64', 'float32'] },
  // Merge and constant folding only; every op its own kernel, or an extern step.
  { name: 'cpu-fast_compile', options: { optimizer: 'fast_compile', device: 'cpu', fallback: TABLE_FALLBACK }, tol: { atol: 1e-9, rtol: 1e-9 }, tol32: FLOAT32_SUM_TOL, gradDTypes: ['float64', 'float32'] },
  // FAST_RUN, then equality saturation (src/passes/eqsat): reassociation and factoring move float
  // results by rounding, so float64 tolerances as fast_run's, float32 ones as the float32 sums'.
  // Opt-in: run where THEANINE_TEST_TARGETS names cpu-eqsat (it doubles the cpu tables' time).
  { name: 'cpu-eqsat', options: { optimizer: 'eqsat', device: 'cpu', fallback: TABLE_FALLBACK }, tol: { atol: 1e-6, rtol: 1e-6 }, tol32: FLOAT32_SUM_TOL, gradDTypes: ['float64', 'float32'] },
  // Borrowed outputs (K.function's `borrow`): runOn calls each function twice and checks the second
  // call's results, written into the first call's arrays. Opt-in: THEANINE_TEST_TARGETS=cpu-borrow.
  { name: 'cpu-borrow', options: { optimizer: 'fast_run', device: 'cpu', fallback: TABLE_FALLBACK, borrow: true }, tol: { atol: 1e-6, rtol: 1e-6 }, tol32: FLOAT32_SUM_TOL, gradDTypes: ['float64', 'float32'] },
  {
    // The optimized graph (all passes but fusion) run op by op on TensorFlow.js, which computes
    // float64 in float32 (src/runtime/tfjs/README.md): float32 tolerances.
    name: 'tensorflow',
    options: { backend: 'tensorflow' },
    tol: { atol: 1e-5, rtol: 1e-5 },
    gradDTypes: ['float64', 'float32'],
    excluded: {
      'K.binary_crossentropy: clipped at 0 and 1':
        'clipping to 1 - epsilon (1e-7) in float32 gives 1 - 1.19e-7, so log(1 - output) is -15.94, not float64\'s -16.12',
    },
  },
];

/**
 * The gpu device, in whatever gpu.js mode this machine gives (headless-gl under xvfb-run in CI,
 * webasm without a display). float32 tolerances; 64-bit dtypes are excluded by name, since the
 * device computes them on the host (they would test nothing of the gpu).
 */
const SAID = Symbol.for('theanine.test.gpu-said');

function gpuTarget(): Target | undefined {
  if (webgpuRequested()) return webgpuTarget();
  const loaded = loadGpuJs();
  if (loaded instanceof Error) {
    console.log(`gpu target not run: ${loaded.message}`);
    return undefined;
  }
  const dev = gpuDevice();
  const once = globalThis as { [SAID]?: boolean };
  if (once[SAID] !== true) console.log(`gpu target: ${dev.description} (K.function(...).device === ${JSON.stringify(dev.name)})`);
  once[SAID] = true;
  return {
    name: dev.name,
    options: { device: 'gpu', fallback: TABLE_FALLBACK },
    tol: { atol: 1e-5, rtol: 1e-4 },
    // float64 computed in float32: verify_grad takes float32's step and tolerance for it
    gradDTypes: ['float64', 'float32'],
    excluded: {
      'K.binary_crossentropy: clipped at 0 and 1':
        'clipping to 1 - epsilon (1e-7) in float32 gives 1 - 1.19e-7, so log(1 - output) is -15.94, not float64\'s -16.12',
    },
    demoteFloat64: true,
    excludes: (c) => {
      if (c.dtypes.includes('int64') || c.expectedDType === 'int64') return 'gpu: int64 cases (int64 nodes run on the host)';
      if (c.expectedDType === 'float64') return 'gpu: cases asserting a float64 result dtype';
      // WebGL leaves IEEE infinities and NaN to the driver, and Mesa's shader compiler assumes
      // finite values (x - x folds to 0 even for x = -inf); webasm keeps IEEE semantics.
      if (c.nonFinite === true && dev.mode !== 'webasm') return `${dev.name}: cases with infinite or NaN inputs (not IEEE on GL)`;
      return undefined;
    },
  };
}

/**
 * The gpu device's webgpu mode (THEANINE_GPU_MODE=webgpu): WGSL kernels on Dawn's adapter (lavapipe
 * in CI). float32 tolerances and float32 sums of products (tol32); WGSL lets an implementation
 * assume values are finite, so cases with infinities or NaN are left out, as on GL.
 */
function webgpuTarget(): Target | undefined {
  const d = openWebGpu();
  if (typeof d === 'string') {
    if (process.env[NO_SKIP] === '1') throw new Error(`THEANINE_GPU_MODE=webgpu: ${d} (${NO_SKIP}=1 makes this a failure, not a skip)`);
    console.log(`gpu:webgpu target not run: ${d}`);
    return undefined;
  }
  const once = globalThis as { [SAID]?: boolean };
  if (once[SAID] !== true) console.log(`gpu target: WebGPU, adapter ${d.description} (K.function(...).device === "gpu:webgpu")`);
  once[SAID] = true;
  return {
    name: 'gpu:webgpu',
    options: { device: 'gpu', fallback: TABLE_FALLBACK },
    tol: { atol: 1e-5, rtol: 1e-4 },
    tol32: FLOAT32_SUM_TOL,
    gradDTypes: ['float32'],
    excluded: {
      'K.binary_crossentropy: clipped at 0 and 1':
        'clipping to 1 - epsilon (1e-7) in float32 gives 1 - 1.19e-7, so log(1 - output) is -15.94, not float64\'s -16.12',
    },
    demoteFloat64: true,
    excludes: (c) => {
      if (c.dtypes.includes('int64') || c.expectedDType === 'int64') return 'gpu: int64 cases (int64 nodes run on the host)';
      if (c.expectedDType === 'float64') return 'gpu: cases asserting a float64 result dtype';
      if (c.nonFinite === true) return 'gpu:webgpu: cases with infinite or NaN inputs (WGSL may assume finite values)';
      return undefined;
    },
  };
}

/**
 * The onnx backend: the optimized graph (all passes but fusion) as an ONNX model run by ONNX
 * Runtime's CPU provider, float64 in double. Only present where onnxruntime-node is installed
 * (an optional peer dependency); otherwise the run says so.
 */
function onnxTarget(): Target | undefined {
  const missing = ortAvailable();
  if (missing !== undefined) {
    console.log(`onnx target not run: ${missing}`);
    return undefined;
  }
  return {
    name: 'onnx',
    options: { backend: 'onnx' },
    // ONNX Runtime's vectorised float32 kernels (exp, tanh, erf...) differ from correctly rounded ones by an ulp or two
    tol: { atol: 1e-6, rtol: 1e-5 },
    gradDTypes: ['float64', 'float32'],
    excluded: onnxExcluded,
  };
}

/** Table cases the onnx target leaves out, each with its reason (src/runtime/onnx/README.md lists them too). */
const ctcReason = 'CTC has no ONNX translation yet (its alpha/beta recursions over label lattices are not written as ONNX Loops): the onnx backend names the op and stops';
const decodeReason = 'ctc_decode is a greedy or beam search whose result sizes depend on the data; it has no ONNX translation (the tensorflow backend runs it on the host)';
const onnxExcluded: Readonly<Record<string, string>> = {
  'K.ctc_decode: greedy: decoded': decodeReason,
  'K.ctc_decode: greedy: log_prob': decodeReason,
  'K.ctc_decode: beam search, width 100, top_paths 3: path 0': decodeReason,
  'K.ctc_decode: beam search, width 100, top_paths 3: path 1': decodeReason,
  'K.ctc_decode: beam search, width 100, top_paths 3: path 2': decodeReason,
  'K.ctc_decode: beam search: log_prob (options object)': decodeReason,
  "K.ctc_decode: Keras 2.3.1's greedy case: (2, 3) labels [[0, 1, -1], [1, 1, 0]], minus the sums of the maxima": decodeReason,
  "K.ctc_decode: Keras 2.3.1's beam search case: [[1, 0]] and [[1]], log_prob [-5.811451, -6.63339]": decodeReason,
  'K.ctc_decode: beam of 1, label most likely: [0], log-probability log 0.6': decodeReason,
  "K.ctc_decode: beam of 1, blank most likely: stays empty (TensorFlow's rule), width 0, log-probability log 0.36": decodeReason,
  'K.ctc_decode: beam search, merge_repeated: 0 blank 0 is emitted as [0]': decodeReason,
  'K.ctc_decode: beam search, no merge: 0 blank 0 is [0, 0]': decodeReason,
  'K.ctc_label_dense_to_sparse: indices of the entries before each length, row by row; values; dense shape':
    'its result size depends on the label values (data-dependent shapes); it has no ONNX translation',
  'gradients: ctc_batch_cost: ctc_batch_cost with respect to y_pred': ctcReason,
  'gradients: ctc_batch_cost: ctc_batch_cost of a softmax': ctcReason,
  'gradients: elementwise unary: erf':
    "ONNX Runtime's CPU Erf is float32 only, so float64 erf is computed in float32 (error about 6e-8), too coarse for verify_grad's float64 step of 1e-7",
};

/** THEANINE_TEST_TARGETS=reference,gpu limits the targets (all available ones by default). */
function selected(): Target[] {
  const all = [...builtin];
  const want = process.env['THEANINE_TEST_TARGETS']?.split(',').map((s) => s.trim());
  const wants = (name: string) => want === undefined || want.includes(name) || want.includes(`${name}-eqsat`);
  if (wants('onnx')) {
    const o = onnxTarget();
    if (o !== undefined) all.push(o);
  }
  if (wants('gpu')) {
    const g = gpuTarget();
    if (g !== undefined) all.push(g);
  }
  // Every target's eqsat twin (the same target with optimizer 'eqsat'; the cpu's is in `builtin`),
  // opt-in since they double their tables' time: THEANINE_TEST_TARGETS=cpu-eqsat,tensorflow-eqsat,...
  for (const t of all.filter((t) => ['tensorflow', 'onnx', 'gpu'].includes(t.name.split(':')[0]!))) {
    const [base, mode] = t.name.split(':');
    const name = mode === undefined ? `${base}-eqsat` : `${base}-eqsat:${mode}`;
    all.push({ ...t, name, options: { ...t.options, optimizer: 'eqsat' } });
  }
  const optIn = (name: string) => name.endsWith('-eqsat') || name === 'cpu-borrow';
  return want === undefined ? all.filter((t) => !optIn(t.name.split(':')[0]!)) : all.filter((t) => want.includes(t.name.split(':')[0]!));
}

export const targets: Target[] = selected();

/** Whether `t` runs a table case; excluded cases are listed, with reasons, above. */
export function runsCase(t: Target, table: string, name: string): boolean {
  return t.excluded?.[`${table}: ${name}`] === undefined;
}

export function runOn(t: Target, inputs: readonly Node[], outputs: readonly Node[], values: readonly NDArray[]): NDArray[] {
  const f = K.function(inputs, outputs, [], t.options);
  if (t.options.borrow !== true) return f(values);
  // the second call writes the first call's arrays again: results that depend on what a kept array
  // held before (a missing zero fill) differ from the reference's
  f(values);
  return f(values);
}
