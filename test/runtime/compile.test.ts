// The compiled executor behind K.function: caching, variables, updates, generated-source safety,
// debugging aids, and the paths that fall back to the reference implementations.
import { expect } from 'chai';
import { backend as K, debugprint, NDArray } from '../../src/index.js';
import { defineOp } from '../../src/api/extend.js';
import { apply } from '../../src/ir/build.js';
import { clearCompileCache, compileStats, compileTimes, setDebugSink } from '../../src/runtime/cpu/compile.js';
import { expectClose } from '../helpers/assert.js';

const arr = (shape: number[], f: (i: number) => number = (i) => i * 0.25 - 1) =>
  new NDArray(Float32Array.from({ length: shape.reduce((p, d) => p * d, 1) }, (_, i) => f(i)), shape);

function mlp(batch: number | null) {
  const x = K.placeholder([batch, 3], null, 'float32', false, 'x');
  const W = K.variable(arr([3, 2]), 'float32', 'W');
  const b = K.variable(arr([2], (i) => i), 'float32', 'b');
  return { x, W, b, y: K.relu(K.dot(x, W).add(b)) };
}

describe('runtime/compile', () => {
  beforeEach(() => clearCompileCache());

  it('compiling the same graph again hits the cache', () => {
    const { x, y } = mlp(4);
    K.function([x], [y])([arr([4, 3])]);
    const before = { ...compileStats };
    const f = K.function([x], [y]);
    f([arr([4, 3])]);
    expect(compileStats).to.deep.equal(before);
  });

  it('a rebuilt graph (new placeholders and variables, same structure) reuses the compiled code', () => {
    const a = mlp(4);
    K.function([a.x], [a.y])([arr([4, 3])]);
    const before = { ...compileStats };
    const b = mlp(4);
    K.set_value(b.W, arr([3, 2], () => 1));
    const got = K.function([b.x], [b.y])([arr([4, 3], () => 1)])[0]!;
    expect(compileStats).to.deep.equal(before);
    // ...but reads the new variables: relu(sum of three ones + b)
    expectClose(got, [[3, 4], [3, 4], [3, 4], [3, 4]]);
  });

  it('a new batch size reuses the optimized graph and compiles only new source', () => {
    const { x, y } = mlp(null);
    const f = K.function([x], [y]);
    f([arr([4, 3])]);
    const before = { ...compileStats };
    f([arr([7, 3])]);
    expect(compileStats.programs).to.equal(before.programs);
    expect(compileStats.specializations).to.equal(before.specializations + 1);
    f([arr([4, 3])]);
    expect(compileStats.specializations).to.equal(before.specializations + 1);
  });

  it('reads variables at call time', () => {
    const { x, W, y } = mlp(2);
    const f = K.function([x], [y]);
    const one = arr([2, 3], () => 1);
    const first = f([one])[0]!.toArray();
    K.set_value(W, arr([3, 2], () => 2));
    expect(f([one])[0]!.toArray()).to.not.deep.equal(first);
    expectClose(f([one])[0]!, [[6, 7], [6, 7]]);
  });

  it('computes every output from the old values, then writes all updates (SPEC §3)', () => {
    const a = K.variable(1, 'float32', 'a');
    const b = K.variable(10, 'float32', 'b');
    const f = K.function([], [a.add(b)], [K.update(a, b), K.update(b, a)]);
    expect(f([])[0]!.item()).to.equal(11);
    expect([K.get_value(a).item(), K.get_value(b).item()]).to.deep.equal([10, 1]);
  });

  it('a failed call changes no variable', () => {
    const acc = K.variable([0, 0], 'float32');
    const inc = K.placeholder([null], null, 'float32');
    const f = K.function([inc], [acc], [K.update_add(acc, inc)]);
    f([arr([2], () => 1)]);
    expect(() => f([arr([3], () => 1)])).to.throw();
    expect(K.get_value(acc).toArray()).to.deep.equal([1, 1]);
  });

  it('results are the caller\'s own arrays: no aliasing of inputs, variables or each other', () => {
    const x = K.placeholder([3], null, 'float32');
    const v = K.variable([1, 2, 3], 'float32');
    const f = K.function([x], [x, v, v]);
    const xin = arr([3]);
    const [ox, ov1, ov2] = f([xin]);
    ox!.data[0] = 99;
    ov1!.data[0] = 99;
    expect(xin.data[0]).to.equal(-1);
    expect(K.get_value(v).toArray()).to.deep.equal([1, 2, 3]);
    expect(ov2!.toArray()).to.deep.equal([1, 2, 3]);
  });

  it('an op without a template runs its reference implementation inside the compiled function', () => {
    const passThrough = defineOp({
      name: 'compile_test_pass_through',
      infer: ([t]) => ({ dtype: t!.dtype, shape: t!.shape }),
      reference: ([v]) => v!, // returns its input: the compiled function must not hand that array out
      arity: 1,
    });
    const x = K.placeholder([3], null, 'float32');
    const f = K.function([x], [K.exp(passThrough(K.negative(x))), passThrough(x)]);
    const xin = arr([3]);
    const [e, p] = f([xin]);
    expectClose(e!, [Math.exp(1), Math.exp(0.75), Math.exp(0.5)], { rtol: 1e-6 });
    p!.data[1] = 42;
    expect(xin.data[1]).to.equal(-0.75);
    expect(f.source()).to.include('extern compile_test_pass_through');
  });

  it('user strings never reach generated source unescaped', () => {
    const hostile = '"; }); throw new Error("pwned"); //\u2028*/ ${x} \\';
    const x = K.placeholder([2], null, 'float32', false, hostile);
    const v = K.variable([1, 2], 'float32', hostile);
    const f = K.function([x], [K.print_tensor(x.add(v), hostile).mul(2)]);
    const logged: string[] = [];
    const orig = console.log;
    console.log = (m: string) => { logged.push(m); };
    try {
      expectClose(f([arr([2], () => 1)])[0]!, [4, 6]);
    } finally {
      console.log = orig;
    }
    const src = f.source();
    expect(src).to.not.include('pwned');
    expect(src).to.not.include('\u2028');
    expect(logged.join('\n')).to.include(hostile);
  });

  it('op names in comments are reduced to safe characters', () => {
    const x = K.placeholder([2], null, 'float32');
    const f = K.function([x], [K.exp(x)]);
    f([arr([2])]);
    for (const line of f.source().split('\n')) {
      const c = line.indexOf('//');
      if (c >= 0) expect(line.slice(c + 2)).to.match(/^[A-Za-z0-9_,.:=()[\] x+-]*$/);
    }
  });

  it('f.source() shows generated loops; optimizer none says it interprets', () => {
    const x = K.placeholder([5], null, 'float32');
    expect(K.function([x], [K.exp(x)]).source()).to.include('for (let');
    expect(K.function([x], [K.exp(x)], [], { optimizer: 'none' }).source()).to.include('reference interpreter');
    const y = K.placeholder([null], null, 'float32');
    expect(K.function([y], [K.exp(y)]).source()).to.include('call the function once');
  });

  it('debugprint of a compiled function shows fused kernels as one node; fast_compile fuses nothing', () => {
    const x = K.placeholder([4], null, 'float32');
    const out = K.sum(K.exp(x.mul(2)));
    expect(debugprint(K.function([x], [out]))).to.match(/^fused\{mul,exp,sum\}/);
    expect(debugprint(K.function([x], [out], [], { optimizer: 'fast_compile' }))).to.not.include('fused');
  });

  it('THEANINE_DEBUG=passes prints each pass with its time, node counts and graph', () => {
    const out: string[] = [];
    setDebugSink((t) => out.push(t));
    const saved = process.env['THEANINE_DEBUG'];
    process.env['THEANINE_DEBUG'] = 'passes';
    try {
      const x = K.placeholder([4], null, 'float32');
      K.function([x], [K.log(x.add(0).add(1))]);
    } finally {
      if (saved === undefined) delete process.env['THEANINE_DEBUG']; else process.env['THEANINE_DEBUG'] = saved;
      setDebugSink(undefined);
    }
    const text = out.join('');
    for (const p of ['merge', 'canonicalize', 'stabilize', 'specialize', 'scan', 'fusion']) expect(text).to.match(new RegExp(`\\[theanine passes\\] ${p}: [0-9.]+ ms, \\d+ -> \\d+ nodes`));
    expect(text).to.include('log1p');
  });

  it('THEANINE_DEBUG=passes prints each new specialisation\'s compile phases after its first run (compileTimes has them)', () => {
    const out: string[] = [];
    setDebugSink((t) => out.push(t));
    const saved = process.env['THEANINE_DEBUG'];
    process.env['THEANINE_DEBUG'] = 'passes';
    try {
      const x = K.placeholder([null, 12, 3], null, 'float32');
      const [, outs] = K.rnn((xt, [h]) => { const hn = K.tanh(xt.add(h!)); return [hn, [hn]]; }, x, [K.sum(K.zeros_like(x), 1)]);
      const f = K.function([x], [K.sum(outs)]);
      f([arr([2, 12, 3], (i) => i / 100)]);
      f([arr([2, 12, 3], (i) => i / 50)]); // same shapes: no new line
      f([arr([4, 12, 3], (i) => i / 50)]); // another batch: another specialisation
    } finally {
      if (saved === undefined) delete process.env['THEANINE_DEBUG']; else process.env['THEANINE_DEBUG'] = saved;
      setDebugSink(undefined);
    }
    const lines = out.join('').split('\n').filter((l) => l.startsWith('[theanine compile]'));
    expect(lines).to.have.length(2);
    expect(lines[0]).to.match(/^\[theanine compile\] specialisation for \(2, 12, 3\): scan bodies' passes [0-9.]+ ms, lowering [0-9.]+ ms, buffer plan [0-9.]+ ms, code generation [0-9.]+ ms, first run [0-9.]+ ms$/);
    expect(lines[1]).to.include('(4, 12, 3)');
    for (const k of ['passes', 'bodyPasses', 'lower', 'plan', 'render', 'firstRun'] as const) expect(compileTimes[k]).to.be.a('number').and.to.be.at.least(0);
    expect(compileTimes.firstRun).to.be.greaterThan(0);
  });

  it('THEANINE_DEBUG=kernels times every step of a call, a Scan body\'s steps under its loop (summed over the loop)', () => {
    const out: string[] = [];
    setDebugSink((t) => out.push(t));
    const saved = process.env['THEANINE_DEBUG'];
    process.env['THEANINE_DEBUG'] = 'kernels';
    try {
      clearCompileCache();
      const x = K.placeholder([2, 12, 3], null, 'float32');
      const [, outs] = K.rnn((xt, [h]) => { const hn = K.tanh(xt.mul(h!).add(1)); return [hn, [hn]]; }, x, [K.sum(K.zeros_like(x), 1)]);
      const f = K.function([x], [K.sum(K.exp(outs))]);
      f([arr([2, 12, 3], (i) => i / 100)]);
    } finally {
      if (saved === undefined) delete process.env['THEANINE_DEBUG']; else process.env['THEANINE_DEBUG'] = saved;
      setDebugSink(undefined);
      clearCompileCache();
    }
    const lines = out.join('').split('\n').filter((l) => l.startsWith('[theanine kernels]'));
    const scan = lines.findIndex((l) => /^\[theanine kernels\] +[0-9.]+ ms {2}scan body s0: /.test(l));
    expect(scan, lines.join('\n')).to.be.at.least(0);
    // the body's own steps follow their loop's row, indented and named by the body
    expect(lines[scan + 1], lines.join('\n')).to.match(/^\[theanine kernels\] +[0-9.]+ ms {4}s0: .*tanh/);
    expect(lines.some((l) => /ms {2}[a-z_,]*exp/.test(l)), lines.join('\n')).to.equal(true);
  });

  it('reads the learning phase at call time', () => {
    const x = K.placeholder([2], null, 'float32');
    const f = K.function([x], [K.in_train_phase(x.mul(2), x)]);
    K.set_learning_phase(0);
    expect(f([arr([2], () => 1)])[0]!.toArray()).to.deep.equal([1, 1]);
    K.set_learning_phase(1);
    expect(f([arr([2], () => 1)])[0]!.toArray()).to.deep.equal([2, 2]);
    K.set_learning_phase(0);
  });

  it('random draws: a seed gives the reference numbers; no seed draws afresh each call', () => {
    const x = K.placeholder([null, 3], null, 'float32');
    const seeded = K.random_normal(K.shape(x), 0, 1, 'float32', 7).add(x);
    const want = K.function([x], [seeded], [], { optimizer: 'none' })([arr([2, 3], () => 0)])[0]!;
    expectClose(K.function([x], [seeded])([arr([2, 3], () => 0)])[0]!, want, { atol: 0, rtol: 0 });
    const f = K.function([x], [K.random_uniform(K.shape(x)).add(x)]);
    expect(f([arr([2, 3], () => 0)])[0]!.toArray()).to.not.deep.equal(f([arr([2, 3], () => 0)])[0]!.toArray());
  });

  it('a shape known only from input values runs the reference interpreter on the optimized graph', () => {
    const n = K.placeholder([], null, 'int32');
    const r = apply('random_uniform', [n], { shape: [null], dtype: 'float32', seed: 3, uid: null, low: 0, high: 1 });
    const f = K.function([n], [r.mul(2)]);
    const got = f([new NDArray([4], [], 'int32')])[0]!;
    expect(got.shape).to.deep.equal([4]);
    expect(f.source()).to.include('reference interpreter');
    expectClose(got, K.function([n], [r.mul(2)], [], { optimizer: 'none' })([new NDArray([4], [], 'int32')])[0]!);
  });

  it('runtime shape errors read as the reference interpreter\'s', () => {
    const a = K.placeholder([null], null, 'float32');
    const b = K.placeholder([null], null, 'float32');
    const f = K.function([a, b], [a.add(b)]);
    expect(() => f([arr([2]), arr([3])])).to.throw(/cannot be broadcast/);
  });
});

describe('runtime/compile: twins', () => {
  it('debugprint of a function sharing a twin\'s program names its own placeholders and variables', () => {
    const build = (tag: string) => {
      const x = K.placeholder([2, 3], null, 'float32', false, `x_${tag}`);
      const W = K.variable(arr([3, 2]), 'float32', `W_${tag}`);
      return K.function([x], [K.relu(K.dot(x, W))]);
    };
    const a = build('first');
    const b = build('second');
    expect(debugprint(a)).to.include('W_first').and.not.include('W_second');
    expect(debugprint(b)).to.include('W_second').and.include('x_second').and.not.include('W_first');
  });
});
