// The WGSL renderer (src/codegen/wgsl) on hand-built kernels: what it spells and what it refuses,
// without a device (test/runtime/webgpu.test.ts runs its kernels on an adapter).
import { expect } from 'chai';
import { ExprBuilder } from '../../src/codegen/kernel/expr.js';
import { iadd, iscale, ivar, newVar } from '../../src/codegen/kernel/index-expr.js';
import type { LoopKernel, MatmulKernel, Program, Step } from '../../src/codegen/kernel/ir.js';
import type { DType } from '../../src/ir/dtype.js';
import { renderLoop, renderMatmul, type BufferInfo } from '../../src/codegen/wgsl/render.js';
import { chooseWebStrategies, simdAdapter, type WebStrategy } from '../../src/codegen/wgsl/strategy.js';
import { f32Literal, helperSources, storageOf } from '../../src/codegen/wgsl/scalar.js';

function info(dtypes: DType[], sizes: number[]): BufferInfo {
  return { dtype: (b) => dtypes[b]!, size: (b) => sizes[b]!, storage: (b) => storageOf(dtypes[b]!) };
}

/** The strategy (codegen step 4) of a one-step program over buffers of these dtypes and sizes (`simd`: on a CPU-emulated adapter). */
function choose(k: Step, dtypes: DType[], sizes: number[], simd = false): WebStrategy {
  const p: Program = { buffers: dtypes.map((dtype, id) => ({ id, dtype, size: sizes[id]!, role: 'scratch' })), steps: [k], targets: [] };
  return chooseWebStrategies(p, 8, simd)[0]!;
}

/** A loop kernel the strategy puts on the device, rendered. */
function render(k: LoopKernel, dtypes: DType[], sizes: number[], simd = false) {
  const c = choose(k, dtypes, sizes, simd);
  if (c.kind !== 'loop') throw new Error(`not a device loop: ${JSON.stringify(c)}`);
  return renderLoop(k, c.plan, info(dtypes, sizes));
}

/** softmax's first kernel over `rows` rows of 300: the row's max, then exp(x - max) of each element. */
function softmaxHead(rows: number): LoopKernel {
  const b = new ExprBuilder(() => 'float32');
  const i = newVar(rows), j = newVar(300), jr = newVar(300);
  const mx = b.reduce('max', [jr], b.load(0, iadd(iscale(ivar(i), 300), ivar(jr))));
  const value = b.op('exp', b.op('sub', b.load(0, iadd(iscale(ivar(i), 300), ivar(j))), mx));
  return { kind: 'loop', label: 'max,sub,exp', vars: [i, j], stores: [{ buf: 1, index: iadd(iscale(ivar(i), 300), ivar(j)), value, dtype: 'float32' }] };
}

describe('WGSL renderer', () => {
  it('spells literals: f32 with a suffix, infinities and NaN through their bits', () => {
    expect(f32Literal(2)).to.equal('2.0f');
    expect(f32Literal(-0)).to.equal('-0.0f');
    expect(f32Literal(0.1)).to.equal(`${Math.fround(0.1)}f`);
    expect(f32Literal(-Infinity)).to.equal('t_bits(0xff800000u)');
    expect(f32Literal(1e300)).to.equal('t_bits(0x7f800000u)');
    expect(f32Literal(NaN)).to.equal('t_bits(0x7fc00000u)');
  });

  it('includes each helper a body calls, after the helpers it calls', () => {
    const hs = helperSources('let y = t_tanh(x) + t_softplus(x);');
    const at = (n: string) => hs.findIndex((h) => h.startsWith(`fn ${n}(`));
    expect(at('t_expm1')).to.be.within(0, at('t_tanh'));
    expect(at('t_log1p')).to.be.within(0, at('t_softplus'));
  });

  it('renders a fused row reduction as one invocation per row, its stores typed by dtype', () => {
    const b = new ExprBuilder((buf) => (['float32', 'float32', 'int32'] as DType[])[buf]!);
    const i = newVar(5), j = newVar(7);
    const x = b.load(0, iadd(iscale(ivar(i), 7), ivar(j)));
    const sum = b.reduce('sum', [j], b.op('tanh', x));
    const k: LoopKernel = {
      kind: 'loop', label: 'tanh,sum', vars: [i],
      stores: [{ buf: 1, index: ivar(i), value: b.cast('float32', sum), dtype: 'float32' }, { buf: 2, index: ivar(i), value: b.cast('int32', sum), dtype: 'int32' }],
    };
    const w = render(k, ['float32', 'float32', 'int32'], [35, 5, 5]);
    expect(w.binds).to.deep.equal([0, 1, 2]);
    expect(w.writes).to.have.members([1, 2]);
    expect(w.groups).to.deep.equal([1, 1, 1]);
    expect(w.code).to.match(/var<storage, read> b0: array<f32>/).and.match(/var<storage, read_write> b2: array<i32>/);
    expect(w.code).to.match(/for \(var i\d+ = 0i; i\d+ < 7i; i\d+\+\+\)/);
    expect(w.code).to.match(/fn t_tanh\(/).and.match(/= i32\(t_int\(/);
  });

  it('folds rows in workgroup memory, or on a CPU-emulated adapter with rows enough, one row per invocation without barriers', () => {
    const sizes = (rows: number) => [rows * 300, rows * 300];
    const tree = render(softmaxHead(100), ['float32', 'float32'], sizes(100));
    expect(tree.groups).to.deep.equal([100, 1, 1]);
    expect(tree.code).to.match(/var<workgroup> red: array<f32, 64>/).and.match(/workgroupBarrier\(\)/).and.match(/for \(var q = lane; q < 300i; q \+= 64i\)/);
    const lanes = render(softmaxHead(100), ['float32', 'float32'], sizes(100), true);
    expect(lanes.groups).to.deep.equal([13, 1, 1]); // 8 rows a workgroup
    expect(lanes.code).to.match(/@workgroup_size\(8\)/).and.match(/if \(row >= 100i\) \{ return; \}/).and.not.match(/workgroupBarrier|var<workgroup>/);
    expect(lanes.code).to.match(/for \(var q = 0i; q < 300i; q \+= 1i\)/).and.match(/for \(var e = 0i; e < 300i; e \+= 1i\)/);
    // Few rows: a workgroup per row keeps the adapter's threads busy.
    expect(render(softmaxHead(40), ['float32', 'float32'], sizes(40), true).code).to.match(/workgroupBarrier\(\)/);
  });

  it('knows adapters that run invocations as SIMD lanes on CPU threads by their description', () => {
    expect(simdAdapter('mesa software llvmpipe-llvm-15-0-6-256-bits- llvmpipe: Mesa 25.0.7 (LLVM 15.0.6) 0.0.1')).to.equal(true);
    expect(simdAdapter('google swiftshader Subzero')).to.equal(true);
    expect(simdAdapter('nvidia hopper NVIDIA H100 80GB HBM3')).to.equal(false);
  });

  it('splits large dispatches over y; the strategy says what runs on the host and why', () => {
    const b = new ExprBuilder(() => 'float32');
    const i = newVar(70000 * 64);
    const big: LoopKernel = { kind: 'loop', label: 'neg', vars: [i], stores: [{ buf: 1, index: ivar(i), value: b.op('neg', b.load(0, ivar(i))), dtype: 'float32' }] };
    expect(render(big, ['float32', 'float32'], [70000 * 64, 70000 * 64]).groups).to.deep.equal([65535, 2, 1]);
    const scatter: LoopKernel = { ...big, stores: [{ ...big.stores[0]!, accumulate: true }] };
    // (an accumulation is ordered: the steps form, wgsl-steps.test.ts, checks kernels up to a size)
    expect(choose(scatter, ['float32', 'float32'], [1, 1])).to.deep.equal({ where: 'host', kind: 'host', why: 'a recursion along an axis of 4480000 elements (beyond what is checked for the steps form)' });
    const f64: LoopKernel = { ...big, stores: [{ ...big.stores[0]!, dtype: 'int64' }] };
    expect(choose(f64, ['float32', 'int64'], [1, 1])).to.deep.equal({ where: 'host', kind: 'host', why: 'stores int64' });
    const empty: LoopKernel = { ...big, vars: [newVar(0)] };
    expect(choose(empty, ['float32', 'float32'], [0, 0])).to.deep.equal({ where: 'device', kind: 'empty' });
    // ten buffers in one shader, where the device binds at most eight
    const j = newVar(4);
    const wide: LoopKernel = {
      kind: 'loop', label: 'add', vars: [j],
      stores: [{ buf: 9, index: ivar(j), value: Array.from({ length: 9 }, (_, k) => b.load(k, ivar(j))).reduce((x, y) => b.op('add', x, y)), dtype: 'float32' }],
    };
    // (three of its read-only buffers packed into one binding: wgsl-pack.test.ts)
    const packed = choose(wide, new Array<DType>(10).fill('float32'), new Array<number>(10).fill(4));
    expect(packed.kind === 'loop' && packed.plan.pack?.parts.map((p) => p.buf)).to.deep.equal([0, 1, 2]);
    // nine stores and one read: too few read-only buffers to pack
    const stores: LoopKernel = { ...wide, stores: Array.from({ length: 9 }, (_, k) => ({ buf: k + 1, index: ivar(j), value: b.load(0, ivar(j)), dtype: 'float32' as const })) };
    expect(choose(stores, new Array<DType>(10).fill('float32'), new Array<number>(10).fill(4))).to.deep.equal({
      where: 'host', kind: 'host', why: 'binds 10 buffers (a shader binds at most 8 on this device, and too few of them are read-only of one type to pack)',
    });
  });

  it('renders a product as workgroup tiles on a GPU and as register tiles read from memory on a CPU-emulated adapter, its operands read through their index expressions', () => {
    const b = new ExprBuilder(() => 'float32');
    const [bt, m, n, kk] = [newVar(1), newVar(10), newVar(6), newVar(20)];
    // A transposed (read as A^T's rows), B plain; the epilogue adds a bias per column.
    const mm: MatmulKernel = {
      kind: 'matmul', label: 'dot,add', batch: bt, m, n, k: kk,
      a: b.load(0, iadd(iscale(ivar(kk), 10), ivar(m))),
      b: b.load(1, iadd(iscale(ivar(kk), 6), ivar(n))),
      out: { buf: 3, index: iadd(iscale(ivar(m), 6), ivar(n)), value: b.op('add', b.acc(), b.load(2, ivar(n))), dtype: 'float32' },
      packA: 4, packB: 5, mr: 4, nr: 4, sum: 'float32',
    };
    const dtypes: DType[] = ['float32', 'float32', 'float32', 'float32'];
    const sizes = [200, 120, 6, 60];
    expect(choose(mm, dtypes, sizes)).to.deep.equal({ where: 'device', kind: 'matmul', form: 'tiles' });
    expect(choose(mm, dtypes, sizes, true)).to.deep.equal({ where: 'device', kind: 'matmul', form: 'lanes' });
    // A GPU: 64 x 64 workgroup tiles staged in workgroup memory.
    const tiles = renderMatmul(mm, info(dtypes, sizes), 'tiles');
    expect(tiles.groups).to.deep.equal([1, 1, 1]);
    expect(tiles.code).to.match(/var<workgroup> tA: array<array<f32, 16>, 64>/).and.match(/workgroupBarrier\(\)/);
    // A CPU-emulated adapter: 8 rows per workgroup (2 blocks of the 10), one column per invocation (the 6 in one block of 8 lanes).
    const lanes = renderMatmul(mm, info(dtypes, sizes), 'lanes');
    expect(lanes.groups).to.deep.equal([2, 1, 1]);
    expect(lanes.code).to.match(/@workgroup_size\(8\)/).and.match(/var c7_0 = 0\.0;/).and.not.match(/var c0_1/).and.not.match(/workgroupBarrier/);
    for (const w of [tiles, lanes]) expect(w.code).to.match(/fn opA\(/).and.match(/fn epilogue\(/);
  });
});
