// A whole compiled function for the cpu: every kernel of a Program as a JavaScript function,
// plus a driver (cpu/driver.ts, bound to run-time slots here) that binds buffers (inputs,
// variable cells read at call time, constants, planned intermediates, fresh result arrays) and
// runs the steps in order. Generated once per shape specialisation; the source is cached, so
// the same program never compiles twice.
import { itemsize, type TypedArray } from '../../ir/dtype.js';
import { builtBy, provenanceComment, withBuiltBy, withBuiltByLine, type Provenance } from '../../ir/provenance.js';
import type { ScalarFn } from '../kernel/expr.js';
import type { MatmulKernel, Program } from '../kernel/ir.js';
import { prepare, type Prepared } from '../pipeline.js';
import type { ScheduleChooser } from './strategy.js';
import type { Plan } from '../transform/plan.js';
import { renderDriver, type DriverBinding } from './driver.js';
import { commentText } from './js.js';
import { accSize } from './matmul.js';
import {
  allocateSlots,
  CTOR,
  externFn,
  runtimeHelpers,
  type Extern,
  type Factory,
  type KernelFn,
  type RunFn,
} from './runtime.js';
import { KeptSlot, packArena } from './wasm-kernel.js';
import type { SlotStore } from './slot-store.js';

export { runtimeHelpers, type RunFn };

export interface ModuleOptions {
  /** Write results into the arrays passed as `outs` instead of returning fresh ones (Scan bodies). */
  readonly targetsOut?: boolean;
  /** Time every step (THEANINE_DEBUG=kernels). */
  readonly profile?: boolean;
  /**
   * K.function's `borrow`: the first `borrow` targets (the function's outputs) may be arrays an
   * instance keeps and writes again at its next call (Theano's `Out(borrow=True)`).
   */
  readonly borrow?: number;
  /**
   * A Scan body: inputs from this slot on are the same at every step (the scan's constants). A
   * matmul operand that reads one of them only is packed at step 0 (the body's `step` argument)
   * into a pack kept in the arena (wasm-kernel.ts' KeptSlot).
   */
  readonly invariantFrom?: number;
  /** Of those, the inputs that are a constant's or a variable's array (their packs are kept across calls, while the array is the same). */
  readonly immutableInputs?: ReadonlySet<number>;
  /** The tuned schedule of a whole product in a Scan body (the outer program's are chosen by its own prepare). */
  readonly schedule?: ScheduleChooser;
  /** The planned arrays shared with the program's other shape specialisations (slot-store.ts); without it, its own. */
  readonly store?: SlotStore;
  /**
   * Kept packs of variables (and of a Scan body's fixed inputs) shared with the program's other
   * shape specialisations, by what they hold: a weight is packed once per program, not per batch size.
   */
  readonly keptPacks?: { readonly map: Map<string, KeptSlot>; readonly prefix: string };
}

export interface CpuModule {
  readonly source: string;
  readonly run: RunFn;
  /** Bytes of planned buffers one call holds (Scan bodies included): what the compile cache counts. */
  readonly bytes: number;
  /** With `profile`: milliseconds spent in each step so far, what each step is, and the same for each Scan body (per step of the loop, summed). */
  readonly profile?: StepProfile;
  /** Gives back the places of its kept packs in the packing arena (the compile cache drops it; a later call packs them again). */
  readonly release: () => void;
  /** Lets its planned buffers and kept packs go, keeping its code: a later call allocates and packs them again. */
  readonly shed: () => void;
}

/** The kept packs of functions that are collected without being released. */
const collectedPacks = new FinalizationRegistry<readonly KeptSlot[]>((ps) => {
  for (const p of ps) packArena.freeSlot(p);
});

export interface StepProfile {
  readonly ms: Float64Array;
  readonly labels: readonly string[];
  readonly subs?: readonly StepProfile[];
}

/** A profile's rows (Scan bodies' steps after their loop's row, labelled `scan body sN:`), and resets it when `reset`. */
export function profileRows(p: StepProfile, prefix = '', reset = false): [string, number][] {
  const rows: [string, number][] = [];
  p.labels.forEach((l, i) => {
    rows.push([prefix + l, p.ms[i]!]);
    const m = /^scan body s(\d+)/.exec(l);
    if (m !== null && p.subs?.[Number(m[1])] !== undefined)
      rows.push(...profileRows(p.subs[Number(m[1])]!, `${prefix}  s${m[1]}: `, reset));
  });
  if (reset) p.ms.fill(0);
  return rows;
}

/** Compiled factories by source text: equal programs (another graph, same kernels) share one. */
const factories = new Map<string, Factory>();
const MAX_FACTORIES = 512;

export function factoryCacheSize(): number {
  return factories.size;
}

/**
 * Kernel functions by source (and the scalar functions they call): each is created once per
 * process, so V8 keeps its optimized code for every later graph, rebuild or shape that renders
 * the same kernel (functions created anew per compile would start in the interpreter each time).
 */
const kernelFns = new Map<string, KernelFn>();
const MAX_KERNELS = 4096;
const fnIds = new WeakMap<ScalarFn, number>();
let nextFnId = 0;

function kernelFn(source: string, fns: readonly ScalarFn[]): KernelFn {
  const ids = fns.map((f) => {
    let id = fnIds.get(f);
    if (id === undefined) {
      id = nextFnId++;
      fnIds.set(f, id);
    }
    return id;
  });
  const key = `${source}\n//fns:${ids.join(',')}`;
  let k = kernelFns.get(key);
  if (k === undefined) {
    k = new Function('rt', ...fns.map((_, i) => `f${i}`), `"use strict";\nreturn ${source};`)(
      runtimeHelpers,
      ...fns,
    ) as KernelFn;
    if (kernelFns.size >= MAX_KERNELS) kernelFns.delete(kernelFns.keys().next().value!);
    kernelFns.set(key, k);
  }
  return k;
}

/** The compiled factory of a driver's source (shared by source; the oldest dropped past MAX_FACTORIES). */
function factoryFor(source: string): Factory {
  let factory = factories.get(source);
  if (factory === undefined) {
    factory = new Function('rt', 'consts', 'slots', 'ext', 'kern', 'subs', 'prof', 'where', 'kp', source) as Factory;
    if (factories.size >= MAX_FACTORIES) factories.delete(factories.keys().next().value!);
    factories.set(source, factory);
  }
  return factory;
}

/** Forgets every compiled kernel and driver (for measurements of compiling from nothing). */
export function clearKernelCaches(): void {
  kernelFns.clear();
  factories.clear();
}

/**
 * What code generation makes of a prepared program, as plain data (the disk cache, src/runtime/
 * disk-cache.ts, stores it): the driver's source, each kernel's source, the constants, the packs
 * kept between calls, the buffer plan's slots, and the same for each Scan body. `bindModule`
 * makes it a run-time module. The host functions a program calls (extern steps, print hooks,
 * a kernel's scalar functions) are not data: they are in `ModuleLive`.
 */
export interface ModuleImage {
  /** The driver's source (the body of its factory). */
  readonly driver: string;
  /** Each kernel's source, named `k` (compiled once per source, kernelFn). */
  readonly kernels: readonly string[];
  /** The source f.source() shows: kernels named by position with their user's calls, the driver, the Scan bodies. */
  readonly source: string;
  readonly consts: readonly TypedArray[];
  /** Indices of the constants each instance has its own copy of (the learning phase, the epoch). */
  readonly perCall: readonly number[];
  readonly subs: readonly ModuleImage[];
  /** Doubles of each pack kept in the arena (wasm-kernel.ts' KeptSlot). */
  readonly packs: readonly number[];
  /** For each pack, the name it shares across the program's shape specialisations (BindOptions.keptPacks), or none. */
  readonly packKeys?: readonly (string | null | undefined)[];
  readonly slots: Plan['slots'];
  /** With `profile`: what each timed step is. */
  readonly labels?: readonly string[];
  readonly bytes: number;
  /** Whether it holds no extern step or print hook, in it or its Scan bodies (a host function that is not data). */
  readonly plain: boolean;
  /** How many scalar functions each kernel calls (f0, f1...: given by ModuleLive). */
  readonly fnCounts: readonly number[];
  /** Each step's `built by` line (a stored image; a fresh one has its provenance in ModuleLive). */
  readonly builtBy?: readonly (string | null)[];
}

/** The host functions and provenance of a module (not data): a fresh one's, or made for a stored image (no externs, no origins). */
export interface ModuleLive {
  readonly externs: readonly Extern[];
  /** Each kernel's scalar functions (f0, f1... in its source). */
  readonly fns: readonly (readonly ScalarFn[])[];
  readonly origins: readonly (readonly Provenance[] | undefined)[];
  readonly subs: readonly ModuleLive[];
}

export interface GeneratedModule {
  readonly image: ModuleImage;
  readonly live: ModuleLive;
}

/** The run-time module of a prepared program (../pipeline.ts `prepare` with the WebAssembly tiers). */
export function buildModule(prepared: Prepared, opts: ModuleOptions = {}): CpuModule {
  const g = generateModule(prepared, opts);
  return bindModule(g.image, g.live, { store: opts.store, keptPacks: opts.keptPacks });
}

/** The image with each step's provenance as its `built by` line (what a stored image keeps). */
export function withBuiltByLines(g: GeneratedModule): ModuleImage {
  const walk = (image: ModuleImage, live: ModuleLive): ModuleImage => ({
    ...image,
    builtBy: live.origins.map((o) => (o === undefined ? null : (builtBy(o) ?? null))),
    subs: image.subs.map((s, i) => walk(s, live.subs[i]!)),
  });
  return walk(g.image, g.live);
}

/** Code generation (step 6 of ../pipeline.ts): the module's sources and data. */
export function generateModule(prepared: Prepared, opts: ModuleOptions = {}): GeneratedModule {
  const { program: p, plan } = prepared;
  const consts: TypedArray[] = [];
  let subBytes = 0;
  /** Which consts are written per call (the learning phase, the epoch): each instance gets its own. */
  const perCall: number[] = [];
  const subs: ModuleImage[] = [];
  const subLive: ModuleLive[] = [];
  const subSources: string[] = [];
  const externs: Extern[] = [];
  const kernelSources: string[] = [];
  const kernelFnsOf: ScalarFn[][] = [];
  const kernels: string[] = [];
  /** Values the factory makes once per instance (views of planned arrays, a Scan's argument arrays). */
  const views: string[] = [];
  let nViews = 0;
  const labels: string[] = [];
  /** Packs kept in the arena between calls (constants, variables) or between a Scan's steps (its constants): their sizes, and the name a pack shares across the program's shapes (or undefined). */
  const packs: number[] = [];
  const packKeys: (string | undefined)[] = [];
  let usesStep = false;
  let usesHeld = false;
  /** Bytes of the borrowed results an instance keeps (counted with its planned buffers). */
  let heldBytes = 0;
  const immutable = (id: number): boolean => {
    const d = p.buffers[id]!;
    return (
      d.role === 'constant' ||
      d.role === 'variable' ||
      (d.role === 'input' && opts.immutableInputs?.has(d.slot!) === true)
    );
  };
  // A Scan's constant that may change between calls (a value the enclosing function computes) is
  // packed again at the loop's first step; not where other steps run between the matmuls (a
  // nested Scan or an extern step may call a compiled function that uses the same packs).
  const stepInvariant =
    opts.invariantFrom !== undefined && !p.steps.some((s) => s.kind === 'scan' || s.kind === 'extern');
  const keepable = (id: number | undefined): 'calls' | 'steps' | undefined => {
    if (id === undefined) return undefined;
    if (immutable(id)) return 'calls';
    const d = p.buffers[id]!;
    return stepInvariant && d.role === 'input' && d.slot! >= opts.invariantFrom! ? 'steps' : undefined;
  };
  // Which step runs (`at`), so that an error a step raises names the user's calls it computes.
  const origins = p.steps.map((s) => s.origin);
  const constant = (data: TypedArray, fresh?: boolean) => {
    if (fresh === true) perCall.push(consts.length);
    consts.push(data);
    return `consts[${consts.length - 1}]`;
  };
  const driver = renderDriver(prepared, {
    /** Each kernel has its own numbering of scalar functions; the compiled function is shared by source. */
    kernel(s, render) {
      const fns: ScalarFn[] = [];
      const src = render({
        bufName: (id) => `b${id}`,
        fnName: (fn) => {
          let k = fns.indexOf(fn);
          if (k < 0) {
            k = fns.length;
            fns.push(fn);
          }
          return `f${k}`;
        },
      });
      const name = `k${kernelSources.length}`;
      kernelSources.push(src.source.replace(/^function \w+/, 'function k'));
      kernelFnsOf.push(fns);
      // The shown source names the user's calls the kernel computes (the compiled kernel is shared by source, so it has no such line).
      const shown = src.source.replace(/^function \w+/, `function ${name}`);
      const note = provenanceComment(s.origin);
      const nl = shown.indexOf('\n');
      kernels.push(note === undefined || nl < 0 ? shown : `${shown.slice(0, nl)}\n  // ${note}${shown.slice(nl)}`);
      return { ...src, name };
    },
    slot: (sl) => `slots[${sl}]`,
    hoist(init) {
      const name = `v${nViews++}`;
      views.push(`const ${name} = ${init};`);
      return name;
    },
    input: (slot) => `ins[${slot}]`,
    variable: (slot) => `cells[${slot}].value.data`,
    constant: (v) => constant(v.data),
    phase: (name) => [`const ${name} = ${constant(new Uint8Array(1), true)}; ${name}[0] = phase;`],
    epoch: (name) => [`const ${name} = ${constant(new Float64Array(1), true)}; ${name}[0] = ctx.epoch;`],
    out: opts.targetsOut === true ? (k) => `outs[${k}]` : undefined,
    fresh: (ctor, size) => `rt.fresh(${ctor}, ${size})`,
    borrow:
      opts.borrow === undefined || opts.targetsOut === true
        ? undefined
        : {
            outputs: opts.borrow,
            held: (id, ctor, size, fresh, dtype) => {
              usesHeld = true;
              heldBytes += size * itemsize(dtype);
              return `rt.held(held, ${id}, ${ctor}, ${size}, ${fresh})`;
            },
          },
    matmul: arenaMatmul(p, keepable, packs, packKeys, () => {
      usesStep = true;
    }),
    scan(s, k, ins, outs) {
      const from = s.seqs.length + s.inits.length;
      const fixed = new Set(s.consts.flatMap((v, i) => (immutable(v.buf) ? [from + i] : [])));
      const sub = generateModule(prepare(s.body, { wasm: true }, opts.schedule), {
        targetsOut: true,
        invariantFrom: from,
        immutableInputs: fixed,
        profile: opts.profile === true,
        ...(opts.schedule !== undefined ? { schedule: opts.schedule } : {}),
      });
      subBytes += sub.image.bytes;
      subs.push(sub.image);
      subLive.push(sub.live);
      subSources.push(`// scan body s${k}:\n${sub.image.source}`);
      // The step's arguments are two arrays made once; what changes per step is written into them.
      views.push(`const si${k} = new Array(${ins.length}), so${k} = new Array(${outs.length});`);
      const set = (fixed: boolean) => [
        ...ins.flatMap((a, i) => (a.fixed === fixed ? [`si${k}[${i}] = ${a.expr};`] : [])),
        ...outs.flatMap((a, i) => (a.fixed === fixed ? [`so${k}[${i}] = ${a.expr};`] : [])),
      ];
      return { setup: set(true), call: [...set(false), `s${k}(si${k}, cells, phase, ctx, so${k}, k);`] };
    },
    print(s, input) {
      // The message stays out of the source (user strings never reach it): a closure holds it.
      const { message, input: v } = s;
      const bool = v.dtype === 'bool';
      externs.push((ctx, [x]) => {
        ctx.print(`${message}${runtimeHelpers.fmt(x!, v.shape, bool)}`);
        return [];
      });
      return `x${externs.length - 1}(ctx, [${input}]); // print: a host callback (the print hook)`;
    },
    extern(s, inputs, name) {
      externs.push(externFn(s));
      return `const [${s.outs.map((o) => name(o.buf)).join(', ')}] = x${externs.length - 1}(ctx, [${inputs.join(', ')}]); // extern ${commentText(s.label)}: not compiled, runs its reference implementation (${commentText(s.reason)})`;
    },
    step(s, i, lines) {
      if (opts.profile !== true) return [`at = ${i};`, ...lines];
      // declarations (an extern's results) must stay at the function's top level: time around them with plain statements
      labels.push(
        s.kind === 'matmul'
          ? `matmul ${s.m.size}x${s.k.size}x${s.n.size} [${s.label}]`
          : s.kind === 'scan'
            ? `scan body s${subs.length - 1}: ${s.label}`
            : s.label,
      );
      return [
        `at = ${i};`,
        'prof.t = performance.now();',
        ...lines,
        `prof.ms[${labels.length - 1}] += performance.now() - prof.t;`,
      ];
    },
  });

  const epilogue =
    opts.targetsOut === true ? [...driver.copies, 'return outs;'] : [`return [${driver.results.join(', ')}];`];
  const indent = (lines: readonly string[]) => lines.map((l) => `  ${l}`);
  const source = [
    '"use strict";',
    ...Array.from({ length: externs.length }, (_, i) => `const x${i} = ext[${i}];`),
    ...Array.from({ length: kernelSources.length }, (_, i) => `const k${i} = kern[${i}];`),
    ...Array.from({ length: subs.length }, (_, i) => `const s${i} = subs[${i}];`),
    ...views,
    ...(usesHeld ? ['const held = [];'] : []),
    `return function run(ins, cells, phase, ctx, outs${usesStep ? ', step' : ''}) {`,
    ...indent(driver.prologue),
    '  let at = -1;',
    '  try {',
    ...indent(driver.body),
    ...indent(epilogue),
    '  } catch (e) { throw where(e, at); }',
    '};',
  ].join('\n');
  const bytes =
    plan.slots.reduce((a, sl) => a + sl.size * CTOR[sl.cls](0).BYTES_PER_ELEMENT, 0) +
    packs.reduce((a, n) => a + 8 * n, 0) +
    heldBytes +
    subBytes;
  const plain = externs.length === 0 && subs.every((x) => x.plain);
  const image: ModuleImage = {
    driver: source,
    kernels: kernelSources,
    source: [...kernels, source, ...subSources].join('\n'),
    consts,
    perCall,
    subs,
    packs,
    packKeys,
    slots: plan.slots,
    bytes,
    plain,
    fnCounts: kernelFnsOf.map((f) => f.length),
    ...(opts.profile === true ? { labels } : {}),
  };
  return { image, live: { externs, fns: kernelFnsOf, origins, subs: subLive } };
}

/** Where a bound module's planned arrays and kept packs live, when its program's shapes share them. */
export interface BindOptions {
  /** The planned arrays shared with the program's other shape specialisations (slot-store.ts); without it, its own. */
  readonly store?: SlotStore | undefined;
  /**
   * Kept packs of variables (and of a Scan body's fixed inputs) shared with the program's other
   * shape specialisations, by what they hold: a weight is packed once per program, not per batch size.
   */
  readonly keptPacks?: { readonly map: Map<string, KeptSlot>; readonly prefix: string } | undefined;
}

/**
 * A run-time module of an image: kernels and driver compiled (shared by source), packs placed in
 * the arena. `live` is the generating call's (a stored image has none, and holds no host function).
 */
export function bindModule(image: ModuleImage, live?: ModuleLive, opts: BindOptions = {}): CpuModule {
  const externs = live?.externs ?? [];
  if (!image.plain && externs.length === 0)
    throw new Error('bindModule: an image with extern steps needs the live parts of the call that generated it');
  if (image.fnCounts.some((n, i) => (live?.fns[i]?.length ?? 0) !== n))
    throw new Error("bindModule: a kernel's scalar functions are missing");
  const program = opts.keptPacks;
  const subMods = image.subs.map((s, i) =>
    bindModule(
      s,
      live?.subs[i],
      program === undefined ? {} : { keptPacks: { map: program.map, prefix: `${program.prefix}s${i}/` } },
    ),
  );
  const kernelList = image.kernels.map((src, i) => kernelFn(src, live?.fns[i] ?? []));
  const packs = image.packs.map((n, i) => {
    const key = image.packKeys?.[i];
    if (program === undefined || key === undefined || key === null) return new KeptSlot(n);
    const wide = `${program.prefix}${key}`;
    let slot = program.map.get(wide);
    if (slot === undefined) program.map.set(wide, (slot = new KeptSlot(n)));
    return slot;
  });
  const subProfiles: StepProfile[] = [];
  subMods.forEach((m, i) => {
    if (m.profile !== undefined) subProfiles[i] = m.profile;
  });
  const subs = subMods.map((m) => m.run);
  const factory = factoryFor(image.driver);
  const labels = image.labels ?? [];
  const prof = { t: 0, ms: new Float64Array(labels.length) };
  const lines = image.builtBy;
  const where =
    lines === undefined
      ? (e: unknown, at: number): unknown => withBuiltBy(e, live?.origins[at])
      : (e: unknown, at: number): unknown => withBuiltByLine(e, lines[at] ?? undefined);
  const fresh = new Set(image.perCall);
  const make = (slots: TypedArray[] = allocateSlots({ slots: image.slots })): RunFn => {
    const own = image.consts.map((c, i) =>
      fresh.has(i) ? new (c.constructor as new (n: number) => TypedArray)(c.length) : c,
    );
    return factory(runtimeHelpers, own, slots, externs, kernelList, subs, prof, where, packs);
  };
  const { run, empty } = opts.store === undefined ? pooled(make) : onStore(opts.store, { slots: image.slots }, make);
  const subSheds = subMods.map((m) => m.shed);
  if (packs.length > 0) collectedPacks.register(run, packs);
  const release = () => {
    empty();
    for (const k of packs) packArena.freeSlot(k);
    for (const m of subMods) m.release();
  };
  const shed = () => {
    release();
    for (const sh of subSheds) sh();
  };
  return {
    source: image.source,
    run,
    bytes: image.bytes,
    release,
    shed,
    ...(image.labels !== undefined ? { profile: { ms: prof.ms, labels, subs: subProfiles } } : {}),
  };
}

/**
 * The run-time binding's matmul blocks: the packing buffers and the tile sums as views of the
 * process-wide arena. A pack of a constant or a variable is kept in the arena between calls
 * (KeptSlot: one per variable cell, for twin functions), made again only when the variable's
 * value is another array; a Scan's step-invariant pack is kept between its steps (made at step 0,
 * and again if another call used its place). Other packs and the sums are this step's own, past
 * the kept packs (rt.arena.base). Offsets in the arena count doubles; a float32 product's packs
 * and sums are float32 views of the same memory (its element n at float32 index 2*offset + n).
 */
function arenaMatmul(
  p: Program,
  keepable: (id: number | undefined) => 'calls' | 'steps' | undefined,
  packs: number[],
  packKeys: (string | undefined)[],
  onStep: () => void,
): DriverBinding['matmul'] {
  /** Kept packs by what they hold (array, view, layout). */
  const shared = new Map<string, number>();
  /** A variable's or an input's name that every shape specialisation of the program gives it (buffer ids may differ between them). */
  const stable = (id: number): string | undefined => {
    const d = p.buffers[id]!;
    return d.role === 'variable' ? `v${d.slot!}` : d.role === 'input' ? `i${d.slot!}` : undefined;
  };
  return (s, m, sources, name) => {
    const all = m.all;
    const nAcc = accSize(s, all);
    const f32 = s.sum === 'float32';
    const plus = (x: string, c: number) => (c === 0 ? x : `${x} + ${c}`);
    const sub = (o: number, n: number) =>
      f32
        ? `a32.subarray(${plus('2 * z', 2 * o)}, 2 * z + ${2 * o + n})`
        : `ar.subarray(${plus('z', o)}, z + ${o + n})`;
    const keptAt = (j: number, n: number) =>
      f32 ? `a32.subarray(2 * q${j}.at, 2 * q${j}.at + ${n})` : `ar.subarray(q${j}.at, q${j}.at + ${n})`;
    const at: string[] = [];
    const checks: string[] = [];
    const kept = new Map<number, { when: string; done: string; pack: string; source: string }>();
    const calls = m.packing.calls;
    let o = 0;
    for (const id of [s.packA, s.packB]) {
      const n = p.buffers[id]!.size;
      const src = sources.get(id);
      const how = keepable(src);
      if (how !== undefined) {
        // Products that pack the same view of the same array the same way share one kept pack
        // (an unrolled loop's copies of dot(h, U)).
        const c = calls.find((q) => q.dst === id);
        const key =
          c === undefined
            ? undefined
            : `${src}|${c.op.base},${c.op.sb},${c.op.sr},${c.op.st}|${s.batch.size},${c.rows},${s.k.size},${c.p}${c.rowMajor === true ? 'r' : ''}|${s.sum}`;
        let j = key === undefined ? undefined : shared.get(key);
        if (j === undefined) {
          j = packs.length;
          const name = stable(src!);
          packs.push(doubles(s, n));
          packKeys.push(
            c === undefined || name === undefined
              ? undefined
              : `${name}|${c.op.base},${c.op.sb},${c.op.sr},${c.op.st}|${s.batch.size},${c.rows},${s.k.size},${c.p}${c.rowMajor === true ? 'r' : ''}|${s.sum}|${n}`,
          );
          if (key !== undefined) shared.set(key, j);
        }
        // a variable's operand has a pack per variable cell (twin functions share the program)
        const d = p.buffers[src!]!;
        const owner = d.role === 'variable' ? `cells[${d.slot!}]` : 'null';
        if (!checks.some((x) => x.startsWith(`q${j} =`)))
          checks.push(`q${j} = rt.arena.pick(kp[${j}], ${owner}), p${j} = rt.arena.stale(q${j}, ${name(src!)})`);
        at.push(`${name(id)} = ${keptAt(j, n)}`);
        if (how === 'steps') onStep();
        kept.set(id, {
          when: how === 'steps' ? `p${j} || step === 0` : `p${j}`,
          done: `rt.arena.packed(q${j}, ${name(src!)});`,
          pack: `q${j}`,
          source: name(src!),
        });
      } else {
        at.push(`${name(id)} = ${sub(o, n)}`);
        o += doubles(s, n);
      }
    }
    // Whole float32 products stage their operands past everything else (stagedPacks); kept packs
    // are placed (which may move base) before the arena is sized.
    const end = o + doubles(s, nAcc);
    const staging = m.staged.size;
    const arena = `${checks.length > 0 ? `const ${checks.join(', ')}; ` : ''}const ar = rt.arena.f64(${end + Math.ceil(staging / 2)})${f32 ? ', a32 = rt.arena.f32()' : ''}, z = rt.arena.base`;
    return {
      open: `{ ${arena}, ${at.join(', ')}, acc = ${sub(o, nAcc)};`,
      kept: (id) => kept.get(id),
      ...(staging > 0 ? { stage: `8 * z + ${end * 8}` } : {}),
    };
  };
}

/** Doubles of the packing arena that n elements of a product's `sum` dtype take. */
const doubles = (s: MatmulKernel, n: number): number => (s.sum === 'float32' ? Math.ceil(n / 2) : n);

/**
 * Intermediate buffers belong to one call at a time. An instance of the driver
 * owns its planned arrays (and the views made of them); a call takes a free instance, or makes one
 * when every instance is in use by a call further up the stack (a user op's reference, a
 * print_tensor sink or an extern that calls a compiled function), and gives it back when it returns.
 * The pool keeps at most POOL_KEEP instances, so re-entrancy costs memory only while it happens.
 */
const POOL_KEEP = 2;

function pooled(make: () => RunFn): { run: RunFn; empty: () => void } {
  // Made at the first call: a specialisation compiled but never run holds no buffers.
  let free: RunFn[] = [];
  const run: RunFn = (ins, cells, phase, ctx, outs, step) => {
    const pool = free;
    const inst = pool.pop() ?? make();
    try {
      return inst(ins, cells, phase, ctx, outs, step);
    } finally {
      // an instance in use when the pool was emptied goes with it
      if (pool === free && pool.length < POOL_KEEP) pool.push(inst);
    }
  };
  return {
    run,
    empty: () => {
      free = [];
    },
  };
}

/**
 * A specialisation whose planned arrays are views of its program's store: one instance, made again
 * when the store's arrays changed; a call made while the store is in use runs on an instance of its own.
 */
function onStore(
  store: SlotStore,
  plan: Pick<Plan, 'slots'>,
  make: (slots?: TypedArray[]) => RunFn,
): { run: RunFn; empty: () => void } {
  const holder = {};
  let inst: RunFn | undefined;
  let gen = -1;
  const run: RunFn = (ins, cells, phase, ctx, outs, step) => {
    if (store.busy) return make()(ins, cells, phase, ctx, outs, step);
    store.busy = true;
    try {
      if (inst === undefined || gen !== store.gen) {
        const slots = store.slots(plan, holder);
        inst = make(slots);
        gen = store.gen;
      }
      return inst(ins, cells, phase, ctx, outs, step);
    } finally {
      store.busy = false;
    }
  };
  return {
    run,
    empty: () => {
      inst = undefined;
      store.unhold(holder);
    },
  };
}
