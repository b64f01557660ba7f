// The WebGPU strategy's workgroup-size hook (src/codegen/wgsl/strategy.ts WorkgroupChooser): a
// size a chooser gives reaches the shader and its dispatch, elementwise kernels compute the same
// values under every size, a row's folds the same within float32 rounding, and a size the
// renderers do not take is an error naming the kernel.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import { setWorkgroupChooser, WORKGROUP_SIZES, type WorkgroupChooser } from '../../src/codegen/wgsl/strategy.js';
import { expectClose } from '../helpers/assert.js';
import { onWebgpu } from '../helpers/webgpu.js';

describe('gpu device, webgpu mode: the workgroup-size hook', function () {
  this.timeout(300_000);
  onWebgpu();
  afterEach(() => { setWorkgroupChooser(undefined); K.clear_session(); });

  const x = K.placeholder([37, 300]);
  const X = NDArray.from(Array.from({ length: 37 * 300 }, (_, i) => Math.sin(i * 0.7) * 2), 'float32').reshape([37, 300]);
  const chain = K.tanh(x).mul(2).sub(K.exp(x.neg())); // one invocation per element
  const rows = K.softmax(x); // one workgroup per row
  const run = () => {
    K.clear_session(); // the device's programs are cached by graph: built again, the chooser is asked
    const f = K.function([x], [chain, rows], [], { device: 'gpu' });
    return { f, got: f([X]) };
  };

  it('a chosen size reaches the shaders; elementwise values are the same, row folds within rounding', () => {
    const base = run();
    expect(base.f.device).to.equal('gpu:webgpu');
    for (const wg of [32, 256]) {
      const asked: (number | undefined)[] = [];
      const chooser: WorkgroupChooser = { loop: (_k, plan) => { asked.push(plan.rows); return wg; } };
      setWorkgroupChooser(chooser);
      const { f, got } = run();
      const src = f.source();
      expect(asked.length, 'asked once per loop kernel').to.be.greaterThan(1);
      expect(asked.some((r) => r === undefined) && asked.some((r) => r !== undefined), 'both forms asked').to.equal(true);
      expect(src).to.include(`@workgroup_size(${wg})`).and.to.include(`var<workgroup> red: array<f32, ${wg}>`);
      expect(src).to.not.include('@workgroup_size(64)\n');
      expect(Array.from(got[0]!.data), `elementwise, ${wg}`).to.deep.equal(Array.from(base.got[0]!.data));
      expectClose(got[1]!, base.got[1]!, { atol: 1e-6, rtol: 1e-5 }, `softmax rows, ${wg}`);
    }
  });

  it('a size the renderers do not take is an error naming the kernel and the sizes allowed', () => {
    setWorkgroupChooser({ loop: () => 48 });
    expect(() => run()).to.throw(new RegExp(`the workgroup chooser gave 48 invocations for kernel .*; allowed: ${WORKGROUP_SIZES.join(', ')}`));
  });
});
