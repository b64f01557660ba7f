// User passes: rewrites written outside the library take part in the pipeline like the built-in
// ones (THEANINE_DEBUG=passes, debugprint of the optimized graph, the compile cache). Two forms:
// a local rewrite `(node) => replacement | null`, run by the same engine as canonicalize
// (bottom-up, each replacement rewritten again to a fixed point, bounded), or a whole-graph
// function `Graph -> Graph`. A pass runs in a function's
// pipeline when it is registered `global` (Theano's register_canonicalize) or listed in the
// function's `passes.add`; `passes.remove` takes any pass out by name.
import type { Graph } from '../ir/graph.js';
import { ValueError } from '../ir/errors.js';
import { Node } from '../ir/node.js';
import { sameType, typeToString } from '../ir/types.js';
import { verify } from '../ir/verify.js';
import type { Pass } from './pass.js';
import { pipeline, type PassLevel } from './pipeline.js';
import type { FusionTarget } from './fusion.js';
import { RewriteError, rewriteGraph, type Rewrite } from './rewrite.js';

/** A local rewrite: the node's replacement (same dtype and static shape), or null/undefined to leave it. */
export type LocalRewrite = (node: Node) => Node | null | undefined;
export type GraphRewrite = (graph: Graph) => Graph;

/** How a pass rewrites: a bare function or `{ local }` is a local rewrite; `{ graph }` maps the whole graph. */
export type PassRewrite = LocalRewrite | { readonly local: LocalRewrite } | { readonly graph: GraphRewrite };

export interface PassOptions {
  /** One line saying what the pass does (listed by listPasses and `theanine passes`). */
  readonly doc?: string;
  /** Run just before the first pass of this name... */
  readonly before?: string;
  /** ...or just after the last pass of this name. Default: before 'scan' (after canonicalize, before fusion) in fast_run, last in fast_compile. */
  readonly after?: string;
  /** Run in every compiled function's pipeline (default false: only where `passes.add` lists it). */
  readonly global?: boolean;
}

export interface UserPass extends Pass {
  readonly kind: 'local' | 'graph';
  /** Unique per definition: part of the compile-cache key, so redefining a name never reuses old code. */
  readonly uid: number;
  readonly before: string | undefined;
  readonly after: string | undefined;
  readonly global: boolean;
  /** A local pass's rewrite as a rule (what joins the e-graph at level eqsat). */
  readonly rule?: Rewrite;
}

/** What K.function and optimize take as `passes`. */
export interface PassSelection {
  /** User passes (or their registered names) to run in addition to the pipeline's. */
  readonly add?: readonly (UserPass | string)[];
  /** Names of passes (built-in or user) to leave out; every pass of that name goes. */
  readonly remove?: readonly string[];
}

const registry = new Map<string, UserPass>();
let uids = 0;
const NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;

export function isUserPass(p: unknown): p is UserPass {
  return (
    typeof p === 'object' &&
    p !== null &&
    typeof (p as UserPass).uid === 'number' &&
    typeof (p as UserPass).run === 'function'
  );
}

const describeNode = (n: Node) => `${n.name} (${n.op}, ${typeToString(n.type)})`;

/**
 * A local user pass runs through the built-ins' engine with their semantics: offered every node
 * bottom-up, each replacement rewritten again to a fixed point; a replacement that cannot be
 * built (its operands do not fit) does not apply. What only users can get wrong is reported with
 * the pass's name: anything else the rewrite throws, a result that is not a tensor, a
 * replacement of another dtype or static shape.
 */
/**
 * A local user rewrite as a rule of the e-graph (src/passes/eqsat): offered e-nodes as IR nodes,
 * its replacements merged with them. A result that is not a tensor is an error naming the pass;
 * one of another type does not apply (the e-graph's check).
 */
function localRule(name: string, fn: LocalRewrite): Rewrite {
  return {
    name,
    on: '*',
    apply(n: Node): Node | undefined {
      const r: unknown = fn(n);
      if (r === null || r === undefined || r === n) return undefined;
      if (!(r instanceof Node))
        throw new TypeError(
          `pass ${JSON.stringify(name)} returned ${typeof r === 'object' ? 'an object' : typeof r} for node ${describeNode(n)}; expected a tensor, or null to leave the node`,
        );
      return r;
    },
  };
}

function localPass(name: string, fn: LocalRewrite): (g: Graph) => Graph {
  return (g) => {
    let failure: Error | undefined;
    const rule: Rewrite = {
      name,
      on: '*',
      apply(n: Node): Node | undefined {
        if (failure !== undefined) return undefined;
        const r: unknown = fn(n);
        if (r === null || r === undefined || r === n) return undefined;
        if (!(r instanceof Node)) {
          failure = new TypeError(
            `pass ${JSON.stringify(name)} returned ${typeof r === 'object' ? 'an object' : typeof r} for node ${describeNode(n)}; expected a tensor, or null to leave the node`,
          );
          return undefined;
        }
        if (!sameType(r.type, n.type)) {
          failure = new ValueError(
            `pass ${JSON.stringify(name)} replaced ${describeNode(n)} with ${describeNode(r)}; a replacement must keep the node's dtype and static shape`,
          );
          return undefined;
        }
        return r;
      },
    };
    let out: Graph;
    try {
      out = rewriteGraph(g, [rule]);
    } catch (e) {
      if (!(e instanceof RewriteError)) throw e;
      const why = e.cause instanceof Error ? e.cause.message : String(e.cause);
      throw new Error(`pass ${JSON.stringify(name)} threw on node ${describeNode(e.node)}: ${why}`, { cause: e.cause });
    }
    if (failure !== undefined) throw failure;
    return out;
  };
}

function graphPass(name: string, fn: GraphRewrite): (g: Graph) => Graph {
  return (g) => {
    let out: Graph;
    try {
      out = fn({ outputs: [...g.outputs] });
    } catch (e) {
      throw new Error(`pass ${JSON.stringify(name)} threw: ${e instanceof Error ? e.message : String(e)}`);
    }
    const outs = (out as Partial<Graph> | undefined)?.outputs;
    if (!Array.isArray(outs) || outs.length !== g.outputs.length || !outs.every((o) => o instanceof Node)) {
      throw new TypeError(
        `pass ${JSON.stringify(name)} must return { outputs } with ${g.outputs.length} tensors, one per output of the graph it was given`,
      );
    }
    outs.forEach((o: Node, i) => {
      const was = g.outputs[i]!;
      if (!sameType(o.type, was.type)) {
        throw new ValueError(
          `pass ${JSON.stringify(name)}: output ${i} was ${describeNode(was)} and became ${describeNode(o)}; outputs must keep their dtype and static shape`,
        );
      }
    });
    return { outputs: outs };
  };
}

/** The function a `{ local: fn }` or `{ graph: fn }` rewrite holds under `key`; undefined when it holds none. */
function member<F>(rewrite: unknown, key: 'local' | 'graph'): F | undefined {
  if (typeof rewrite !== 'object' || rewrite === null || !(key in rewrite)) return undefined;
  const f: unknown = (rewrite as Record<string, unknown>)[key];
  return typeof f === 'function' ? (f as F) : undefined;
}

/**
 * Defines (and registers by name) a user pass. Names are unique among user passes and may not
 * be a built-in pass's; defining a name again replaces the old definition.
 */
export function defineUserPass(name: string, rewrite: PassRewrite, opts: PassOptions = {}): UserPass {
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new ValueError(
      `definePass: name ${JSON.stringify(name)} must be letters, digits, '_' and '-', starting with a letter or '_'`,
    );
  }
  if (builtinPassNames().includes(name))
    throw new ValueError(
      `definePass: ${JSON.stringify(name)} is a built-in pass (built-in: ${builtinPassNames().join(', ')})`,
    );
  const local = typeof rewrite === 'function' ? rewrite : member<LocalRewrite>(rewrite, 'local');
  const graph = member<GraphRewrite>(rewrite, 'graph');
  let kind: 'local' | 'graph';
  let run: (g: Graph) => Graph;
  let rule: Rewrite | undefined;
  if (local !== undefined) {
    kind = 'local';
    run = localPass(name, local);
    rule = localRule(name, local);
  } else if (graph !== undefined) {
    kind = 'graph';
    run = graphPass(name, graph);
  } else
    throw new TypeError(
      `definePass(${name}): the rewrite must be a function (node) => replacement | null, { local: fn } or { graph: fn }`,
    );
  if (opts.before !== undefined && opts.after !== undefined)
    throw new ValueError(`definePass(${name}): give 'before' or 'after', not both`);
  for (const k of ['before', 'after'] as const) {
    const v = opts[k];
    if (v !== undefined && typeof v !== 'string') throw new TypeError(`definePass(${name}): ${k} must be a pass name`);
  }
  const verified = (g: Graph): Graph => {
    const out = run(g);
    try {
      verify(out.outputs);
    } catch (e) {
      throw new Error(`pass ${JSON.stringify(name)} produced a malformed graph: ${(e as Error).message}`);
    }
    return out;
  };
  const p: UserPass = {
    name,
    doc: opts.doc ?? `user ${kind} pass`,
    run: verified,
    kind,
    uid: ++uids,
    before: opts.before,
    after: opts.after,
    global: opts.global === true,
    ...(rule !== undefined ? { rule } : {}),
  };
  registry.set(name, p);
  return p;
}

/** Removes a user pass from the registry (functions compiled with it keep their code). */
export function undefineUserPass(name: string): boolean {
  return registry.delete(name);
}

export function userPasses(): UserPass[] {
  return [...registry.values()];
}

export function builtinPassNames(): string[] {
  const seen = new Set<string>();
  for (const level of ['fast_run', 'fast_compile', 'eqsat'] as const)
    for (const p of pipeline(level, { classify: () => 'opaque' })) seen.add(p.name);
  return [...seen];
}

function resolveAdd(a: UserPass | string, i: number): UserPass {
  if (typeof a === 'string') {
    const p = registry.get(a);
    if (p === undefined) {
      const known = [...registry.keys()];
      throw new ValueError(
        `passes.add[${i}]: no user pass named ${JSON.stringify(a)} (defined: ${known.length === 0 ? 'none' : known.join(', ')})`,
      );
    }
    return p;
  }
  if (!isUserPass(a)) throw new TypeError(`passes.add[${i}]: expected a pass from definePass or its name`);
  return a;
}

/** The passes a function runs: the level's pipeline, global and added user passes at their positions, removals taken out. */
export function resolvePipeline(level: PassLevel, target: FusionTarget, sel: PassSelection = {}): Pass[] {
  const users = new Map<string, UserPass>();
  for (const p of registry.values()) if (p.global) users.set(p.name, p);
  if (sel.add !== undefined && !Array.isArray(sel.add))
    throw new TypeError('passes.add must be an array of passes or pass names');
  (sel.add ?? []).forEach((a, i) => {
    const p = resolveAdd(a, i);
    users.set(p.name, p);
  });
  // At level eqsat a local user pass runs at its place and its rewrite also joins the e-graph.
  const rules = [...users.values()].flatMap((p) =>
    p.rule !== undefined && !(sel.remove ?? []).includes(p.name) ? [p.rule] : [],
  );
  const list: Pass[] = [...pipeline(level, target, rules)];
  for (const p of users.values()) {
    const names = list.map((q) => q.name);
    let at: number;
    if (p.before !== undefined) at = names.indexOf(p.before);
    else if (p.after !== undefined) {
      at = names.lastIndexOf(p.after);
      if (at >= 0) at++;
    } else {
      at = names.indexOf('scan');
      if (at < 0) at = list.length;
    }
    if (at < 0) {
      throw new ValueError(
        `pass ${JSON.stringify(p.name)} runs ${p.before !== undefined ? `before ${JSON.stringify(p.before)}` : `after ${JSON.stringify(p.after)}`}, which is not in this pipeline (${level}: ${names.join(', ')})`,
      );
    }
    list.splice(at, 0, p);
  }
  if (sel.remove !== undefined && !Array.isArray(sel.remove))
    throw new TypeError('passes.remove must be an array of pass names');
  const remove = new Set(sel.remove ?? []);
  for (const r of remove) {
    if (!list.some((p) => p.name === r)) {
      throw new ValueError(
        `passes.remove: no pass named ${JSON.stringify(r)} in this pipeline (${level}: ${[...new Set(list.map((p) => p.name))].join(', ')})`,
      );
    }
  }
  return list.filter((p) => !remove.has(p.name));
}

/** The part of the compile-cache key that says which passes ran (user passes by definition, not just name). */
export function pipelineKey(passes: readonly Pass[]): string {
  return passes.map((p) => (isUserPass(p) ? `${p.name}#${p.uid}` : p.name)).join(',');
}
