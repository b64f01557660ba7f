// K.eval, K.get_value and K.batch_get_value: values of expressions without placeholders, computed
// where K.function computes them (the configured backend and device), as Keras' K.eval runs
// TensorFlow's session or Theano's compiled function. One compiled function per expression
// (nodes are hash-consed, so one per graph structure) and backend, device and learning phase
// source, kept until clear_session: a loop of K.eval costs what a loop of K.function calls does.
import { ValueError } from '../ir/errors.js';
import { describe, type NDArray } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import { leavesOf } from '../ir/graph.js';
import { getOrInsertComputed } from '../ir/maps.js';
import type { CompiledFunction } from '../runtime/function.js';
import { allOptions, isTensor, need, toTensor, type TensorLike } from './args.js';
import { backend as configuredBackend, device as configuredDevice } from './config.js';
import { Update, compileFunction } from './function.js';
import { onClearSession } from './state.js';
import { cellValueAsync } from '../runtime/gpu/webgpu/resident.js';

/** Compiled functions by their first output, then by the rest of the key (backend, device, other outputs, update target). */
let compiled = new WeakMap<Node, Map<string, CompiledFunction>>();
onClearSession(() => {
  compiled = new WeakMap();
});

function cachedFunction(fn: string, outputs: readonly Node[], update: Update | undefined): CompiledFunction {
  const first = update?.value ?? outputs[0]!;
  const backend = configuredBackend();
  const device = configuredDevice();
  const key = [
    backend,
    device,
    ...outputs.map((o) => o.id),
    update === undefined ? '' : `:=${update.variable.id}`,
  ].join(',');
  const byKey = getOrInsertComputed(compiled, first, () => new Map<string, CompiledFunction>());
  return getOrInsertComputed(byKey, key, () => {
    noPlaceholders(fn, update === undefined ? outputs : [update.value]);
    return compileFunction([], update === undefined ? outputs : [update.value], update === undefined ? [] : [update], {
      backend,
      device,
      name: update === undefined ? 'eval' : 'eval(update)',
    });
  });
}

function noPlaceholders(fn: string, xs: readonly Node[]): void {
  const ph = leavesOf(xs, 'placeholder');
  if (ph.length > 0) {
    const x = xs.find((t) => leavesOf([t], 'placeholder').length > 0)!;
    throw new ValueError(
      `${fn}: ${x.name} depends on placeholder ${JSON.stringify(ph[0]!.name)}; evaluate it with K.function and feed the placeholder`,
    );
  }
}

/** A leaf's own value needs no backend: a variable's current value, a constant's value (copies). */
function leafValue(x: Node): NDArray | undefined {
  if (x.op === 'variable') return x.cell!.value.clone();
  if (x.op === 'constant') return (x.attrs['value'] as NDArray).clone();
  return undefined;
}

function values(fn: string, xs: readonly Node[]): NDArray[] {
  const leaves = xs.map(leafValue);
  if (leaves.every((v) => v !== undefined)) return leaves as NDArray[];
  return cachedFunction(fn, xs, undefined)([]);
}

/**
 * K.eval(x): the value of an expression without placeholders, computed on the configured backend
 * and device. An update record (K.update, update_add, update_sub, moving_average_update) is
 * performed, and the variable's new value returned (TensorFlow's assign op).
 */
export function evaluateTensor(x: TensorLike | Update): NDArray {
  if (x instanceof Update) return cachedFunction('eval', [], x)([])[0]!;
  return values('eval', [toTensor('eval', x)])[0]!;
}

/** K.get_value(x): a variable's value; an expression's value as K.eval computes it (Keras: `x.eval(session)`). */
export function get_value(x: Node): NDArray {
  if (!isTensor(x))
    throw new TypeError(
      `get_value: expected a tensor (a variable, or an expression without placeholders), got ${describe(x)}`,
    );
  return values('get_value', [x])[0]!;
}

/**
 * K.get_value_async(x): get_value without blocking. A variable whose current value only the
 * gpu:webgpu device holds is read back with the device's promise (on a page, the only way: a
 * page cannot wait for WebGPU synchronously); an expression's variables are read so first, and
 * the expression runs with callAsync on the configured backend and device.
 */
export async function get_value_async(x: Node): Promise<NDArray> {
  if (!isTensor(x))
    throw new TypeError(
      `get_value_async: expected a tensor (a variable, or an expression without placeholders), got ${describe(x)}`,
    );
  const vars = x.op === 'variable' ? [x] : leavesOf([x], 'variable');
  const read = await Promise.all(vars.map((v) => cellValueAsync(v.cell!)));
  if (x.op === 'variable') return read[0]!.clone();
  const leaf = leafValue(x);
  if (leaf !== undefined) return leaf;
  return (await cachedFunction('get_value_async', [x], undefined).callAsync([]))[0]!;
}

/**
 * batch_get_value(ops): the values of variables and expressions, the expressions computed by one
 * function. Keras 2.3's name; Keras 2.0's `xs` is accepted in the options form ({ ops } or { xs }).
 */
export function batch_get_value(ops: readonly Node[] | { ops?: readonly Node[]; xs?: readonly Node[] }): NDArray[] {
  const xs = Array.isArray(ops)
    ? ops
    : (need('batch_get_value', allOptions('batch_get_value', [ops], ['ops'], { xs: 'ops' }), 'ops') as readonly Node[]);
  if (!Array.isArray(xs)) throw new TypeError(`batch_get_value: ops must be an array of tensors, got ${describe(xs)}`);
  xs.forEach((x, i) => {
    if (!isTensor(x))
      throw new TypeError(`batch_get_value: ops[${i}] is ${describe(x)}; expected a variable or an expression`);
  });
  if (xs.length === 0) return [];
  return values('batch_get_value', xs);
}

/** The function K.eval(x) runs under the current configuration, if it has been made (tests, the bench). */
export function evalFunctionOf(x: Node): CompiledFunction | undefined {
  return compiled.get(x)?.get([configuredBackend(), configuredDevice(), x.id, ''].join(','));
}
