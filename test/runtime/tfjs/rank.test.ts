// Issue 14 item 2: tfjs-backend-wasm's XNNPack takes at most 6 dims and, beyond that, printed a
// status line and returned an unwritten buffer as the result. Ops are lowered so tfjs never sees
// such a rank, and any status the backend reports is an error naming the op.
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { backend as K, NDArray } from '../../../src/index.js';
import type { Node } from '../../../src/ir/node.js';
import { takeBackendErrors, tfjsRuntime, watchBackendErrors } from '../../../src/runtime/tfjs/load.js';
import { expectClose } from '../../helpers/assert.js';
import { needs } from '../../helpers/needs.js';
import { tfKernels } from '../../../src/runtime/tfjs/kernels/index.js';
import type { TfKernel } from '../../../src/runtime/tfjs/types.js';

const ramp = (shape: number[]) => new NDArray(Float32Array.from({ length: shape.reduce((a, d) => a * d, 1) }, (_, i) => Math.sin(i) * 3), shape);

/** The tensorflow backend agrees with the reference interpreter, element for element. */
function agrees(inputs: Node[], outputs: Node[], feed: NDArray[]): void {
  const want = K.function(inputs, outputs, [], { optimizer: 'none' })(feed);
  const got = K.function(inputs, outputs, [], { backend: 'tensorflow' })(feed);
  got.forEach((g, i) => expectClose(g, want[i]!, { atol: 1e-5, rtol: 1e-5 }));
}

describe('runtime/tfjs: ranks the wasm backend cannot take', () => {
  it('K.tile on a rank-4 (NHWC) tensor and on a rank-7 one', () => {
    const y = K.placeholder([2, 3, 4, 1]);
    agrees([y], [K.tile(y, [2, 2, 2, 2])], [ramp([2, 3, 4, 1])]);
    const z = K.placeholder([2, 1, 2, 1, 2, 1, 2]);
    agrees([z], [K.tile(z, [1, 2, 1, 3, 1, 2, 1])], [ramp([2, 1, 2, 1, 2, 1, 2])]);
  });

  it('K.repeat_elements on rank 6 and 7, each axis', () => {
    const shape = [2, 1, 3, 1, 2, 3];
    const w = K.placeholder(shape);
    agrees([w], shape.map((_, ax) => K.repeat_elements(w, 2, ax)), [ramp(shape)]);
    const v = K.placeholder([2, 2, 1, 2, 1, 2, 2]);
    agrees([v], [K.repeat_elements(v, 3, 3), K.repeat_elements(v, 2, -1)], [ramp([2, 2, 1, 2, 1, 2, 2])]);
  });

  it('elementwise ops with broadcasting on rank 7 and 8 tensors', () => {
    const a = K.placeholder([2, 1, 2, 3, 1, 2, 2]);
    const b = K.placeholder([2, 3, 1, 2, 1]);
    const c = K.placeholder([2, 2, 1, 1, 2, 2, 1, 2]);
    agrees([a, b, c], [
      K.add(a, b), K.multiply(K.exp(a), b), K.maximum(a, b), K.greater(a, b), K.switch(K.greater(a, 0), a, b),
      K.subtract(c, K.sum(c, 0, true)), K.pow(K.abs(c), 2),
    ], [ramp([2, 1, 2, 3, 1, 2, 2]), ramp([2, 3, 1, 2, 1]), ramp([2, 2, 1, 1, 2, 2, 1, 2])]);
  });

  it('operands that alternate broadcast and full axes more than 6 times are refused, naming the op', () => {
    const a = K.placeholder([2, 1, 2, 1, 2, 1, 2]);
    const b = K.placeholder([1, 2, 1, 2, 1, 2, 1]);
    const f = K.function([a, b], [K.add(a, b)], [], { backend: 'tensorflow' });
    expect(() => f([ramp([2, 1, 2, 1, 2, 1, 2]), ramp([1, 2, 1, 2, 1, 2, 1])])).to.throw(/^add: TensorFlow.js \(wasm\) broadcasts at most 6 dims.*use the theanine backend/);
  });

  it('a status the wasm backend reports while an op runs is that op\'s error, not its result', function () {
    const rt = tfjsRuntime();
    needs(this, 'the wasm backend\'s status lines', rt.flavour === 'wasm' ? undefined : `TensorFlow.js runs the ${rt.flavour} backend here, not wasm`);
    const tf = rt.tf;
    // a real XNNPack failure: a broadcasting add of rank 7, called directly (theanine never does)
    const raw = watchBackendErrors(() => rt.withBackend(() => tf.tidy(() => tf.add(tf.ones([2, 1, 2, 1, 2, 1, 2]), tf.ones([1, 2, 1, 2, 1, 2, 1])).dataSync())));
    expect(raw.length).to.equal(128);
    expect(takeBackendErrors().join('\n')).to.match(/XNN status/);
    // the same failure from inside an op's kernel makes the call fail
    const table = tfKernels as unknown as Record<string, TfKernel<unknown>>;
    const exp = table['exp']!;
    const x = K.placeholder([3]);
    const f = K.function([x], [K.exp(x)], [], { backend: 'tensorflow' });
    try {
      table['exp'] = (ins, attrs, ctx) => {
        tf.add(tf.ones([2, 1, 2, 1, 2, 1, 2]), tf.ones([1, 2, 1, 2, 1, 2, 1]));
        return exp(ins, attrs, ctx);
      };
      expect(() => f([ramp([3])])).to.throw(/^exp: TensorFlow.js reported an error while computing it \(XNN status.*not a result/);
    } finally {
      table['exp'] = exp;
    }
    expect(Array.from(f([ramp([3])])[0]!.data)).to.have.length(3);
  });

  it('a wasm backend TensorFlow.js started itself (before theanine) reports its statuses as errors too', function () {
    this.timeout(120000);
    const rt = tfjsRuntime();
    needs(this, 'the wasm backend\'s status lines', rt.flavour === 'wasm' ? undefined : `TensorFlow.js runs the ${rt.flavour} backend here, not wasm`);
    // A fresh process: which module built the wasm backend is decided once per process.
    const out = execFileSync(process.execPath, ['--import', 'tsx', 'fixtures/foreign-wasm.ts'], {
      cwd: path.dirname(fileURLToPath(import.meta.url)), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(out).to.match(/^flavour wasm: exp: TensorFlow.js reported an error while computing it \(XNN status.*not a result/m);
  });
});
