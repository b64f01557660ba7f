// The local-rewrite engine: rules indexed by op, patterns checked against the op registry, and
// which errors mean "does not apply" (an inference failure) and which are reported (anything else).
import { expect } from 'chai';
import { backend as K } from '../../src/index.js';
import { apply } from '../../src/ir/build.js';
import { Node } from '../../src/ir/node.js';
import { definePass, runPasses } from '../../src/passes/pass.js';
import { rule } from '../../src/passes/pattern.js';
import { RewriteError, rewrite, rewriteGraph, type RewriteStats } from '../../src/passes/rewrite.js';

describe('passes/rewrite (the engine)', () => {
  const x = () => K.placeholder([3], null, 'float32');

  it('offers a rule only the nodes of the ops it is indexed under', () => {
    const seen: string[] = [];
    const r = rewrite('spy', ['exp', 'log'], (n) => { seen.push(n.op); return undefined; });
    const y = K.sqrt(K.exp(K.log(K.abs(x()))));
    rewriteGraph({ outputs: [y] }, [r]);
    expect(seen).to.deep.equal(['log', 'exp']);
  });

  it('applies rules in the order given and rewrites each replacement again to a fixed point', () => {
    const stats: RewriteStats = { fired: new Map() };
    const v = x();
    let y: Node = v;
    for (let i = 0; i < 4; i++) y = K.exp(K.log(y));
    const expLog = rule({ name: 'exp_log', from: '(exp (log ?x))', to: '?x' });
    expect(rewriteGraph({ outputs: [y] }, [expLog], stats).outputs[0]).to.equal(v);
    // Hash-consing makes the four exp(log(v)) one node once the inner one is v: the rule fires once.
    expect(stats.fired.get('exp_log')).to.equal(1);
  });

  it('a pattern naming an op that does not exist is an error when the rule is made', () => {
    expect(() => rule({ name: 'typo', from: '(lgo (exp ?x))', to: '?x' })).to.throw(/rule "typo": pattern names op "lgo", which is not a built-in op/);
    expect(() => rule({ name: 'typo_to', from: '(log (exp ?x))', to: '(idnetity ?x)' })).to.throw(/pattern names op "idnetity"/);
    expect(() => rule({ name: 'bare', from: '?x', to: '?x' })).to.throw(/must start with an op/);
  });

  it('a replacement that cannot be built (an inference failure) does not apply', () => {
    const v = x();
    const bad = rewrite('bad_shapes', ['exp'], (n) => apply('add', [n.inputs[0]!, K.placeholder([4], null, 'float32')]));
    const y = K.exp(v);
    expect(rewriteGraph({ outputs: [y] }, [bad]).outputs[0]).to.equal(y);
  });

  it('anything else a rule throws is reported with the rule and the node, not skipped', () => {
    const buggy = rewrite('buggy', ['exp'], () => { throw new Error('boom'); });
    const y = K.exp(x());
    expect(() => rewriteGraph({ outputs: [y] }, [buggy])).to.throw(RewriteError, /rewrite "buggy" threw on node exp_\d+ \(exp, float32 \(3,\)\): boom/);
  });

  it('a replacement of another type does not apply (x * 1 with a broadcasting 1 stays)', () => {
    const s = K.placeholder([], null, 'float32');
    const y = apply('mul', [s, K.ones([3], 'float32')]);
    const mulOne = rule({ name: 'mul_one', from: '(mul ?x 1)', to: '?x' });
    expect(rewriteGraph({ outputs: [y] }, [mulOne]).outputs[0]).to.equal(y);
  });
});

describe('passes/pass: the verifier after every pass', () => {
  it('runs in the tests (THEANINE_VERIFY_PASSES=1, set by the test setup) and names the pass whose graph it rejects', () => {
    expect(process.env['THEANINE_VERIFY_PASSES']).to.equal('1');
    const x = K.placeholder([3], null, 'float32');
    const y = K.exp(x);
    // A node whose stored type is not what its op infers (a pass that built it by hand).
    const broken = new Node('exp', [x], {}, { dtype: 'float64', shape: [3] }, 'broken-exp');
    const bad = definePass('hand_built', 'builds a node without apply', () => ({ outputs: [broken] }));
    expect(() => runPasses([bad], { outputs: [y] })).to.throw(/pass "hand_built" produced a graph the verifier rejects: node exp_\d+ \(exp\): stored type float64 \(3,\) but its op infers float32 \(3,\)/);
    expect(runPasses([bad], { outputs: [y] }, { verify: false }).outputs[0]).to.equal(broken);
  });
});
