// A matmul kernel of the kernel IR as a WGSL product whose register tiles read memory directly.
import { exprOrder, type Expr } from '../expr.js';
import type { Var } from '../index-expr.js';
import type { MatmulKernel } from '../kernel.js';
import { roundAs, storageOf } from './scalar.js';
import { MAX_GROUPS, Writer, assemble, iexprCode, loaded, type BufferInfo, type WgslKernel } from './writer.js';

/** Invocations per workgroup: one SIMD row of a CPU-emulated adapter (lavapipe's 8 lanes). */
export const MM_LANES = 8;
/** The most rows and columns (per invocation) of a register tile. */
const MAX_ROWS = 8;
const MAX_COLS = 8;

/** The register tile of a product: rows per workgroup, columns per invocation (interleaved by MM_LANES). */
export function matmulTile(m: number, n: number): { rows: number; cols: number } {
  return { rows: Math.min(MAX_ROWS, m), cols: Math.min(MAX_COLS, Math.ceil(n / MM_LANES)) };
}

/**
 * A matmul kernel as register tiles without workgroup memory: a workgroup of MM_LANES
 * invocations computes `rows` x (MM_LANES * `cols`) outputs; an invocation sums rows x cols of
 * them (its columns MM_LANES apart, so that neighbouring lanes read neighbouring columns), reading
 * B's values of its columns and A's values of the workgroup's rows at each step of k. A's row is
 * the same for every lane of the workgroup, so an adapter that runs the lanes as SIMD (lavapipe,
 * SwiftShader) reads it once and broadcasts it; there are no barriers. On lavapipe this runs the
 * 1024 product in about a third of the CPU time of tfjs-backend-webgpu's 32 x 32 workgroup-memory
 * tiles (matmul_packed_webgpu, the anchor; bench/README.md). Operands are the kernel's expressions,
 * evaluated at clamped coordinates (rows and columns past the product are computed and not
 * stored), so transposes and masks cost no copies. The product is one strategy.ts puts on the device.
 */
export function renderMatmul(k: MatmulKernel, bufs: BufferInfo): WgslKernel {
  const st = k.out;
  const reads = loaded([k.a, k.b, st.value]);
  const operand = (name: string, e: Expr, vars: readonly Var[]): string[] => {
    const w = new Writer(bufs, () => undefined, () => false);
    const ls = exprOrder([e]).map((x) => w.line(x)).filter((l): l is string => l !== undefined);
    return [
      `fn ${name}(${vars.map((v) => `i${v.id}: i32`).join(', ')}) -> f32 {`,
      ...ls.map((l) => `  ${l}`),
      `  return ${w.code(e, 'f32')};`,
      '}',
    ];
  };
  const ew = new Writer(bufs, () => undefined, () => false);
  const epi = exprOrder([st.value]).map((x) => ew.line(x)).filter((l): l is string => l !== undefined);
  const ty = storageOf(st.dtype)!;
  const stored = roundAs(st.dtype, ew.code(st.value, 'f32'));
  const [B, M, N, K] = [k.batch, k.m, k.n, k.k];
  const { rows: R, cols: C } = matmulTile(M.size, N.size);
  const rowBlocks = Math.ceil(M.size / R);
  const colBlocks = Math.ceil(N.size / (MM_LANES * C));
  const blocks = rowBlocks * colBlocks;
  const acc = (r: number, c: number): string => `c${r}_${c}`;
  const all = (f: (r: number, c: number) => string): string[] => {
    const out: string[] = [];
    for (let r = 0; r < R; r++) for (let c = 0; c < C; c++) out.push(f(r, c));
    return out;
  };
  const body = [
    ...operand('opA', k.a, [B, M, K]),
    ...operand('opB', k.b, [B, K, N]),
    `fn epilogue(i${B.id}: i32, i${M.id}: i32, i${N.id}: i32, acc: f32) {`,
    `  if (i${M.id} >= ${M.size}i || i${N.id} >= ${N.size}i) { return; }`,
    ...epi.map((l) => `  ${l}`),
    `  b${st.buf}[${iexprCode(st.index)}] = ${ty === 'f32' ? stored : `i32(${stored})`};`,
    '}',
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
    ...Array.from({ length: R }, (_, r) => `    { let x = opA(bz, m${r}, k); ${Array.from({ length: C }, (_, c) => `${acc(r, c)} = fma(x, y${c}, ${acc(r, c)});`).join(' ')} }`),
    '  }',
    ...all((r, c) => `  epilogue(bz, r0 + ${r}i, c0 + ${c * MM_LANES}i, ${acc(r, c)});`),
    '}',
  ];
  const binds = [...new Set([st.buf, ...reads])].sort((p, q) => p - q);
  const groups: [number, number, number] = blocks <= MAX_GROUPS ? [blocks, 1, B.size] : [MAX_GROUPS, Math.ceil(blocks / MAX_GROUPS), B.size];
  return assemble(k.label, body, binds, [st.buf], bufs, groups);
}
