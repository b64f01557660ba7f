// What the viewer shows, computed by theanine itself and free of the DOM, so that Node (tests,
// `theanine viz`) and the page compute the same thing: the graph a program builds and its
// gradient graph, the optimizer pass by pass with what each pass changed, the kernels a compiled
// function became and the nodes they came from, and reverse mode step by step on concrete inputs.
//
// A program is JavaScript with `K` (theanine's backend) and `rand` in scope that returns (or, in
// a file, `export default`s) `{ inputs, loss, wrt? }`: `inputs` maps names to concrete values, `loss(...tensors)` builds the
// graph from one placeholder per input (in the order of `inputs`), `wrt` names the inputs to
// differentiate (default: all). It is verify_grad's shape of a problem (Theano's too): a function
// and the point to check it at. A program that also returns `tangents` (a direction per wrt
// input, by name; those not named move by zero) is stepped through in forward mode along them
// (autodiff.jvp, dual numbers) instead of reverse mode.
import { backend as K, verify_grad, GradientError } from '../src/index.js';
import { gradients as reverseMode } from '../src/autodiff/grad.js';
import { tangents as forwardMode } from '../src/autodiff/forward.js';
import { gradRules } from '../src/autodiff/rules/index.js';
import { apply } from '../src/ir/build.js';
import { isBuiltin } from '../src/ir/registry.js';
import { toDotWithIds, type DotCluster } from '../src/ir/dot.js';
import type { FusedBody } from '../src/ir/fused.js';
import { topoSort } from '../src/ir/graph.js';
import { evaluate } from '../src/ir/interpret.js';
import { NDArray, formatShape, type NestedArray } from '../src/ir/ndarray.js';
import { Node, attrsKey } from '../src/ir/node.js';
import { nodeLabel } from '../src/ir/printer.js';
import { fusedLabel } from '../src/passes/fusion.js';
import { runPasses } from '../src/passes/pass.js';
import { resolvePipeline } from '../src/passes/user.js';
import { cpuFusion } from '../src/runtime/cpu/fusion.js';
import type { CompiledFunction } from '../src/runtime/function.js';
import type { FunctionProfile } from '../src/runtime/profile.js';

export type Backend = typeof K;

export interface Program {
  readonly inputs: Readonly<Record<string, NestedArray>>;
  readonly loss: (...xs: Node[]) => Node;
  readonly wrt?: readonly string[];
  readonly tangents?: Readonly<Record<string, NestedArray>>;
}

/** The file name the program's code runs under (stack traces and provenance name it). */
export const PROGRAM_URL = 'viewer-program.js';

/**
 * Lines before the program's first line in the code that runs it: none (the function's head
 * shares the program's first line), so stack frames, provenance and the DOT groups that name
 * viewer-program.js give the editor's line numbers.
 */
export const PROGRAM_LINE_OFFSET = 0;

/** Deterministic values in [-1, 1) of `shape` (a small LCG: the same numbers in Node and every browser). */
export function rand(shape: readonly number[], seed = 1): NestedArray {
  let s = (seed * 2654435761) >>> 0 || 1;
  const next = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return Math.round(((s / 2 ** 32) * 2 - 1) * 1000) / 1000;
  };
  const build = (d: number): NestedArray => (d === shape.length ? next() : Array.from({ length: shape[d]! }, () => build(d + 1)));
  return build(0);
}

/** Runs a program's code (see the top of this file) and checks what it returns. */
export function runProgram(code: string, k: Backend = K): Program {
  if (typeof code !== 'string') throw new TypeError(`runProgram: code must be a string, got ${typeof code}`);
  // A file may say `export default { ... }` (valid module syntax for editors and linters) where
  // the editor says `return { ... }`: the same program. Same length, so columns stay right.
  const body = code.replace(/^(\s*)export default /m, (_m, pad: string) => `${pad}return${' '.repeat('export default '.length - 'return'.length)}`);
  // Indirect eval of a function expression (global scope, like new Function, which would put two
  // lines of its own before the body). The code is the user's own, run in their own page or process.
  // biome-ignore lint/security/noGlobalEval: a REPL for the user's own program; the page's CSP needs 'unsafe-eval' for theanine's kernels anyway
  const fn = (0, eval)(`(function (K, rand) {${body}\n})\n//# sourceURL=${PROGRAM_URL}`) as (k: Backend, r: typeof rand) => unknown;
  const p = fn(k, rand);
  if (p === null || typeof p !== 'object') throw new TypeError(`the program must return { inputs, loss, wrt? }, got ${p === null ? 'null' : typeof p}`);
  const { inputs, loss, wrt, tangents } = p as Partial<Program>;
  if (inputs === null || typeof inputs !== 'object' || Object.keys(inputs).length === 0) throw new TypeError('the program must return { inputs: { name: value, ... } } with at least one input');
  if (typeof loss !== 'function') throw new TypeError(`the program must return { loss: (${Object.keys(inputs).join(', ')}) => tensor }, got loss of type ${typeof loss}`);
  if (wrt !== undefined) {
    if (!Array.isArray(wrt) || wrt.some((w) => typeof w !== 'string' || !(w in inputs))) {
      throw new TypeError(`the program's wrt must list names of its inputs (${Object.keys(inputs).join(', ')}), got ${JSON.stringify(wrt)}`);
    }
  }
  if (tangents !== undefined) {
    const names = wrt ?? Object.keys(inputs);
    if (tangents === null || typeof tangents !== 'object' || Object.keys(tangents).length === 0 || Object.keys(tangents).some((t) => !names.includes(t))) {
      throw new TypeError(`the program's tangents must map names of its wrt inputs (${names.join(', ')}) to directions, got ${JSON.stringify(tangents)}`);
    }
  }
  return { inputs, loss, ...(wrt !== undefined ? { wrt } : {}), ...(tangents !== undefined ? { tangents } : {}) };
}

/** One pass of the optimizer as the viewer shows it. */
export interface PassStep {
  readonly name: string;
  readonly doc: string;
  readonly ms: number;
  readonly nodesBefore: number;
  readonly nodesAfter: number;
  /** The graph after the pass (DOT) and each node's id in it. */
  readonly dot: string;
  readonly ids: Map<Node, string>;
  /** Nodes the pass made (not in the graph before it): what it changed. */
  readonly added: readonly Node[];
  /** Ops of the nodes it dropped, with counts (`mul ×2`). */
  readonly removed: readonly string[];
  /** The pass's own line (eqsat: the e-graph's growth per iteration, why it stopped, greedy's and the extracted graph's costs, which it kept). */
  readonly note?: string;
  /** eqsat: the graph it was given, greedy's (DOT), to show beside the one it returned. */
  readonly beforeDot?: string;
}

/** A kernel of the generated source and the node of the optimized graph it computes. */
export interface KernelView {
  readonly name: string;
  readonly label: string;
  readonly source: string;
  readonly node: Node | undefined;
}

export interface Analysis {
  readonly program: Program;
  readonly names: readonly string[];
  readonly placeholders: readonly Node[];
  readonly values: readonly NDArray[];
  readonly wrt: readonly number[];
  readonly loss: Node;
  readonly grads: readonly Node[];
  /** The graph as built: loss and gradients, gradient nodes in their own box. */
  readonly built: { readonly dot: string; readonly ids: Map<Node, string> };
  readonly passes: readonly PassStep[];
  readonly optimized: readonly Node[];
  /** The optimizer level the passes ran at (and compile uses). */
  readonly level: ViewerLevel;
  /** Forward mode: the direction of each wrt input (aligned with `wrt`; zeros where the program names none). */
  readonly tangents?: readonly NDArray[];
}

export type ViewerLevel = 'fast_run' | 'eqsat';

/**
 * Structural classes of the nodes of a graph: two nodes are in one class when they have the same
 * op, attrs, type and inputs of the same classes (leaves: only themselves). A pass that merges
 * two equal constants rebuilds every node above them as new objects; by class, only what the
 * pass really rewrote differs from the graph before it.
 */
const COMMUTATIVE = new Set(['add', 'mul', 'maximum', 'minimum', 'equal', 'not_equal']);

class Classes {
  private readonly ids = new Map<string, number>();
  private readonly of = new Map<Node, number>();
  classOf(n: Node): number {
    const known = this.of.get(n);
    if (known !== undefined) return known;
    let key: string;
    if (n.inputs.length === 0 && n.op !== 'constant') key = `leaf#${n.id}`;
    else {
      // Inputs first, without recursion (graphs can be deep).
      for (const m of topoSort(n.inputs)) if (!this.of.has(m)) this.classOf(m);
      const ins = n.inputs.map((i) => this.of.get(i)!);
      // Input order of a commutative op is no change (merge puts it in a canonical order).
      if (COMMUTATIVE.has(n.op)) ins.sort((x, y) => x - y);
      key = `${n.op}${attrsKey(n.attrs)}:${n.dtype}${formatShape(n.shape)}(${ins.join(',')})`;
    }
    let id = this.ids.get(key);
    if (id === undefined) this.ids.set(key, (id = this.ids.size));
    this.of.set(n, id);
    return id;
  }
}

const GRADIENT: DotCluster = { id: 'gradients', label: 'K.gradients: reverse mode', kind: 'gradient' };

function reachable(outputs: readonly Node[]): Set<Node> {
  return new Set(topoSort(outputs));
}

/** Output names: `loss`, then `d loss / d W` per wrt input. */
export function outputNames(a: Pick<Analysis, 'names' | 'wrt'>): string[] {
  return ['loss', ...a.wrt.map((i) => `d loss / d ${a.names[i]}`)];
}

/** Builds the program's graph on placeholders, its gradients, and runs the optimizer pass by pass (the cpu pipeline, as optimize()). */
export function analyze(program: Program, k: Backend = K, level: ViewerLevel = 'fast_run'): Analysis {
  const names = Object.keys(program.inputs);
  const values = names.map((n) => NDArray.from(program.inputs[n], 'float32', `input ${n}`));
  const placeholders = names.map((n, i) => k.placeholder(values[i]!.shape, null, 'float32', false, n));
  const loss = program.loss(...placeholders);
  if (!(loss instanceof Node)) throw new TypeError(`loss(${names.join(', ')}) must return a tensor, got ${loss === null ? 'null' : typeof loss}`);
  const wrt = (program.wrt ?? names).map((w) => names.indexOf(w));
  const tangents = program.tangents === undefined ? undefined : wrt.map((i) => {
    const given = program.tangents![names[i]!];
    if (given === undefined) return NDArray.zeros(values[i]!.shape, 'float32');
    const v = NDArray.from(given, 'float32', `tangent of ${names[i]}`);
    if (formatShape(v.shape) !== formatShape(values[i]!.shape)) throw new TypeError(`the tangent of ${names[i]} must have its shape ${formatShape(values[i]!.shape)}, got ${formatShape(v.shape)}`);
    return v;
  });
  const grads = k.gradients(loss, wrt.map((i) => placeholders[i]!));
  const outputs = [loss, ...grads];
  const forward = reachable([loss]);
  const drawn = toDotWithIds(outputs, {
    outputNames: outputNames({ names, wrt }),
    cluster: (n) => (forward.has(n) ? undefined : GRADIENT),
  });
  const built = { dot: drawn.text, ids: drawn.ids };

  const passes: PassStep[] = [];
  const classes = new Classes();
  let before = reachable(outputs);
  const docs = new Map<string, string>();
  const pipeline = resolvePipeline(level, cpuFusion);
  let lastDot = built.dot;
  for (const p of pipeline) docs.set(p.name, p.doc);
  const g = runPasses(pipeline, { outputs }, {
    onPass: (r, after) => {
      const now = reachable(after.outputs);
      const had = new Set([...before].map((n) => classes.classOf(n)));
      const has = new Set([...now].map((n) => classes.classOf(n)));
      const added = [...now].filter((n) => !had.has(classes.classOf(n)));
      const gone = new Map<string, number>();
      for (const n of before) if (!has.has(classes.classOf(n))) gone.set(n.op, (gone.get(n.op) ?? 0) + 1);
      const { text, ids } = toDotWithIds(after.outputs, { outputNames: outputNames({ names, wrt }), label: fusedLabel });
      passes.push({
        name: r.name, doc: docs.get(r.name) ?? '', ms: r.ms, nodesBefore: r.nodesBefore, nodesAfter: r.nodesAfter,
        dot: text, ids, added, removed: [...gone].map(([op, c]) => (c > 1 ? `${op} ×${c}` : op)),
        ...(r.note !== undefined ? { note: r.note } : {}),
        ...(r.name === 'eqsat' ? { beforeDot: lastDot } : {}),
      });
      before = now;
      lastDot = text;
    },
  });
  return { program, names, placeholders, values, wrt, loss, grads, built, passes, optimized: g.outputs, level, ...(tangents !== undefined ? { tangents } : {}) };
}

/** A compiled function of the analysis (loss and gradients) on `device`. */
/** The page's device choices: the cpu, the gpu device's gpu.js mode, its webgpu mode (the page sets THEANINE_GPU_MODE). */
export type ViewerDevice = 'cpu' | 'gpu' | 'webgpu';

export function compile(a: Analysis, device: 'cpu' | 'gpu', k: Backend = K, profile = false): CompiledFunction {
  return k.function([...a.placeholders], [a.loss, ...a.grads], [], { device, optimizer: a.level, ...(profile ? { profile: true } : {}) });
}

/** Profile bars: each kernel's share of the longest kernel's total time (the Profile tab). */
export function profileBars(p: FunctionProfile): { name: string; ms: number; width: number; kCalls: string }[] {
  const max = Math.max(0, ...p.kernels.map((k) => k.totalMs));
  return p.kernels.map((k) => ({ name: k.name, ms: k.totalMs, width: max === 0 ? 0 : k.totalMs / max, kCalls: k.kCalls.join('; ') }));
}

/** Runs a compiled function on the analysis' inputs: loss then gradients, flattened. */
export function numbers(f: CompiledFunction, a: Analysis): number[][] {
  return f(a.values).map((v) => Array.from(v.data as ArrayLike<number>, Number));
}

/** As numbers, the call awaited (the gpu device's webgpu mode on a page, where a call cannot block). */
export async function numbersAsync(f: CompiledFunction, a: Analysis): Promise<number[][]> {
  return (await f.callAsync(a.values)).map((v) => Array.from(v.data as ArrayLike<number>, Number));
}

/** The same numbers from the reference interpreter (the definition of meaning). */
export function referenceNumbers(a: Analysis): number[][] {
  const feeds = new Map(a.placeholders.map((p, i) => [p, a.values[i]!] as const));
  return evaluate([a.loss, ...a.grads], { feeds }).map((v) => Array.from(v.data as ArrayLike<number>, Number));
}

/** The op list of a fused node (as a kernel's label lists it), else the op alone. */
export function opsOf(n: Node): string[] {
  return n.op === 'fused' ? (n.attrs['body'] as FusedBody).ops() : [n.op];
}

/**
 * The generated source split into kernels, each linked to the node of `graph` it computes: the
 * cpu target's `function kN(...) { // <kind> [ops]` and the gpu target's kernels name the ops
 * they fuse in a comment; a kernel is linked to the first node of the optimized graph (in
 * topological order) with that op list that no earlier kernel took.
 */
export function kernelsOf(source: string, graph: readonly Node[]): KernelView[] {
  const order = topoSort(graph);
  const taken = new Set<Node>();
  const out: KernelView[] = [];
  const lines = source.split('\n');
  const sorted = (xs: readonly string[]) => [...xs].sort().join(',');
  let cur: { name: string; label: string; lines: string[] } | undefined;
  // A matrix product's operand packing loops ("pack A", "pack B tail", ...) come just before its
  // kernel and compute no node of their own: they are shown with that kernel, after its source.
  let packs: string[] = [];
  const flush = () => {
    if (cur === undefined) return;
    const source = cur.lines.join('\n');
    if (!cur.name.startsWith('kernel ') && cur.label.startsWith('pack ')) {
      packs.push(source);
      cur = undefined;
      return;
    }
    const ops = (/\[([^\]]+)\]/.exec(cur.label)?.[1] ?? cur.label.split(' ')[0]!).split(',');
    const free = order.filter((n) => !taken.has(n) && n.inputs.length > 0);
    const node = free.find((n) => opsOf(n).join(',') === ops.join(',')) ?? free.find((n) => sorted(opsOf(n)) === sorted(ops));
    if (node !== undefined) taken.add(node);
    const withPacks = cur.label.startsWith('matmul') && packs.length > 0 ? [source, ...packs].join('\n') : source;
    if (withPacks === source) for (const [i, p] of packs.entries()) out.push({ name: `pack ${i}`, label: 'operand packing', source: p, node: undefined });
    packs = [];
    out.push({ name: cur.name, label: cur.label, source: withPacks, node });
    cur = undefined;
  };
  let gpuCount = 0;
  for (const line of lines) {
    // cpu: `function k3(...) { // matmul 3x2x4 [transpose,dot]`; gpu: `// max,sub: 12 elements` over a kernel;
    // gpu:webgpu: `// max,sub: workgroups 1 x 1 x 1` over its WGSL (indented inside a Scan's body).
    const m = /^function (\w+)\(.*\)\s*\{\s*\/\/\s*(.*)$/.exec(line);
    const g = /^\s*\/\/ (.+): (?:\d+ elements?|workgroups \d+ x \d+ x \d+$)/.exec(line);
    if (m !== null || g !== null) {
      flush();
      cur = m !== null ? { name: m[1]!, label: m[2]!.trim(), lines: [line] } : { name: `kernel ${gpuCount++}`, label: g![1]!.trim(), lines: [line] };
    } else if (cur?.name.startsWith('kernel ')) {
      if (line.trim() === '') flush();
      else cur.lines.push(line);
    } else if (cur !== undefined && /^(function |"use strict"|return function|const k\d)/.test(line)) {
      flush();
    } else if (cur !== undefined) {
      cur.lines.push(line);
    }
  }
  flush();
  for (const [i, p] of packs.entries()) out.push({ name: `pack ${i}`, label: 'operand packing', source: p, node: undefined });
  return out;
}

/** One step of reverse mode: a node, its forward value, and (from the loss back) its adjoint. */
export interface AdjointStep {
  readonly node: Node;
  readonly label: string;
  readonly value: NDArray;
  /** d loss / d node: the sum over the node's consumers of what each one's rule sends back. */
  readonly adjoint: NDArray;
  /** The nodes whose rules sent it something (its consumers on a path to the loss). */
  readonly from: readonly Node[];
  /**
   * What each consumer's gradient rule sent back, evaluated (they add up to `adjoint`); absent
   * where a consumer's rule is not a plain function of its cotangent (a Scan's items, a user op).
   */
  readonly contributions?: readonly { readonly from: Node; readonly value: NDArray }[];
}

export interface StepThrough {
  /** 'reverse': values forward, then adjoints back; 'forward' (a program with tangents): each node's value and tangent in one pass. */
  readonly mode: 'reverse' | 'forward';
  /**
   * Forward values in topological order (the first half of the picture); in forward mode with
   * each float node's tangent (d node along the direction, zero where it does not depend on a
   * wrt input) and the inputs whose tangents its tangent rule read.
   */
  readonly forward: readonly ForwardStep[];
  /** Adjoints from the loss back, in reverse topological order (none in forward mode). */
  readonly backward: readonly AdjointStep[];
  /** The DOT of the forward graph (values and adjoints are drawn on it step by step) and node ids. */
  readonly dot: string;
  readonly ids: Map<Node, string>;
  /** verify_grad's finite-difference check: passed, or its message. */
  readonly check: { readonly ok: true } | { readonly ok: false; readonly message: string };
  /**
   * Reverse mode, per wrt input: the symbolic gradient and central finite differences of the loss.
   * Forward mode: the loss' derivative along the direction (summed over a loss that is not a
   * scalar) by forward mode and by reverse mode (<gradient, direction>), each against central
   * finite differences along the direction.
   */
  readonly table: readonly { readonly name: string; readonly analytic: readonly number[]; readonly numeric: readonly number[] }[];
}

export interface ForwardStep {
  readonly node: Node;
  readonly label: string;
  readonly value: NDArray;
  readonly tangent?: NDArray;
  readonly from?: readonly Node[];
}

function isFloatNode(n: Node): boolean {
  return n.type.items === undefined && (n.dtype === 'float32' || n.dtype === 'float64' || n.dtype === 'float16');
}

/** A short text of an array's values (the first few, then the count). */
export function brief(v: NDArray, max = 4): string {
  const d = Array.from(v.data as ArrayLike<number>, Number);
  const f = (x: number) => (Number.isInteger(x) ? String(x) : Math.abs(x) >= 1e4 || (Math.abs(x) < 1e-3 && x !== 0) ? x.toExponential(2) : x.toFixed(4));
  if (v.shape.length === 0) return f(d[0]!);
  return `[${d.slice(0, max).map(f).join(', ')}${d.length > max ? `, … ${d.length} values` : ''}]`;
}

/**
 * Reverse mode on the analysis' inputs, node by node: the forward values of the loss' graph,
 * then each float node's adjoint (the gradient of the loss with respect to that node, built by
 * K.gradients' own reverse mode and run by the reference interpreter), from the loss back to the
 * inputs; then verify_grad on the same function and point.
 */
export function stepThrough(a: Analysis, opts: { readonly verify?: boolean } = {}): StepThrough {
  if (a.tangents !== undefined) return forwardStepThrough(a, a.tangents);
  const order = topoSort([a.loss]).filter((n) => n.type.items === undefined);
  const feeds = new Map(a.placeholders.map((p, i) => [p, a.values[i]!] as const));
  const values = evaluate(order, { feeds });
  const floats = order.filter(isFloatNode);
  const adjointGraphs = reverseMode(a.loss, floats, 'viewer');
  const adjoints = evaluate(adjointGraphs, { feeds });
  const adj = new Map(floats.map((n, i) => [n, adjoints[i]!] as const));
  const val = new Map(order.map((n, i) => [n, values[i]!] as const));
  const consumers = new Map<Node, Node[]>();
  for (const n of order) for (const i of n.inputs) if (!(consumers.get(i) ?? []).includes(n)) consumers.set(i, [...(consumers.get(i) ?? []), n]);
  const label = (n: Node) => nodeLabel(n);
  const forward = order.map((n) => ({ node: n, label: label(n), value: val.get(n)! }));
  // Each consumer's share: its own rule applied to its adjoint (a constant here), at the input
  // positions that are this node, as K.gradients' walk adds them up.
  const contributionsOf = (n: Node, from: readonly Node[]): AdjointStep['contributions'] => {
    const parts: Node[] = [];
    for (const c of from) {
      const rule = isBuiltin(c.op) ? gradRules[c.op] : undefined;
      if (typeof rule !== 'function') return undefined;
      const ins = (rule as (node: Node, g: Node) => readonly (Node | null)[])(c, apply('constant', [], { value: adj.get(c)! }, 'viewer'));
      let sum: Node | undefined;
      c.inputs.forEach((inp, k) => {
        const g = ins[k];
        if (inp !== n || g === null || g === undefined) return;
        const cast = g.dtype === n.dtype ? g : apply('cast', [g], { dtype: n.dtype }, 'viewer');
        sum = sum === undefined ? cast : apply('add', [sum, cast], {}, 'viewer');
      });
      if (sum === undefined) return undefined;
      parts.push(sum);
    }
    const vals = evaluate(parts, { feeds });
    return from.map((c, i) => ({ from: c, value: vals[i]! }));
  };
  const backward = [...floats].reverse().map((n) => {
    const from = (consumers.get(n) ?? []).filter((c) => adj.has(c));
    let contributions: AdjointStep['contributions'];
    try {
      contributions = contributionsOf(n, from);
    } catch {
      contributions = undefined; // a rule that needs more than its node and cotangent: the sum alone is shown
    }
    return { node: n, label: label(n), value: val.get(n)!, adjoint: adj.get(n)!, from, ...(contributions !== undefined ? { contributions } : {}) };
  });
  const { text, ids } = toDotWithIds([a.loss], {
    outputNames: ['loss'],
    label: (n) => `${nodeLabel(n)}${val.has(n) ? `\nvalue ${brief(val.get(n)!, 3)}` : ''}${adj.has(n) ? `\ngrad ${brief(adj.get(n)!, 3)}` : ''}`,
  });

  let check: StepThrough['check'] = { ok: true };
  if (opts.verify !== false) {
    try {
      verify_grad((...xs: Node[]) => a.program.loss(...xs), a.values);
    } catch (e) {
      if (!(e instanceof GradientError)) throw e;
      check = { ok: false, message: e.message };
    }
  }
  // The table: the symbolic gradient at the point and central differences of the loss (float32
  // inputs: eps 1e-3 keeps rounding, about 1e-7 / eps, and the O(eps^2) error both near 1e-4).
  const eps = 1e-3;
  const lossAt = (vs: readonly NDArray[]) => {
    const f = new Map(a.placeholders.map((p, i) => [p, vs[i]!] as const));
    // A loss that is not a scalar is summed first, as K.gradients does.
    return Array.from(evaluate([a.loss], { feeds: f })[0]!.data as ArrayLike<number>, Number).reduce((p, x) => p + x, 0);
  };
  const table = a.wrt.map((i) => {
    const base = a.values[i]!;
    const analytic = Array.from(adj.get(a.placeholders[i]!)?.data as ArrayLike<number> ?? new Float32Array(base.size), Number);
    const numeric: number[] = [];
    for (let j = 0; j < base.size; j++) {
      const up = base.clone();
      const down = base.clone();
      up.data[j] = up.data[j]! + eps;
      down.data[j] = down.data[j]! - eps;
      const at = (b: NDArray) => lossAt(a.values.map((v, k) => (k === i ? b : v)));
      numeric.push((at(up) - at(down)) / (2 * eps));
    }
    return { name: a.names[i]!, analytic, numeric };
  });
  return { mode: 'reverse', forward, backward, dot: text, ids, check, table };
}

/** The loss (summed over its elements) at inputs `vs`, on the reference interpreter. */
function lossWith(a: Analysis, vs: readonly NDArray[]): number {
  const feeds = new Map(a.placeholders.map((p, i) => [p, vs[i]!] as const));
  return Array.from(evaluate([a.loss], { feeds })[0]!.data as ArrayLike<number>, Number).reduce((p, x) => p + x, 0);
}

/**
 * Forward mode on the analysis' inputs, node by node (dual numbers): each node's value and its
 * tangent, the derivative along the program's direction, from its inputs' values and tangents
 * by the op's tangent rule (autodiff.jvp's own forward mode, run by the reference interpreter).
 * The loss' tangent is checked against <gradient, direction> from reverse mode and against
 * central differences of the loss along the direction.
 */
function forwardStepThrough(a: Analysis, directions: readonly NDArray[]): StepThrough {
  const order = topoSort([a.loss]).filter((n) => n.type.items === undefined);
  const feeds = new Map(a.placeholders.map((p, i) => [p, a.values[i]!] as const));
  const values = evaluate(order, { feeds });
  const val = new Map(order.map((n, i) => [n, values[i]!] as const));
  const floats = order.filter(isFloatNode);
  const seeds = a.wrt.map((i) => a.placeholders[i]!);
  const points = directions.map((d, k) => apply('constant', [], { value: d.astype(seeds[k]!.dtype) }, 'viewer'));
  const graphs = forwardMode(floats, seeds, points, 'viewer');
  const built = floats.flatMap((n, i) => (graphs[i] === null ? [] : [[n, graphs[i]!] as const]));
  const evaluated = evaluate(built.map(([, g]) => g), { feeds });
  const tan = new Map(built.map(([n], i) => [n, evaluated[i]!] as const));
  const zero = (n: Node) => NDArray.zeros(val.get(n)!.shape, n.dtype);
  const forward: ForwardStep[] = order.map((n) => ({
    node: n, label: nodeLabel(n), value: val.get(n)!,
    ...(isFloatNode(n) ? { tangent: tan.get(n) ?? zero(n), from: n.inputs.filter((i) => tan.has(i)) } : {}),
  }));
  const { text, ids } = toDotWithIds([a.loss], {
    outputNames: ['loss'],
    label: (n) => `${nodeLabel(n)}${val.has(n) ? `\nvalue ${brief(val.get(n)!, 3)}` : ''}${isFloatNode(n) ? `\ntangent ${brief(tan.get(n) ?? zero(n), 3)}` : ''}`,
  });
  const sum = (v: NDArray | undefined) => (v === undefined ? 0 : Array.from(v.data as ArrayLike<number>, Number).reduce((p, x) => p + x, 0));
  const jvp = sum(tan.get(a.loss));
  const grads = evaluate(a.grads, { feeds });
  const gv = grads.reduce((p, g, k) => p + Array.from(g.data as ArrayLike<number>, Number).reduce((q, x, j) => q + x * Number(directions[k]!.data[j]), 0), 0);
  // Central differences along the direction; eps as the reverse-mode table's (float32 inputs).
  const eps = 1e-3;
  const moved = (s: number) => a.values.map((v, i) => {
    const k = a.wrt.indexOf(i);
    if (k < 0) return v;
    const m = v.clone();
    for (let j = 0; j < m.size; j++) m.data[j] = Number(m.data[j]) + s * eps * Number(directions[k]!.data[j]);
    return m;
  });
  const numeric = (lossWith(a, moved(1)) - lossWith(a, moved(-1))) / (2 * eps);
  const table = [{ name: 'jvp (forward mode)', analytic: [jvp], numeric: [numeric] }, { name: '<gradient, v> (reverse mode)', analytic: [gv], numeric: [numeric] }];
  const tol = 1e-2 * (1 + Math.abs(numeric));
  const check: StepThrough['check'] = Math.abs(jvp - numeric) <= tol && Math.abs(gv - numeric) <= tol ? { ok: true }
    : { ok: false, message: `the derivative along the direction: forward mode ${jvp}, reverse mode ${gv}, finite differences ${numeric} (tolerance ${tol.toExponential(2)})` };
  return { mode: 'forward', forward, backward: [], dot: text, ids, check, table };
}

/** One line per node of a graph: `op dtype (shape)` (for tests and the page's tooltips). */
export function describeNode(n: Node): string {
  return `${fusedLabel(n) ?? nodeLabel(n)} ${n.dtype} ${formatShape(n.shape)}`;
}

/**
 * Where the user's code built a node: a line of the program (1-based, as the editor counts),
 * from the node's provenance (src/ir/provenance.ts: the public calls that built it and the
 * user's line). A gradient node's record names the forward node whose rule made it: its line is
 * that node's. The page calls this when a node or a kernel is clicked; undefined where no record
 * names the program (placeholders the viewer made, constants shared by every graph).
 */
export function programLineOf(n: Node, depth = 0): number | undefined {
  const records = (n as unknown as { provenance?: readonly unknown[] }).provenance ?? [];
  for (const r of records) {
    const site = (r as { site?: { file?: unknown; line?: unknown } } | null)?.site;
    if (typeof site?.file === 'string' && site.file.endsWith(PROGRAM_URL) && typeof site.line === 'number') return site.line - PROGRAM_LINE_OFFSET;
  }
  if (depth < 4) {
    for (const r of records) {
      const of = (r as { of?: unknown } | null)?.of;
      if (of instanceof Node) {
        const line = programLineOf(of, depth + 1);
        if (line !== undefined) return line;
      }
    }
  }
  return undefined;
}

/** The public calls that built a node (`K.relu`, `K.gradients of K.dot`), deduplicated, for the page's node line. */
export function callsOf(n: Node): string[] {
  const records = (n as unknown as { provenance?: readonly unknown[] }).provenance ?? [];
  const calls: string[] = [];
  for (const r of records) {
    const call = (r as { call?: unknown } | null)?.call;
    if (typeof call !== 'string') continue;
    const of = (r as { of?: unknown }).of;
    const ofCalls = of instanceof Node ? callsOf(of) : [];
    const text = ofCalls.length > 0 ? `${call} of ${ofCalls[0]}` : call;
    if (!calls.includes(text)) calls.push(text);
  }
  return calls;
}
