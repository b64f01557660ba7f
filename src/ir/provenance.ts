// Provenance: which public call built a node, and from which line of the user's code. Theano
// kept a creation trace on every variable (`tag.trace`, printed as "Backtrace when the node is
// created"); JAX keeps `source_info` on every equation of a jaxpr. Here a public `K.*` call
// (src/api/trace.ts wraps them) opens one record for all the nodes it creates, however many
// primitives it is made of; the stack is captured once per outermost call and parsed only when
// someone prints it. Passes carry records over to the nodes they build (src/passes/rewrite.ts),
// fused kernels hold the records of their members, and errors at call time name them.
import type { Node } from './node.js';

/** Any function, called with `apply`. */
type Callable = (this: unknown, ...args: unknown[]) => unknown;

/** A position in the user's source: a file (path or URL), 1-based line and column. */
export interface Site {
  readonly file: string;
  readonly line: number;
  readonly column: number;
}

/** The JSON form of a record (what `f.graphJson()`-style inspection and the viewer read). */
export interface ProvenanceJson {
  /** The public call, e.g. `K.relu`, `K.gradients`, `Tensor.add`. */
  readonly call: string;
  /** The user's line, absent where tracing could not find one (a stack without locations). */
  readonly file?: string;
  readonly line?: number;
  readonly column?: number;
  /** For gradient nodes: the forward node they differentiate (its name and its own provenance). */
  readonly of?: { readonly node: string; readonly provenance: readonly ProvenanceJson[] };
}

/** What a captured stack is kept in until it is read (V8 formats `stack` lazily). */
interface StackHolder {
  stack?: string;
}

/** One public call: its name, its lazily parsed site, and (gradients) the forward node it differentiates. */
export class Provenance {
  private parsed: Site | null | undefined;
  /** This record alone, as a node's list (shared by every node the call creates). */
  readonly list: readonly Provenance[];

  constructor(
    readonly call: string,
    private readonly holder: StackHolder | undefined,
    /** For nodes made by K.gradients: the forward node whose rule made them. */
    readonly of?: Node,
  ) {
    this.list = [this];
  }

  /** The first frame of the captured stack outside theanine (parsed on first use). */
  get site(): Site | undefined {
    if (this.parsed === undefined)
      this.parsed = this.holder === undefined ? null : (userSite(this.holder.stack) ?? null);
    return this.parsed ?? undefined;
  }

  private keyText: string | undefined;
  /** `call@file:line:column`: what a compile cache keys on, so that a program compiled for other lines is not reused (its comments and errors would name them). */
  get key(): string {
    if (this.keyText === undefined) {
      const s = this.site;
      this.keyText = `${this.call}@${s === undefined ? '' : `${s.file}:${s.line}:${s.column}`}`;
    }
    return this.keyText;
  }

  /** A record for the nodes a gradient rule builds while differentiating `fwd` (same call, same site). */
  gradientOf(fwd: Node): Provenance {
    return new Provenance(this.call, this.holder, fwd);
  }

  /** `K.relu at model.ts:12`; gradients: `K.gradients of relu_12 (K.relu at model.ts:12) at train.ts:30`. */
  toString(): string {
    const s = this.site;
    const of =
      this.of === undefined
        ? ''
        : ` of ${this.of.name}${this.of.provenance.length > 0 ? ` (${formatProvenance(this.of.provenance, 1)})` : ''}`;
    return `${this.call}${of}${s === undefined ? '' : ` at ${shortSite(s)}`}`;
  }

  toJSON(): ProvenanceJson {
    const s = this.site;
    return {
      call: this.call,
      ...(s !== undefined ? { file: s.file, line: s.line, column: s.column } : {}),
      ...(this.of !== undefined
        ? { of: { node: this.of.name, provenance: this.of.provenance.map((p) => p.toJSON()) } }
        : {}),
    };
  }
}

/** `model.ts:12`: the file's last path segment and the line. */
export function shortSite(s: Site): string {
  const slash = Math.max(s.file.lastIndexOf('/'), s.file.lastIndexOf('\\'));
  return `${s.file.slice(slash + 1)}:${s.line}`;
}

/** Records as one line: `K.relu at model.ts:12; K.dot at model.ts:12 (+2 more)`. */
export function formatProvenance(ps: readonly Provenance[], max = 3): string {
  const shown = ps.slice(0, max).map((p) => p.toString());
  return shown.join('; ') + (ps.length > max ? ` (+${ps.length - max} more)` : '');
}

/**
 * A node's provenance as a compile-cache key part ('' without records): its first record, the
 * call that built it. Records passes added later (a node that became a replacement) come after it
 * and are left out, so compiling a graph does not change its own key.
 */
export function provenanceKey(ps: readonly Provenance[]): string {
  return ps.length === 0 ? '' : ps[0]!.key;
}

/** The one line an error ends with: `built by K.gather at train.ts:41`. */
export function builtBy(ps: readonly Provenance[]): string | undefined {
  return ps.length === 0 ? undefined : `built by ${formatProvenance(ps, 2)}`;
}

/**
 * Text that is safe inside a comment of generated source (JavaScript, GLSL, WebAssembly text):
 * one line, no comment terminator. User strings (file paths, URLs) only reach source through it.
 */
export function commentSafe(s: string, max = 400): string {
  const one = s
    .replace(/[\r\n\u2028\u2029]/g, ' ')
    .replace(/\*\//g, '* /')
    .replace(/\/\*/g, '/ *');
  return one.length > max ? `${one.slice(0, max)}...` : one;
}

/** The comment line generated source puts on a kernel: `built by K.relu at model.ts:12; ...`. */
export function provenanceComment(ps: readonly Provenance[] | undefined): string | undefined {
  return ps === undefined || ps.length === 0 ? undefined : commentSafe(`built by ${formatProvenance(ps, 4)}`);
}

const ANNOTATED = Symbol.for('theanine.builtBy');

/**
 * An error raised while a compiled function builds or runs a step ends with the step's
 * provenance, one line (Theano's "Backtrace when the node is created", shortened):
 * `...\nbuilt by K.gather at train.ts:41`. Only the innermost step annotates an error.
 */
export function withBuiltBy<E>(e: E, ps: readonly Provenance[] | undefined): E {
  return withBuiltByLine(e, ps === undefined ? undefined : builtBy(ps));
}

/** withBuiltBy with the `built by` line already made (a compiled module read from the disk cache keeps its lines). */
export function withBuiltByLine<E>(e: E, built: string | undefined): E {
  if (!(e instanceof Error) || built === undefined || (e as unknown as Record<symbol, unknown>)[ANNOTATED] === true)
    return e;
  const line = built.replace(/[\r\n\u2028\u2029]/g, ' ');
  const old = e.message;
  const stack = e.stack; // formatted on first read: read it before the message changes
  e.message = `${old}\n${line}`;
  if (typeof stack === 'string' && stack.includes(old)) e.stack = stack.replace(old, e.message);
  Object.defineProperty(e, ANNOTATED, { value: true });
  return e;
}

// ---- recording ------------------------------------------------------------------------------

let enabled = true;
/** The record of the public call running now (undefined outside one, or with tracing off). */
let current: Provenance | undefined;
/** Inside a public call (tracing on): nested public calls add no record of their own. */
let inside = false;

/** Turns recording on or off (THEANINE_TRACE=0, `setTrace(false)`). Nodes built meanwhile keep what they have. */
export function setTracing(on: boolean): void {
  enabled = on;
}

export function tracingEnabled(): boolean {
  return enabled;
}

/** The record new nodes get now (intern and fresh read it). */
export function currentProvenance(): readonly Provenance[] | undefined {
  return current?.list;
}

type CaptureFn = (target: object, above?: Callable) => void;
const captureStackTrace = (Error as unknown as { captureStackTrace?: CaptureFn }).captureStackTrace;
/** Frames kept per capture: the wrapper is cut off, so the caller comes first; one more covers a callback (xs.map(K.relu)). Each frame costs about a microsecond. */
const FRAMES = 2;

/** The stack above `above` (V8), else a whole Error's; formatted only when read. */
function capture(above: Callable): StackHolder {
  if (captureStackTrace !== undefined) {
    const h: StackHolder = {};
    const E = Error as unknown as { stackTraceLimit?: number };
    const limit = E.stackTraceLimit;
    E.stackTraceLimit = FRAMES;
    captureStackTrace(h, above);
    E.stackTraceLimit = limit;
    return h;
  }
  return new Error();
}

/** Whether a public call starting now records (tracing on, and not inside another public call). */
export function recording(): boolean {
  return enabled && !inside;
}

/**
 * Calls `f` (this, args) as the public call `call` (`wrapper` is the function the user called,
 * cut off the captured stack). Only the outermost call records: a composite (K.softmax built
 * from K.exp and K.sum) is one record for all its primitives. Callers check `recording()` first.
 */
export function recordCall(call: string, wrapper: Callable, f: Callable, self: unknown, args: unknown[]): unknown {
  const saved = current;
  current = new Provenance(call, capture(wrapper));
  inside = true;
  try {
    return f.apply(self, args);
  } finally {
    current = saved;
    inside = false;
  }
}

/** Runs user code called back from inside a public call (K.rnn's step function): its own K calls record again. */
export function userCode<T>(f: () => T): T {
  if (!inside) return f();
  const saved = current;
  current = undefined;
  inside = false;
  try {
    return f();
  } finally {
    current = saved;
    inside = true;
  }
}

/**
 * Runs `f` with no public call recording (the compiler: passes and codegen build nodes that
 * inherit their records from the nodes they replace, never from a K.eval that compiles).
 */
export function untraced<T>(f: () => T): T {
  if (current === undefined && !inside) return f();
  const saved = current;
  const savedInside = inside;
  current = undefined;
  inside = true;
  try {
    return f();
  } finally {
    current = saved;
    inside = savedInside;
  }
}

/**
 * While a gradient rule for `fwd` runs, the nodes it builds say which forward node they
 * differentiate: `const saved = enterGradientOf(fwd); try { ... } finally { exitGradientOf(saved); }`
 * (no closure per node on the path K.gradients takes for every node).
 */
export function enterGradientOf(fwd: Node): Provenance | undefined {
  const saved = current;
  if (saved !== undefined) current = saved.gradientOf(fwd);
  return saved;
}

export function exitGradientOf(saved: Provenance | undefined): void {
  current = saved;
}

// ---- inheritance (passes) -------------------------------------------------------------------

/** The union of several nodes' records, deduplicated, in first-seen order (shares an input list when nothing is added). */
export function unionProvenance(lists: readonly (readonly Provenance[])[]): readonly Provenance[] {
  let out: readonly Provenance[] = EMPTY;
  for (const l of lists) {
    if (l.length === 0 || l === out) continue;
    if (out.length === 0) {
      out = l;
      continue;
    }
    let grown: Provenance[] | undefined;
    for (const p of l) {
      if (out.includes(p) || grown?.includes(p) === true) continue;
      (grown ??= [...out]).push(p);
    }
    if (grown !== undefined) out = grown.length > MAX_RECORDS ? grown.slice(0, MAX_RECORDS) : grown;
  }
  return out;
}

/** A node keeps at most this many records (a fused kernel of a whole unrolled model stays printable). */
const MAX_RECORDS = 64;
export const EMPTY: readonly Provenance[] = Object.freeze([]);

/**
 * `target` (a node a pass built or chose) inherits the records of `sources` (the nodes it
 * replaces). Records only accumulate: a node shared with another graph keeps its own as well.
 */
export function inherit(target: Node, sources: readonly Node[]): void {
  const lists: (readonly Provenance[])[] = [target.provenance];
  for (const s of sources) if (s !== target && s.provenance.length > 0) lists.push(s.provenance);
  if (lists.length > 1) target.provenance = unionProvenance(lists);
}

/**
 * `copy` is `original` rebuilt on other inputs (a step function closed over its arguments): a
 * node created for it (id at or above `mark`) has exactly the original's records, not those of
 * the call that rebuilds it; a node that existed already adds them.
 */
export function copyProvenance(copy: Node, original: Node, mark: number): void {
  if (copy.id >= mark) copy.provenance = original.provenance;
  else addProvenance(copy, original.provenance);
}

/** Adds `records` to `target`'s own (deduplicated). */
export function addProvenance(target: Node, records: readonly Provenance[]): void {
  if (records.length === 0 || records === target.provenance) return;
  target.provenance = target.provenance.length === 0 ? records : unionProvenance([target.provenance, records]);
}

/**
 * A local rewrite replaced `root` by `replacement`: the records of every node the rewrite made
 * dead go to the replacement and to the nodes the rule created for it (ids at or above `mark`).
 * Dead means inside `root`'s expression (up to `depth` levels), not part of the replacement,
 * and used nowhere else (`uses`, counted on the graph being rewritten; nodes it does not count
 * were built by the pass and have one use). This is the matched region of a pattern rule,
 * found without asking the rule (Theano's copy_stack_trace does the same per rewrite).
 * `passMark`: the id mark when the pass began (constants it folded count as its own nodes).
 */
export function inheritReplaced(
  root: Node,
  replacement: Node,
  mark: number,
  uses: ReadonlyMap<Node, number>,
  extra: readonly Node[] = [],
  passMark = mark,
  depth = 3,
): void {
  // What the replacement is made of: new nodes, and the old nodes they stand on.
  const made: Node[] = [];
  const kept = new Set<Node>();
  const stack: Node[] = [replacement];
  const seen = new Set<Node>([replacement]);
  while (stack.length > 0) {
    const m = stack.pop()!;
    if (m === replacement || m.id >= mark) {
      made.push(m);
      for (const i of m.inputs)
        if (!seen.has(i)) {
          seen.add(i);
          stack.push(i);
        }
    } else kept.add(m);
  }
  const lists: (readonly Provenance[])[] = [root.provenance];
  for (const e of extra) lists.push(e.provenance);
  const dead = new Set<Node>([root]);
  const walk = (n: Node, d: number): void => {
    if (d >= depth) return;
    for (const i of n.inputs) {
      if (dead.has(i) || kept.has(i) || seen.has(i) || (uses.get(i) ?? 1) > 1) continue;
      // Leaves are never replaced; constants are shared by every graph (hash-consing), so their
      // records say who built the value first, not who used it here, unless this pass made them
      // (id at or above `passMark`: a value folded from this graph's own nodes).
      if (i.inputs.length === 0 && !(i.op === 'constant' && i.id >= passMark)) continue;
      dead.add(i);
      lists.push(i.provenance);
      walk(i, d + 1);
    }
  };
  walk(root, 0);
  const records = unionProvenance(lists);
  if (records.length === 0) return;
  for (const m of made) addProvenance(m, records);
}

// ---- finding the user's frame ----------------------------------------------------------------

/** A frame's location: `at f (file:1:2)`, `at file:1:2` (V8), `f@file:1:2` (Firefox, Safari). */
function frameSite(line: string): Site | undefined {
  let s = line.trim();
  if (s.startsWith('at ')) {
    s = s.slice(3);
    if (s.endsWith(')')) {
      const open = s.lastIndexOf('(');
      if (open < 0) return undefined;
      s = s.slice(open + 1, -1);
    }
  } else {
    const at = s.indexOf('@');
    if (at >= 0) s = s.slice(at + 1);
  }
  const m = /^([\s\S]*):(\d+):(\d+)$/.exec(s);
  if (m === null || m[1] === '' || m[1]!.includes('<anonymous>')) return undefined;
  return { file: m[1]!, line: Number(m[2]), column: Number(m[3]) };
}

/** This module's own file, found from a stack at load time. */
const HERE: string | undefined = new Error().stack
  ?.split('\n')
  .map(frameSite)
  .find((s) => s !== undefined)?.file;
/** theanine's source root (".../src/" or ".../dist/"); undefined in a bundle, where HERE is the whole bundle. */
const ROOT: string | undefined =
  HERE !== undefined && /[\\/]ir[\\/]provenance\.[cm]?[jt]s$/.test(HERE)
    ? HERE.replace(/ir[\\/]provenance\.[cm]?[jt]s$/, '')
    : undefined;

/** theanine's own code; its examples and CLI call the public API as users do, so they count as user code. */
function internal(file: string): boolean {
  if (file.startsWith('node:') || file.startsWith('internal/')) return true;
  if (ROOT === undefined) return file === HERE;
  if (!file.startsWith(ROOT)) return false;
  const rest = file.slice(ROOT.length);
  return !(rest.startsWith('examples/') || rest.startsWith('cli/'));
}

/** The first frame outside theanine, else the first frame with a location (a bundle holding theanine and the page). */
export function userSite(stack: string | undefined): Site | undefined {
  if (stack === undefined) return undefined;
  let first: Site | undefined;
  for (const line of stack.split('\n')) {
    const s = frameSite(line);
    if (s === undefined) continue;
    if (!internal(s.file)) return s;
    first ??= s;
  }
  return first;
}
