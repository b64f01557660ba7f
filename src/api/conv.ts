// The convolution family: conv1d/2d/3d, conv2d_transpose (and Keras 1's deconv2d),
// separable_conv2d, pool2d/pool3d. Cross-correlation, kernels (spatial..., in, out) whatever the
// data format; the IR ops are channels-last, so channels_first is a transpose in and out here.
import { apply } from '../ir/build.js';
import { isFloat, isInt } from '../ir/dtype.js';
import { ShapeError, ValueError } from '../ir/errors.js';
import { describe, formatShape } from '../ir/ndarray.js';
import { Node } from '../ir/node.js';
import { effectiveSize, outSizeFor, type PaddingMode } from '../ir/ops/window.js';
import { POOL_MODES, type PoolMode } from '../ir/ops/pool.js';
import type { Dim } from '../ir/types.js';
import { toTensor, type TensorLike } from './args.js';
import { sizeList, staticInt } from './sizes.js';
import type { ConvSizedAttrs } from '../ir/ops/conv.js';
import { floatx, type DataFormat } from './config.js';
import {
  convOptions,
  dataFormatOf,
  isDimOrdering,
  paddingOf,
  toChannelsFirst,
  toChannelsLast,
  tupleOf,
  type Signature,
} from './conv-args.js';

export type IntOrTuple = number | readonly number[];
export interface ConvOptions {
  strides?: IntOrTuple;
  padding?: string;
  data_format?: string | null;
  dilation_rate?: IntOrTuple;
  /** Keras 1 spellings. */
  border_mode?: string;
  dim_ordering?: string;
  stride?: IntOrTuple;
  filter_dilation?: IntOrTuple;
  image_shape?: readonly Dim[] | null;
  volume_shape?: readonly Dim[] | null;
  filter_shape?: readonly Dim[] | null;
  /** conv2d_transpose / deconv2d and pool2d / pool3d parameters, for the options-object form. */
  output_shape?: OutputShape;
  pool_size?: IntOrTuple;
  pool_mode?: string;
}
export type Opt<T> = T | ConvOptions;
/** Keras 2's trailing arguments of a convolution (each may be an options object in their place). */
export type ConvArgs = [
  strides?: Opt<IntOrTuple>,
  padding?: Opt<string>,
  data_format?: Opt<string | null>,
  dilation_rate?: Opt<IntOrTuple>,
];
/** Keras 1's trailing arguments of conv2d and conv3d (`shape` is image_shape or volume_shape). */
type ConvK1Args = [
  strides: IntOrTuple,
  border_mode: string,
  dim_ordering: DimOrdering,
  shape?: Hint,
  filter_shape?: Hint,
  filter_dilation?: IntOrTuple,
];
/** The trailing arguments of a pooling. */
type PoolArgs = [
  pool_size?: Opt<IntOrTuple>,
  strides?: Opt<IntOrTuple>,
  padding?: Opt<string>,
  data_format?: Opt<string | null>,
  pool_mode?: Opt<string>,
];

const SPATIAL = ['', 'length', 'rows, cols', 'dim1, dim2, dim3'];

/** Spatial axes of data of rank d + 2 in the given format. */
export function spatialAxes(d: number, fmt: DataFormat): number[] {
  return Array.from({ length: d }, (_, i) => (fmt === 'channels_first' ? i + 2 : i + 1));
}
export const channelAxis = (d: number, fmt: DataFormat): number => (fmt === 'channels_first' ? 1 : d + 1);

export function checkRank(fn: string, what: string, t: Node, rank: number, layout: string): void {
  if (t.ndim !== rank)
    throw new ShapeError(`${fn}: ${what} must have rank ${rank} ${layout}; got shape ${formatShape(t.shape)}`);
}
export function dataLayout(d: number, fmt: DataFormat): string {
  return fmt === 'channels_first' ? `(batch, channels, ${SPATIAL[d]})` : `(batch, ${SPATIAL[d]}, channels)`;
}

/** Two static dims that must agree, named by tensor and axis. */
export function checkDim(
  fn: string,
  a: [string, Node | readonly Dim[], number],
  b: [string, Node | readonly Dim[], number],
  meaning: string,
): void {
  const sa = a[1] instanceof Node ? a[1].shape : a[1];
  const sb = b[1] instanceof Node ? b[1].shape : b[1];
  const da = sa[a[2]]!;
  const db = sb[b[2]]!;
  if (da !== null && db !== null && da !== db) {
    throw new ShapeError(
      `${fn}: ${a[0]} shape ${formatShape(sa)} and ${b[0]} shape ${formatShape(sb)} do not match (${meaning}): axis ${a[2]} of ${a[0]} is ${da} but axis ${b[2]} of ${b[0]} is ${db}`,
    );
  }
}

export interface Window {
  readonly strides: number[];
  readonly dilation: number[];
  readonly padding: PaddingMode;
}

/** The window (kernel axes `wAxes` of `w`) must fit x's spatial axes under the padding; names both shapes. */
export function checkFits(
  fn: string,
  x: Node,
  axes: readonly number[],
  wWhat: string,
  w: readonly Dim[],
  wAxes: readonly number[],
  win: Window,
): void {
  axes.forEach((ax, i) => {
    const s = x.shape[ax]!;
    const k = w[wAxes[i]!]!;
    if (s === null || k === null) return;
    if (outSizeFor(s, k, win.strides[i]!, win.dilation[i]!, win.padding) === null) {
      throw new ShapeError(
        `${fn}: x of shape ${formatShape(x.shape)} is too small for ${wWhat} ${formatShape(w)} with '${win.padding}' padding: ` +
          `axis ${ax} of x has ${s} but the window spans ${effectiveSize(k, win.dilation[i]!)} (axis ${wAxes[i]} is ${k}, dilation ${win.dilation[i]})`,
      );
    }
  });
}

export const toLast = (fn: string, x: Node, fmt: DataFormat): Node =>
  fmt === 'channels_first' ? apply('transpose', [x], { perm: toChannelsLast(x.ndim) }, fn) : x;
export const fromLast = (fn: string, y: Node, fmt: DataFormat): Node =>
  fmt === 'channels_first' ? apply('transpose', [y], { perm: toChannelsFirst(y.ndim) }, fn) : y;

export function window(fn: string, o: Record<string, unknown>, d: number, paddings: readonly PaddingMode[]): Window {
  return {
    strides: tupleOf(fn, 'strides', o['strides'], d),
    dilation: tupleOf(fn, 'dilation_rate', o['dilation_rate'], d),
    padding: paddingOf(fn, o['padding'], paddings),
  };
}

/** A convolution's name, spatial rank d, operands, options and the paddings it accepts. */
type ConvCall = [
  fn: string,
  d: number,
  x: TensorLike,
  kernel: TensorLike,
  o: Record<string, unknown>,
  paddings: readonly PaddingMode[],
];

interface ConvInputs {
  readonly xt: Node;
  readonly kt: Node;
  readonly fmt: DataFormat;
  readonly win: Window;
}

/** A d-D convolution's x (checked to be of rank d + 2 in its data format), kernel, format and window. */
function convInputs(...[fn, d, x, kernel, o, paddings]: ConvCall): ConvInputs {
  const xt = toTensor(fn, x, 'x');
  const kt = toTensor(fn, kernel, 'kernel', xt.dtype);
  const fmt = dataFormatOf(fn, o['data_format']);
  const win = window(fn, o, d, paddings);
  checkRank(fn, 'x', xt, d + 2, dataLayout(d, fmt));
  return { xt, kt, fmt, win };
}

/** An N-d convolution of x (data_format layout) with kernel (spatial..., in, out). */
function convN(...call: ConvCall): Node {
  const [fn, d] = call;
  const { xt, kt, fmt, win } = convInputs(...call);
  checkRank(fn, 'kernel', kt, d + 2, `(${SPATIAL[d]}, in_channels, out_channels)`);
  checkDim(fn, ['kernel', kt, d], ['x', xt, channelAxis(d, fmt)], 'kernel in_channels against x channels');
  checkFits(fn, xt, spatialAxes(d, fmt), 'kernel of shape', kt.shape, [...Array(d).keys()], win);
  const y = apply('conv', [toLast(fn, xt, fmt), kt], { ...win, groups: 1 }, fn);
  return fromLast(fn, y, fmt);
}

export const CONV_PADDINGS: readonly PaddingMode[] = ['valid', 'same'];
export const K2 = ['strides', 'padding', 'data_format', 'dilation_rate'];

type Hint = readonly Dim[] | null;

/** Keras 2 conv1d(x, kernel, strides, padding, data_format, dilation_rate); Keras 1 conv1d(x, kernel, stride, border_mode, image_shape, filter_shape). */
export function conv1d(x: TensorLike, kernel: TensorLike, ...args: ConvArgs): Node;
export function conv1d(
  x: TensorLike,
  kernel: TensorLike,
  stride: IntOrTuple,
  border_mode: string,
  image_shape: Hint,
  filter_shape?: Hint,
): Node;
export function conv1d(x: TensorLike, kernel: TensorLike, ...rest: unknown[]): Node {
  const sig: Signature = {
    k2: K2,
    k1: ['stride', 'border_mode', 'image_shape', 'filter_shape'],
    isK1: (a) => Array.isArray(a[2]),
  };
  const o = convOptions('K.conv1d', rest, sig);
  return convN('K.conv1d', 1, x, kernel, o, ['valid', 'same', 'causal']);
}

const k1Conv = (shapeHint: string): Signature => ({
  k2: K2,
  k1: ['strides', 'border_mode', 'dim_ordering', shapeHint, 'filter_shape', 'filter_dilation'],
  isK1: (a) => isDimOrdering(a[2]),
});

type DimOrdering = 'th' | 'tf' | 'default';

/** conv2d(x, kernel, strides, padding, data_format, dilation_rate); Keras 1's border_mode, dim_ordering, filter_dilation accepted. */
export function conv2d(x: TensorLike, kernel: TensorLike, ...args: ConvArgs): Node;
export function conv2d(x: TensorLike, kernel: TensorLike, ...k1: ConvK1Args): Node;
export function conv2d(x: TensorLike, kernel: TensorLike, ...rest: unknown[]): Node {
  return convN('K.conv2d', 2, x, kernel, convOptions('K.conv2d', rest, k1Conv('image_shape')), CONV_PADDINGS);
}

/** conv3d(x, kernel, strides, padding, data_format, dilation_rate); Keras 1's spellings accepted. */
export function conv3d(x: TensorLike, kernel: TensorLike, ...args: ConvArgs): Node;
export function conv3d(x: TensorLike, kernel: TensorLike, ...k1: ConvK1Args): Node;
export function conv3d(x: TensorLike, kernel: TensorLike, ...rest: unknown[]): Node {
  return convN('K.conv3d', 3, x, kernel, convOptions('K.conv3d', rest, k1Conv('volume_shape')), CONV_PADDINGS);
}

export type OutputShape = readonly (number | null | Node)[];

/**
 * Transposed 2-D convolution: the gradient of conv2d (with this kernel, strides, padding and
 * dilation) with respect to an input of shape `output_shape`, applied to x. `kernel` is
 * (kh, kw, out_channels, in_channels) as TensorFlow's; `kIn`/`kOut` say which kernel axes those are.
 */
export function transposeConv(
  fn: string,
  x: TensorLike,
  kernel: TensorLike,
  outputShape: unknown,
  o: Record<string, unknown>,
  kIn: number,
  kOut: number,
  d = 2,
): Node {
  const { xt, kt, fmt, win } = convInputs(fn, d, x, kernel, o, CONV_PADDINGS);
  checkRank(
    fn,
    'kernel',
    kt,
    d + 2,
    kIn === d + 1 ? `(${SPATIAL[d]}, out_channels, in_channels)` : `(${SPATIAL[d]}, in_channels, out_channels)`,
  );
  const cAx = channelAxis(d, fmt);
  const sp = spatialAxes(d, fmt);
  const { dims: os, sizes } = outputShapeOf(fn, outputShape, d + 2);
  checkDim(fn, ['kernel', kt, kIn], ['x', xt, cAx], 'kernel in_channels against x channels');
  checkDim(fn, ['kernel', kt, kOut], ['output_shape', os, cAx], 'kernel out_channels against output_shape channels');
  checkDim(fn, ['output_shape', os, 0], ['x', xt, 0], 'batch');
  sp.forEach((ax, i) => {
    const [s, k, got] = [os[ax]!, kt.shape[i]!, xt.shape[ax]!];
    if (s === null || k === null || got === null) return;
    const want = outSizeFor(s, k, win.strides[i]!, win.dilation[i]!, win.padding);
    if (want !== got) {
      throw new ShapeError(
        `${fn}: output_shape ${formatShape(os)} does not fit x of shape ${formatShape(xt.shape)}: along axis ${ax}, a '${win.padding}' convolution ` +
          `with kernel size ${k}, stride ${win.strides[i]} and dilation ${win.dilation[i]} maps ${s} to ${want === null ? 'nothing (kernel larger than input)' : want}, but x has ${got}`,
      );
    }
  });
  const swap = [...Array(d).keys(), d + 1, d];
  const k = kOut === d ? kt : apply('transpose', [kt], { perm: swap }, fn);
  const y = sizedTransposeConv(
    fn,
    toLast(fn, xt, fmt),
    k,
    { ...win, groups: 1 },
    sp.map((ax) => sizes[ax]!),
  );
  return fromLast(fn, y, fmt);
}

/**
 * conv_transpose with result sizes that may be scalar int tensors (Keras' Conv2DTranspose computes
 * them from K.shape(inputs)): static sizes go in attrs.size; otherwise a fill_dims tensor of shape
 * (1, sizes...) is the op's size input, resolved per specialisation (src/ir/ops/sized.ts). Shared by
 * every transposed convolution.
 */
export function sizedTransposeConv(
  fn: string,
  x: Node,
  k: Node,
  attrs: Omit<ConvSizedAttrs, 'size'>,
  sizes: readonly (number | Node)[],
): Node {
  const known = sizes.map((v) => (v instanceof Node ? staticInt(v) : v));
  if (known.every((d) => d !== null)) return apply('conv_transpose', [x, k], { ...attrs, size: known as number[] }, fn);
  const s = sizeList(fn, 'output_shape', [1, ...sizes], 1);
  if ('static' in s) return apply('conv_transpose', [x, k], { ...attrs, size: s.static.slice(1) }, fn);
  const like = apply('fill_dims', [s.vector], { known: s.known, value: 0, dtype: x.dtype }, fn);
  return apply('conv_transpose', [x, k, like], { ...attrs, size: null }, fn);
}

/**
 * output_shape: `rank` entries in data_format layout; batch may be null, -1 or a tensor (it is x's);
 * the others are positive ints or scalar int tensors (K.shape(x)[1] * 2). Returns what is known
 * statically and each entry as a size.
 */
function outputShapeOf(fn: string, v: unknown, rank: number): { dims: Dim[]; sizes: (number | Node)[] } {
  const bad = (): never => {
    throw new ValueError(
      `${fn}: output_shape must be a list of ${rank} dims (batch, then positive integers or integer scalar tensors in data_format order; batch may be null), got ${Array.isArray(v) ? JSON.stringify(v.map((e) => (e instanceof Node ? 'tensor' : e))) : describe(v)}`,
    );
  };
  if (!Array.isArray(v) || v.length !== rank) return bad();
  const sizes: (number | Node)[] = [];
  const dims = v.map((e: unknown, i) => {
    if (i === 0 && (e === null || e === undefined || e === -1 || e instanceof Node)) {
      sizes.push(1);
      return null;
    }
    if (e instanceof Node) {
      if (e.ndim !== 0 || !isInt(e.dtype)) return bad();
      const k = staticInt(e);
      if (k !== null && k < 1) return bad();
      sizes.push(k ?? e);
      return k;
    }
    if (typeof e !== 'number' || !Number.isInteger(e) || e < 1) return bad();
    sizes.push(e);
    return e;
  });
  return { dims, sizes };
}

export const TRANSPOSE_K2 = ['output_shape', 'strides', 'padding', 'data_format', 'dilation_rate'];

export function required(fn: string, o: Record<string, unknown>, name: string): unknown {
  if (o[name] === undefined) throw new ValueError(`${fn}: ${name} is required`);
  return o[name];
}

/** conv2d_transpose(x, kernel, output_shape, strides, padding, data_format, dilation_rate); kernel (kh, kw, out_channels, in_channels). */
export function conv2d_transpose(
  x: TensorLike,
  kernel: TensorLike,
  output_shape?: Opt<OutputShape>,
  ...args: ConvArgs
): Node {
  const fn = 'K.conv2d_transpose';
  const o = convOptions(fn, [output_shape, ...args], { k2: TRANSPOSE_K2 });
  return transposeConv(fn, x, kernel, required(fn, o, 'output_shape'), o, 3, 2);
}

/**
 * Keras 1's deconv2d(x, kernel, output_shape, strides, border_mode, dim_ordering, image_shape,
 * filter_shape). Its kernel is (kh, kw, in_channels, out_channels), the layout of the Keras 1
 * TensorFlow backend, which swapped the last two axes before calling TensorFlow's
 * conv2d_transpose; the result is conv2d_transpose with that swapped kernel (no flip, as
 * TensorFlow). dim_ordering 'th'/'tf' picks the layout of x and output_shape only;
 * image_shape and filter_shape are accepted and unused (Theano's optimisation hints).
 */
export function deconv2d(
  x: TensorLike,
  kernel: TensorLike,
  output_shape?: Opt<OutputShape>,
  strides?: Opt<IntOrTuple>,
  border_mode?: Opt<string>,
  dim_ordering?: Opt<string>,
  image_shape?: Opt<Hint>,
  filter_shape?: Opt<Hint>,
): Node {
  const fn = 'K.deconv2d';
  const names = ['output_shape', 'strides', 'border_mode', 'dim_ordering', 'image_shape', 'filter_shape'];
  const o = convOptions(fn, [output_shape, strides, border_mode, dim_ordering, image_shape, filter_shape], {
    k2: names,
  });
  return transposeConv(fn, x, kernel, required(fn, o, 'output_shape'), o, 2, 3);
}

/** separable_conv2d(x, depthwise_kernel (kh, kw, in, multiplier), pointwise_kernel (1, 1, in * multiplier, out), strides, padding, data_format, dilation_rate). */
export function separable_conv2d(
  x: TensorLike,
  depthwise_kernel: TensorLike,
  pointwise_kernel: TensorLike,
  ...args: ConvArgs
): Node {
  const fn = 'K.separable_conv2d';
  const o = convOptions(fn, args, {
    k2: K2,
    k1: ['strides', 'border_mode', 'dim_ordering'],
  });
  const xt = toTensor(fn, x, 'x');
  const dk = toTensor(fn, depthwise_kernel, 'depthwise_kernel', xt.dtype);
  const pk = toTensor(fn, pointwise_kernel, 'pointwise_kernel', xt.dtype);
  const fmt = dataFormatOf(fn, o['data_format']);
  const win = window(fn, o, 2, CONV_PADDINGS);
  checkRank(fn, 'x', xt, 4, dataLayout(2, fmt));
  checkRank(fn, 'depthwise_kernel', dk, 4, '(rows, cols, in_channels, depth_multiplier)');
  checkRank(fn, 'pointwise_kernel', pk, 4, '(1, 1, in_channels * depth_multiplier, out_channels)');
  const cAx = channelAxis(2, fmt);
  checkDim(fn, ['depthwise_kernel', dk, 2], ['x', xt, cAx], 'depthwise_kernel in_channels against x channels');
  const [kh, kw, c0, m] = dk.shape as [Dim, Dim, Dim, Dim];
  const c = c0 ?? xt.shape[cAx]!;
  const cm = c !== null && m !== null ? c * m : null;
  const pc = pk.shape[2]!;
  if (cm !== null && pc !== null && pc !== cm) {
    throw new ShapeError(
      `${fn}: pointwise_kernel shape ${formatShape(pk.shape)} does not match depthwise_kernel shape ${formatShape(dk.shape)}: axis 2 of pointwise_kernel is ${pc} but in_channels * depth_multiplier is ${c} * ${m} = ${cm}`,
    );
  }
  [0, 1].forEach((ax) => {
    if (pk.shape[ax] !== null && pk.shape[ax] !== 1)
      throw new ShapeError(
        `${fn}: pointwise_kernel shape ${formatShape(pk.shape)} must be 1 on axis ${ax} (a 1x1 kernel), got ${pk.shape[ax]}`,
      );
  });
  checkFits(fn, xt, spatialAxes(2, fmt), 'depthwise_kernel of shape', dk.shape, [0, 1], win);
  if (c === null)
    throw new ShapeError(
      `${fn}: the number of input channels must be known statically (x ${formatShape(xt.shape)}, depthwise_kernel ${formatShape(dk.shape)})`,
    );
  // (kh, kw, C, M) -> (kh, kw, 1, C*M): output channel c*M + m of a C-group convolution reads channel c.
  const target = [kh, kw, 1, cm];
  if (target.filter((t) => t === null).length > 1)
    throw new ShapeError(`${fn}: depthwise_kernel shape ${formatShape(dk.shape)} needs at most one unknown dim`);
  const grouped = apply('reshape', [dk], { shape: target.map((t) => t ?? -1) }, fn);
  const depthwise = apply('conv', [toLast(fn, xt, fmt), grouped], { ...win, groups: c }, fn);
  const pointwise = apply(
    'conv',
    [depthwise, pk],
    { strides: [1, 1], dilation: [1, 1], padding: 'valid', groups: 1 },
    fn,
  );
  return fromLast(fn, pointwise, fmt);
}

function poolN(fn: string, d: number, x: TensorLike, o: Record<string, unknown>): Node {
  let xt = toTensor(fn, x, 'x');
  const fmt = dataFormatOf(fn, o['data_format']);
  const size = tupleOf(fn, 'pool_size', required(fn, o, 'pool_size'), d);
  const win: Window = {
    strides: tupleOf(fn, 'strides', o['strides'], d),
    dilation: new Array<number>(d).fill(1),
    padding: paddingOf(fn, o['padding'], CONV_PADDINGS),
  };
  const mode = o['pool_mode'] ?? 'max';
  if (!(POOL_MODES as readonly unknown[]).includes(mode)) {
    throw new ValueError(
      `${fn}: unknown pool_mode ${typeof mode === 'string' ? JSON.stringify(mode) : describe(mode)} (allowed: ${POOL_MODES.map((p) => `'${p}'`).join(', ')})`,
    );
  }
  checkRank(fn, 'x', xt, d + 2, dataLayout(d, fmt));
  checkFits(fn, xt, spatialAxes(d, fmt), 'pool_size', size, [...Array(d).keys()], win);
  // Averages of integers are fractions: pool them in floatx, as K.mean does.
  if (mode === 'avg' && !isFloat(xt.dtype)) xt = apply('cast', [xt], { dtype: floatx() }, fn);
  const y = apply('pool', [toLast(fn, xt, fmt)], { window: size, ...win, mode: mode as PoolMode }, fn);
  return fromLast(fn, y, fmt);
}

const POOL_NAMES = ['pool_size', 'strides', 'padding', 'data_format', 'pool_mode'];
const POOL_K1 = ['pool_size', 'strides', 'border_mode', 'dim_ordering', 'pool_mode'];

/** pool2d(x, pool_size, strides=(1, 1), padding='valid', data_format, pool_mode='max'|'avg'). */
export function pool2d(x: TensorLike, ...args: PoolArgs): Node {
  return poolN('K.pool2d', 2, x, convOptions('K.pool2d', args, { k2: POOL_NAMES, k1: POOL_K1 }));
}

/** pool3d(x, pool_size, strides=(1, 1, 1), padding='valid', data_format, pool_mode='max'|'avg'). */
export function pool3d(x: TensorLike, ...args: PoolArgs): Node {
  return poolN('K.pool3d', 3, x, convOptions('K.pool3d', args, { k2: POOL_NAMES, k1: POOL_K1 }));
}
