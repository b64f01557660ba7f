// Provenance in compiled code: kernel comments in generated source (escaped), and errors raised
// while a compiled function runs, ending with the user's call that built the failing node.
import { expect } from 'chai';
import { backend as K, defineOp } from '../../src/index.js';
import type { Node } from '../../src/ir/node.js';
import { Provenance, commentSafe, provenanceComment } from '../../src/ir/provenance.js';
import { loadGpuJs } from '../../src/runtime/gpu/gpujs.js';
import { needs } from '../helpers/needs.js';
import type { FunctionOptions } from '../../src/api/function.js';

function lineHere(): number {
  const frame = new Error().stack!.split('\n')[2]!;
  return Number(/:(\d+):\d+\)?$/.exec(frame)![1]);
}

describe('provenance: generated source', () => {
  it('a fused kernel of the cpu source has a comment naming the calls it computes', () => {
    const x = K.placeholder({ shape: [4, 5], name: 'x' });
    const l1 = lineHere(); const a = K.tanh(x);
    const l2 = lineHere(); const y = K.sum(K.square(a), 1);
    const f = K.function([x], [y]);
    const src = f.source();
    const line = src.split('\n').find((s) => s.includes('// built by'));
    expect(line, src).not.to.equal(undefined);
    for (const want of [`K.tanh at provenance.test.ts:${l1}`, `K.square at provenance.test.ts:${l2}`, `K.sum at provenance.test.ts:${l2}`]) expect(line).to.include(want);
    // The comment sits inside the kernel it names (the line after `function kN(...) {`).
    const lines = src.split('\n');
    expect(lines[lines.indexOf(line!) - 1]).to.match(/^function k\d+\(/);
  });

  it('escapes user strings: a file name with */ or a line break cannot end the comment', () => {
    const evil = new Provenance('K.exp', { stack: 'Error\n    at f (/tmp/a*/b\u2028c.js:3:4)' });
    expect(evil.site).to.deep.equal({ file: '/tmp/a*/b\u2028c.js', line: 3, column: 4 });
    const note = provenanceComment([evil])!;
    expect(note).not.to.include('*/');
    expect(note).not.to.match(/[\r\n\u2028\u2029]/);
    expect(commentSafe('a */ b /* c\nd')).to.equal('a * / b / * c d');
    const x = K.placeholder({ shape: [3], name: 'x' });
    const y = K.exp(K.sqrt(x));
    for (const n of [y, y.inputs[0]!]) (n as { provenance: readonly Provenance[] }).provenance = [evil];
    const f = K.function([x], [y]);
    expect(f.source()).to.include('// built by K.exp at b');
    expect(f.source()).not.to.include('a*/b');
    expect(f.source()).not.to.include('\u2028');
    expect(Array.from(f([[1, 4, 9]])[0]!.data as Float32Array).map((v) => Math.round(Math.log(v)))).to.deep.equal([1, 2, 3]); // the source still runs
  });

  it('an exported module names the calls per step', () => {
    const x = K.placeholder({ shape: [2, 3], name: 'x' });
    const line = lineHere(); const y = K.softmax(x);
    const mod = K.function([x], [y]).exportModule({ name: 'prov' });
    expect(mod.source).to.include(`// built by K.softmax at provenance.test.ts:${line}`);
  });
});

/** gather rows 1 and 7 of a 4-row table: index 7 is out of range when the function runs. */
function gatherOutOfRange(opts: FunctionOptions): { err: Error; line: number } {
  const ids = K.placeholder({ shape: [2], dtype: 'int32', name: 'ids' });
  const E = K.variable(new Float32Array(12).fill(0.5) as never, 'float32', 'E');
  const table = K.reshape(E, [4, 3]);
  const line = lineHere(); const rows = K.gather(table, ids);
  const f = K.function([ids], [K.exp(rows as Node)], [], opts);
  try {
    f([[1, 7]]);
  } catch (e) {
    return { err: e as Error, line };
  }
  throw new Error('the call did not fail');
}

function expectBuiltBy(err: Error, call: string, line: number): void {
  const lines = err.message.split('\n');
  expect(lines[lines.length - 1]).to.equal(`built by ${call} at provenance.test.ts:${line}`);
  expect(String(err.stack)).to.include(`built by ${call} at provenance.test.ts:${line}`);
}

describe('provenance: errors at call time end with "built by"', () => {
  it('cpu: a gather index out of range inside a kernel', () => {
    const { err, line } = gatherOutOfRange({ device: 'cpu' });
    expect(err.message).to.match(/gather: index 7 is out of range/);
    expectBuiltBy(err, 'K.gather', line);
  });

  it('gpu: the same gather, checked on the host before the kernel runs', function () {
    needs(this, 'gpu.js', loadGpuJs() instanceof Error ? 'gpu.js is not installed' : undefined);
    const { err, line } = gatherOutOfRange({ device: 'gpu' });
    expect(err.message).to.match(/gather: index 7 is out of range/);
    expectBuiltBy(err, 'K.gather', line);
  });

  it('tensorflow: the same gather, op by op on TensorFlow.js', () => {
    const { err, line } = gatherOutOfRange({ backend: 'tensorflow' });
    expect(err.message).to.match(/index 7 is out of range/);
    expectBuiltBy(err, 'K.gather', line);
  });

  for (const [name, opts] of [['cpu', { device: 'cpu' }], ['gpu', { device: 'gpu' }], ['tensorflow', { backend: 'tensorflow' }]] as const) {
    it(`${name}: a value whose shape contradicts the placeholder names where the placeholder was made`, function () {
      if (name === 'gpu') needs(this, 'gpu.js', loadGpuJs() instanceof Error ? 'gpu.js is not installed' : undefined);
      const line = lineHere(); const x = K.placeholder({ shape: [null, 3], name: 'x' });
      const f = K.function([x], [K.relu(x)], [], opts);
      let err: Error | undefined;
      try { f([[[1, 2]]]); } catch (e) { err = e as Error; }
      expect(err?.message).to.match(/does not fit the placeholder's shape \(None, 3\)/);
      expectBuiltBy(err!, 'K.placeholder', line);
    });
  }

  it('an error is annotated once, by the innermost step (a Scan body\'s step, not the Scan)', () => {
    const table = K.reshape(K.variable(new Float32Array(8).fill(1) as never, 'float32', 'T'), [4, 2]);
    let line = 0;
    // map_fn is a Scan: its body is a program of its own, run inside the outer one.
    const x = K.placeholder({ shape: [3, 2], dtype: 'int32', name: 'rows' });
    const mapped = K.map_fn((row: Node) => { line = lineHere(); return K.sum(K.gather(table, row), 0); }, x);
    const f = K.function([x], [mapped]);
    let err: Error | undefined;
    try { f([[[0, 1], [2, 9], [1, 1]]]); } catch (e) { err = e as Error; }
    expect(err?.message).to.match(/index 9 is out of range/);
    const built = err!.message.split('\n').filter((l) => l.startsWith('built by'));
    expect(built).to.have.length(1);
    expect(built[0]).to.match(new RegExp(`^built by K\\.gather at provenance\\.test\\.ts:${line}(; |$)`));
  });
});

describe('provenance: errors while a function is built', () => {
  it('fallback "error" refusing an extern step names the user op call behind it', () => {
    const op = defineOp({
      name: 'prov_no_template',
      infer: (ts) => ts[0]!,
      reference: (xs) => xs[0]!,
    });
    const x = K.placeholder({ shape: [3], name: 'x' });
    const line = lineHere(); const y = op(x);
    expect(y.provenance.map((p) => p.toString())).to.deep.equal([`prov_no_template at provenance.test.ts:${line}`]);
    const f = K.function([x], [K.exp(y)], [], { fallback: 'error' });
    let err: Error | undefined;
    try { f([[1, 2, 3]]); } catch (e) { err = e as Error; }
    expect(err?.name).to.equal('FallbackError');
    expectBuiltBy(err!, 'prov_no_template', line);
  });
});
