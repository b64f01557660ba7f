// Convolution and pooling on tfjs, for any number of spatial dims, strides with dilation,
// groups, and the 'same'/'causal' paddings of src/ir/ops/window.ts. tfjs' own conv kernels
// cover only part of that (2-D/3-D, strides or dilation, no groups, no kernel gradient on wasm),
// so the general path works on taps: for each window offset t, the strided view
//   tap_t[n, o, c] = xpad[n, o * stride + t * dilation, c]
// of the padded input (one tf.stridedSlice). A convolution is sum_t tap_t @ w[t] (per group),
// pooling folds the taps, and every adjoint scatters back through `untap` (the view's adjoint).
// The common forward case (groups 1, strides or dilation 1) uses tf.conv2d / tf.conv3d.
import { checkInChannels, checkOutSizes, type convOps } from '../../../ir/ops/conv.js';
import type { PoolAttrs } from '../../../ir/ops/pool.js';
import type { WindowAttrs } from '../../../ir/ops/window.js';
import type { TF } from '../load.js';
import type { Tensor, TfDType, TfTableFor } from '../types.js';
import { castTo } from './util.js';
import { blocks, crop, geo, isTiling, padSpatial, sumAll, tap, unblocks, untap, type Geo } from './window.js';
import { nativeConv, nativeConvKernelGrad, nativeConvTranspose, nativePool, nativePoolGrad } from './conv-native.js';
import { sizeOf } from '../../../ir/ndarray.js';

/**
 * Per-group matrix product of a (rows, G * Cin) operand with w's tap (G * ... ) slices:
 * a (rows, G, Cin) @ b (G, Cin, Cout) -> (rows, G * Cout), one batched matMul over groups.
 */
function groupedMatMul(tf: TF, a: Tensor, b: Tensor, groups: number): Tensor {
  if (groups === 1) return tf.matMul(a, tf.reshape(b, b.shape.slice(-2)));
  const rows = a.shape[0]!;
  const cin = b.shape[1]!;
  const a3 = tf.transpose(tf.reshape(a, [rows, groups, cin]), [1, 0, 2]);
  const out = tf.matMul(a3, b);
  return tf.reshape(tf.transpose(out, [1, 0, 2]), [rows, groups * b.shape[2]!]);
}

/** w (K..., Cg, F) as per-tap (G, Cg, Fg) blocks, index by flat tap. */
function kernelBlocks(tf: TF, w: Tensor, d: number, groups: number): Tensor {
  const k = sizeOf(w.shape.slice(0, d));
  const cg = w.shape[d]!;
  const f = w.shape[d + 1]!;
  // w[t, c, g * Fg + j] -> blocks[t, g, c, j]
  return tf.transpose(tf.reshape(w, [k, cg, groups, f / groups]), [0, 2, 1, 3]);
}

function rowsOf(tf: TF, t: Tensor): Tensor {
  return tf.reshape(t, [-1, t.shape[t.shape.length - 1]!]);
}

function convForward(tf: TF, x: Tensor, w: Tensor, a: WindowAttrs & { readonly groups: number }): Tensor {
  const d = x.shape.length - 2;
  const window = w.shape.slice(0, d);
  checkInChannels('input', x.shape, w.shape, a.groups);
  const g = geo(x.shape[0]!, x.shape.slice(1, d + 1), window, a);
  const fast = nativeConv(tf, x, w, g, a);
  if (fast !== undefined) return fast;
  const xpad = padSpatial(tf, x, g);
  const blocks = kernelBlocks(tf, w, d, a.groups);
  const n = x.shape[0]!;
  const f = w.shape[d + 1]!;
  const parts = g.taps.map((t, ti) =>
    groupedMatMul(tf, rowsOf(tf, tap(tf, xpad, g, t)), tf.gather(blocks, ti), a.groups),
  );
  return tf.reshape(sumAll(tf, parts), [n, ...g.outSize, f]);
}

/** The spatial size a sized op produces: attrs.size, or the `like` input's dims. */
function sizedSpatial(ins: readonly Tensor[], size: readonly number[] | null, d: number, from: number): number[] {
  return size !== null ? [...size] : ins[2]!.shape.slice(from, from + d);
}

// ---- pooling ----------------------------------------------------------------------------

/** The lowest value of a dtype: padding that never wins a max. */
const lowest = (t: Tensor) => (t.dtype === 'float32' ? -Infinity : -2147483648);

/** Which taps lie inside the input, per output cell: (1, O..., 1) float32 masks. */
function validMasks(tf: TF, g: Geo): Tensor[] {
  const ones = padSpatial(tf, tf.ones([1, ...g.padded.map((p, i) => p - g.pads[i]![0] - g.pads[i]![1]), 1]), g);
  return g.taps.map((t) => tap(tf, ones, g, t));
}

/**
 * The flat tap index of each output cell's first maximal valid input cell (NaN counts as
 * maximal), as the reference's argMaxima: taps in row-major order, padding skipped.
 */
function argMaxTap(tf: TF, x: Tensor, g: Geo): Tensor {
  const xpad = padSpatial(tf, x, g, lowest(x));
  const masks = validMasks(tf, g);
  let best: Tensor | undefined;
  let arg: Tensor | undefined;
  g.taps.forEach((t, ti) => {
    const v = tap(tf, xpad, g, t);
    const valid = tf.cast(masks[ti]!, 'bool');
    if (best === undefined || arg === undefined) {
      best = v;
      arg = tf.where(valid, tf.fill(v.shape, ti, 'int32'), tf.fill(v.shape, -1, 'int32'));
      return;
    }
    const nanWins =
      v.dtype === 'float32' ? tf.logicalAnd(tf.isNaN(v), tf.logicalNot(tf.isNaN(best))) : tf.zerosLike(v).cast('bool');
    const take = tf.logicalAnd(valid, tf.logicalOr(tf.less(arg, 0), tf.logicalOr(tf.greater(v, best), nanWins)));
    best = tf.where(take, v, best);
    arg = tf.where(take, tf.fill(v.shape, ti, 'int32'), arg);
  });
  return arg!;
}

/** Input cells per output cell's window, (1, O..., 1) (padding excluded). */
function counts(tf: TF, g: Geo, window: readonly number[]): Tensor {
  const inside = tf.ones([1, ...g.padded.map((p, i) => p - g.pads[i]![0] - g.pads[i]![1]), 1]);
  return isTiling(g, window) ? tf.sum(blocks(tf, inside, g, window), -1) : sumAll(tf, validMasks(tf, g));
}

function pool(tf: TF, x: Tensor, a: PoolAttrs): Tensor {
  const d = a.window.length;
  const g = geo(x.shape[0]!, x.shape.slice(1, d + 1), a.window, a); // the reference's run-time checks, first
  const fast = nativePool(tf, x, a);
  if (fast !== undefined) return fast;
  if (isTiling(g, a.window)) {
    const xv = x.dtype === 'bool' ? tf.cast(x, 'int32') : x;
    if (a.mode === 'max') return tf.max(blocks(tf, xv, g, a.window, lowest(xv)), -1);
    return tf.div(tf.sum(blocks(tf, xv, g, a.window), -1), counts(tf, g, a.window));
  }
  if (a.mode === 'max') {
    const xv = x.dtype === 'bool' ? tf.cast(x, 'int32') : x;
    const arg = argMaxTap(tf, xv, g);
    const xpad = padSpatial(tf, xv, g, lowest(xv));
    return sumAll(
      tf,
      g.taps.map((t, ti) => tf.where(tf.equal(arg, ti), tap(tf, xpad, g, t), tf.zerosLike(arg).cast(xv.dtype))),
    );
  }
  const xpad = padSpatial(tf, x, g);
  const sum = sumAll(
    tf,
    g.taps.map((t) => tap(tf, xpad, g, t)),
  );
  return tf.div(sum, sumAll(tf, validMasks(tf, g)));
}

/** Each window's first maximal cell as a one-hot (N, O..., C, K) mask, for tiling windows. */
function firstMaxMask(tf: TF, x: Tensor, g: Geo, window: readonly number[]): Tensor {
  const xv = x.dtype === 'bool' ? tf.cast(x, 'int32') : x;
  const k = sizeOf(window);
  return tf.oneHot(tf.argMax(blocks(tf, xv, g, window, lowest(xv)), -1), k);
}

function poolGrad(tf: TF, x: Tensor, dy: Tensor, a: PoolAttrs): Tensor {
  const d = a.window.length;
  const g = geo(x.shape[0]!, x.shape.slice(1, d + 1), a.window, a);
  const dyf = castTo(tf, dy, dy.dtype === 'bool' ? 'int32' : (dy.dtype as TfDType));
  const fast = nativePoolGrad(tf, x, dy, a, tf.getBackend());
  if (fast !== undefined) return fast;
  if (isTiling(g, a.window)) {
    const share =
      a.mode === 'max'
        ? tf.mul(firstMaxMask(tf, x, g, a.window).cast(dyf.dtype), tf.expandDims(dyf, -1))
        : tf.mul(
            tf.ones([...dyf.shape, sizeOf(a.window)], dyf.dtype),
            tf.expandDims(tf.div(dyf, counts(tf, g, a.window)), -1),
          );
    return unblocks(tf, share, g, a.window);
  }
  if (a.mode === 'max') {
    const arg = argMaxTap(tf, x.dtype === 'bool' ? tf.cast(x, 'int32') : x, g);
    const zero = tf.zerosLike(dyf);
    return crop(
      tf,
      sumAll(
        tf,
        g.taps.map((t, ti) => untap(tf, tf.where(tf.equal(arg, ti), dyf, zero), g, t)),
      ),
      g,
    );
  }
  const share = tf.div(dyf, sumAll(tf, validMasks(tf, g)));
  return crop(
    tf,
    sumAll(
      tf,
      g.taps.map((t) => untap(tf, share, g, t)),
    ),
    g,
  );
}

function poolSelect(tf: TF, x: Tensor, sel: Tensor, a: PoolAttrs): Tensor {
  const d = a.window.length;
  const g = geo(x.shape[0]!, x.shape.slice(1, d + 1), a.window, a);
  if (isTiling(g, a.window)) {
    const s = sel.dtype === 'bool' ? tf.cast(sel, 'int32') : sel;
    return tf.sum(tf.mul(blocks(tf, s, g, a.window), firstMaxMask(tf, x, g, a.window).cast(s.dtype)), -1);
  }
  const arg = argMaxTap(tf, x.dtype === 'bool' ? tf.cast(x, 'int32') : x, g);
  const s = sel.dtype === 'bool' ? tf.cast(sel, 'int32') : sel;
  const spad = padSpatial(tf, s, g);
  const zero = tf.zerosLike(arg).cast(s.dtype);
  return sumAll(
    tf,
    g.taps.map((t, ti) => tf.where(tf.equal(arg, ti), tap(tf, spad, g, t), zero)),
  );
}

export const convKernels: TfTableFor<keyof typeof convOps> = {
  conv: ([x, w], a, { tf }) => convForward(tf, castTo(tf, x!, 'float32'), castTo(tf, w!, 'float32'), a),
  // dx = sum over taps of untap_t(dy @ w[t]^T), cropped to the input
  conv_transpose: (ins, a, { tf }) => {
    const dy = castTo(tf, ins[0]!, 'float32');
    const w = castTo(tf, ins[1]!, 'float32');
    const d = dy.shape.length - 2;
    const s = sizedSpatial(ins, a.size, d, 1);
    const g = geo(dy.shape[0]!, s, w.shape.slice(0, d), a);
    checkOutSizes('input', s, w.shape.slice(0, d), dy.shape.slice(1, d + 1), a, dy.shape);
    const fast = nativeConvTranspose(tf, dy, w, g, a.groups, w.shape[d]! * a.groups);
    if (fast !== undefined) return fast;
    // blocks^T: (G, Fg, Cg) per tap
    const blocks = tf.transpose(kernelBlocks(tf, w, d, a.groups), [0, 1, 3, 2]);
    const rows = rowsOf(tf, dy);
    const n = dy.shape[0]!;
    const c = w.shape[d]! * a.groups;
    const parts = g.taps.map((t, ti) => {
      const y = tf.reshape(groupedMatMul(tf, rows, tf.gather(blocks, ti), a.groups), [n, ...g.outSize, c]);
      return untap(tf, y, g, t);
    });
    return crop(tf, sumAll(tf, parts), g);
  },
  // dw[t] = tap_t(x)^T @ dy per group: (Cg, rows) @ (rows, Fg)
  conv_kernel_grad: (ins, a, { tf }) => {
    const x = castTo(tf, ins[0]!, 'float32');
    const dy = castTo(tf, ins[1]!, 'float32');
    const d = x.shape.length - 2;
    const k = sizedSpatial(ins, a.size, d, 0);
    const g = geo(x.shape[0]!, x.shape.slice(1, d + 1), k, a);
    checkOutSizes('output gradient', x.shape.slice(1, d + 1), k, dy.shape.slice(1, d + 1), a, dy.shape);
    const fast = nativeConvKernelGrad(tf, x, dy, g, k, a.groups);
    if (fast !== undefined) return fast;
    const xpad = padSpatial(tf, x, g);
    const c = x.shape[d + 1]!;
    const f = dy.shape[d + 1]!;
    const G = a.groups;
    const dyRows = rowsOf(tf, dy);
    const per = g.taps.map((t) => {
      const xr = rowsOf(tf, tap(tf, xpad, g, t));
      if (G === 1) return tf.matMul(xr, dyRows, true, false);
      const rows = xr.shape[0]!;
      const xg = tf.transpose(tf.reshape(xr, [rows, G, c / G]), [1, 2, 0]);
      const dg = tf.transpose(tf.reshape(dyRows, [rows, G, f / G]), [1, 0, 2]);
      // (G, Cg, Fg) -> (Cg, G * Fg): output channel g * Fg + j
      return tf.reshape(tf.transpose(tf.matMul(xg, dg), [1, 0, 2]), [c / G, f]);
    });
    return tf.reshape(tf.stack(per), [...k, c / G, f]);
  },
  pool: ([x], a, { tf }) => pool(tf, x!, a),
  pool_grad: ([x, dy], a, { tf }) => poolGrad(tf, x!, dy!, a),
  pool_select: ([x, sel], a, { tf }) => poolSelect(tf, x!, sel!, a),
};
