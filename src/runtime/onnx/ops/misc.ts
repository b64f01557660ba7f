// Running sums/products, in_top_k, print, random draws, control flow, CTC and the
// optimizer-only ops as ONNX.
import { evalContext } from '../../../ir/interpret.js';
import { isFloat } from '../../../ir/dtype.js';
import { NDArray } from '../../../ir/ndarray.js';
import type { cumulativeOps } from '../../../ir/ops/misc.js';
import type { randomOps } from '../../../ir/ops/random.js';
import type { ctcOps } from '../../../ir/ops/ctc.js';
import type { ctcTheanoOps } from '../../../ir/ops/ctc-theano.js';
import { scanItems, splitScanInputs, type ScanAttrs } from '../../../ir/ops/control.js';
import { getOp, isOp } from '../../../ir/registry.js';
import { F, OnnxExportError, G, type GraphBuilder } from '../builder.js';
import { ONNX_DTYPE } from '../dtypes.js';
import { arith, unsupported, type Ctx, type OnnxTableFor, type TupleEmit, type AttrsOf } from './types.js';
import { fit, toDType } from './util.js';

const norm = (axis: number, rank: number) => (axis < 0 ? axis + rank : axis);

/** A running product along `axis`: ONNX has CumSum only, so the product is unrolled step by step (needs the axis length). */
function cumprod(c: Ctx, x: string, axis: number): string {
  const b = c.b;
  const d = arith(c.out.dtype);
  const xc = b.cast(x, d);
  const s = b.val(xc).shape;
  const n = s[axis];
  if (n === null || n === undefined)
    throw new OnnxExportError('cumprod needs a known length along its axis (ONNX has no CumProd; it is unrolled)');
  if (n === 0) return fit(c, b.op('Identity', [xc], {}, { dtype: d, shape: s }));
  const step = { dtype: d, shape: s.map((dd, i) => (i === axis ? 1 : dd)) };
  const parts: string[] = [];
  let acc = b.slice(xc, [0], [1], [axis], [1], step);
  parts.push(acc);
  for (let k = 1; k < n; k++) {
    acc = b.op('Mul', [acc, b.slice(xc, [k], [k + 1], [axis], [1], step)], {}, step);
    parts.push(acc);
  }
  return fit(c, parts.length === 1 ? parts[0]! : b.op('Concat', parts, { axis }, { dtype: d, shape: s }));
}

/** How a seeded draw maps to ONNX's random operators (the numbers differ from theanine's Philox stream). */
function onnxRandom(
  c: Ctx,
  ins: string[],
  a: AttrsOf<'random_normal'> | AttrsOf<'random_uniform'> | AttrsOf<'random_binomial'>,
  kind: 'uniform' | 'normal' | 'truncated' | 'binomial',
): string {
  const b = c.b;
  const dt = isFloat(a.dtype) ? arith(a.dtype) : 'float32';
  let k = 0;
  const shape = b.vec(a.shape.map((d) => (d !== null ? d : b.reshape(b.cast(ins[k++]!, 'int64'), [1], b.i64([1])))));
  const like = b.op(
    'ConstantOfShape',
    [shape],
    { value: new NDArray([0], [1], dt) },
    { dtype: dt, shape: c.out.shape },
  );
  const seed = a.seed === null ? {} : { seed: new F(a.seed) };
  const draw = (extra: Record<string, F>, op: string, salt = 0): string =>
    b.op(
      op,
      [like],
      { dtype: ONNX_DTYPE[dt], ...extra, ...(a.seed === null ? {} : { seed: new F(a.seed + salt) }) },
      { dtype: dt, shape: c.out.shape },
    );
  void seed;
  let out: string;
  if (kind === 'uniform') {
    const u = a as AttrsOf<'random_uniform'>;
    out = draw({ low: new F(u.low), high: new F(u.high) }, 'RandomUniformLike');
  } else if (kind === 'binomial') {
    const p = (a as AttrsOf<'random_binomial'>).p;
    const u = draw({ low: new F(0), high: new F(1) }, 'RandomUniformLike');
    return toDType(b, b.op('Less', [u, b.scalar(p, dt)], {}, { dtype: 'bool', shape: c.out.shape }), c.out.dtype);
  } else {
    const nA = a as AttrsOf<'random_normal'>;
    let z = draw({ mean: new F(0), scale: new F(1) }, 'RandomNormalLike');
    if (kind === 'truncated') {
      // redraw where |z| > 2, eight times (P(still outside) = 0.0455^8, about 2e-11), then clip
      for (let t = 1; t <= 8; t++) {
        const out2 = b.op(
          'Greater',
          [b.op('Abs', [z], {}, { dtype: dt, shape: c.out.shape }), b.scalar(2, dt)],
          {},
          { dtype: 'bool', shape: c.out.shape },
        );
        z = b.op(
          'Where',
          [out2, draw({ mean: new F(0), scale: new F(1) }, 'RandomNormalLike', t), z],
          {},
          { dtype: dt, shape: c.out.shape },
        );
      }
      z = b.op('Clip', [z, b.scalar(-2, dt), b.scalar(2, dt)], {}, { dtype: dt, shape: c.out.shape });
    }
    out = b.op(
      'Add',
      [b.op('Mul', [z, b.scalar(nA.stddev, dt)], {}, { dtype: dt, shape: c.out.shape }), b.scalar(nA.mean, dt)],
      {},
      { dtype: dt, shape: c.out.shape },
    );
  }
  return fit(c, out);
}

/**
 * Random draws. The onnx backend computes a seeded draw with every dim known with theanine's own
 * Philox stream (the same numbers as every other backend) and embeds it as a constant; an
 * exported model, and unseeded draws, use ONNX's RandomUniformLike / RandomNormalLike (seeded
 * when the draw is), whose numbers differ from theanine's.
 */
function random<A extends AttrsOf<'random_normal'> | AttrsOf<'random_uniform'> | AttrsOf<'random_binomial'>>(
  kind: 'uniform' | 'normal' | 'truncated' | 'binomial',
  op: keyof typeof randomOps,
) {
  return (c: Ctx, ins: string[], a: A): string => {
    // run-time dims that the passes folded to constants count as known
    let k = 0;
    const dims = a.shape.map((d) => {
      if (d !== null) return d;
      const src = c.node.inputs[k++];
      return src !== undefined && isOp(src, 'constant') ? src.attrs.value.data[0]! : null;
    });
    if (c.mode === 'run' && a.seed !== null && dims.every((d) => d !== null)) {
      const v = getOp(op).impl([], { ...a, shape: dims }, evalContext({ learningPhase: 0, epoch: 0, print: () => {} }));
      return c.b.constant(v);
    }
    // the backend promises theanine's numbers for a seeded draw: with unknown dims, ask for a model per input shape
    if (c.mode === 'run' && a.seed !== null)
      throw new OnnxExportError(
        `a seeded ${op} of shape [${c.out.shape.join(', ')}] needs known dims to reproduce theanine's Philox numbers`,
      );
    return onnxRandom(c, ins, a, kind);
  };
}

/**
 * A Scan as an ONNX Loop: the step index counts 0..T-1 (T-1..0 going backwards); sequences
 * are read with Gather at that index from the enclosing graph; states are the loop-carried
 * values; per-step outputs and new states are the Loop's scan outputs, stacked in walking order.
 */
const scan: TupleEmit<ScanAttrs> = {
  tuple: (c, ins, a) => {
    const b = c.b;
    const body = a.body;
    const { seqs, initial, consts } = splitScanInputs(ins, body);
    const nState = initial.length;
    const steps = a.n_steps !== null ? b.i64([a.n_steps]) : b.dim(seqs[0]!, 0);
    const stepsScalar = b.reshape(steps, [], b.i64([]));
    const index = (inner: GraphBuilder, iter: string): string => {
      if (!a.go_backwards) return iter;
      const last = inner.op('Sub', [stepsScalar, inner.scalar(1, 'int64')], {}, { dtype: 'int64', shape: [] });
      return inner.op('Sub', [last, iter], {}, { dtype: 'int64', shape: [] });
    };
    const graph = c.loopBody(body, seqs, consts, index);
    const items = c.node.type.items!;
    const lay = scanItems(body);
    const nOut = body.outputs.length;
    const stackedOut = body.outputs.map((o) => ({ dtype: o.dtype, shape: [null, ...o.shape] }));
    const stackedStates = body.states.map((s) => ({ dtype: s.dtype, shape: [null, ...s.shape] }));
    const res = b.opN(
      'Loop',
      [stepsScalar, b.constant(new NDArray([1], [], 'bool')), ...initial],
      { body: new G(graph) },
      [...body.states.map((s) => ({ dtype: s.dtype, shape: s.shape })), ...stackedOut, ...stackedStates],
    );
    const finals = res.slice(0, nState);
    const outs = res.slice(nState, nState + nOut);
    const stateSeqs = res.slice(nState + nOut);
    const kept = (v: string, k: number, item: number): string => {
      const keep = a.keep[k]!;
      const t = items[item]!;
      if (keep === 'all') return b.op('Identity', [v], {}, t);
      if (keep === 'last') return b.op('Gather', [v, b.scalar(-1, 'int64')], { axis: 0 }, t);
      return b.slice(v, [0], [0], [0], [1], t);
    };
    return [
      ...outs.map((v, k) => kept(v, k, lay.outputs[k]!)),
      ...finals,
      ...stateSeqs.map((v, j) => kept(v, nOut + j, lay.stateSequences[j]!)),
    ];
  },
};

const ctcReason =
  'CTC (the alpha/beta recursions over label lattices with data-dependent lengths) has no ONNX translation yet';

export const miscTranslations: OnnxTableFor<
  | keyof typeof cumulativeOps
  | 'in_top_k'
  | 'print'
  | keyof typeof randomOps
  | 'scan'
  | 'scan_arg'
  | 'tuple_get'
  | keyof typeof ctcOps
  | keyof typeof ctcTheanoOps
  | 'ctc_decode'
  | 'ctc_trim'
  | 'ctc_label_dense_to_sparse'
  | 'fused'
  | 'softmax_cross_entropy'
> = {
  cumsum: (c, [x], a) => {
    const d = arith(c.out.dtype);
    const xc = c.b.cast(x!, d);
    return fit(
      c,
      c.b.op(
        'CumSum',
        [xc, c.b.scalar(norm(a.axis, c.out.shape.length), 'int64')],
        {},
        { dtype: d, shape: c.out.shape },
      ),
    );
  },
  cumprod: (c, [x], a) => cumprod(c, x!, norm(a.axis, c.out.shape.length)),
  // true where fewer than k classes score strictly higher than the target's class (ties count as in)
  in_top_k: (c, [pred, targets], a) => {
    const b = c.b;
    const ps = b.val(pred!).shape;
    const d = arith(b.val(pred!).dtype);
    const p = b.cast(pred!, d);
    const bv = { dtype: 'bool' as const, shape: c.out.shape };
    const t = b.cast(targets!, 'int64');
    const n = b.reshape(b.dim(p, 1), [], b.i64([]));
    const inRange = b.op(
      'And',
      [b.op('GreaterOrEqual', [t, b.scalar(0, 'int64')], {}, bv), b.op('Less', [t, n], {}, bv)],
      {},
      bv,
    );
    const safe = b.op('Where', [inRange, t, b.scalar(0, 'int64')], {}, { dtype: 'int64', shape: c.out.shape });
    const score = b.op('GatherElements', [p, b.unsqueeze(safe, [1])], { axis: 1 }, { dtype: d, shape: [ps[0]!, 1] });
    const higher = b.cast(b.op('Greater', [p, score], {}, { dtype: 'bool', shape: ps }), 'int32');
    const count = b.reduce('ReduceSum', higher, [1], false, { dtype: 'int32', shape: c.out.shape });
    let ok = b.op('And', [b.op('Less', [count, b.scalar(a.k, 'int32')], {}, bv), inRange], {}, bv);
    if (isFloat(d)) {
      const nan = b.op('IsNaN', [b.squeeze(score, [1])], {}, bv);
      ok = b.op('And', [ok, b.op('Not', [nan], {}, bv)], {}, bv);
    }
    return a.k < 1 ? b.op('And', [ok, b.constant(new NDArray([0], [], 'bool'))], {}, bv) : ok;
  },
  // the value passes through; the backend returns it as an extra output and prints it on the host
  print: (c, [x], a) => {
    const v = c.b.op('Identity', [x!], {}, c.out);
    c.prints.push({ name: v, message: a.message });
    return v;
  },
  random_uniform: random<AttrsOf<'random_uniform'>>('uniform', 'random_uniform'),
  random_normal: random<AttrsOf<'random_normal'>>('normal', 'random_normal'),
  truncated_normal: random<AttrsOf<'truncated_normal'>>('truncated', 'truncated_normal'),
  random_binomial: random<AttrsOf<'random_binomial'>>('binomial', 'random_binomial'),
  scan,
  scan_arg: 'leaf',
  tuple_get: 'leaf',
  ...unsupported(ctcReason, [
    'ctc_loss',
    'ctc_loss_grad',
    'ctc_interleave_blanks',
    'ctc_create_skip_idxs',
    'ctc_update_log_p',
    'ctc_path_probs',
  ]),
  ctc_decode: {
    unsupported:
      'CTC decoding is a greedy or beam search whose result sizes depend on the data; it has no ONNX translation',
  },
  ctc_trim: {
    unsupported:
      'the width of decoded CTC labels is the longest decoding (a data-dependent shape); it has no ONNX translation',
  },
  ctc_label_dense_to_sparse: {
    unsupported: 'its result size depends on the label values (data-dependent shapes); it has no ONNX translation',
  },
  fused: {
    unsupported:
      'fused kernels are made by the fusion pass, which the onnx backend does not run (ONNX Runtime fuses on its own)',
  },
  // -sum(t * ((x - m) - log sum exp(x - m))) along the axis
  softmax_cross_entropy: (c, [x, t], a) => {
    const b = c.b;
    const d = arith(c.out.dtype);
    const xc = b.cast(x!, d);
    const tc = b.cast(t!, d);
    const s = b.val(xc).shape;
    const axis = norm(a.axis, s.length);
    const ls = b.op('LogSoftmax', [xc], { axis }, { dtype: d, shape: s });
    const prod = b.op('Mul', [tc, ls], {}, { dtype: d, shape: s });
    return fit(
      c,
      b.op(
        'Neg',
        [b.reduce('ReduceSum', prod, [axis], false, { dtype: d, shape: c.out.shape })],
        {},
        { dtype: d, shape: c.out.shape },
      ),
    );
  },
};
