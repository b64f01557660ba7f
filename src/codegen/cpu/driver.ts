// The driver of a prepared Program (../pipeline.ts): the JavaScript that binds its buffers and
// runs its steps in order (kernel calls, a matmul's packing, a Scan's loop, print callbacks,
// extern steps), each as its strategy says (./strategy.ts: chosen before rendering; here only
// spelled). The buffers bound are the ones the steps name, recorded as they are named. One
// walk over the steps, two bindings of where things live: the cpu module (cpu/module.ts) keeps
// planned arrays, constants, kernels and Scan bodies in the slots of a closure made at run
// time; an exported module (src/runtime/export/render.ts) declares them as module statics and
// typed functions. The same shape as tinygrad's one renderer with per-target overrides, or
// PyTensor's linkers over one graph walk: what a step does is written here once, where its
// pieces are kept is the binding's.
import type { DType } from '../../ir/dtype.js';
import type { NDArray } from '../../ir/ndarray.js';
import { sizeOf } from '../../ir/ndarray.js';
import { exprOrder, type Expr } from '../kernel/expr.js';
import {
  stepBuffers,
  type BufferDecl,
  type ExternStep,
  type MatmulKernel,
  type PrintStep,
  type Program,
  type ScanStep,
  type Step,
} from '../kernel/ir.js';
import type { Plan } from '../transform/plan.js';
import type { Prepared } from '../pipeline.js';
import { renderElementwise } from './wasm/elementwise.js';
import { renderBroadcast } from './wasm/broadcast.js';
import { renderPool } from './wasm/pool.js';
import { renderReduce } from './wasm/reduce.js';
import { renderPhilox, renderPhiloxPair } from './wasm/philox.js';
import { arrayType } from './js.js';
import { renderLoopKernel, type KernelSource, type RenderEnv } from './loop.js';
import { renderAllTiles, renderIndirectTiles, renderMatmulCompute, renderTierEpilogue } from './matmul.js';
import { panelsAfter, renderSmallSums } from './small-matmul.js';
import { renderScanLoop, type ScanArg } from './scan.js';
import type { MatmulStrategy } from './strategy.js';

/** A buffer's name in the driver; a binding names buffers through it, so the driver binds exactly the buffers named. */
export type BufferName = (id: number) => string;

/** A kernel the binding declared: its rendered form, and the name the driver calls it by. */
export type DeclaredKernel = KernelSource & { readonly name: string };

/** Where a driver's pieces live, and the steps whose form depends on the target. */
export interface DriverBinding {
  /** Renders (with the env it gives) and declares a kernel of step `s`. */
  kernel(s: Step, render: (env: RenderEnv) => KernelSource): DeclaredKernel;
  /** Planned array `slot` (plan.slots). */
  slot(slot: number): string;
  /** A value made once and kept beside the driver (a view of a planned array); returns its name. */
  hoist(init: string): string;
  input(slot: number): string;
  variable(slot: number): string;
  constant(value: NDArray): string;
  /** Declarations of the learning-phase and epoch buffers named `name`. */
  phase(name: string): string[];
  epoch(name: string): string[];
  /** Results written into the caller's arrays (Scan bodies): target `k`'s array. */
  readonly out?: ((k: number) => string) | undefined;
  /**
   * A new result array (`ctor` a typed array's name) whose every element the steps store before
   * any is read (freshTarget): made without filling it with zeros, where the binding can.
   */
  readonly fresh?: ((ctor: string, size: number) => string) | undefined;
  /**
   * Borrowed results (K.function's `borrow`, Theano's `Out(borrow=True)`): the first `outputs`
   * targets may be arrays the driver keeps and writes again at its next call. `held` renders buffer
   * `id`'s kept array, filled with zeros at each call unless `fresh` (freshTarget: every element is
   * stored before any is read).
   */
  readonly borrow?:
    | {
        readonly outputs: number;
        readonly held: (id: number, ctor: string, size: number, fresh: boolean, dtype: DType) => string;
      }
    | undefined;
  /**
   * Opens a matmul's block: its packing buffers and tile sums, and where whole float32 products
   * stage their operands (a byte offset expression; the binding's that have one). `sources` gives,
   * for each packing buffer, the one buffer its operand reads (undefined: several, or none). A pack
   * the binding keeps between calls (or a Scan's steps) is made only under `when`, and `done` follows it.
   */
  matmul(
    s: MatmulKernel,
    strategy: MatmulStrategy,
    sources: ReadonlyMap<number, number | undefined>,
    name: BufferName,
  ): {
    readonly open: string;
    /** A kept pack: when it is made, what marks it made, and (the packing arena's) its pack's and source's names. */
    readonly kept: (
      id: number,
    ) => { readonly when: string; readonly done: string; readonly pack?: string; readonly source?: string } | undefined;
    readonly stage?: string;
  };
  /** The Scan's body (its `index`-th in this program) and how the loop calls it with these arguments. */
  scan(
    s: ScanStep,
    index: number,
    ins: readonly ScanArg[],
    outs: readonly ScanArg[],
  ): { readonly setup: string[]; readonly call: string[] };
  print(s: PrintStep, input: string): string;
  extern(s: ExternStep, inputs: readonly string[], name: BufferName): string;
  /** A step's lines as the driver runs them (provenance, timing). */
  step(s: Step, index: number, lines: string[]): string[];
}

export interface Driver {
  /** The buffers the steps name, bound. */
  readonly prologue: string[];
  readonly body: string[];
  /** With `out`: the copies of results that are not written in place. */
  readonly copies: string[];
  /** Without `out`: the result expressions, in target order. */
  readonly results: string[];
}

/** Renders the driver of a prepared program (its steps' strategies chosen, its buffers planned: ../pipeline.ts) through binding `b`. */
export function renderDriver({ program: p, plan, strategies }: Prepared, b: DriverBinding): Driver {
  // The buffers the steps name, as they are named: the ones the prologue binds (a Scan's step
  // buffers in planned arrays are hoisted views, named by their view).
  const named = new Set<number>();
  const name = (id: number): string => {
    named.add(id);
    return `b${id}`;
  };
  const out = b.out;
  // Exact-length arrays (extern arguments, a Scan's step views): views of planned arrays are made once, others inline.
  const view = (v: { buf: number; offset: number; shape: readonly number[] }): string => {
    const n = sizeOf(v.shape);
    const slot = plan.slotOf.get(v.buf);
    if (slot !== undefined) return b.hoist(`${b.slot(slot)}.subarray(${v.offset}, ${v.offset + n})`);
    return v.offset === 0 && n === p.buffers[v.buf]!.size
      ? name(v.buf)
      : `${name(v.buf)}.subarray(${v.offset}, ${v.offset + n})`;
  };
  const body: string[] = [];
  let scans = 0;
  p.steps.forEach((s, i) => {
    const lines: string[] = [];
    const call = (s: Step, render: (env: RenderEnv) => KernelSource, indent = '') =>
      lines.push(indent + kernelCall(b.kernel(s, render), name));
    const st = strategies[i]!;
    if (s.kind === 'loop') {
      if (st.kind !== 'loop') throw new Error(`internal: step ${i} is a loop, its strategy a ${st.kind}`);
      switch (st.tier) {
        case 'skip':
        case 'pair-first':
          return;
        case 'reduce-pair':
          call({ ...s, origin: [...(p.steps[i - 1]!.origin ?? []), ...(s.origin ?? [])] }, (env) =>
            renderReduce(st.plan, env.bufName),
          );
          break;
        case 'philox-next':
          break; // drawn inside the next step's kernel
        case 'pool':
          call(s, (env) => renderPool(st.plan, env.bufName));
          break;
        case 'philox-pair':
          call(s, (env) => renderPhiloxPair(st.draw, st.plan, env.bufName));
          break;
        case 'philox':
          call(s, (env) => renderPhilox(st.plan, env.bufName));
          break;
        case 'elementwise':
          call(s, (env) => renderElementwise(st.plan, env.bufName));
          break;
        case 'broadcast':
          call(s, (env) => renderBroadcast(st.plan, env.bufName));
          break;
        case 'reduce':
          call(s, (env) => renderReduce(st.plan, env.bufName));
          break;
        case 'js':
          call(s, (env) => renderLoopKernel(s, 'k', env, st.js));
          break;
      }
    } else if (s.kind === 'matmul') {
      if (st.kind !== 'matmul') throw new Error(`internal: step ${i} is a matmul, its strategy a ${st.kind}`);
      const { wasm, all, indirect } = st;
      const { open, kept, stage } = b.matmul(
        s,
        st,
        new Map([
          [s.packA, indirect ? undefined : operandSource(s.a)],
          [s.packB, operandSource(s.b)],
        ]),
        name,
      );
      lines.push(open);
      const pk = st.packing;
      // Whole float32 products with a binding that gives them a staging area: float32 operands are
      // copied there and packed by the thread pool (stagedPacks), the rest here.
      const staged = stage !== undefined ? st.staged.staged : new Map<number, { lo: number; hi: number; at: number }>();
      const after: string[] = [];
      // B of a few-row product read row-major (axpy32): always where it is not kept, else while rowsFirst says
      let axpy = '0';
      for (const dst of [s.packA, s.packB]) {
        const keep = kept(dst);
        const pl: string[] = [];
        for (const c of pk.calls) {
          if (c.dst !== dst) continue;
          const { base, sb, sr, st: t } = c.op;
          const sg = staged.get(c.dst);
          if (c.rowMajor === true) {
            const rows = `rt.rowsB(${name(c.dst)}, ${name(c.buf)}, ${base}, ${t}, ${s.k.size}, ${c.rows}, ${Math.ceil(c.rows / c.p) * c.p});`;
            if (keep?.pack === undefined || keep.source === undefined) {
              pl.push(rows);
              axpy = '1';
              continue;
            }
            axpy = 'axB';
            lines.push(
              '  let axB = 0;',
              `  if (${keep.when}) {`,
              `    if (rt.arena.rowsFirst(${keep.pack}, ${keep.source}, ${panelsAfter(s)})) { ${rows} axB = 1; }`,
            );
            lines.push(
              `    else { rt.packStrided(${name(c.dst)}, ${name(c.buf)}, ${base}, ${sb}, ${sr}, ${t}, ${s.batch.size}, ${c.rows}, ${s.k.size}, ${c.p}); ${keep.done} }`,
              '  }',
            );
            continue;
          }
          // contiguous along t in panels wider than 4: row by row (packRows), else step by step
          const call =
            st.small && c.dst === s.packA
              ? `rt.rowsA(${name(c.dst)}, ${name(c.buf)}, ${base}, ${sr}, `
              : sg !== undefined
                ? `rt.arena.stage(${name(c.buf)}, ${sg.lo}, ${sg.hi}, ${sg.at === 0 ? stage! : `${stage!} + ${4 * sg.at}`}, ${base}, ${sb}, ${sr}, ${t}, ${name(c.dst)}.byteOffset, `
                : t === 1 && c.p !== 4
                  ? `rt.packRows(${name(c.dst)}, ${name(c.buf)}, ${base}, ${sb}, ${sr}, `
                  : `rt.packStrided(${name(c.dst)}, ${name(c.buf)}, ${base}, ${sb}, ${sr}, ${t}, `;
          pl.push(
            st.small && c.dst === s.packA
              ? `${call}${c.rows}, ${s.k.size});`
              : `${call}${s.batch.size}, ${c.rows}, ${s.k.size}, ${c.p});`,
          );
        }
        for (const { kernel: kern, js, tier } of pk.kernels) {
          if (kern.stores[0]!.buf !== dst) continue;
          pl.push(
            kernelCall(
              b.kernel(s, (env) =>
                tier !== undefined ? renderElementwise(tier, env.bufName) : renderLoopKernel(kern, 'k', env, js),
              ),
              name,
            ),
          );
        }
        if (keep === undefined || pl.length === 0) lines.push(...pl.map((l) => `  ${l}`));
        else if (!staged.has(dst))
          lines.push(`  if (${keep.when}) {`, ...pl.map((l) => `    ${l}`), `    ${keep.done}`, '  }');
        else {
          // a staged operand is packed by the tile sums' call: the pack is current once that returns
          lines.push(`  if (${keep.when}) ${pl.join(' ')}`);
          after.push(`  if (${keep.when}) ${keep.done}`);
        }
      }
      if (indirect)
        lines.push(...renderIndirectTiles(s, name(s.packA), name(s.packB), name, st.schedule).map((l) => `  ${l}`));
      else if (st.small) lines.push(`  ${renderSmallSums(s, name(s.packA), name(s.packB), axpy)}`);
      else if (all) lines.push(`  ${renderAllTiles(s, name(s.packA), name(s.packB), st.schedule)}`);
      lines.push(...after);
      // A whole float32 product's epilogue runs in the SIMD tier where the tier can render it.
      const epilogue = st.epilogue;
      call(
        s,
        (env) =>
          epilogue !== undefined ? renderTierEpilogue(epilogue, env) : renderMatmulCompute(s, 'k', env, wasm, all),
        '  ',
      );
      lines.push('}');
    } else if (s.kind === 'scan') {
      const k = scans++;
      lines.push(...renderScanLoop(s, k, view, name, (ins, outs) => b.scan(s, k, ins, outs)));
    } else if (s.kind === 'print') lines.push(b.print(s, view(s.input)));
    else lines.push(b.extern(s, s.inputs.map(view), name));
    body.push(...b.step(s, i, lines));
  });

  const results =
    out !== undefined
      ? []
      : p.targets.map((t) =>
          t.copy ? `${name(t.buf)}.slice(${t.offset}, ${t.offset + sizeOf(t.shape)})` : name(t.buf),
        );
  const copies =
    out === undefined
      ? []
      : p.targets.flatMap((t, k) =>
          !t.copy && p.buffers[t.buf]!.role === 'target'
            ? []
            : [`rt.copy(${out(k)}, 0, ${name(t.buf)}, ${t.offset}, ${sizeOf(t.shape)});`],
        );
  // Only buffers the steps named are bound.
  const prologue = p.buffers.filter((d) => named.has(d.id)).flatMap((d) => bind(d, p, plan, b));
  return { prologue, body, copies, results };
}

/** The one buffer a product operand reads (undefined: several, or none). */
function operandSource(e: Expr): number | undefined {
  const bufs = new Set<number>();
  for (const x of exprOrder([e])) if (x.t === 'load') bufs.add(x.buf);
  return bufs.size === 1 ? [...bufs][0] : undefined;
}

/** A kernel call; one with row bounds runs row 0 first, so V8 sees every path of the loop before optimizing it. */
function kernelCall(k: DeclaredKernel, name: (id: number) => string): string {
  const args = [...(k.needsAcc === true ? ['acc'] : []), ...k.buffers.map(name)].join(', ');
  if (k.rows === undefined) return `${k.name}(${args});`;
  if (k.rows <= 1) return `${k.name}(${args}, 0, ${k.rows});`;
  return `${k.name}(${args}, 0, 1); ${k.name}(${args}, 1, ${k.rows});`;
}

/** Result arrays at least this long are made without zeros where freshTarget allows (shorter ones cost little to fill). */
const FRESH_MIN = 1 << 16;

/**
 * Whether result buffer `d` is long and the first step using it is a loop kernel that stores every
 * one of its elements, unconditionally and once (its index a row-major walk of the loops: each
 * loop's coefficient the product of the sizes of those inside it, offset 0), and reads none
 * (TensorFlow's and PyTorch's outputs are allocated uninitialised the same way: torch.empty).
 */
function freshTarget(p: Program, d: BufferDecl): boolean {
  if (d.size < FRESH_MIN) return false;
  const s = p.steps.find((t) => {
    const u = stepBuffers(t);
    return u.reads.includes(d.id) || u.writes.includes(d.id) || u.scratch.includes(d.id);
  });
  if (s === undefined || s.kind !== 'loop' || s.poolAux === true || stepBuffers(s).reads.includes(d.id)) return false;
  return s.stores.some((st) => {
    if (st.buf !== d.id || st.accumulate === true || st.dyn !== undefined || st.index.c !== 0) return false;
    if (st.index.terms.length !== s.vars.length || st.index.terms.some(([a]) => a.kind !== 'var')) return false;
    const walk = s.vars.map((v) => [st.index.coef(v), v.size] as const).sort((a, b) => a[0] - b[0]);
    let stride = 1;
    for (const [k, n] of walk) {
      if (k !== stride) return false;
      stride *= n;
    }
    return stride === d.size;
  });
}

/**
 * Whether result buffer `d` may be kept between calls: it is returned as is (not a copy) by one of
 * the first `outputs` targets, and by no later one (an update value becomes a variable's storage).
 */
function borrowable(p: Program, d: BufferDecl, outputs: number): boolean {
  return (
    p.targets.some((t, k) => t.buf === d.id && !t.copy && k < outputs) &&
    p.targets.every((t, k) => t.buf !== d.id || k < outputs)
  );
}

/** The declaration of buffer `d` in the driver. */
function bind(d: BufferDecl, p: Program, plan: Plan, b: DriverBinding): string[] {
  const name = `b${d.id}`;
  const decl = (init: string) => [`const ${name} = ${init};`];
  switch (d.role) {
    case 'input':
      return decl(b.input(d.slot!));
    case 'variable':
      return decl(b.variable(d.slot!));
    case 'phase':
      return b.phase(name);
    case 'epoch':
      return b.epoch(name);
    case 'constant':
      return decl(b.constant(d.value!));
    case 'temp':
    case 'scratch': {
      const sl = plan.slotOf.get(d.id);
      return sl === undefined ? [] : decl(b.slot(sl));
    }
    case 'target': {
      const k = b.out === undefined ? -1 : p.targets.findIndex((t) => t.buf === d.id && !t.copy);
      if (k >= 0) return decl(b.out!(k));
      if (b.borrow !== undefined && borrowable(p, d, b.borrow.outputs))
        return decl(b.borrow.held(d.id, arrayType(d.dtype), d.size, freshTarget(p, d), d.dtype));
      return decl(
        b.fresh !== undefined && freshTarget(p, d)
          ? b.fresh(arrayType(d.dtype), d.size)
          : `new ${arrayType(d.dtype)}(${d.size})`,
      );
    }
    case 'extern':
    case 'arena':
      return [];
  }
}
