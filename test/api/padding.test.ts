// Zero padding (Keras 2 and Keras 1 forms) and nearest-neighbour resizing, against tf.pad,
// tf.image.resizeNearestNeighbor and a closed form, with static shapes and every error path.
import { expect } from 'chai';
import { backend as K, ShapeError, ValueError } from '../../src/index.js';
import { NDArray } from '../../src/ir/ndarray.js';
import { opTable } from '../helpers/table.js';
import { tf, tfRef } from '../helpers/tf-ref.js';
import { seq } from '../helpers/values.js';

type P = [number, number];
const pad = (pads: P[]) => tfRef((x) => tf.pad(x, pads));

opTable('K.temporal_padding', [
  { name: 'default (1, 1)', inputs: [seq([2, 3, 2])], build: (x) => K.temporal_padding(x), expected: pad([[0, 0], [1, 1], [0, 0]]), staticShape: [2, 5, 2] },
  { name: 'Keras 1 int padding', inputs: [seq([2, 3, 2])], build: (x) => K.temporal_padding(x, 2), expected: pad([[0, 0], [2, 2], [0, 0]]), staticShape: [2, 7, 2] },
  { name: 'pair (1, 3)', inputs: [seq([1, 2, 2])], build: (x) => K.temporal_padding(x, [1, 3]), expected: pad([[0, 0], [1, 3], [0, 0]]), staticShape: [1, 6, 2] },
  { name: '{ padding: [0, 2] }', inputs: [seq([1, 2, 1])], build: (x) => K.temporal_padding(x, { padding: [0, 2] }), expected: [[[1], [2], [0], [0]]], staticShape: [1, 4, 1] },
  { name: 'unknown batch and steps', inputs: [seq([2, 3, 2])], shapes: [[null, null, 2]], build: (x) => K.temporal_padding(x), expected: pad([[0, 0], [1, 1], [0, 0]]), staticShape: [null, null, 2] },
  { name: 'unknown batch, known steps', inputs: [seq([2, 3, 2])], shapes: [[null, 3, 2]], build: (x) => K.temporal_padding(x, [2, 0]), expected: pad([[0, 0], [2, 0], [0, 0]]), staticShape: [null, 5, 2] },
  { name: 'zero padding is x', inputs: [seq([1, 2, 1])], build: (x) => K.temporal_padding(x, 0), expected: [[[1], [2]]], staticShape: [1, 2, 1] },
]);

opTable('K.asymmetric_temporal_padding', [
  { name: 'default 1, 1', inputs: [seq([2, 3, 2])], build: (x) => K.asymmetric_temporal_padding(x), expected: pad([[0, 0], [1, 1], [0, 0]]), staticShape: [2, 5, 2] },
  { name: 'left 2, right 0', inputs: [seq([2, 3, 2])], build: (x) => K.asymmetric_temporal_padding(x, 2, 0), expected: pad([[0, 0], [2, 0], [0, 0]]), staticShape: [2, 5, 2] },
  { name: '{ right_pad: 3 }', inputs: [seq([2, 3, 2])], shapes: [[null, 3, 2]], build: (x) => K.asymmetric_temporal_padding(x, { right_pad: 3 }), expected: pad([[0, 0], [1, 3], [0, 0]]), staticShape: [null, 7, 2] },
]);

const NHWC = [2, 3, 4, 2];
const NCHW = [2, 2, 3, 4];

opTable('K.spatial_2d_padding', [
  { name: 'default ((1, 1), (1, 1)), channels_last config', inputs: [seq(NHWC)], build: (x) => K.spatial_2d_padding(x), expected: pad([[0, 0], [1, 1], [1, 1], [0, 0]]), staticShape: [2, 5, 6, 2] },
  { name: 'Keras 2 pairs, channels_last', inputs: [seq(NHWC)], build: (x) => K.spatial_2d_padding(x, [[1, 2], [3, 0]], 'channels_last'), expected: pad([[0, 0], [1, 2], [3, 0], [0, 0]]), staticShape: [2, 6, 7, 2] },
  { name: 'Keras 2 pairs, channels_first', inputs: [seq(NCHW)], build: (x) => K.spatial_2d_padding(x, [[1, 2], [3, 0]], 'channels_first'), expected: pad([[0, 0], [0, 0], [1, 2], [3, 0]]), staticShape: [2, 2, 6, 7] },
  { name: 'options { padding, data_format }', inputs: [seq(NCHW)], build: (x) => K.spatial_2d_padding(x, { padding: [[0, 1], [1, 0]], data_format: 'channels_first' }), expected: pad([[0, 0], [0, 0], [0, 1], [1, 0]]), staticShape: [2, 2, 4, 5] },
  { name: "Keras 1 symmetric (1, 2), 'th' positionally", inputs: [seq(NCHW)], build: (x) => K.spatial_2d_padding(x, [1, 2], 'th'), expected: pad([[0, 0], [0, 0], [1, 1], [2, 2]]), staticShape: [2, 2, 5, 8] },
  { name: "Keras 1 { dim_ordering: 'tf' }", inputs: [seq(NHWC)], build: (x) => K.spatial_2d_padding(x, { padding: [2, 1], dim_ordering: 'tf' }), expected: pad([[0, 0], [2, 2], [1, 1], [0, 0]]), staticShape: [2, 7, 6, 2] },
  { name: "dim_ordering 'default' follows the config", inputs: [seq(NHWC)], build: (x) => K.spatial_2d_padding(x, { padding: 1, dim_ordering: 'default' }), expected: pad([[0, 0], [1, 1], [1, 1], [0, 0]]), staticShape: [2, 5, 6, 2] },
  { name: 'mixed int and pair entries', inputs: [seq(NHWC)], build: (x) => K.spatial_2d_padding(x, [1, [0, 2]]), expected: pad([[0, 0], [1, 1], [0, 2], [0, 0]]), staticShape: [2, 5, 6, 2] },
  { name: 'unknown dims', inputs: [seq(NHWC)], shapes: [[null, null, 4, 2]], build: (x) => K.spatial_2d_padding(x, [[1, 0], [0, 1]]), expected: pad([[0, 0], [1, 0], [0, 1], [0, 0]]), staticShape: [null, null, 5, 2] },
]);

const NDHWC = [1, 2, 3, 2, 2];
const NCDHW = [1, 2, 2, 3, 2];

opTable('K.spatial_3d_padding', [
  { name: 'default, channels_last', inputs: [seq(NDHWC)], build: (x) => K.spatial_3d_padding(x), expected: pad([[0, 0], [1, 1], [1, 1], [1, 1], [0, 0]]), staticShape: [1, 4, 5, 4, 2] },
  { name: 'Keras 2 pairs, channels_last', inputs: [seq(NDHWC)], build: (x) => K.spatial_3d_padding(x, [[1, 0], [0, 2], [1, 1]], 'channels_last'), expected: pad([[0, 0], [1, 0], [0, 2], [1, 1], [0, 0]]), staticShape: [1, 3, 5, 4, 2] },
  { name: 'Keras 2 pairs, channels_first', inputs: [seq(NCDHW)], build: (x) => K.spatial_3d_padding(x, [[1, 0], [0, 2], [1, 1]], 'channels_first'), expected: pad([[0, 0], [0, 0], [1, 0], [0, 2], [1, 1]]), staticShape: [1, 2, 3, 5, 4] },
  { name: "Keras 1 (1, 2, 0), 'th'", inputs: [seq(NCDHW)], build: (x) => K.spatial_3d_padding(x, [1, 2, 0], 'th'), expected: pad([[0, 0], [0, 0], [1, 1], [2, 2], [0, 0]]), staticShape: [1, 2, 4, 7, 2] },
  { name: 'unknown batch', inputs: [seq(NDHWC)], shapes: [[null, 2, 3, 2, 2]], build: (x) => K.spatial_3d_padding(x, 1), expected: pad([[0, 0], [1, 1], [1, 1], [1, 1], [0, 0]]), staticShape: [null, 4, 5, 4, 2] },
]);

opTable('K.asymmetric_spatial_2d_padding', [
  { name: "defaults, 'tf'", inputs: [seq(NHWC)], build: (x) => K.asymmetric_spatial_2d_padding(x, 1, 1, 1, 1, 'tf'), expected: pad([[0, 0], [1, 1], [1, 1], [0, 0]]), staticShape: [2, 5, 6, 2] },
  { name: "top 2 bottom 0 left 1 right 3, 'th'", inputs: [seq(NCHW)], build: (x) => K.asymmetric_spatial_2d_padding(x, 2, 0, 1, 3, 'th'), expected: pad([[0, 0], [0, 0], [2, 0], [1, 3]]), staticShape: [2, 2, 5, 8] },
  { name: 'options, config default format', inputs: [seq(NHWC)], build: (x) => K.asymmetric_spatial_2d_padding(x, { bottom_pad: 2, left_pad: 0 }), expected: pad([[0, 0], [1, 2], [0, 1], [0, 0]]), staticShape: [2, 6, 5, 2] },
]);

/** Nearest-neighbour upsampling written out: out[.., i, ..] = x[.., floor(i / f), ..] on each spatial axis. */
function upsample(factors: readonly number[], axes: readonly number[]) {
  return (x: NDArray): NDArray => {
    const shape = x.shape.map((d, i) => (axes.includes(i) ? d * factors[axes.indexOf(i)]! : d));
    const n = shape.reduce((p, d) => p * d, 1);
    const out = new Float64Array(n);
    for (let flat = 0; flat < n; flat++) {
      let rem = flat;
      let src = 0;
      let stride = 1;
      for (let i = shape.length - 1; i >= 0; i--) {
        const j = rem % shape[i]!;
        rem = Math.floor(rem / shape[i]!);
        const k = axes.includes(i) ? Math.floor(j / factors[axes.indexOf(i)]!) : j;
        src += k * stride;
        stride *= x.shape[i]!;
      }
      out[flat] = x.data[src]!;
    }
    return new NDArray(out, shape, x.dtype);
  };
}

opTable('K.resize_images', [
  {
    name: 'channels_last vs tf.image.resizeNearestNeighbor', inputs: [seq([2, 2, 3, 2])], build: (x) => K.resize_images(x, 2, 3, 'channels_last'),
    expected: tfRef((x) => tf.image.resizeNearestNeighbor(x as tf.Tensor4D, [4, 9])), staticShape: [2, 4, 9, 2],
  },
  {
    name: 'channels_first', inputs: [seq([1, 2, 2, 3])], build: (x) => K.resize_images(x, 3, 2, 'channels_first'),
    expected: tfRef((x) => tf.transpose(tf.image.resizeNearestNeighbor(tf.transpose(x, [0, 2, 3, 1]) as tf.Tensor4D, [6, 6]), [0, 3, 1, 2])), staticShape: [1, 2, 6, 6],
  },
  { name: "Keras 1 'th'", inputs: [seq([1, 1, 2, 2])], build: (x) => K.resize_images(x, 2, 1, 'th'), expected: [[[[1, 2], [1, 2], [3, 4], [3, 4]]]], staticShape: [1, 1, 4, 2] },
  { name: '{ dim_ordering, interpolation }', inputs: [seq([1, 2, 2, 1])], build: (x) => K.resize_images(x, 1, 2, { dim_ordering: 'tf', interpolation: 'nearest' }), expected: [[[[1], [1], [2], [2]], [[3], [3], [4], [4]]]], staticShape: [1, 2, 4, 1] },
  { name: 'null data_format follows the config', inputs: [seq([1, 2, 2, 3])], build: (x) => K.resize_images(x, 2, 2, null), expected: upsample([2, 2], [1, 2]), staticShape: [1, 4, 4, 3] },
  { name: 'unknown dims', inputs: [seq([2, 2, 3, 2])], shapes: [[null, 2, null, 2]], build: (x) => K.resize_images(x, 2, 2, 'channels_last'), expected: upsample([2, 2], [1, 2]), staticShape: [null, 4, null, 2] },
]);

opTable('K.resize_volumes', [
  { name: 'channels_last', inputs: [seq([1, 2, 2, 3, 2])], build: (x) => K.resize_volumes(x, 2, 1, 3, 'channels_last'), expected: upsample([2, 1, 3], [1, 2, 3]), staticShape: [1, 4, 2, 9, 2] },
  { name: 'channels_first', inputs: [seq([2, 2, 2, 1, 2])], build: (x) => K.resize_volumes(x, 1, 3, 2, 'channels_first'), expected: upsample([1, 3, 2], [2, 3, 4]), staticShape: [2, 2, 2, 3, 4] },
  { name: "Keras 1 { dim_ordering: 'th' }", inputs: [seq([1, 1, 1, 2, 2])], build: (x) => K.resize_volumes(x, 2, 2, 2, { dim_ordering: 'th' }), expected: upsample([2, 2, 2], [2, 3, 4]), staticShape: [1, 1, 2, 4, 4] },
  { name: 'unknown batch and depth', inputs: [seq([1, 2, 2, 2, 1])], shapes: [[null, null, 2, 2, 1]], build: (x) => K.resize_volumes(x, 2, 2, 2, 'channels_last'), expected: upsample([2, 2, 2], [1, 2, 3]), staticShape: [null, null, 4, 4, 1] },
]);

describe('padding and resizing errors', () => {
  const x3 = K.placeholder([2, 3, 4]);
  const x4 = K.placeholder([2, 3, 4, 5]);
  const x5 = K.placeholder([1, 2, 3, 4, 5]);
  it('wrong ranks', () => {
    expect(() => K.temporal_padding(x4)).to.throw(ShapeError, /K\.temporal_padding: x must be 3-D \(batch, steps, features\), got shape \(2, 3, 4, 5\)/);
    expect(() => K.asymmetric_temporal_padding(x4)).to.throw(ShapeError, /K\.asymmetric_temporal_padding: x must be 3-D/);
    expect(() => K.spatial_2d_padding(x3)).to.throw(ShapeError, /K\.spatial_2d_padding: x must be 4-D/);
    expect(() => K.spatial_3d_padding(x4)).to.throw(ShapeError, /K\.spatial_3d_padding: x must be 5-D/);
    expect(() => K.asymmetric_spatial_2d_padding(x5)).to.throw(ShapeError, /K\.asymmetric_spatial_2d_padding: x must be 4-D/);
    expect(() => K.resize_images(x3, 2, 2)).to.throw(ShapeError, /K\.resize_images: x must be 4-D/);
    expect(() => K.resize_volumes(x4, 2, 2, 2)).to.throw(ShapeError, /K\.resize_volumes: x must be 5-D/);
  });
  it('bad paddings', () => {
    expect(() => K.temporal_padding(x3, -1)).to.throw(ValueError, /K\.temporal_padding: padding must be an integer >= 0, got number -1/);
    expect(() => K.temporal_padding(x3, [1, 2, 3] as never)).to.throw(ValueError, /padding must be an int or a pair \[before, after\] of ints, got an array of length 3/);
    expect(() => K.spatial_2d_padding(x4, [1, 1, 1])).to.throw(ValueError, /K\.spatial_2d_padding: padding must be an int or 2 entries \(ints or \[before, after\] pairs\), got an array of length 3/);
    expect(() => K.spatial_2d_padding(x4, [[1, 1], [1, -1]])).to.throw(ValueError, /padding\[1\]\[1\] must be an integer >= 0/);
    expect(() => K.spatial_3d_padding(x5, [[1, 1], [1, 1]])).to.throw(ValueError, /K\.spatial_3d_padding: padding must be an int or 3 entries/);
    expect(() => K.asymmetric_temporal_padding(x3, 1.5)).to.throw(ValueError, /left_pad must be an integer >= 0/);
    expect(() => K.asymmetric_spatial_2d_padding(x4, 1, 1, 1, -2)).to.throw(ValueError, /right_pad must be an integer >= 0/);
  });
  it('bad data_format / dim_ordering list the allowed values', () => {
    expect(() => K.spatial_2d_padding(x4, 1, 'nchw')).to.throw(ValueError, /K\.spatial_2d_padding: unknown data_format the string "nchw" \(allowed: 'channels_first', 'channels_last'\)/);
    expect(() => K.spatial_3d_padding(x5, 1, { dim_ordering: 'channels_first' } as never)).to.throw(ValueError, /unknown dim_ordering the string "channels_first" \(allowed: 'th', 'tf', 'default'\)/);
    expect(() => K.resize_images(x4, 2, 2, 'NHWC')).to.throw(ValueError, /K\.resize_images: unknown data_format the string "NHWC" \(allowed: 'channels_first', 'channels_last'\)/);
    expect(() => K.resize_volumes(x5, 2, 2, 2, 'ndhwc')).to.throw(ValueError, /K\.resize_volumes: unknown data_format .*\(allowed: 'channels_first', 'channels_last'\)/);
    expect(() => K.asymmetric_spatial_2d_padding(x4, 1, 1, 1, 1, 'xy')).to.throw(ValueError, /unknown dim_ordering/);
    expect(() => K.spatial_2d_padding(x4, { data_format: 'channels_last', dim_ordering: 'tf' })).to.throw(ValueError, /give data_format or its Keras 1 name dim_ordering, not both/);
  });
  it('bad resize factors and interpolation', () => {
    expect(() => K.resize_images(x4, 0, 2, 'channels_last')).to.throw(ValueError, /K\.resize_images: height_factor must be an integer >= 1, got number 0/);
    expect(() => K.resize_images(x4, 2, 1.5, 'channels_last')).to.throw(ValueError, /width_factor must be an integer >= 1/);
    expect(() => K.resize_volumes(x5, -1, 1, 1, 'channels_last')).to.throw(ValueError, /depth_factor must be an integer >= 1/);
    expect(() => K.resize_images(x4, 2, 2, 'channels_last', 'bicubic')).to.throw(ValueError, /K\.resize_images: unknown interpolation the string "bicubic" \(allowed: 'nearest', 'bilinear'\)/);
  });
});
