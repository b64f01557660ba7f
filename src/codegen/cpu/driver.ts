// The driver of a lowered Program: the JavaScript that binds its buffers and runs its steps in
// order (kernel calls, a matmul's packing, a Scan's loop, print callbacks, extern steps). One
// walk over the steps, two bindings of where things live: the cpu module (cpu/module.ts) keeps
// planned arrays, constants, kernels and Scan bodies in the slots of a closure made at run
// time; an exported module (src/runtime/export/render.ts) declares them as module statics and
// typed functions. The same shape as tinygrad's one renderer with per-target overrides, or
// PyTensor's linkers over one graph walk: what a step does is written here once, where its
// pieces are kept is the binding's.
import type { NDArray } from '../../ir/ndarray.js';
import { sizeOf } from '../../ir/ndarray.js';
import { ExprBuilder, exprOrder, type Expr } from '../expr.js';
import { collapseLoopKernel } from '../collapse.js';
import { stepBuffers, type BufferDecl, type ExternStep, type MatmulKernel, type PrintStep, type Program, type ScanStep, type Step } from '../kernel.js';
import type { Plan } from '../plan.js';
import { planElementwise, renderElementwise } from '../wasm/elementwise.js';
import { planPool, renderPool } from '../wasm/pool.js';
import { planReduce, renderReduce, type RedPlan } from '../wasm/reduce.js';
import { planRowPair } from '../wasm/reduce-pair.js';
import { fusablePair, planPhilox, renderPhilox, renderPhiloxPair, type PhiloxPlan } from '../wasm/philox.js';
import { arrayType } from './js.js';
import { renderLoopKernel, type KernelSource, type RenderEnv } from './loop.js';
import { indirectSums, packing, renderAllTiles, renderIndirectTiles, renderMatmulCompute, renderTierEpilogue, stagedPacks, sumsWhole, tierEpilogue } from './matmul.js';
import { renderScanLoop, type ScanArg } from './scan.js';
import { wasmTileModule } from './wasm-kernel.js';

/** A kernel the binding declared: its rendered form, and the name the driver calls it by. */
export type DeclaredKernel = KernelSource & { readonly name: string };

/** Where a driver's pieces live, and the steps whose form depends on the target. */
export interface DriverBinding {
  /** WebAssembly tiers (SIMD elementwise loops, the WebAssembly matmul micro-kernel) where they apply. */
  readonly wasm: boolean;
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
   * Opens a matmul's block: its packing buffers and tile sums, and where whole float32 products
   * stage their operands (a byte offset expression; the binding's that have one). `sources` gives,
   * for each packing buffer, the one buffer its operand reads (undefined: several, or none). A pack
   * the binding keeps between calls (or a Scan's steps) is made only under `when`, and `done` follows it.
   */
  matmul(s: MatmulKernel, all: boolean, sources: ReadonlyMap<number, number | undefined>): {
    readonly open: string;
    readonly kept: (id: number) => { readonly when: string; readonly done: string } | undefined;
    readonly stage?: string;
  };
  /** The Scan's body (its `index`-th in this program) and how the loop calls it with these arguments. */
  scan(s: ScanStep, index: number, ins: readonly ScanArg[], outs: readonly ScanArg[]): { readonly setup: string[]; readonly call: string[] };
  print(s: PrintStep, input: string): string;
  extern(s: ExternStep, inputs: readonly string[]): string;
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

/** Renders the driver of `p` (buffers planned by `plan`) through binding `b`. */
export function renderDriver(p: Program, plan: Plan, b: DriverBinding): Driver {
  // Exact-length arrays (extern arguments, a Scan's step views): views of planned arrays are made once, others inline.
  const view = (v: { buf: number; offset: number; shape: readonly number[] }): string => {
    const n = sizeOf(v.shape);
    const slot = plan.slotOf.get(v.buf);
    if (slot !== undefined) return b.hoist(`${b.slot(slot)}.subarray(${v.offset}, ${v.offset + n})`);
    return v.offset === 0 && n === p.buffers[v.buf]!.size ? `b${v.buf}` : `b${v.buf}.subarray(${v.offset}, ${v.offset + n})`;
  };
  const body: string[] = [];
  let scans = 0;
  const dtype = (id: number) => p.buffers[id]!.dtype;
  // A draw into a temporary that only the next step, an elementwise loop, reads: drawn inside that loop's kernel.
  let pending: PhiloxPlan | undefined;
  // Two row kernels whose intermediate only the second reads: one kernel at the second (../wasm/reduce-pair.ts).
  let rowPair: RedPlan | undefined;
  p.steps.forEach((s, i) => {
    const lines: string[] = [];
    const call = (s: Step, render: (env: RenderEnv) => KernelSource, indent = '') => lines.push(indent + kernelCall(b.kernel(s, render)));
    if (s.kind === 'loop') {
      // The WebAssembly SIMD tier where it applies (pooling and its adjoint: ../wasm/pool.ts;
      // random draws: ../wasm/philox.ts; fused elementwise loops: ../wasm/elementwise.ts), else JavaScript.
      const drawn = pending;
      pending = undefined;
      if (rowPair !== undefined) {
        const rp = rowPair;
        rowPair = undefined;
        call({ ...s, origin: [...(p.steps[i - 1]!.origin ?? []), ...(s.origin ?? [])] }, (env) => renderReduce(rp, env.bufName));
        body.push(...b.step(s, i, lines));
        return;
      }
      rowPair = b.wasm && drawn === undefined ? planRowPair(p, i, dtype) : undefined;
      if (rowPair !== undefined) return;
      // a pool_grad's first kernel, which only the next reads: not run where the next runs in the pool tier
      const nextPool = p.steps[i + 1];
      if (s.poolAux === true && b.wasm && nextPool?.kind === 'loop' && planPool(nextPool, dtype) !== undefined) return;
      const pool = b.wasm ? planPool(s, dtype) : undefined;
      if (pool !== undefined) {
        call(s, (env) => renderPool(pool, env.bufName));
        body.push(...b.step(s, i, lines));
        return;
      }
      const pair = drawn !== undefined ? fusablePair(drawn, planElementwise(s, dtype, true)) : undefined;
      const draw = b.wasm && drawn === undefined ? planPhilox(s, dtype) : undefined;
      const next = p.steps[i + 1];
      if (draw !== undefined && next?.kind === 'loop' && p.buffers[draw.out]!.role === 'temp' && !p.targets.some((t) => t.buf === draw.out)
        && p.steps.every((t, j) => j === i || (j === i + 1 ? !stepBuffers(t).writes.includes(draw.out) : !stepBuffers(t).reads.includes(draw.out) && !stepBuffers(t).writes.includes(draw.out)))
        && fusablePair(draw, planElementwise(next, dtype, true)) !== undefined) {
        pending = draw; // rendered with the next step
      } else {
        const simd = b.wasm && draw === undefined && pair === undefined ? planElementwise(s, dtype) : undefined;
        // reductions (../wasm/reduce.ts)
        const red = b.wasm && draw === undefined && pair === undefined && simd === undefined ? planReduce(s, dtype) : undefined;
        call(s, (env) => (pair !== undefined ? renderPhiloxPair(drawn!, pair, env.bufName) : draw !== undefined ? renderPhilox(draw, env.bufName)
          : simd !== undefined ? renderElementwise(simd, env.bufName) : red !== undefined ? renderReduce(red, env.bufName) : renderLoopKernel(s, 'k', env)));
      }
    } else if (s.kind === 'matmul') {
      // Large products: every tile sum first (cache blocks, split over the worker threads), then the epilogue.
      const wasm = b.wasm && wasmTileModule() !== null;
      const all = wasm && sumsWhole(s);
      // A float32 convolution: summed through an indirection buffer into its input's cells (A never packed, so never kept).
      const indirect = all && indirectSums(s, wasm);
      const { open, kept, stage } = b.matmul(s, all, new Map([[s.packA, indirect ? undefined : operandSource(s.a)], [s.packB, operandSource(s.b)]]));
      lines.push(open);
      const pk = packing(s, indirect);
      // Whole float32 products with a binding that gives them a staging area: float32 operands are
      // copied there and packed by the thread pool (stagedPacks), the rest here.
      const { staged } = stage !== undefined ? stagedPacks(s, dtype) : { staged: new Map<number, { lo: number; hi: number; at: number }>() };
      const after: string[] = [];
      for (const dst of [s.packA, s.packB]) {
        const keep = kept(dst);
        const pl: string[] = [];
        for (const c of pk.calls) {
          if (c.dst !== dst) continue;
          const { base, sb, sr, st } = c.op;
          const sg = staged.get(c.dst);
          // contiguous along t in panels wider than 4: row by row (packRows), else step by step
          const call = sg !== undefined ? `rt.arena.stage(b${c.buf}, ${sg.lo}, ${sg.hi}, ${sg.at === 0 ? stage! : `${stage!} + ${4 * sg.at}`}, ${base}, ${sb}, ${sr}, ${st}, b${c.dst}.byteOffset, `
            : st === 1 && c.p !== 4 ? `rt.packRows(b${c.dst}, b${c.buf}, ${base}, ${sb}, ${sr}, ` : `rt.packStrided(b${c.dst}, b${c.buf}, ${base}, ${sb}, ${sr}, ${st}, `;
          pl.push(`${call}${s.batch.size}, ${c.rows}, ${s.k.size}, ${c.p});`);
        }
        for (const kern of pk.kernels) {
          if (kern.stores[0]!.buf === dst) pl.push(kernelCall(b.kernel(s, (env) => renderLoopKernel(collapseLoopKernel(kern, new ExprBuilder(() => 'float64')), 'k', env))));
        }
        if (keep === undefined) lines.push(...pl.map((l) => `  ${l}`));
        else if (!staged.has(dst)) lines.push(`  if (${keep.when}) {`, ...pl.map((l) => `    ${l}`), `    ${keep.done}`, '  }');
        else {
          // a staged operand is packed by the tile sums' call: the pack is current once that returns
          lines.push(`  if (${keep.when}) ${pl.join(' ')}`);
          after.push(`  if (${keep.when}) ${keep.done}`);
        }
      }
      if (indirect) lines.push(...renderIndirectTiles(s, `b${s.packA}`, `b${s.packB}`).map((l) => `  ${l}`));
      else if (all) lines.push(`  ${renderAllTiles(s, `b${s.packA}`, `b${s.packB}`)}`);
      lines.push(...after);
      // A whole float32 product's epilogue runs in the SIMD tier where the tier can render it.
      const epilogue = all ? tierEpilogue(s, dtype) : undefined;
      call(s, (env) => (epilogue !== undefined ? renderTierEpilogue(epilogue, env) : renderMatmulCompute(s, 'k', env, wasm, all)), '  ');
      lines.push('}');
    } else if (s.kind === 'scan') {
      const k = scans++;
      lines.push(...renderScanLoop(s, k, view, (ins, outs) => b.scan(s, k, ins, outs)));
    } else if (s.kind === 'print') lines.push(b.print(s, view(s.input)));
    else lines.push(b.extern(s, s.inputs.map(view)));
    body.push(...b.step(s, i, lines));
  });

  const out = b.out;
  const results = p.targets.map((t) => (t.copy ? `b${t.buf}.slice(${t.offset}, ${t.offset + sizeOf(t.shape)})` : `b${t.buf}`));
  const copies = out === undefined ? [] : p.targets.flatMap((t, k) => (
    !t.copy && p.buffers[t.buf]!.role === 'target' ? [] : [`rt.copy(${out(k)}, 0, b${t.buf}, ${t.offset}, ${sizeOf(t.shape)});`]
  ));
  // Only buffers the driver names are bound (a Scan's step buffers are hoisted views).
  const named = new Set([...[...body, ...copies, ...(out === undefined ? results : [])].join('\n').matchAll(/\bb(\d+)\b/g)].map((x) => Number(x[1])));
  const prologue = p.buffers.filter((d) => named.has(d.id)).flatMap((d) => bind(d, p, plan, b));
  return { prologue, body, copies, results: out === undefined ? results : [] };
}

/** The one buffer a product operand reads (undefined: several, or none). */
function operandSource(e: Expr): number | undefined {
  const bufs = new Set<number>();
  for (const x of exprOrder([e])) if (x.t === 'load') bufs.add(x.buf);
  return bufs.size === 1 ? [...bufs][0] : undefined;
}

/** A kernel call; one with row bounds runs row 0 first, so V8 sees every path of the loop before optimizing it. */
function kernelCall(k: DeclaredKernel): string {
  const args = [...(k.needsAcc === true ? ['acc'] : []), ...k.buffers.map((id) => `b${id}`)].join(', ');
  if (k.rows === undefined) return `${k.name}(${args});`;
  if (k.rows <= 1) return `${k.name}(${args}, 0, ${k.rows});`;
  return `${k.name}(${args}, 0, 1); ${k.name}(${args}, 1, ${k.rows});`;
}

/** The declaration of buffer `d` in the driver. */
function bind(d: BufferDecl, p: Program, plan: Plan, b: DriverBinding): string[] {
  const name = `b${d.id}`;
  const decl = (init: string) => [`const ${name} = ${init};`];
  switch (d.role) {
    case 'input': return decl(b.input(d.slot!));
    case 'variable': return decl(b.variable(d.slot!));
    case 'phase': return b.phase(name);
    case 'epoch': return b.epoch(name);
    case 'constant': return decl(b.constant(d.value!));
    case 'temp': case 'scratch': {
      const sl = plan.slotOf.get(d.id);
      return sl === undefined ? [] : decl(b.slot(sl));
    }
    case 'target': {
      const k = b.out === undefined ? -1 : p.targets.findIndex((t) => t.buf === d.id && !t.copy);
      return decl(k >= 0 ? b.out!(k) : `new ${arrayType(d.dtype)}(${d.size})`);
    }
    case 'extern': case 'arena': return [];
  }
}
