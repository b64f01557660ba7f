// JavaScript spellings for the kernel IR: scalar ops (the elementwise rows' own), dtype casts,
// literals, typed arrays, and the one way a string from outside ever reaches generated source
// (an escaped literal).
import type { DType } from '../../ir/dtype.js';
import { FOLD_ROWS, KERNEL_ROWS, type ScalarOp, type ReduceOp } from '../kernel/expr.js';
import { CLASS_ARRAY, storageClass } from '../transform/plan.js';

/** A JS string literal that survives any content: quotes, backslashes, newlines, U+2028, `*\/`. */
export function jsString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (c >= 0x20 && c < 0x7f && ch !== '"' && ch !== '\\') out += ch;
    else if (c <= 0xffff) out += `\\u${c.toString(16).padStart(4, '0')}`;
    else out += `\\u{${c.toString(16)}}`;
  }
  return out + '"';
}

/** Text safe inside a // comment: letters, digits and a little punctuation; everything else becomes '_'. */
export function commentText(s: string): string {
  return s.replace(/[^A-Za-z0-9_,.:=()[\] x+-]/g, '_').slice(0, 200);
}

export function literal(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return 'Infinity';
  if (v === -Infinity) return '(-Infinity)';
  if (Object.is(v, -0)) return '(-0)';
  const s = String(v);
  return v < 0 ? `(${s})` : s;
}

/** The typed array values of `d` are stored in. */
export function arrayType(d: DType): string {
  return CLASS_ARRAY[storageClass(d)];
}

/** Rounding to what a store of `d` keeps (the reference's `coerce`), around an expression. */
export function castCode(d: DType, x: string): string {
  return spell(CAST_JS[d], [x]);
}

/** The JavaScript of a cast to each dtype (a store's rounding), over $0. */
const CAST_JS: Record<DType, string> = {
  float64: '$0',
  float32: 'Math.fround($0)',
  float16: 'rt.f16($0)',
  int64: 'rt.i64($0)',
  int32: '($0 | 0)',
  int16: '(($0 << 16) >> 16)',
  int8: '(($0 << 24) >> 24)',
  uint8: '($0 & 255)',
  bool: 'rt.bool($0)',
};

/** Stores into these typed arrays already round as `castCode` would. */
export function storeRounds(d: DType): boolean {
  return d !== 'float16' && d !== 'bool' && d !== 'int64';
}

/**
 * A JavaScript spelling applied to operand expressions: an expression over $0, $1, $2, or else a
 * function called with the operands (the elementwise rows' `js`; src/ir/ops/elementwise.ts).
 */
export function spell(js: string, a: readonly string[]): string {
  return js.includes('$') ? js.replace(/\$(\d)/g, (_, i: string) => a[Number(i)]!) : `${js}(${a.join(', ')})`;
}

/**
 * The JavaScript of the scalar ops the kernel IR adds to the elementwise rows' (the rows' `js`
 * spell the others): with the rows, the cpu's table of spellings, which other targets override
 * (gpu/scalar.ts `OVERRIDES`; tinygrad's `code_for_op` with per-renderer overrides).
 */
export const KERNEL_IR_JS: Readonly<Record<'select' | 'idiv' | 'imod', string>> = {
  select: '($0 !== 0 ? $1 : $2)',
  idiv: '(($0 / $1) | 0)',
  imod: '($0 % $1)',
};

/** A scalar op as JavaScript: the elementwise rows' spellings, and the ops the kernel IR adds. */
export function opCode(op: ScalarOp, a: readonly string[]): string {
  const js = Object.hasOwn(KERNEL_IR_JS, op)
    ? KERNEL_IR_JS[op as keyof typeof KERNEL_IR_JS]
    : KERNEL_ROWS.get(op)?.spelling.js;
  if (js === undefined) throw new Error(`internal: no JavaScript spelling of the scalar op ${op}`);
  return spell(js, a);
}

/** acc := acc (op) v: the fold row's JavaScript (src/ir/ops/reduce.ts), matching the reference fold. */
export function foldCode(op: ReduceOp, acc: string, v: string): string {
  return spell(FOLD_ROWS.get(op)!.spelling.js!, [acc, v]);
}
