// Provenance: the public call and the user's line recorded on each node, kept by every pass.
import { expect } from 'chai';
import { backend as K, debugprint, definePass, dot, optimize, setEnvironment, setTrace, traceEnabled } from '../../src/index.js';
import { formatPassReport } from '../../src/passes/pass.js';
import { ConfigError } from '../../src/api/config.js';
import { traceFromEnv } from '../../src/api/trace.js';
import type { Node } from '../../src/ir/node.js';
import { topoSort } from '../../src/ir/graph.js';
import { formatProvenance, type Provenance } from '../../src/ir/provenance.js';
import { mergePass } from '../../src/passes/merge.js';
import { canonicalizePass } from '../../src/passes/canonicalize.js';
import { stabilizePass } from '../../src/passes/stabilize.js';
import { specializePass } from '../../src/passes/specialize.js';
import { constantFoldPass } from '../../src/passes/constant-fold.js';
import { scanPass } from '../../src/passes/pipeline.js';
import { fusionPass } from '../../src/passes/fusion.js';
import { cpuFusion } from '../../src/runtime/cpu/fusion.js';
import type { Pass } from '../../src/passes/pass.js';

/** The line of the caller of this function (in this file). */
function lineHere(): number {
  const frame = new Error().stack!.split('\n')[2]!;
  return Number(/:(\d+):\d+\)?$/.exec(frame)![1]);
}

const calls = (n: Node) => n.provenance.map((p) => p.call);
const sites = (n: Node) => n.provenance.map((p) => `${p.call}@${p.site?.file.replace(/^.*[\\/]/, '')}:${p.site?.line}`);
const ph = (shape: (number | null)[], name = 'x') => K.placeholder({ shape, name, dtype: 'float64' });

describe('provenance: recording', () => {
  it('records the public call and the first frame outside theanine (file, line, column)', () => {
    const x = ph([2, 3]);
    const line = lineHere(); const y = K.relu(x);
    expect(y.provenance).to.have.length(1);
    const p = y.provenance[0]!;
    expect(p.call).to.equal('K.relu');
    expect(p.site!.file).to.match(/provenance\.test\.ts$/);
    expect(p.site!.line).to.equal(line);
    expect(p.site!.column).to.be.greaterThan(1);
    expect(p.toString()).to.equal(`K.relu at provenance.test.ts:${line}`);
    expect(p.toJSON()).to.deep.include({ call: 'K.relu', line });
  });

  it('gives every primitive of a composite call one record (recorded once per outermost call)', () => {
    const x = ph([4, 5]);
    const t = ph([4, 5], 't');
    const line = lineHere(); const loss = K.categorical_crossentropy(K.softmax(x), t);
    // Constants are hash-consed across graphs: an equal constant built earlier keeps its first record.
    const inner = topoSort([loss]).filter((n) => n.inputs.length > 0);
    expect(inner.length).to.be.greaterThan(8);
    const byCall = new Map<string, Set<Provenance>>();
    for (const n of inner) for (const p of n.provenance) byCall.set(p.call, (byCall.get(p.call) ?? new Set()).add(p));
    // K.categorical_crossentropy calls K.log, K.sum... internally: they are not records of their own.
    expect([...byCall.keys()].sort()).to.deep.equal(['K.categorical_crossentropy', 'K.softmax']);
    expect(byCall.get('K.softmax')!.size).to.equal(1);
    expect(byCall.get('K.categorical_crossentropy')!.size).to.equal(1);
    for (const n of inner) expect(n.provenance[0]!.site!.line).to.equal(line);
  });

  it('records tensor methods and K calls made inside a step function (user code called back)', () => {
    const x = ph([2, 3, 4]);
    const W = K.variable(new Float64Array(16).fill(0.1) as never, 'float64', 'W');
    const w = K.reshape(W, [4, 4]);
    let stepLine = 0;
    const [, outs] = K.rnn((xt: Node, states: Node[]) => {
      stepLine = lineHere(); const h = K.tanh(K.dot(xt, w).add(states[0]!));
      return [h, [h]];
    }, x, [K.zeros([2, 4], 'float64')]);
    const body = topoSort([outs]).find((n) => n.op === 'scan')!;
    expect(calls(body)).to.deep.equal(['K.rnn']);
    const results = (body.attrs["body"] as unknown as { results: readonly Node[] }).results;
    const inner = topoSort(results).filter((n) => n.inputs.length > 0);
    expect(inner.map((n) => n.provenance[0]?.call)).to.include.members(['K.tanh', 'Tensor.add', 'K.dot']);
    for (const n of inner) expect(n.provenance[0]!.site!.line).to.equal(stepLine);
  });

  it('marks gradient nodes with K.gradients and the forward node they differentiate', () => {
    const x = ph([3]);
    const y = K.sum(K.exp(x));
    const line = lineHere(); const [g] = K.gradients(y, [x]);
    // Nodes are hash-consed: a node without x among its inputs (a constant 1) may be one an
    // earlier graph built, and keeps its first builder's record; every node that reads x is new.
    const onX = new Set([x]);
    for (const n of topoSort([g!])) if (n.inputs.some((i) => onX.has(i))) onX.add(n);
    const recs = [...onX].flatMap((n) => n.provenance).filter((p) => p.call === 'K.gradients');
    expect(recs.length).to.be.greaterThan(0);
    expect(recs.every((p) => p.site!.line === line)).to.equal(true);
    const of = new Set(recs.map((p) => p.of?.op));
    expect(of.has('exp')).to.equal(true);
    const expRec = recs.find((p) => p.of?.op === 'exp')!;
    expect(expRec.toString()).to.match(/^K\.gradients of exp_\d+ \(K\.exp at provenance\.test\.ts:\d+\) at provenance\.test\.ts:\d+$/);
    expect(expRec.toJSON().of!.provenance[0]!.call).to.equal('K.exp');
  });

  it('records nothing with tracing off (setTrace(false); THEANINE_TRACE=0 reads the same way)', () => {
    setTrace(false);
    try {
      expect(traceEnabled()).to.equal(false);
      const y = K.relu(ph([2]));
      expect(y.provenance).to.deep.equal([]);
    } finally {
      setTrace(true);
    }
    expect(K.relu(ph([2])).provenance).to.have.length(1);
  });

  it('reads THEANINE_TRACE: 0/false off, unset/1/true on, anything else a ConfigError naming the allowed values', () => {
    expect(traceFromEnv(() => '0')).to.equal(false);
    expect(traceFromEnv(() => 'false')).to.equal(false);
    expect(traceFromEnv(() => undefined)).to.equal(true);
    expect(traceFromEnv(() => '1')).to.equal(true);
    expect(() => traceFromEnv(() => 'maybe')).to.throw(ConfigError, /THEANINE_TRACE is "maybe"; allowed: "1", "true", "", "0", "false"/);
    expect(() => setTrace('no' as never)).to.throw(TypeError, /setTrace: argument on must be true or false/);
  });

  it('setEnvironment({ THEANINE_TRACE: "0" }) turns recording off, as the variable does (a page has no environment)', () => {
    try {
      setEnvironment({ THEANINE_TRACE: '0' });
      expect(K.exp(ph([2])).provenance).to.deep.equal([]);
      expect(() => setEnvironment({ THEANINE_TRACE: 'off' })).to.throw(ConfigError, /THEANINE_TRACE is "off"/);
    } finally {
      setEnvironment({ THEANINE_TRACE: undefined });
    }
    expect(K.exp(ph([2])).provenance).to.have.length(1);
  });
});

describe('provenance: debugprint', () => {
  it('appends ← call at file:line with { trace: true }, and not without', () => {
    const x = ph([2, 3]);
    const line = lineHere(); const y = K.relu(x);
    const text = debugprint(y, { trace: true });
    expect(text.split('\n')[0]).to.match(new RegExp(`^where .*← K\\.relu at provenance\\.test\\.ts:${line}$`));
    expect(text).to.match(/placeholder "x" .*← K\.placeholder at provenance\.test\.ts:\d+/);
    expect(debugprint(y)).not.to.include('←');
    expect(() => debugprint(y, { trace: 1 } as never)).to.throw(TypeError, /debugprint: option trace must be true or false/);
    expect(() => debugprint(y, { traces: true } as never)).to.throw(/debugprint: unknown option "traces"/);
  });

  it('shows the records of a compiled function\'s fused kernels', () => {
    const x = ph([2, 3]);
    const line = lineHere(); const y = K.exp(K.relu(x));
    const f = K.function([x], [y]);
    expect(debugprint(f, { trace: true }).split('\n')[0]).to.match(new RegExp(`^fused\\{.*← K\\.exp at provenance\\.test\\.ts:${line}; K\\.relu at provenance\\.test\\.ts:${line}$`));
  });
});

/** Runs one pass and returns its outputs. */
const run = (p: Pass, outs: Node[]) => p.run({ outputs: outs }).outputs;

describe('provenance: every pass keeps it', () => {
  it('merge: the reordered node keeps the record of the node it replaces', () => {
    const a = ph([3], 'a');
    const b = ph([3], 'b');
    const line = lineHere(); const y = K.add(b, a);
    const [out] = run(mergePass, [y]);
    expect(out).not.to.equal(y);
    expect(sites(out!)).to.deep.equal([`K.add@provenance.test.ts:${line}`]);
  });

  it('canonicalize: a collapsed transpose chain inherits both calls', () => {
    const x = ph([2, 3, 4]);
    const l1 = lineHere(); const t1 = K.permute_dimensions(x, [1, 0, 2]);
    const l2 = lineHere(); const t2 = K.permute_dimensions(t1, [0, 2, 1]);
    const [out] = run(canonicalizePass, [K.exp(t2)]);
    const tr = out!.inputs[0]!;
    expect(tr.op).to.equal('transpose');
    expect(tr).not.to.equal(t2);
    expect(sites(tr)).to.include.members([`K.permute_dimensions@provenance.test.ts:${l1}`, `K.permute_dimensions@provenance.test.ts:${l2}`]);
  });

  it('stabilize: log(softmax) becomes log_softmax arithmetic that names K.log and K.softmax', () => {
    const x = ph([2, 5]);
    const ls = lineHere(); const s = K.softmax(x);
    const ll = lineHere(); const y = K.log(s);
    const [out] = run(stabilizePass, [y]);
    expect(out).not.to.equal(y);
    expect(sites(out!)).to.include.members([`K.log@provenance.test.ts:${ll}`, `K.softmax@provenance.test.ts:${ls}`]);
  });

  it('specialize: pow(x, 2) as x*x keeps K.pow', () => {
    const x = ph([4]);
    const line = lineHere(); const y = K.pow(x, 2);
    const [out] = run(specializePass, [y]);
    expect(out!.op).to.equal('mul');
    expect(sites(out!)).to.deep.equal([`K.pow@provenance.test.ts:${line}`]);
  });

  it('constant_fold: the folded constant keeps the calls it was computed by', () => {
    const x = ph([2]);
    const c = K.constant([1, 2], 'float64');
    const le = lineHere(); const e = K.exp(K.sqrt(c));
    const [out] = run(constantFoldPass, [K.add(x, e)]);
    const folded = out!.inputs.find((n) => n.op === 'constant')!;
    expect(folded).not.to.equal(undefined);
    expect(sites(folded)).to.include.members([`K.exp@provenance.test.ts:${le}`, `K.sqrt@provenance.test.ts:${le}`]);
  });

  it('scan: an unrolled K.rnn keeps K.rnn and the step\'s own calls', () => {
    const x = ph([2, 3, 4]);
    let stepLine = 0;
    const line = lineHere(); const [last] = K.rnn((xt: Node, states: Node[]) => {
      stepLine = lineHere(); const h = K.tanh(K.add(xt, states[0]!));
      return [h, [h]];
    }, x, [K.zeros([2, 4], 'float64')]);
    const [out] = run(scanPass, [last]);
    const nodes = topoSort([out!]);
    expect(nodes.some((n) => n.op === 'scan')).to.equal(false); // 3 steps: unrolled
    const all = new Set(nodes.flatMap(sites));
    expect(all.has(`K.tanh@provenance.test.ts:${stepLine}`)).to.equal(true);
    expect(all.has(`K.rnn@provenance.test.ts:${line}`)).to.equal(true);
  });

  it('fusion: the fused node carries the set of its members\' records', () => {
    const x = ph([3, 4]);
    const l1 = lineHere(); const a = K.exp(x);
    const l2 = lineHere(); const b = K.sum(K.relu(a), 1);
    const [out] = run(fusionPass(cpuFusion), [b]);
    expect(out!.op).to.equal('fused');
    expect(sites(out!)).to.have.members([`K.exp@provenance.test.ts:${l1}`, `K.relu@provenance.test.ts:${l2}`, `K.sum@provenance.test.ts:${l2}`]);
    expect(formatProvenance(out!.provenance)).to.equal(`K.sum at provenance.test.ts:${l2}; K.relu at provenance.test.ts:${l2}; K.exp at provenance.test.ts:${l1}`);
  });

  it('a user pass: the replacement of a local rewrite inherits the replaced node\'s record', () => {
    const p = definePass('prov_exp_log', (n: Node) => (n.op === 'exp' && n.inputs[0]!.op === 'log' ? n.inputs[0]!.inputs[0]! : null), { before: 'fusion' });
    const x = ph([3]);
    const line = lineHere(); const y = K.exp(K.log(K.abs(x)));
    const g = optimize(y, { passes: { add: [p], remove: ['fusion', 'stabilize'] } });
    const abs = g.outputs[0]!;
    expect(abs.op).to.equal('abs');
    expect(sites(abs)).to.include.members([`K.abs@provenance.test.ts:${line}`, `K.exp@provenance.test.ts:${line}`, `K.log@provenance.test.ts:${line}`]);
  });
});

describe('provenance: pictures and pass reports', () => {
  it('DOT: each node has a tooltip naming its calls; a composite call is a named box around its primitives', () => {
    const x = ph([2, 4]);
    const t = ph([2, 4], 't');
    const line = lineHere(); const loss = K.mean(K.categorical_crossentropy(K.softmax(x), t));
    const text = dot(loss);
    expect(text).to.include(`tooltip="K.placeholder at provenance.test.ts:`);
    const box = (call: string) => {
      const start = text.indexOf(`label="${call} at provenance.test.ts:${line}"; fontname="Helvetica"; style="rounded,dotted"`);
      expect(start, `${call} box in\n${text}`).to.be.greaterThan(0);
      return text.slice(start, text.indexOf('\n  }', start));
    };
    const softmax = box('K.softmax');
    expect(softmax).to.include('exp\\n').and.to.include('sum{axes=[1], keepdims=true}');
    expect(softmax).not.to.include('log\\n');
    const cce = box('K.categorical_crossentropy');
    expect(cce).to.include('log\\n');
    // K.mean built one node: no box of its own.
    expect(text).not.to.include('label="K.mean at');
    expect(dot(loss, { calls: false })).not.to.include('style="rounded,dotted"');
    expect(() => dot(loss, { calls: 'yes' } as never)).to.throw(TypeError, /option calls must be true or false/);
  });

  it('DOT: gradient nodes are not boxed per call (the gradient box holds them)', () => {
    const x = ph([2, 3]);
    const [g] = K.gradients(K.sum(K.softmax(x)), [x]);
    const text = dot(g!);
    expect(text).not.to.match(/label="K\.gradients of [^"]*"; fontname="Helvetica"; style="rounded,dotted"/);
  });

  it('THEANINE_DEBUG=passes: a pass\'s report names the user lines of the nodes it made', () => {
    const x = ph([2, 4]);
    const line = lineHere(); const y = K.pow(K.exp(x), 2);
    const g = optimize(y, { passes: { remove: ['fusion'] } });
    const spec = g.passes.find((p) => p.name === 'specialize')!;
    expect(spec.touched!.map((p) => p.toString())).to.deep.equal([`K.pow at provenance.test.ts:${line}`]);
    expect(formatPassReport(spec, { outputs: g.outputs })).to.include(`[theanine passes] specialize touched: K.pow at provenance.test.ts:${line}`);
    expect(g.passes.find((p) => p.name === 'merge')!.touched).to.equal(undefined); // nothing to reorder
  });
});
