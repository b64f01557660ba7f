// Golden sources of gpu kernels as production renders them (the kernel IR through
// src/codegen/gpu/render.ts; extern steps with a gpu kernel of their own through extern.ts), and
// what the renderer leaves to the host. The kernels' numbers are tested by the op tables on the
// gpu. Regenerate the golden files with UPDATE_GOLDEN=1 (then read the diff).
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { backend as K } from '../../src/index.js';
import type { Node } from '../../src/ir/node.js';
import { runPasses } from '../../src/passes/pass.js';
import { pipeline } from '../../src/passes/pipeline.js';
import { lower } from '../../src/codegen/lower.js';
import type { Program } from '../../src/codegen/kernel.js';
import { CPU_TILE, cpuTarget } from '../../src/runtime/compile.js';
import { Unsupported, renderLoopStore, renderMatmul } from '../../src/codegen/gpu/render.js';
import { externKernel } from '../../src/codegen/gpu/extern.js';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'golden');

function program(inputs: readonly Node[], outputs: readonly Node[]): Program {
  const graph = runPasses(pipeline('fast_run', cpuTarget), { outputs }).outputs;
  return lower({
    targets: graph, inputSlot: new Map(inputs.map((n, i) => [n, i])), variableSlot: new Map(),
    inputShapes: inputs.map((n) => n.shape as number[]), tile: CPU_TILE,
  });
}

/** Every step of the program as the gpu device prepares it: kernel sources, or what is not a kernel. */
function gpuSources(inputs: readonly Node[], outputs: readonly Node[], maxLoop = Infinity): string[] {
  const p = program(inputs, outputs);
  const info = { dtype: (b: number) => p.buffers[b]!.dtype, size: (b: number) => p.buffers[b]!.size };
  return p.steps.flatMap((s) => {
    switch (s.kind) {
      case 'loop': return s.stores.map((st) => renderLoopStore(s, st, info, maxLoop).kernel.source);
      case 'matmul': return [renderMatmul(s, info, maxLoop).kernel.source];
      case 'extern': return [`// extern ${s.def.name}`];
      case 'scan': return ['// scan'];
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
    expect(() => gpuSources([x], [K.sum(x)], 65535)).to.throw(Unsupported, /100000 loop iterations per element \(this GL stops at 65535\)/);
    expect(gpuSources([x], [K.sum(x)], 200000)).to.have.length(1);
  });

  it('extern steps: grouped convolutions and pooling adjoints have kernels of their own, other externs none', () => {
    const f = (...shape: number[]) => ({ shape, dtype: 'float32' as const });
    const grouped = externKernel({
      op: 'conv', attrs: { strides: [1], dilation: [1], padding: 'valid', groups: 2 }, dtype: 'float32', shape: [1, 3, 4], inputs: [f(1, 5, 4), f(3, 2, 4)],
    });
    expect(grouped?.kind).to.equal('kernel');
    expect(grouped?.kind === 'kernel' && grouped.args).to.deep.equal([0, 1]);
    expect(grouped?.kind === 'kernel' && grouped.kernel.source).to.include('for (let t_');
    expect(externKernel({ op: 'in_top_k', attrs: { k: 1 }, dtype: 'bool', shape: [2], inputs: [f(2, 3), { shape: [2], dtype: 'int32' }] })).to.equal(undefined);
    const long = externKernel({
      op: 'conv', attrs: { strides: [1], dilation: [1], padding: 'valid', groups: 2 }, dtype: 'float32', shape: [1, 1, 4], inputs: [f(1, 70000, 4), f(70000, 2, 4)],
    }, 65535);
    expect(long?.kind).to.equal('too-long');
  });
});
