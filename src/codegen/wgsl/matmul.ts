// A matmul kernel of the kernel IR as a workgroup-tiled WGSL product.
import { exprOrder, type Expr } from '../kernel/expr.js';
import type { Var } from '../kernel/index-expr.js';
import type { MatmulKernel } from '../kernel/ir.js';
import { roundAs, storageOf } from './scalar.js';
import { Writer, assemble, iexprCode, loaded, type BufferInfo, type WgslKernel } from './writer.js';

/** Output tile edge of a matmul workgroup, and the register tile each invocation sums. */
const TILE = 64;
const RT = 4;
const TK = 16;

/**
 * A matmul kernel as a workgroup-tiled product (tfjs-backend-webgpu's matmul_packed and the
 * classic shared-memory GEMM are the anchors): a workgroup of 16 x 16 invocations computes a
 * 64 x 64 output tile, staging 64 x 16 of A and 16 x 64 of B in workgroup memory per step of k;
 * each invocation sums a 4 x 4 register tile. Operands are the kernel's expressions, evaluated at
 * the staged coordinates (0 outside the product), so transposes and masks cost no copies. The
 * product is one that strategy.ts puts on the device.
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
  const W = TILE / RT; // invocations per workgroup edge
  const per = (TILE * TK) / (W * W); // staged values of A (and of B) per invocation and step of k
  const body = [
    `var<workgroup> tA: array<array<f32, ${TK}>, ${TILE}>;`,
    `var<workgroup> tB: array<array<f32, ${TILE}>, ${TK}>;`,
    ...operand('opA', k.a, [B, M, K]),
    ...operand('opB', k.b, [B, K, N]),
    `fn epilogue(i${B.id}: i32, i${M.id}: i32, i${N.id}: i32, acc: f32) {`,
    `  if (i${M.id} >= ${M.size}i || i${N.id} >= ${N.size}i) { return; }`,
    ...epi.map((l) => `  ${l}`),
    `  b${st.buf}[${iexprCode(st.index)}] = ${ty === 'f32' ? stored : `i32(${stored})`};`,
    '}',
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
  const binds = [...new Set([st.buf, ...reads])].sort((p, q) => p - q);
  return assemble(k.label, body, binds, [st.buf], bufs, [Math.ceil(N.size / TILE), Math.ceil(M.size / TILE), B.size]);
}

