// importOnnx: an ONNX model as theanine IR. Graph inputs become placeholders (named after them,
// symbolic dims unknown), float initializers become variables (so the model can be
// differentiated and fine-tuned with K.function updates), other initializers and Constant nodes
// constants, and each node the theanine ops of its meaning (src/runtime/onnx/README.md lists the
// operators). Operands that ONNX passes as tensors but theanine needs as attributes (Reshape's
// shape, Slice's bounds, axes) must be constants. An operator without a translation is an
// error naming it.
import { apply } from '../ir/build.js';
import type { DType } from '../ir/dtype.js';
import { isFloat } from '../ir/dtype.js';
import { NDArray, sizeOf } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import { sliceRange, type SliceAxis } from '../ir/ops/shape.js';
import type { Dim } from '../ir/types.js';
import { fromOnnxDType, fromTensorProto } from '../runtime/onnx/dtypes.js';
import { decodeModel, type AttributeJson, type NodeJson } from '../runtime/onnx/schema.js';
import { constantNode } from './args.js';
import { placeholder, variable } from './tensors.js';
import { rnn } from './rnn.js';
import { isOp } from '../ir/registry.js';
import { rowsSpelledIn } from '../ir/ops/elementwise.js';
import { reductionRow, reductionRows } from '../ir/ops/reduce.js';

export class OnnxImportError extends Error {
  override name = 'OnnxImportError';
}

export interface ImportedOnnx {
  /** One placeholder per graph input that is not an initializer, in the model's order. */
  readonly inputs: Node[];
  /** The graph outputs, in order. */
  readonly outputs: Node[];
  /** The float initializers as variables (the trainable weights). */
  readonly variables: Node[];
  /** Every value of the graph by its ONNX name. */
  readonly values: ReadonlyMap<string, Node>;
}

type Attr = AttributeJson;

function attrs(n: NodeJson): Map<string, Attr> {
  return new Map((n.attribute ?? []).map((a) => [a.name, a]));
}
const int = (m: Map<string, Attr>, k: string, d: number): number => (m.has(k) ? Number(m.get(k)!.i) : d);
const ints = (m: Map<string, Attr>, k: string): number[] | undefined =>
  m.has(k) ? (m.get(k)!.ints ?? []).map(Number) : undefined;
const float = (m: Map<string, Attr>, k: string, d: number): number => (m.has(k) ? Number(m.get(k)!.f) : d);
const str = (m: Map<string, Attr>, k: string, d: string): string =>
  m.has(k) ? new TextDecoder().decode(m.get(k)!.s) : d;
const strs = (m: Map<string, Attr>, k: string): string[] | undefined =>
  m.has(k) ? (m.get(k)!.strings ?? []).map((b) => new TextDecoder().decode(b)) : undefined;

function constOf(n: Node | undefined, what: string, op: string): NDArray {
  if (n === undefined || !isOp(n, 'constant'))
    throw new OnnxImportError(
      `importOnnx: ${op}'s ${what} must be a constant (theanine takes it as an attribute), got a computed tensor`,
    );
  return n.attrs.value;
}
const intsOf = (n: Node | undefined, what: string, op: string): number[] =>
  Array.from(constOf(n, what, op).data, Number);

function scalar(v: number, dtype: DType): Node {
  return constantNode(new NDArray([v], [], dtype));
}
const norm = (a: number, r: number) => (a < 0 ? a + r : a);

/** NumPy-broadcasting binary op of theanine's, with both operands cast to the promoted dtype by the op. */
const bin = (op: string) => (x: Node[]) => apply(op, [x[0]!, x[1]!], {}, `importOnnx ${op}`);
const un = (op: string) => (x: Node[]) => apply(op, [x[0]!], {}, `importOnnx ${op}`);

function reduce(op: string, x: Node, m: Map<string, Attr>, axesIn: Node | undefined, opType: string): Node {
  const r = x.ndim;
  let axes = ints(m, 'axes') ?? (axesIn !== undefined ? intsOf(axesIn, 'axes', opType) : undefined);
  if (axes === undefined || axes.length === 0) {
    if (int(m, 'noop_with_empty_axes', 0) === 1) return x;
    axes = Array.from({ length: r }, (_, i) => i);
  }
  const a = [...new Set(axes.map((q) => norm(q, r)))].sort((p, q) => p - q);
  return apply(op, [x], { axes: a, keepdims: int(m, 'keepdims', 1) === 1 }, `importOnnx ${opType}`);
}

/** ONNX's explicit pads or auto_pad as theanine's 'valid'/'same', or an explicit zero pad before a valid window op. */
function windowPadding(
  x: Node,
  m: Map<string, Attr>,
  k: readonly number[],
  strides: readonly number[],
  dil: readonly number[],
  op: string,
): { x: Node; padding: 'valid' | 'same' } {
  const auto = str(m, 'auto_pad', 'NOTSET');
  if (auto === 'SAME_UPPER') return { x, padding: 'same' };
  if (auto === 'VALID') return { x, padding: 'valid' };
  if (auto === 'SAME_LOWER')
    throw new OnnxImportError(
      `importOnnx: ${op} with auto_pad SAME_LOWER has no theanine form (theanine's 'same' puts the extra cell after)`,
    );
  const pads = ints(m, 'pads') ?? new Array<number>(2 * k.length).fill(0);
  if (pads.every((p) => p === 0)) return { x, padding: 'valid' };
  void strides;
  void dil;
  // channels-last x (N, S..., C): zeros before and after each spatial axis, then a valid window
  const d = k.length;
  const all: [number, number][] = [
    [0, 0],
    ...Array.from({ length: d }, (_, i): [number, number] => [pads[i]!, pads[d + i]!]),
    [0, 0],
  ];
  return { x: apply('pad', [x], { pads: all }, `importOnnx ${op}`), padding: 'valid' };
}

const toLast = (r: number) => [0, ...Array.from({ length: r - 2 }, (_, i) => i + 2), 1];
const toFirst = (r: number) => [0, r - 1, ...Array.from({ length: r - 2 }, (_, i) => i + 1)];
const transpose = (x: Node, perm: readonly number[]) => apply('transpose', [x], { perm }, 'importOnnx Transpose');

/**
 * The value of a 1-D integer tensor computed from shapes (ONNX exporters write dynamic shapes as
 * Shape -> Slice/Gather -> Concat), with null for a run-time dim; undefined when it depends on data.
 */
function dimsOf(n: Node | undefined): (number | null)[] | undefined {
  if (n === undefined) return undefined;
  if (isOp(n, 'constant')) return Array.from(n.attrs.value.data, Number);
  if (isOp(n, 'slice')) {
    const v = dimsOf(n.inputs[0]);
    const ax = n.attrs.axes[0]!;
    if (v === undefined) return undefined;
    const { first, count } = sliceRange(ax, v.length);
    return Array.from({ length: count }, (_, i) => v[first + i * ax.step]!);
  }
  // a sum or product of known dims (a size): the row's fold over them
  const red = reductionRow(n.op);
  if (red !== undefined && red.family === 'arith' && red.finish === undefined) {
    const v = dimsOf(n.inputs[0]);
    if (v === undefined) return undefined;
    if (v.some((d) => d === null)) return [null];
    return [(v as number[]).reduce(red.fold, red.identity)];
  }
  switch (n.op) {
    case 'cast':
    case 'identity':
    case 'reshape':
    case 'expand_dims':
    case 'squeeze':
      return dimsOf(n.inputs[0]);
    case 'shape_of':
      return [...n.inputs[0]!.shape];
    case 'concat': {
      const parts = n.inputs.map(dimsOf);
      return parts.some((p) => p === undefined) ? undefined : (parts.flat() as (number | null)[]);
    }
    case 'gather': {
      const v = dimsOf(n.inputs[0]);
      const idx = dimsOf(n.inputs[1]);
      if (v === undefined || idx === undefined || idx.some((i) => i === null)) return undefined;
      return idx.map((i) => v[i! < 0 ? i! + v.length : i!] ?? null);
    }
    case 'mul':
    case 'add': {
      const a = dimsOf(n.inputs[0]);
      const c = dimsOf(n.inputs[1]);
      if (a === undefined || c === undefined) return undefined;
      const len = Math.max(a.length, c.length);
      return Array.from({ length: len }, (_, i) => {
        const p = a[a.length === 1 ? 0 : i]!;
        const q = c[c.length === 1 ? 0 : i]!;
        return p === null || q === null ? null : n.op === 'mul' ? p * q : p + q;
      });
    }
    default:
      return undefined;
  }
}

type Handler = (ins: (Node | undefined)[], m: Map<string, Attr>, n: NodeJson) => Node | Node[];

/**
 * Each elementwise row's ONNX operator (src/ir/ops/elementwise.ts) as its op; the table below adds
 * the rest, and overrides these where ONNX's operator takes more (Max's any number of inputs, Mod's fmod).
 */
function rowHandlers(): Record<string, Handler> {
  const out: Record<string, Handler> = {};
  for (const { op, name, row } of rowsSpelledIn('onnx'))
    out[name] = (x) => (row.arity === 1 ? un(op) : bin(op))(x as Node[]);
  return out;
}

/** Each reduction row's ONNX operator (src/ir/ops/reduce.ts) as its op; a logical row's operator folds 0/1 and is not its meaning. */
function reductionHandlers(): Record<string, Handler> {
  const rows = reductionRows.filter((r) => r.family !== 'logical');
  return Object.fromEntries(
    rows.map(
      (r) => [r.spelling.onnx, ([x, a], m) => reduce(r.name, x!, m, a, r.spelling.onnx)] satisfies [string, Handler],
    ),
  );
}

const handlers: Record<string, Handler> = {
  ...rowHandlers(),
  ...reductionHandlers(),
  Identity: ([x]) => x!,
  Dropout: ([x]) => x!,
  Max: (x) => (x as Node[]).reduce((a, b) => apply('maximum', [a, b])),
  Min: (x) => (x as Node[]).reduce((a, b) => apply('minimum', [a, b])),
  Mod: (x, m) => {
    if (int(m, 'fmod', 0) === 1)
      throw new OnnxImportError("importOnnx: Mod with fmod=1 (C fmod) has no theanine op (mod is Python's)");
    return bin('mod')(x as Node[]);
  },
  Relu: ([x]) => apply('maximum', [x!, scalar(0, x!.dtype)]),
  LeakyRelu: ([x], m) =>
    apply('where', [
      apply('greater', [x!, scalar(0, x!.dtype)]),
      x!,
      apply('mul', [x!, scalar(float(m, 'alpha', 0.01), x!.dtype)]),
    ]),
  Clip: ([x, lo, hi]) => {
    let y = x!;
    if (lo !== undefined) y = apply('maximum', [y, lo]);
    if (hi !== undefined) y = apply('minimum', [y, hi]);
    return y;
  },
  Xor: (x) => bin('not_equal')(x as Node[]),
  IsInf: ([x], m) => {
    const pos = apply('equal', [x!, scalar(Infinity, x!.dtype)]);
    const neg = apply('equal', [x!, scalar(-Infinity, x!.dtype)]);
    const p = int(m, 'detect_positive', 1) === 1;
    const q = int(m, 'detect_negative', 1) === 1;
    return p && q ? apply('logical_or', [pos, neg]) : p ? pos : q ? neg : apply('logical_and', [pos, neg]);
  },
  Where: ([c, a, b]) => apply('where', [c!, a!, b!]),
  Cast: ([x], m) => apply('cast', [x!], { dtype: fromOnnxDType(int(m, 'to', 1), 'Cast') }),
  MatMul: ([a, b]) => {
    if (b!.ndim <= 2) return apply('dot', [a!, b!]);
    if (a!.ndim === 3 && b!.ndim === 3) return apply('batch_dot', [a!, b!], { axes: [2, 1] });
    throw new OnnxImportError(
      `importOnnx: MatMul of ranks ${a!.ndim} and ${b!.ndim} has no translation yet (supported: any rank against a matrix, and 3-D batches)`,
    );
  },
  Gemm: ([a, b, c], m) => {
    let A = a!;
    let B = b!;
    if (int(m, 'transA', 0) === 1) A = transpose(A, [1, 0]);
    if (int(m, 'transB', 0) === 1) B = transpose(B, [1, 0]);
    let y = apply('dot', [A, B]);
    const alpha = float(m, 'alpha', 1);
    if (alpha !== 1) y = apply('mul', [y, scalar(alpha, y.dtype)]);
    if (c !== undefined) {
      const beta = float(m, 'beta', 1);
      y = apply('add', [y, beta === 1 ? c : apply('mul', [c, scalar(beta, c.dtype)])]);
    }
    return y;
  },
  Reshape: ([x, s], m) => {
    const target = dimsOf(s);
    if (target === undefined)
      throw new OnnxImportError(
        "importOnnx: Reshape's shape must be a constant or computed from shapes (Shape, Slice, Gather, Concat...), got a value computed from data",
      );
    const allowzero = int(m, 'allowzero', 0) === 1;
    // 0 copies the input's dim (unless allowzero); run-time dims are null
    const dims = target.map((d, i) => (d === 0 && !allowzero ? (x!.shape[i] ?? null) : d));
    const unknown = dims.filter((d) => d === null || d === -1).length;
    if (unknown <= 1) return apply('reshape', [x!], { shape: dims.map((d) => d ?? -1) });
    // (a, b, ..., -1) keeping a leading run of x's dims: the rest merged (merge_axes works with unknown dims)
    const k = dims.length - 1;
    if (dims[k] === -1 && dims.slice(0, k).every((d, i) => d === (x!.shape[i] ?? null))) {
      return k < x!.ndim - 1 ? apply('merge_axes', [x!], { start: k, stop: x!.ndim }) : x!;
    }
    throw new OnnxImportError(
      `importOnnx: Reshape to [${dims.map((d) => d ?? '?').join(', ')}] needs more than one run-time dim; theanine's reshape takes one unknown dim`,
    );
  },
  Flatten: ([x], m) => {
    const r = x!.ndim;
    const axis = norm(int(m, 'axis', 1), r);
    let y = x!;
    if (axis < r) y = apply('merge_axes', [y], { start: axis, stop: r });
    else y = apply('expand_dims', [y], { axis: r });
    if (axis === 0) return apply('expand_dims', [y], { axis: 0 });
    return axis > 1 ? apply('merge_axes', [y], { start: 0, stop: axis }) : y;
  },
  Transpose: ([x], m) => transpose(x!, ints(m, 'perm') ?? Array.from({ length: x!.ndim }, (_, i) => x!.ndim - 1 - i)),
  Concat: (xs, m) => apply('concat', xs as Node[], { axis: int(m, 'axis', 0) }),
  Gather: ([x, i], m) => {
    const axis = norm(int(m, 'axis', 0), x!.ndim);
    if (axis === 0) return apply('gather', [x!, i!]);
    // along another axis: that axis moved first, gathered, and the result's axes put back
    const r = x!.ndim;
    const perm = [axis, ...Array.from({ length: r }, (_, k) => k).filter((k) => k !== axis)];
    const g = apply('gather', [transpose(x!, perm), i!]);
    const q = i!.ndim;
    const back = [
      ...Array.from({ length: axis }, (_, k) => q + k),
      ...Array.from({ length: q }, (_, k) => k),
      ...Array.from({ length: r - 1 - axis }, (_, k) => q + axis + k),
    ];
    return transpose(g, back);
  },
  Unsqueeze: ([x, a], m) => {
    const axes = ints(m, 'axes') ?? intsOf(a, 'axes', 'Unsqueeze');
    const r = x!.ndim + axes.length;
    return [...axes.map((q) => norm(q, r))]
      .sort((p, q) => p - q)
      .reduce((y, ax) => apply('expand_dims', [y], { axis: ax }), x!);
  },
  Squeeze: ([x, a], m) => {
    const axes =
      ints(m, 'axes') ??
      (a !== undefined
        ? intsOf(a, 'axes', 'Squeeze')
        : x!.shape.map((d, i) => (d === 1 ? i : -1)).filter((i) => i >= 0));
    return [...axes.map((q) => norm(q, x!.ndim))]
      .sort((p, q) => q - p)
      .reduce((y, ax) => apply('squeeze', [y], { axis: ax }), x!);
  },
  Shape: ([x], m) => {
    const s = apply('cast', [apply('shape_of', [x!])], { dtype: 'int64' });
    const start = int(m, 'start', 0);
    const end = m.has('end') ? int(m, 'end', 0) : null;
    return start === 0 && end === null ? s : apply('slice', [s], { axes: [{ start, stop: end, step: 1 }] });
  },
  ConstantOfShape: ([s], m) => {
    const shape = intsOf(s, 'shape', 'ConstantOfShape');
    const v = m.has('value')
      ? fromTensorProto(m.get('value')!.t!, 'ConstantOfShape value')
      : new NDArray([0], [1], 'float32');
    return constantNode(new NDArray(new Float64Array(sizeOf(shape)).fill(v.data[0]!), shape, v.dtype));
  },
  Slice: ([x, st, en, ax, sp]) => {
    const starts = intsOf(st, 'starts', 'Slice');
    const ends = intsOf(en, 'ends', 'Slice');
    const axes = ax !== undefined ? intsOf(ax, 'axes', 'Slice').map((q) => norm(q, x!.ndim)) : starts.map((_, i) => i);
    const steps = sp !== undefined ? intsOf(sp, 'steps', 'Slice') : starts.map(() => 1);
    const all: SliceAxis[] = x!.shape.map(() => ({ start: null, stop: null, step: 1 }));
    axes.forEach((a, i) => {
      all[a] = { start: starts[i]!, stop: ends[i]!, step: steps[i]! };
    });
    return apply('slice', [x!], { axes: all });
  },
  Pad: ([x, p, v], m) => {
    if (str(m, 'mode', 'constant') !== 'constant')
      throw new OnnxImportError(`importOnnx: Pad mode ${str(m, 'mode', '')} has no theanine op (constant zeros only)`);
    if (v !== undefined && constOf(v, 'constant_value', 'Pad').data[0] !== 0)
      throw new OnnxImportError('importOnnx: Pad with a nonzero constant_value has no theanine op');
    const pads = ints(m, 'pads') ?? intsOf(p, 'pads', 'Pad');
    const r = x!.ndim;
    if (pads.some((q) => q < 0))
      throw new OnnxImportError('importOnnx: Pad with negative pads (cropping) has no translation yet');
    return apply('pad', [x!], {
      pads: Array.from({ length: r }, (_, i): [number, number] => [pads[i]!, pads[r + i]!]),
    });
  },
  Tile: ([x, rep]) => apply('tile', [x!], { reps: intsOf(rep, 'repeats', 'Tile') }),
  Expand: ([x, s]) => {
    const shape = intsOf(s, 'shape', 'Expand');
    const ones = constantNode(
      new NDArray(new Float64Array(sizeOf(shape)).fill(1), shape, x!.dtype === 'bool' ? 'uint8' : x!.dtype),
    );
    const y = apply('mul', [x!.dtype === 'bool' ? apply('cast', [x!], { dtype: 'uint8' }) : x!, ones]);
    return x!.dtype === 'bool' ? apply('cast', [y], { dtype: 'bool' }) : y;
  },
  ArgMax: ([x], m) => {
    const axis = norm(int(m, 'axis', 0), x!.ndim);
    const y = apply('argmax', [x!], { axis });
    return int(m, 'keepdims', 1) === 1 ? apply('expand_dims', [y], { axis }) : y;
  },
  ArgMin: ([x], m) => {
    const axis = norm(int(m, 'axis', 0), x!.ndim);
    const y = apply('argmin', [x!], { axis });
    return int(m, 'keepdims', 1) === 1 ? apply('expand_dims', [y], { axis }) : y;
  },
  CumSum: ([x, a], m) => {
    if (int(m, 'exclusive', 0) === 1 || int(m, 'reverse', 0) === 1)
      throw new OnnxImportError('importOnnx: CumSum with exclusive or reverse has no translation yet');
    return apply('cumsum', [x!], { axis: norm(intsOf(a, 'axis', 'CumSum')[0]!, x!.ndim) });
  },
  Softmax: ([x], m) => {
    const axis = norm(int(m, 'axis', -1), x!.ndim);
    const e = apply('exp', [apply('sub', [x!, apply('max', [x!], { axes: [axis], keepdims: true })])]);
    return apply('div', [e, apply('sum', [e], { axes: [axis], keepdims: true })]);
  },
  LogSoftmax: ([x], m) => {
    const axis = norm(int(m, 'axis', -1), x!.ndim);
    const z = apply('sub', [x!, apply('max', [x!], { axes: [axis], keepdims: true })]);
    return apply('sub', [z, apply('log', [apply('sum', [apply('exp', [z])], { axes: [axis], keepdims: true })])]);
  },
  // NCHW in ONNX, channels-last in theanine: transposed in and out (the optimizer cancels the pairs that meet)
  Conv: ([x, w, bias], m) => {
    const r = x!.ndim;
    const d = r - 2;
    const k = ints(m, 'kernel_shape') ?? w!.shape.slice(2).map((q) => q ?? 0);
    const strides = ints(m, 'strides') ?? new Array<number>(d).fill(1);
    const dilation = ints(m, 'dilations') ?? new Array<number>(d).fill(1);
    const xl = transpose(x!, toLast(r));
    const { x: xp, padding } = windowPadding(xl, m, k, strides, dilation, 'Conv');
    const wl = transpose(w!, [...Array.from({ length: d }, (_, i) => i + 2), 1, 0]);
    let y = apply('conv', [xp, wl], { strides, dilation, padding, groups: int(m, 'group', 1) }, 'importOnnx Conv');
    if (bias !== undefined) y = apply('add', [y, bias]);
    return transpose(y, toFirst(r));
  },
  MaxPool: ([x], m, n) => pool(x!, m, 'max', n),
  AveragePool: ([x], m, n) => pool(x!, m, 'avg', n),
  GlobalAveragePool: ([x]) =>
    apply('mean', [x!], { axes: Array.from({ length: x!.ndim - 2 }, (_, i) => i + 2), keepdims: true }),
  LSTM: (ins, m) => recurrent('LSTM', ins, m),
  GRU: (ins, m) => recurrent('GRU', ins, m),
  GlobalMaxPool: ([x]) =>
    apply('max', [x!], { axes: Array.from({ length: x!.ndim - 2 }, (_, i) => i + 2), keepdims: true }),
  // inference form: (x - mean) / sqrt(var + eps) * scale + B, per channel (axis 1)
  BatchNormalization: ([x, scale, b, mean, vr], m) => {
    const r = x!.ndim;
    const eps = float(m, 'epsilon', 1e-5);
    const per = (v: Node) => (r <= 2 ? v : apply('reshape', [v], { shape: [-1, ...new Array<number>(r - 2).fill(1)] }));
    const inv = apply('div', [per(scale!), apply('sqrt', [apply('add', [per(vr!), scalar(eps, vr!.dtype)])])]);
    return apply('add', [apply('mul', [apply('sub', [x!, per(mean!)]), inv]), per(b!)]);
  },
};

/** Columns [k * h, (k + 1) * h) of a (.., n * h) tensor: one gate's block. */
function gate(x: Node, k: number, h: number): Node {
  const axes: SliceAxis[] = x.shape.map((_, i) =>
    i === x.ndim - 1 ? { start: k * h, stop: (k + 1) * h, step: 1 } : { start: null, stop: null, step: 1 },
  );
  return apply('slice', [x], { axes: axes });
}
/** Row `d` of a per-direction parameter (num_directions, ...). */
const dirRow = (p: Node, d = 0): Node => apply('index', [p], { index: d });
const matT = (x: Node, w: Node): Node => apply('dot', [x, transpose(w, [1, 0])]);

/** ONNX's default activations of LSTM (f, g, h) and GRU (f, g). */
const DEFAULT_ACTIVATIONS = { LSTM: ['Sigmoid', 'Tanh', 'Tanh'], GRU: ['Sigmoid', 'Tanh'] } as const;
/** ONNX's RNN activations that take no activation_alpha/beta, each translated by its operator's handler. */
const RNN_ACTIVATIONS: readonly string[] = ['Relu', 'Sigmoid', 'Softplus', 'Tanh'];

/** An LSTM's or GRU's `activations` (ONNX's defaults where absent) as functions on nodes. */
function activations(kind: 'LSTM' | 'GRU', m: Map<string, Attr>): ((v: Node) => Node)[] {
  const names = strs(m, 'activations') ?? DEFAULT_ACTIVATIONS[kind];
  const want = DEFAULT_ACTIVATIONS[kind].length;
  if (names.length !== want)
    throw new OnnxImportError(
      `importOnnx: ${kind} with one direction takes ${want} activations, got ${names.length} (${names.join(', ')})`,
    );
  if (m.has('activation_alpha') || m.has('activation_beta'))
    throw new OnnxImportError(`importOnnx: ${kind} with activation_alpha or activation_beta has no translation yet`);
  return names.map((a) => {
    if (!RNN_ACTIVATIONS.includes(a))
      throw new OnnxImportError(
        `importOnnx: ${kind} activation ${a} has no translation yet; supported: ${RNN_ACTIVATIONS.join(', ')}`,
      );
    return (v: Node) => {
      const y = handlers[a]!([v], new Map(), { input: [], output: [], opType: a });
      if (Array.isArray(y)) throw new Error(`internal: the ${a} handler gave ${y.length} values`);
      return y;
    };
  });
}

/**
 * ONNX LSTM (gates i, o, f, c) and GRU (gates z, r, h) as K.rnn over the time axis, with ONNX's
 * default activations or others that take no parameters (`activations`), one direction (forward
 * or reverse), no peepholes and no sequence_lens.
 * Returns Y (T, 1, N, H), Y_h (1, N, H) and, for LSTM, Y_c (1, N, H).
 */
function recurrent(kind: 'LSTM' | 'GRU', ins: (Node | undefined)[], m: Map<string, Attr>): Node[] {
  const [X, W, R, B, seqLens, h0, c0, peep] = ins;
  const dir = str(m, 'direction', 'forward');
  if (dir === 'bidirectional')
    throw new OnnxImportError(
      `importOnnx: ${kind} with direction bidirectional has no translation yet (forward and reverse do)`,
    );
  if (seqLens !== undefined) throw new OnnxImportError(`importOnnx: ${kind} with sequence_lens has no translation yet`);
  if (peep !== undefined) throw new OnnxImportError('importOnnx: LSTM with peepholes has no translation yet');
  if (m.has('clip')) throw new OnnxImportError(`importOnnx: ${kind} with clip has no translation yet`);
  const acts = activations(kind, m);
  const actF = acts[0]!;
  const actG = acts[1]!;
  if (int(m, 'layout', 0) !== 0) throw new OnnxImportError(`importOnnx: ${kind} with layout 1 has no translation yet`);
  const H = int(m, 'hidden_size', 0) || (R!.shape[2] ?? 0);
  const w = dirRow(W!);
  const r = dirRow(R!);
  const nGates = kind === 'LSTM' ? 4 : 3;
  const bias = B === undefined ? undefined : dirRow(B);
  const wb = bias === undefined ? undefined : gate(bias, 0, nGates * H);
  const rb = bias === undefined ? undefined : gate(bias, 1, nGates * H);
  const xs = transpose(X!, [1, 0, 2]); // (N, T, I)
  // zeros (N, H) for a batch of unknown size: a sum over x's other axes, broadcast against H zeros
  const zeroState = (): Node => {
    const perRow = apply('sum', [apply('mul', [xs, scalar(0, xs.dtype)])], { axes: [1, 2], keepdims: false }); // (N)
    return apply('add', [apply('expand_dims', [perRow], { axis: 1 }), constantNode(NDArray.zeros([H], xs.dtype))]);
  };
  const init = (s: Node | undefined) => (s !== undefined ? dirRow(s) : zeroState());
  const withBias = (v: Node, b: Node | undefined, k: number) =>
    b === undefined ? v : apply('add', [v, gate(b, k, H)]);
  const step = (xt: Node, states: Node[]): [Node, Node[]] => {
    const h = states[0]!;
    const xw = matT(xt, w);
    const hr = matT(h, r);
    const gates = (k: number) => apply('add', [withBias(gate(xw, k, H), wb, k), withBias(gate(hr, k, H), rb, k)]);
    if (kind === 'LSTM') {
      const c = states[1]!;
      const i = actF(gates(0));
      const o = actF(gates(1));
      const fg = actF(gates(2));
      const ct = actG(gates(3));
      const cNew = apply('add', [apply('mul', [fg, c]), apply('mul', [i, ct])]);
      const hNew = apply('mul', [o, acts[2]!(cNew)]);
      return [hNew, [hNew, cNew]];
    }
    const z = actF(gates(0));
    const rr = actF(gates(1));
    const xh = withBias(gate(xw, 2, H), wb, 2);
    const hh =
      int(m, 'linear_before_reset', 0) === 1
        ? apply('mul', [rr, withBias(gate(hr, 2, H), rb, 2)])
        : withBias(
            matT(
              apply('mul', [rr, h]),
              apply('slice', [r], {
                axes: [
                  { start: 2 * H, stop: 3 * H, step: 1 },
                  { start: null, stop: null, step: 1 },
                ],
              }),
            ),
            rb,
            2,
          );
    const ht = actG(apply('add', [xh, hh]));
    const one = scalar(1, z.dtype);
    const hNew = apply('add', [apply('mul', [apply('sub', [one, z]), ht]), apply('mul', [z, h])]);
    return [hNew, [hNew]];
  };
  const states = kind === 'LSTM' ? [init(h0), c0 !== undefined ? dirRow(c0) : zeroState()] : [init(h0)];
  const [last, outs, finals] = rnn(step, xs, states, { go_backwards: dir === 'reverse' });
  // K.rnn stacks a backward walk in walking order; ONNX keeps each output at its time position
  let y = transpose(outs, [1, 0, 2]); // (T, N, H)
  if (dir === 'reverse')
    y = apply('slice', [y], {
      axes: [
        { start: null, stop: null, step: -1 },
        { start: null, stop: null, step: 1 },
        { start: null, stop: null, step: 1 },
      ],
    });
  const one = (v: Node) => apply('expand_dims', [v], { axis: 0 });
  return [apply('expand_dims', [y], { axis: 1 }), one(last), ...(kind === 'LSTM' ? [one(finals[1]!)] : [])];
}

function pool(x: Node, m: Map<string, Attr>, mode: 'max' | 'avg', n: NodeJson): Node {
  if (int(m, 'ceil_mode', 0) === 1)
    throw new OnnxImportError(`importOnnx: ${n.opType} with ceil_mode=1 has no theanine form`);
  if (n.output.length > 1 && n.output[1] !== '')
    throw new OnnxImportError("importOnnx: MaxPool's Indices output has no translation yet");
  const r = x.ndim;
  const d = r - 2;
  const window = ints(m, 'kernel_shape')!;
  const strides = ints(m, 'strides') ?? new Array<number>(d).fill(1);
  const dilation = ints(m, 'dilations') ?? new Array<number>(d).fill(1);
  const xl = transpose(x, toLast(r));
  const auto = str(m, 'auto_pad', 'NOTSET');
  const pads = ints(m, 'pads') ?? [];
  let padding: 'valid' | 'same' = 'valid';
  if (auto === 'SAME_UPPER') padding = 'same';
  else if (pads.some((p) => p !== 0) || auto === 'SAME_LOWER') {
    // explicit pads: padding never wins a max and is not counted by count_include_pad=0, which is theanine's 'same' only when the pads are TensorFlow's split
    throw new OnnxImportError(
      `importOnnx: ${n.opType} with explicit pads has no translation yet (auto_pad SAME_UPPER and VALID do)`,
    );
  }
  if (mode === 'avg' && int(m, 'count_include_pad', 0) === 1 && padding === 'same')
    throw new OnnxImportError('importOnnx: AveragePool counting the padding has no theanine form');
  const y = apply('pool', [xl], { window, strides, dilation, padding, mode }, `importOnnx ${n.opType}`);
  return transpose(y, toFirst(r));
}

/** The operators importOnnx translates. */
export const ONNX_IMPORTABLE: readonly string[] = [...Object.keys(handlers), 'Constant'].sort();

export function importOnnx(bytes: Uint8Array): ImportedOnnx {
  if (!(bytes instanceof Uint8Array)) throw new TypeError("importOnnx: pass the model's bytes as a Uint8Array");
  let model;
  try {
    model = decodeModel(bytes);
  } catch (e) {
    throw new OnnxImportError(`importOnnx: the bytes are not an ONNX model (${(e as Error).message})`);
  }
  const g = model.graph;
  if (g === undefined || g === null) throw new OnnxImportError('importOnnx: the model has no graph');
  for (const o of model.opsetImport) {
    if (o.domain !== '' && o.domain !== 'ai.onnx')
      throw new OnnxImportError(`importOnnx: operator set ${JSON.stringify(o.domain)} is not supported (ai.onnx only)`);
  }
  const theanineMade = model.producerName === 'theanine';
  const values = new Map<string, Node>();
  const variables: Node[] = [];
  for (const t of g.initializer) {
    const tname = t.name ?? '';
    const v = fromTensorProto(t, `initializer ${tname}`);
    // float initializers are the weights; theanine's own exports mark their constants const_*
    const trainable = isFloat(v.dtype) && !(theanineMade && tname.startsWith('const_'));
    const node = trainable ? variable(v, v.dtype, tname) : constantNode(v);
    if (trainable) variables.push(node);
    values.set(tname, node);
  }
  const inputs: Node[] = [];
  for (const i of g.input) {
    if (values.has(i.name)) continue;
    const tt = i.type?.tensorType;
    if (tt === undefined || tt === null) throw new OnnxImportError(`importOnnx: input ${i.name} is not a tensor`);
    const shape: Dim[] = (tt.shape?.dim ?? []).map((d) =>
      d.dimValue !== undefined && d.dimValue !== null && Number(d.dimValue) > 0 && (d.dimParam ?? '') === ''
        ? Number(d.dimValue)
        : null,
    );
    const p = placeholder(shape, null, fromOnnxDType(tt.elemType, `input ${i.name}`), false, i.name);
    values.set(i.name, p);
    inputs.push(p);
  }
  for (const n of g.node) {
    if ((n.domain ?? '') !== '' && n.domain !== 'ai.onnx')
      throw new OnnxImportError(`importOnnx: operator ${n.domain}.${n.opType} is not supported (ai.onnx only)`);
    const m = attrs(n);
    let out: Node | Node[];
    if (n.opType === 'Constant') {
      if (!m.has('value'))
        throw new OnnxImportError('importOnnx: Constant without a tensor value has no translation yet');
      out = constantNode(fromTensorProto(m.get('value')!.t!, `Constant ${n.output[0]}`));
    } else {
      const h = handlers[n.opType];
      if (h === undefined)
        throw new OnnxImportError(
          `importOnnx: operator ${n.opType} (node ${JSON.stringify(n.name ?? '')}) is not supported; supported: ${ONNX_IMPORTABLE.join(', ')}`,
        );
      const ins = n.input.map((name) => {
        if (name === '') return undefined;
        const v = values.get(name);
        if (v === undefined)
          throw new OnnxImportError(
            `importOnnx: ${n.opType} reads ${JSON.stringify(name)}, which no earlier node or input defines`,
          );
        return v;
      });
      out = h(ins, m, n);
    }
    const outs = Array.isArray(out) ? out : [out];
    n.output.forEach((name, i) => {
      if (name !== '' && outs[i] !== undefined) values.set(name, outs[i]!);
    });
  }
  const outputs = g.output.map((o) => {
    const v = values.get(o.name);
    if (v === undefined) throw new OnnxImportError(`importOnnx: graph output ${o.name} is never computed`);
    return v;
  });
  return { inputs, outputs, variables, values };
}
