// Rewrites as data: `(log (add 1 ?x))  ->  (log1p ?x)`. A pattern is an S-expression over op
// names; `?x` binds any node (a second `?x` must be the same node, which hash-consing makes a
// pointer comparison); a number matches a constant whose elements all equal it (or a
// fill_like of that value). Commutative binary ops match either operand order.
import { apply } from '../ir/build.js';
import { NDArray } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import { isBuiltin, isOp, type OpName } from '../ir/registry.js';
import type { Rewrite } from './rewrite.js';

export type Pattern =
  | { readonly kind: 'var'; readonly name: string }
  | { readonly kind: 'num'; readonly value: number }
  | { readonly kind: 'op'; readonly op: string; readonly args: readonly Pattern[] };

export type Bindings = ReadonlyMap<string, Node>;

/** Ops whose two operands may be swapped without changing the result (IEEE add/mul are commutative). */
export const COMMUTATIVE: readonly OpName[] = [
  'add',
  'mul',
  'maximum',
  'minimum',
  'equal',
  'not_equal',
  'logical_and',
  'logical_or',
];

export function parsePattern(src: string): Pattern {
  const toks = src.replace(/\(/g, ' ( ').replace(/\)/g, ' ) ').trim().split(/\s+/);
  let pos = 0;
  const next = (): Pattern => {
    const t = toks[pos++];
    if (t === undefined) throw new Error(`pattern ${JSON.stringify(src)}: unexpected end`);
    if (t === '(') {
      const op = toks[pos++];
      if (op === undefined || op === '(' || op === ')')
        throw new Error(`pattern ${JSON.stringify(src)}: expected an op name after '('`);
      const args: Pattern[] = [];
      while (toks[pos] !== ')') {
        if (pos >= toks.length) throw new Error(`pattern ${JSON.stringify(src)}: missing ')'`);
        args.push(next());
      }
      pos++;
      return { kind: 'op', op, args };
    }
    if (t === ')') throw new Error(`pattern ${JSON.stringify(src)}: unexpected ')'`);
    if (t.startsWith('?')) return { kind: 'var', name: t.slice(1) };
    const v = Number(t);
    if (Number.isNaN(v))
      throw new Error(`pattern ${JSON.stringify(src)}: ${JSON.stringify(t)} is neither (op ...), ?var nor a number`);
    return { kind: 'num', value: v };
  };
  const p = next();
  if (pos !== toks.length) throw new Error(`pattern ${JSON.stringify(src)}: trailing tokens`);
  return p;
}

/** The value every element of `n` has, when `n` is a constant (or fill_like) of one repeated value. */
export function uniformValue(n: Node): number | undefined {
  if (isOp(n, 'fill_like')) return n.attrs.value;
  if (!isOp(n, 'constant')) return undefined;
  const v = n.attrs.value;
  if (v.size === 0) return undefined;
  const x = v.data[0]!;
  for (let i = 1; i < v.size; i++) if (!Object.is(v.data[i]!, x)) return undefined;
  return x;
}

export function match(p: Pattern, n: Node, b: Map<string, Node>): boolean {
  switch (p.kind) {
    case 'var': {
      const got = b.get(p.name);
      if (got !== undefined) return got === n;
      b.set(p.name, n);
      return true;
    }
    case 'num': {
      const v = uniformValue(n);
      return v !== undefined && v === p.value;
    }
    case 'op': {
      if (n.op !== p.op || n.inputs.length !== p.args.length) return false;
      const tryOrder = (order: readonly number[]): boolean => {
        const saved = new Map(b);
        if (order.every((k, i) => match(p.args[i]!, n.inputs[k]!, b))) return true;
        b.clear();
        for (const [k, v] of saved) b.set(k, v);
        return false;
      };
      if (tryOrder(p.args.map((_, i) => i))) return true;
      return (COMMUTATIVE as readonly string[]).includes(p.op) && p.args.length === 2 && tryOrder([1, 0]);
    }
  }
}

/** What a replacement's ?name stands for: its binding by the match (tree or e-graph), which it must have. */
export function bound<T>(b: ReadonlyMap<string, T>, name: string): T {
  const v = b.get(name);
  if (v === undefined) throw new Error(`replacement uses ?${name}, which the pattern does not bind`);
  return v;
}

/** Builds a replacement; numbers become scalar constants of `dtypeOf`'s dtype. */
export function instantiate(p: Pattern, b: Bindings, like: Node): Node {
  switch (p.kind) {
    case 'var':
      return bound(b, p.name);
    case 'num':
      return apply('constant', [], { value: new NDArray([p.value], [], like.dtype) });
    case 'op':
      return apply(
        p.op,
        p.args.map((a) => instantiate(a, b, like)),
        {},
      );
  }
}

export interface RuleSpec {
  readonly name: string;
  readonly from: string;
  /** A replacement pattern, or a function for replacements that need attrs or arithmetic. */
  readonly to: string | ((b: Bindings, n: Node) => Node | undefined);
  /** An extra condition on the bindings. */
  readonly when?: (b: Bindings, n: Node) => boolean;
}

/** The op names a pattern mentions. */
function opsIn(p: Pattern): string[] {
  return p.kind === 'op' ? [p.op, ...p.args.flatMap(opsIn)] : [];
}

/**
 * A data rule as a local rewrite, indexed under its pattern's root op. Patterns are parsed once,
 * here, and every op they name must be a built-in op (a misspelt name is an error, not a rule
 * that never fires).
 */
export function rule(spec: RuleSpec): Rewrite & { readonly from: Pattern; readonly spec: RuleSpec } {
  const from = parsePattern(spec.from);
  const to = typeof spec.to === 'string' ? parsePattern(spec.to) : spec.to;
  for (const op of [...opsIn(from), ...(typeof to === 'function' ? [] : opsIn(to))]) {
    if (!isBuiltin(op))
      throw new Error(
        `rule ${JSON.stringify(spec.name)}: pattern names op ${JSON.stringify(op)}, which is not a built-in op`,
      );
  }
  if (from.kind !== 'op')
    throw new Error(
      `rule ${JSON.stringify(spec.name)}: pattern ${JSON.stringify(spec.from)} must start with an op, (op ...)`,
    );
  return {
    name: spec.name,
    on: [from.op as OpName],
    from,
    spec,
    apply(n: Node): Node | undefined {
      const b = new Map<string, Node>();
      if (!match(from, n, b)) return undefined;
      if (spec.when !== undefined && !spec.when(b, n)) return undefined;
      return typeof to === 'function' ? to(b, n) : instantiate(to, b, n);
    },
  };
}
