// debugprint in Theano's style: one node per line, indented by depth, op name with its attrs,
// dtype and static shape; a node used twice is printed in full once and referred to by id after.
import { NDArray, formatShape } from './ndarray.js';
import type { AttrValue, Attrs } from './op.js';
import { topoSort, type Graph } from './graph.js';
import type { Node } from './node.js';
import { ScanBody } from './scanbody.js';
import { typeToString } from './types.js';
import { formatProvenance } from './provenance.js';

export interface PrintOptions {
  /** Show attributes (default true). */
  readonly attrs?: boolean;
  /** Render a node's label; lets callers mark fused kernels or gradient nodes. */
  readonly label?: (n: Node) => string | undefined;
  /** Append each node's provenance: `← K.relu at model.ts:12` (src/ir/provenance.ts). */
  readonly trace?: boolean;
}

/** Short id letters as Theano uses: A..Z, BA.., in first-visit order. */
function idName(k: number): string {
  let s = '';
  do {
    s = String.fromCharCode(65 + (k % 26)) + s;
    k = Math.floor(k / 26);
  } while (k > 0);
  return s;
}

/** JSON's layout, except that numbers print as JavaScript writes them (JSON turns NaN and ±Infinity into null). */
function formatData(v: unknown): string {
  if (typeof v === 'number') return Object.is(v, -0) ? '-0' : String(v);
  if (Array.isArray(v)) return '[' + v.map(formatData).join(',') + ']';
  if (v !== null && typeof v === 'object') {
    return (
      '{' +
      Object.entries(v)
        .map(([k, x]) => `${JSON.stringify(k)}:${formatData(x)}`)
        .join(',') +
      '}'
    );
  }
  return JSON.stringify(v);
}

export function formatAttr(v: AttrValue): string {
  if (v instanceof NDArray) {
    return v.size <= 6 ? formatData(v.toArray()) : `<${v.dtype} ${formatShape(v.shape)}>`;
  }
  if (
    v !== null &&
    typeof v === 'object' &&
    !Array.isArray(v) &&
    typeof (v as { attrKey?: unknown }).attrKey === 'function'
  ) {
    return '<graph>';
  }
  return formatData(v);
}

const namedLeaf = (op: string) => op === 'placeholder' || op === 'variable' || op === 'scan_arg';

export function formatAttrs(op: string, attrs: Attrs): string {
  // Leaves show their name instead of their attrs; inner graphs are printed below their node.
  const ks = Object.keys(attrs).filter(
    (k) =>
      !(attrs[k] instanceof ScanBody) &&
      (!namedLeaf(op) ||
        (k !== 'uid' && k !== 'shape' && k !== 'dtype' && k !== 'name' && !(k === 'sparse' && attrs[k] === false))),
  );
  if (op === 'constant') {
    const v = attrs['value'];
    return v instanceof NDArray ? `{${formatAttr(v)}}` : '';
  }
  return ks.length === 0 ? '' : '{' + ks.map((k) => `${k}=${formatAttr(attrs[k]!)}`).join(', ') + '}';
}

export function nodeLabel(n: Node, withAttrs = true): string {
  const head = namedLeaf(n.op) ? `${n.op} ${JSON.stringify(n.name)}` : n.op;
  return `${head}${withAttrs ? formatAttrs(n.op, n.attrs) : ''}`;
}

type Entry = { readonly node: Node; readonly prefix: string; readonly role?: string } | { readonly line: () => string };

/**
 * Text of the graph computing `outputs`, one root per output. A node with an inner graph (a
 * Scan) is followed, under its inputs, by its body: each body result on a line marked `>`
 * with its role, the args named after their outer inputs. Like every node, the Scan and its
 * body are printed once however many `tuple_get` nodes read it.
 */
export function debugprintNodes(outputs: readonly Node[], opts: PrintOptions = {}): string {
  const ids = new Map<Node, string>();
  const printed = new Set<Node>();
  const lines: string[] = [];
  let counter = 0;
  const idOf = (n: Node) => {
    let s = ids.get(n);
    if (s === undefined) {
      s = idName(counter++);
      ids.set(n, s);
    }
    return s;
  };
  // Iterative pre-order walk; entries pushed in reverse so they pop in order.
  for (const out of outputs) {
    const stack: Entry[] = [{ node: out, prefix: '' }];
    while (stack.length > 0) {
      const e = stack.pop()!;
      if ('line' in e) {
        lines.push(e.line());
        continue;
      }
      const { node: n, prefix } = e;
      const label = opts.label?.(n) ?? nodeLabel(n, opts.attrs !== false);
      const seen = printed.has(n);
      const trace = opts.trace === true && n.provenance.length > 0 ? ` ← ${formatProvenance(n.provenance)}` : '';
      lines.push(
        `${prefix}${e.role ?? ''}${label} [id ${idOf(n)}] ${typeToString(n.type)}${seen && n.inputs.length > 0 ? ' (printed above)' : ''}${trace}`,
      );
      if (seen) continue;
      printed.add(n);
      const childPrefix = prefix + ' |';
      const body = Object.values(n.attrs).find((v): v is ScanBody => v instanceof ScanBody);
      if (body !== undefined) {
        const inner = `${childPrefix} >`;
        const roles: [string, Node][] = [
          ...body.outputs.map((o, k): [string, Node] => [`output ${k}: `, o]),
          ...body.newStates.map((o, j): [string, Node] => [`new state ${j}: `, o]),
        ];
        for (let i = roles.length - 1; i >= 0; i--)
          stack.push({ node: roles[i]![1], prefix: inner, role: roles[i]![0] });
        // The header names each arg after the outer input it stands for; the inputs pop (and
        // get their ids) before it, so it is rendered lazily.
        const mapping = () => body.args.map((a, i) => `${a.name} = [id ${idOf(n.inputs[i]!)}]`).join(', ');
        stack.push({
          line: () => `${childPrefix}body of ${n.op} [id ${idOf(n)}]${body.args.length > 0 ? ` (${mapping()})` : ''}:`,
        });
      }
      for (let i = n.inputs.length - 1; i >= 0; i--) stack.push({ node: n.inputs[i]!, prefix: childPrefix });
    }
  }
  return lines.join('\n');
}

export function debugprintGraph(g: Graph, opts: PrintOptions = {}): string {
  return debugprintNodes(g.outputs, opts);
}

/** Node count of a graph (each shared node once). */
export function nodeCount(outputs: readonly Node[]): number {
  return topoSort(outputs).length;
}
