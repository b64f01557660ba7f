// The Keras 2.3 convolutions beyond the seed pages: depthwise_conv2d, separable_conv1d,
// conv3d_transpose, local_conv1d and local_conv2d. All composed from existing ops (the grouped
// `conv`, `conv_transpose`, slices and batch_dot), so gradients and every target come with them.
import { apply } from '../ir/build.js';
import { ShapeError, ValueError } from '../ir/errors.js';
import { describe, formatShape } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import type { Dim } from '../ir/types.js';
import { toTensor, type TensorLike } from './args.js';
import {
  CONV_PADDINGS,
  K2,
  TRANSPOSE_K2,
  channelAxis,
  checkDim,
  checkFits,
  checkRank,
  dataLayout,
  fromLast,
  required,
  separable_conv2d,
  spatialAxes,
  toLast,
  transposeConv,
  window,
  type IntOrTuple,
  type OutputShape,
  type ConvArgs,
  type Opt,
} from './conv.js';
import { convOptions, dataFormatOf, tupleOf } from './conv-args.js';
import type { DataFormat } from './config.js';
import { batch_dot } from './linalg.js';
import { concatenate, slice_along } from './indexing.js';
import { permute_dimensions, reshape } from './shape.js';
import { temporal_padding } from './padding.js';

/**
 * depthwise_conv2d(x, depthwise_kernel (rows, cols, in_channels, depth_multiplier), strides,
 * padding, data_format, dilation_rate): channel c of x convolved with depthwise_kernel[..., c, m]
 * gives output channel c * depth_multiplier + m (TensorFlow's depthwise_conv2d).
 */
export function depthwise_conv2d(x: TensorLike, depthwise_kernel: TensorLike, ...args: ConvArgs): Node {
  const fn = 'K.depthwise_conv2d';
  const o = convOptions(fn, args, { k2: K2 });
  const xt = toTensor(fn, x, 'x');
  const dk = toTensor(fn, depthwise_kernel, 'depthwise_kernel', xt.dtype);
  const fmt = dataFormatOf(fn, o['data_format']);
  const win = window(fn, o, 2, CONV_PADDINGS);
  checkRank(fn, 'x', xt, 4, dataLayout(2, fmt));
  checkRank(fn, 'depthwise_kernel', dk, 4, '(rows, cols, in_channels, depth_multiplier)');
  const cAx = channelAxis(2, fmt);
  checkDim(fn, ['depthwise_kernel', dk, 2], ['x', xt, cAx], 'depthwise_kernel in_channels against x channels');
  checkFits(fn, xt, spatialAxes(2, fmt), 'depthwise_kernel of shape', dk.shape, [0, 1], win);
  const [kh, kw, c0, m] = dk.shape as [Dim, Dim, Dim, Dim];
  const c = c0 ?? xt.shape[cAx]!;
  if (c === null)
    throw new ShapeError(
      `${fn}: the number of input channels must be known statically (x ${formatShape(xt.shape)}, depthwise_kernel ${formatShape(dk.shape)})`,
    );
  const target = [kh, kw, 1, m === null ? null : c * m];
  if (target.filter((t) => t === null).length > 1)
    throw new ShapeError(`${fn}: depthwise_kernel shape ${formatShape(dk.shape)} needs at most one unknown dim`);
  // (kh, kw, C, M) -> (kh, kw, 1, C*M): output channel c*M + m of a C-group convolution reads channel c.
  const grouped = apply('reshape', [dk], { shape: target.map((t) => t ?? -1) }, fn);
  return fromLast(fn, apply('conv', [toLast(fn, xt, fmt), grouped], { ...win, groups: c }, fn), fmt);
}

/**
 * separable_conv1d(x, depthwise_kernel (length, in, multiplier), pointwise_kernel (1, in *
 * multiplier, out), strides, padding, data_format, dilation_rate): as Keras, the 2-D separable
 * convolution of x with a unit axis inserted before the steps; 'causal' pads dilation * (length
 * - 1) zeros on the left first, as Keras 2.3 does.
 */
export function separable_conv1d(
  x: TensorLike,
  depthwise_kernel: TensorLike,
  pointwise_kernel: TensorLike,
  ...args: ConvArgs
): Node {
  const fn = 'K.separable_conv1d';
  const o = convOptions(fn, args, { k2: K2 });
  let xt = toTensor(fn, x, 'x');
  const dk = toTensor(fn, depthwise_kernel, 'depthwise_kernel', xt.dtype);
  const pk = toTensor(fn, pointwise_kernel, 'pointwise_kernel', xt.dtype);
  const fmt = dataFormatOf(fn, o['data_format']);
  const [s] = tupleOf(fn, 'strides', o['strides'], 1);
  const [dil] = tupleOf(fn, 'dilation_rate', o['dilation_rate'], 1);
  checkRank(fn, 'x', xt, 3, dataLayout(1, fmt));
  checkRank(fn, 'depthwise_kernel', dk, 3, '(length, in_channels, depth_multiplier)');
  checkRank(fn, 'pointwise_kernel', pk, 3, '(1, in_channels * depth_multiplier, out_channels)');
  let pad = o['padding'] ?? 'valid';
  if (pad === 'causal') {
    const k = dk.shape[0]!;
    if (k === null)
      throw new ShapeError(
        `${fn}: causal padding needs the kernel length, but depthwise_kernel has shape ${formatShape(dk.shape)}`,
      );
    const left = dil! * (k - 1);
    xt =
      fmt === 'channels_first'
        ? permute_dimensions(temporal_padding(permute_dimensions(xt, [0, 2, 1]), [left, 0]), [0, 2, 1])
        : temporal_padding(xt, [left, 0]);
    pad = 'valid';
  }
  // channels_last (N, L, C) -> (N, 1, L, C); channels_first (N, C, L) -> (N, C, 1, L).
  const ax = fmt === 'channels_first' ? 2 : 1;
  const x2 = apply('expand_dims', [xt], { axis: ax }, fn);
  const dk2 = apply('expand_dims', [dk], { axis: 0 }, fn);
  const pk2 = apply('expand_dims', [pk], { axis: 0 }, fn);
  const y = separable_conv2d(x2, dk2, pk2, {
    strides: [1, s!],
    padding: pad as string,
    data_format: fmt,
    dilation_rate: [1, dil!],
  });
  return apply('squeeze', [y], { axis: ax }, fn);
}

/**
 * conv3d_transpose(x, kernel (d1, d2, d3, out_channels, in_channels), output_shape, strides,
 * padding, data_format): the gradient of conv3d with respect to its input, as TensorFlow's
 * conv3d_transpose (no kernel flip; Keras 2.3 has no dilation_rate here).
 */
export function conv3d_transpose(
  x: TensorLike,
  kernel: TensorLike,
  output_shape?: Opt<OutputShape>,
  strides?: Opt<IntOrTuple>,
  padding?: Opt<string>,
  data_format?: Opt<string | null>,
): Node {
  const fn = 'K.conv3d_transpose';
  const o = convOptions(fn, [output_shape, strides, padding, data_format], {
    k2: TRANSPOSE_K2.filter((n) => n !== 'dilation_rate'),
  });
  return transposeConv(fn, x, kernel, required(fn, o, 'output_shape'), o, 4, 3, 3);
}

function intPair(fn: string, what: string, v: unknown, d: number): number[] {
  if (v === undefined || v === null) throw new ValueError(`${fn}: ${what} is required`);
  return tupleOf(fn, what, v, d);
}

/**
 * Keras' locally connected product: `patches` (one (1, batch, feature_dim) slice per output
 * position, in Keras' order) against kernel (positions, feature_dim, filters) -> (positions, batch, filters).
 */
function localProduct(fn: string, patches: Node[], kt: Node, featureDim: number): Node {
  const rows = patches.map((p) => reshape(p, [1, -1, featureDim]));
  const agg = rows.length === 1 ? rows[0]! : concatenate(rows, 0);
  return batch_dot(agg, kt);
}

function localKernel(
  fn: string,
  kernel: TensorLike,
  like: Node,
  positions: number,
  window: number,
  channels: Dim,
): { kt: Node; featureDim: number; filters: number } {
  const kt = toTensor(fn, kernel, 'kernel', like.dtype);
  if (kt.ndim !== 3 || kt.shape.some((d) => d === null))
    throw new ShapeError(
      `${fn}: kernel must have a static shape (output positions, kernel size * channels, filters), got ${formatShape(kt.shape)}`,
    );
  const [p, f, filters] = kt.shape as [number, number, number];
  if (p !== positions)
    throw new ShapeError(
      `${fn}: kernel shape ${formatShape(kt.shape)} has ${p} output positions on axis 0, but x, kernel_size and strides give ${positions}`,
    );
  if (channels !== null && f !== window * channels)
    throw new ShapeError(
      `${fn}: kernel shape ${formatShape(kt.shape)} has ${f} on axis 1, but kernel_size and x's ${channels} channels give ${window} * ${channels} = ${window * channels}`,
    );
  return { kt, featureDim: f, filters };
}

type LocalFormat = string | null | { data_format?: string | null };

/** A local convolution's data_format, given alone or as an options object. */
function localFormat(fn: string, data_format: LocalFormat | undefined): DataFormat {
  const df =
    typeof data_format === 'object' && data_format !== null
      ? convOptions(fn, [data_format], { k2: ['data_format'] })['data_format']
      : data_format;
  return dataFormatOf(fn, df);
}

/** A d-D local convolution's data format and inputs, checked to be of rank d + 2 in that format. */
function localInputs(
  fn: string,
  inputs: TensorLike,
  data_format: LocalFormat | undefined,
  d: number,
): { fmt: DataFormat; xt: Node } {
  const fmt = localFormat(fn, data_format);
  const xt = toTensor(fn, inputs, 'inputs');
  checkRank(fn, 'inputs', xt, d + 2, dataLayout(d, fmt));
  return { fmt, xt };
}

/**
 * local_conv1d(inputs, kernel (output_length, kernel_size * channels, filters), kernel_size,
 * strides, data_format): an unshared-weights 1-D convolution, as Keras 2.3 builds it (a slice
 * per output step, batch_dot with the kernel). channels_first inputs (batch, channels, steps)
 * flatten each patch channel-major, as Keras' local_conv2d does for that format.
 */
export function local_conv1d(
  inputs: TensorLike,
  kernel: TensorLike,
  kernel_size: IntOrTuple,
  strides: IntOrTuple,
  data_format?: LocalFormat,
): Node {
  const fn = 'K.local_conv1d';
  const { fmt, xt } = localInputs(fn, inputs, data_format, 1);
  const [k] = intPair(fn, 'kernel_size', kernel_size, 1);
  const [s] = intPair(fn, 'strides', strides, 1);
  const stepAx = fmt === 'channels_first' ? 2 : 1;
  const steps = xt.shape[stepAx]!;
  const channels = xt.shape[fmt === 'channels_first' ? 1 : 2]!;
  if (steps === null)
    throw new ShapeError(`${fn}: inputs must have a static number of steps, got shape ${formatShape(xt.shape)}`);
  if (steps < k!)
    throw new ShapeError(
      `${fn}: inputs of shape ${formatShape(xt.shape)} have ${steps} steps, fewer than kernel_size ${k}`,
    );
  const out = Math.floor((steps - k!) / s!) + 1;
  const { kt, featureDim } = localKernel(fn, kernel, xt, out, k!, channels);
  const patches = Array.from({ length: out }, (_, i) => slice_along(xt, stepAx, i * s!, i * s! + k!));
  return permute_dimensions(localProduct(fn, patches, kt, featureDim), [1, 0, 2]);
}

/**
 * local_conv2d(inputs, kernel (rows * cols, kernel_rows * kernel_cols * channels, filters),
 * kernel_size, strides, output_shape (rows, cols), data_format): Keras 2.3's unshared-weights
 * 2-D convolution; each patch is flattened in the data format's own order.
 */
export function local_conv2d(
  inputs: TensorLike,
  kernel: TensorLike,
  kernel_size: IntOrTuple,
  strides: IntOrTuple,
  output_shape: readonly number[],
  data_format?: LocalFormat,
): Node {
  const fn = 'K.local_conv2d';
  const { fmt, xt } = localInputs(fn, inputs, data_format, 2);
  const [kr, kc] = intPair(fn, 'kernel_size', kernel_size, 2) as [number, number];
  const [sr, sc] = intPair(fn, 'strides', strides, 2) as [number, number];
  if (
    !Array.isArray(output_shape) ||
    output_shape.length !== 2 ||
    !output_shape.every((d) => Number.isInteger(d) && d >= 1)
  ) {
    throw new ValueError(
      `${fn}: output_shape must be [rows, cols] of positive integers, got ${Array.isArray(output_shape) ? JSON.stringify(output_shape) : describe(output_shape)}`,
    );
  }
  const [or, oc] = output_shape as [number, number];
  const [rAx, cAx] = spatialAxes(2, fmt) as [number, number];
  [
    [rAx, or, kr, sr],
    [cAx, oc, kc, sc],
  ].forEach(([ax, o, k, st]) => {
    const have = xt.shape[ax!]!;
    if (have !== null && (o! - 1) * st! + k! > have) {
      throw new ShapeError(
        `${fn}: output_shape ${JSON.stringify(output_shape)} needs ${(o! - 1) * st! + k!} entries on axis ${ax} of inputs, which has shape ${formatShape(xt.shape)}`,
      );
    }
  });
  const { kt, featureDim, filters } = localKernel(fn, kernel, xt, or * oc, kr * kc, xt.shape[channelAxis(2, fmt)]!);
  const patches: Node[] = [];
  for (let i = 0; i < or; i++) {
    for (let j = 0; j < oc; j++) {
      patches.push(slice_along(slice_along(xt, rAx, i * sr, i * sr + kr), cAx, j * sc, j * sc + kc));
    }
  }
  const y = reshape(localProduct(fn, patches, kt, featureDim), [or, oc, -1, filters]);
  return permute_dimensions(y, fmt === 'channels_first' ? [2, 3, 0, 1] : [2, 0, 1, 3]);
}
