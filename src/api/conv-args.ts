// Argument handling for the convolution family: Keras 2 names and positions, Keras 1's
// spellings (border_mode, dim_ordering 'th'/'tf'/'default', stride, filter_dilation, and
// the image_shape/volume_shape/filter_shape hints), data formats, paddings, int-or-tuple args.
import { ValueError } from '../ir/errors.js';
import { describe } from '../ir/ndarray.js';
import type { PaddingMode } from '../ir/ops/window.js';
import { image_data_format, type DataFormat } from './config.js';
import { trailingOptions } from './args.js';

/** Keras 1 names and the Keras 2 names they stand for. */
const ALIASES: Readonly<Record<string, string>> = {
  border_mode: 'padding',
  dim_ordering: 'data_format',
  stride: 'strides',
  filter_dilation: 'dilation_rate',
};

/** Keras 1 shape hints: Theano used them to pick algorithms; static shapes come from the tensors here. */
const HINTS = ['image_shape', 'volume_shape', 'filter_shape'];

export interface Signature {
  /** Keras 2 optional parameter names, in order. */
  readonly k2: readonly string[];
  /** Keras 1 optional parameter names, in order (where Keras 1 had this function). */
  readonly k1?: readonly string[];
  /** Whether positional arguments follow Keras 1's order (they differ from position `k1Where` on). */
  readonly isK1?: (positional: readonly unknown[]) => boolean;
}

/**
 * Parses trailing optional arguments given positionally (Keras 2's order, or Keras 1's when
 * `isK1` says so) or as one plain object with either version's names; Keras 1 names are mapped
 * to Keras 2's, giving both spellings of one parameter is an error.
 */
export function convOptions(fn: string, given: readonly unknown[], sig: Signature): Record<string, unknown> {
  const allowed = [...new Set([...sig.k2, ...(sig.k1 ?? [])])];
  const raw = trailingOptions(fn, given, allowed, (positional) =>
    sig.k1 !== undefined && sig.isK1?.(positional) === true ? sig.k1 : sig.k2,
  );
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (HINTS.includes(k)) {
      if (v !== null && !Array.isArray(v))
        throw new ValueError(`${fn}: ${k} must be a list of dims or null, got ${describe(v)}`);
      continue;
    }
    const canon = ALIASES[k] ?? k;
    if (canon in out || (canon !== k && canon in raw))
      throw new ValueError(
        `${fn}: give ${canon} or its Keras 1 name ${Object.keys(ALIASES).find((a) => ALIASES[a] === canon)}, not both`,
      );
    out[canon] = v;
  }
  return out;
}

const FORMAT_NAMES = "'channels_last', 'channels_first' (Keras 1: 'tf', 'th', 'default')";

/** data_format or Keras 1 dim_ordering; null, undefined and 'default' mean K.image_data_format(). */
export function dataFormatOf(fn: string, v: unknown): DataFormat {
  if (v === undefined || v === null || v === 'default') return image_data_format();
  if (v === 'channels_last' || v === 'tf') return 'channels_last';
  if (v === 'channels_first' || v === 'th') return 'channels_first';
  throw new ValueError(
    `${fn}: unknown data_format ${typeof v === 'string' ? JSON.stringify(v) : describe(v)} (allowed: ${FORMAT_NAMES})`,
  );
}

/** padding (Keras 1: border_mode), default 'valid', one of `allowed`. */
export function paddingOf(fn: string, v: unknown, allowed: readonly PaddingMode[]): PaddingMode {
  if (v === undefined || v === null) return 'valid';
  if (typeof v === 'string' && (allowed as readonly string[]).includes(v)) return v as PaddingMode;
  const extra = v === 'causal' ? ' (causal padding is for conv1d only)' : '';
  throw new ValueError(
    `${fn}: unknown padding ${typeof v === 'string' ? JSON.stringify(v) : describe(v)} (allowed: ${allowed.map((p) => `'${p}'`).join(', ')})${extra}`,
  );
}

/** An int (repeated `d` times) or a list of `d` positive ints, for strides, dilation_rate, pool_size. */
export function tupleOf(fn: string, what: string, v: unknown, d: number, dflt = 1): number[] {
  if (v === undefined || v === null) return new Array<number>(d).fill(dflt);
  const ok = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 1;
  if (ok(v)) return new Array<number>(d).fill(v);
  if (Array.isArray(v) && v.length === d && v.every(ok)) return [...v];
  throw new ValueError(
    `${fn}: ${what} must be a positive integer or a list of ${d} positive integer${d > 1 ? 's' : ''}, got ${Array.isArray(v) ? JSON.stringify(v) : describe(v)}`,
  );
}

/** Keras 1 passed dim_ordering ('th', 'tf', 'default') where Keras 2 passes data_format. */
export const isDimOrdering = (v: unknown): boolean => v === 'th' || v === 'tf' || v === 'default';

/** Permutations between channels_first (N, C, S...) and the ops' channels_last (N, S..., C). */
export function toChannelsLast(rank: number): number[] {
  return [0, ...Array.from({ length: rank - 2 }, (_, i) => i + 2), 1];
}
export function toChannelsFirst(rank: number): number[] {
  return [0, rank - 1, ...Array.from({ length: rank - 2 }, (_, i) => i + 1)];
}
