// The matmul template: out[b, i, j] = epilogue(sum_t A[b, i, t] * B[b, t, j]).
// Both operands are packed first into panels of the kernel's `sum` dtype (A in panels of mr
// rows, B in panels of nr columns, each laid out along t), by loop kernels that evaluate the
// operand expressions, so transposed or strided operands (and any elementwise prologue) cost one
// pass. The shared micro-kernel (microkernel.ts, ../wasm/matmul.ts) sums an mr x nr tile over t
// once in the reference's order (s += a*b for t = 0..K-1): in float64 (4 x 4 tiles, f64x2),
// results match the reference exactly; in float32 (matmul precision "float32": 8 x 4
// tiles, f32x4, as XNNPACK and BLAS sum float32 products) they are within the bound stated in
// docs/architecture.md. The generated part applies the epilogue (bias, activation...) to each
// sum as it is stored.
import { ExprBuilder, exprOrder, type Expr } from '../kernel/expr.js';
import { iadd, iconst, iscale, ivar, newVar, substitute, type IExpr, type Var } from '../kernel/index-expr.js';
import { indirectGeometry, windowRows, type LoopKernel, type MatmulKernel, type Program } from '../kernel/ir.js';
import { mapIndices } from '../transform/collapse.js';
import { ExprWriter, type KernelSource, type RenderEnv } from './loop.js';
import { commentText, storeRounds } from './js.js';
import { IGEMM_VARIANT, PARALLEL_MIN_MACS, ROWVEC_EXPORT, WINDOW_GRAD_VARIANT } from './threads.js';
import { blockVariant } from './wasm-kernel.js';
import type { DType } from '../../ir/dtype.js';
import { DEFAULT_MATMUL_SCHEDULE, isDefaultSchedule, type MatmulSchedule, type TilesCall } from './matmul-schedule.js';
import { planElementwise, renderElementwise, type EwPlan } from './wasm/elementwise.js';
import { ROWVEC_MAX_ROWS } from './wasm/matmul.js';

/** Bytes of one packed element or sum. */
export const sumBytes = (k: MatmulKernel): number => (k.sum === 'float32' ? 4 : 8);

/** An operand that is a plain strided view of one buffer: (b, row, t) -> base + b*sb + row*sr + t*st. */
export interface StridedOperand {
  readonly buf: number;
  readonly base: number;
  readonly sb: number;
  readonly sr: number;
  readonly st: number;
}

export function stridedOperand(e: Expr, bv: Var, row: Var, t: Var): StridedOperand | undefined {
  if (e.t !== 'load') return undefined;
  const x = e.index;
  const allowed = new Set([bv.id, row.id, t.id]);
  if (!x.terms.every(([a]) => a.kind === 'var' && allowed.has(a.v.id))) return undefined;
  return { buf: e.buf, base: x.c, sb: x.coef(bv), sr: x.coef(row), st: x.coef(t) };
}

/** Packing of the operands: a call of the shared packer for strided views, generated loop kernels otherwise. */
export function packing(
  k: MatmulKernel,
  indirect = false,
): {
  kernels: LoopKernel[];
  calls: { buf: number; dst: number; op: StridedOperand; rows: number; p: number; rowMajor?: true }[];
} {
  if (indirect) {
    // A is read through its indirection buffer (igemmA): only B is packed.
    const sb = stridedOperand(k.b, k.batch, k.n, k.k);
    return {
      kernels: packKernels(k, false, sb === undefined),
      calls: sb !== undefined ? [{ buf: sb.buf, dst: k.packB, op: sb, rows: k.n.size, p: k.nr }] : [],
    };
  }
  const sa = stridedOperand(k.a, k.batch, k.m, k.k);
  const sb = stridedOperand(k.b, k.batch, k.n, k.k);
  const calls = [
    ...(sa !== undefined ? [{ buf: sa.buf, dst: k.packA, op: sa, rows: k.m.size, p: k.mr }] : []),
    ...(sb !== undefined ? [{ buf: sb.buf, dst: k.packB, op: sb, rows: k.n.size, p: k.nr }] : []),
  ];
  return { kernels: packKernels(k, sa === undefined, sb === undefined), calls };
}

/**
 * The strided operands of a whole float32 product (renderAllTiles) packed on the worker threads
 * instead of by the calling thread: each float32 source's elements the operand reads, src[lo, hi),
 * are copied into the arena's staging area at element `at` (the area holds `size` elements), and
 * the pool packs them there (PackArena.stage, pack32 of ../wasm/matmul.ts) before the sums. Only
 * for sources whose read range is at most twice the operand (a slice of a large buffer packs
 * where it is, on the calling thread).
 */
export function stagedPacks(
  k: MatmulKernel,
  dtypeOf: (buf: number) => string,
): { staged: Map<number, { lo: number; hi: number; at: number }>; size: number } {
  const staged = new Map<number, { lo: number; hi: number; at: number }>();
  let size = 0;
  if (k.sum !== 'float32') return { staged, size };
  for (const c of packing(k).calls) {
    if (dtypeOf(c.buf) !== 'float32') continue;
    const B = k.batch.size,
      K = k.k.size;
    const ext = (stride: number, n: number) => stride * (n - 1);
    const spans = [ext(c.op.sb, B), ext(c.op.sr, c.rows), ext(c.op.st, K)];
    const lo = c.op.base + spans.reduce((p, x) => p + Math.min(0, x), 0);
    const hi = c.op.base + spans.reduce((p, x) => p + Math.max(0, x), 0) + 1;
    if (hi - lo > 2 * B * c.rows * K) continue;
    staged.set(c.dst, { lo, hi, at: size });
    size += (hi - lo + 3) & ~3; // each staged operand 16-byte aligned
  }
  return { staged, size };
}

/** The loop kernels that fill the packing buffers (each runs for every batch index). */
export function packKernels(k: MatmulKernel, packA = true, packB = true): LoopKernel[] {
  const b = new ExprBuilder(() => 'float64');
  const out: LoopKernel[] = [];
  const { mr, nr } = k;
  const B = k.batch.size;
  const pack = (expr: Expr, rowVar: Var, p: number, buf: number, label: string) => {
    // Panels of p rows of `rowVar` (m for A, n for B), each K long: buf[((bb*P + panel)*K + t)*p + r].
    const panels = Math.ceil(rowVar.size / p);
    const full = Math.floor(rowVar.size / p);
    const tail = rowVar.size - full * p;
    const bb = newVar(B);
    const r = newVar(p);
    const panelBase = (panel: IExpr) => iscale(iadd(iscale(ivar(bb), panels), panel), k.k.size * p);
    // The t loop is split at the divisors the operand's index divides it by (a convolution's
    // (tap, channel) or (batch, cell) coordinates), so its inner loops see affine indices; each
    // row's own part of the index is computed once per row, outside them.
    const tv = tLoops(expr, k.k);
    const tIdx = iadd(...tv.map(([v, st]) => iscale(ivar(v), st)));
    const emit = (panelE: IExpr, rows: Var, rowOffset: IExpr) => {
      const sub = (x: IExpr) =>
        substitute(x, (u) =>
          u.id === rowVar.id
            ? iadd(rowOffset, ivar(rows))
            : u.id === k.k.id
              ? tIdx
              : u.id === k.batch.id
                ? ivar(bb)
                : undefined,
        );
      const [value] = mapIndices(b, [expr], sub, (vs) => vs);
      return {
        buf,
        index: iadd(panelBase(panelE), iscale(tIdx, p), ivar(rows)),
        value: value!,
        dtype: 'float64' as const,
      };
    };
    const ts = tv.map(([v]) => v);
    if (full > 0) {
      const panel = newVar(full);
      out.push({
        kind: 'loop',
        label: `pack ${label}`,
        vars: [bb, panel, r, ...ts],
        stores: [emit(ivar(panel), r, iscale(ivar(panel), p))],
      });
    }
    if (tail > 0) {
      const rt = newVar(tail);
      out.push({
        kind: 'loop',
        label: `pack ${label} tail`,
        vars: [bb, rt, ...ts],
        stores: [emit(iconst(full), rt, iconst(full * p))],
      });
      const rz = newVar(p - tail);
      const t = newVar(k.k.size);
      out.push({
        kind: 'loop',
        label: `pack ${label} padding`,
        vars: [bb, t, rz],
        stores: [
          {
            buf,
            index: iadd(panelBase(iconst(full)), iscale(ivar(t), p), ivar(rz), iconst(tail)),
            value: b.const(0),
            dtype: 'float64',
          },
        ],
      });
    }
  };
  if (packA) pack(k.a, k.m, mr, k.packA, 'A');
  if (packB) pack(k.b, k.n, nr, k.packB, 'B');
  return out;
}

/**
 * The loops that stand for t (size K) in a packing kernel, outermost first, with their strides:
 * t is split at every divisor d of K that the operand divides an index mentioning t by (floor
 * division or modulo), when those divisors divide one another, so that the simplifier turns
 * unravelled coordinates (floor(t/24) mod 24 ...) back into loop variables.
 */
export function tLoops(e: Expr, t: Var): [Var, number][] {
  const ds = new Set<number>();
  const visit = (x: IExpr): void => {
    for (const [a] of x.terms) {
      if (a.kind === 'var') continue;
      if ((a.kind === 'div' || a.kind === 'mod') && a.x.mentions(t) && a.d < t.size && t.size % a.d === 0) ds.add(a.d);
      visit(a.x);
    }
  };
  for (const x of exprOrder([e])) {
    if (x.t === 'load') visit(x.index);
    else if (x.t === 'index') visit(x.i);
  }
  const chain: number[] = [];
  for (const d of [...ds].sort((p, q) => p - q))
    if (chain.length === 0 || d % chain[chain.length - 1]! === 0) chain.push(d);
  const bounds = [t.size, ...chain.reverse(), 1];
  return bounds.slice(1).map((st, i) => [newVar(bounds[i]! / st), st]);
}

/**
 * Elements (of the `sum` dtype) of the tile sums: of one A panel against every B panel, or with `all` of the whole
 * product (every A panel of every batch: the form whose sums threads.ts computes at once).
 */
export function accSize(k: MatmulKernel, all = false): number {
  return k.mr * k.nr * Math.ceil(k.n.size / k.nr) * (all ? k.batch.size * Math.ceil(k.m.size / k.mr) : 1);
}

/**
 * Whether a product is computed whole (every tile sum first, by cache blocks of A panels split
 * over the worker threads, then the epilogue) rather than one row of tiles at a time: products
 * with more than one A panel and at least PARALLEL_MIN_MACS multiply-adds, or float32 ones whose
 * operands and result hold at least SMALL_WHOLE_ELEMENTS elements together, summed on the calling
 * thread (sumsAlone): their operands are then packed in WebAssembly SIMD and their epilogue runs
 * in one pass over row-major sums, in the SIMD tier where it can (an MLP's products with its 10
 * classes, 128x256x10, 128x10x256, 256x128x10: 0.42 -> 0.17 ms together, one thread).
 */
export function sumsWhole(k: MatmulKernel): boolean {
  if (k.indirect !== undefined) return true; // the igemm kernel stores every sum of the product
  if (k.batch.size * Math.ceil(k.m.size / k.mr) <= 1) return false;
  if (!sumsAlone(k)) return true;
  const [M, N, K] = [k.m.size, k.n.size, k.k.size];
  return k.sum === 'float32' && k.batch.size * (M * N + M * K + K * N) >= SMALL_WHOLE_ELEMENTS;
}

/** Elements of a float32 product's operands and result from which it is computed whole on one thread (sumsWhole). */
export const SMALL_WHOLE_ELEMENTS = 8192;

/** Whether a product's sums stay on the calling thread: fewer than PARALLEL_MIN_MACS multiply-adds (waking the workers would cost more). */
export function sumsAlone(k: MatmulKernel): boolean {
  return k.indirect === undefined && k.batch.size * k.m.size * k.n.size * k.k.size < PARALLEL_MIN_MACS;
}

/** Whether a program (its Scan bodies' included) has a product whose sums the worker threads share (not sumsAlone). */
export function splitsProducts(p: Program): boolean {
  return p.steps.some((s) => (s.kind === 'matmul' && !sumsAlone(s)) || (s.kind === 'scan' && splitsProducts(s.body)));
}

/** Whether a product is summed by the igemm kernel (../wasm/igemm.ts) through an indirection buffer: a float32 convolution under the WebAssembly kernel. */
export function indirectSums(k: MatmulKernel, wasm: boolean): boolean {
  return wasm && k.indirect !== undefined && k.sum === 'float32';
}

/**
 * The runtime calls of an indirect product: its input's cells and pointers into the arena at A's
 * packing buffer (igemmA), then every tile sum by the igemm kernel (split over the worker threads).
 */
export function renderIndirectTiles(
  k: MatmulKernel,
  pa: string,
  pb: string,
  name: (id: number) => string,
  schedule: MatmulSchedule = DEFAULT_MATMUL_SCHEDULE,
): string[] {
  const a = k.indirect!;
  const { mr, nr } = k;
  const MP = Math.ceil(k.m.size / mr),
    NP = Math.ceil(k.n.size / nr),
    K = k.k.size;
  const taps = a.window.reduce((p, v) => p * v, 1);
  const geom = indirectGeometry(a);
  if (a.over === 'terms' || windowRows(a)) {
    return [
      `const ind = rt.${a.over === 'terms' ? 'windowGradA' : 'windowA'}(${pa}, ${name(a.buf)}, ${a.offset}, [${geom.join(', ')}], ${mr});`,
      `rt.arena.tiles(ind, ${(mr + 1) * 4}, ${pb}.byteOffset, ${NP * K * nr * 4}, ${MP}, ${K}, acc.byteOffset, ${NP}, 1, ${mr * nr * 4}, ${WINDOW_GRAD_VARIANT}${scheduleArgs(schedule, true)});`,
    ];
  }
  return [
    `const ind = rt.igemmA(${pa}, ${name(a.buf)}, ${a.offset}, [${geom.join(', ')}], ${mr});`,
    `rt.arena.tiles(ind, ${taps * mr * 4}, ${pb}.byteOffset, ${NP * K * nr * 4}, ${MP}, ${K}, acc.byteOffset, ${NP}, 1, ${mr * nr * 4}, ${IGEMM_VARIANT}${scheduleArgs(schedule, true)});`,
  ];
}

/**
 * The runtime call that computes every tile sum of the product (rt.arena.tiles, split over the
 * worker threads), before the compute function applies the epilogue (renderMatmulCompute's `all`).
 */
export function renderAllTiles(
  k: MatmulKernel,
  pa: string,
  pb: string,
  schedule: MatmulSchedule = DEFAULT_MATMUL_SCHEDULE,
): string {
  const c = tilesCall(k, false);
  const tail = isDefaultSchedule(schedule) ? (c.par ? '' : ', false') : scheduleArgs(schedule, c.par);
  return `rt.arena.tiles(${pa}.byteOffset, ${c.strideA}, ${pb}.byteOffset, ${c.strideB}, ${c.MP}, ${c.K}, acc.byteOffset, ${c.NP}, ${c.B}, ${c.T}, ${c.variant}${tail});`;
}

/** PackArena.tiles' arguments after `variant` for a tuned schedule (none for the default, so that untuned code is unchanged). */
function scheduleArgs(s: MatmulSchedule, par: boolean): string {
  return isDefaultSchedule(s) ? '' : `, ${par && s.split}, ${s.blockBytes}, ${s.maxPanels}, ${s.perThread}`;
}

/** The cost-deciding arguments of a whole product's tile sums (renderAllTiles, renderIndirectTiles): what a tuned schedule is keyed by. */
export function tilesCall(k: MatmulKernel, indirect: boolean): TilesCall {
  const { mr, nr } = k;
  const MP = Math.ceil(k.m.size / mr),
    NP = Math.ceil(k.n.size / nr),
    K = k.k.size;
  const e = indirect ? 4 : sumBytes(k);
  const a = k.indirect;
  const windows = a !== undefined && (a.over === 'terms' || windowRows(a));
  const strideA =
    indirect && a !== undefined ? (windows ? (mr + 1) * 4 : a.window.reduce((p, v) => p * v, 1) * mr * 4) : K * mr * e;
  const variant = !indirect
    ? blockVariant(mr, k.sum === 'float32', true)
    : windows
      ? WINDOW_GRAD_VARIANT
      : IGEMM_VARIANT;
  return {
    B: indirect ? 1 : k.batch.size,
    MP,
    NP,
    K,
    T: mr * nr * e,
    strideA,
    strideB: NP * K * nr * e,
    variant,
    par: indirect || !sumsAlone(k),
    indirect,
  };
}

/** JavaScript for an index expression whose variables are spelled by `name`. */
function indexCode(x: IExpr, name: (v: Var) => string): string {
  const parts: string[] = [];
  for (const [a, k] of x.terms) {
    const base =
      a.kind === 'var'
        ? name(a.v)
        : a.kind === 'div'
          ? `Math.floor((${indexCode(a.x, name)}) / ${a.d})`
          : a.kind === 'mod'
            ? `rt.mod(${indexCode(a.x, name)}, ${a.d})`
            : `Math.min(Math.max(${indexCode(a.x, name)}, ${a.lo}), ${a.hi})`;
    parts.push(k === 1 ? base : `${base} * ${k}`);
  }
  if (x.c !== 0 || parts.length === 0) parts.push(String(x.c));
  return parts.join(' + ');
}

/**
 * The compute function: for each A panel (mr rows), the tiles against every B panel, then the
 * epilogue per element, row by row (contiguous stores). With `wasm`, tiles are summed by the
 * WebAssembly kernel over the packing arena (byte offsets into its memory, where the packing
 * buffers and `acc` live); otherwise by the JavaScript rowPanel4x4 (float64) or rowPanel32. `lo`/`hi` are A panels.
 * With `all`, the sums are already in `acc` for the whole product (renderAllTiles; float32
 * sums row-major, as the product's rows padded to whole tiles): the function applies the epilogue only.
 */
export function renderMatmulCompute(
  k: MatmulKernel,
  name: string,
  env: RenderEnv,
  wasm = false,
  all = false,
): KernelSource {
  const { mr, nr } = k;
  const M = k.m.size,
    N = k.n.size,
    K = k.k.size,
    B = k.batch.size;
  const MP = Math.ceil(M / mr),
    NP = Math.ceil(N / nr);
  const MF = Math.floor(M / mr),
    NF = Math.floor(N / nr);
  const bufs = new Set<number>([k.packA, k.packB, k.out.buf]);
  const b = new ExprBuilder(() => 'float64');
  const pa = env.bufName(k.packA),
    pb = env.bufName(k.packB),
    out = env.bufName(k.out.buf);
  const lines: string[] = [];
  // The epilogue, once, in loops over the row of tiles: i = ip*mr + r, j = jp*nr + c (edge tiles stop early).
  // Whole float32 products have their sums row-major (renderAllTiles' kernel): one loop over the row's N columns.
  const rowMajor = all && k.sum === 'float32';
  // A float32 product of 1 to ROWVEC_MAX_ROWS rows under the WebAssembly kernel is summed by
  // rowVec32 (its rows broadcast against B's panels, sums row-major) instead of a tile of mr
  // rows that is mostly padding.
  const rowVec = rowVecSums(k, wasm, all);
  const ip = newVar(MP),
    jp = newVar(NP),
    ib = newVar(B),
    rv = newVar(mr),
    cv = newVar(nr),
    jv = newVar(N);
  const names = new Map<number, string>([
    [ip.id, 'ip'],
    [jp.id, 'jp'],
    [ib.id, 'ib'],
    [rv.id, 'r'],
    [cv.id, 'c'],
    [jv.id, 'j'],
  ]);
  const nm = (v: Var) => names.get(v.id) ?? `i${v.id}`;
  const col = rowMajor ? ivar(jv) : iadd(iscale(ivar(jp), nr), ivar(cv));
  const sub = (x: IExpr) =>
    substitute(x, (u) =>
      u.id === k.m.id
        ? iadd(iscale(ivar(ip), mr), ivar(rv))
        : u.id === k.n.id
          ? col
          : u.id === k.batch.id
            ? ivar(ib)
            : undefined,
    );
  const [value] = mapIndices(b, [k.out.value], sub, (vs) => vs);
  const w = new ExprWriter(
    undefined,
    {
      bufName: (id) => {
        bufs.add(id);
        return env.bufName(id);
      },
      fnName: env.fnName,
    },
    rowMajor
      ? `acc[ao + r * ${NP * nr} + j]`
      : rowVec
        ? `acc[r * ${NP * nr} + jp * ${nr} + c]`
        : `acc[${all ? 'ao + ' : ''}jp * ${mr * nr} + c * ${mr} + r]`,
    (x) => indexCode(x, nm),
  );
  let v = value!;
  if (v.t === 'cast' && v.dtype === k.out.dtype && storeRounds(v.dtype)) v = v.x;
  const temps = w.sharedLines([v]);
  const store = `${out}[${indexCode(sub(k.out.index), nm)}] = ${w.code(v)};`;
  const f32 = k.sum === 'float32';
  if (!f32 && (mr !== 4 || nr !== 4)) throw new Error('internal: the cpu float64 matmul micro-kernel is 4 x 4');
  // A plain product stored row by row in order (no epilogue: the float32 sums themselves): each
  // panel's rows are copied whole (TypedArray.set, a memory copy) instead of element by element;
  // without padded columns the rows of panels [lo, hi) are one range of the sums and of the output:
  // one copy (a convolution's 4608 panels of 4 rows of 16: 4608 copies of 64 floats before).
  const oi = sub(k.out.index);
  const copyRows =
    rowMajor &&
    v.t === 'acc' &&
    (k.out.dtype === 'float32' || k.out.dtype === 'float64') &&
    oi.terms.every(([a]) => a.kind === 'var' && [ip.id, rv.id, jv.id, ib.id].includes(a.v.id)) &&
    oi.coef(jv) === 1 &&
    (M === 1 || (oi.coef(rv) === N && oi.coef(ip) === mr * N)); // one row: its index has no row term
  if (copyRows && NP * nr === N) {
    const at = [
      ...(oi.coef(ib) !== 0 ? [`ib * ${oi.coef(ib)}`] : []),
      `lo * ${mr * N}`,
      ...(oi.c !== 0 ? [String(oi.c)] : []),
    ].join(' + ');
    lines.push(`  const end = hi < ${MP} ? hi * ${mr * N} : ${M * N};`);
    lines.push(
      `  for (let ib = 0; ib < ${B}; ib++) ${out}.set(acc.subarray(ib * ${MP * mr * N} + lo * ${mr * N}, ib * ${MP * mr * N} + end), ${at});`,
    );
    return matmulSource(name, k, env, bufs, lines, M, K, N, MP);
  }
  if (wasm && !all)
    lines.push(
      `  const wt = ${rowVec ? `rt.arena.blocks[${ROWVEC_EXPORT + M - 1}]` : f32 ? `rt.arena.blocks[${blockVariant(mr, true)}]` : 'rt.arena.tile'}, oa = ${pa}.byteOffset, ob = ${pb}.byteOffset, oc = acc.byteOffset;`,
    );
  lines.push(`  for (let ib = 0; ib < ${B}; ib++) {`);
  lines.push('    for (let ip = lo; ip < hi; ip++) {');
  if (!all) lines.push(`      const pa0 = (ib * ${MP} + ip) * ${K * mr};`);
  lines.push(MF === MP ? `      const re = ${mr};` : `      const re = ip < ${MF} ? ${mr} : ${M - MF * mr};`);
  lines.push(
    all
      ? `      const ao = (ib * ${MP} + ip) * ${NP * mr * nr};`
      : rowVec
        ? `      wt(oa + pa0 * 4, ${mr * 4}, ob + ib * ${NP * K * nr * 4}, ${K}, oc, ${NP});`
        : wasm && f32
          ? `      wt(oa + pa0 * 4, 0, 1, ob + ib * ${NP * K * nr * 4}, ${K}, oc, 0, ${NP});`
          : wasm
            ? `      wt(oa + pa0 * 8, ob + ib * ${NP * K * nr * 8}, ${K}, oc, ${NP});`
            : f32
              ? `      rt.rowPanel32(${pa}, pa0, ${pb}, ib * ${NP * K * nr}, ${K}, acc, ${NP}, ${mr}, ${nr});`
              : `      rt.rowPanel4x4(${pa}, pa0, ${pb}, ib * ${NP * K * nr}, ${K}, acc, ${NP});`,
  );
  if (copyRows) {
    const at = [
      ...(oi.coef(ib) !== 0 ? [`ib * ${oi.coef(ib)}`] : []),
      `ip * ${mr * N}`,
      ...(oi.c !== 0 ? [String(oi.c)] : []),
    ].join(' + ');
    lines.push(
      NP * nr === N
        ? `      ${out}.set(acc.subarray(ao, ao + re * ${N}), ${at});`
        : `      for (let r = 0; r < re; r++) ${out}.set(acc.subarray(ao + r * ${NP * nr}, ao + r * ${NP * nr} + ${N}), ${at} + r * ${N});`,
    );
    lines.push('    }', '  }');
  } else lines.push('      for (let r = 0; r < re; r++) {');
  if (copyRows) {
    /* the rows are copied above */
  } else if (rowMajor) {
    lines.push(`        for (let j = 0; j < ${N}; j++) {`);
    for (const t of temps) lines.push(`          ${t}`);
    lines.push(`          ${store}`);
    lines.push('        }');
  } else {
    lines.push(`        for (let jp = 0; jp < ${NP}; jp++) {`);
    lines.push(NF === NP ? `          const ce = ${nr};` : `          const ce = jp < ${NF} ? ${nr} : ${N - NF * nr};`);
    lines.push('          for (let c = 0; c < ce; c++) {');
    for (const t of temps) lines.push(`            ${t}`);
    lines.push(`            ${store}`);
    lines.push('          }', '        }');
  }
  if (!copyRows) lines.push('      }', '    }', '  }');
  return matmulSource(name, k, env, bufs, lines, M, K, N, MP);
}

/** The source of renderMatmulCompute's function from its body lines. */
function matmulSource(
  name: string,
  k: MatmulKernel,
  env: RenderEnv,
  bufs: ReadonlySet<number>,
  lines: readonly string[],
  M: number,
  K: number,
  N: number,
  MP: number,
): KernelSource {
  const params = [...bufs].sort((p, q) => p - q);
  const args = ['acc', ...params.map((p) => env.bufName(p)), 'lo', 'hi'];
  return {
    needsAcc: true,
    source: `function ${name}(${args.join(', ')}) { // ${commentText(`matmul ${M}x${K}x${N} [${k.label}]`)}\n${lines.join('\n')}\n}`,
    buffers: params,
    rows: MP,
  };
}

/**
 * Whether a product's sums come from rowVec32 (../wasm/matmul.ts): float32 products of 1 to
 * ROWVEC_MAX_ROWS rows summed one row of tiles at a time (not whole) by the WebAssembly kernel.
 * One row at batch 1 (784x256): the 8 x 4 tile does eight times the multiply-adds; XNNPACK's
 * 1x8 kernels for one-row products are the anchor.
 */
export function rowVecSums(k: MatmulKernel, wasm: boolean, all: boolean): boolean {
  return (
    wasm && !all && k.sum === 'float32' && k.indirect === undefined && k.m.size <= ROWVEC_MAX_ROWS && k.m.size <= k.mr
  );
}

/** The buffer id that stands for the tile sums in an epilogue run by the SIMD tier (the kernel's `acc` parameter). */
const ACC = -1;

/**
 * The epilogue of a whole float32 product (renderAllTiles: the sums row-major, each row padded to
 * whole tiles) as a two-loop kernel of the WebAssembly SIMD tier (../wasm/elementwise.ts): rows
 * i < M of N columns, the sum of element (i, j) read at acc[i * NP*nr + j] and copied in with the
 * epilogue's other operands a chunk of rows at a time, where the tier can render the epilogue
 * (arithmetic, float32 rounding, selects: then bit-identical to the JavaScript epilogue, as the
 * tier's loops are; the SGD update of a weight, W - lr * (x^T dh), is the common case). Undefined
 * where it cannot (or for a product batched over more than one matrix, or a plain product, whose
 * rows are copied as they are): then renderMatmulCompute's JavaScript loop. Measured on the MLP step's gradient product (784 x 256 sums into W - 0.1 g):
 * 0.43-0.74 ms as JavaScript, about 0.15 ms in the tier, copies included.
 */
export function tierEpilogue(k: MatmulKernel, bufDType: (id: number) => DType): EwPlan | undefined {
  if (k.sum !== 'float32' || k.batch.size !== 1) return undefined;
  // A plain product's rows are copied from the sums as they are (renderMatmulCompute's copyRows).
  const v = k.out.value;
  if (v.t === 'acc' || (v.t === 'cast' && v.x.t === 'acc')) return undefined;
  const dtype = (id: number): DType => (id === ACC ? 'float32' : bufDType(id));
  const b = new ExprBuilder(dtype);
  const iv = newVar(k.m.size),
    jv = newVar(k.n.size);
  const NP = Math.ceil(k.n.size / k.nr);
  const sub = (x: IExpr) =>
    substitute(x, (u) =>
      u.id === k.m.id ? ivar(iv) : u.id === k.n.id ? ivar(jv) : u.id === k.batch.id ? iconst(0) : undefined,
    );
  const acc = b.load(ACC, iadd(iscale(ivar(iv), NP * k.nr), ivar(jv)));
  const [mapped] = mapIndices(b, [k.out.value], sub, (vs) => vs);
  // the sum itself becomes a load of the tile sums
  const memo = new Map<Expr, Expr>();
  for (const e of exprOrder([mapped!])) {
    memo.set(
      e,
      e.t === 'acc'
        ? acc
        : e.t === 'op'
          ? b.op(e.op, ...e.args.map((a) => memo.get(a)!))
          : e.t === 'call'
            ? b.call(
                e.fn,
                e.name,
                e.args.map((a) => memo.get(a)!),
              )
            : e.t === 'cast'
              ? b.cast(e.dtype, memo.get(e.x)!)
              : e,
    );
  }
  const kernel: LoopKernel = {
    kind: 'loop',
    label: `${k.label} epilogue`,
    vars: [iv, jv],
    stores: [{ ...k.out, index: sub(k.out.index), value: memo.get(mapped!)! }],
  };
  return planElementwise(kernel, dtype, true);
}

/** The compute function of a product whose epilogue tierEpilogue planned: the tier's kernel over the product's rows, `acc` its first parameter. */
export function renderTierEpilogue(p: EwPlan, env: RenderEnv): KernelSource {
  const r = renderElementwise(p, (id) => (id === ACC ? 'acc' : env.bufName(id)));
  return { source: r.source, buffers: r.buffers.filter((id) => id !== ACC), rows: r.rows, needsAcc: true };
}
