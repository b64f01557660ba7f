// What the viewer page computes, checked in Node (the page runs the same module): the graph and
// gradient graph of each example, the pass-by-pass record against optimize(), the kernels of
// f.source() linked to the nodes they compute, and reverse mode step by step against the
// compiled gradient and finite differences.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { backend as K, optimize } from '../../src/index.js';
import { VIEWER_EXAMPLES, VIEWER_EXAMPLE_NAMES } from '../../src/examples/viewer-programs.js';
import {
  analyze, callsOf, compile, kernelsOf, numbers, opsOf, profileBars, programLineOf, PROGRAM_LINE_OFFSET, PROGRAM_URL, rand, referenceNumbers, runProgram, stepThrough,
} from '../../viewer/model.js';
import { topoSort } from '../../src/ir/graph.js';
import type { Node as Tensor } from '../../src/ir/node.js';

describe('viewer model', function () {
  this.timeout(120000);

  it('runProgram: clear errors for programs that do not return { inputs, loss, wrt? }', () => {
    expect(() => runProgram('return 3;')).to.throw(/must return \{ inputs, loss, wrt\? \}, got number/);
    expect(() => runProgram('return { inputs: {}, loss: () => 0 };')).to.throw(/at least one input/);
    expect(() => runProgram('return { inputs: { x: [1] }, loss: 2 };')).to.throw(/loss: \(x\) => tensor/);
    expect(() => runProgram('return { inputs: { x: [1] }, loss: (x) => x, wrt: ["y"] };')).to.throw(/wrt must list names of its inputs \(x\), got \["y"\]/);
    expect(() => analyze(runProgram('return { inputs: { x: [1] }, loss: (x) => 7 };'))).to.throw(/loss\(x\) must return a tensor, got number/);
  });

  it('a program file may export default what the editor returns (examples/viewer-program.js)', () => {
    const text = readFileSync(new URL('../../examples/viewer-program.js', import.meta.url), 'utf8');
    expect(text).to.match(/^export default \{/m);
    const a = analyze(runProgram(text));
    expect(a.names).to.deep.equal(['x', 'y', 'w', 'b']);
    expect(a.wrt).to.deep.equal([2, 3]);
    expect(stepThrough(a).check).to.deep.equal({ ok: true });
  });

  it('rand: the same numbers every time, in [-1, 1), of the asked shape', () => {
    const a = rand([2, 3], 4) as number[][];
    expect(a).to.deep.equal(rand([2, 3], 4));
    expect(a.length).to.equal(2);
    expect(a[0]!.length).to.equal(3);
    expect(a.flat().every((x) => x >= -1 && x < 1)).to.equal(true);
    expect(rand([2, 3], 5)).to.not.deep.equal(a);
  });

  it("optimizer 'eqsat': the eqsat step carries the e-graph's growth and greedy's graph beside the extracted one; compile uses the level", () => {
    const src = 'return { inputs: { A: rand([12, 12], 1), B: rand([12, 12], 2), v: rand([12], 3) }, loss: (A, B, v) => K.sum(K.dot(K.dot(A, B), v)), wrt: ["v"] };';
    const a = analyze(runProgram(src), K, 'eqsat');
    const step = a.passes.find((p) => p.name === 'eqsat');
    expect(step?.note).to.match(/iterations \(e-nodes [0-9 >-]+\), stopped: \w+/);
    expect(step?.beforeDot).to.equal(a.passes[a.passes.indexOf(step!) - 1]!.dot);
    expect(a.passes.filter((p) => p.beforeDot !== undefined).map((p) => p.name)).to.deep.equal(['eqsat']);
    const f = compile(a, 'cpu');
    expect(f.optimizer).to.equal('eqsat');
    const got = numbers(f, a);
    referenceNumbers(a).forEach((r, i) => r.forEach((x, j) => expect(got[i]![j]).to.be.closeTo(x, 1e-4 * (1 + Math.abs(x)))));
    expect(analyze(runProgram(src)).passes.map((p) => p.name)).to.not.include('eqsat');
  });

  for (const name of VIEWER_EXAMPLE_NAMES) {
    describe(name, () => {
      const a = analyze(runProgram(VIEWER_EXAMPLES[name]));

      it('the graph as built: loss and one gradient per wrt input, drawn with op, dtype and shape, gradient nodes boxed', () => {
        expect(a.grads.length).to.equal(a.wrt.length);
        expect(a.built.dot).to.contain('cluster_gradients');
        expect(a.built.dot).to.contain('K.gradients: reverse mode');
        for (const n of topoSort([a.loss, ...a.grads])) expect(a.built.ids.has(n), `node ${n.op} has a DOT id`).to.equal(true);
        expect(a.built.dot).to.match(/float32 \(\d/);
      });

      it('the passes: the pipeline optimize() runs, same node counts, chained, and what changed', () => {
        const ref = optimize([a.loss, ...a.grads]);
        expect(a.passes.map((p) => p.name)).to.deep.equal(ref.passes.map((p) => p.name));
        expect(a.passes.map((p) => p.nodesAfter)).to.deep.equal(ref.passes.map((p) => p.nodesAfter));
        for (let k = 1; k < a.passes.length; k++) expect(a.passes[k]!.nodesBefore).to.equal(a.passes[k - 1]!.nodesAfter);
        const fusion = a.passes.find((p) => p.name === 'fusion')!;
        // Fusion makes fused nodes wherever it merged ops (pass-canonicalize leaves one sum: nothing to fuse).
        if (fusion.nodesAfter < fusion.nodesBefore) expect(fusion.added.some((n) => n.op === 'fused'), 'fusion makes fused nodes').to.equal(true);
        expect(fusion.added.every((n) => fusion.ids.has(n)), 'every changed node is drawn').to.equal(true);
        // A pass that changed nothing marks nothing (merge only reorders commutative operands here).
        for (const p of a.passes) if (p.nodesBefore === p.nodesAfter && p.added.length === 0) expect(p.removed).to.deep.equal([]);
      });

      it('the kernels: f.source() split per kernel, each fused kernel linked to a node with its ops', () => {
        const f = compile(a, 'cpu');
        numbers(f, a);
        const ks = kernelsOf(f.source(), f.graph);
        expect(ks.length).to.be.above(1);
        // A matrix product's packing loops are shown with its kernel, not as kernels of their own.
        expect(ks.filter((k) => k.label.startsWith('pack ') || k.label === 'operand packing').map((k) => k.name)).to.deep.equal([]);
        for (const k of ks) if (/^function k\d+\([^)]*\)\s*\{\s*\/\/ pack /m.test(k.source)) expect(k.label).to.match(/^matmul /);
        const graph = new Set(topoSort(f.graph));
        const linked = ks.filter((k) => k.node !== undefined);
        expect(linked.length / ks.length, 'most kernels are linked').to.be.above(0.6);
        for (const k of linked) {
          expect(graph.has(k.node!)).to.equal(true);
          const ops = (/\[([^\]]+)\]/.exec(k.label)?.[1] ?? k.label.split(' ')[0]!).split(',');
          expect([...opsOf(k.node!)].sort(), `${k.name} ${k.label}`).to.deep.equal([...ops].sort());
          expect(k.source.startsWith(`function ${k.name}(`)).to.equal(true);
        }
        expect(new Set(linked.map((k) => k.node)).size, 'one kernel per node').to.equal(linked.length);
      });

      const forwardMode = a.tangents !== undefined;
      it(`steps through ${forwardMode ? 'forward' : 'reverse'} mode (the program ${forwardMode ? 'gives' : 'gives no'} tangents)`, () => {
        expect(stepThrough(a, { verify: false }).mode).to.equal(forwardMode ? 'forward' : 'reverse');
      });

      if (forwardMode) {
        it('forward mode step by step: inputs carry their directions, the loss its jvp, which equals <gradient, v> and finite differences', () => {
          const s = stepThrough(a);
          expect(s.backward).to.deep.equal([]);
          expect(s.forward.map((f) => f.node)).to.deep.equal(topoSort([a.loss]));
          a.wrt.forEach((i, k) => {
            const step = s.forward.find((f) => f.node === a.placeholders[i])!;
            expect(Array.from(step.tangent!.data as ArrayLike<number>)).to.deep.equal(Array.from(a.tangents![k]!.data as ArrayLike<number>));
          });
          // Each node comes after the inputs its tangent was computed from (one forward pass).
          const at = new Map(s.forward.map((f, i) => [f.node, i] as const));
          for (const f of s.forward) for (const c of f.from ?? []) expect(at.get(c)!).to.be.below(at.get(f.node)!);
          // The loss' tangent against the compiled gradients dotted with the direction.
          const compiled = numbers(compile(a, 'cpu'), a);
          const gv = a.wrt.reduce((p, _i, k) => p + compiled[k + 1]!.reduce((q, g, j) => q + g * Number(a.tangents![k]!.data[j]), 0), 0);
          const jvp = Array.from(s.forward.at(-1)!.tangent!.data as ArrayLike<number>).reduce((p, x) => p + x, 0);
          expect(s.forward.at(-1)!.node).to.equal(a.loss);
          expect(Math.abs(jvp - gv)).to.be.at.most(1e-5 * Math.max(1, Math.abs(gv)));
          expect(s.check).to.deep.equal({ ok: true });
          expect(s.table.map((t) => t.name)).to.deep.equal(['jvp (forward mode)', '<gradient, v> (reverse mode)']);
          for (const t of s.table) expect(Math.abs(t.analytic[0]! - t.numeric[0]!)).to.be.at.most(2e-3 + 1e-2 * Math.abs(t.numeric[0]!));
          expect(s.dot).to.match(/tangent /);
        });
        return;
      }

      it('reverse mode step by step: the loss starts at 1, input adjoints are the compiled gradients, verify_grad passes', () => {
        const s = stepThrough(a);
        expect(s.forward.length).to.be.above(3);
        expect(s.backward[0]!.node).to.equal(a.loss);
        // A loss that is not a scalar is summed first: every element's adjoint is 1.
        expect(Array.from(s.backward[0]!.adjoint.data as ArrayLike<number>).every((x) => x === 1)).to.equal(true);
        // Each node appears after all its consumers (reverse topological order).
        const at = new Map(s.backward.map((b, i) => [b.node, i] as const));
        for (const b of s.backward) for (const c of b.from) expect(at.get(c)!, `${c.op} before ${b.node.op}`).to.be.below(at.get(b.node)!);
        const compiled = numbers(compile(a, 'cpu'), a);
        a.wrt.forEach((i, k) => {
          const step = s.backward.find((b) => b.node === a.placeholders[i])!;
          const adj = Array.from(step.adjoint.data as ArrayLike<number>);
          adj.forEach((x, j) => expect(Math.abs(x - compiled[k + 1]![j]!), `d loss / d ${a.names[i]}[${j}]`).to.be.at.most(1e-5));
        });
        // Each consumer's share, where shown, adds up to the node's adjoint.
        const shown = s.backward.filter((b) => b.contributions !== undefined && b.from.length > 0);
        if (name !== 'lstm') expect(shown.length, 'contributions shown for most nodes').to.be.above(s.backward.length / 2);
        for (const b of shown) {
          const total = Array.from(b.adjoint.data as ArrayLike<number>, () => 0);
          for (const c of b.contributions!) {
            const v = Array.from(c.value.data as ArrayLike<number>);
            total.forEach((_, j) => { total[j]! += v.length === 1 ? v[0]! : v[j]!; });
          }
          // (NaN where both are: d x^2 / d exponent is x^2 log x, NaN for x < 0.)
          Array.from(b.adjoint.data as ArrayLike<number>).forEach((x, j) => {
            if (Number.isNaN(x) && Number.isNaN(total[j]!)) return;
            expect(Math.abs(total[j]! - x), `${b.label}[${j}]`).to.be.at.most(1e-5 * Math.max(1, Math.abs(x)));
          });
        }
        expect(s.check).to.deep.equal({ ok: true });
        for (const t of s.table) t.analytic.forEach((x, j) => expect(Math.abs(x - t.numeric[j]!), `${t.name}[${j}]`).to.be.at.most(2e-3 + 1e-2 * Math.abs(x)));
      });

      it('compiled numbers agree with the reference interpreter', () => {
        const got = numbers(compile(a, 'cpu'), a);
        const ref = referenceNumbers(a);
        got.forEach((xs, i) => xs.forEach((x, j) => expect(Math.abs(x - ref[i]![j]!)).to.be.at.most(1e-5 * Math.max(1, Math.abs(ref[i]![j]!)))));
      });
    });
  }

  it('jvp: every node\'s tangent is the directional derivative of its value (central differences on the reference interpreter)', () => {
    const a = analyze(runProgram(VIEWER_EXAMPLES.jvp));
    const s = stepThrough(a);
    // The docs' numbers, by hand: x V = [-2, -1.5, -2, 2]; square: 2 r dr; mean: their mean.
    const byOp = (op: string) => Array.from(s.forward.find((f) => f.node.op === op)!.tangent!.data as ArrayLike<number>);
    expect(byOp('dot')).to.deep.equal([-2, -1.5, -2, 2]);
    byOp('square').forEach((x, j) => expect(x).to.be.closeTo([-1.6, -1.35, 1.2, -4.4][j]!, 1e-6));
    expect(byOp('mean')[0]).to.be.closeTo(-1.5375, 1e-6);
    // x and t do not depend on W: zero tangents, computed from nothing.
    for (const f of s.forward.filter((g) => g.node.op === 'placeholder' && g.node !== a.placeholders[2])) {
      expect(Array.from(f.tangent!.data as ArrayLike<number>).every((x) => x === 0)).to.equal(true);
      expect(f.from).to.deep.equal([]);
    }
  });

  it('forward mode: clear errors for tangents that name no wrt input or have the wrong shape; a wrong derivative fails the check', () => {
    expect(() => runProgram('return { inputs: { x: [1], y: [2] }, wrt: ["x"], tangents: { y: [1] }, loss: (x, y) => K.sum(K.multiply(x, y)) };')).to.throw(/tangents must map names of its wrt inputs \(x\) to directions, got \{"y":\[1\]\}/);
    expect(() => analyze(runProgram('return { inputs: { x: [1, 2] }, tangents: { x: [1] }, loss: (x) => K.sum(x) };'))).to.throw(/the tangent of x must have its shape \(2,\), got \(1,\)/);
    // sign at its jump: both modes give 0, central differences (1 - (-1)) / 2e-3 = 1000.
    const s = stepThrough(analyze(runProgram('return { inputs: { x: [0] }, tangents: { x: [1] }, loss: (x) => K.sum(K.sign(x)) };')));
    expect(s.mode).to.equal('forward');
    expect(s.check.ok).to.equal(false);
    expect(s.check.ok ? '' : s.check.message).to.match(/forward mode 0, reverse mode 0, finite differences 1000(\.\d+)? /);
  });

  it('verify_grad\'s failure is reported with its message (|x| at its kink: symbolic 0, finite difference 1)', () => {
    const a = analyze(runProgram('return { inputs: { x: [0, 0.5] }, loss: (x) => K.sum(K.abs(x)) };'));
    const s = stepThrough(a);
    expect(s.check.ok).to.equal(false);
    expect(s.check.ok ? '' : s.check.message).to.match(/verify_grad: input 0, element 0: analytic gradient 0 vs finite difference 1/);
    expect(Array.from(s.backward.find((b) => b.node === a.placeholders[0])!.adjoint.data as ArrayLike<number>)).to.deep.equal([0, 1]);
  });

  it('programLineOf: nodes record the program line of the K call that built them; gradient nodes that of their forward node', () => {
    const a = analyze(runProgram(VIEWER_EXAMPLES['mlp-gradient']));
    const lines = VIEWER_EXAMPLES['mlp-gradient'].split('\n');
    const lineOf = (n: Tensor) => { const l = programLineOf(n); return l === undefined ? undefined : lines[l - 1]; };
    const order = topoSort([a.loss, ...a.grads]);
    const dot = order.find((n) => n.op === 'dot' && n.inputs.some((i) => i.name === 'W1'))!;
    expect(lineOf(dot)).to.contain('K.relu(K.add(K.dot(x, W1), b1))');
    expect(callsOf(dot)).to.deep.equal(['K.dot']);
    expect(lineOf(a.loss)).to.contain('K.mean(K.categorical_crossentropy(logits, y, true))');
    // d loss / d W1 ends in the dot that differentiates K.dot(x, W1): that line.
    expect(lineOf(a.grads[0]!)).to.contain('K.dot(x, W1)');
    expect(callsOf(a.grads[0]!)[0]).to.match(/^K\.gradients of K\.dot/);
    expect(programLineOf(a.placeholders[0]!), 'the viewer made the placeholders').to.equal(undefined);
    // Through the optimizer: the fused kernel of dot and add keeps the line.
    const f = compile(a, 'cpu');
    numbers(f, a);
    const k0 = kernelsOf(f.source(), f.graph)[0]!;
    expect(k0.label).to.match(/\[dot,add\]/);
    expect(lineOf(k0.node!)).to.contain('K.dot(x, W1)');
  });

  it('programLineOf with recorded provenance: forward nodes and gradient kernels name the program line that built them', () => {
    const a = analyze(runProgram('return {\n  inputs: { x: rand([2, 3]) },\n  loss: (x) => K.sum(K.softmax(x)),\n};'));
    expect(programLineOf(a.loss)).to.equal(3);
    // The viewer calls K.gradients itself; a gradient node's line is that of the forward node it differentiates.
    const grad = a.optimized.find((n) => n.provenance.some((p) => p.of !== undefined))!;
    expect(grad).not.to.equal(undefined);
    expect(programLineOf(grad)).to.equal(3);
  });

  it('the program\'s lines: a stack frame of its code names PROGRAM_URL at the editor line plus the offset', () => {
    let stack = '';
    try {
      runProgram('const a = 1;\nthrow new Error("here");');
    } catch (e) {
      stack = (e as Error).stack ?? '';
    }
    const m = new RegExp(`${PROGRAM_URL.replace('.', '\\.')}:(\\d+)`).exec(stack);
    expect(m, stack).to.not.equal(null);
    expect(Number(m![1]) - PROGRAM_LINE_OFFSET).to.equal(2);
    expect(PROGRAM_LINE_OFFSET, 'stack lines are editor lines').to.equal(0);
  });

  it('the Profile tab: a profiled compile gives one bar per kernel, the longest full width; the source keeps its kernels', () => {
    const a = analyze(runProgram(VIEWER_EXAMPLES['mlp-gradient']));
    const f = compile(a, 'cpu', K, true);
    for (let i = 0; i < 3; i++) numbers(f, a);
    const p = f.profile();
    const bars = profileBars(p);
    expect(bars.map((b) => b.name)).to.deep.equal(p.kernels.map((k) => k.name));
    expect(bars.length).to.be.above(3);
    expect(Math.max(...bars.map((b) => b.width))).to.equal(1);
    for (const b of bars) expect(b.width).to.be.within(0, 1);
    expect(kernelsOf(f.source(), f.graph).map((k) => k.label)).to.deep.equal(kernelsOf(compile(a, 'cpu').source(), f.graph).map((k) => k.label));
  });
});
