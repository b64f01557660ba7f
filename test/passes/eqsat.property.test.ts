// Properties of the eqsat optimizer on random graphs of the ops its identities rewrite (add,
// sub, mul, dot, transpose, unary functions, reductions): the graph it returns computes the
// reference's values (float64, within reassociation's rounding; int32 exactly), extraction
// respects the cost model (each class's chosen e-node is its cheapest given its children's
// choices, and the result is never rated worse than the input, under the cpu's model and one
// without fusion), and limits hold (a run starts no
// iteration past its node or time budget). Fixed seeds; FUZZ_RUNS=n for more graphs.
import * as fc from 'fast-check';
import { expect } from 'chai';
import { backend as K, debugprint } from '../../src/index.js';
import { apply } from '../../src/ir/build.js';
import type { Node } from '../../src/ir/node.js';
import type { NDArray } from '../../src/ir/ndarray.js';
import { evaluate } from '../../src/ir/interpret.js';
import { verify } from '../../src/ir/verify.js';
import { EGraph, builtinRules, costModel, graphCost, optimizeGraph, saturate, type EqsatLimits } from '../../src/passes/eqsat/index.js';
import { bestNodes } from '../../src/passes/eqsat/extract.js';
import { cpuFusion } from '../../src/runtime/cpu/fusion.js';
import { expectClose } from '../helpers/assert.js';
import { values } from './helpers.js';

type Cmd = readonly [number, number, number, number];
const pick = <T>(xs: readonly T[], k: number): T => xs[k % xs.length]!;
const model = costModel(cpuFusion);
/** The model of a target without fusion (tensorflow, onnx): every op a kernel, so every saved op shows. */
const unfused = costModel({ classify: () => 'opaque' }, undefined, 'unfused');
const LIMITS: EqsatLimits = { nodes: 3000, iterations: 6, ms: 2000, matchesPerRule: 500, minGain: 0 };

/** Random graphs over a pool of matrices and vectors: commands that do not fit (shapes) are skipped. */
function build(cmds: readonly Cmd[], seed: number, dtype: 'float64' | 'int32'): { inputs: Node[]; outputs: Node[]; feeds: Map<Node, NDArray> } {
  const shapes = [[4, 4], [4, 3], [3, 4], [4], [3], [4, 1]];
  const inputs = [0, 1, 2, 3].map((i) => K.placeholder(pick(shapes, (seed >> (3 * i)) + i), null, dtype, false, `in${i}`));
  const pool: Node[] = [...inputs];
  const unary = dtype === 'int32' ? ['neg', 'abs', 'square'] : ['neg', 'exp', 'tanh', 'square'];
  for (const [a, b, c, d] of cmds) {
    const x = pick(pool, b);
    const y = pick(pool, c);
    let n: Node | undefined;
    try {
      switch (a % 7) {
        case 0: case 1: n = apply(pick(['add', 'mul', 'sub'], d), [x, y]); break;
        case 2: n = apply('add', [apply('mul', [x, y]), apply('mul', [x, pick(pool, d)])]); break;
        case 3: n = apply('dot', [x, y]); break;
        case 4: n = x.ndim === 2 ? apply('transpose', [x], { perm: [1, 0] }) : apply(pick(unary, d), [x]); break;
        case 5: n = apply(pick(unary, d), [x]); break;
        case 6: n = x.ndim > 0 ? apply('sum', [x], { axes: [d % x.ndim], keepdims: c % 2 === 0 }) : undefined; break;
      }
    } catch {
      n = undefined;
    }
    // keep values small enough that int32 products stay exact in float64 and floats stay finite
    if (n !== undefined && (dtype === 'float64' || pool.length < 10)) pool.push(n);
  }
  const outputs = pool.length > 4 ? [pool[pool.length - 1]!, pick(pool.slice(4), seed)] : [apply('neg', [inputs[0]!])];
  const feeds = new Map<Node, NDArray>();
  inputs.forEach((p, i) => feeds.set(p, values(p.shape as number[], 'float64', seed * 3 + i + 1, dtype === 'int32' ? -3 : -1, dtype === 'int32' ? 3 : 1).astype(dtype)));
  return { inputs, outputs, feeds };
}

const cmdsArb = fc.array(fc.tuple(fc.nat(1000), fc.nat(1000), fc.nat(1000), fc.nat(1000)), { minLength: 1, maxLength: 14 });
const runs = Number(process.env['FUZZ_RUNS'] ?? 60);

describe('passes/eqsat: random graphs', () => {
  for (const dtype of ['float64', 'int32'] as const) {
    it(`${dtype}: the returned graph computes the reference's values and is never rated worse, ${runs} graphs`, () => {
      let rewritten = 0;
      fc.assert(fc.property(cmdsArb, fc.nat(1 << 12), (cmds, seed) => {
        const { outputs, feeds } = build(cmds, seed, dtype);
        for (const m of [model, unfused]) {
          const { graph, report } = optimizeGraph({ outputs }, builtinRules(), m, LIMITS);
          verify(graph.outputs);
          if (report.chose === 'eqsat' && m === unfused) rewritten++;
          expect(graphCost(graph.outputs, m), m.name).to.be.at.most(graphCost(outputs, m));
          expect(report.extractedCost === Infinity || report.chose === (report.extractedCost < report.greedyCost ? 'eqsat' : 'greedy')).to.equal(true);
          const want = evaluate(outputs, { feeds });
          const got = evaluate(graph.outputs, { feeds });
          const tol = dtype === 'int32' ? { atol: 0, rtol: 0 } : { atol: 1e-9, rtol: 1e-9 };
          want.forEach((w, i) => expectClose(got[i]!, w, tol, `${m.name}, output ${i}\nbefore:\n${debugprint(outputs)}\nafter:\n${debugprint(graph.outputs)}`));
        }
      }), { seed: 34, numRuns: runs });
      // The search must have found cheaper graphs for some (else this checked only the floor); without
      // fusion every saved op is cheaper, where the cpu's roofline rates small fused loops alike.
      expect(rewritten).to.be.greaterThan(runs / 10);
    });
  }

  it(`congruence holds after rebuild, and extraction chooses each class's cheapest e-node given its children's choices, ${Math.ceil(runs / 3)} graphs`, () => {
    fc.assert(fc.property(cmdsArb, fc.nat(1 << 12), (cmds, seed) => {
      const { outputs } = build(cmds, seed, 'float64');
      const eg = new EGraph();
      for (const o of outputs) eg.addNode(o);
      saturate(eg, builtinRules(), { ...LIMITS, iterations: 3 });
      // Congruence closure after rebuild: every e-node is in the class the hash-cons table gives it.
      for (const cls of eg.classes.values()) for (const e of cls.nodes) expect(eg.lookup(e)).to.equal(cls.id);
      const best = bestNodes(eg, model);
      for (const cls of eg.classes.values()) {
        const b = best.get(cls.id);
        expect(b, `class ${cls.id} has a finite cost`).to.not.equal(undefined);
        for (const e of cls.nodes) {
          const total = model.node(eg.materialize(e)) + e.children.reduce((s, c) => s + (best.get(eg.find(c))?.cost ?? Infinity), 0);
          expect(b!.cost).to.be.at.most(total * (1 + 1e-12));
        }
      }
    }), { seed: 35, numRuns: Math.ceil(runs / 3) });
  });

  it('limits hold: no iteration starts past the node or time budget', () => {
    fc.assert(fc.property(cmdsArb, fc.nat(1 << 12), fc.integer({ min: 10, max: 400 }), fc.integer({ min: 0, max: 5 }), (cmds, seed, nodes, ms) => {
      const { outputs } = build(cmds, seed, 'float64');
      const limits = { nodes, iterations: 20, ms, matchesPerRule: 500, minGain: 0 };
      const { report } = optimizeGraph({ outputs }, builtinRules(), model, limits);
      for (const it of report.iterations) {
        expect(it.startNodes).to.be.lessThan(limits.nodes);
        expect(it.startMs).to.be.lessThan(limits.ms);
      }
      const last = report.iterations.at(-1);
      if (report.stop === 'nodes' && last !== undefined) expect(last.nodes).to.be.at.least(limits.nodes);
      expect(report.iterations.length).to.be.at.most(limits.iterations);
    }), { seed: 36, numRuns: Math.ceil(runs / 2) });
  });
});
