// Packed bindings (src/codegen/wgsl/pack.ts): a loop kernel reading more buffers than a shader
// binds reads its smallest read-only buffers of one type from one packed binding, filled by
// device-side copies before the dispatch. Without a device: the plan and the rewritten shader
// (test/runtime/webgpu-pack.test.ts runs such a kernel on an adapter).
import { expect } from 'chai';
import { ExprBuilder } from '../../src/codegen/kernel/expr.js';
import { ivar, newVar } from '../../src/codegen/kernel/index-expr.js';
import type { LoopKernel, Program } from '../../src/codegen/kernel/ir.js';
import type { DType } from '../../src/ir/dtype.js';
import { packKernel, planPack } from '../../src/codegen/wgsl/pack.js';
import { renderLoop } from '../../src/codegen/wgsl/render.js';
import { storageOf } from '../../src/codegen/wgsl/scalar.js';
import { chooseWebStrategies } from '../../src/codegen/wgsl/strategy.js';

const info = (dtypes: DType[], sizes: number[], maxBindings: number) => ({ dtype: (b: number) => dtypes[b]!, size: (b: number) => sizes[b]!, storage: (b: number) => storageOf(dtypes[b]!), maxBindings });

describe('WGSL packed bindings', () => {
  it('planPack takes the fewest smallest read-only buffers of one type, none where the bindings fit', () => {
    const dtypes: DType[] = ['float32', 'int32', 'float32', 'float32', 'int32', 'float32', 'float32'];
    const sizes = [100, 1, 3, 1, 1, 2, 50];
    // 7 buffers, 4 bindings: 4 packed into one; buffer 6 is written
    const p = planPack([0, 1, 2, 3, 4, 5, 6], [6], info(dtypes, sizes, 4));
    expect(p).to.deep.equal({ ty: 'f32', parts: [{ buf: 3, at: 0, n: 1 }, { buf: 5, at: 1, n: 2 }, { buf: 2, at: 3, n: 3 }, { buf: 0, at: 6, n: 100 }], total: 106 });
    expect(planPack([0, 1, 2], [2], info(dtypes, sizes, 8))).to.equal(undefined);
    expect(planPack([0, 1, 2, 3], [0, 1, 2], info(dtypes, sizes, 2))).to.match(/too few of them are read-only of one type to pack/);
  });

  it('packKernel: the packed buffers read from the last binding at their offsets, the other bindings numbered again', () => {
    const b = new ExprBuilder(() => 'float32');
    const j = newVar(4);
    const k: LoopKernel = {
      kind: 'loop', label: 'add', vars: [j],
      stores: [{ buf: 9, index: ivar(j), value: Array.from({ length: 9 }, (_, q) => b.load(q, ivar(j))).reduce((x, y) => b.op('add', x, y)), dtype: 'float32' }],
    };
    const dtypes = new Array<DType>(10).fill('float32');
    const sizes = new Array<number>(10).fill(4);
    const p: Program = { buffers: dtypes.map((dtype, id) => ({ id, dtype, size: sizes[id]!, role: 'scratch' })), steps: [k], targets: [] };
    const c = chooseWebStrategies(p, 8)[0]!;
    if (c.kind !== 'loop' || c.plan.pack === undefined) throw new Error(`not a packed device loop: ${JSON.stringify(c)}`);
    const w = packKernel(renderLoop(k, c.plan, info(dtypes, sizes, Number.POSITIVE_INFINITY)), c.plan.pack);
    expect(w.binds).to.deep.equal([3, 4, 5, 6, 7, 8, 9]);
    const decl = w.code.split('\n').filter((l) => l.startsWith('@group(0)'));
    expect(decl.map((l) => /@binding\((\d+)\)/.exec(l)![1])).to.deep.equal(['0', '1', '2', '3', '4', '5', '6', '7']);
    expect(decl[7]).to.equal('@group(0) @binding(7) var<storage, read> pk: array<f32>;');
    expect(w.code).not.to.match(/\bb[012]\[/);
    expect(w.code).to.match(/pk\[0i \+ /).and.to.match(/pk\[4i \+ /).and.to.match(/pk\[8i \+ /).and.to.match(/\bb3\[/);
  });
});
