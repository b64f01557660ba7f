// The optimizer: one ordered list of passes, in the order of Theano's FAST_RUN mode
// (compile/mode.py: merge -> canonicalize -> stabilize -> specialize -> ... -> fusion).
// `fast_compile` keeps only merge and constant folding; `eqsat` runs FAST_RUN's rewrites, then
// equality saturation over their result (src/passes/eqsat/, never worse than greedy under the
// target's cost model), then scan and fusion; `none` runs no pass and no codegen (the reference
// interpreter). What follows the list is codegen's, shape by shape: lowering
// to kernels, then buffer planning (src/codegen/transform/plan.ts), then rendering (src/codegen/cpu).
import type { Pass } from './pass.js';
import { mergePass } from './merge.js';
import { constantFoldPass } from './constant-fold.js';
import { canonicalizePass } from './canonicalize.js';
import { stabilizePass } from './stabilize.js';
import { specializePass } from './specialize.js';
import { optimizeScans } from './scan.js';
import { definePass } from './pass.js';
import { fusionPass, type FusionTarget } from './fusion.js';
import { eqsatPass } from './eqsat/index.js';
import type { Rewrite } from './rewrite.js';

/** Theano's `optimizer` flag: which rewrites run before codegen (`none`: the graph as built). */
export type OptimizerLevel = 'fast_run' | 'fast_compile' | 'eqsat' | 'none';
export const OPTIMIZER_LEVELS: readonly OptimizerLevel[] = ['fast_run', 'fast_compile', 'eqsat', 'none'];
/** The levels that run passes. */
export type PassLevel = Exclude<OptimizerLevel, 'none'>;

/**
 * Scan rewrites (src/passes/scan.ts, from the control-flow work): loop-invariant work leaves the
 * step, items nobody reads are dropped and items only read at their last step keep one step
 * (Theano's scan dead-code and "save memory" rewrites), short scans are unrolled. Dead code
 * elsewhere needs no pass: a graph here is the closure of its outputs.
 */
export const scanPass = definePass(
  'scan',
  'hoist loop-invariant work out of Scan steps, drop unread outputs, unroll short scans',
  (g) => ({ outputs: optimizeScans(g.outputs) }),
);

/** The passes of `level` for `target`; `eqsatRules` (user passes' local rewrites) join the e-graph at level eqsat. */
export function pipeline(level: PassLevel, target: FusionTarget, eqsatRules: readonly Rewrite[] = []): readonly Pass[] {
  if (level === 'fast_compile') {
    return [
      mergePass, //         commutative operands in canonical order (hash-consing did the rest)
      constantFoldPass, //  pure ops of constants evaluated once
    ];
  }
  return [
    mergePass, //           as above
    canonicalizePass, //    x*1, x+0, neg(neg x), transpose/reshape chains, identity; folds constants; fixed point
    stabilizePass, //       log1p, expm1, log-sigmoid, log-softmax, softmax crossentropy, logsumexp
    specializePass, //      pow(x, 2) -> x*x, pow(x, 0.5) -> sqrt ...
    canonicalizePass, //    clean up what stabilize/specialize built (their constants fold, chains collapse)
    ...(level === 'eqsat' ? [eqsatPass(target, { rules: eqsatRules })] : []), // search from the greedy result
    scanPass, //            Scan: hoist loop-invariant work, drop/narrow outputs nobody reads (dead code), unroll short scans
    fusionPass(target), //  elementwise + views + reductions + matmul epilogues into fused kernels
  ];
}
