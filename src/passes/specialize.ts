// specialize: replace general ops by cheaper special cases (Theano's `specialize` phase).
// pow(x, 2) -> x*x and friends: exact or within an ulp of pow, and far cheaper than Math.pow.
import { definePass } from './pass.js';
import { rule } from './pattern.js';
import { rewriteGraph, type Rewrite } from './rewrite.js';

export const specializeRules: readonly Rewrite[] = [
  rule({ name: 'pow_two', from: '(pow ?x 2)', to: '(mul ?x ?x)' }),
  rule({ name: 'pow_three', from: '(pow ?x 3)', to: '(mul (mul ?x ?x) ?x)' }),
  rule({ name: 'pow_half', from: '(pow ?x 0.5)', to: '(sqrt ?x)' }),
  rule({ name: 'pow_minus_one', from: '(pow ?x -1)', to: '(reciprocal ?x)' }),
  rule({ name: 'pow_minus_half', from: '(pow ?x -0.5)', to: '(reciprocal (sqrt ?x))' }),
];

export const specializePass = definePass(
  'specialize',
  'pow(x, 2|3|0.5|-1|-0.5) as multiplications, sqrt and reciprocal',
  (g) => rewriteGraph(g, specializeRules),
);
