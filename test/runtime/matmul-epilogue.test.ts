// A float32 matmul with a fused epilogue rounds its sum to float32 before the epilogue, as the
// reference interpreter does (dot then add are two float32 ops), so with float64 sums (matmul
// precision "float64") results agree bit for bit. (Float32 sums: test/codegen/matmul-f32.test.ts.)
import { expect } from 'chai';
import { backend as K, NDArray } from '../../src/index.js';
import { setEnvironment } from '../../src/api/config.js';

describe('matmul epilogue rounding', () => {
  beforeEach(() => setEnvironment({ THEANINE_MATMUL_PRECISION: 'float64' }));
  afterEach(() => setEnvironment({ THEANINE_MATMUL_PRECISION: undefined }));

  it('fused dot + bias + relu in float32 equals the reference bit for bit (matmul precision "float64")', () => {
    const x = K.placeholder([16, 33]);
    const w = Array.from({ length: 33 }, (_, i) => Array.from({ length: 40 }, (_, j) => Math.sin(i * 40 + j) * 0.37));
    const W = K.variable(NDArray.from(w, 'float32'));
    const b = K.variable(Array.from({ length: 40 }, (_, j) => Math.cos(j) * 0.1));
    const y = K.relu(K.bias_add(K.dot(x, W), b));
    const X = Array.from({ length: 16 }, (_, i) => Array.from({ length: 33 }, (_, j) => Math.cos(i * 33 + j) * 1.3));
    const fast = K.function([x], [y])([X])[0]!;
    const ref = K.function([x], [y], [], { optimizer: 'none' })([X])[0]!;
    expect(Array.from(fast.data)).to.deep.equal(Array.from(ref.data));
  });
});
