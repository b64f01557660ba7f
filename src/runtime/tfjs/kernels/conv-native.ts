// tfjs' own convolution and pooling kernels, where their definition is exactly ours: each
// function returns undefined when it does not apply, and conv.ts falls back to the general
// tap-based composition. 1-D windows run as 2-D ones of height 1. Pooling uses tfjs only for
// 1-D/2-D float32 windows without dilation and 'valid'/'same' padding (tfjs' 'same' is
// TensorFlow's, as ours; its max never picks padding, its average counts only input cells);
// see nativePoolGrad for where its gradients agree with ours. 3-D max pooling never uses tfjs: the wasm
// MaxPool3D starts its maximum from FLT_MIN, not -infinity.
import type * as Tfjs from '@tensorflow/tfjs';
import type { PoolAttrs } from '../../../ir/ops/pool.js';
import type { WindowAttrs } from '../../../ir/ops/window.js';
import type { TF } from '../load.js';
import type { Tensor } from '../types.js';
import { crop, padSpatial, type Geo } from './window.js';

type T4 = Tfjs.Tensor4D;
type Pair = [number, number];

const ones = (v: readonly number[]) => v.every((s) => s === 1);

/** A (N, S, C) tensor as (N, 1, S, C), and 1-D window parameters as 2-D ones. */
function as2d(tf: TF, x: Tensor, d: number): T4 {
  return (d === 1 ? tf.expandDims(x, 1) : x) as T4;
}
const pair = (v: readonly number[], d: number): Pair => (d === 1 ? [1, v[0]!] : [v[0]!, v[1]!]);
const back = (tf: TF, y: Tensor, d: number): Tensor => (d === 1 ? tf.squeeze(y, [1]) : y);

/**
 * Convolution, groups 1, strides or dilation 1 (tfjs' restriction). 'valid' and 'same' go to
 * tfjs as they are (tfjs' 'same' is TensorFlow's split, as ours, dilation included), which
 * lets its kernels pad on the fly; 'causal' is padded first.
 */
export function nativeConv(
  tf: TF,
  x: Tensor,
  w: Tensor,
  g: Geo,
  a: WindowAttrs & { readonly groups: number },
): Tensor | undefined {
  const d = g.d;
  if (a.groups !== 1 || !(ones(a.strides) || ones(a.dilation)) || d > 3) return undefined;
  const named = a.padding === 'valid' || a.padding === 'same';
  const pad = named ? (a.padding as 'valid' | 'same') : 'valid';
  const xin = named ? x : padSpatial(tf, x, g);
  if (d <= 2) {
    const w2 = (d === 1 ? tf.expandDims(w, 0) : w) as T4;
    return back(tf, tf.conv2d(as2d(tf, xin, d), w2, pair(a.strides, d), pad, 'NHWC', pair(a.dilation, d)), d);
  }
  type T5 = Tfjs.Tensor5D;
  const t3 = (v: readonly number[]) => v as [number, number, number];
  return tf.conv3d(xin as T5, w as T5, t3(a.strides), pad, 'NDHWC', t3(a.dilation));
}

/**
 * The adjoint of conv in x (groups 1, dilation 1, 1-D/2-D): tf.conv2dTranspose onto the padded
 * input size (its 'valid' output of that size is exactly the adjoint), then the padding cropped.
 */
export function nativeConvTranspose(
  tf: TF,
  dy: Tensor,
  w: Tensor,
  g: Geo,
  groups: number,
  channels: number,
): Tensor | undefined {
  const d = g.d;
  if (groups !== 1 || !ones(g.a.dilation) || d > 2) return undefined;
  const n = dy.shape[0]!;
  const size = d === 1 ? [1, g.padded[0]!] : g.padded;
  const w2 = (d === 1 ? tf.expandDims(w, 0) : w) as T4;
  const y = tf.conv2dTranspose(as2d(tf, dy, d), w2, [n, size[0]!, size[1]!, channels], pair(g.a.strides, d), 'valid');
  return crop(tf, back(tf, y, d), g);
}

/**
 * The adjoint of conv in w (groups 1, dilation 1, 1-D/2-D), itself a convolution with batch and
 * channels swapped (wasm has no Conv2DBackpropFilter, and the cpu one is ~20x slower than this):
 *   dw[t, c, f] = sum_{n,o} xpad[n, o*s + t, c] dy[n, o, f]
 * is xpad as (C, P..., N) convolved with dy as a (O..., N, F) kernel at dilation s, stride 1.
 */
export function nativeConvKernelGrad(
  tf: TF,
  x: Tensor,
  dy: Tensor,
  g: Geo,
  k: readonly number[],
  groups: number,
): Tensor | undefined {
  const d = g.d;
  if (groups !== 1 || !ones(g.a.dilation) || d > 2) return undefined;
  const xpad = as2d(tf, padSpatial(tf, x, g), d);
  const dy2 = as2d(tf, dy, d);
  const c = x.shape[d + 1]!;
  const f = dy.shape[d + 1]!;
  const k2 = d === 1 ? [1, k[0]!] : [k[0]!, k[1]!];
  const xt = tf.transpose(xpad, [3, 1, 2, 0]) as T4;
  const dk = tf.transpose(dy2, [1, 2, 0, 3]) as T4;
  const full = tf.conv2d(xt, dk, 1, 'valid', 'NHWC', pair(g.a.strides, d));
  const w = tf.transpose(tf.slice(full, [0, 0, 0, 0], [c, k2[0]!, k2[1]!, f]), [1, 2, 0, 3]);
  return d === 1 ? tf.reshape(w, [k[0]!, c, f]) : w;
}

function poolable(x: Tensor, a: PoolAttrs): boolean {
  return (
    x.dtype === 'float32' && a.window.length <= 2 && ones(a.dilation) && (a.padding === 'valid' || a.padding === 'same')
  );
}

function pool2d(tf: TF, x: T4, a: PoolAttrs, d: number): T4 {
  const pad = a.padding as 'valid' | 'same';
  return a.mode === 'max'
    ? tf.maxPool(x, pair(a.window, d), pair(a.strides, d), pad)
    : tf.avgPool(x, pair(a.window, d), pair(a.strides, d), pad);
}

export function nativePool(tf: TF, x: Tensor, a: PoolAttrs): Tensor | undefined {
  if (!poolable(x, a)) return undefined;
  const d = a.window.length;
  return back(tf, pool2d(tf, as2d(tf, x, d), a, d), d);
}

/**
 * The pooling gradient, as tfjs differentiates its own pooling (tf.grad with dy), where that is
 * ours: max on the cpu and tfjs-node backends (the wasm MaxPoolGrad sends ties and 'same'
 * borders elsewhere), average with 'valid' padding only (tfjs' average gradient divides by
 * the whole window, padding included).
 */
export function nativePoolGrad(tf: TF, x: Tensor, dy: Tensor, a: PoolAttrs, backend: string): Tensor | undefined {
  if (!poolable(x, a) || dy.dtype !== 'float32') return undefined;
  if (a.mode === 'max' ? backend === 'wasm' : a.padding !== 'valid') return undefined;
  const d = a.window.length;
  const dx = tf.grad((v: Tensor) => pool2d(tf, v as T4, a, d))(as2d(tf, x, d), as2d(tf, dy, d));
  return back(tf, dx, d);
}
