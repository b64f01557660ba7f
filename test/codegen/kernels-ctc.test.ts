// ctc_loss and ctc_loss_grad as loop kernels (src/codegen/lower/ctc.ts): compiled code with no
// extern step, the reference interpreter's numbers bit for bit on cpu (the kernels do the
// reference's operations in its order), closed forms of 1-, 2- and 3-step cases computed by hand,
// central finite differences, the reference's errors, the gpu device within float32 tolerances,
// and exportModule (same numbers in the standalone module, its RangeError for bad lengths).
import { expect } from 'chai';
import { backend as K, NDArray, ValueError } from '../../src/index.js';
import type { Tensor } from '../../src/index.js';
import { loadGpuJs } from '../../src/runtime/gpu/gpujs.js';
import { expectClose } from '../helpers/assert.js';
import { emptyFolder, runCalls, typecheck, writeModules } from '../helpers/exported.js';
import { needs } from '../helpers/needs.js';

const COMPILED = [{ optimizer: 'fast_run', device: 'cpu' }, { optimizer: 'fast_compile', device: 'cpu' }] as const;
const NO_FALLBACK = { fallback: { mode: 'error' } } as const;

interface Case { labels: number[][]; probs: number[][][]; il: number[]; ll: number[] }

/** ctc_batch_cost and its gradient with respect to y_pred (weighted per sample), as placeholders. */
function graph(c: Case, dtype: 'float32' | 'float64' = 'float64'): { inputs: Tensor[]; outputs: Tensor[]; feed: NDArray[] } {
  const B = c.probs.length;
  const T = c.probs[0]!.length;
  const C = c.probs[0]![0]!.length;
  const L = c.labels[0]!.length;
  const yp = K.placeholder([B, T, C], null, dtype, false, 'yp');
  const yt = K.placeholder([B, L], null, 'int32', false, 'yt');
  const il = K.placeholder([B, 1], null, 'int32', false, 'il');
  const ll = K.placeholder([B, 1], null, 'int32', false, 'll');
  const loss = K.ctc_batch_cost(yt, yp, il, ll);
  const w = K.constant(NDArray.from(Array.from({ length: B }, (_, b) => [1 + b / 2]), dtype), dtype);
  const [g] = K.gradients(K.sum(loss.mul(w)), [yp]);
  const feed = [
    NDArray.from(c.probs, dtype),
    new NDArray(Int32Array.from(c.labels.flat()), [B, L], 'int32'),
    new NDArray(Int32Array.from(c.il), [B, 1], 'int32'),
    new NDArray(Int32Array.from(c.ll), [B, 1], 'int32'),
  ];
  return { inputs: [yp, yt, il, ll], outputs: [loss, g!], feed };
}

/** Deterministic probabilities in (0.05, 1.05), not normalised (ctc_batch_cost renormalises). */
const probsOf = (B: number, T: number, C: number, seed: number) =>
  Array.from({ length: B }, (_, b) => Array.from({ length: T }, (_, t) => Array.from({ length: C }, (_, c) => 0.05 + Math.abs(Math.sin(seed + 1.7 * ((b * T + t) * C + c))))));

/** Repeated symbols, a label of length 0, an input too short for its label, padding of -1 and of junk, an input_length of 0. */
const EDGES: Case = {
  labels: [[0, 0, 1, 1], [2, 1, 2, -1], [3, 7, -1, -1], [1, 1, 1, 0], [0, 1, 2, 3], [-1, -1, -1, -1], [2, 2, -1, -1]],
  probs: probsOf(7, 6, 5, 0.3),
  // sample 3 needs 6 steps for 1 1 1 0 (1 b 1 b 1 0: blanks between repeats) and has 5; sample 6 needs 3 for 2 2 and has 2
  il: [6, 5, 4, 5, 6, 0, 2],
  ll: [4, 3, 0, 4, 2, 0, 2],
};

const KERAS: Case = {
  // Keras' backend test (TensorFlow's losses 3.34211 and 5.42262)
  labels: [[0, 1, 2, 1, 0], [0, 1, 1, 0, -1]],
  probs: [
    [[0.633766, 0.221185, 0.0917319, 0.0129757, 0.0142857, 0.0260553], [0.111121, 0.588392, 0.278779, 0.0055756, 0.00569609, 0.010436],
      [0.0357786, 0.633813, 0.321418, 0.00249248, 0.00272882, 0.0037688], [0.0663296, 0.643849, 0.280111, 0.00283995, 0.0035545, 0.00331533],
      [0.458235, 0.396634, 0.123377, 0.00648837, 0.00903441, 0.00623107]],
    [[0.30176, 0.28562, 0.0831517, 0.0862751, 0.0816851, 0.161508], [0.24082, 0.397533, 0.0557226, 0.0546814, 0.0557528, 0.19549],
      [0.230246, 0.450868, 0.0389607, 0.038309, 0.0391602, 0.202456], [0.280884, 0.429522, 0.0326593, 0.0339046, 0.0326856, 0.190345],
      [0.423286, 0.315517, 0.0338439, 0.0393744, 0.0339315, 0.154046]],
  ],
  il: [5, 5],
  ll: [5, 4],
};

/**
 * The greedy decoder's kernel output, padded to the time steps: K.ctc_decode's labels are that cut
 * to the longest decoding (ctc_trim, data-dependent, so the function around it is interpreted).
 */
const padded = (d: Tensor): Tensor => (d.op === 'ctc_trim' ? d.inputs[0]! : d);

/** Keras 1's Theano CTC helpers (ctc_path_probs of an interleaved label and its mask, ctc_cost, one ctc_update_log_p step) and a greedy ctc_decode. */
function theano(): { inputs: Tensor[]; outputs: Tensor[]; feed: NDArray[] } {
  const pr = K.placeholder([5, 4], null, 'float32', false, 'pr');
  const y = K.placeholder([3], null, 'int32', false, 'y');
  const [lp, mask] = K.ctc_path_probs(pr, K.ctc_interleave_blanks(y));
  const zeros = K.zeros([7], 'float32');
  const [a1, p1] = K.ctc_update_log_p(K.constant([1, 3], 'int64'), zeros, 2, K.log(K.slice(K.reshape(pr, [-1]), [0], [7])), K.log(K.slice(K.reshape(pr, [-1]), [7], [7])));
  return {
    inputs: [pr, y],
    outputs: [lp!, mask!, K.ctc_cost(pr, y), a1!, p1!, ...((([[d], s]) => [padded(d!), s])(K.ctc_decode(K.reshape(pr, [1, 5, 4]), K.constant([4], 'int32'), true)))],
    feed: [new NDArray(Float32Array.from({ length: 20 }, (_, i) => 0.1 + Math.abs(Math.cos(i * 0.9))), [5, 4]), new NDArray(Int32Array.from([2, 2, 0]), [3], 'int32')],
  };
}

const bits = (a: NDArray) => Array.from(a.data, (v) => (Object.is(v, -0) ? '-0' : String(v)));

describe('ctc_loss and ctc_loss_grad as kernels', () => {
  it('compile with no extern step and give the reference numbers bit for bit (float64 and float32, edge cases)', () => {
    for (const [c, dtype] of [[EDGES, 'float64'], [EDGES, 'float32'], [KERAS, 'float32']] as const) {
      const g = graph(c, dtype);
      const want = K.function(g.inputs, g.outputs, [], { optimizer: 'none' })(g.feed);
      for (const o of COMPILED) {
        const f = K.function(g.inputs, g.outputs, [], { ...o, ...NO_FALLBACK });
        const src = f.source();
        expect(src, o.optimizer).not.to.match(/extern|not compiled/);
        expect(src, o.optimizer).to.match(/ctc_loss:alpha/);
        expect(src, o.optimizer).to.match(/ctc_loss_grad:beta/);
        // the loss and its gradient share the check, extend and alpha kernels
        expect(src.match(/\/\/ ctc_loss(_grad)?:alpha/g), o.optimizer).to.have.length(1);
        f(g.feed).forEach((r, k) => {
          expect(r.dtype, `${dtype} ${o.optimizer} output ${k}`).to.equal(want[k]!.dtype);
          expect(bits(r), `${dtype} ${o.optimizer} output ${k}`).to.deep.equal(bits(want[k]!));
        });
      }
    }
  });

  it('edge cases: inf where the input is too short (zero gradient), 0 for an empty label over no steps, TensorFlow\'s Keras numbers', () => {
    const g = graph(EDGES);
    const [loss, grad] = K.function(g.inputs, g.outputs, [], NO_FALLBACK)(g.feed);
    const l = Array.from(loss!.data);
    expect(l[3]).to.equal(Infinity);
    expect(l[6]).to.equal(Infinity);
    expect(l[5]).to.equal(0); // P(empty label | no steps) = 1
    expect(l.filter((_v, b) => b !== 3 && b !== 6 && b !== 5).every((v) => Number.isFinite(v) && v > 0)).to.equal(true);
    const per = 6 * 5;
    for (const b of [3, 5, 6]) expect(Array.from(grad!.data.subarray(b * per, (b + 1) * per)).every((v) => v === 0), `sample ${b}`).to.equal(true);
    // zero past input_length (sample 2 runs 4 of 6 steps)
    expect(Array.from(grad!.data.subarray(2 * per + 4 * 5, 3 * per)).every((v) => v === 0)).to.equal(true);
    const k = graph(KERAS, 'float32');
    const [kl] = K.function(k.inputs, k.outputs, [], NO_FALLBACK)(k.feed);
    expectClose(kl!, [[3.34211], [5.42262]], { atol: 1e-4, rtol: 0 }, 'TensorFlow\'s losses (Keras backend test)');
  });

  it('matches closed forms of 1-, 2- and 3-step cases (rtol 1e-12)', () => {
    const eps = K.epsilon();
    const norm = (p: number[]) => { const z = p.reduce((s, v) => s + v + eps, 0); return p.map((v) => (v + eps) / z); };
    const p0 = [0.6, 0.3, 0.1]; // classes 0, 1, blank 2
    const p1 = [0.2, 0.5, 0.3];
    const p2 = [0.7, 0.1, 0.2];
    const [q0, q1, q2] = [norm(p0), norm(p1), norm(p2)];
    const cases: { c: Case; want: number[] }[] = [
      // one step, label [0]: the one path is 0
      { c: { labels: [[0, -1]], probs: [[p0]], il: [1], ll: [1] }, want: [-Math.log(q0[0]!)] },
      // two steps, label [1]: paths 1 1, 1 b, b 1
      { c: { labels: [[1, -1]], probs: [[p0, p1]], il: [2], ll: [1] }, want: [-Math.log(q0[1]! * q1[1]! + q0[1]! * q1[2]! + q0[2]! * q1[1]!)] },
      // label [0, 0] needs a blank between: over three steps only 0 b 0; over two, no path (inf)
      { c: { labels: [[0, 0]], probs: [[p0, p1, p2]], il: [3], ll: [2] }, want: [-Math.log(q0[0]! * q1[2]! * q2[0]!)] },
      { c: { labels: [[0, 0]], probs: [[p0, p1, p2]], il: [2], ll: [2] }, want: [Infinity] },
      // label [0, 1] over three steps: 0 0 1, 0 1 1, 0 b 1, 0 1 b, b 0 1
      { c: { labels: [[0, 1]], probs: [[p0, p1, p2]], il: [3], ll: [2] },
        want: [-Math.log(q0[0]! * (q1[0]! * q2[1]! + q1[1]! * q2[1]! + q1[2]! * q2[1]! + q1[1]! * q2[2]!) + q0[2]! * q1[0]! * q2[1]!)] },
      // empty label over two steps: b b
      { c: { labels: [[0, 1]], probs: [[p0, p1, p2]], il: [2], ll: [0] }, want: [-Math.log(q0[2]! * q1[2]!)] },
    ];
    for (const { c, want } of cases) {
      const g = graph(c);
      const [loss] = K.function(g.inputs, g.outputs, [], NO_FALLBACK)(g.feed);
      if (want[0] === Infinity) expect(loss!.data[0]).to.equal(Infinity);
      else expectClose(loss!, [want], { atol: 0, rtol: 1e-12 }, JSON.stringify(c.labels));
    }
    // one step: d(-log q0[0]) / dp_c = -[c = 0] / (p_c + eps) + 1 / sum(p + eps)
    const g = graph({ labels: [[0]], probs: [[p0]], il: [1], ll: [1] });
    const [, grad] = K.function(g.inputs, g.outputs, [], NO_FALLBACK)(g.feed);
    const z = p0.reduce((s, v) => s + v + eps, 0);
    expectClose(grad!, [[p0.map((v, c) => (c === 0 ? -1 / (v + eps) : 0) + 1 / z)]], { atol: 0, rtol: 1e-12 }, 'one-step gradient');
  });

  it('the compiled gradient matches central finite differences of the compiled loss (float64, h = 1e-6, atol 1e-6 + rtol 1e-5)', () => {
    const c: Case = { labels: [[0, 0, 1], [2, 1, -1], [1, -1, -1]], probs: probsOf(3, 5, 4, 1.1), il: [5, 4, 3], ll: [3, 2, 0] };
    const g = graph(c);
    const f = K.function(g.inputs, g.outputs, [], NO_FALLBACK);
    const [, grad] = f(g.feed);
    const base = g.feed[0]!;
    const weighted = (p: NDArray) => Array.from(f([p, ...g.feed.slice(1)])[0]!.data).reduce((s, v, b) => s + v * (1 + b / 2), 0);
    const h = 1e-6;
    const fd = Array.from(base.data, (_, i) => {
      const up = Float64Array.from(base.data); up[i] = up[i]! + h;
      const dn = Float64Array.from(base.data); dn[i] = dn[i]! - h;
      return (weighted(new NDArray(up, base.shape, 'float64')) - weighted(new NDArray(dn, base.shape, 'float64'))) / (2 * h);
    });
    expectClose(grad!, new NDArray(Float64Array.from(fd), base.shape, 'float64'), { atol: 1e-6, rtol: 1e-5 }, 'finite differences');
  });

  it('bad lengths and labels are the reference\'s ValueError, in its words, before anything is stored', () => {
    const base = { labels: [[0, 1]], probs: probsOf(1, 3, 4, 0.5) };
    const bad: [Case, RegExp][] = [
      [{ ...base, il: [4], ll: [2] }, /ctc_loss: sample 0: input_length 4 is outside 0\.\.3 \(the time steps of y_pred\)/],
      [{ ...base, il: [3], ll: [3] }, /ctc_loss: sample 0: label_length 3 is outside 0\.\.2 \(the width of the labels\)/],
      [{ ...base, labels: [[0, 3]], il: [3], ll: [2] }, /ctc_loss: sample 0: label 3 at position 1 is not a class in 0\.\.2 \(class 3 is the blank; -1 pads labels only past label_length\)/],
    ];
    for (const [c, msg] of bad) {
      const g = graph(c);
      for (const o of [{ optimizer: 'none' }, ...COMPILED] as const) {
        const f = K.function(g.inputs, [g.outputs[0]!], [], o);
        expect(() => f(g.feed), `${o.optimizer} ${msg}`).to.throw(ValueError, msg);
      }
      // the gradient alone checks too, naming its op
      const fg = K.function(g.inputs, [g.outputs[1]!], [], NO_FALLBACK);
      expect(() => fg(g.feed)).to.throw(ValueError, new RegExp(msg.source.replace('ctc_loss', 'ctc_loss_grad')));
    }
  });

  it('ctc_interleave_blanks is a kernel: [-1, y0, -1, y1, ..., -1] for int8, int32 and int64 labels, and for an empty one', () => {
    for (const [dtype, ys] of [['int32', [4, 0, 4]], ['int8', [-3, 7]], ['int64', [2 ** 40, 5]], ['int32', []]] as const) {
      const y = K.placeholder([ys.length], null, dtype, false, 'y');
      const feed = [NDArray.from([...ys], dtype)];
      const want = K.function([y], [K.ctc_interleave_blanks(y)], [], { optimizer: 'none' })(feed)[0]!;
      expect(want.toArray()).to.deep.equal([-1, ...ys.flatMap((v) => [v, -1])]);
      for (const o of COMPILED) {
        const f = K.function([y], [K.ctc_interleave_blanks(y).mul(1)], [], { ...o, ...NO_FALLBACK });
        expect(f.source(), `${dtype} ${o.optimizer}`).not.to.match(/extern|not compiled/);
        const got = f(feed)[0]!;
        expect(got.dtype).to.equal(dtype);
        expect(got.toArray(), `${dtype} ${o.optimizer}`).to.deep.equal(want.toArray());
      }
    }
  });

  it('the Theano helpers ctc_path_probs (so K.ctc_cost) and ctc_update_log_p are kernels with the reference\'s numbers bit for bit', () => {
    const pr = K.placeholder([6, 5], null, 'float64', false, 'pr');
    const y = K.placeholder([4], null, 'int32', false, 'y');
    const [lp, mask] = K.ctc_path_probs(pr, K.ctc_interleave_blanks(y), 1e-3);
    const [lp32] = K.ctc_path_probs(K.cast(pr, 'float32'), K.ctc_interleave_blanks(y));
    const outs = [lp, mask, lp32!, K.ctc_cost(pr, y)];
    const probs = new NDArray(Float64Array.from({ length: 30 }, (_, i) => 0.05 + Math.abs(Math.sin(i * 1.3))), [6, 5], 'float64');
    // repeats (no skip between them), a label using every class, and one too long for the steps
    for (const label of [[0, 0, 3, 1], [3, 2, 1, 0], [1, 1, 1, 1]]) {
      const feed = [probs, new NDArray(Int32Array.from(label), [4], 'int32')];
      const want = K.function([pr, y], outs, [], { optimizer: 'none' })(feed);
      for (const o of COMPILED) {
        const f = K.function([pr, y], outs, [], { ...o, ...NO_FALLBACK });
        expect(f.source(), `${label} ${o.optimizer}`).not.to.match(/extern|not compiled/);
        f(feed).forEach((r, k) => expect(bits(r), `${label} ${o.optimizer} output ${k}`).to.deep.equal(bits(want[k]!)));
      }
    }
    const bad = [probs, new NDArray(Int32Array.from([0, 5, 1, 1]), [4], 'int32')];
    for (const o of [{ optimizer: 'none' }, ...COMPILED] as const) {
      expect(() => K.function([pr, y], outs, [], o)(bad), o.optimizer).to.throw(ValueError, /ctc_path_probs: Y\[3\] = 5 is not a class index for 5 classes \(-1 is the blank\)/);
    }
    // one step of the recursion: duplicate, negative and out-of-reach skip indices, active 0 and past the end
    const zeros = K.constant(new Array(5).fill(0), 'float64');
    const skip = K.placeholder([2], null, 'int64', false, 'skip');
    const act = K.placeholder([], null, 'int32', false, 'act');
    const curr = K.placeholder([5], null, 'float64', false, 'curr');
    const prev = K.placeholder([5], null, 'float32', false, 'prev');
    const step = K.ctc_update_log_p(skip, zeros, act, curr, prev);
    for (const [sk, a] of [[[1, 1], 2], [[1, 3], 4], [[-1, 1], 3], [[3, 1], 0], [[1, 2], 9]] as const) {
      const feed = [new NDArray(Float64Array.from(sk), [2], 'int64'), new NDArray(Int32Array.from([a]), [], 'int32'),
        new NDArray(Float64Array.from([-1, -2, -3, -4, -5]), [5], 'float64'), new NDArray(Float32Array.from([-0.5, -1.5, -0.25, -2, -1]), [5], 'float32')];
      const want = K.function([skip, act, curr, prev], step, [], { optimizer: 'none' })(feed);
      for (const o of COMPILED) {
        const f = K.function([skip, act, curr, prev], step, [], { ...o, ...NO_FALLBACK });
        expect(f.source(), `${sk} ${a}`).not.to.match(/extern|not compiled/);
        f(feed).forEach((r, k) => expect(bits(r), `skip ${sk}, active ${a}, ${o.optimizer} output ${k}`).to.deep.equal(bits(want[k]!)));
      }
    }
  });

  it('greedy ctc_decode is a kernel: TensorFlow\'s greedy decoder bit for bit with the reference (repeats merged, blanks dropped, lengths 0 and T)', () => {
    const yp = K.placeholder([3, 6, 4], null, 'float32', false, 'yp');
    const il = K.placeholder([3], null, 'int32', false, 'il');
    const [[trimmed], score] = K.ctc_decode(yp, il, true);
    const dec = padded(trimmed!);
    // sample 0 by hand: the largest class per step is 1 1 blank 1 0 0 -> [1, 1, 0]
    const hand = [1, 1, 3, 1, 0, 0].map((c) => [0, 1, 2, 3].map((k) => (k === c ? 0.7 : 0.1)));
    const probs = [hand, ...[1, 2].map((b) => Array.from({ length: 6 }, (_, t) => Array.from({ length: 4 }, (_, c) => 0.05 + Math.abs(Math.sin(b * 31 + t * 4 + c)))))];
    for (const lens of [[6, 0, 3], [4, 6, 1]]) {
      const feed = [NDArray.from(probs, 'float32'), new NDArray(Int32Array.from(lens), [3], 'int32')];
      const want = K.function([yp, il], [dec!, score], [], { optimizer: 'none' })(feed);
      if (lens[0] === 6) {
        expect((want[0]!.toArray() as number[][])[0]).to.deep.equal([1, 1, 0, -1, -1, -1]);
        expect((want[0]!.toArray() as number[][])[1]).to.deep.equal([-1, -1, -1, -1, -1, -1]);
      }
      for (const o of COMPILED) {
        const f = K.function([yp, il], [dec!, score], [], { ...o, ...NO_FALLBACK });
        expect(f.source(), o.optimizer).not.to.match(/extern|not compiled/);
        f(feed).forEach((r, k) => expect(bits(r), `${lens} ${o.optimizer} output ${k}`).to.deep.equal(bits(want[k]!)));
      }
    }
    const bad = [NDArray.from(probs, 'float32'), new NDArray(Int32Array.from([1, 7, 1]), [3], 'int32')];
    for (const o of [{ optimizer: 'none' }, ...COMPILED] as const) {
      expect(() => K.function([yp, il], [dec!, score], [], o)(bad), o.optimizer).to.throw(ValueError, /ctc_decode: input_length\[1\] = 7 is outside \[0, 6\] \(the time axis of y_pred\)/);
    }
  });

  it('runs on the gpu device within float32 tolerances (atol 1e-5, rtol 1e-4)', function () {
    const loaded = loadGpuJs();
    needs(this, 'ctc on the gpu device', loaded instanceof Error ? loaded.message : undefined);
    for (const c of [EDGES, KERAS]) {
      const g = graph(c, 'float32');
      const want = K.function(g.inputs, g.outputs, [], { optimizer: 'none' })(g.feed);
      const f = K.function(g.inputs, g.outputs, [], { device: 'gpu', ...NO_FALLBACK });
      expect(f.device).to.match(/^gpu:/);
      f(g.feed).forEach((r, k) => expectClose(r, want[k]!, { atol: 1e-5, rtol: 1e-4 }, `gpu output ${k}`));
    }
    const t = theano();
    const want = K.function(t.inputs, t.outputs, [], { optimizer: 'none' })(t.feed);
    const f = K.function(t.inputs, t.outputs, [], { device: 'gpu', ...NO_FALLBACK });
    f(t.feed).forEach((r, k) => expectClose(r, want[k]!, { atol: 1e-5, rtol: 1e-4 }, `gpu Theano helper output ${k}`));
  });

  it('exportModule accepts them: same numbers in the standalone module, a RangeError with the reference\'s words for bad lengths', function () {
    this.timeout(120000);
    const g = graph(KERAS, 'float32');
    const f = K.function(g.inputs, g.outputs);
    const live = f(g.feed);
    const mod = f.exportModule({ name: 'ctck' });
    const t = theano();
    const ft = K.function(t.inputs, t.outputs);
    const liveT = ft(t.feed);
    const modT = ft.exportModule({ name: 'ctct' });
    const dir = emptyFolder();
    writeModules(dir, [mod, modT]);
    typecheck(dir, [mod, modT]);
    const [outT] = runCalls(dir, [{ module: 'ctct', inputs: t.feed }]);
    liveT.forEach((r, k) => expect(outT![k], `Theano helper output ${k}`).to.deep.equal(Array.from(r.data, (v) => Number(v) + 0)));
    const badFeed = [g.feed[0]!, g.feed[1]!, new NDArray(Int32Array.from([5, 6]), [2, 1], 'int32'), g.feed[3]!];
    const [out] = runCalls(dir, [{ module: 'ctck', inputs: g.feed }]);
    live.forEach((r, k) => expect(out![k], `output ${k}`).to.deep.equal(Array.from(r.data, (v) => Number(v) + 0)));
    expect(() => runCalls(dir, [{ module: 'ctck', inputs: badFeed }])).to.throw(/RangeError: ctc_loss: sample 1: input_length 6 is outside 0\.\.5/);
  });
});
