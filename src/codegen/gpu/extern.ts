// The gpu kernel of an extern step: a user op that brings only a gpu template (src/codegen/lower/user.ts)
// runs its helper per element, inputs broadcast. Every built-in op the gpu runs is rendered from
// the kernel IR by render.ts; other extern steps run their reference implementation on the host
// (src/runtime/gpu/program.ts).
import type { DType } from '../../ir/dtype.js';
import { KernelBuilder, MAX_ELEMENTS, type KernelSource } from './source.js';
import { storeAs } from './scalar.js';
import { sizeOf, stridesOf } from '../../ir/ndarray.js';

/** An extern step as the kernel sees it: concrete types. */
export interface ExternNode {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly inputs: readonly { readonly shape: readonly number[]; readonly dtype: DType }[];
}

/** A kernel taking the node's inputs `args` (by position, in order) as its arguments. */
export interface ExternKernel {
  readonly kernel: KernelSource;
  readonly args: readonly number[];
}

const size = (s: readonly number[]): number => sizeOf(s);

/** The user op's helper per element, inputs broadcast (right-aligned); undefined beyond exact float32 indices. */
export function userElementwise(
  n: ExternNode,
  helper: { readonly name: string; readonly source: string },
): ExternKernel | undefined {
  if (size(n.shape) > MAX_ELEMENTS) return undefined;
  const b = new KernelBuilder(n.shape);
  const loads = n.inputs.map((inp, k) => {
    if (size(inp.shape) === 1) return `${b.arg(k)}[0]`;
    // Stride 0 on the axes the input has size 1 (or lacks).
    const st = stridesOf(inp.shape);
    const strides = new Array<number>(n.shape.length).fill(0);
    const off = n.shape.length - inp.shape.length;
    inp.shape.forEach((d, i) => {
      strides[off + i] = d === 1 ? 0 : st[i]!;
    });
    return `${b.arg(k)}[${b.offset(strides)}]`;
  });
  const value = `${helper.name}(${loads.join(', ')})`;
  const kernel = b.finish(n.dtype === 'float32' ? value : storeAs(n.dtype, value), n.inputs.length);
  return { kernel: { ...kernel, functions: [...kernel.functions, helper.source] }, args: n.inputs.map((_, k) => k) };
}
