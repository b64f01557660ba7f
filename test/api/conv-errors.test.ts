// Every error path of the convolution family's API: bad data_format / padding / pool_mode list
// the allowed values; shape mismatches name both shapes and the axis; argument-form errors.
import { expect } from 'chai';
import { backend as K } from '../../src/index.js';
import { ShapeError, ValueError } from '../../src/ir/errors.js';
import { NDArray } from '../../src/ir/ndarray.js';

const x2 = () => K.placeholder([null, 6, 7, 3]);
const k2 = () => K.placeholder([3, 2, 3, 4]);

describe('conv family errors: argument values', () => {
  it('a bad data_format lists the allowed values', () => {
    expect(() => K.conv2d(x2(), k2(), { data_format: 'nchw' })).to.throw(ValueError, /K\.conv2d: unknown data_format "nchw" \(allowed: 'channels_last', 'channels_first' \(Keras 1: 'tf', 'th', 'default'\)\)/);
    expect(() => K.pool2d(x2(), 2, 1, 'valid', 'NHWC')).to.throw(ValueError, /K\.pool2d: unknown data_format "NHWC" \(allowed: 'channels_last'/);
    expect(() => K.conv1d(K.placeholder([1, 5, 3]), K.placeholder([2, 3, 1]), { data_format: 'xx' })).to.throw(ValueError, /K\.conv1d: unknown data_format "xx"/);
    expect(() => K.conv3d(K.placeholder([1, 3, 3, 3, 1]), K.placeholder([1, 1, 1, 1, 1]), 1, 'valid', 5 as never)).to.throw(ValueError, /K\.conv3d: unknown data_format number 5/);
  });

  it('a bad padding lists the allowed values for the function', () => {
    expect(() => K.conv2d(x2(), k2(), 1, 'full')).to.throw(ValueError, /K\.conv2d: unknown padding "full" \(allowed: 'valid', 'same'\)$/);
    expect(() => K.conv1d(K.placeholder([1, 5, 3]), K.placeholder([2, 3, 1]), 1, 'full')).to.throw(ValueError, /K\.conv1d: unknown padding "full" \(allowed: 'valid', 'same', 'causal'\)/);
    expect(() => K.pool2d(x2(), 2, 1, 'SAME')).to.throw(ValueError, /K\.pool2d: unknown padding "SAME" \(allowed: 'valid', 'same'\)/);
    expect(() => K.conv2d(x2(), k2(), { border_mode: 'half' })).to.throw(ValueError, /K\.conv2d: unknown padding "half"/);
  });

  it("'causal' is for conv1d only", () => {
    expect(() => K.conv2d(x2(), k2(), 1, 'causal')).to.throw(ValueError, /K\.conv2d: unknown padding "causal" \(allowed: 'valid', 'same'\) \(causal padding is for conv1d only\)/);
    expect(() => K.conv3d(K.placeholder([1, 3, 3, 3, 1]), K.placeholder([1, 1, 1, 1, 1]), 1, 'causal')).to.throw(ValueError, /K\.conv3d: .*causal padding is for conv1d only/);
    expect(() => K.conv2d_transpose(x2(), K.placeholder([3, 3, 2, 3]), [1, 6, 7, 2], 1, 'causal')).to.throw(ValueError, /K\.conv2d_transpose: unknown padding "causal"/);
    expect(() => K.separable_conv2d(x2(), K.placeholder([3, 3, 3, 1]), K.placeholder([1, 1, 3, 2]), 1, 'causal')).to.throw(ValueError, /K\.separable_conv2d: unknown padding "causal"/);
    expect(() => K.pool2d(x2(), 2, 1, 'causal')).to.throw(ValueError, /K\.pool2d: unknown padding "causal"/);
  });

  it('a bad pool_mode lists the allowed values', () => {
    expect(() => K.pool2d(x2(), 2, 1, 'valid', null, 'sum')).to.throw(ValueError, /K\.pool2d: unknown pool_mode "sum" \(allowed: 'max', 'avg'\)/);
    expect(() => K.pool3d(K.placeholder([1, 3, 3, 3, 1]), 2, 1, 'valid', null, 'average')).to.throw(ValueError, /K\.pool3d: unknown pool_mode "average" \(allowed: 'max', 'avg'\)/);
  });

  it('strides, dilation_rate and pool_size must be positive ints or tuples of the right length', () => {
    expect(() => K.conv2d(x2(), k2(), 0)).to.throw(ValueError, /K\.conv2d: strides must be a positive integer or a list of 2 positive integers, got number 0/);
    expect(() => K.conv2d(x2(), k2(), [1])).to.throw(ValueError, /K\.conv2d: strides must be .* list of 2 positive integers, got \[1\]/);
    expect(() => K.conv2d(x2(), k2(), 1.5)).to.throw(ValueError, /strides must be/);
    expect(() => K.conv1d(K.placeholder([1, 5, 3]), K.placeholder([2, 3, 1]), 'a' as never)).to.throw(ValueError, /K\.conv1d: strides must be a positive integer or a list of 1 positive integer, got the string "a"/);
    expect(() => K.conv3d(K.placeholder([1, 3, 3, 3, 1]), K.placeholder([1, 1, 1, 1, 1]), 1, 'valid', null, [1, 0, 1])).to.throw(ValueError, /K\.conv3d: dilation_rate must be .* 3 positive integers, got \[1,0,1\]/);
    expect(() => K.pool2d(x2(), [2, 2, 2])).to.throw(ValueError, /K\.pool2d: pool_size must be .* 2 positive integers, got \[2,2,2\]/);
    expect(() => K.pool2d(x2())).to.throw(ValueError, /K\.pool2d: pool_size is required/);
    expect(() => K.pool3d(K.placeholder([1, 3, 3, 3, 1]), { strides: 2 })).to.throw(ValueError, /K\.pool3d: pool_size is required/);
  });

  it('option forms: unknown names, duplicates, Keras 1 and 2 spellings of one parameter, too many arguments', () => {
    expect(() => K.conv2d(x2(), k2(), { pading: 'same' } as never)).to.throw(ValueError, /K\.conv2d: unknown option "pading" \(allowed: "strides", "padding", "data_format", "dilation_rate", "border_mode", "dim_ordering", "image_shape", "filter_shape", "filter_dilation"\)/);
    expect(() => K.conv2d(x2(), k2(), 1, { strides: 2 })).to.throw(ValueError, /K\.conv2d: strides given both positionally and in the options object/);
    expect(() => K.conv2d(x2(), k2(), { padding: 'same', border_mode: 'valid' })).to.throw(ValueError, /K\.conv2d: give padding or its Keras 1 name border_mode, not both/);
    expect(() => K.conv2d(x2(), k2(), { dim_ordering: 'th', data_format: 'channels_first' })).to.throw(ValueError, /give data_format or its Keras 1 name dim_ordering, not both/);
    expect(() => K.conv1d(K.placeholder([1, 5, 3]), K.placeholder([2, 3, 1]), { stride: 1, strides: 1 })).to.throw(ValueError, /give strides or its Keras 1 name stride, not both/);
    expect(() => K.conv2d(x2(), k2(), { filter_dilation: 2, dilation_rate: 2 })).to.throw(ValueError, /give dilation_rate or its Keras 1 name filter_dilation, not both/);
    expect(() => K.conv2d(x2(), k2(), { image_shape: 5 } as never)).to.throw(ValueError, /K\.conv2d: image_shape must be a list of dims or null, got number 5/);
    expect(() => (K.conv2d as (...a: unknown[]) => unknown)(x2(), k2(), 1, 'valid', null, 1, 7)).to.throw(ValueError, /K\.conv2d: too many arguments \(5 optional given, at most 4\)/);
    expect(() => K.separable_conv2d(x2(), K.placeholder([3, 3, 3, 1]), K.placeholder([1, 1, 3, 2]), { dilation: 2 } as never)).to.throw(ValueError, /unknown option "dilation"/);
  });

  it('x and kernel must be tensors or tensor-like values', () => {
    expect(() => K.conv2d('x' as never, k2())).to.throw(TypeError, /conv2d: x is the string "x"/);
    expect(() => K.conv2d(x2(), { a: 1 } as never)).to.throw(TypeError, /conv2d: kernel is an object/);
  });
});

describe('conv family errors: shapes', () => {
  it('x and kernel ranks must fit the function', () => {
    expect(() => K.conv2d(K.placeholder([2, 6, 3]), k2())).to.throw(ShapeError, /K\.conv2d: x must have rank 4 \(batch, rows, cols, channels\); got shape \(2, 6, 3\)/);
    expect(() => K.conv2d(K.placeholder([2, 6, 7]), k2(), 1, 'valid', 'channels_first')).to.throw(ShapeError, /x must have rank 4 \(batch, channels, rows, cols\)/);
    expect(() => K.conv2d(x2(), K.placeholder([3, 3, 4]))).to.throw(ShapeError, /K\.conv2d: kernel must have rank 4 \(rows, cols, in_channels, out_channels\); got shape \(3, 3, 4\)/);
    expect(() => K.conv1d(K.placeholder([5, 3]), K.placeholder([2, 3, 1]))).to.throw(ShapeError, /K\.conv1d: x must have rank 3 \(batch, length, channels\); got shape \(5, 3\)/);
    expect(() => K.conv3d(K.placeholder([1, 3, 3, 3, 1]), K.placeholder([1, 1, 1, 1]))).to.throw(ShapeError, /K\.conv3d: kernel must have rank 5 \(dim1, dim2, dim3, in_channels, out_channels\); got shape \(1, 1, 1, 1\)/);
    expect(() => K.pool3d(K.placeholder([1, 3, 3, 1]), 2)).to.throw(ShapeError, /K\.pool3d: x must have rank 5 \(batch, dim1, dim2, dim3, channels\); got shape \(1, 3, 3, 1\)/);
  });

  it('kernel in_channels against x channels name both shapes and axes', () => {
    expect(() => K.conv2d(x2(), K.placeholder([3, 2, 4, 4]))).to.throw(ShapeError, /K\.conv2d: kernel shape \(3, 2, 4, 4\) and x shape \(None, 6, 7, 3\) do not match \(kernel in_channels against x channels\): axis 2 of kernel is 4 but axis 3 of x is 3/);
    expect(() => K.conv2d(K.placeholder([null, 4, 6, 7]), k2(), 1, 'valid', 'channels_first')).to.throw(ShapeError, /axis 2 of kernel is 3 but axis 1 of x is 4/);
    expect(() => K.conv1d(K.placeholder([1, 5, 3]), K.placeholder([2, 2, 1]))).to.throw(ShapeError, /K\.conv1d: kernel shape \(2, 2, 1\) and x shape \(1, 5, 3\) do not match .*: axis 1 of kernel is 2 but axis 2 of x is 3/);
  });

  it('an input smaller than the (dilated) window under valid padding names both shapes and the axis', () => {
    expect(() => K.conv2d(K.placeholder([null, 2, 7, 3]), k2())).to.throw(ShapeError, /K\.conv2d: x of shape \(None, 2, 7, 3\) is too small for kernel of shape \(3, 2, 3, 4\) with 'valid' padding: axis 1 of x has 2 but the window spans 3 \(axis 0 is 3, dilation 1\)/);
    expect(() => K.conv2d(x2(), k2(), 1, 'valid', null, [1, 7])).to.throw(ShapeError, /axis 2 of x has 7 but the window spans 8 \(axis 1 is 2, dilation 7\)/);
    expect(() => K.pool2d(K.placeholder([1, 3, 1, 2]), 2)).to.throw(ShapeError, /K\.pool2d: x of shape \(1, 3, 1, 2\) is too small for pool_size \(2, 2\) with 'valid' padding: axis 2 of x has 1/);
  });

  it('the same conditions are checked at run time when dims are unknown statically', () => {
    const x = K.placeholder([null, null, null, null]);
    const f = K.function([x], [K.conv2d(x, K.constant(new NDArray(new Float64Array(24), [3, 2, 1, 4])))]);
    expect(() => f([new NDArray(new Float64Array(2 * 2 * 3), [1, 2, 2, 3])])).to.throw(/kernel shape \(3, 2, 1, 4\) does not match input shape \(1, 2, 2, 3\): axis 2 of the kernel \(input channels\) is 1 but axis 3 of input \(channels\) is 3/);
    expect(() => f([new NDArray(new Float64Array(2 * 2), [1, 2, 2, 1])])).to.throw(/input size 2 on spatial axis 0 is smaller than the window \(3, dilation 1\)/);
  });
});

describe('conv family errors: conv2d_transpose, deconv2d, separable_conv2d', () => {
  const x = () => K.placeholder([null, 4, 5, 3]);
  const k = () => K.placeholder([3, 3, 2, 3]);
  it('output_shape is required and must be 4 dims', () => {
    expect(() => K.conv2d_transpose(x(), k())).to.throw(ValueError, /K\.conv2d_transpose: output_shape is required/);
    expect(() => K.conv2d_transpose(x(), k(), [6, 7, 2])).to.throw(ValueError, /K\.conv2d_transpose: output_shape must be a list of 4 dims .* got \[6,7,2\]/);
    expect(() => K.conv2d_transpose(x(), k(), [null, 6, null, 2])).to.throw(ValueError, /output_shape must be a list of 4 dims/);
    expect(() => K.conv2d_transpose(x(), k(), 'auto' as never)).to.throw(ValueError, /output_shape must be .* got the string "auto"/);
  });
  it('kernel, x and output_shape channels, batch and spatial sizes must agree', () => {
    expect(() => K.conv2d_transpose(x(), K.placeholder([3, 3, 3, 2]), [1, 6, 7, 3])).to.throw(ShapeError, /K\.conv2d_transpose: kernel shape \(3, 3, 3, 2\) and x shape \(None, 4, 5, 3\) do not match \(kernel in_channels against x channels\): axis 3 of kernel is 2 but axis 3 of x is 3/);
    expect(() => K.conv2d_transpose(x(), k(), [1, 6, 7, 5])).to.throw(ShapeError, /kernel shape \(3, 3, 2, 3\) and output_shape shape \(1, 6, 7, 5\) do not match \(kernel out_channels against output_shape channels\): axis 2 of kernel is 2 but axis 3 of output_shape is 5/);
    expect(() => K.conv2d_transpose(K.placeholder([2, 4, 5, 3]), k(), [3, 6, 7, 2])).to.throw(ShapeError, /\(batch\): axis 0 of output_shape is 3 but axis 0 of x is 2/);
    expect(() => K.conv2d_transpose(x(), k(), [1, 12, 10, 2], 2, 'same')).to.throw(ShapeError, /K\.conv2d_transpose: output_shape \(1, 12, 10, 2\) does not fit x of shape \(None, 4, 5, 3\): along axis 1, a 'same' convolution with kernel size 3, stride 2 and dilation 1 maps 12 to 6, but x has 4/);
    expect(() => K.conv2d_transpose(x(), k(), [1, 2, 7, 2])).to.throw(ShapeError, /maps 2 to nothing \(kernel larger than input\), but x has 4/);
    expect(() => K.conv2d_transpose(K.placeholder([1, 4, 4, 5]), k(), [1, 2, 8, 10], 2, 'same', 'channels_first')).to.throw(ShapeError, /axis 3 of kernel is 3 but axis 1 of x is 4/);
    expect(() => K.conv2d_transpose(K.placeholder([1, 3, 4, 5]), k(), [1, 2, 8, 11], 2, 'same', 'channels_first')).to.throw(ShapeError, /along axis 3, a 'same' convolution with kernel size 3, stride 2 and dilation 1 maps 11 to 6, but x has 5/);
    expect(() => K.conv2d_transpose(K.placeholder([1, 4, 5]), k(), [1, 6, 7, 2])).to.throw(ShapeError, /x must have rank 4/);
    expect(() => K.conv2d_transpose(x(), K.placeholder([3, 3, 2]), [1, 6, 7, 2])).to.throw(ShapeError, /kernel must have rank 4 \(rows, cols, out_channels, in_channels\)/);
  });
  it("deconv2d names Keras 1's kernel axes (in_channels on axis 2)", () => {
    expect(() => K.deconv2d(x(), K.placeholder([3, 3, 2, 3]), [1, 6, 7, 3])).to.throw(ShapeError, /K\.deconv2d: kernel shape \(3, 3, 2, 3\) and x shape \(None, 4, 5, 3\) do not match \(kernel in_channels against x channels\): axis 2 of kernel is 2 but axis 3 of x is 3/);
    expect(() => K.deconv2d(x(), K.placeholder([3, 3, 3]), [1, 6, 7, 3])).to.throw(ShapeError, /K\.deconv2d: kernel must have rank 4 \(rows, cols, in_channels, out_channels\)/);
    expect(() => K.deconv2d(x(), K.placeholder([3, 3, 3, 2]))).to.throw(ValueError, /K\.deconv2d: output_shape is required/);
    expect(() => K.deconv2d(x(), K.placeholder([3, 3, 3, 2]), [1, 6, 7, 2], 1, 'valid', 'xy')).to.throw(ValueError, /K\.deconv2d: unknown data_format "xy"/);
  });
  it('separable_conv2d kernels must fit x and each other', () => {
    const sx = () => K.placeholder([null, 6, 7, 3]);
    expect(() => K.separable_conv2d(sx(), K.placeholder([3, 3, 3]), K.placeholder([1, 1, 3, 2]))).to.throw(ShapeError, /K\.separable_conv2d: depthwise_kernel must have rank 4 \(rows, cols, in_channels, depth_multiplier\); got shape \(3, 3, 3\)/);
    expect(() => K.separable_conv2d(sx(), K.placeholder([3, 3, 3, 1]), K.placeholder([3, 2]))).to.throw(ShapeError, /pointwise_kernel must have rank 4 \(1, 1, in_channels \* depth_multiplier, out_channels\)/);
    expect(() => K.separable_conv2d(sx(), K.placeholder([3, 3, 2, 1]), K.placeholder([1, 1, 2, 2]))).to.throw(ShapeError, /depthwise_kernel shape \(3, 3, 2, 1\) and x shape \(None, 6, 7, 3\) do not match \(depthwise_kernel in_channels against x channels\): axis 2 of depthwise_kernel is 2 but axis 3 of x is 3/);
    expect(() => K.separable_conv2d(sx(), K.placeholder([3, 3, 3, 2]), K.placeholder([1, 1, 3, 2]))).to.throw(ShapeError, /pointwise_kernel shape \(1, 1, 3, 2\) does not match depthwise_kernel shape \(3, 3, 3, 2\): axis 2 of pointwise_kernel is 3 but in_channels \* depth_multiplier is 3 \* 2 = 6/);
    expect(() => K.separable_conv2d(sx(), K.placeholder([3, 3, 3, 1]), K.placeholder([2, 1, 3, 2]))).to.throw(ShapeError, /pointwise_kernel shape \(2, 1, 3, 2\) must be 1 on axis 0 \(a 1x1 kernel\), got 2/);
    expect(() => K.separable_conv2d(K.placeholder([null, 6, 7, null]), K.placeholder([3, 3, null, 1]), K.placeholder([1, 1, 3, 2]))).to.throw(ShapeError, /the number of input channels must be known statically/);
    expect(() => K.separable_conv2d(sx(), K.placeholder([null, null, 3, 1]), K.placeholder([1, 1, 3, 2]))).to.throw(ShapeError, /depthwise_kernel shape \(None, None, 3, 1\) needs at most one unknown dim/);
    expect(() => K.separable_conv2d(K.placeholder([null, 2, 7, 3]), K.placeholder([3, 3, 3, 1]), K.placeholder([1, 1, 3, 2]))).to.throw(ShapeError, /is too small for depthwise_kernel of shape \(3, 3, 3, 1\)/);
  });
});
