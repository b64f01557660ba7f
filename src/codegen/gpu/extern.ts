// gpu kernels for extern steps: the ops the kernel IR does not lower yet but the gpu can still
// run as a kernel of their own (the window ops of windows.ts: grouped convolutions and their
// adjoints, pooling and its adjoints), and user ops that bring only a gpu template. Everything
// else the kernel IR carries is rendered by render.ts; an extern step without a kernel here runs
// its reference implementation on the host (src/runtime/gpu/program.ts).
import type { DType } from '../../ir/dtype.js';
import type { Attrs } from '../../ir/op.js';
import { KernelBuilder, MAX_ELEMENTS, loopIterations, rowMajorStrides, type KernelSource } from './source.js';
import { storeAs } from './scalar.js';
import { windowed } from './windows.js';

/** An extern step as the kernel rules see it: op, attrs and concrete types. */
export interface ExternNode {
  readonly op: string;
  readonly attrs: Attrs;
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly inputs: readonly { readonly shape: readonly number[]; readonly dtype: DType }[];
}

/** A kernel taking the node's inputs `args` (by position, in order) as its arguments. */
export interface ExternKernel {
  readonly kind: 'kernel';
  readonly kernel: KernelSource;
  readonly args: readonly number[];
}

export type ExternLowered =
  | ExternKernel
  /** A kernel exists but would loop more than the device allows per element. */
  | { readonly kind: 'too-long'; readonly iterations: number };

const size = (s: readonly number[]): number => s.reduce((p, d) => p * d, 1);

/** The kernel's value rounded as the node's dtype stores it. */
function finish(n: ExternNode, b: KernelBuilder, args: readonly number[], value: string): ExternKernel {
  const v = n.dtype === 'float32' ? value : storeAs(n.dtype, value);
  return { kind: 'kernel', kernel: b.finish(v, args.length), args };
}

/** A user op with a gpu template (and none for the cpu): its helper per element, inputs broadcast. */
export function userElementwise(n: ExternNode, helper: { readonly name: string; readonly source: string }): ExternKernel {
  const b = new KernelBuilder(n.shape);
  const loads = n.inputs.map((inp, k) => {
    if (size(inp.shape) === 1) return `${b.arg(k)}[0]`;
    // Right-aligned broadcasting: stride 0 on the axes the input has size 1 (or lacks).
    const st = rowMajorStrides(inp.shape);
    const strides = new Array<number>(n.shape.length).fill(0);
    const off = n.shape.length - inp.shape.length;
    inp.shape.forEach((d, i) => { strides[off + i] = d === 1 ? 0 : st[i]!; });
    return `${b.arg(k)}[${b.offset(strides)}]`;
  });
  const l = finish(n, b, n.inputs.map((_, k) => k), `${helper.name}(${loads.join(', ')})`);
  return { ...l, kernel: { ...l.kernel, functions: [...l.kernel.functions, helper.source] } };
}

/**
 * The gpu kernel of an extern step, or undefined when the gpu has none (it runs on the host).
 * `maxLoop`: the most loop iterations one kernel invocation may run on the device.
 */
export function externKernel(n: ExternNode, maxLoop = Infinity): ExternLowered | undefined {
  if (size(n.shape) > MAX_ELEMENTS || n.inputs.some((i) => size(i.shape) > MAX_ELEMENTS)) return undefined;
  const body = windowed(n);
  if (body === undefined) return undefined;
  const l = finish(n, body.b, body.args, body.result);
  // A margin below the measured limit: llvmpipe counts loop entries and exits a little apart
  // from the iterations counted here.
  const budget = Number.isFinite(maxLoop) ? Math.floor(maxLoop * 0.99) : maxLoop;
  const it = loopIterations(l.kernel.source);
  return it > budget ? { kind: 'too-long', iterations: it } : l;
}
