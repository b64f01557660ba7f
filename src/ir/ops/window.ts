// Sliding-window geometry shared by convolutions and pooling (channels-last layout:
// data (N, S_1..S_d, C)). One place defines how padding modes, strides and dilation map an
// output position and a tap to an input position; every conv and pool op is a sum or fold
// over exactly these (output, tap, input) triples, so their adjoints are adjoint by construction.
import { formatShape, sizeOf } from '../ndarray.js';
import { InferError } from '../errors.js';
import type { Dim, StaticShape } from '../types.js';
import { forEachIndex } from './util.js';

/**
 * 'valid': no padding. 'same' (TensorFlow's split): output ceil(S / stride); total padding
 * max((O - 1) * stride + effK - S, 0), floor half before, the extra cell after.
 * 'causal': dilation * (k - 1) before, none after (output ceil(S / stride)).
 */
export type PaddingMode = 'valid' | 'same' | 'causal';
export const PADDING_MODES: readonly PaddingMode[] = ['valid', 'same', 'causal'];

/** Type aliases (not interfaces) so attrs stay assignable to the IR's `Attrs`. */
export type WindowAttrs = {
  readonly strides: readonly number[];
  readonly dilation: readonly number[];
  readonly padding: PaddingMode;
};

/** Extent of a dilated window: dilation * (k - 1) + 1. */
export function effectiveSize(k: number, dilation: number): number {
  return dilation * (k - 1) + 1;
}

/** [before, after] padding of one spatial dim for input size `s` and window size `k`. */
export function padsFor(s: number, k: number, stride: number, dilation: number, mode: PaddingMode): [number, number] {
  const eff = effectiveSize(k, dilation);
  if (mode === 'valid') return [0, 0];
  if (mode === 'causal') return [eff - 1, 0];
  const out = Math.ceil(s / stride);
  const total = Math.max((out - 1) * stride + eff - s, 0);
  const before = Math.floor(total / 2);
  return [before, total - before];
}

/** Output size of one spatial dim, or null when the window does not fit (valid padding, S < effK). */
export function outSizeFor(s: number, k: number, stride: number, dilation: number, mode: PaddingMode): number | null {
  const [b, a] = padsFor(s, k, stride, dilation, mode);
  const span = s + b + a - effectiveSize(k, dilation);
  return span < 0 ? null : Math.floor(span / stride) + 1;
}

/** Checks attrs for a d-dimensional window (the API validates user input; this guards internal callers). */
export function checkWindowAttrs(a: WindowAttrs, d: number): void {
  for (const [what, v] of [
    ['strides', a.strides],
    ['dilation', a.dilation],
  ] as const) {
    if (v.length !== d || v.some((s) => !Number.isInteger(s) || s < 1)) {
      throw new InferError(`${what} ${JSON.stringify(v)} must be ${d} positive integers`, 'value');
    }
  }
  if (!PADDING_MODES.includes(a.padding))
    throw new InferError(`padding ${JSON.stringify(a.padding)} is not one of ${PADDING_MODES.join(', ')}`, 'value');
}

/**
 * Static output spatial dims of data `xShape` (N, S..., C) under windows `k` (nulls where unknown).
 * A window larger than its padded input is an error naming both shapes and the axis.
 */
export function staticOutSizes(
  xShape: StaticShape,
  k: readonly Dim[],
  a: WindowAttrs,
  kernelShape: StaticShape = k,
): Dim[] {
  return k.map((kd, i) => {
    const s = xShape[i + 1]!;
    if (s === null || kd === null) return null;
    const o = outSizeFor(s, kd, a.strides[i]!, a.dilation[i]!, a.padding);
    if (o === null) {
      throw new InferError(
        `input shape ${formatShape(xShape)} is too small for window shape ${formatShape(kernelShape)} with ${a.padding} padding: ` +
          `axis ${i + 1} has ${s} but the window spans ${effectiveSize(kd, a.dilation[i]!)} (size ${kd}, dilation ${a.dilation[i]})`,
      );
    }
    return o;
  });
}

/** Concrete geometry of one window op evaluation: batch size, spatial sizes, the attrs, and each axis' padding before. */
export interface Geometry {
  readonly n: number;
  readonly inSize: readonly number[];
  readonly window: readonly number[];
  readonly outSize: readonly number[];
  readonly a: WindowAttrs;
  readonly padBefore: readonly number[];
}

export function geometry(n: number, inSize: readonly number[], window: readonly number[], a: WindowAttrs): Geometry {
  const outSize = inSize.map((s, i) => {
    const o = outSizeFor(s, window[i]!, a.strides[i]!, a.dilation[i]!, a.padding);
    if (o === null)
      throw new InferError(
        `input size ${s} on spatial axis ${i} is smaller than the window (${window[i]}, dilation ${a.dilation[i]})`,
      );
    return o;
  });
  const padBefore = inSize.map((s, i) => padsFor(s, window[i]!, a.strides[i]!, a.dilation[i]!, a.padding)[0]);
  return { n, inSize, window, outSize, a, padBefore };
}

/**
 * Calls `f(out, tap, inp)` for every output cell (batch and spatial, flat over (N, O...)),
 * every tap of its window (flat over the window's K...), and the input cell (flat over
 * (N, S...)) that tap reads: in = out * stride + tap * dilation - padBefore per dim.
 * Taps that land in the padding are skipped. Order: row-major in (n, out, tap).
 */
export function forEachTap(g: Geometry, f: (out: number, tap: number, inp: number) => void): void {
  const d = g.inSize.length;
  const inCells = sizeOf(g.inSize);
  const taps: number[][] = [];
  forEachIndex(g.window, (t) => {
    taps.push([...t]);
  });
  let outFlat = 0;
  for (let b = 0; b < g.n; b++) {
    forEachIndex(g.outSize, (o) => {
      taps.forEach((t, tap) => {
        let inp = 0;
        for (let i = 0; i < d; i++) {
          const p = o[i]! * g.a.strides[i]! + t[i]! * g.a.dilation[i]! - g.padBefore[i]!;
          if (p < 0 || p >= g.inSize[i]!) return;
          inp = inp * g.inSize[i]! + p;
        }
        f(outFlat, tap, b * inCells + inp);
      });
      outFlat++;
    });
  }
}
