// User-defined ops (Theano's custom Op): type inference, a reference implementation, an
// optional gradient built from existing ops, and optional code templates. They take part in
// K.gradients, verify_grad, the printer, the verifier and the compile cache like built-in ops;
// codegen runs them through their reference implementation (the compiler's extern path) unless
// a `cpu` template is given, which makes them elementwise kernels that fuse (src/codegen/lower/user.ts).
import { traced } from './trace.js';
import { apply } from '../ir/build.js';
import { isDType, type DType } from '../ir/dtype.js';
import { InferError, ValueError } from '../ir/errors.js';
import { NDArray, describe, formatShape } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import type { Attrs, EvalContext, OpDef } from '../ir/op.js';
import { isBuiltin, registerOp } from '../ir/registry.js';
import { broadcastShapes, tensorType, type StaticShape, type TensorType } from '../ir/types.js';
import { JS_RESERVED, checkTemplate, registerUserTemplates } from '../codegen/lower/user.js';
import { checkWgslTemplate } from '../codegen/wgsl/user.js';
import { registerGradRule } from '../autodiff/grad.js';
import { toTensor, type TensorLike } from './args.js';

export interface UserOpSpec<A extends Attrs = Attrs> {
  /** A new op name: letters, digits and underscores, not a built-in's. */
  readonly name: string;
  /** Result type from the inputs' types; throw an Error whose message says what is wrong. */
  infer(inputs: readonly TensorType[], attrs: A): { dtype: DType; shape: StaticShape };
  /** The op's meaning on concrete arrays; must not modify its inputs. */
  reference(inputs: readonly NDArray[], attrs: A): NDArray;
  /** Cotangents of the inputs (null: none) built from K functions; omitted: the op is not differentiable. */
  grad?(inputs: readonly Node[], output: Node, g: Node, attrs: A): readonly (Node | null)[];
  /** Number of inputs; default: any number. */
  readonly arity?: number;
  /** Results depend on more than inputs and attrs (never folded or merged). */
  readonly impure?: boolean;
  /**
   * Elementwise code for device cpu: a JavaScript expression of one output element, in terms of
   * the inputs' elements `x0`, `x1`, ... (broadcast to the output's shape), the op's number and
   * boolean attrs by name, and `Math`. Example: `'x0 / (1 + Math.exp(-beta * x0))'`. With it the
   * op's result shape must be its inputs' broadcast shape. Without it the op runs its reference.
   */
  readonly cpu?: string;
  /** The same for device gpu, in the JavaScript subset gpu.js translates; without it the op cannot run on the gpu. */
  readonly gpu?: string;
  /**
   * The same for the gpu device's webgpu mode (THEANINE_GPU_MODE=webgpu): a WGSL expression of the
   * inputs' elements `x0`, `x1`, ... as f32, the number and boolean attrs by name (f32), WGSL's
   * built-ins. Example: `'x0 / (1.0 + exp(-beta * x0))'`. Needs a cpu template (the kernel that
   * calls it is built from that); without it the op runs on the host there.
   */
  readonly wgsl?: string;
}

/** A user op as a builder: `op(x, y, { attrs })`. */
export type UserOp<A extends Attrs = Attrs> = ((...args: (TensorLike | { attrs: A })[]) => Node) & {
  readonly opName: string;
};

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function defineOp<A extends Attrs = Attrs>(spec: UserOpSpec<A>): UserOp<A> {
  if (typeof spec !== 'object' || spec === null)
    throw new TypeError(`defineOp: expected a spec object, got ${describe(spec)}`);
  if (typeof spec.name !== 'string' || !NAME.test(spec.name)) {
    throw new ValueError(`defineOp: name ${JSON.stringify(spec.name)} must be letters, digits and underscores`);
  }
  if (isBuiltin(spec.name)) throw new ValueError(`defineOp: ${JSON.stringify(spec.name)} is a built-in op`);
  for (const k of ['infer', 'reference'] as const) {
    if (typeof spec[k] !== 'function')
      throw new TypeError(`defineOp(${spec.name}): ${k} must be a function, got ${describe(spec[k])}`);
  }
  const fn = `${spec.name}`;
  const templates = {
    ...(spec.cpu !== undefined ? { cpu: checkTemplate(spec.name, 'cpu', spec.cpu, spec.arity) } : {}),
    ...(spec.gpu !== undefined ? { gpu: checkTemplate(spec.name, 'gpu', spec.gpu, spec.arity) } : {}),
    ...(spec.wgsl !== undefined ? { wgsl: checkWgslTemplate(spec.name, spec.wgsl, spec.arity) } : {}),
  };
  if (spec.wgsl !== undefined && spec.cpu === undefined)
    throw new ValueError(
      `defineOp(${spec.name}): a wgsl template needs a cpu template too (the fused kernel that calls it is built from the cpu one)`,
    );
  const elementwise = spec.cpu !== undefined || spec.gpu !== undefined;
  const def: OpDef<A> = {
    name: spec.name,
    kind: 'other',
    arity: spec.arity ?? 'variadic',
    impure: spec.impure === true,
    infer(inputs, attrs) {
      let t: { dtype: DType; shape: StaticShape };
      try {
        t = spec.infer(inputs, attrs);
      } catch (e) {
        throw new InferError(e instanceof Error ? e.message : String(e));
      }
      if (!isDType(t?.dtype) || !Array.isArray(t.shape)) {
        throw new InferError(`infer returned ${describe(t)}; expected { dtype, shape }`, 'type');
      }
      if (elementwise) checkElementwise(inputs, t.shape);
      return tensorType(t.dtype, t.shape);
    },
    impl(inputs: readonly NDArray[], attrs: A, _ctx: EvalContext) {
      const out = spec.reference(inputs, attrs);
      if (!(out instanceof NDArray))
        throw new InferError(`reference returned ${describe(out)}; expected an NDArray`, 'type');
      return out;
    },
  };
  registerOp(def as OpDef);
  registerUserTemplates(spec.name, templates);
  if (spec.grad !== undefined) {
    const grad = spec.grad;
    registerGradRule(spec.name, (node, g) => grad(node.inputs, node, g, node.attrs as A));
  } else {
    registerGradRule(spec.name, { unsupported: 'the user op was defined without a grad function' });
  }
  const builder = (...args: (TensorLike | { attrs: A })[]): Node => {
    const last = args[args.length - 1];
    let attrs = {} as A;
    if (
      last !== undefined &&
      typeof last === 'object' &&
      last !== null &&
      !Array.isArray(last) &&
      'attrs' in last &&
      Object.keys(last).length === 1
    ) {
      attrs = (last as { attrs: A }).attrs;
      args = args.slice(0, -1);
    }
    const inputs = (args as TensorLike[]).map((a, i) => toTensor(fn, a, `input ${i}`));
    if (elementwise && attrs !== null && typeof attrs === 'object') {
      // Templates see number and boolean attrs as constants by name (`if` gave a raw SyntaxError).
      for (const [k, v] of Object.entries(attrs)) {
        if ((typeof v === 'number' || typeof v === 'boolean') && JS_RESERVED.has(k)) {
          throw new ValueError(
            `${fn}: attr ${JSON.stringify(k)} is a JavaScript reserved word, so the op's ${spec.cpu !== undefined ? 'cpu' : 'gpu'} template could not name it; rename the attr (for example ${JSON.stringify(`${k}_`)})`,
          );
        }
      }
    }
    return apply(spec.name, inputs, attrs, fn);
  };
  // A user op is a public call of its own: its nodes record its name and the user's line.
  return Object.assign(traced(spec.name, builder), { opName: spec.name });
}

/** A templated op is elementwise: its result has its inputs' broadcast shape (unknown dims may stay unknown). */
function checkElementwise(inputs: readonly TensorType[], shape: StaticShape): void {
  let b: StaticShape;
  try {
    b = broadcastShapes(inputs.map((t) => t.shape));
  } catch (e) {
    throw new InferError(
      `an op with a cpu or gpu template is elementwise, and its inputs do not broadcast: ${(e as Error).message}`,
      'shape',
    );
  }
  if (b.length !== shape.length || b.some((d, i) => d !== null && shape[i] !== null && d !== shape[i])) {
    throw new InferError(
      `an op with a cpu or gpu template is elementwise: its result shape must be its inputs' broadcast shape ${formatShape(b)}, but infer gave ${formatShape(shape)}`,
      'shape',
    );
  }
}
