// The gpu device's webgpu mode in a real browser: Debian's Chromium driven by playwright-core
// loads the browser bundle, the page chooses the mode (setEnvironment({ THEANINE_GPU_MODE:
// 'webgpu' })), and theanine drives navigator.gpu on the page's own thread. Every call is `await
// f.callAsync(...)`; a synchronous call is an error naming callAsync. Checked: f.device, the op
// families of the WGSL renderer against the reference interpreter run in Node (the Node webgpu
// tables' tolerances), and a training step's uploads, read-backs and command buffers.
// Chromium's flags: `--enable-unsafe-webgpu` alone gives navigator.gpu an adapter here (Chromium
// 156 on Debian 12, no GPU: Dawn on SwiftShader's Vulkan, adapter "google swiftshader"; neither
// `--enable-features=Vulkan` nor `--use-angle=swiftshader` is needed), and WebGPU needs a secure
// context, so the page is served at http://localhost (a potentially trustworthy origin) by
// playwright's router, not at a made-up host. Skips visibly without Chromium (CI: a failure).
import { expect } from 'chai';
import { chromium, type Browser, type Page } from 'playwright-core';
import { backend as K } from '../../src/index.js';
import { findChromium, CHROMIUM_MISSING } from '../../scripts/chromium.js';
import { needs } from '../helpers/needs.js';
import { bundleForBrowser } from '../helpers/bundle.js';
import { expectClose } from '../helpers/assert.js';
import { runProgram, type Counts, type ProgramResult } from './fixtures/program.js';
import { WEBGPU_CASES, runCase, type CaseResult } from './fixtures/webgpu-cases.js';

const ENTRY = `
import { backend as K, setEnvironment } from 'theanine';
import { webgpuCountsAsync } from './src/runtime/gpu/webgpu/session.ts';
import { runProgramAsync } from './test/browser/fixtures/program.ts';
import { WEBGPU_CASES, runCaseAsync } from './test/browser/fixtures/webgpu-cases.ts';
// No environment variables in a page: the page chooses the webgpu mode.
setEnvironment({ THEANINE_GPU_MODE: 'webgpu' });
const caught = (fn) => async (...a) => { try { return await fn(...a); } catch (e) { return { error: String(e && e.stack || e) }; } };
const message = (fn) => { try { fn(); return 'no error'; } catch (e) { return String(e && e.message || e); } };
globalThis.theanineWebgpu = {
  adapter: caught(async () => { const a = await navigator.gpu.requestAdapter(); return a === null ? 'none' : [a.info.vendor, a.info.architecture].join(' '); }),
  program: caught(() => runProgramAsync(K, 'gpu', webgpuCountsAsync)),
  runCase: caught((name) => runCaseAsync(K, WEBGPU_CASES.find((c) => c.name === name), { device: 'gpu', fallback: 'error' })),
  debugLines: caught(async () => {
    const lines = [];
    const warn = console.warn;
    console.warn = (...a) => { lines.push(a.join(' ')); };
    try {
      setEnvironment({ THEANINE_DEBUG: 'gpu' });
      const x = K.placeholder([3]);
      await K.function([x], [K.exp(x)], [], { device: 'gpu' }).callAsync([[1, 2, 3]]);
    } finally {
      setEnvironment({ THEANINE_DEBUG: undefined });
      console.warn = warn;
    }
    return lines;
  }),
  syncErrors: caught(async () => {
    const x = K.placeholder([2, 3]);
    const W = K.variable(K.ones([3, 2]), 'float32', 'W');
    const f = K.function([x], [K.sum(K.dot(x, W))], [K.update_sub(W, K.ones([3, 2]))], { device: 'gpu' });
    const v = [[1, 2, 3], [4, 5, 6]];
    const call = message(() => f([v]));
    const [out] = await f.callAsync([v]);
    const getValue = message(() => K.get_value(W));
    const after = Array.from((await K.get_value_async(W)).data);
    return { device: f.device, call, out: out.item(), getValue, after, getValueThen: Array.from(K.get_value(W).data) };
  }),
};
`;

const ORIGIN = 'http://localhost';

/** The Node webgpu tables' float32 tolerance (test/helpers/targets.ts, gpu:webgpu; test/runtime/webgpu.test.ts). */
const TABLE_TOL = { atol: 2e-5, rtol: 1e-4 };

describe('in Chromium: the gpu device\'s webgpu mode on navigator.gpu, with callAsync', function () {
  // SwiftShader compiles each shader on the CPU
  this.timeout(300_000);
  let browser: Browser | undefined;
  let page: Page;
  const console: string[] = [];

  before(async function () {
    const bin = findChromium();
    needs(this, 'running the webgpu mode in Chromium', bin === undefined ? CHROMIUM_MISSING : undefined);
    const bundleText = (await bundleForBrowser(ENTRY)).text;
    browser = await chromium.launch({ executablePath: bin!, args: ['--no-sandbox', '--enable-unsafe-webgpu', '--disable-background-networking'] });
    page = await browser.newPage();
    page.on('console', (m) => console.push(`${m.type()}: ${m.text()}`));
    page.on('pageerror', (e) => console.push(`pageerror: ${e.message}`));
    await page.route(`${ORIGIN}/**`, (route) => {
      const path = new URL(route.request().url()).pathname;
      if (path === '/') return route.fulfill({ contentType: 'text/html', body: '<!doctype html><title>theanine webgpu</title><script type="module" src="/bundle.js"></script>' });
      if (path === '/bundle.js') return route.fulfill({ contentType: 'text/javascript', body: bundleText });
      return route.fulfill({ status: 404, body: 'not found' });
    });
    await page.goto(`${ORIGIN}/`);
    await page.waitForFunction(() => 'theanineWebgpu' in globalThis);
  });

  after(async () => {
    if (process.env['THEANINE_BROWSER_CONSOLE'] === '1') process.stdout.write(`${console.join('\n')}\n`);
    await browser?.close();
  });

  /** Calls the page's `theanineWebgpu[fn](arg)`; a page-side error fails the test with its stack and the console. */
  async function inPage<T>(fn: string, arg?: string): Promise<T> {
    const r = await page.evaluate(([f, a]) => (globalThis as unknown as { theanineWebgpu: Record<string, (a?: string) => Promise<unknown>> }).theanineWebgpu[f!]!(a), [fn, arg] as const) as T | { error: string };
    if (r !== null && typeof r === 'object' && 'error' in r) throw new Error(`in Chromium, ${fn}: ${r.error}\nconsole:\n${console.join('\n')}`);
    return r as T;
  }

  it('Chromium gives navigator.gpu an adapter (SwiftShader)', async () => {
    expect(await inPage<string>('adapter')).to.match(/swiftshader/i);
  });

  for (const c of WEBGPU_CASES) {
    it(`${c.name}: gpu:webgpu on the page, the reference interpreter's numbers`, async () => {
      const want = runCase(K, c, { optimizer: 'none' });
      const got = await inPage<CaseResult>('runCase', c.name);
      expect(got.device).to.equal('gpu:webgpu');
      expect(got.outputs.length).to.equal(want.outputs.length);
      const tol = c.tol ?? TABLE_TOL;
      got.outputs.forEach((o, k) => {
        const w = want.outputs[k]!;
        expect(o.shape, `output ${k}: shape`).to.deep.equal(w.shape);
        expect(o.dtype, `output ${k}: dtype`).to.equal(w.dtype);
        expectClose(o.data as number[], w.data as number[], tol, `${c.name}, output ${k}`);
      });
    });
  }

  it('a training step: callAsync uploads its inputs, reads back its outputs only, one command buffer per call; Node\'s numbers', async () => {
    const want = runProgram(K, 'cpu');
    const got = await inPage<ProgramResult & { counted: Counts[] }>('program');
    expect(got.device).to.equal('gpu:webgpu');
    const [before, after] = got.counted as [Counts, Counts];
    // two calls: x and y up, the loss, the gradient and the probabilities back; the weights stay on the device
    expect(after.uploads - before.uploads, 'uploads: x and y per call').to.equal(4);
    expect(after.readbacks - before.readbacks, 'read-backs: the three outputs per call').to.equal(6);
    expect(after.submits - before.submits, 'one command buffer per call').to.equal(2);
    // the cpu's float32 kernels against WGSL's on SwiftShader, as the Node webgpu tables
    expectClose(got.losses, want.losses, TABLE_TOL, 'losses');
    expectClose(got.grad, want.grad, TABLE_TOL, 'gradient');
    expectClose(got.weights, want.weights, TABLE_TOL, 'weights after 3 updates');
    expectClose(got.probs, want.probs, TABLE_TOL, 'softmax');
    expect(got.losses[2]!).to.be.lessThan(got.losses[0]!);
  });

  it('THEANINE_DEBUG=gpu names the adapter and prints each kernel\'s WGSL on the console', async () => {
    const lines = await inPage<string[]>('debugLines');
    expect(lines.some((l) => /function on gpu:webgpu \(google swiftshader/.test(l)), lines.join('\n')).to.equal(true);
    expect(lines.some((l) => /@compute @workgroup_size/.test(l)), 'a kernel\'s WGSL').to.equal(true);
  });

  it('a synchronous call is an error naming callAsync; a variable the device holds is read with K.get_value_async', async () => {
    const r = await inPage<{ device: string; call: string; out: number; getValue: string; after: number[]; getValueThen: number[] }>('syncErrors');
    expect(r.device).to.equal('gpu:webgpu');
    expect(r.call).to.match(/gpu:webgpu in a browser: calling function .* synchronously would wait for WebGPU synchronously.*await f\.callAsync\(values\)/);
    expect(r.out).to.equal(42); // sum(x @ ones(3, 2)) = 2 * (6 + 15)
    expect(r.getValue).to.match(/reading a variable's value back from the device.*K\.get_value_async/);
    expect(r.after).to.deep.equal([0, 0, 0, 0, 0, 0]);
    // once read, the host copy serves get_value until the device's value changes
    expect(r.getValueThen).to.deep.equal([0, 0, 0, 0, 0, 0]);
  });
});
