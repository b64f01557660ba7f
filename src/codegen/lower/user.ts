// Code templates of user ops (defineOp's `cpu` and `gpu`). A template is a JavaScript
// expression of one output element: `x0`, `x1`, ... are the inputs' elements at that position
// (inputs broadcast to the output, NumPy style), the op's number and boolean attrs are in scope
// by name, and `Math` is available. On the cpu it becomes a scalar function that kernels call
// (so the op fuses with its neighbours); the gpu device renders it as a gpu.js helper, and its
// webgpu mode the `wgsl` template in its place (src/codegen/wgsl/user.ts). Ops without a cpu
// template run their reference implementation (an extern step); on the gpu they are an error
// that says what is missing.
import { ValueError } from '../../ir/errors.js';
import { topoSort } from '../../ir/graph.js';
import { attrsKey, type Node } from '../../ir/node.js';
import type { Attrs } from '../../ir/op.js';
import { isBuiltin, isOp } from '../../ir/registry.js';
import type { ScalarFn } from '../kernel/expr.js';
import { broadcastCoords, registerTemplate, type LoopTemplate } from './templates.js';

export interface UserTemplates {
  readonly cpu?: string;
  readonly gpu?: string;
  /** A WGSL expression (src/codegen/wgsl/user.ts), spelled in place of the cpu template's call. */
  readonly wgsl?: string;
}

const sources = new Map<string, UserTemplates>();
/** Scalar functions by op, attrs and input count (ExprBuilder interns calls by function identity). */
const fns = new Map<string, ScalarFn>();

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const INPUT = /^x\d+$/;
const RESERVED = new Set(['Math', 'Infinity', 'NaN', 'undefined', 'arguments', 'eval']);
/** JavaScript's reserved words (strict mode): no template can name an attr called one of these. */
export const JS_RESERVED: ReadonlySet<string> = new Set(
  (
    'break case catch class const continue debugger default delete do else enum export extends false finally ' +
    'for function if import in instanceof new null return super switch this throw true try typeof var void while with yield let static implements ' +
    'interface package private protected public await'
  ).split(' '),
);

/** The attrs a template sees: numbers and booleans (as 0/1) whose names are identifiers, not x0, x1... */
export function scalarAttrs(attrs: Attrs): [string, number][] {
  const out: [string, number][] = [];
  for (const [k, v] of Object.entries(attrs).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (!IDENT.test(k) || INPUT.test(k) || RESERVED.has(k) || JS_RESERVED.has(k)) continue;
    if (typeof v === 'number') out.push([k, v]);
    else if (typeof v === 'boolean') out.push([k, v ? 1 : 0]);
  }
  return out;
}

/** A number as JavaScript source (NaN, infinities and -0 included); `float` keeps a decimal point (gpu.js types literals by it). */
function numberSource(v: number, float = false): string {
  if (Number.isNaN(v)) return 'NaN';
  if (!Number.isFinite(v)) return v > 0 ? 'Infinity' : '(-Infinity)';
  if (Object.is(v, -0)) return '(-0)';
  let s = String(v);
  if (float && /^-?\d+$/.test(s)) s += '.0';
  return v < 0 ? `(${s})` : s;
}

/** Checks a template's syntax now, so a typo is reported by defineOp and not by the first compile. */
export function checkTemplate(op: string, which: 'cpu' | 'gpu', src: unknown, arity: number | undefined): string {
  if (typeof src !== 'string' || src.trim() === '')
    throw new TypeError(`defineOp(${op}): ${which} must be a JavaScript expression string, such as 'x0 * x1'`);
  const params = Array.from({ length: arity ?? 8 }, (_, i) => `x${i}`);
  try {
    new Function(...params, `return (${src}\n);`);
  } catch (e) {
    throw new ValueError(
      `defineOp(${op}): the ${which} template ${JSON.stringify(src)} is not a JavaScript expression: ${(e as Error).message}`,
    );
  }
  return src;
}

/** Registers a user op's templates; a cpu one becomes the op's elementwise codegen template. */
export function registerUserTemplates(op: string, t: UserTemplates): void {
  sources.set(op, t);
  const cpu = t.cpu;
  if (cpu === undefined) return;
  const template: LoopTemplate = {
    kind: 'elementwise',
    expr: (at, coords, c) => {
      const args = c.inShapes.map((s, i) => at(i, broadcastCoords(coords, s, c.outShape)));
      return c.b.call(userScalarFn(op, c.attrs, args.length), op, args);
    },
  };
  registerTemplate(op, template);
}

export function userTemplates(op: string): UserTemplates | undefined {
  return sources.get(op);
}

/** What each user scalar function computes (op, attrs, input count), for renderers other than the cpu's. */
const callInfo = new WeakMap<ScalarFn, { readonly op: string; readonly attrs: Attrs; readonly nInputs: number }>();

/** The user op behind a kernel IR `call` of `fn` (the gpu renders its gpu template instead). */
export function userCallOf(
  fn: ScalarFn,
): { readonly op: string; readonly attrs: Attrs; readonly nInputs: number } | undefined {
  return callInfo.get(fn);
}

/** The cpu template of `op` as a function of the inputs' elements, with `attrs` bound as constants. */
export function userScalarFn(op: string, attrs: Attrs, nInputs: number): ScalarFn {
  const key = `${op}|${nInputs}|${attrsKey(attrs)}`;
  let f = fns.get(key);
  if (f === undefined) {
    const src = sources.get(op)?.cpu;
    if (src === undefined) throw new Error(`internal: user op ${op} has no cpu template`);
    const consts = scalarAttrs(attrs)
      .map(([k, v]) => `const ${k} = ${numberSource(v)};`)
      .join(' ');
    const params = Array.from({ length: nInputs }, (_, i) => `x${i}`);
    // Its source (Function.prototype.toString) is what an exported module embeds.
    f = new Function(...params, `${consts} return (${src}\n);`) as ScalarFn;
    fns.set(key, f);
    callInfo.set(f, { op, attrs, nInputs });
  }
  return f;
}

/** Whether `n`'s op is a user op (defined with defineOp) rather than a built-in. */
function isUserOp(n: Node): boolean {
  return !isBuiltin(n.op);
}

function everyNode(outputs: readonly Node[]): Node[] {
  const out: Node[] = [];
  for (const n of topoSort(outputs)) {
    out.push(n);
    if (isOp(n, 'scan')) out.push(...everyNode(n.attrs.body.results));
  }
  return out;
}

/**
 * The check the gpu device makes before compiling: every user op needs a gpu template (its
 * reference implementation is host JavaScript). Throws a ValueError naming the op otherwise.
 */
export function requireGpuTemplates(outputs: readonly Node[], fn = 'function'): void {
  for (const n of everyNode(outputs)) {
    if (!isUserOp(n) || sources.get(n.op)?.gpu !== undefined) continue;
    throw new ValueError(
      `${fn}: device "gpu" cannot run the user op ${JSON.stringify(n.op)}: it was defined without a gpu template, and its reference implementation ` +
        `runs on the cpu only. Give defineOp a gpu expression of its inputs x0, x1, ... (for example gpu: 'x0 * x1'), or compile this function for device "cpu"`,
    );
  }
}

/**
 * A user op's gpu template as a gpu.js helper function for node `n`: `name(x0, x1, ...)` with
 * the node's attrs as constants inside. For the gpu renderer (src/codegen/gpu): call it with
 * the inputs' broadcast elements and add `source` to the kernel's functions.
 */
export function userGpuHelper(n: {
  readonly op: string;
  readonly attrs: Node['attrs'];
  readonly inputs: readonly unknown[];
}): { name: string; source: string } {
  const src = sources.get(n.op)?.gpu;
  if (src === undefined) throw new ValueError(`op ${JSON.stringify(n.op)} has no gpu template`);
  const consts = scalarAttrs(n.attrs)
    .map(([k, v]) => `const ${k} = ${numberSource(v, true)}; `)
    .join('');
  const key = `${n.inputs.length}|${attrsKey(n.attrs)}`;
  let id = gpuIds.get(`${n.op}|${key}`);
  if (id === undefined) {
    id = gpuIds.size;
    gpuIds.set(`${n.op}|${key}`, id);
  }
  const name = `u_${n.op}_${id}`;
  const params = n.inputs.map((_, i) => `x${i}`).join(', ');
  return { name, source: `function ${name}(${params}) { ${consts}return (${src}); }` };
}
const gpuIds = new Map<string, number>();
