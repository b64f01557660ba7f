// A small WebAssembly binary encoder: LEB128 integers, names, sections, and the opcodes the
// generated kernels use. The module bytes are written directly (no binaryen): the kernels are a
// few hundred bytes, and encoding them takes microseconds where a library would add a
// multi-megabyte dependency and its start-up to every compile.

export function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

export function sleb(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
}

export const name = (s: string): number[] => [...uleb(s.length), ...Array.from(s, (c) => c.charCodeAt(0))];
export const section = (id: number, body: number[]): number[] => [id, ...uleb(body.length), ...body];
export const memarg = (align: number, offset: number): number[] => [...uleb(align), ...uleb(offset)];

// Section numbers are the WebAssembly core specification's (2.0), chapter 5 "Binary Format".
/** Value types (5.3.1, 5.3.2): i32, f64, v128. */
export const I32 = 0x7f,
  F64 = 0x7c,
  V128 = 0x7b;
/** The empty block type (5.4.1): a block, loop or if that leaves no value. */
export const VOID = 0x40;
export const op = {
  // 5.4.1 control instructions
  block: 0x02,
  loop: 0x03,
  if: 0x04,
  else: 0x05,
  end: 0x0b,
  br: 0x0c,
  brIf: 0x0d,
  return: 0x0f,
  call: 0x10,
  // 5.4.3 parametric instructions
  drop: 0x1a,
  // 5.4.4 variable instructions
  localGet: 0x20,
  localSet: 0x21,
  localTee: 0x22,
  // 5.4.6 memory instructions (memory.fill is under the MISC prefix: misc below)
  i32Load: 0x28,
  f64Load: 0x2b,
  i32Store: 0x36,
  // 5.4.7 numeric instructions: constants, i32 comparisons, i32 arithmetic
  i32Const: 0x41,
  f32Const: 0x43,
  f64Const: 0x44,
  i32Eqz: 0x45,
  i32Eq: 0x46,
  i32Ne: 0x47,
  i32LtU: 0x49,
  i32GeU: 0x4f,
  i32Add: 0x6a,
  i32Sub: 0x6b,
  i32Mul: 0x6c,
  i32DivU: 0x6e,
  i32And: 0x71,
  i32Shl: 0x74,
  i32ShrU: 0x76,
} as const;
/** Prefixed opcodes (after the 0xfc prefix, 5.4.6): memory.fill takes the memory's index (0) after it. */
export const misc = { memoryFill: 0x0b } as const;
export const MISC = 0xfc;
/** Vector (SIMD) opcodes (after the 0xfd prefix, 5.4.8). */
export const simd = {
  v128Load: 0x00,
  v128Load32Splat: 0x09,
  v128Load64Splat: 0x0a,
  v128Store: 0x0b,
  v128Const: 0x0c,
  i8x16Shuffle: 0x0d,
  f32x4Splat: 0x13,
  f64x2Splat: 0x14,
  f32x4Add: 0xe4,
  f32x4Mul: 0xe6,
  f64x2Add: 0xf0,
  f64x2Mul: 0xf2,
  /** Relaxed SIMD fused multiply-adds (may fuse or not, by the runtime's choice). */
  f32x4RelaxedMadd: 0x105,
  f64x2RelaxedMadd: 0x107,
} as const;
export const SIMD = 0xfd;

/** A function body under construction: locals by type, code as bytes. */
export class Body {
  readonly code: number[] = [];
  constructor(
    private readonly params: number,
    private readonly locals: readonly [count: number, type: number][],
  ) {}
  get(i: number): this {
    this.code.push(op.localGet, ...uleb(i));
    return this;
  }
  set(i: number): this {
    this.code.push(op.localSet, ...uleb(i));
    return this;
  }
  tee(i: number): this {
    this.code.push(op.localTee, ...uleb(i));
    return this;
  }
  i32(k: number): this {
    this.code.push(op.i32Const, ...sleb(k));
    return this;
  }
  ops(...bytes: number[]): this {
    this.code.push(...bytes);
    return this;
  }
  v(opcode: number, ...imm: number[]): this {
    this.code.push(SIMD, ...uleb(opcode), ...imm);
    return this;
  }
  vzero(): this {
    return this.v(simd.v128Const, ...new Array<number>(16).fill(0));
  }
  /** local i += k */
  addTo(i: number, k: number): this {
    return this.get(i).i32(k).ops(op.i32Add).set(i);
  }
  bytes(): number[] {
    void this.params;
    const locals = [...uleb(this.locals.length), ...this.locals.flatMap(([n, t]) => [...uleb(n), t])];
    const all = [...locals, ...this.code, op.end];
    return [...uleb(all.length), ...all];
  }
}

/** Section ids (5.5.2): the sections a kernel module has, in the order they must come. */
const sec = { type: 1, import: 2, function: 3, export: 7, code: 10 } as const;
/** The module's fixed bytes (5.5.16 magic and version, 5.3.6 function type, 5.3.7 limits, 5.5.5 import and 5.5.10 export kinds). */
const mod = {
  magic: [0x00, 0x61, 0x73, 0x6d],
  version: [0x01, 0x00, 0x00, 0x00],
  funcType: 0x60,
  // limits: a minimum only, or (shared memories, threads proposal) a minimum and a maximum, shared
  limitsMin: 0x00,
  limitsSharedMinMax: 0x03,
  importMemory: 0x02,
  exportFunc: 0x00,
} as const;

/** Pages (64 KiB) a shared memory may grow to: byte offsets stay below 2^31, so they fit the i32 words threads exchange. */
export const SHARED_MAX_PAGES = 32767;

/**
 * A module importing one memory (env.mem) and exporting functions of the given i32 signatures.
 * `memory`: false for none, 'shared' for a shared memory of at most SHARED_MAX_PAGES pages (the
 * one worker threads use together), true for a plain one.
 */
export function moduleBytes(
  funcs: readonly { name: string; params: number; results?: number[]; body: Body }[],
  memory: boolean | 'shared' = true,
): Uint8Array {
  const limits = memory === 'shared' ? [mod.limitsSharedMinMax, 0, ...uleb(SHARED_MAX_PAGES)] : [mod.limitsMin, 0];
  const types = funcs.map((f) => [
    mod.funcType,
    ...uleb(f.params),
    ...new Array<number>(f.params).fill(I32),
    ...uleb(f.results?.length ?? 0),
    ...(f.results ?? []),
  ]);
  return new Uint8Array([
    ...mod.magic,
    ...mod.version,
    ...section(sec.type, [...uleb(types.length), ...types.flat()]),
    ...(memory !== false ? section(sec.import, [1, ...name('env'), ...name('mem'), mod.importMemory, ...limits]) : []),
    ...section(sec.function, [...uleb(funcs.length), ...funcs.map((_, i) => i)]),
    ...section(sec.export, [
      ...uleb(funcs.length),
      ...funcs.flatMap((f, i) => [...name(f.name), mod.exportFunc, ...uleb(i)]),
    ]),
    ...section(sec.code, [...uleb(funcs.length), ...funcs.flatMap((f) => f.body.bytes())]),
  ]);
}

// The few WebAssembly APIs used here (the project's TypeScript lib has no DOM/WebAssembly types).
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
export interface WasmModule {
  readonly __module: unique symbol;
}
export interface WasmApi {
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (m: WasmModule, imports: object) => { readonly exports: Record<string, unknown> };
  Memory: new (d: { initial: number; maximum?: number; shared?: boolean }) => WasmMemory;
  validate(bytes: Uint8Array): boolean;
}
export const WA = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly;

/** Whether the runtime validates a module using relaxed SIMD (f32x4.relaxed_madd). */
export function hasRelaxedSimd(): boolean {
  if (WA === undefined) return false;
  const b = new Body(0, [[1, V128]]);
  b.vzero().vzero().vzero().v(simd.f32x4RelaxedMadd).set(0);
  try {
    return WA.validate(moduleBytes([{ name: 'f', params: 0, body: b }], false));
  } catch {
    return false;
  }
}

/**
 * acc (+)= a * x in f32x4 lanes (v128 locals), the float32 kernels' step: one relaxed
 * multiply-add with `fused` (only where hasRelaxedSimd), else a product then a sum, each rounded.
 */
export function madd32(b: Body, fused: boolean, a: number, x: number, acc: number): void {
  if (fused) b.get(a).get(x).get(acc).v(simd.f32x4RelaxedMadd).set(acc);
  else b.get(acc).get(a).get(x).v(simd.f32x4Mul).v(simd.f32x4Add).set(acc);
}
