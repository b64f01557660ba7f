// The browser bundle in a real browser: Debian's Chromium driven by playwright-core loads the
// esbuild bundle of `import { backend as K } from 'theanine'` (plus gpu.js' browser build and
// TensorFlow.js, handed over with provideModule) and runs K.function, K.gradients and updates on
// the cpu device, on the gpu device over WebGL2 (SwiftShader, Chromium's software GPU, here),
// and on the tensorflow backend over tfjs' webgl backend and over a page's own tfjs wasm
// backend, then compares every number with the same program run in Node; on the page's wasm
// backend, an XNNPack status (a console line there) fails the call; without navigator.gpu (this
// origin is not a secure context) the webgpu mode is an error saying why (WebGPU on a page:
// webgpu.test.ts). Skips visibly
// without Chromium (CI: a failure).
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { backend as K } from '../../src/index.js';
import { findChromium, CHROMIUM_MISSING } from '../../scripts/chromium.js';
import { needs } from '../helpers/needs.js';
import { bundleForBrowser } from '../helpers/bundle.js';
import { runProgram, type ProgramResult } from './fixtures/program.js';

const ENTRY = `
import { backend as K, provideModule, setEnvironment } from 'theanine';
import { GPU } from 'gpu.js';
import * as tf from '@tensorflow/tfjs';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import { runProgram } from './test/browser/fixtures/program.ts';
provideModule('gpu.js', { GPU });
provideModule('@tensorflow/tfjs', tf);
globalThis.theanineUseWasm = async () => {
  setWasmPaths(location.origin + '/wasm/');
  if (!(await tf.setBackend('wasm'))) throw new Error('tfjs could not start its wasm backend');
};
import { tfKernels } from './src/runtime/tfjs/kernels/index.ts';
// An op whose tfjs kernel also runs a rank-7 add, which XNNPack refuses (it prints a status and
// leaves the output unwritten): on the page's wasm backend the call must fail, not return garbage.
globalThis.theanineXnnStatus = () => {
  const exp = tfKernels.exp;
  tfKernels.exp = (ins, attrs, ctx) => { tf.add(tf.ones([2, 1, 2, 1, 2, 1, 2]), tf.ones([1, 2, 1, 2, 1, 2, 1])); return exp(ins, attrs, ctx); };
  try {
    const x = K.placeholder([3]);
    K.function([x], [K.exp(x)], [], { backend: 'tensorflow' })([[0, 1, 2]]);
    return 'no error';
  } catch (e) { return String(e && e.message || e); } finally { tfKernels.exp = exp; }
};
// No environment variables in a page: setEnvironment sets the switches; THEANINE_DEBUG's lines go to the console.
globalThis.theanineDebugPasses = () => {
  const lines = [];
  const warn = console.warn;
  console.warn = (...a) => { lines.push(a.join(' ')); };
  try {
    setEnvironment({ THEANINE_DEBUG: 'passes' });
    const x = K.placeholder([2, 3]);
    K.function([x], [K.sum(K.exp(K.multiply(x, 1)))])([[[1, 2, 3], [4, 5, 6]]]);
  } finally {
    setEnvironment({ THEANINE_DEBUG: undefined });
    console.warn = warn;
  }
  return lines;
};
// A page without WebGPU (this made-up origin is not a secure context): the webgpu mode says why.
globalThis.theanineNoWebgpu = () => {
  setEnvironment({ THEANINE_GPU_MODE: 'webgpu' });
  try {
    const x = K.placeholder([2]);
    K.function([x], [K.exp(x)], [], { device: 'gpu' });
    return 'no error';
  } catch (e) { return String(e && e.message || e); } finally { setEnvironment({ THEANINE_GPU_MODE: undefined }); }
};
globalThis.theanineRun = (device, backend) => {
  try {
    const r = runProgram(K, device, backend);
    return { ...r, tfjsBackend: backend === 'tensorflow' ? tf.getBackend() : undefined };
  } catch (e) { return { error: String(e && e.stack || e) }; }
};
`;

const ORIGIN = 'http://theanine.test';

/** Same values within `tol` (relative to the larger magnitude, absolute near zero). */
function expectClose(got: readonly number[], want: readonly number[], tol: number, what: string): void {
  expect(got.length, what).to.equal(want.length);
  got.forEach((g, i) => {
    const w = want[i]!;
    expect(Math.abs(g - w), `${what}[${i}]: ${g} against ${w}`).to.be.at.most(tol * Math.max(1, Math.abs(w)));
  });
}

describe('in Chromium: the browser bundle runs K.function, K.gradients and updates', function () {
  this.timeout(120000);
  let browser: Browser | undefined;
  let page: Page;
  let bundleText: string;
  const console: string[] = [];

  before(async function () {
    const bin = findChromium();
    needs(this, 'running the browser bundle in Chromium', bin === undefined ? CHROMIUM_MISSING : undefined);
    bundleText = (await bundleForBrowser(ENTRY)).text;
    // SwiftShader gives WebGL2 without a GPU; no sandbox (root in CI), no network.
    browser = await chromium.launch({
      executablePath: bin!,
      args: ['--no-sandbox', '--use-gl=angle', '--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--ignore-gpu-blocklist', '--disable-background-networking'],
    });
    page = await openPage(browser);
  });

  /**
   * A page at a made-up origin whose requests playwright answers (no server, no network): the
   * page, the bundle, and tfjs-backend-wasm's .wasm files from node_modules.
   */
  async function openPage(b: Browser): Promise<Page> {
    const p = await b.newPage();
    p.on('console', (m) => console.push(`${m.type()}: ${m.text()}`));
    p.on('pageerror', (e) => console.push(`pageerror: ${e.message}`));
    const wasmDir = join(dirname(createRequire(import.meta.url).resolve('@tensorflow/tfjs-backend-wasm/package.json')), 'wasm-out');
    await p.route(`${ORIGIN}/**`, (route) => {
      const path = new URL(route.request().url()).pathname;
      if (path === '/') return route.fulfill({ contentType: 'text/html', body: '<!doctype html><title>theanine</title><script type="module" src="/bundle.js"></script>' });
      if (path === '/bundle.js') return route.fulfill({ contentType: 'text/javascript', body: bundleText });
      if (path.startsWith('/wasm/') && path.endsWith('.wasm')) return route.fulfill({ contentType: 'application/wasm', body: readFileSync(join(wasmDir, path.slice('/wasm/'.length))) });
      return route.fulfill({ status: 404, body: 'not found' });
    });
    await p.goto(`${ORIGIN}/`);
    await p.waitForFunction(() => 'theanineRun' in globalThis);
    return p;
  }

  after(async () => {
    if (process.env['THEANINE_BROWSER_CONSOLE'] === '1') process.stdout.write(`${console.join('\n')}\n`);
    await browser?.close();
  });

  async function inPage(device: 'cpu' | 'gpu', backend: 'theanine' | 'tensorflow' = 'theanine', on: Page = page): Promise<ProgramResult & { tfjsBackend?: string }> {
    const r = await on.evaluate(([d, b]) => (globalThis as unknown as { theanineRun(d: string, b: string): unknown }).theanineRun(d, b), [device, backend] as const) as ProgramResult | { error: string };
    if ('error' in r) throw new Error(`in Chromium, device ${device}: ${r.error}\nconsole:\n${console.join('\n')}`);
    return r;
  }

  it('cpu: the same numbers as Node (generated kernels under new Function)', async () => {
    const want = runProgram(K, 'cpu');
    const got = await inPage('cpu');
    expect(got.device).to.equal('cpu');
    // The same generated code on the same float32 inputs: equal up to the engines' Math functions.
    expectClose(got.losses, want.losses, 1e-6, 'losses');
    expectClose(got.grad, want.grad, 1e-6, 'gradient');
    expectClose(got.weights, want.weights, 1e-6, 'weights after 3 updates');
    expectClose(got.probs, want.probs, 1e-6, 'softmax');
    expect(got.losses[2]!).to.be.lessThan(got.losses[0]!);
  });

  it('configuration without environment variables: setEnvironment({ THEANINE_DEBUG: \'passes\' }) prints each pass to the console', async () => {
    const lines = await page.evaluate(() => (globalThis as unknown as { theanineDebugPasses(): string[] }).theanineDebugPasses());
    const passes = lines.filter((l) => l.startsWith('[theanine passes] '));
    expect(passes.map((l) => /^\[theanine passes\] (\w+):/.exec(l)?.[1])).to.include.members(['merge', 'canonicalize', 'fusion']);
  });

  it('gpu: gpu.js on WebGL2 (gpu:webgl2), Node\'s numbers within float32 GPU tolerance', async () => {
    const want = runProgram(K, 'cpu');
    const got = await inPage('gpu');
    expect(got.device).to.equal('gpu:webgl2');
    // GLSL's tanh/exp/log are not bit-identical to V8's; float32 throughout. SwiftShader agrees
    // within 1e-6; the bound leaves room for a real GPU's float32 functions.
    expectClose(got.losses, want.losses, 1e-5, 'losses');
    expectClose(got.grad, want.grad, 1e-5, 'gradient');
    expectClose(got.weights, want.weights, 1e-5, 'weights after 3 updates');
    expectClose(got.probs, want.probs, 1e-5, 'softmax');
  });

  it('webgpu mode on a page without navigator.gpu: K.function says why (secure context, browsers)', async () => {
    const msg = await page.evaluate(() => (globalThis as unknown as { theanineNoWebgpu(): string }).theanineNoWebgpu());
    expect(msg).to.match(/device "gpu" in mode webgpu is unavailable: this page has no WebGPU \(navigator\.gpu is undefined\): WebGPU needs a secure context/);
  });

  it('tensorflow backend: TensorFlow.js on its webgl backend, Node\'s numbers within float32 GPU tolerance', async () => {
    const want = runProgram(K, 'cpu');
    const got = await inPage('cpu', 'tensorflow');
    // tfjs' webgl kernels are its own (not theanine's): within 1e-5 on SwiftShader; room for real GPUs.
    expect(got.tfjsBackend).to.equal('webgl');
    expectClose(got.losses, want.losses, 1e-4, 'losses');
    expectClose(got.grad, want.grad, 1e-4, 'gradient');
    expectClose(got.weights, want.weights, 1e-4, 'weights after 3 updates');
    expectClose(got.probs, want.probs, 1e-4, 'softmax');
  });

  it('tensorflow backend: the page\'s own tfjs wasm backend (await tf.setBackend(\'wasm\')), Node\'s numbers', async () => {
    // A fresh page: theanine keeps one TensorFlow.js runtime per page, chosen at the first compile.
    const wasmPage = await openPage(browser!);
    try {
      await wasmPage.evaluate(() => (globalThis as unknown as { theanineUseWasm(): Promise<void> }).theanineUseWasm());
      const want = runProgram(K, 'cpu');
      const got = await inPage('cpu', 'tensorflow', wasmPage);
      expect(got.tfjsBackend).to.equal('wasm');
      expectClose(got.losses, want.losses, 1e-4, 'losses');
      expectClose(got.grad, want.grad, 1e-4, 'gradient');
      expectClose(got.weights, want.weights, 1e-4, 'weights after 3 updates');
      expectClose(got.probs, want.probs, 1e-4, 'softmax');
      // XNNPack's status, printed by the page's own wasm module to the console, fails the call.
      const xnn = await wasmPage.evaluate(() => (globalThis as unknown as { theanineXnnStatus(): string }).theanineXnnStatus());
      expect(xnn).to.match(/^exp: TensorFlow\.js reported an error while computing it \(XNN status.*not a result/);
    } finally {
      await wasmPage.close();
    }
  });
});
