// The cpu target's shape specialisations in the compile cache on disk (disk-cache.ts). An entry is
// a module image (codegen/cpu/module.ts: the sources, constants, kept packs, buffer slots, Scan
// bodies, each step's `built by` line), the results' shapes and dtypes, and what each WebAssembly
// tier kernel the sources name was compiled from: a tier kernel's id is this process's, so a
// loaded image's kernels are compiled again from their bytes and the ids in its sources renamed to
// this process's (the ids a fresh compile here would give). A specialisation found there skips
// lowering, buffer planning and code generation; its kernels and driver are compiled by
// `new Function` as a fresh one's are. Only an image without host functions (extern steps, print
// hooks) and without pool-tier kernels, whose kernels call only built-in ops' scalar functions
// (stored by op name), is stored.
import type { DType, TypedArray } from '../../ir/dtype.js';
import {
  bindModule,
  withBuiltByLines,
  type CpuModule,
  type GeneratedModule,
  type ModuleImage,
  type ModuleLive,
} from '../../codegen/cpu/module.js';
import type { ScalarFn } from '../../codegen/kernel/expr.js';
import { builtinOps, getOp, isBuiltin } from '../../ir/registry.js';
import {
  ewKernelId,
  ewRecipe,
  float32Approximations,
  tierOn,
  type TierRecipe,
} from '../../codegen/cpu/wasm/elementwise.js';
import { redKernelFrom, redRecipe } from '../../codegen/cpu/wasm/reduce.js';
import { F32_ELEMENTS } from '../../codegen/cpu/wasm/reduce-body.js';
import { rowPairs } from '../../codegen/cpu/wasm/reduce-pair.js';
import { poolParallelMin } from '../../codegen/cpu/wasm/pool.js';
import { startWorkers, threadCount } from '../../codegen/cpu/threads.js';
import { seedTileModules, tileModuleImages, wasmTileModule } from '../../codegen/cpu/wasm-kernel.js';
import { platform } from '#platform';
import { diskCacheOn, discardEntry, readEntry, writeEntry } from '../disk-cache.js';
import { shapesKey } from '../program-cache.js';
import type { Shapes } from '../target.js';

/** A specialisation as the cache stores it. */
interface Stored {
  readonly image: ModuleImage;
  readonly shapes: readonly (readonly number[])[];
  readonly dtypes: readonly DType[];
  /** Tier kernels by the id the sources name: the elementwise tier's (`rt.ew`) and the reduction tier's (`rt.red`). */
  readonly ew: readonly (readonly [number, TierRecipe])[];
  readonly red: readonly (readonly [number, TierRecipe])[];
  /** The scalar functions of each kernel, by built-in op name (Scan bodies' after their module's, depth first). */
  readonly fns: readonly (readonly string[])[];
  /** The matmul kernel modules' bytes by what they depend on (wasm-kernel.ts' tileModuleImages): assembling them takes longer than compiling them. */
  readonly tiles?: readonly (readonly [string, Uint8Array])[];
  /** Whether it has products the worker threads share (their workers start while it loads). */
  readonly pool?: boolean;
}

/** Built-in elementwise ops' scalar functions, and their names. */
let scalars: Map<ScalarFn, string> | undefined;
function scalarNames(): Map<ScalarFn, string> {
  if (scalars === undefined) {
    scalars = new Map();
    for (const name of Object.keys(builtinOps)) {
      const fn = (getOp(name) as { scalar?: unknown }).scalar;
      if (typeof fn === 'function') scalars.set(fn as ScalarFn, name);
    }
  }
  return scalars;
}

/** Each kernel's scalar functions as op names, depth first; undefined if one is not a built-in op's. */
function fnNames(live: ModuleLive): string[][] | undefined {
  const names = scalarNames();
  const out: string[][] = [];
  const walk = (l: ModuleLive): boolean => {
    for (const fs of l.fns) {
      const ns = fs.map((f) => names.get(f));
      if (ns.some((n) => n === undefined)) return false;
      out.push(ns as string[]);
    }
    return l.subs.every(walk);
  };
  return walk(live) ? out : undefined;
}

/** The live parts of a stored image: its kernels' scalar functions by op name. */
function liveOf(image: ModuleImage, fns: readonly (readonly string[])[]): ModuleLive {
  let at = 0;
  const walk = (im: ModuleImage): ModuleLive => {
    const own = im.kernels.map(() =>
      (fns[at++] ?? []).map((name) => {
        const fn = isBuiltin(name) ? (getOp(name) as { scalar?: unknown }).scalar : undefined;
        if (typeof fn !== 'function')
          throw new Error(`a kernel calls ${JSON.stringify(name)}, which is not a built-in op's scalar function`);
        return fn as ScalarFn;
      }),
    );
    return { externs: [], fns: own, origins: [], subs: im.subs.map(walk) };
  };
  return walk(image);
}

/** What decides the generated code besides the program (its key has the optimizer, passes and matmul variant) and the shapes: the switches codegen reads. */
function switches(): string {
  return [
    `wasm:${typeof (globalThis as { WebAssembly?: unknown }).WebAssembly}`,
    `simd:${tierOn()}`,
    `f32approx:${float32Approximations()}`,
    `f32rows:${F32_ELEMENTS}`,
    `pairs:${rowPairs()}`,
    `poolMin:${poolParallelMin()}`,
    `threads:${threadCount()}`,
  ].join(',');
}

/** The disk cache's key of a program's specialisation (undefined when the cache is off). */
export function diskKey(programKey: string, shapes: Shapes): string | undefined {
  return diskCacheOn() ? `cpu;${switches()};${shapesKey(shapes)};${programKey}` : undefined;
}

const TYPED: Record<string, new (b: ArrayBuffer, at: number, n: number) => TypedArray> = {
  Float64Array,
  Float32Array,
  Int32Array,
  Int16Array,
  Int8Array,
  Uint8Array,
  Uint16Array,
  Uint32Array,
  Uint8ClampedArray,
} as unknown as Record<string, new (b: ArrayBuffer, at: number, n: number) => TypedArray>;

/** Typed arrays as `{ $typed, b64 }` (JSON has none). */
function replacer(_k: string, v: unknown): unknown {
  if (!ArrayBuffer.isView(v)) return v;
  const t = v as unknown as TypedArray;
  return { $typed: t.constructor.name, b64: platform.base64(new Uint8Array(t.buffer, t.byteOffset, t.byteLength)) };
}

function reviver(_k: string, v: unknown): unknown {
  if (v === null || typeof v !== 'object' || !('$typed' in v)) return v;
  const { $typed, b64 } = v as { $typed: string; b64: string };
  const Ctor = TYPED[$typed];
  if (Ctor === undefined || typeof b64 !== 'string')
    throw new Error(`an array of unknown type ${JSON.stringify($typed)}`);
  const text = atob(b64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  const per = (Ctor as unknown as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT;
  if (bytes.length % per !== 0) throw new Error(`a ${$typed} of ${bytes.length} bytes`);
  return new Ctor(bytes.buffer, 0, bytes.length / per);
}

const TIER_CALL = /rt\.(ew|red|pool)\((\d+)\)/g;

/** The tier kernels an image's sources name, with what each was compiled from; undefined if one cannot be made again (a pool-tier kernel). */
function tierRecipes(image: ModuleImage): { ew: Map<number, TierRecipe>; red: Map<number, TierRecipe> } | undefined {
  const ew = new Map<number, TierRecipe>();
  const red = new Map<number, TierRecipe>();
  const walk = (im: ModuleImage): boolean => {
    for (const src of [...im.kernels, im.driver]) {
      for (const m of src.matchAll(TIER_CALL)) {
        const id = Number(m[2]);
        const r = m[1] === 'ew' ? ewRecipe(id) : m[1] === 'red' ? redRecipe(id) : undefined;
        if (r === undefined) return false;
        (m[1] === 'ew' ? ew : red).set(id, r);
      }
    }
    return im.subs.every(walk);
  };
  return walk(image) ? { ew, red } : undefined;
}

/** The image with the tier ids of its sources renamed (`ew`, `red`: this process's id of each stored one). */
function renamed(image: ModuleImage, ew: ReadonlyMap<number, number>, red: ReadonlyMap<number, number>): ModuleImage {
  if ([...ew, ...red].every(([a, b]) => a === b)) return image;
  const re = (s: string) =>
    s.replace(TIER_CALL, (m, t: string, n: string) => {
      const to = (t === 'ew' ? ew : red).get(Number(n));
      if (to === undefined) throw new Error(`its source names tier kernel ${m}, which it does not store`);
      return `rt.${t}(${to})`;
    });
  return {
    ...image,
    driver: re(image.driver),
    kernels: image.kernels.map(re),
    source: re(image.source),
    subs: image.subs.map((s) => renamed(s, ew, red)),
  };
}

/** Stores a freshly generated specialisation under `key`, where it is all data. */
export function storeSpecialisation(
  key: string,
  g: GeneratedModule,
  shapes: Shapes,
  dtypes: readonly DType[],
  pool: boolean,
): void {
  if (!g.image.plain) return;
  const tiers = tierRecipes(g.image);
  const fns = fnNames(g.live);
  if (tiers === undefined || fns === undefined) return;
  const stored: Stored = {
    image: withBuiltByLines(g),
    shapes,
    dtypes,
    ew: [...tiers.ew],
    red: [...tiers.red],
    fns,
    tiles: tileModuleImages(),
    pool,
  };
  writeEntry(key, stored, replacer);
}

/** The specialisation stored under `key`, bound (its tier kernels compiled here); undefined on a miss or a file that does not load (discarded). */
export function loadSpecialisation(
  key: string,
): { module: CpuModule; shapes: Shapes; dtypes: readonly DType[] } | undefined {
  let s: Stored | undefined;
  try {
    s = readEntry(key, reviver) as Stored | undefined;
  } catch (e) {
    discardEntry(key, `its arrays do not decode (${e instanceof Error ? e.message : String(e)})`);
    return undefined;
  }
  if (s === undefined) return undefined;
  try {
    if (typeof s.image?.driver !== 'string' || !s.image.plain || !Array.isArray(s.shapes) || !Array.isArray(s.dtypes))
      throw new Error('not a stored specialisation');
    // What a fresh compile makes while it chooses strategies: the matmul tiles' module (its first run would otherwise compile it).
    if (s.pool === true) startWorkers();
    if (Array.isArray(s.tiles)) seedTileModules(s.tiles);
    wasmTileModule();
    const ew = new Map(s.ew.map(([id, r]) => [id, ewKernelId(r.bytes, r.shared, r.regions)] as const));
    const red = new Map(s.red.map(([id, r]) => [id, redKernelFrom(r)] as const));
    const image = renamed(s.image, ew, red);
    return { module: bindModule(image, liveOf(image, s.fns)), shapes: s.shapes, dtypes: s.dtypes };
  } catch (e) {
    discardEntry(key, `it does not load (${e instanceof Error ? e.message : String(e)})`);
    return undefined;
  }
}
