// Golden kernels: for a set of graphs, every generated piece compared byte for byte with a stored
// fixture (test/codegen/golden/kernels/*.txt): the cpu function's source (driver and JavaScript
// kernels), the WebAssembly module bytes (hex) of every loop step the SIMD tiers can plan (pool,
// Philox, elementwise, reduction) and of a float32 product's tier epilogue, and the gpu.js source
// of every step. A change that only moves code must leave them all unchanged. Regenerate with
// UPDATE_GOLDEN=1 (then read the diff). Process-wide numbers (loop variables, temporaries, tier
// kernel ids) are renumbered by first appearance; this file's line numbers and the numbers of
// node names (process-wide counters) are dropped.
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { backend as K } from '../../src/index.js';
import type { Node } from '../../src/ir/node.js';
import type { DType } from '../../src/ir/dtype.js';
import { runPasses } from '../../src/passes/pass.js';
import { pipeline } from '../../src/passes/pipeline.js';
import { lower } from '../../src/codegen/lower/lower.js';
import type { Program } from '../../src/codegen/kernel/ir.js';
import { CPU_TILE, cpuFusion } from '../../src/runtime/cpu/fusion.js';
import { renderLoopStore, renderMatmul } from '../../src/codegen/gpu/render.js';
import { chooseGpuStrategies } from '../../src/codegen/gpu/strategy.js';
import { planPool } from '../../src/codegen/cpu/wasm/pool.js';
import { planPhilox } from '../../src/codegen/cpu/wasm/philox.js';
import { planElementwise } from '../../src/codegen/cpu/wasm/elementwise.js';
import { planReduce } from '../../src/codegen/cpu/wasm/reduce.js';
import { tierEpilogue } from '../../src/codegen/cpu/matmul.js';
import { tile32 } from '../../src/codegen/cpu/wasm-kernel.js';
import { IGEMM_TILE } from '../../src/codegen/cpu/wasm/igemm.js';
import { normalizeSource } from './golden.test.js';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'golden', 'kernels');

function program(inputs: readonly Node[], outputs: readonly Node[]): Program {
  const graph = runPasses(pipeline('fast_run', cpuFusion), { outputs }).outputs;
  return lower({
    targets: graph, inputSlot: new Map(inputs.map((n, i) => [n, i])), variableSlot: new Map(),
    inputShapes: inputs.map((n) => n.shape as number[]), tile: { ...CPU_TILE, f32: tile32(), igemm: IGEMM_TILE }, // the cpu's default variant (matmul precision float32)
  });
}

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('').replace(/(.{128})/g, '$1\n').trimEnd();

/** The tier kernels' module bytes of every step, as the tiers plan them. */
function tierBytes(p: Program): string[] {
  const dtype = (b: number) => p.buffers[b]!.dtype;
  const out: string[] = [];
  p.steps.forEach((s, i) => {
    if (s.kind === 'matmul') {
      const e = tierEpilogue(s, dtype);
      if (e !== undefined) out.push(`# step ${i} matmul tier epilogue\n${hex(e.bytes)}`);
      return;
    }
    if (s.kind !== 'loop') return;
    const plans: [string, { bytes: Uint8Array } | undefined][] = [
      ['pool', planPool(s, dtype)], ['philox', planPhilox(s, dtype)], ['elementwise', planElementwise(s, dtype)],
      ['elementwise (always)', planElementwise(s, dtype, true)], ['reduce', planReduce(s, dtype)],
    ];
    for (const [name, pl] of plans) if (pl !== undefined) out.push(`# step ${i} ${name}\n${hex(pl.bytes)}`);
  });
  return out;
}

function gpuSources(p: Program): string[] {
  const info = { dtype: (b: number) => p.buffers[b]!.dtype, size: (b: number) => p.buffers[b]!.size };
  const chosen = chooseGpuStrategies(p, { maxLoop: Infinity });
  return p.steps.flatMap((s, i) => {
    const c = chosen[i]!;
    if (s.kind !== 'loop' && s.kind !== 'matmul') return [`// ${s.kind}`];
    if (c.kind === 'host') return [`// gpu: ${c.why}`];
    if (s.kind === 'matmul') return [renderMatmul(s, info).kernel.source];
    if (c.kind !== 'loop') throw new Error(`step ${i}: a ${c.kind} strategy for a loop step`);
    return c.stores.map((st) => renderLoopStore(s, st, info).kernel.source);
  });
}

/** Tier kernel ids (rt.red(3), rt.ew(1)...) are process-wide: renumbered by first appearance. */
function normalizeIds(src: string): string {
  const ids = new Map<string, number>();
  return src.replace(/\brt\.(\w+)\((\d+)\)/g, (_m, kind: string, n: string) => {
    const k = `${kind}:${n}`;
    if (!ids.has(k)) ids.set(k, ids.size);
    return `rt.${kind}(#${ids.get(k)!})`;
  });
}

function golden(name: string, build: () => { inputs: Node[]; outputs: Node[] }): void {
  it(name, () => {
    const { inputs, outputs } = build();
    const p = program(inputs, outputs);
    const cpu = normalizeIds(normalizeSource(K.function(inputs, outputs).source())).replace(/golden-kernels\.test\.ts:\d+/g, 'golden-kernels.test.ts').replace(/(K\.gradients of \w+?)_\d+\b/g, '$1_#');
    const text = ['## cpu source', cpu, '## tier module bytes', ...tierBytes(p), '## gpu sources', ...gpuSources(p)].join('\n') + '\n';
    const file = path.join(dir, `${name}.txt`);
    if (process.env['UPDATE_GOLDEN'] === '1') {
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(file, text);
    }
    expect(fs.existsSync(file), `${file} is missing: run with UPDATE_GOLDEN=1`).to.equal(true);
    expect(text).to.equal(fs.readFileSync(file, 'utf8'));
  });
}

const ph = (dtype: DType, ...shape: number[]) => K.placeholder(shape, null, dtype);

describe('golden kernels (cpu source, tier module bytes, gpu sources)', () => {
  golden('reductions-f64', () => {
    const x = ph('float64', 6, 5);
    const b = K.greater(x, 0);
    return { inputs: [x], outputs: [K.sum(x, 1), K.prod(x, 1), K.mean(x, 1), K.max(x, 1), K.min(x, 1), K.any(b, 0), K.all(b, 0)] };
  });
  golden('reductions-f32-rows', () => {
    const x = ph('float32', 64, 256);
    return { inputs: [x], outputs: [K.sum(x, 1), K.prod(x, 1), K.max(x, 1), K.min(x, 1), K.mean(x, 1)] };
  });
  golden('reductions-f32-columns', () => {
    const x = ph('float32', 256, 64);
    return { inputs: [x], outputs: [K.sum(x, 0), K.prod(x, 0), K.max(x, 0), K.min(x, 0)] };
  });
  golden('reductions-f32-whole', () => {
    const x = ph('float32', 20000);
    return { inputs: [x], outputs: [K.sum(x), K.prod(x), K.max(x), K.min(x)] };
  });
  golden('reductions-int-bool', () => {
    const x = ph('int32', 7, 9);
    const b = K.less(x, 3);
    return { inputs: [x], outputs: [K.sum(x, 0), K.prod(x, 1), K.max(x, 0), K.min(x, 1), K.any(b), K.all(b, 1), K.argmax(x, 1)] };
  });
  golden('softmax-f32-large', () => {
    const x = ph('float32', 64, 512);
    return { inputs: [x], outputs: [K.softmax(x), K.logsumexp(x, 1)] };
  });
  golden('random-scaled', () => {
    const x = ph('float32', 128, 128);
    return { inputs: [x], outputs: [K.dropout(x, 0.5, null, 7)] };
  });
  golden('pool-and-elementwise', () => {
    const x = ph('float32', 2, 32, 32, 8);
    return { inputs: [x], outputs: [K.pool2d(K.tanh(x), [2, 2], [2, 2], 'valid', 'channels_last', 'max'), K.exp(x.mul(0.5))] };
  });
  golden('dense-f32-epilogue', () => {
    const x = ph('float32', 256, 128);
    const w = ph('float32', 128, 64);
    const b = ph('float32', 64);
    return { inputs: [x, w, b], outputs: [K.relu(K.dot(x, w).add(b))] };
  });
  golden('dense-f64-packs', () => {
    const x = ph('float64', 8, 12);
    const w = ph('float64', 6, 12);
    return { inputs: [x, w], outputs: [K.dot(K.exp(x), K.transpose(w)), K.dot(x, K.transpose(w.mul(2)))] };
  });
  golden('concat-adjoint-split', () => {
    const x = ph('float64', 4, 3);
    const y = ph('float64', 4, 5);
    const c = K.concatenate([K.tanh(x), y], -1);
    return { inputs: [x, y], outputs: K.gradients(K.sum(c.mul(c)), [x, y]) };
  });
  golden('cumulative-and-size', () => {
    const x = ph('float32', 4, 6);
    return { inputs: [x], outputs: [K.cumsum(x, 1), K.cumprod(x, 0), K.cast(K.sum(K.ones_like(x)), 'float32')] };
  });
});
