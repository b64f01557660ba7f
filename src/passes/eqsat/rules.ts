// The equalities the e-graph grows by. Two kinds:
//  - pattern rules, matched by e-matching over every e-node (./ematch.ts): the data rules of
//    ../pattern.ts (`rule({ from, to })`, canonicalize's, stabilize's, specialize's) join as they
//    are, and the algebraic identities below, which are written in both directions where both are
//    sound. Commutativity of add, mul, maximum... is in the matcher (both operand orders, as
//    ../pattern.ts matches), so it needs no rule and adds no e-nodes;
//  - node rules: any other local Rewrite (../rewrite.ts), user passes' included, offered each
//    e-node built over its children's representatives (`materialize`), its replacement added and
//    merged with the e-node's class, with the greedy engine's checks (same type; an inference
//    failure means the rule does not apply; anything else it throws is a RewriteError).
// Rules never delete: an e-graph keeps what a rule rewrote, so a rule that only helps sometimes
// costs nodes, not quality; extraction (./extract.ts) chooses.
import type { Node } from '../../ir/node.js';
import type { Attrs } from '../../ir/op.js';
import { sameType } from '../../ir/types.js';
import { canonicalRules } from '../canonicalize.js';
import { parsePattern, type Bindings, type Pattern, type RuleSpec } from '../pattern.js';
import type { Rewrite } from '../rewrite.js';
import { specializeRules } from '../specialize.js';
import { stabilizeRules } from '../stabilize.js';
import type { ClassId, EGraph } from './egraph.js';
import { epattern, fromPattern, type EPattern, type PatternOptions, type Subst } from './ematch.js';

export interface PatternRule {
  readonly kind: 'pattern';
  readonly name: string;
  readonly from: EPattern & { readonly kind: 'op' };
  /** The replacement: a pattern, or a function that adds it and returns its class (undefined: no replacement). */
  readonly to: EPattern | ((s: Subst, eg: EGraph, cls: ClassId) => ClassId | undefined);
  readonly when?: (s: Subst, eg: EGraph, cls: ClassId) => boolean;
}

export interface NodeRule {
  readonly kind: 'node';
  readonly name: string;
  readonly rewrite: Rewrite;
}

export type EqRule = PatternRule | NodeRule;

/** Bound classes as the IR nodes that stand for them (what a data rule's `when` and `to` functions read). */
function bindings(eg: EGraph, s: Subst): Bindings {
  const b = new Map<string, Node>();
  for (const [k, c] of s) b.set(k, eg.get(c).rep);
  return b;
}

/** A greedy rewrite as an e-graph rule: data rules by e-matching, the others offered each e-node. */
export function fromRewrite(r: Rewrite): EqRule {
  const data = r as Rewrite & { readonly from?: Pattern; readonly spec?: RuleSpec };
  if (data.from === undefined || data.spec === undefined || data.from.kind !== 'op')
    return { kind: 'node', name: r.name, rewrite: r };
  const spec = data.spec;
  const from = fromPattern(data.from) as EPattern & { kind: 'op' };
  const to: PatternRule['to'] =
    typeof spec.to === 'string'
      ? fromPattern(parsePattern(spec.to))
      : (s, eg, cls) => {
          const fn = spec.to as (b: Bindings, n: Node) => Node | undefined;
          const out = fn(bindings(eg, s), eg.get(cls).rep);
          return out === undefined ? undefined : eg.addNode(out);
        };
  const when = spec.when;
  return {
    kind: 'pattern',
    name: r.name,
    from,
    to,
    ...(when ? { when: (s: Subst, eg: EGraph, cls: ClassId) => when(bindings(eg, s), eg.get(cls).rep) } : {}),
  };
}

const dtype = (eg: EGraph, s: Subst, v: string) => eg.get(s.get(v)!).type.dtype;
const rank = (eg: EGraph, s: Subst, v: string) => eg.get(s.get(v)!).type.shape.length;
/** Every named variable and the matched class have one dtype, a number type (no bool: its add is or). */
const oneDtype =
  (...vs: string[]) =>
  (s: Subst, eg: EGraph, cls: ClassId) => {
    const d = eg.get(cls).type.dtype;
    return d !== 'bool' && vs.every((v) => dtype(eg, s, v) === d);
  };
const both =
  (f: (s: Subst, eg: EGraph, c: ClassId) => boolean, g: (s: Subst, eg: EGraph, c: ClassId) => boolean) =>
  (s: Subst, eg: EGraph, c: ClassId) =>
    f(s, eg, c) && g(s, eg, c);

/** lhs = rhs as one or two rules (`rev`: also rhs -> lhs). */
function eq(
  name: string,
  lhs: string,
  rhs: string,
  opts: { when?: PatternRule['when']; rev?: boolean; o?: PatternOptions } = {},
): PatternRule[] {
  const l = epattern(lhs, opts.o);
  const r = epattern(rhs, opts.o);
  const mk = (n: string, a: EPattern, b: EPattern): PatternRule => {
    if (a.kind !== 'op') throw new Error(`rule ${n}: the pattern must start with an op`);
    return { kind: 'pattern', name: n, from: a, to: b, ...(opts.when ? { when: opts.when } : {}) };
  };
  return opts.rev === false ? [mk(name, l, r)] : [mk(name, l, r), mk(`${name}-rev`, r, l)];
}

const swap: Attrs = { perm: [1, 0] };
const isSwap = (a: Attrs) => {
  const p = a['perm'] as readonly number[] | undefined;
  return p !== undefined && p.length === 2 && p[0] === 1 && p[1] === 0;
};
const transposeOpts: PatternOptions = { test: { transpose: isSwap }, attrs: { transpose: swap } };
const sameTypes = (a: string, b: string) => (s: Subst, eg: EGraph) =>
  sameType(eg.get(s.get(a)!).type, eg.get(s.get(b)!).type);

/**
 * Identities the greedy pipeline cannot apply safely (they do not always pay; which one does
 * depends on shapes, which the cost model sees). Reassociation and distribution move float
 * results by rounding, as -ffast-math / XLA's algebraic simplifier allow; all operands of one
 * dtype, so promotion never moves.
 */
export const algebraRules: readonly PatternRule[] = [
  // (a + b) + c = a + (b + c); with the matcher's commutativity this reaches every grouping.
  ...eq('add_assoc', '(add (add ?a ?b) ?c)', '(add ?a (add ?b ?c))', { when: oneDtype('a', 'b', 'c'), rev: false }),
  ...eq('mul_assoc', '(mul (mul ?a ?b) ?c)', '(mul ?a (mul ?b ?c))', { when: oneDtype('a', 'b', 'c'), rev: false }),
  // x*y + x*z = x*(y + z) (factoring one way, distribution the other); the same for sub.
  ...eq('factor_add', '(add (mul ?x ?y) (mul ?x ?z))', '(mul ?x (add ?y ?z))', { when: oneDtype('x', 'y', 'z') }),
  ...eq('factor_sub', '(sub (mul ?x ?y) (mul ?x ?z))', '(mul ?x (sub ?y ?z))', { when: oneDtype('x', 'y', 'z') }),
  // Matrix chains: (A·B)·C = A·(B·C) for a matrix B and a matrix or vector C (dot's rank rules agree on both sides).
  ...eq('dot_assoc', '(dot (dot ?a ?b) ?c)', '(dot ?a (dot ?b ?c))', {
    when: both(
      oneDtype('a', 'b', 'c'),
      (s, eg) => rank(eg, s, 'b') === 2 && (rank(eg, s, 'c') === 1 || rank(eg, s, 'c') === 2) && rank(eg, s, 'a') >= 1,
    ),
  }),
  // (A·B)ᵀ = Bᵀ·Aᵀ for matrices.
  ...eq('dot_transpose', '(transpose (dot ?a ?b))', '(dot (transpose ?b) (transpose ?a))', {
    when: both(oneDtype('a', 'b'), (s, eg) => rank(eg, s, 'a') === 2 && rank(eg, s, 'b') === 2),
    o: transposeOpts,
  }),
  // Sums of products: A·B + A·C = A·(B + C), A·C + B·C = (A + B)·C.
  ...eq('dot_add_right', '(add (dot ?a ?b) (dot ?a ?c))', '(dot ?a (add ?b ?c))', {
    when: both(oneDtype('a', 'b', 'c'), sameTypes('b', 'c')),
  }),
  ...eq('dot_add_left', '(add (dot ?a ?c) (dot ?b ?c))', '(dot (add ?a ?b) ?c)', {
    when: both(oneDtype('a', 'b', 'c'), sameTypes('a', 'b')),
  }),
  // A scalar factor moves through a product: (A*s)·B = (A·B)*s = A·(B*s).
  ...eq('dot_scale_left', '(dot (mul ?a ?s) ?b)', '(mul (dot ?a ?b) ?s)', {
    when: both(oneDtype('a', 'b', 's'), (s, eg) => rank(eg, s, 's') === 0),
  }),
  ...eq('dot_scale_right', '(dot ?a (mul ?b ?s))', '(mul (dot ?a ?b) ?s)', {
    when: both(oneDtype('a', 'b', 's'), (s, eg) => rank(eg, s, 's') === 0),
  }),
];

/** The greedy pipeline's rules as equalities: canonicalize's (less the operand-order rule: the matcher commutes), stabilize's, specialize's. */
export function builtinRules(): EqRule[] {
  const greedy = [...canonicalRules.filter((r) => r.name !== 'commute'), ...stabilizeRules, ...specializeRules];
  return [...greedy.map(fromRewrite), ...algebraRules];
}
