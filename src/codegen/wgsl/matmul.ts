// A matmul kernel of the kernel IR as a WGSL product, in one of two forms the strategy chooses
// by adapter (strategy.ts): workgroup tiles staged in workgroup memory for a GPU, register tiles
// read straight from memory for an adapter that runs invocations as SIMD lanes on CPU threads.
import { exprOrder, type Expr } from '../kernel/expr.js';
import type { Var } from '../kernel/index-expr.js';
import type { MatmulKernel } from '../kernel/ir.js';
import { roundAs, storeAs } from './scalar.js';
import { MAX_GROUPS, Writer, assemble, iexprCode, loaded, type BufferInfo, type WgslKernel } from './writer.js';

/** 'tiles': workgroup tiles in workgroup memory (a GPU); 'lanes': register tiles without barriers (a CPU-emulated adapter). */
export type MatmulForm = 'tiles' | 'lanes';

/** The product's operand functions (opA, opB) and epilogue, which stores one output element. */
function matmulParts(k: MatmulKernel, bufs: BufferInfo): string[] {
  const st = k.out;
  const operand = (name: string, e: Expr, vars: readonly Var[]): string[] => {
    const w = new Writer(
      bufs,
      () => undefined,
      () => false,
    );
    const ls = exprOrder([e])
      .map((x) => w.line(x))
      .filter((l): l is string => l !== undefined);
    return [
      `fn ${name}(${vars.map((v) => `i${v.id}: i32`).join(', ')}) -> f32 {`,
      ...ls.map((l) => `  ${l}`),
      `  return ${w.code(e, 'f32')};`,
      '}',
    ];
  };
  const ew = new Writer(
    bufs,
    () => undefined,
    () => false,
  );
  const epi = exprOrder([st.value])
    .map((x) => ew.line(x))
    .filter((l): l is string => l !== undefined);
  const ty = bufs.storage(st.buf)!;
  const stored = roundAs(st.dtype, ew.code(st.value, 'f32'));
  const [B, M, N, K] = [k.batch, k.m, k.n, k.k];
  return [
    ...operand('opA', k.a, [B, M, K]),
    ...operand('opB', k.b, [B, K, N]),
    `fn epilogue(i${B.id}: i32, i${M.id}: i32, i${N.id}: i32, acc: f32) {`,
    `  if (i${M.id} >= ${M.size}i || i${N.id} >= ${N.size}i) { return; }`,
    ...epi.map((l) => `  ${l}`),
    `  b${st.buf}[${iexprCode(st.index)}] = ${storeAs(ty, stored)};`,
    '}',
  ];
}

/** A matmul kernel in the form strategy.ts chose. */
export function renderMatmul(k: MatmulKernel, bufs: BufferInfo, form: MatmulForm = 'tiles'): WgslKernel {
  const binds = [...new Set([k.out.buf, ...loaded([k.a, k.b, k.out.value])])].sort((p, q) => p - q);
  const [body, groups] = form === 'lanes' ? laneTiles(k) : workgroupTiles(k);
  return assemble(k.label, [...matmulParts(k, bufs), ...body], binds, [k.out.buf], bufs, groups);
}

/** Output tile edge of a workgroup tile, the register tile each invocation sums, the step of k. */
const TILE = 64;
const RT = 4;
const TK = 16;

/**
 * Workgroup tiles (tfjs-backend-webgpu's matmul_packed and the classic shared-memory GEMM are the
 * anchors): a workgroup of 16 x 16 invocations computes a 64 x 64 output tile, staging 64 x 16 of A
 * and 16 x 64 of B in workgroup memory per step of k; each invocation sums a 4 x 4 register tile.
 * Operands are evaluated at the staged coordinates (0 outside the product).
 */
function workgroupTiles(k: MatmulKernel): [string[], [number, number, number]] {
  const [M, N, K] = [k.m, k.n, k.k];
  const W = TILE / RT; // invocations per workgroup edge
  const per = (TILE * TK) / (W * W); // staged values of A (and of B) per invocation and step of k
  const body = [
    `var<workgroup> tA: array<array<f32, ${TK}>, ${TILE}>;`,
    `var<workgroup> tB: array<array<f32, ${TILE}>, ${TK}>;`,
    `@compute @workgroup_size(${W}, ${W})`,
    'fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {',
    '  let bz = i32(wg.z);',
    `  let row0 = i32(wg.y) * ${TILE}i;`,
    `  let col0 = i32(wg.x) * ${TILE}i;`,
    '  let tx = i32(lid.x);',
    '  let ty = i32(lid.y);',
    `  let flat = ty * ${W}i + tx;`,
    `  var acc: array<f32, ${RT * RT}>;`,
    `  var ra: array<f32, ${RT}>;`,
    `  var rb: array<f32, ${RT}>;`,
    `  for (var k0 = 0i; k0 < ${K.size}i; k0 += ${TK}i) {`,
    `    for (var s = 0i; s < ${per}i; s++) {`,
    `      let e = flat + s * ${W * W}i;`,
    `      let ar = e / ${TK}i; let ak = e % ${TK}i;`,
    '      let gr = row0 + ar; let gk = k0 + ak;',
    `      tA[ar][ak] = select(0.0, opA(bz, min(gr, ${M.size - 1}i), min(gk, ${K.size - 1}i)), gr < ${M.size}i && gk < ${K.size}i);`,
    `      let bk = e / ${TILE}i; let bc = e % ${TILE}i;`,
    '      let hk = k0 + bk; let hc = col0 + bc;',
    `      tB[bk][bc] = select(0.0, opB(bz, min(hk, ${K.size - 1}i), min(hc, ${N.size - 1}i)), hk < ${K.size}i && hc < ${N.size}i);`,
    '    }',
    '    workgroupBarrier();',
    `    for (var kk = 0i; kk < ${TK}i; kk++) {`,
    `      for (var r = 0i; r < ${RT}i; r++) { ra[r] = tA[ty * ${RT}i + r][kk]; rb[r] = tB[kk][tx * ${RT}i + r]; }`,
    `      for (var r = 0i; r < ${RT}i; r++) { for (var c = 0i; c < ${RT}i; c++) { acc[r * ${RT}i + c] += ra[r] * rb[c]; } }`,
    '    }',
    '    workgroupBarrier();',
    '  }',
    `  for (var r = 0i; r < ${RT}i; r++) { for (var c = 0i; c < ${RT}i; c++) { epilogue(bz, row0 + ty * ${RT}i + r, col0 + tx * ${RT}i + c, acc[r * ${RT}i + c]); } }`,
    '}',
  ];
  return [body, [Math.ceil(N.size / TILE), Math.ceil(M.size / TILE), k.batch.size]];
}

/** Invocations per workgroup of the lanes form: one SIMD row of a CPU-emulated adapter (lavapipe's 8 lanes). */
export const MM_LANES = 8;
/** The most rows and columns (per invocation) of a register tile in the lanes form. */
const MAX_ROWS = 8;
const MAX_COLS = 8;

/** The register tile of the lanes form: rows per workgroup, columns per invocation (interleaved by MM_LANES). */
export function matmulTile(m: number, n: number): { rows: number; cols: number } {
  return { rows: Math.min(MAX_ROWS, m), cols: Math.min(MAX_COLS, Math.ceil(n / MM_LANES)) };
}

/**
 * Register tiles without workgroup memory: a workgroup of MM_LANES invocations computes `rows` x
 * (MM_LANES * `cols`) outputs; an invocation sums rows x cols of them (its columns MM_LANES apart,
 * so that neighbouring lanes read neighbouring columns), reading B's values of its columns and A's
 * values of the workgroup's rows at each step of k. A's row is the same for every lane, so an
 * adapter that runs the lanes as SIMD reads it once and broadcasts it; there are no barriers, which
 * on such an adapter switch between the lanes' coroutines. On lavapipe this takes about a third of
 * the CPU time of the workgroup tiles or of tfjs-backend-webgpu's 32 x 32 tiles (bench/README.md).
 * Operands are evaluated at clamped coordinates (rows and columns past the product are computed
 * and not stored).
 */
function laneTiles(k: MatmulKernel): [string[], [number, number, number]] {
  const [M, N, K] = [k.m, k.n, k.k];
  const { rows: R, cols: C } = matmulTile(M.size, N.size);
  const colBlocks = Math.ceil(N.size / (MM_LANES * C));
  const blocks = Math.ceil(M.size / R) * colBlocks;
  const acc = (r: number, c: number): string => `c${r}_${c}`;
  const all = (f: (r: number, c: number) => string): string[] => {
    const out: string[] = [];
    for (let r = 0; r < R; r++) for (let c = 0; c < C; c++) out.push(f(r, c));
    return out;
  };
  const body = [
    `@compute @workgroup_size(${MM_LANES})`,
    'fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {',
    '  let blk = i32(wg.x + wg.y * nwg.x);',
    `  if (blk >= ${blocks}i) { return; }`,
    '  let bz = i32(wg.z);',
    `  let r0 = (blk / ${colBlocks}i) * ${R}i;`,
    `  let c0 = (blk % ${colBlocks}i) * ${MM_LANES * C}i + i32(lid);`,
    ...Array.from({ length: R }, (_, r) => `  let m${r} = min(r0 + ${r}i, ${M.size - 1}i);`),
    ...Array.from({ length: C }, (_, c) => `  let n${c} = min(c0 + ${c * MM_LANES}i, ${N.size - 1}i);`),
    ...all((r, c) => `  var ${acc(r, c)} = 0.0;`),
    `  for (var k = 0i; k < ${K.size}i; k++) {`,
    ...Array.from({ length: C }, (_, c) => `    let y${c} = opB(bz, k, n${c});`),
    ...Array.from(
      { length: R },
      (_, r) =>
        `    { let x = opA(bz, m${r}, k); ${Array.from({ length: C }, (_, c) => `${acc(r, c)} = fma(x, y${c}, ${acc(r, c)});`).join(' ')} }`,
    ),
    '  }',
    ...all((r, c) => `  epilogue(bz, r0 + ${r}i, c0 + ${c * MM_LANES}i, ${acc(r, c)});`),
    '}',
  ];
  return [
    body,
    blocks <= MAX_GROUPS ? [blocks, 1, k.batch.size] : [MAX_GROUPS, Math.ceil(blocks / MAX_GROUPS), k.batch.size],
  ];
}
