// What an exported module carries besides its kernels: the runtime helpers kernels call
// (`rt.*`) and the scalar functions of ops without an expression template (`f0(...)`). Both
// are taken from the running library by Function.prototype.toString, so an export can never
// drift from the compiled code: the text is given a TypeScript signature (a typed `const`
// contextually types the parameters) and the type check of the whole module catches any
// function that is not self-contained.
import { exportedFn, type ScalarFn } from '../../codegen/kernel/expr.js';
import { runtimeHelpers } from '../../codegen/cpu/module.js';

/** Typed-array union of the module (declared once when a helper needs it). */
export const TYPED_ARRAY = 'Float32Array | Float64Array | Int8Array | Int16Array | Int32Array | Uint8Array';

/** TypeScript signatures of the runtime helpers generated code calls. */
const SIGNATURES: Record<string, string> = {
  rowPanel4x4:
    '(pa: Float64Array, p: number, pb: Float64Array, q: number, K: number, acc: Float64Array, n: number) => void',
  rowPanel32:
    '(pa: Float32Array, p: number, pb: Float32Array, q: number, K: number, acc: Float32Array, n: number, mr: number, nr: number) => void',
  f16: '(x: number) => number',
  i64: '(x: number) => number',
  bool: '(x: number) => number',
  mod: '(a: number, b: number) => number',
  round: '(x: number) => number',
  sign: '(a: number) => number',
  max0: '(x: number) => number',
  min0: '(x: number) => number',
  tile4x4:
    '(pa: Float64Array, p: number, pb: Float64Array, q: number, K: number, acc: Float64Array, o: number) => void',
  packStrided:
    '(dst: Float64Array | Float32Array, src: ArrayLike<number>, base: number, sb: number, sr: number, st: number, batch: number, rows: number, K: number, p: number) => void',
  packRows:
    '(dst: Float64Array | Float32Array, src: ArrayLike<number>, base: number, sb: number, sr: number, batch: number, rows: number, K: number, p: number) => void',
  row: '(x: number, rows: number, op: string, shape: string) => number',
  copy: '(dst: TypedArray, dOff: number, src: TypedArray, sOff: number, n: number) => void',
  fmt: '(data: ArrayLike<number>, shape: readonly number[], bool: boolean) => string',
};

/** Helpers that call other helpers (by their function names, which the module's consts take). */
const CALLS: Record<string, readonly string[]> = { rowPanel4x4: ['tile4x4'] };

/** Helpers whose library form calls other library code: their meaning, written out. */
const WRITTEN: Record<string, string> = {
  // coerce('int64', x): truncation toward zero, + 0 so no -0; non-finite values become 0.
  i64: '(x) => (Number.isFinite(x) ? Math.trunc(x) + 0 : 0)',
  // The library's row check throws its ValueError; the module has no such class, so a RangeError with the same words.
  row:
    '(x, rows, op, shape) => { if (x >= 0 && x < rows) return x; if (x < 0 && x >= -rows) return x + rows; ' +
    'throw new RangeError(`${op}: index ${x} is out of range for reference of shape ${shape} (allowed: ${-rows}..${rows - 1})`); }',
  // The library's print_tensor formatting with its types written out (the compiled form's inner closures carry no types).
  fmt:
    '(data, shape, bool) => { const one = (v: number): string => (bool ? (v !== 0 ? "True" : "False") : String(v)); ' +
    'if (shape.length === 0) return one(data[0]!); const strides: number[] = []; let acc = 1; ' +
    'for (let d = shape.length - 1; d >= 0; d--) { strides[d] = acc; acc *= shape[d]!; } ' +
    'const rec = (d: number, off: number): string => { const parts: string[] = []; ' +
    'for (let i = 0; i < shape[d]!; i++) parts.push(d === shape.length - 1 ? one(data[off + i]!) : rec(d + 1, off + i * strides[d]!)); ' +
    'return `[${parts.join(", ")}]`; }; return rec(0, 0); }',
};

/** A function's source as an expression (method shorthand and natives handled), or undefined if it has none. */
export function functionExpression(fn: (...a: never[]) => unknown): string | undefined {
  const src = Function.prototype.toString.call(fn);
  if (/\{\s*\[native code\]\s*\}\s*$/.test(src)) {
    const m = Object.getOwnPropertyNames(Math).find((k) => (Math as unknown as Record<string, unknown>)[k] === fn);
    return m === undefined ? undefined : `Math.${m}`;
  }
  if (/^(async\s+)?function\b/.test(src) || /^(async\s*)?\(/.test(src) || /^(async\s+)?[A-Za-z_$][\w$]*\s*=>/.test(src))
    return src;
  if (/^[A-Za-z_$][\w$]*\s*\(/.test(src)) return `function ${src}`; // method shorthand: copy(dst, ...) { ... }
  return undefined;
}

export interface Prelude {
  /** `const` statements: [name, type, initializer]. */
  readonly consts: readonly (readonly [string, string, string])[];
  /** Whether the TypedArray alias is needed. */
  readonly typedArray: boolean;
}

/** The module-level name of helper `field`: its function's own name (so helpers calling each other resolve), else rt_<field>. */
function constName(field: string, fn: unknown): string {
  const n = typeof fn === 'function' ? fn.name : '';
  return /^[A-Za-z_$][\w$]*$/.test(n) && WRITTEN[field] === undefined && n !== 'rt' ? n : `rt_${field}`;
}

/** Names an exported function may not take (the helpers' consts). */
export function helperNames(): string[] {
  return Object.keys(SIGNATURES).map((f) => constName(f, (runtimeHelpers as unknown as Record<string, unknown>)[f]));
}

/** The helpers `used` (names after `rt.`) and those they call, as typed consts, and the `rt` object the kernels read. */
export function helperPrelude(used: ReadonlySet<string>): Prelude {
  const consts: [string, string, string][] = [];
  const fields: string[] = [];
  let typedArray = false;
  const all = new Set<string>();
  const add = (f: string) => {
    if (all.has(f)) return;
    all.add(f);
    for (const c of CALLS[f] ?? []) add(c);
  };
  for (const f of used) add(f);
  for (const field of [...all].sort()) {
    const sig = SIGNATURES[field];
    const fn = (runtimeHelpers as unknown as Record<string, unknown>)[field];
    if (sig === undefined || typeof fn !== 'function')
      throw new Error(`internal: generated code calls rt.${field}, which exportModule does not know`);
    const src = WRITTEN[field] ?? functionExpression(fn as () => unknown);
    if (src === undefined) throw new Error(`internal: the runtime helper rt.${field} has no source text to export`);
    if (sig.includes('TypedArray')) typedArray = true;
    const name = constName(field, fn);
    consts.push([name, sig, src]);
    if (used.has(field)) fields.push(name === field ? field : `${field}: ${name}`);
  }
  if (fields.length > 0) consts.push(['rt', '', `{ ${fields.join(', ')} }`]);
  return { consts, typedArray };
}

/** A scalar function as a typed const initializer (a rest signature types every parameter); undefined when it has no source. */
export function scalarSource(fn: ScalarFn): { type: string; init: string } | undefined {
  const init = functionExpression(exportedFn(fn));
  return init === undefined ? undefined : { type: '(...xs: number[]) => number', init };
}

/** Base64 decoding without atob or Buffer (neither is in TypeScript's es2022 lib). */
export const BASE64_DECODER = `function _b64(s: string): Uint8Array {
  const A = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const pad = s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0;
  const out = new Uint8Array((s.length / 4) * 3 - pad);
  let o = 0;
  for (let i = 0; i < s.length; i += 4) {
    const n = (A.indexOf(s.charAt(i)) << 18) | (A.indexOf(s.charAt(i + 1)) << 12) | ((A.indexOf(s.charAt(i + 2)) & 63) << 6) | (A.indexOf(s.charAt(i + 3)) & 63);
    if (o < out.length) out[o++] = (n >> 16) & 255;
    if (o < out.length) out[o++] = (n >> 8) & 255;
    if (o < out.length) out[o++] = n & 255;
  }
  return out;
}`;
