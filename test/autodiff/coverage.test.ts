// Every op with a gradient rule has a verify_grad row: COVERED names, for each such op, a
// gradTable case whose forward graph contains it, and this test checks both directions, so a new
// op with a rule but no gradient test, or a row that no longer reaches its op, fails CI.
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { backend as K } from '../../src/index.js';
import { gradRules } from '../../src/autodiff/rules/index.js';
import { topoSort } from '../../src/ir/graph.js';
import type { Node } from '../../src/ir/node.js';
import { caseInputs, gradCases } from '../helpers/gradtable.js';

// Load every gradient table of this folder, so this file also works on its own. require() is the
// loader mocha itself uses first, so each file is one module (its tables registered once); an
// import() here would load a second copy beside mocha's. So the test files of this folder must
// not use top-level await, nor import helpers that do (test/helpers/tfref-math.ts does; use
// test/helpers/tf-ref.ts).
const here = path.dirname(fileURLToPath(import.meta.url));
const load = createRequire(import.meta.url);
for (const f of fs.readdirSync(here).filter((n) => n.endsWith('.test.ts')).sort()) {
  const file = path.join(here, f);
  if (file === fileURLToPath(import.meta.url)) continue;
  try {
    load(file);
  } catch (e) {
    throw new Error(`coverage.test.ts: cannot require ${f} (top-level await in it or its imports?): ${String(e)}`);
  }
}

/** op -> the gradTable case (`title > name`) that checks its rule. */
const COVERED: Record<string, string> = {
  abs: 'gradients: elementwise unary > abs',
  add: 'gradients: elementwise binary with broadcasting > add broadcast row',
  batch_dot: 'gradients: batch_dot > 3-D x 3-D axes null',
  broadcast_like: 'gradients: ops of gradient graphs > broadcast_like',
  cast: 'gradients: elementwise unary > cast to float32 (float32 output: float32 tolerances)',
  ceil: 'gradients: elementwise unary > ceil (zero)',
  concat: 'gradients: slicing, joining, gathering > concatenate axis -1',
  concat_part: 'gradients of gradients (adjoint ops) > concat_part',
  conv: 'gradients: convolutions > conv2d same, strides 2',
  conv_kernel_grad: 'gradients: the adjoint ops themselves (second-order building blocks) > conv_kernel_grad (size in attrs)',
  conv_transpose: 'gradients: the adjoint ops themselves (second-order building blocks) > conv_transpose (size in attrs)',
  cos: 'gradients: elementwise unary > cos',
  ctc_loss: 'gradients: ctc_batch_cost > ctc_batch_cost with respect to y_pred',
  cumprod: 'gradients: cumulative ops > cumprod axis 1',
  cumsum: 'gradients: cumulative ops > cumsum axis 1',
  div: 'gradients: elementwise binary with broadcasting > div',
  dot: 'gradients: structure and dot > dot 2-D',
  erf: 'gradients: elementwise unary > erf',
  exp: 'gradients: elementwise unary > exp',
  expand_dims: 'gradients: reshapes and permutations > expand_dims',
  expm1: 'gradients: elementwise unary > expm1',
  floor: 'gradients: elementwise unary > floor (zero)',
  gather: 'gradients: slicing, joining, gathering > gather with repeated indices',
  grad_clip: 'gradients: gradient controls > grad_clip wider than the gradient (the identity)',
  grad_scale: 'gradients: gradient controls > grad_scale 1 (the identity)',
  identity: 'gradients: elementwise unary > identity',
  index: 'gradients: structure and dot > get',
  log: 'gradients: elementwise unary > log',
  log1p: 'gradients: elementwise unary > log1p',
  max: 'gradients: reductions > max axis 1',
  maximum: 'gradients: elementwise binary with broadcasting > maximum',
  mean: 'gradients: reductions > mean axes [0, 1]',
  merge_axes: 'gradients: reshapes and permutations > batch_flatten',
  min: 'gradients: reductions > min axis 0',
  minimum: 'gradients: elementwise binary with broadcasting > minimum broadcast',
  mod: 'gradients: elementwise binary with broadcasting > mod',
  mul: 'gradients: elementwise binary with broadcasting > mul broadcast scalar tensor',
  neg: 'gradients: elementwise unary > neg',
  pad: 'gradients: padding > temporal_padding',
  pool: 'gradients: pooling > pool2d max same, pool 3, strides 2',
  pool_grad: 'gradients: the adjoint ops themselves (second-order building blocks) > pool_grad max',
  pool_select: 'gradients: the adjoint ops themselves (second-order building blocks) > pool_select',
  pow: 'gradients: elementwise binary with broadcasting > pow tensor exponent',
  print: 'pass-through and seeded masks > print_tensor is the identity',
  prod: 'gradients: reductions > prod one zero',
  reciprocal: 'gradients: elementwise unary > reciprocal',
  repeat_elements: 'gradients: repetition > repeat_elements axis 1',
  reshape: 'gradients: structure and dot > reshape',
  reshape_dims: 'gradients: sized ops > reshape_dims (3, -1)',
  reshape_like: 'gradients: ops of gradient graphs > reshape_like',
  round: 'gradients: elementwise unary > round (zero)',
  scatter_add_rows: 'gradients of gradients (adjoint ops) > scatter_add_rows',
  scatter_index: 'gradients: ops of gradient graphs > scatter_index',
  sigmoid: 'gradients: elementwise unary > sigmoid',
  scan: 'gradients: K.rnn > rnn go_backwards=false mask=true unroll=false',
  sign: 'gradients: elementwise unary > sign (zero)',
  sin: 'gradients: elementwise unary > sin',
  slice: 'gradients: slicing, joining, gathering > slice_along [1:3]',
  slice_dims: 'gradients: sized ops > slice_dims start (1, 1) size (-1, 2)',
  softplus: 'gradients: elementwise unary > softplus',
  specify_shape: 'gradients: ops of gradient graphs > specify_shape',
  sqrt: 'gradients: elementwise unary > sqrt',
  square: 'gradients: elementwise unary > square',
  squeeze: 'gradients: reshapes and permutations > squeeze',
  sub: 'gradients: elementwise binary with broadcasting > sub broadcast column',
  softmax_cross_entropy: 'gradients: optimizer ops > softmax_cross_entropy axis -1',
  sum: 'gradients: reductions > sum axis 1',
  sum_to_like: 'gradients: ops of gradient graphs > sum_to_like over a broadcast row',
  tanh: 'gradients: elementwise unary > tanh',
  tile: 'gradients: repetition > tile list',
  tile_dims: 'gradients: sized ops > tile_dims (2, 1)',
  transpose: 'gradients: reshapes and permutations > permute_dimensions',
  unrepeat: 'gradients of gradients (adjoint ops) > unrepeat',
  unslice: 'gradients of gradients (adjoint ops) > unslice',
  unslice_dims: 'gradients: sized ops > unslice_dims start (1, 1) size (-1, 2)',
  unsqueeze: 'gradients: ops of gradient graphs > unsqueeze',
  untile: 'gradients of gradients (adjoint ops) > untile',
  untile_dims: 'gradients: sized ops > untile_dims (2, 1)',
  where: 'gradients: elementwise unary > where',
};

/** Ops whose rule is a function (not 'leaf' or 'none'): the ones that pass a gradient on. */
const differentiable = Object.entries(gradRules).filter(([, r]) => r !== 'leaf' && r !== 'none' && !(typeof r === 'object' && 'unsupported' in r)).map(([op]) => op).sort();

/**
 * The ops of a case's graph through which a gradient reaches a case input: nodes that depend on an
 * input (an op applied only to constants, as the cotangent seed's, never has its rule tested).
 */
function opsOf(key: string): Set<string> {
  const c = gradCases.get(key)!;
  const xs = caseInputs(c, 'float64').map((v) => K.placeholder(v.shape, null, v.dtype));
  const live = new Set<Node>(xs);
  const ops = new Set<string>();
  for (const n of topoSort([c.build(...xs)])) {
    if (!n.inputs.some((i) => live.has(i))) continue;
    live.add(n);
    ops.add(n.op);
  }
  return ops;
}

describe('gradient coverage: every differentiable op has a verify_grad row', () => {
  it('lists every op that has a gradient rule', () => {
    const missing = differentiable.filter((op) => !(op in COVERED));
    expect(missing, `ops with a gradient rule but no entry in COVERED (add a gradTable row, then the entry): ${missing.join(', ')}`).to.deep.equal([]);
  });

  it('lists only ops that have a gradient rule', () => {
    const stale = Object.keys(COVERED).filter((op) => !differentiable.includes(op));
    expect(stale).to.deep.equal([]);
  });

  it("each entry's case exists and its graph contains the op", () => {
    const bad: string[] = [];
    for (const [op, key] of Object.entries(COVERED)) {
      if (!gradCases.has(key)) bad.push(`${op}: no case ${JSON.stringify(key)}`);
      else if (!opsOf(key).has(op)) bad.push(`${op}: case ${JSON.stringify(key)} has no such node on a path from its inputs`);
    }
    expect(bad).to.deep.equal([]);
  });
});
