// Golden sources of gpu kernels as production renders them (the kernel IR through
// src/codegen/gpu/render.ts), and what the renderer leaves to the host. The kernels' numbers are tested by the op tables on the
// gpu. Regenerate the golden files with UPDATE_GOLDEN=1 (then read the diff).
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { backend as K } from '../../src/index.js';
import type { Node } from '../../src/ir/node.js';
import { runPasses } from '../../src/passes/pass.js';
import { pipeline } from '../../src/passes/pipeline.js';
import { lower } from '../../src/codegen/lower/lower.js';
import type { Program } from '../../src/codegen/kernel/ir.js';
import { CPU_TILE, cpuFusion } from '../../src/runtime/cpu/fusion.js';
import { renderLoopStore, renderMatmul } from '../../src/codegen/gpu/render.js';
import { chooseGpuStrategies } from '../../src/codegen/gpu/strategy.js';
import { loopIterations } from '../../src/codegen/gpu/source.js';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'golden');

function program(inputs: readonly Node[], outputs: readonly Node[]): Program {
  const graph = runPasses(pipeline('fast_run', cpuFusion), { outputs }).outputs;
  return lower({
    targets: graph, inputSlot: new Map(inputs.map((n, i) => [n, i])), variableSlot: new Map(),
    inputShapes: inputs.map((n) => n.shape as number[]), tile: CPU_TILE,
  });
}

/** Every step of the program as the gpu device prepares it: kernel sources, what is not a kernel, or why a step runs on the host. */
function gpuSources(inputs: readonly Node[], outputs: readonly Node[], maxLoop = Infinity): string[] {
  const p = program(inputs, outputs);
  const info = { dtype: (b: number) => p.buffers[b]!.dtype, size: (b: number) => p.buffers[b]!.size };
  const chosen = chooseGpuStrategies(p, { maxLoop });
  return p.steps.flatMap((s, i) => {
    const c = chosen[i]!;
    if (c.kind === 'host') return [`// host: ${c.why}`];
    switch (s.kind) {
      case 'loop': return c.kind === 'loop' ? c.stores.map((st) => renderLoopStore(s, st, info).kernel.source) : [`// ${c.kind}?`];
      case 'matmul': return [renderMatmul(s, info).kernel.source];
      case 'extern': return [`// extern ${s.def.name}`];
      case 'scan': return ['// scan'];
      case 'print': return ['// print'];
    }
  });
}

function golden(name: string, build: () => { inputs: Node[]; outputs: Node[] }): void {
  it(name, () => {
    const { inputs, outputs } = build();
    const src = gpuSources(inputs, outputs).join('\n\n');
    const file = path.join(dir, `gpu-${name}.js`);
    if (process.env['UPDATE_GOLDEN'] === '1') fs.writeFileSync(file, `${src}\n`);
    expect(fs.existsSync(file), `${file} is missing: run with UPDATE_GOLDEN=1`).to.equal(true);
    expect(`${src}\n`).to.equal(fs.readFileSync(file, 'utf8'));
  });
}

const f32 = (...shape: number[]) => K.placeholder(shape, null, 'float32');

describe('gpu kernel sources (golden, src/codegen/gpu/render.ts)', () => {
  golden('broadcast-add', () => {
    const [x, r] = [f32(2, 3), f32(3)];
    return { inputs: [x, r], outputs: [K.add(x, r)] };
  });
  golden('row-sum', () => {
    const x = f32(2, 3);
    return { inputs: [x], outputs: [K.sum(x, 1)] };
  });
  golden('dot', () => {
    const [x, y] = [f32(2, 3), f32(3, 4)];
    return { inputs: [x, y], outputs: [K.dot(x, y)] };
  });
  golden('softmax-rows', () => {
    const x = f32(4, 5);
    return { inputs: [x], outputs: [K.softmax(x)] };
  });
  golden('conv1d-same-stride2', () => {
    const [x, w] = [f32(1, 5, 3), f32(3, 3, 2)];
    return { inputs: [x, w], outputs: [K.conv1d(x, w, 2, 'same')] };
  });

  it('broadcast add: the row operand is read at the column coordinate only', () => {
    const [x, r] = [f32(2, 3), f32(3)];
    const [src] = gpuSources([x, r], [K.add(x, r)]);
    expect(src).to.match(/const (t\d+) = b1\[i1\];/);
    expect(src).to.include('const i1 = i % 3;');
  });

  it('integer stores wrap at their width', () => {
    const x = f32(4);
    expect(gpuSources([x], [K.cast(x, 'int8')])[0]).to.include('(t_mod(t_trunc(t0) + 128.0, 256.0) - 128.0)');
  });

  it('a kernel looping more than the device allows per element is left to the host', () => {
    const x = f32(100000);
    expect(gpuSources([x], [K.sum(x)], 65535)).to.deep.equal(['// host: 100000 loop iterations per element (this GL stops at 65535)']);
    const [src] = gpuSources([x], [K.sum(x)], 200000);
    expect(loopIterations(src!)).to.equal(100000);
  });

  it('the strategy counts the loop iterations the renderer writes (a kernel at the limit runs on the device, one over it on the host)', () => {
    const graphs: [string, () => { inputs: Node[]; outputs: Node[] }][] = [
      ['softmax', () => { const x = f32(4, 7); return { inputs: [x], outputs: [K.softmax(x)] }; }],
      ['two reductions', () => { const x = f32(3, 5, 6); return { inputs: [x], outputs: [K.sum(K.max(x, 2, true), 1)] }; }],
      ['variance', () => { const x = f32(6, 9); return { inputs: [x], outputs: [K.var(x, 1)] }; }],
      ['conv2d', () => { const [x, w] = [f32(1, 6, 6, 2), f32(3, 3, 2, 4)]; return { inputs: [x, w], outputs: [K.conv2d(x, w)] }; }],
      ['dot', () => { const [x, y] = [f32(2, 13), f32(13, 3)]; return { inputs: [x, y], outputs: [K.dot(x, y)] }; }],
    ];
    for (const [name, build] of graphs) {
      const { inputs, outputs } = build();
      const most = Math.max(...gpuSources(inputs, outputs).map((src) => loopIterations(src)));
      expect(most, name).to.be.greaterThan(0);
      expect(gpuSources(inputs, outputs, most).join('\n'), name).to.not.include('// host');
      expect(gpuSources(inputs, outputs, most - 1).join('\n'), name).to.include(`// host: ${most} loop iterations per element (this GL stops at ${most - 1})`);
    }
  });

  it('grouped convolutions and pooling adjoints are kernel-IR kernels, not extern steps', () => {
    const img = f32(1, 4, 4, 2);
    const dw = f32(2, 2, 2, 1);
    expect(gpuSources([img, dw], [K.depthwise_conv2d(img, dw)]).join('\n')).to.not.include('// extern');
    const pooled = K.pool2d(img, [2, 2], [2, 2], 'valid', null, 'max');
    const [g] = K.gradients(K.sum(pooled), [img]);
    expect(gpuSources([img], [g!]).join('\n')).to.not.include('// extern');
    const v = f32(3);
    expect(gpuSources([v], [K.print_tensor(v, 'v')]), 'print is a print step (a host callback), not an extern step').to.deep.equal(['// print']);
  });
});
