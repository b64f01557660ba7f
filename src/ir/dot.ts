// Graphviz DOT text of a graph (the pictures of debugging and docs). Generic over the IR: what a picture groups
// (gradient nodes, fused kernels, Scan bodies) comes from callbacks, so the compiler and autodiff
// can mark their nodes without this file knowing about them. Inner graphs held in attrs (a Scan's
// step function, a fused kernel's expression) are found structurally and drawn as nested clusters.
import { topoSort } from './graph.js';
import { formatShape } from './ndarray.js';
import { Node } from './node.js';
import type { AttrValue } from './op.js';
import { nodeLabel } from './printer.js';
import { ValueError } from './errors.js';
import { formatProvenance, type Provenance } from './provenance.js';
import { describe } from './ndarray.js';

const RANKDIRS = ['TB', 'BT', 'LR', 'RL'] as const;

/**
 * Every option that reaches DOT text is checked before any is written: an
 * unchecked `rankdir` went into the text as is, so `'TB; node [URL="javascript:..."]'` put a
 * link into the SVG. Strings are escaped by dotString; the rest must be of the documented kinds.
 */
export function checkDotOptions(fn: string, opts: unknown): DotOptions {
  if (opts === undefined) return {};
  if (opts === null || typeof opts !== 'object' || Array.isArray(opts))
    throw new TypeError(`${fn}: options must be an object, got ${describe(opts)}`);
  const o = opts as Record<string, unknown>;
  const known = ['title', 'rankdir', 'label', 'cluster', 'inner', 'outputNames', 'calls'];
  for (const k of Object.keys(o)) {
    if (!known.includes(k))
      throw new ValueError(`${fn}: unknown option ${JSON.stringify(k)} (allowed: ${known.join(', ')})`);
  }
  if (o['rankdir'] !== undefined && !(RANKDIRS as readonly unknown[]).includes(o['rankdir'])) {
    throw new ValueError(
      `${fn}: option rankdir must be one of ${RANKDIRS.map((r) => JSON.stringify(r)).join(', ')}, got ${describe(o['rankdir'])}`,
    );
  }
  if (o['title'] !== undefined && typeof o['title'] !== 'string')
    throw new TypeError(`${fn}: option title must be a string, got ${describe(o['title'])}`);
  for (const k of ['label', 'cluster', 'inner']) {
    if (o[k] !== undefined && typeof o[k] !== 'function')
      throw new TypeError(`${fn}: option ${k} must be a function of a node, got ${describe(o[k])}`);
  }
  if (o['calls'] !== undefined && typeof o['calls'] !== 'boolean')
    throw new TypeError(`${fn}: option calls must be true or false, got ${describe(o['calls'])}`);
  const names = o['outputNames'];
  if (names !== undefined && (!Array.isArray(names) || names.some((n) => typeof n !== 'string'))) {
    throw new TypeError(`${fn}: option outputNames must be an array of strings, got ${describe(names)}`);
  }
  return o as DotOptions;
}

/** A group of nodes drawn inside one box. `parent` nests groups (a Scan body inside a gradient). */
export interface DotCluster {
  /** Unique within one picture. */
  readonly id: string;
  readonly label: string;
  /** Picks the box style; unknown kinds are drawn plain. */
  readonly kind?: 'gradient' | 'fused' | 'scan' | 'forward' | 'updates' | 'call' | string;
  readonly parent?: DotCluster;
}

/** An inner graph a node carries (a Scan's step, a fused kernel's body). */
export interface InnerGraph {
  readonly label: string;
  readonly kind: string;
  readonly outputs: readonly Node[];
  /** The inner graph's leaves standing for the node's inputs, in input order. */
  readonly args?: readonly Node[];
  /** Draw the body instead of the node (a fused kernel as a box of its ops); needs one output. */
  readonly inline?: boolean;
}

export interface DotOptions {
  readonly title?: string;
  /** Layout direction (default 'TB': inputs at the top). */
  readonly rankdir?: 'TB' | 'BT' | 'LR' | 'RL';
  /** The first line of a node's label (default: op name with attrs, as debugprint). */
  readonly label?: (n: Node) => string | undefined;
  /** The cluster a node belongs to, if any. */
  readonly cluster?: (n: Node) => DotCluster | undefined;
  /** Inner graphs of a node (default: attrs holding `{ outputs: Node[] }`, e.g. a Scan's step). */
  readonly inner?: (n: Node) => readonly InnerGraph[];
  /** Names shown on the graph's outputs (e.g. 'loss', 'dW1'). */
  readonly outputNames?: readonly string[];
  /**
   * Group the primitives of each composite public call (`K.softmax`, `K.categorical_crossentropy`:
   * one call that built several nodes) in a box named after it (default true). Gradient nodes are
   * not grouped by call: the gradient box holds them.
   */
  readonly calls?: boolean;
}

const CLUSTER_STYLE: Readonly<Record<string, string>> = {
  gradient: 'style="rounded,filled"; fillcolor="#fdecea"; color="#c0392b"',
  fused: 'style="rounded,filled"; fillcolor="#e8f4fd"; color="#2471a3"',
  scan: 'style="rounded,filled,dashed"; fillcolor="#eafaf1"; color="#1e8449"',
  forward: 'style="rounded"; color="#7f8c8d"',
  updates: 'style="rounded,filled"; fillcolor="#fef9e7"; color="#b7950b"',
  call: 'style="rounded,dotted"; color="#6c3483"; fontcolor="#6c3483"',
};

/**
 * A DOT string literal: quotes, backslashes and line breaks escaped (user names go in here).
 * Graphviz cannot read a NUL character at all, so `what` (which name it is) is refused clearly.
 */
export function dotString(s: string, what = 'a label'): string {
  if (s.includes('\0'))
    throw new ValueError(
      `dot: ${what} ${JSON.stringify(s)} contains a NUL character (\\0), which Graphviz cannot read; give it a name without one`,
    );
  return '"' + s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\r?\n/g, '\\n') + '"';
}

function nodeStyle(n: Node): string {
  switch (n.op) {
    case 'placeholder':
      return 'shape=ellipse, style=filled, fillcolor="#d5f5e3"';
    case 'variable':
      return 'shape=box3d, style=filled, fillcolor="#fcf3cf"';
    case 'constant':
      return 'shape=note, fontcolor="#555555"';
    case 'scan_arg':
      return 'shape=ellipse, style="filled,dashed", fillcolor="#eafaf1"';
    default:
      return 'shape=box, style="rounded,filled", fillcolor="#ffffff"';
  }
}

/** The inner graph an attr value holds, if any: `results`/`outputs` (a Scan body) or `root` (a fused kernel). */
function graphIn(v: AttrValue | undefined): { outputs: readonly Node[]; args: readonly Node[] } | undefined {
  if (v === null || typeof v !== 'object' || Array.isArray(v) || v instanceof Node) return undefined;
  const o = v as { results?: unknown; outputs?: unknown; root?: unknown; args?: unknown; params?: unknown };
  const nodes = (x: unknown): readonly Node[] | undefined =>
    Array.isArray(x) && x.length > 0 && x.every((e) => e instanceof Node) ? x : undefined;
  const outputs = nodes(o.results) ?? nodes(o.outputs) ?? (o.root instanceof Node ? [o.root] : undefined);
  if (outputs === undefined) return undefined;
  return { outputs, args: nodes(o.args) ?? nodes(o.params) ?? [] };
}

/**
 * Default inner-graph finder: attrs holding a graph. A `fused` node's body is drawn in place of
 * the node (inline: the kernel is a box of its ops); a Scan's body beside its node.
 */
export function innerGraphsOf(n: Node): InnerGraph[] {
  const found: InnerGraph[] = [];
  for (const [k, v] of Object.entries(n.attrs)) {
    const g = graphIn(v);
    if (g === undefined) continue;
    const fused = n.op === 'fused' || n.op.startsWith('fused_');
    found.push({
      label: fused ? `fused kernel (${n.op})` : `${n.op} ${k}`,
      kind: n.op === 'scan' ? 'scan' : fused ? 'fused' : n.op,
      outputs: g.outputs,
      args: g.args,
      inline: fused && g.outputs.length === 1 && g.args.length === n.inputs.length,
    });
  }
  return found;
}

interface Emitted {
  readonly id: string;
  readonly cluster: DotCluster | undefined;
  readonly line: string;
}

/** DOT text for the graph computing `outputs`. */
export function toDot(outputs: readonly Node[], options: DotOptions = {}): string {
  return toDotWithIds(outputs, options).text;
}

/**
 * DOT text and, for every node drawn, its DOT id: a node's own `n<k>`, or for a fused node drawn
 * as a box of its ops, the box's `cluster_inner<k>` (Graphviz writes these as the `<title>` of the
 * SVG group, so a page can find a node's shape in the picture). Nodes of inner graphs are included.
 */
export function toDotWithIds(
  outputs: readonly Node[],
  options: DotOptions = {},
): { text: string; ids: Map<Node, string> } {
  const opts = checkDotOptions('dot', options);
  const allIds = new Map<Node, string>();
  const emitted: Emitted[] = [];
  const edges: string[] = [];
  const clusters = new Map<string, DotCluster>();
  const innerOf = opts.inner ?? innerGraphsOf;
  let counter = 0;
  let innerCount = 0;

  const useCluster = (c: DotCluster | undefined) => {
    for (let k = c; k !== undefined; k = k.parent) clusters.set(k.id, k);
  };
  const edge = (from: string, to: string, n: Node, k: number) => {
    edges.push(
      `${from} -> ${to}${n.inputs.length > 1 && !COMMUTATIVE.has(n.op) ? ` [label="${k}", fontsize=9]` : ''};`,
    );
  };

  /**
   * Draws the graph of `outs` and returns the DOT id of every node. `within` is the cluster of an
   * inner graph (all its nodes go inside); `bound` maps an inlined body's params to the ids of
   * the fused node's inputs, so edges run straight from outside into the kernel's box.
   */
  // Composite calls: a record (one public call) that built two or more nodes of this graph gets a box.
  const callBoxes = new Map<string, DotCluster>();
  const callCount = new Map<Provenance, number>();
  if (opts.calls !== false) {
    const seen = new Set<Node>();
    const count = (ns: readonly Node[]) => {
      for (const n of ns) {
        if (seen.has(n)) continue;
        seen.add(n);
        const p = callOf(n);
        if (p !== undefined) callCount.set(p, (callCount.get(p) ?? 0) + 1);
        for (const g of innerOf(n)) count(topoSort(g.outputs));
      }
    };
    count(topoSort(outputs));
  }
  const callCluster = (n: Node, parent: DotCluster | undefined): DotCluster | undefined => {
    const p = callOf(n);
    if (p === undefined || (callCount.get(p) ?? 0) < 2) return parent;
    const key = `${parent?.id ?? ''}/${callIds.get(p) ?? callIds.set(p, callIds.size).get(p)}`;
    let c = callBoxes.get(key);
    if (c === undefined) {
      c = {
        id: `call${callBoxes.size}`,
        label: p.toString(),
        kind: 'call',
        ...(parent !== undefined ? { parent } : {}),
      };
      callBoxes.set(key, c);
    }
    return c;
  };
  const callIds = new Map<Provenance, number>();

  /** A new box for an inner graph (a Scan's body, an inlined call) inside `parent`. */
  const innerCluster = (g: { label: string; kind: DotCluster['kind'] }, parent: DotCluster | undefined): DotCluster => {
    const c: DotCluster = {
      id: `inner${innerCount++}`,
      label: g.label,
      kind: g.kind,
      ...(parent !== undefined ? { parent } : {}),
    };
    useCluster(c);
    return c;
  };

  const draw = (
    outs: readonly Node[],
    within: DotCluster | undefined,
    bound: ReadonlyMap<Node, string>,
  ): Map<Node, string> => {
    const local = new Map<Node, string>(bound);
    for (const n of topoSort(outs)) {
      if (local.has(n)) continue;
      const cluster = callCluster(n, within ?? opts.cluster?.(n));
      const inners = innerOf(n);
      const inline = inners.length === 1 && inners[0]!.inline === true ? inners[0]! : undefined;
      if (inline !== undefined) {
        const c = innerCluster(inline, cluster);
        const args = new Map((inline.args ?? []).map((a, i) => [a, local.get(n.inputs[i]!)!] as const));
        const ids = draw(inline.outputs, c, args);
        local.set(n, ids.get(inline.outputs[0]!)!);
        if (!allIds.has(n)) allIds.set(n, `cluster_${c.id}`);
        continue;
      }
      const id = `n${counter++}`;
      local.set(n, id);
      if (!allIds.has(n)) allIds.set(n, id);
      useCluster(cluster);
      const head = opts.label?.(n) ?? nodeLabel(n);
      const text = `${head}\n${n.dtype} ${formatShape(n.shape)}`;
      // The tooltip (an SVG <title>) names the calls that built the node and the user's lines.
      const tip =
        n.provenance.length > 0
          ? `, tooltip=${dotString(formatProvenance(n.provenance, 6), `the tooltip of node ${JSON.stringify(n.name)}`)}`
          : '';
      emitted.push({
        id,
        cluster,
        line: `${id} [label=${dotString(text, `the label of node ${JSON.stringify(n.name)}`)}, ${nodeStyle(n)}${tip}];`,
      });
      n.inputs.forEach((input, k) => edge(local.get(input)!, id, n, k));
      for (const g of inners) {
        const c = innerCluster(g, cluster);
        const ids = draw(g.outputs, c, new Map());
        // The body's args stand for the node's inputs (a Scan's sequences, states, constants).
        (g.args ?? []).forEach((a, i) => {
          const inner = ids.get(a);
          const outer = local.get(n.inputs[i]!);
          if (inner !== undefined && outer !== undefined)
            edges.push(`${outer} -> ${inner} [style=dotted, color="#1e8449", arrowhead=none];`);
        });
        for (const o of g.outputs) edges.push(`${ids.get(o)!} -> ${id} [style=dashed, color="#1e8449"];`);
      }
    }
    return local;
  };
  const ids = draw(outputs, undefined, new Map());

  const lines: string[] = [
    'digraph theanine {',
    `  rankdir=${opts.rankdir ?? 'TB'};`,
    '  node [fontname="Helvetica", fontsize=11];',
    '  edge [color="#555555", arrowsize=0.7, fontname="Helvetica"];',
  ];
  if (opts.title !== undefined)
    lines.push(`  label=${dotString(opts.title, 'option title')}; labelloc=t; fontname="Helvetica";`);

  // Clusters nest: emit each cluster's own nodes, then its child clusters, inside its braces.
  const children = new Map<string | undefined, DotCluster[]>();
  for (const c of clusters.values()) {
    const p = c.parent?.id;
    children.set(p, [...(children.get(p) ?? []), c]);
  }
  const members = new Map<string | undefined, string[]>();
  for (const e of emitted) members.set(e.cluster?.id, [...(members.get(e.cluster?.id) ?? []), e.line]);
  const emitCluster = (c: DotCluster, depth: number): void => {
    const pad = '  '.repeat(depth);
    lines.push(`${pad}subgraph ${dotString(`cluster_${c.id}`, 'a cluster id')} {`);
    lines.push(
      `${pad}  label=${dotString(c.label, 'a cluster label')}; fontname="Helvetica"; ${CLUSTER_STYLE[c.kind ?? ''] ?? 'style=rounded'};`,
    );
    for (const l of members.get(c.id) ?? []) lines.push(`${pad}  ${l}`);
    for (const k of children.get(c.id) ?? []) emitCluster(k, depth + 1);
    lines.push(`${pad}}`);
  };
  for (const l of members.get(undefined) ?? []) lines.push(`  ${l}`);
  for (const c of children.get(undefined) ?? []) emitCluster(c, 1);

  outputs.forEach((o, k) => {
    const name = opts.outputNames?.[k];
    if (name === undefined) return;
    const id = `out${k}`;
    lines.push(`  ${id} [label=${dotString(name, `output name ${k}`)}, shape=plaintext, fontcolor="#1a5276"];`);
    edges.push(`${ids.get(o)!} -> ${id} [style=dotted];`);
  });
  for (const e of edges) lines.push(`  ${e}`);
  lines.push('}');
  return { text: lines.join('\n') + '\n', ids: allIds };
}

/** The composite call a node belongs to in a picture: its first record, unless that is a gradient's (or the node a leaf). */
function callOf(n: Node): Provenance | undefined {
  const p = n.provenance[0];
  return p === undefined || p.of !== undefined || n.inputs.length === 0 ? undefined : p;
}

/** Ops whose input order does not matter, so their edges carry no position label. */
const COMMUTATIVE = new Set(['add', 'mul', 'maximum', 'minimum', 'equal', 'not_equal']);
