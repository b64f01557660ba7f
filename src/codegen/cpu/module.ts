// A whole compiled function for the cpu: every kernel of a Program as a JavaScript function,
// plus a driver that binds buffers (inputs, variable cells read at call time, constants,
// planned intermediates, fresh result arrays) and runs the steps in order. Generated once per
// shape specialisation; the source is cached, so the same program never compiles twice.
import type { TypedArray } from '../../ir/dtype.js';
import { provenanceComment, withBuiltBy, type Provenance } from '../../ir/provenance.js';
import { ExprBuilder, type ScalarFn } from '../expr.js';
import { collapseLoopKernel } from '../collapse.js';
import type { MatmulKernel, Program } from '../kernel.js';
import { planBuffers, type Plan } from '../plan.js';
import { arrayType, commentText } from './js.js';
import { renderLoopKernel, type KernelSource, type RenderEnv } from './loop.js';
import { accSize, packing, renderAllTiles, renderMatmulCompute, sumsWhole } from './matmul.js';
import { allocateSlots, externFn, runtimeHelpers, type Extern, type Factory, type KernelFn, type RunFn } from './runtime.js';
import { renderScan } from './scan.js';
import { wasmTileModule } from './wasm-kernel.js';
import { planElementwise, renderElementwise } from '../wasm/elementwise.js';
import { sizeOf } from '../../ir/ndarray.js';

export { runtimeHelpers, type RunFn };

export interface ModuleOptions {
  /** Write results into the arrays passed as `outs` instead of returning fresh ones (Scan bodies). */
  readonly targetsOut?: boolean;
  /** Time every step (THEANINE_DEBUG=kernels). */
  readonly profile?: boolean;
  /**
   * A Scan body: inputs from this slot on are the same at every step (the scan's constants). A
   * matmul operand that is a strided view of one of them is packed at step 0 only, into a part
   * of the packing arena kept for it while the loop runs (the body's `step` argument).
   */
  readonly invariantFrom?: number;
}

export interface CpuModule {
  readonly source: string;
  readonly run: RunFn;
  /** Bytes of planned buffers one call holds (Scan bodies included): what the compile cache counts. */
  readonly bytes: number;
  /** With `profile`: milliseconds spent in each step so far, what each step is, and the same for each Scan body (per step of the loop, summed). */
  readonly profile?: StepProfile;
}

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
    if (m !== null && p.subs?.[Number(m[1])] !== undefined) rows.push(...profileRows(p.subs[Number(m[1])]!, `${prefix}  s${m[1]}: `, reset));
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
    if (id === undefined) { id = nextFnId++; fnIds.set(f, id); }
    return id;
  });
  const key = `${source}\n//fns:${ids.join(',')}`;
  let k = kernelFns.get(key);
  if (k === undefined) {
    k = new Function('rt', ...fns.map((_, i) => `f${i}`), `"use strict";\nreturn ${source};`)(runtimeHelpers, ...fns) as KernelFn;
    if (kernelFns.size >= MAX_KERNELS) kernelFns.delete(kernelFns.keys().next().value!);
    kernelFns.set(key, k);
  }
  return k;
}

/** Forgets every compiled kernel and driver (for measurements of compiling from nothing). */
export function clearKernelCaches(): void {
  kernelFns.clear();
  factories.clear();
}

export function buildModule(p: Program, plan: Plan, opts: ModuleOptions = {}): CpuModule {
  const consts: TypedArray[] = [];
  let subBytes = 0;
  /** Which consts are written per call (the learning phase): each instance gets its own. */
  const phaseConsts: number[] = [];
  /** The epoch's one-element arrays: written per call, so per instance too. */
  const epochConsts: number[] = [];
  const subs: RunFn[] = [];
  const subProfiles: StepProfile[] = [];
  const subSources: string[] = [];
  const externs: Extern[] = [];
  const kernelList: KernelFn[] = [];
  const kernels: string[] = [];
  const body: string[] = [];
  /** Renders one kernel with its own numbering of scalar functions. */
  const render = (f: (env: RenderEnv) => KernelSource): KernelSource => {
    const fns: ScalarFn[] = [];
    const env: RenderEnv = {
      bufName: (id) => `b${id}`,
      fnName: (fn) => {
        let k = fns.indexOf(fn);
        if (k < 0) { k = fns.length; fns.push(fn); }
        return `f${k}`;
      },
    };
    const src = f(env);
    const name = `k${kernelList.length}`;
    kernelList.push(kernelFn(src.source.replace(/^function \w+/, 'function k'), fns));
    // The shown source names the user's calls the kernel computes (the compiled kernel is shared by source, so it has no such line).
    const shown = src.source.replace(/^function \w+/, `function ${name}`);
    const note = provenanceComment(origin);
    const nl = shown.indexOf('\n');
    kernels.push(note === undefined || nl < 0 ? shown : `${shown.slice(0, nl)}\n  // ${note}${shown.slice(nl)}`);
    return { ...src, source: name };
  };
  const call = (src: KernelSource) => {
    const name = src.source;
    const args = [...(src.needsAcc === true ? ['acc'] : []), ...src.buffers.map((b) => `b${b}`)].join(', ');
    if (src.rows === undefined) body.push(`  ${name}(${args});`);
    else if (src.rows <= 1) body.push(`  ${name}(${args}, 0, ${src.rows});`);
    else body.push(`  ${name}(${args}, 0, 1); ${name}(${args}, 1, ${src.rows});`);
  };
  const sizeOfBuf = (id: number) => p.buffers[id]!.size;
  // Exact-length arrays for extern arguments: views of planned arrays are made once, others per call if needed.
  const views: string[] = [];
  const view = (v: { buf: number; offset: number; shape: readonly number[] }) => {
    const n = sizeOf(v.shape);
    const slot = plan.slotOf.get(v.buf);
    if (slot !== undefined) {
      views.push(`const v${views.length} = slots[${slot}].subarray(${v.offset}, ${v.offset + n});`);
      return `v${views.length - 1}`;
    }
    return v.offset === 0 && n === sizeOfBuf(v.buf) ? `b${v.buf}` : `b${v.buf}.subarray(${v.offset}, ${v.offset + n})`;
  };

  const labels: string[] = [];
  const useWasm = wasmTileModule() !== null;
  const arenaUse = hoistedPacks(p, opts.invariantFrom, (s) => useWasm && sumsWhole(s));
  // Which step runs (`at`), so that an error a step raises names the user's calls it computes.
  const origins: (readonly Provenance[] | undefined)[] = [];
  let origin: readonly Provenance[] | undefined;
  for (const s of p.steps) {
    origin = s.origin;
    body.push(`  at = ${origins.length};`);
    origins.push(s.origin);
    const mark = body.length;
    if (s.kind === 'loop') {
      // The WebAssembly SIMD tier where it applies (../wasm/elementwise.ts), else JavaScript.
      const simd = planElementwise(s, (id) => p.buffers[id]!.dtype);
      call(render((env) => (simd !== undefined ? renderElementwise(simd, env.bufName) : renderLoopKernel(s, 'k', env))));
    }
    else if (s.kind === 'matmul') {
      // The packing buffers and the tile sums: views of the process-wide arena, for this step only.
      // Packs of step-invariant operands (Scan bodies) sit past every step's own use, packed at step 0.
      // Offsets in the arena count doubles; a float32 product's packs and sums are float32 views
      // of the same memory (its element n at float32 index 2*offset + n).
      const nA = p.buffers[s.packA]!.size, nB = p.buffers[s.packB]!.size;
      // Large products: every tile sum first (cache blocks, split over the worker threads), then the epilogue.
      const all = useWasm && sumsWhole(s);
      const nAcc = accSize(s, all);
      const f32 = s.sum === 'float32';
      const sub = (o: number, n: number) => (f32 ? `a32.subarray(${2 * o}, ${2 * o + n})` : `ar.subarray(${o}, ${o + n})`);
      const kept = (id: number) => arenaUse.at.get(id);
      const views: string[] = [];
      let o = 0;
      for (const [id, n] of [[s.packA, nA], [s.packB, nB]] as const) {
        const at = kept(id);
        if (at !== undefined) views.push(`b${id} = ${sub(at, n)}`);
        else { views.push(`b${id} = ${sub(o, n)}`); o += doubles(s, n); }
      }
      body.push(`  { const ar = rt.arena.f64(${arenaUse.total ?? o + doubles(s, nAcc)})${f32 ? ', a32 = rt.arena.f32()' : ''}, ${views.join(', ')}, acc = ${sub(o, nAcc)};`);
      const pk = packing(s);
      for (const c of pk.calls) {
        const { base, sb, sr, st } = c.op;
        body.push(`  ${kept(c.dst) !== undefined ? 'if (step === 0) ' : ''}rt.packStrided(b${c.dst}, b${c.buf}, ${base}, ${sb}, ${sr}, ${st}, ${s.batch.size}, ${c.rows}, ${s.k.size}, ${c.p});`);
      }
      for (const kern of pk.kernels) call(render((env) => renderLoopKernel(collapseLoopKernel(kern, new ExprBuilder(() => 'float64')), 'k', env)));
      if (all) body.push(`  ${renderAllTiles(s, `b${s.packA}`, `b${s.packB}`)}`);
      call(render((env) => renderMatmulCompute(s, 'k', env, useWasm, all)));
      body.push('  }');
    } else if (s.kind === 'scan') {
      renderScan(s, subs.length, view, body, views);
      const sub = buildModule(s.body, planBuffers(s.body), { targetsOut: true, invariantFrom: s.seqs.length + s.inits.length, profile: opts.profile === true });
      subBytes += sub.bytes;
      if (sub.profile !== undefined) subProfiles[subs.length] = sub.profile;
      subs.push(sub.run);
      subSources.push(`// scan body s${subs.length - 1}:\n${sub.source}`);
    } else if (s.kind === 'print') {
      // The message stays out of the source (user strings never reach it): a closure holds it.
      const { message, input } = s;
      const bool = input.dtype === 'bool';
      externs.push((ctx, [v]) => { ctx.print(`${message}${runtimeHelpers.fmt(v!, input.shape, bool)}`); return []; });
      body.push(`  x${externs.length - 1}(ctx, [${view(s.input)}]); // print: a host callback (the print hook)`);
    } else {
      externs.push(externFn(s));
      body.push(`  const [${s.outs.map((o) => `b${o.buf}`).join(', ')}] = x${externs.length - 1}(ctx, [${s.inputs.map(view).join(', ')}]); // extern ${commentText(s.label)}: not compiled, runs its reference implementation (${commentText(s.reason)})`);
    }
    if (opts.profile === true) {
      // declarations (an extern's results) must stay at the function's top level: time around them with plain statements
      body.splice(mark, 0, `  prof.t = performance.now();`);
      body.push(`  prof.ms[${labels.length}] += performance.now() - prof.t;`);
      labels.push(s.kind === 'matmul' ? `matmul ${s.m.size}x${s.k.size}x${s.n.size} [${s.label}]` : s.kind === 'scan' ? `scan body s${subs.length - 1}: ${s.label}` : s.label);
    }
  }

  const prologue: string[] = [];
  const declared = new Set<number>();
  for (const b of p.buffers) {
    const name = `b${b.id}`;
    switch (b.role) {
      case 'input': prologue.push(`  const ${name} = ins[${b.slot!}];`); break;
      case 'variable': prologue.push(`  const ${name} = cells[${b.slot!}].value.data;`); break;
      case 'phase': phaseConsts.push(consts.length); consts.push(new Uint8Array(1)); prologue.push(`  const ${name} = consts[${consts.length - 1}]; ${name}[0] = phase;`); break;
      case 'epoch': epochConsts.push(consts.length); consts.push(new Float64Array(1)); prologue.push(`  const ${name} = consts[${consts.length - 1}]; ${name}[0] = ctx.epoch;`); break;
      case 'constant': consts.push(b.value!.data); prologue.push(`  const ${name} = consts[${consts.length - 1}];`); break;
      case 'temp': case 'scratch': {
        const sl = plan.slotOf.get(b.id);
        if (sl !== undefined) prologue.push(`  const ${name} = slots[${sl}];`);
        break;
      }
      case 'target': {
        const k = opts.targetsOut === true ? p.targets.findIndex((t) => t.buf === b.id && !t.copy) : -1;
        prologue.push(k >= 0 ? `  const ${name} = outs[${k}];` : `  const ${name} = new ${arrayType(b.dtype)}(${b.size});`);
        break;
      }
      case 'extern': break;
    }
    declared.add(b.id);
  }
  const results = p.targets.map((t) => {
    const n = sizeOf(t.shape);
    return t.copy ? `b${t.buf}.slice(${t.offset}, ${t.offset + n})` : `b${t.buf}`;
  });
  const epilogue = opts.targetsOut !== true ? [`  return [${results.join(', ')}];`] : p.targets.flatMap((t, k) => {
    const n = sizeOf(t.shape);
    return !t.copy && p.buffers[t.buf]!.role === 'target' ? [] : [`  rt.copy(outs[${k}], 0, b${t.buf}, ${t.offset}, ${n});`];
  }).concat(['  return outs;']);
  const source = [
    '"use strict";',
    ...Array.from({ length: externs.length }, (_, i) => `const x${i} = ext[${i}];`),
    ...Array.from({ length: kernelList.length }, (_, i) => `const k${i} = kern[${i}];`),
    ...Array.from({ length: subs.length }, (_, i) => `const s${i} = subs[${i}];`),
    ...views,
    `return function run(ins, cells, phase, ctx, outs${arenaUse.total !== undefined ? ', step' : ''}) {`,
    ...prologue,
    '  let at = -1;',
    '  try {',
    ...body,
    ...epilogue,
    '  } catch (e) { throw where(e, at); }',
    '};',
  ].join('\n');
  let factory = factories.get(source);
  if (factory === undefined) {
    factory = new Function('rt', 'consts', 'slots', 'ext', 'kern', 'subs', 'prof', 'where', source) as Factory;
    if (factories.size >= MAX_FACTORIES) factories.delete(factories.keys().next().value!);
    factories.set(source, factory);
  }
  const prof = { t: 0, ms: new Float64Array(labels.length) };
  const where = (e: unknown, at: number): unknown => withBuiltBy(e, origins[at]);
  const make = (): RunFn => {
    const own = consts.slice();
    for (const i of phaseConsts) own[i] = new Uint8Array(1);
    for (const i of epochConsts) own[i] = new Float64Array(1);
    return factory(runtimeHelpers, own, allocateSlots(plan), externs, kernelList, subs, prof, where);
  };
  const CLS_BYTES: Record<string, number> = { f32: 4, f64: 8, i32: 4, i16: 2, i8: 1, u8: 1 };
  const bytes = plan.slots.reduce((a, sl) => a + sl.size * CLS_BYTES[sl.cls]!, 0) + subBytes;
  return {
    source: [...kernels, source, ...subSources].join('\n'), run: pooled(make), bytes,
    ...(opts.profile === true ? { profile: { ms: prof.ms, labels, subs: subProfiles } } : {}),
  };
}

/** Doubles of the packing arena that n elements of a product's `sum` dtype take. */
const doubles = (s: MatmulKernel, n: number): number => (s.sum === 'float32' ? Math.ceil(n / 2) : n);

/**
 * Where a Scan body's step-invariant packs live in the packing arena: `at` the offset of each
 * hoisted packing buffer, past `total - (their sizes)`, the most any matmul of the body uses per
 * step; `total` the arena size every matmul of the body asks for (so the arena grows at the
 * first one, before anything is kept in it). None when the body runs other steps that may use
 * the arena in between (nested Scans, extern steps that may call compiled functions).
 */
function hoistedPacks(p: Program, invariantFrom: number | undefined, allTiles: (s: MatmulKernel) => boolean): { at: Map<number, number>; total?: number } {
  const at = new Map<number, number>();
  if (invariantFrom === undefined || p.steps.some((s) => s.kind === 'scan' || s.kind === 'extern')) return { at };
  const invariant = (id: number) => {
    const b = p.buffers[id]!;
    return b.role === 'input' && b.slot! >= invariantFrom;
  };
  let perStep = 0;
  const kept: [number, number][] = [];
  for (const s of p.steps) {
    if (s.kind !== 'matmul') continue;
    const hoisted = new Set(packing(s).calls.filter((c) => invariant(c.buf)).map((c) => c.dst));
    let own = doubles(s, accSize(s, allTiles(s)));
    for (const id of [s.packA, s.packB]) {
      if (hoisted.has(id)) kept.push([id, doubles(s, p.buffers[id]!.size)]);
      else own += doubles(s, p.buffers[id]!.size);
    }
    perStep = Math.max(perStep, own);
  }
  if (kept.length === 0) return { at };
  let o = perStep;
  for (const [id, n] of kept) { at.set(id, o); o += n; }
  return { at, total: o };
}

/**
 * Intermediate buffers belong to one call at a time. An instance of the driver
 * owns its planned arrays (and the views made of them); a call takes a free instance, or makes one
 * when every instance is in use by a call further up the stack (a user op's reference, a
 * print_tensor sink or an extern that calls a compiled function), and gives it back when it returns.
 * The pool keeps at most POOL_KEEP instances, so re-entrancy costs memory only while it happens.
 */
const POOL_KEEP = 2;

function pooled(make: () => RunFn): RunFn {
  // Made at the first call: a specialisation compiled but never run holds no buffers.
  const free: RunFn[] = [];
  return (ins, cells, phase, ctx, outs, step) => {
    const inst = free.pop() ?? make();
    try {
      return inst(ins, cells, phase, ctx, outs, step);
    } finally {
      if (free.length < POOL_KEEP) free.push(inst);
    }
  };
}
