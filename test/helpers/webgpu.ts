// The suites that run on the gpu device's webgpu mode: skip visibly without an adapter (a failure
// under THEANINE_TEST_NO_SKIP=1), set THEANINE_GPU_MODE=webgpu for the suite, and put it back after.
import { backend as K } from '../../src/index.js';
import { webgpuMissing } from '../../src/runtime/gpu/webgpu/session.js';
import { needs } from './needs.js';

/** Call inside a `describe`: its tests run with THEANINE_GPU_MODE=webgpu. */
export function onWebgpu(): void {
  let saved: string | undefined;
  before(function () {
    needs(this, 'the gpu device\'s webgpu mode', webgpuMissing());
    saved = process.env['THEANINE_GPU_MODE'];
    process.env['THEANINE_GPU_MODE'] = 'webgpu';
  });
  after(() => {
    if (saved === undefined) delete process.env['THEANINE_GPU_MODE'];
    else process.env['THEANINE_GPU_MODE'] = saved;
    K.clear_session();
  });
}
