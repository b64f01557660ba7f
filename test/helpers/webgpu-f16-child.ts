// Run as a process of its own (webgpu-f16.test.ts, under THEANINE_WEBGPU_F16=0): the float16 cases
// on gpu:webgpu, printed as JSON with whether the device stores float16 as f16.
import { webgpu } from '../../src/runtime/gpu/webgpu/session.js';
import { f16Cases } from './webgpu-f16-cases.js';

process.env['THEANINE_GPU_MODE'] = 'webgpu';
const cases = f16Cases('gpu');
console.log(JSON.stringify({ f16: webgpu().f16, cases }));
process.exit(0);
