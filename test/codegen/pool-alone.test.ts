// Poolings the WebAssembly pool tier takes stay kernels of their own on the cpu target
// (FusionTarget.alone, src/codegen/cpu/wasm/pool.ts poolAlone): a convolution's bias and relu go to
// its epilogue instead of into the pooling's loop, and the pooling runs in the tier.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import { fuseGraph } from '../../src/passes/fusion.js';
import { classify, matmulPrologue, shapeOnly } from '../../src/codegen/lower/templates.js';
import { poolAlone } from '../../src/codegen/cpu/wasm/pool.js';
import { clearCompileCache } from '../../src/runtime/cpu/compile.js';
import type { Node } from '../../src/ir/node.js';

const fill = (shape: number[], k: number) => new NDArray(Float32Array.from({ length: shape.reduce((p, d) => p * d, 1) }, (_, i) => Math.sin(i * 0.37 + k)), shape, 'float32');

function net(channels: number) {
  const x = K.placeholder([8, 12, 12, 2], null, 'float32');
  const w = K.variable(fill([3, 3, 2, channels], 1));
  const b = K.variable(fill([channels], 2));
  return { x, y: K.pool2d(K.relu(K.bias_add(K.conv2d(x, w, [1, 1], 'valid'), b)), [2, 2], [2, 2], 'valid', null, 'max') };
}

describe('poolings kept alone for the WebAssembly pool tier', () => {
  afterEach(() => clearCompileCache());

  it('the fusion pass leaves bias and relu out of a pooling the target keeps alone, and keeps them in otherwise', () => {
    const { y } = net(16);
    const fusedOps = (alone: ((n: Node) => boolean) | undefined) => {
      const g = fuseGraph({ outputs: [y] }, { classify, shapeOnly, matmulPrologue, ...(alone !== undefined ? { alone } : {}) });
      const root = g.outputs[0]!;
      return root.op === 'fused' ? (root.attrs as unknown as { body: { ops(): string[] } }).body.ops() : [root.op];
    };
    // relu is where(x <= 0, 0, x) by now
    expect(fusedOps(undefined)).to.include.members(['pool', 'where']);
    expect(fusedOps(poolAlone)).to.deep.equal(['pool']);
  });

  it('poolAlone: float32 poolings of a multiple of 4 channels only', () => {
    expect(poolAlone(net(16).y)).to.equal(true);
    expect(poolAlone(net(6).y)).to.equal(false);
    expect(poolAlone(K.relu(net(16).y))).to.equal(false);
  });

  it('a conv + bias + relu + max pool: the pooling in the tier, relu in the convolution epilogue, the reference numbers', () => {
    const { x, y } = net(16);
    const xs = [fill([8, 12, 12, 2], 3)];
    const f = K.function([x], [y]);
    const src = (f as unknown as { source(): string }).source();
    expect(src).to.match(/WebAssembly SIMD: pool/);
    expect(src).to.match(/SIMD f32x4[^\n]*conv[^\n]*where epilogue/);
    const got = f(xs)[0]!.data as Float32Array;
    const ref = K.function([x], [y], [], { optimizer: 'none' })(xs)[0]!.data as Float32Array;
    // float32 sums of 18 products against the reference's float64 ones, rounded once: a few ulps
    for (let i = 0; i < ref.length; i++) expect(Math.abs(got[i]! - ref[i]!), `element ${i}`).to.be.at.most(1e-5 * Math.max(1, Math.abs(ref[i]!)));
  });
});
