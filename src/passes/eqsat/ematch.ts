// E-matching: the substitutions (pattern variable -> e-class) under which an S-expression
// pattern (the syntax of ../pattern.ts) matches an e-class, over every e-node of every class it
// reaches (egg's top-down backtracking matcher), and instantiation of a pattern as new e-nodes.
import { apply } from '../../ir/build.js';
import { NDArray } from '../../ir/ndarray.js';
import type { Attrs } from '../../ir/op.js';
import { isBuiltin } from '../../ir/registry.js';
import { COMMUTATIVE, bound, parsePattern, type Pattern } from '../pattern.js';
import type { ClassId, EGraph } from './egraph.js';

/** A pattern whose op nodes may carry a test on the e-node's attrs (matching) and attrs (building). */
export type EPattern =
  | { readonly kind: 'var'; readonly name: string }
  | { readonly kind: 'num'; readonly value: number }
  | {
      readonly kind: 'op';
      readonly op: string;
      readonly args: readonly EPattern[];
      readonly test?: (a: Attrs) => boolean;
      readonly attrs?: Attrs;
    };

export type Subst = ReadonlyMap<string, ClassId>;

export interface PatternOptions {
  /** Per op name: a condition on the attrs of the e-nodes the pattern's op nodes match. */
  readonly test?: Readonly<Record<string, (a: Attrs) => boolean>>;
  /** Per op name: the attrs the pattern's op nodes are built with (default none). */
  readonly attrs?: Readonly<Record<string, Attrs>>;
}

export function fromPattern(p: Pattern, o: PatternOptions = {}): EPattern {
  if (p.kind !== 'op') return p;
  if (!isBuiltin(p.op)) throw new Error(`pattern names op ${JSON.stringify(p.op)}, which is not a built-in op`);
  const test = o.test?.[p.op];
  const attrs = o.attrs?.[p.op];
  return {
    kind: 'op',
    op: p.op,
    args: p.args.map((a) => fromPattern(a, o)),
    ...(test ? { test } : {}),
    ...(attrs ? { attrs } : {}),
  };
}

/** Parses `(op ?x ...)` (../pattern.ts' syntax) with attr tests and attrs per op name. */
export function epattern(src: string, o: PatternOptions = {}): EPattern {
  return fromPattern(parsePattern(src), o);
}

/** Thrown to stop a search that reached its match limit. */
const ENOUGH = Symbol('enough');

function matchIn(eg: EGraph, p: EPattern, c: ClassId, s: Subst, k: (s: Subst) => void): void {
  switch (p.kind) {
    case 'var': {
      const got = s.get(p.name);
      if (got === undefined) k(new Map(s).set(p.name, eg.find(c)));
      else if (eg.find(got) === eg.find(c)) k(s);
      return;
    }
    case 'num':
      if (eg.get(c).konst === p.value) k(s);
      return;
    case 'op': {
      const swap = p.args.length === 2 && (COMMUTATIVE as readonly string[]).includes(p.op);
      for (const e of [...eg.get(c).nodes]) {
        if (e.op !== p.op || e.children.length !== p.args.length || (p.test !== undefined && !p.test(e.attrs)))
          continue;
        matchArgs(eg, p.args, e.children, 0, s, k);
        if (swap && e.children[0] !== e.children[1]) matchArgs(eg, p.args, [e.children[1]!, e.children[0]!], 0, s, k);
      }
    }
  }
}

function matchArgs(
  eg: EGraph,
  ps: readonly EPattern[],
  cs: readonly ClassId[],
  i: number,
  s: Subst,
  k: (s: Subst) => void,
): void {
  if (i === ps.length) {
    k(s);
    return;
  }
  matchIn(eg, ps[i]!, cs[i]!, s, (s2) => matchArgs(eg, ps, cs, i + 1, s2, k));
}

export interface Match {
  readonly cls: ClassId;
  readonly subst: Subst;
}

/** Matches of `p` at the classes `roots` (at most `limit`). */
export function search(eg: EGraph, p: EPattern, roots: readonly ClassId[], limit: number): Match[] {
  const out: Match[] = [];
  try {
    for (const c of roots) {
      matchIn(eg, p, c, new Map(), (s) => {
        out.push({ cls: c, subst: s });
        if (out.length >= limit) throw ENOUGH;
      });
    }
  } catch (e) {
    if (e !== ENOUGH) throw e;
  }
  return out;
}

/** Adds the pattern's term under `s`; numbers are scalar constants of `like`'s dtype. Undefined when a term cannot be built. */
export function instantiate(eg: EGraph, p: EPattern, s: Subst, like: ClassId): ClassId | undefined {
  switch (p.kind) {
    case 'var':
      return bound(s, p.name);
    case 'num':
      return eg.addNode(apply('constant', [], { value: new NDArray([p.value], [], eg.get(like).type.dtype) }));
    case 'op': {
      const kids: ClassId[] = [];
      for (const a of p.args) {
        const k = instantiate(eg, a, s, like);
        if (k === undefined) return undefined;
        kids.push(k);
      }
      return eg.addTerm(p.op, p.attrs ?? {}, kids);
    }
  }
}
