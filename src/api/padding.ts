// Zero padding (Keras 2 and Keras 1 forms) and resizing of images and volumes: one 'pad' op and
// one 'repeat_elements' op (nearest) or constant interpolation matrix (bilinear) per spatial axis.
import { apply } from '../ir/build.js';
import { ShapeError, ValueError } from '../ir/errors.js';
import { NDArray, describe, formatShape } from '../ir/ndarray.js';
import type { Node } from '../ir/node.js';
import { allOptions, checkInt, constantNode, isTensor, need, options, toTensor, type TensorLike } from './args.js';
import { sizeArg, type Size } from './sizes.js';
import { reshape, tile } from './shape.js';
import { image_data_format, type DataFormat } from './config.js';

type Pair = readonly [number, number];
type PadSpec = number | readonly (number | Pair)[];
type FormatOpts = { data_format?: string | null; dim_ordering?: string | null };

const FORMATS = "'channels_first', 'channels_last'";

/**
 * The data format from Keras 2's `data_format` or Keras 1's `dim_ordering` ('th', 'tf',
 * 'default'); null or absent means the configured image_data_format. The positional slot
 * takes either spelling, since Keras 1 had dim_ordering where Keras 2 has data_format.
 */
export function dataFormatArg(fn: string, o: FormatOpts): DataFormat {
  if (o.data_format != null && o.dim_ordering != null)
    throw new ValueError(`${fn}: give data_format or its Keras 1 name dim_ordering, not both`);
  if (o.dim_ordering != null) {
    const d = o.dim_ordering;
    if (d === 'th') return 'channels_first';
    if (d === 'tf') return 'channels_last';
    if (d === 'default') return image_data_format();
    throw new ValueError(`${fn}: unknown dim_ordering ${describe(d)} (allowed: 'th', 'tf', 'default')`);
  }
  const f = o.data_format;
  if (f === null || f === undefined || f === 'default') return image_data_format();
  if (f === 'channels_first' || f === 'th') return 'channels_first';
  if (f === 'channels_last' || f === 'tf') return 'channels_last';
  throw new ValueError(`${fn}: unknown data_format ${describe(f)} (allowed: ${FORMATS})`);
}

function checkRank(fn: string, x: Node, rank: number, layout: string): void {
  if (x.ndim !== rank) throw new ShapeError(`${fn}: x must be ${rank}-D ${layout}, got shape ${formatShape(x.shape)}`);
}

/** One axis' padding: an int (both sides) or a [before, after] pair. */
function pairArg(fn: string, v: unknown, what: string): Pair {
  if (typeof v === 'number') {
    const p = checkInt(fn, v, what, 0);
    return [p, p];
  }
  if (Array.isArray(v) && v.length === 2)
    return [checkInt(fn, v[0], `${what}[0]`, 0), checkInt(fn, v[1], `${what}[1]`, 0)];
  throw new ValueError(`${fn}: ${what} must be an int or a pair [before, after] of ints, got ${describe(v)}`);
}

/**
 * `padding` for `k` spatial axes: an int (every side), or k entries each an int (Keras 1's
 * symmetric form, e.g. (1, 1)) or a [before, after] pair (Keras 2's ((1, 1), (2, 2))).
 */
function padPairs(fn: string, padding: unknown, k: number): Pair[] {
  if (typeof padding === 'number') return new Array<Pair>(k).fill(pairArg(fn, padding, 'padding'));
  if (!Array.isArray(padding) || padding.length !== k) {
    throw new ValueError(
      `${fn}: padding must be an int or ${k} entries (ints or [before, after] pairs), got ${describe(padding)}`,
    );
  }
  return padding.map((p, i) => pairArg(fn, p, `padding[${i}]`));
}

/** Pads the given axes of x; the others get [0, 0]. */
function padAxes(fn: string, x: Node, axes: readonly number[], pairs: readonly Pair[]): Node {
  const pads = x.shape.map((_, i) => {
    const j = axes.indexOf(i);
    return j < 0 ? [0, 0] : [...pairs[j]!];
  });
  if (pads.every((p) => p[0] === 0 && p[1] === 0)) return x;
  return apply('pad', [x], { pads }, fn);
}

/** The spatial axes of a rank-`rank` tensor in `format`. */
function spatialAxes(rank: number, format: DataFormat): number[] {
  const first = format === 'channels_first' ? 2 : 1;
  return Array.from({ length: rank - 2 }, (_, i) => first + i);
}

/** (batch, steps, features): zeros before and after the steps axis. */
export function temporal_padding(x: TensorLike, padding?: number | Pair | { padding?: number | Pair }): Node {
  const t = toTensor('K.temporal_padding', x);
  const o = options<{ padding: number | Pair }>('K.temporal_padding', [padding], ['padding']);
  checkRank('K.temporal_padding', t, 3, '(batch, steps, features)');
  return padAxes('K.temporal_padding', t, [1], [pairArg('K.temporal_padding', o.padding ?? 1, 'padding')]);
}

/** Keras 1: `left_pad` zeros before and `right_pad` after the steps axis. */
export function asymmetric_temporal_padding(
  x: TensorLike,
  left_pad?: number | { left_pad?: number; right_pad?: number },
  right_pad?: number,
): Node {
  const t = toTensor('K.asymmetric_temporal_padding', x);
  const o = options<{ left_pad: number; right_pad: number }>(
    'K.asymmetric_temporal_padding',
    [left_pad, right_pad],
    ['left_pad', 'right_pad'],
  );
  checkRank('K.asymmetric_temporal_padding', t, 3, '(batch, steps, features)');
  const l = checkInt('K.asymmetric_temporal_padding', o.left_pad ?? 1, 'left_pad', 0);
  const r = checkInt('K.asymmetric_temporal_padding', o.right_pad ?? 1, 'right_pad', 0);
  return padAxes('K.asymmetric_temporal_padding', t, [1], [[l, r]]);
}

type SpatialOpts = { padding?: PadSpec } & FormatOpts;

function spatialPadding(fn: string, x: TensorLike, args: readonly unknown[], k: number): Node {
  const t = toTensor(fn, x);
  const o = options<SpatialOpts>(fn, args, ['padding', 'data_format', 'dim_ordering']);
  const fmt = dataFormatArg(fn, o);
  checkRank(
    fn,
    t,
    k + 2,
    k === 2
      ? '(batch, rows, cols, channels) or (batch, channels, rows, cols)'
      : '(batch, dim1, dim2, dim3, channels) or (batch, channels, dim1, dim2, dim3)',
  );
  return padAxes(fn, t, spatialAxes(k + 2, fmt), padPairs(fn, o.padding ?? 1, k));
}

/** Pads the two spatial axes of a 4-D tensor: ((top, bottom), (left, right)), or Keras 1's (rows, cols). */
export function spatial_2d_padding(
  x: TensorLike,
  padding?: PadSpec | SpatialOpts,
  data_format?: string | null,
  dim_ordering?: string | null,
): Node {
  return spatialPadding('K.spatial_2d_padding', x, [padding, data_format, dim_ordering], 2);
}

/** Pads the three spatial axes of a 5-D tensor. */
export function spatial_3d_padding(
  x: TensorLike,
  padding?: PadSpec | SpatialOpts,
  data_format?: string | null,
  dim_ordering?: string | null,
): Node {
  return spatialPadding('K.spatial_3d_padding', x, [padding, data_format, dim_ordering], 3);
}

type AsymOpts = { top_pad?: number; bottom_pad?: number; left_pad?: number; right_pad?: number } & FormatOpts;

/** Keras 1: rows padded top/bottom, columns left/right, of a 4-D tensor. */
export function asymmetric_spatial_2d_padding(
  x: TensorLike,
  top_pad?: number | AsymOpts,
  bottom_pad?: number,
  left_pad?: number,
  right_pad?: number,
  dim_ordering?: string | null,
): Node {
  const fn = 'K.asymmetric_spatial_2d_padding';
  const t = toTensor(fn, x);
  const o = options<AsymOpts>(
    fn,
    [top_pad, bottom_pad, left_pad, right_pad, dim_ordering],
    ['top_pad', 'bottom_pad', 'left_pad', 'right_pad', 'dim_ordering', 'data_format'],
  );
  const fmt = dataFormatArg(fn, o);
  checkRank(fn, t, 4, '(batch, rows, cols, channels) or (batch, channels, rows, cols)');
  const p = (v: number | undefined, what: string) => checkInt(fn, v ?? 1, what, 0);
  const pairs: Pair[] = [
    [p(o.top_pad, 'top_pad'), p(o.bottom_pad, 'bottom_pad')],
    [p(o.left_pad, 'left_pad'), p(o.right_pad, 'right_pad')],
  ];
  return padAxes(fn, t, spatialAxes(4, fmt), pairs);
}

/** Each spatial element repeated by its factor (nearest-neighbour upsampling). */
function resize(fn: string, x: Node, factors: readonly unknown[], names: readonly string[], fmt: DataFormat): Node {
  let out = x;
  spatialAxes(x.ndim, fmt).forEach((axis, i) => {
    const f = sizeArg(fn, names[i]!, factors[i], 1);
    if ('tensor' in f) out = repeatBy(fn, out, axis, f.tensor);
    else if (f.static !== 1) out = apply('repeat_elements', [out], { axis, rep: f.static }, fn);
  });
  return out;
}

/**
 * Each element `rep` times along `axis`, `rep` a scalar int tensor: a new axis after `axis` tiled
 * `rep` times, then merged into it (sized ops, resolved per specialisation to tile and reshape).
 */
function repeatBy(fn: string, x: Node, axis: number, rep: Node): Node {
  const wide = apply('expand_dims', [x], { axis: axis + 1 }, fn);
  const reps: (number | Node)[] = Array.from({ length: x.ndim + 1 }, (_, j) => (j === axis + 1 ? rep : 1));
  const tiled = tile(wide, reps);
  const shape = apply('shape_of', [x], {}, fn);
  const dims: (number | Node)[] = x.shape.map((d, j) => {
    const dj = d ?? apply('index', [shape], { index: j }, fn);
    return j === axis
      ? apply('mul', [typeof dj === 'number' ? constantNode(new NDArray([dj], [], 'int32')) : dj, rep], {}, fn)
      : dj;
  });
  return reshape(tiled, dims);
}

type ResizeOpts = FormatOpts & { interpolation?: string };
type ResizeAll = ResizeOpts & { x?: TensorLike; X?: TensorLike; height_factor?: Size; width_factor?: Size };

const INTERPOLATIONS = ['nearest', 'bilinear'] as const;

function interpolationArg(fn: string, o: ResizeOpts): 'nearest' | 'bilinear' {
  const v = o.interpolation ?? 'nearest';
  if (!(INTERPOLATIONS as readonly unknown[]).includes(v)) {
    throw new ValueError(`${fn}: unknown interpolation ${describe(o.interpolation)} (allowed: 'nearest', 'bilinear')`);
  }
  return v as 'nearest' | 'bilinear';
}

/**
 * Bilinear upsampling of one axis by an integer factor, as TensorFlow 1's resize_bilinear (Keras
 * 2.3's, align_corners and half_pixel_centers false): output i reads input i / f, between rows
 * floor(i / f) and the next (the last row repeated past the end). A constant (n, n * f) matrix
 * contracted with the axis, so it differentiates and fuses like any dot.
 */
function bilinearAxis(fn: string, x: Node, axis: number, f: number): Node {
  const n = x.shape[axis]!;
  if (n === null)
    throw new ShapeError(`${fn}: bilinear interpolation needs the size of axis ${axis} of x ${formatShape(x.shape)}`);
  const m = n * f;
  const w = new Float64Array(n * m);
  for (let i = 0; i < m; i++) {
    const src = i / f;
    const lo = Math.floor(src);
    const hi = Math.min(lo + 1, n - 1);
    const frac = src - lo;
    w[lo * m + i] = w[lo * m + i]! + (1 - frac);
    w[hi * m + i] = w[hi * m + i]! + frac;
  }
  const last = x.ndim - 1;
  const perm = Array.from({ length: x.ndim }, (_, k) => k);
  perm[axis] = last;
  perm[last] = axis;
  const moved = axis === last ? x : apply('transpose', [x], { perm }, fn);
  const y = apply('dot', [moved, constantNode(new NDArray(w, [n, m], x.dtype))], {}, fn);
  return axis === last ? y : apply('transpose', [y], { perm }, fn);
}

/**
 * resize_images(x, height_factor, width_factor, data_format, interpolation='nearest'|'bilinear'):
 * upsamples the rows and columns of a 4-D tensor by integer factors. Keras 2.3 calls the first
 * parameter `x` (2.0: `X`); the options form ({ x, height_factor, ... }) takes either.
 */
export function resize_images(
  x: TensorLike | ResizeAll,
  height_factor?: Size,
  width_factor?: Size,
  data_format?: string | null | ResizeOpts,
  interpolation?: string | ResizeOpts,
): Node {
  const fn = 'K.resize_images';
  if (typeof x === 'object' && x !== null && !Array.isArray(x) && !(x instanceof NDArray) && !isTensor(x)) {
    const a = allOptions(
      fn,
      [x],
      ['x', 'height_factor', 'width_factor', 'data_format', 'interpolation', 'dim_ordering'],
      { X: 'x' },
    );
    const rest: ResizeOpts = {
      data_format: a['data_format'] as string | null,
      dim_ordering: a['dim_ordering'] as string | null,
      interpolation: a['interpolation'] as string,
    };
    return resize_images(
      need(fn, a, 'x') as TensorLike,
      need(fn, a, 'height_factor') as number,
      need(fn, a, 'width_factor') as number,
      rest,
    );
  }
  const t = toTensor(fn, x, 'x');
  const o = options<ResizeOpts>(fn, [data_format, interpolation], ['data_format', 'interpolation', 'dim_ordering']);
  const fmt = dataFormatArg(fn, o);
  const mode = interpolationArg(fn, o);
  checkRank(fn, t, 4, '(batch, rows, cols, channels) or (batch, channels, rows, cols)');
  if (mode === 'nearest') return resize(fn, t, [height_factor, width_factor], ['height_factor', 'width_factor'], fmt);
  let out = t;
  spatialAxes(4, fmt).forEach((axis, i) => {
    const f = checkInt(fn, [height_factor, width_factor][i], ['height_factor', 'width_factor'][i]!, 1);
    if (f !== 1) out = bilinearAxis(fn, out, axis, f);
  });
  return out;
}

/** Upsamples the three spatial axes of a 5-D tensor by integer factors. */
export function resize_volumes(
  X: TensorLike,
  depth_factor: Size,
  height_factor: Size,
  width_factor: Size,
  data_format?: string | null | FormatOpts,
): Node {
  const fn = 'K.resize_volumes';
  const t = toTensor(fn, X, 'X');
  const o = options<FormatOpts>(fn, [data_format], ['data_format', 'dim_ordering']);
  const fmt = dataFormatArg(fn, o);
  checkRank(fn, t, 5, '(batch, dim1, dim2, dim3, channels) or (batch, channels, dim1, dim2, dim3)');
  return resize(
    fn,
    t,
    [depth_factor, height_factor, width_factor],
    ['depth_factor', 'height_factor', 'width_factor'],
    fmt,
  );
}
