// The Scan op in the IR (tuple items, hash-consing, printing, verification, errors) and the
// Scan lowering pass, checked against the reference interpreter on the same graphs.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import { apply } from '../../src/ir/build.js';
import { ShapeError, ValueError } from '../../src/ir/errors.js';
import { topoSort } from '../../src/ir/graph.js';
import { evaluate } from '../../src/ir/interpret.js';
import type { Node } from '../../src/ir/node.js';
import { debugprintNodes } from '../../src/ir/printer.js';
import { buildScan, scanArg } from '../../src/ir/scan.js';
import { ScanBody } from '../../src/ir/scanbody.js';
import type { ScanAttrs } from '../../src/ir/ops/control.js';
import { tensorType } from '../../src/ir/types.js';
import { verify } from '../../src/ir/verify.js';
import { optimizeScans } from '../../src/passes/scan.js';
import { expectClose } from '../helpers/assert.js';
import { mulberry32 as rng } from '../../src/ir/random.js';

const ph = (shape: (number | null)[], name: string) => K.placeholder(shape, null, 'float64', false, name);
const nd = (v: unknown) => NDArray.from(v, 'float64');
const scans = (outs: readonly Node[]) => topoSort(outs).filter((n) => n.op === 'scan');
const bodyOps = (s: Node) => topoSort((s.attrs as unknown as ScanAttrs).body.results).map((n) => n.op);

const rand = rng(99);
const arr = (...shape: number[]): unknown => (shape.length === 0 ? rand() - 0.5 : Array.from({ length: shape[0]! }, () => arr(...shape.slice(1))));

/** A tanh RNN over (4, T, 3) with a (4, 2) state, optionally masked and backwards. */
function tanhRnn(T: number | null, opts: { mask?: boolean; back?: boolean } = {}) {
  const x = ph([4, T, 3], 'x');
  const h0 = ph([4, 2], 'h0');
  const m = ph([4, T], 'm');
  const W = K.variable(nd(arr(3, 2)), 'float64', 'W');
  const U = K.variable(nd(arr(2, 2)), 'float64', 'U');
  const [last, outs, states] = K.rnn((xt, st) => {
    const h = apply('tanh', [K.add(K.dot(xt, W), K.dot(st[0]!, U))]);
    return [h, [h]];
  }, x, [h0], { go_backwards: opts.back === true, mask: opts.mask === true ? m : null });
  const inputs = opts.mask === true ? [x, h0, m] : [x, h0];
  const steps = T ?? 5;
  const mv = Array.from({ length: 4 }, (_, s) => Array.from({ length: steps }, (_, t) => ((s + t) % 3 === 0 ? 0 : 1)));
  const feeds = new Map<Node, NDArray>([[x, nd(arr(4, steps, 3))], [h0, nd(arr(4, 2))], [m, nd(mv)]]);
  return { last, outs, state: states[0]!, inputs, feeds };
}

/** Lowers, verifies, and checks every output against the unlowered graph on the interpreter. */
function lowerAndCompare(outputs: Node[], feeds: Map<Node, NDArray>, opts = {}): Node[] {
  const lowered = optimizeScans(outputs, opts);
  verify(lowered);
  const before = evaluate(outputs, { feeds });
  const after = evaluate(lowered, { feeds });
  before.forEach((b, i) => expectClose(after[i]!, b, { atol: 1e-12, rtol: 1e-12 }, `output ${i}\n${debugprintNodes(lowered)}`));
  return lowered;
}

describe('ir/scan', () => {
  describe('the scan op', () => {
    it('equal scans hash-cons to one node; items are read with tuple_get', () => {
      const x = ph([null, 3], 'x');
      const a = K.map_fn((r) => K.sum(K.square(r)), x);
      const b = K.map_fn((r) => K.sum(K.square(r)), x);
      expect(a).to.equal(b);
      expect(a.op).to.equal('tuple_get');
      const s = a.inputs[0]!;
      expect(s.type.items!.map((t) => t.shape)).to.deep.equal([[null]]);
      expect(K.map_fn((r) => K.sum(r), x)).to.not.equal(a);
    });

    it('a body is closed: what the step reads from outside becomes a constant input', () => {
      const x = ph([5, 3], 'x');
      const w = ph([3], 'w');
      const y = K.map_fn((r) => K.sum(K.multiply(r, K.exp(w))), x);
      const s = y.inputs[0]!;
      // exp(w) depends on no step arg: computed once, outside, and fed in
      expect(s.inputs.map((i) => i.op)).to.deep.equal(['placeholder', 'exp']);
      expect(bodyOps(s)).to.not.include('exp');
      const body = (s.attrs as unknown as ScanAttrs).body;
      expect(body.constants).to.have.length(1);
      verify([y]);
    });

    it('verify checks the body and rejects a body that reads a foreign leaf', () => {
      const seq = scanArg(tensorType('float64', [3]), 'seq0');
      expect(() => new ScanBody([seq], [], [], [K.add(seq, ph([3], 'p'))], [])).to.throw(/scan body is not closed: it reads the placeholder leaf p/);
      expect(() => new ScanBody([seq, seq], [], [], [seq], [])).to.throw(/lists the same arg twice/);
    });

    it('infers the step count from the sequences and rejects disagreeing ones', () => {
      const a = ph([4, 2], 'a');
      const b = ph([5, 2], 'b');
      const s0 = scanArg(tensorType('float64', [2]), 'seq0');
      const s1 = scanArg(tensorType('float64', [2]), 'seq1');
      const none = { states: [], constants: [] };
      const parts = { fn: 'test', args: { sequences: [s0, s1], ...none }, outputs: [K.add(s0, s1)], newStates: [] };
      expect(() => buildScan({ ...parts, outer: { sequences: [a, b], ...none } })).to.throw(ShapeError, /test: sequence 1 of shape \(5, 2\) has 5 steps but the scan runs 4/);
      const r = buildScan({ ...parts, outer: { sequences: [a, ph([null, 2], 'c')], ...none } });
      expect(r.outputs[0]!.shape).to.deep.equal([4, 2]);
      // ...and at run time
      const u = buildScan({ ...parts, outer: { sequences: [ph([null, 2], 'u'), ph([null, 2], 'v')], ...none } });
      const [pu, pv] = u.node.inputs;
      expect(() => evaluate(u.outputs, { feeds: new Map([[pu!, nd(arr(3, 2))], [pv!, nd(arr(2, 2))]]) })).to.throw(ValueError, /scan: sequence 1 of shape \(2, 2\) has 2 steps but the scan runs 3/);
    });

    it('a scan without sequences runs n_steps; final states and state sequences are items', () => {
      const acc = scanArg(tensorType('float64', [2]), 'state0');
      const r = buildScan({
        fn: 'test',
        outer: { sequences: [], states: [K.constant([1, 2], 'float64')], constants: [] },
        args: { sequences: [], states: [acc], constants: [] },
        outputs: [K.multiply(acc, 10)], newStates: [K.multiply(acc, 2)], nSteps: 3,
      });
      expect(r.stateSequences[0]!.shape).to.deep.equal([3, 2]);
      const [outs, fin, seq] = evaluate([r.outputs[0]!, r.finalStates[0]!, r.stateSequences[0]!]);
      expect(outs!.toArray()).to.deep.equal([[10, 20], [20, 40], [40, 80]]);
      expect(fin!.toArray()).to.deep.equal([8, 16]);
      expect(seq!.toArray()).to.deep.equal([[2, 4], [4, 8], [8, 16]]); // states after each step
      const empty = { sequences: [], states: [], constants: [] };
      expect(() => buildScan({ fn: 'test', outer: empty, args: empty, outputs: [K.constant(1)], newStates: [] }))
        .to.throw(ValueError, /test: a scan without sequences needs n_steps/);
    });

    it('a state whose runtime shape changes is an error', () => {
      const x = ph([3, null], 'x');
      const acc = scanArg(tensorType('float64', [null]), 'state0');
      const seq = scanArg(tensorType('float64', [null]), 'seq0');
      const r = buildScan({
        fn: 'test',
        outer: { sequences: [x], states: [ph([null], 'a0')], constants: [] },
        args: { sequences: [seq], states: [acc], constants: [] },
        outputs: [], newStates: [K.add(acc, seq)],
      });
      const [px, pa] = r.node.inputs;
      expect(() => evaluate(r.finalStates, { feeds: new Map([[px!, nd(arr(3, 2))], [pa!, nd([1])]]) })).to.throw(ValueError, /new state 0 at step 0 has shape \(2,\) but the state had \(1,\); states keep their shape/);
    });

    it('tuple_get checks its input', () => {
      const y = K.map_fn((r) => r, ph([2, 3], 'x'));
      expect(() => apply('tuple_get', [y.inputs[0]!], { index: 5 }, 'test')).to.throw(ValueError, /test: tuple_get index 5 is out of range for a tuple of 1 items/);
      expect(() => apply('tuple_get', [y], { index: 0 }, 'test')).to.throw(TypeError, /test: tuple_get takes a tuple-valued node/);
    });

    it('debugprint prints the scan and its body once, with the args named after the outer inputs', () => {
      const { last, outs, state } = tanhRnn(100);
      const text = debugprintNodes([last, outs, state]);
      expect(text.match(/body of scan \[id (\w+)\] \(seq0 = \[id \w+\], state0 = \[id \w+\], const0 = \[id \w+\], const1 = \[id \w+\]\):/), text).to.not.equal(null);
      expect(text.match(/>output 0: tanh/g), text).to.have.length(1);
      expect(text.match(/>new state 0: tanh .*\(printed above\)/g), text).to.have.length(1);
    });
  });

  describe('optimizeScans', () => {
    it('unrolls a short scan of known length into copies of the body', () => {
      for (const opts of [{}, { mask: true }, { back: true }, { mask: true, back: true }]) {
        const g = tanhRnn(5, opts);
        const lowered = lowerAndCompare([g.last, g.outs, g.state], g.feeds);
        expect(scans(lowered), JSON.stringify(opts)).to.have.length(0);
        expect(topoSort(lowered).filter((n) => n.op === 'tanh')).to.have.length(5);
        // only the last step read: nothing is stacked
        const lastOnly = lowerAndCompare([g.last], g.feeds);
        expect(topoSort(lastOnly).map((n) => n.op)).to.not.include.members(['concat', 'scan']);
      }
    });

    it('keeps a long scan, and only its last step when only last_output is read', () => {
      const g = tanhRnn(20, { mask: true });
      const lowered = lowerAndCompare([g.last], g.feeds);
      const [s] = scans(lowered);
      // output 0 only as its last step; the state sequences are not read
      expect((s!.attrs as unknown as ScanAttrs).keep).to.deep.equal(['last', 'none', 'none']);
      expect(s!.type.items![0]!.shape).to.deep.equal([4, 2]);
      expect(topoSort(lowered).some((n) => n.op === 'index' && n.inputs[0]!.op === 'tuple_get')).to.equal(false);
    });

    it('keeps every step when the stacked outputs are read', () => {
      const g = tanhRnn(20);
      const lowered = lowerAndCompare([g.last, g.outs, g.state], g.feeds);
      expect((scans(lowered)[0]!.attrs as unknown as ScanAttrs).keep).to.deep.equal(['all', 'none']);
    });

    it('leaves scans of unknown length in place and is idempotent', () => {
      const g = tanhRnn(null);
      const once = lowerAndCompare([g.last, g.state], g.feeds);
      expect(scans(once)).to.have.length(1);
      const twice = optimizeScans(once);
      expect(twice[0]).to.equal(once[0]);
      expect(twice[1]).to.equal(once[1]);
    });

    it('hoists work on constants out of the loop and drops constants the body no longer reads', () => {
      const c = ph([3], 'c');
      // a constant passed explicitly (as K.rnn's constants are) and transformed inside the step
      const [, outs] = K.rnn((xt, st) => {
        const scale = K.exp(st[1]!); // depends only on the constant
        const h = K.add(st[0]!, K.multiply(xt, scale));
        return [h, [h]];
      }, ph([2, 30, 3], 'xs'), [ph([2, 3], 'h0')], false, null, [c]);
      const s0 = scans([outs])[0]!;
      expect(bodyOps(s0)).to.include('exp');
      const feeds = new Map<Node, NDArray>([[s0.inputs[0]!.inputs[0]!, nd(arr(2, 30, 3))], [s0.inputs[1]!, nd(arr(2, 3))], [c, nd([0.1, 0.2, -0.3])]]);
      const lowered = lowerAndCompare([outs], feeds);
      const s1 = scans(lowered)[0]!;
      expect(bodyOps(s1)).to.not.include('exp');
      expect(s1.inputs.map((i) => i.op)).to.deep.equal(['transpose', 'placeholder', 'exp']); // c itself is no longer an input
    });

    it('drops body outputs nobody reads, with their work, and renumbers the items read', () => {
      // Two outputs per step; only the second's stack and the final state are read.
      const x = ph([4, 20, 3], 'x');
      const W = K.variable(nd(arr(3, 2)), 'float64', 'W');
      const V = K.variable(nd(arr(2, 5)), 'float64', 'V');
      const [, outs, states] = K.rnn((xt, st) => {
        const h = apply('tanh', [K.add(K.dot(xt, W), st[0]!)]);
        return [K.dot(h, V), [h]];
      }, x, [ph([4, 2], 'h0')]);
      const feeds = new Map<Node, NDArray>([[x, nd(arr(4, 20, 3))], [scans([outs])[0]!.inputs[1]!, nd(arr(4, 2))]]);
      const both = lowerAndCompare([outs, states[0]!], feeds);
      expect(bodyOps(scans(both)[0]!)).to.include('dot');
      // only the state read: the body's output (dot with V) is no longer computed
      const stateOnly = lowerAndCompare([states[0]!, K.sum(states[0]!)], feeds);
      const s = scans(stateOnly)[0]!;
      expect((s.attrs as unknown as ScanAttrs).body.outputs).to.have.length(0);
      expect(bodyOps(s).filter((o) => o === 'dot')).to.have.length(1);
      expect((s.attrs as unknown as ScanAttrs).keep).to.deep.equal(['none']);
      expect(s.inputs.some((i) => i === V)).to.equal(false);
    });

    it('lowers scans inside bodies too', () => {
      const x = ph([40, 3], 'x');
      const y = K.map_fn((r) => K.sum(K.map_fn((v) => K.square(v), r)), x);
      const lowered = lowerAndCompare([y], new Map([[x, nd(arr(40, 3))]]));
      const [outer] = scans(lowered);
      expect(bodyOps(outer!)).to.not.include('scan'); // the 3-step inner map is unrolled
      expect(bodyOps(outer!).filter((o) => o === 'square')).to.have.length(3);
    });

    it('respects its thresholds', () => {
      const g = tanhRnn(5);
      expect(scans(optimizeScans([g.outs], { maxUnrollSteps: 4 }))).to.have.length(1);
      expect(scans(optimizeScans([g.outs], { maxUnrolledNodes: 10 }))).to.have.length(1);
      expect(scans(optimizeScans([g.outs]))).to.have.length(0);
    });
  });
});
