// K.gradients, K.stop_gradient, and verify_grad (Theano's finite-difference check).
import { apply } from '../ir/build.js';
import { gradients as reverseMode } from '../autodiff/grad.js';
import { isFloat, type DType } from '../ir/dtype.js';
import { NDArray, describe, type NestedArray, sizeOf } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import { isTensor, toTensor, type TensorLike } from './args.js';
import { compileFunction, type FunctionOptions } from './function.js';
import { placeholder } from './tensors.js';
import { backend as configuredBackend, device as configuredDevice } from './config.js';
import { mulberry32 } from '../ir/random.js';

/** Symbolic gradients of `loss` (summed if not scalar) with respect to each of `variables`. */
export function gradients(loss: Node, variables: readonly Node[] | Node): Node[] {
  if (!isTensor(loss)) throw new TypeError(`gradients: loss must be a tensor, got ${describe(loss)}`);
  const wrt = Array.isArray(variables) ? variables : [variables];
  wrt.forEach((v, i) => {
    if (!isTensor(v)) throw new TypeError(`gradients: variables[${i}] must be a tensor, got ${describe(v)}`);
  });
  return reverseMode(loss, wrt);
}

/** x forwards unchanged; no gradient flows through it. A list gives a list (Keras). */
export function stop_gradient(variables: readonly Node[]): Node[];
export function stop_gradient(variables: TensorLike): Node;
export function stop_gradient(variables: TensorLike | readonly Node[]): Node | Node[] {
  const one = (x: TensorLike) => apply('stop_gradient', [toTensor('stop_gradient', x)], {}, 'K.stop_gradient');
  return Array.isArray(variables) && variables.length > 0 && variables.every(isTensor)
    ? variables.map(one)
    : one(variables as TensorLike);
}

export interface VerifyGradOptions {
  /** Random projections tried (Theano's n_tests); default 2. */
  nTests?: number;
  /** Finite-difference step; default 3e-4 for float32 inputs, 1e-7 for float64. */
  eps?: number;
  /** An element fails only when both errors exceed these; defaults 1e-2 (float32) / 1e-4 (float64). */
  absTol?: number;
  relTol?: number;
  /** Seed of the projection weights. */
  seed?: number;
  /** Passed to K.function (device, optimizer). */
  functionOptions?: FunctionOptions;
}

export class GradientError extends Error {
  override name = 'GradientError';
}

/** The projection weights' generator (a seeded stream, not model randomness). */
const rng = mulberry32;

/**
 * Whether functions with these options compute float64 in float32: TensorFlow.js has no float64
 * (src/runtime/tfjs/README.md), and the gpu device computes in float32.
 */
export function computesInFloat32(o: FunctionOptions): boolean {
  const backend = o.backend ?? configuredBackend();
  return backend === 'tensorflow' || (backend === 'theanine' && (o.device ?? configuredDevice()) === 'gpu');
}

/**
 * Theano's verify_grad: builds fn on placeholders for `inputs`, projects its output on random
 * weights in [0.5, 1.5), and compares the symbolic gradient of that scalar with one-sided finite
 * differences, element by element. Throws GradientError naming the input and element that fail.
 */
export function verify_grad(
  fn: (...xs: Node[]) => Node,
  inputs: readonly (NDArray | NestedArray)[],
  options: VerifyGradOptions = {},
): void {
  const values = inputs.map((v) => (v instanceof NDArray ? v : NDArray.from(v, 'float64', 'verify_grad: input')));
  const phs = values.map((v, i) => placeholder(v.shape, null, v.dtype, false, `verify_grad_input_${i}`));
  const out = fn(...phs);
  if (!isTensor(out)) throw new TypeError(`verify_grad: fn must return a tensor, got ${describe(out)}`);
  if (!isFloat(out.dtype))
    throw new GradientError(`verify_grad: fn returns ${out.dtype}; gradients need a float output`);
  const fopts = options.functionOptions ?? {};
  // Theano's step and tolerance follow the precision computed in: the inputs' dtype, or float32
  // where the backend computes float64 in float32
  const lowPrecision =
    values.some((v) => v.dtype === 'float32' || v.dtype === 'float16') ||
    out.dtype !== 'float64' ||
    computesInFloat32(fopts);
  const eps = options.eps ?? (lowPrecision ? 3e-4 : 1e-7);
  const absTol = options.absTol ?? (lowPrecision ? 1e-2 : 1e-4);
  const relTol = options.relTol ?? (lowPrecision ? 1e-2 : 1e-4);
  const outShape = compileFunction(phs, [out], [], fopts)(values)[0]!.shape;
  const random = rng(options.seed ?? 42);
  const floatIdx = values.map((v, i) => (isFloat(v.dtype) ? i : -1)).filter((i) => i >= 0);

  for (let t = 0; t < (options.nTests ?? 2); t++) {
    const w = new NDArray(
      Array.from({ length: sizeOf(outShape) }, () => 0.5 + random()),
      outShape,
      out.dtype as DType,
    );
    const cost = apply(
      'sum',
      [apply('mul', [out, apply('constant', [], { value: w })])],
      { axes: outShape.map((_, i) => i), keepdims: false },
      'verify_grad',
    );
    const grads = reverseMode(
      cost,
      floatIdx.map((i) => phs[i]!),
      'verify_grad',
    );
    const fCost = compileFunction(phs, [cost], [], fopts);
    const fGrad = compileFunction(phs, grads, [], fopts);
    const c0 = Number(fCost(values)[0]!.item());
    const analytic = fGrad(values);
    floatIdx.forEach((inputIdx, k) => {
      const base = values[inputIdx]!;
      const ga = analytic[k]!;
      for (let j = 0; j < base.size; j++) {
        const bumped = base.clone();
        bumped.data[j] = bumped.data[j]! + eps;
        const vs = values.map((v, i) => (i === inputIdx ? bumped : v));
        const numeric = (Number(fCost(vs)[0]!.item()) - c0) / eps;
        const a = ga.data[j]!;
        const absErr = Math.abs(a - numeric);
        const relErr = absErr / Math.max(Math.abs(a) + Math.abs(numeric), 1e-8);
        if (!(absErr <= absTol || relErr <= relTol)) {
          throw new GradientError(
            `verify_grad: input ${inputIdx}, element ${j}: analytic gradient ${a} vs finite difference ${numeric} ` +
              `(abs err ${absErr.toExponential(3)} > ${absTol}, rel err ${relErr.toExponential(3)} > ${relTol}; eps ${eps}, projection ${t})`,
          );
        }
      }
    });
  }
}
