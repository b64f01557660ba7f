// The steps form of WGSL loop kernels (src/codegen/wgsl/steps.ts) on hand-built kernels, without a
// device: which loop it walks in order, what it refuses (the step then runs on the host, with the
// reason), and what it spells (test/runtime/webgpu-ctc.test.ts runs CTC's kernels on an adapter).
import { expect } from 'chai';
import { ExprBuilder } from '../../src/codegen/kernel/expr.js';
import { iadd, iclamp, iconst, imod, iscale, ivar, newVar, ravel } from '../../src/codegen/kernel/index-expr.js';
import type { LoopKernel, Program } from '../../src/codegen/kernel/ir.js';
import { planSteps } from '../../src/codegen/wgsl/steps.js';
import { chooseWebStrategies, type WebStrategy } from '../../src/codegen/wgsl/strategy.js';
import { renderLoop } from '../../src/codegen/wgsl/render.js';
import { storageOf } from '../../src/codegen/wgsl/scalar.js';

const fail = (why: string) => new Error(why);
const b = new ExprBuilder(() => 'float32');

/** buf 1 [T, N] = buf 0 [t, n] + buf 1 at (t + dt, n + dn) (a recursion reading the element that offset away). */
function recursion(T: number, N: number, dt: number, dn: number): LoopKernel {
  const [vt, vn] = [newVar(T), newVar(N)];
  const [it, iN] = [ivar(vt), ivar(vn)];
  const read = ravel([imod(iadd(it, iconst(T + dt)), T), imod(iadd(iN, iconst(N + dn)), N)], [T, N]);
  const value = b.op('add', b.load(0, ravel([it, iN], [T, N])), b.load(1, read));
  return { kind: 'loop', label: 'rec', vars: [vt, vn], stores: [{ buf: 1, index: ravel([it, iN], [T, N]), value, dtype: 'float32' }] };
}

const size = (T: number, N: number) => () => T * N;

function choose(k: LoopKernel, sizes: number[]): WebStrategy {
  const p: Program = { buffers: sizes.map((s, id) => ({ id, dtype: 'float32', size: s, role: 'scratch' })), steps: [k], targets: [] };
  return chooseWebStrategies(p, 8)[0]!;
}

describe('WGSL steps form', () => {
  it('walks the loop the recursion runs along, the other loop in parallel', () => {
    // each row reads the row before: rows in order, a row's elements in parallel
    expect(planSteps(recursion(6, 5, -1, 0), size(6, 5), fail).axis).to.equal(0);
    // each element reads the one before it in its row: columns in order, rows in parallel
    expect(planSteps(recursion(6, 5, 0, -1), size(6, 5), fail).axis).to.equal(1);
    // the row before, one column on: rows in order (the last column reads the first, a row before)
    expect(planSteps(recursion(6, 5, -1, 1), size(6, 5), fail).axis).to.equal(0);
    // an element reading itself (the value before the kernel, in row-major order) is refused: its step stores it
    expect(() => planSteps(recursion(6, 5, 0, 0), size(6, 5), fail)).to.throw(/reads a value stored in the same step/);
  });

  it('refuses what no order of one loop reproduces, naming why', () => {
    // element (t, n) reads (t - 1, n + 1) and (t, n - 1) cannot both come earlier: build a kernel reading both
    const [vt, vn] = [newVar(4), newVar(4)];
    const [it, iN] = [ivar(vt), ivar(vn)];
    const prevRow = ravel([imod(iadd(it, iconst(3)), 4), iclamp(iadd(iN, iconst(1)), 0, 3)], [4, 4]);
    const prevCol = ravel([it, iclamp(iadd(iN, iconst(-1)), 0, 3)], [4, 4]);
    const k: LoopKernel = {
      kind: 'loop', label: 'wave', vars: [vt, vn],
      stores: [{ buf: 1, index: ravel([it, iN], [4, 4]), value: b.op('add', b.load(1, prevRow), b.load(1, prevCol)), dtype: 'float32' }],
    };
    expect(() => planSteps(k, () => 16, fail)).to.throw(/a running value along an axis that no loop orders \(loop 0 reads a value stored in the same step\)/);
    const c = choose(k, [16, 16]);
    expect(c.kind).to.equal('host');
    expect(c.kind === 'host' && c.why).to.match(/no loop orders/);
  });

  it('an accumulation into rows chosen by data: parallel over the rows it owns, its data row clamped to the row', () => {
    // acc[r, idx[r, s]] += x[r, s]: rows r in parallel, s in order (the reference's order)
    const [vr, vs] = [newVar(3), newVar(7)];
    const [ir, is] = [ivar(vr), ivar(vs)];
    const k: LoopKernel = {
      kind: 'loop', label: 'acc', vars: [vr, vs],
      stores: [{ buf: 2, index: iscale(ir, 5), dyn: { row: b.load(1, ravel([ir, is], [3, 7])), stride: 1 }, accumulate: true, value: b.load(0, ravel([ir, is], [3, 7])), dtype: 'float32' }],
    };
    const plan = planSteps(k, (buf) => [21, 21, 15][buf]!, fail);
    expect(plan.axis).to.equal(1);
    expect([...plan.windows.values()]).to.deep.equal([5]);
    const c = choose(k, [21, 21, 15]);
    if (c.kind !== 'loop') throw new Error(`not a device loop: ${JSON.stringify(c)}`);
    const info = { dtype: () => 'float32' as const, size: (x: number) => [21, 21, 15][x]!, storage: () => storageOf('float32') };
    const w = renderLoop(k, c.plan, info);
    expect(w.groups).to.deep.equal([1, 1, 1]);
    expect(w.code).to.match(/for \(var step = 0i; step < 7i; step\+\+\)/).and.to.match(/storageBarrier\(\);/).and.to.match(/clamp\(i32\([^)]*\), 0i, 4i\)/);
    // one window for every row: no order of a loop keeps rows apart
    const shared: LoopKernel = { ...k, stores: [{ ...k.stores[0]!, index: iconst(0) }] };
    expect(() => planSteps(shared, () => 15, fail)).to.throw(/no loop orders/);
  });
});
