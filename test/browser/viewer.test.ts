// The viewer in a real browser: `theanine viz --port 0` (the command, in a child process) serves
// the page; Debian's Chromium (playwright-core) loads it, runs each example on the cpu device and
// on the gpu device over WebGL2 (SwiftShader here) and compares the loss and gradients with the
// same program compiled in Node; steps through reverse mode and forward mode; and takes the README's picture into
// a temporary folder (sizes compared with docs/pictures/viewer.png; `npm run docs:viewer-picture`
// refreshes that one); clicking a kernel highlights the program line that built it. Skips
// visibly without Chromium (CI: a failure).
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { findChromium, CHROMIUM_MISSING } from '../../scripts/chromium.js';
import { decodePng } from '../../scripts/png.js';
import { CHROMIUM_ARGS, VIEWPORT, viewerScreenshot } from '../../scripts/viewer-picture.js';
import { VIEWER_EXAMPLES, VIEWER_EXAMPLE_NAMES } from '../../src/examples/viewer-programs.js';
import { analyze, compile, kernelsOf, numbers, runProgram } from '../../viewer/model.js';
import { needs } from '../helpers/needs.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

interface RunResult { device: string; numbers: number[][]; cpu: number[][]; reference: number[][] }
interface StepResult { index: number; phase: string; node?: string; value?: string; adjoint?: string; tangent?: string; from?: string[] }

/** Same values within `tol`, relative to the larger magnitude (absolute near zero). */
function expectClose(got: readonly number[][], want: readonly number[][], tol: number, what: string): void {
  expect(got.length, what).to.equal(want.length);
  got.forEach((g, i) => {
    expect(g.length, `${what}[${i}]`).to.equal(want[i]!.length);
    g.forEach((x, j) => expect(Math.abs(x - want[i]![j]!), `${what} output ${i}[${j}]: ${x} against ${want[i]![j]}`).to.be.at.most(tol * Math.max(1, Math.abs(want[i]![j]!))));
  });
}

/** Starts `theanine viz --port 0` through the CLI's main (tsx: the sources, no build needed); resolves with its URL. */
function startViz(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', "import('./src/cli/main.ts').then(async (m) => { const c = await m.main(['node', 'theanine', 'viz', '--port', '0']); if (c !== 0) process.exit(c); })"], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((ok, fail) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => { child.kill(); fail(new Error(`theanine viz printed no address in 90 s:\n${out}\n${err}`)); }, 90000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /serving the viewer at (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
      if (m !== null) { clearTimeout(timer); ok({ url: m[1]!, child }); }
    });
    child.stderr!.on('data', (d: Buffer) => { err += d.toString(); });
    child.on('exit', (code) => { clearTimeout(timer); fail(new Error(`theanine viz exited with ${code}:\n${out}\n${err}`)); });
  });
}

describe('in Chromium: the viewer served by theanine viz', function () {
  this.timeout(240000);
  let browser: Browser | undefined;
  let viz: { url: string; child: ChildProcess } | undefined;
  let page: Page;
  const log: string[] = [];

  before(async function () {
    const bin = findChromium();
    needs(this, 'the viewer in Chromium', bin === undefined ? CHROMIUM_MISSING : undefined);
    viz = await startViz();
    // (--enable-unsafe-webgpu: navigator.gpu on SwiftShader for the page's "gpu (WebGPU, WGSL)" choice)
    browser = await chromium.launch({ executablePath: bin!, args: [...CHROMIUM_ARGS, '--enable-unsafe-webgpu'] });
    page = await browser.newPage({ viewport: VIEWPORT });
    page.on('pageerror', (e) => log.push(`pageerror: ${e.message}`));
    page.on('console', (m) => log.push(`${m.type()}: ${m.text()}`));
    await page.goto(viz.url);
    await page.waitForFunction('document.body.dataset.ready !== undefined || document.getElementById("status").classList.contains("error")', undefined, { timeout: 90000 });
    const status = await page.textContent('#status');
    expect(await page.evaluate('document.body.dataset.ready'), `the page ran its first example: ${status}\n${log.join('\n')}`).to.equal('1');
  });

  after(async () => {
    await browser?.close();
    viz?.child.kill();
  });

  async function runInPage(name: string, device: 'cpu' | 'gpu' | 'webgpu'): Promise<RunResult> {
    return page.evaluate(async ([n, d]) => {
      const v = (globalThis as unknown as { theanineViewer: { load(n: string): void; run(d: string): Promise<RunResult> } }).theanineViewer;
      v.load(n);
      return v.run(d);
    }, [name, device] as const);
  }

  const inNode = new Map<string, number[][]>();
  const want = (name: (typeof VIEWER_EXAMPLE_NAMES)[number]) => {
    if (!inNode.has(name)) {
      const a = analyze(runProgram(VIEWER_EXAMPLES[name]));
      inNode.set(name, numbers(compile(a, 'cpu'), a));
    }
    return inNode.get(name)!;
  };

  for (const name of VIEWER_EXAMPLE_NAMES) {
    it(`${name} on cpu: the page's loss and gradients are Node's`, async () => {
      const r = await runInPage(name, 'cpu');
      expect(r.device).to.equal('cpu');
      // The same generated code on the same float32 inputs: equal up to the engines' Math functions.
      expectClose(r.numbers, want(name), 1e-6, name);
      expectClose(r.numbers, r.reference, 1e-5, `${name} against the page's reference interpreter`);
    });

    it(`${name} on WebGL2 (gpu:webgl2): Node's numbers within float32 GPU tolerance`, async () => {
      const r = await runInPage(name, 'gpu');
      expect(r.device).to.equal('gpu:webgl2');
      // The gpu.js kernels of f.source(), linked to the nodes they compute.
      const kernels = await page.evaluate(() => (globalThis as unknown as { theanineViewer: { kernels(): { label: string; node?: string }[] } }).theanineViewer.kernels());
      expect(kernels.length).to.be.above(1);
      expect(kernels.filter((k) => k.node !== undefined).length / kernels.length).to.be.above(0.6);
      // GLSL's exp/tanh/log are not bit-identical to V8's; float32 throughout (as chromium.test.ts).
      expectClose(r.numbers, want(name), 1e-5, name);
    });
  }

  it('mlp-gradient on WebGPU (gpu:webgpu, the page\'s navigator.gpu): Node\'s numbers, its WGSL kernels linked to their nodes', async () => {
    const r = await runInPage('mlp-gradient', 'webgpu');
    expect(r.device).to.equal('gpu:webgpu');
    expectClose(r.numbers, want('mlp-gradient'), 1e-5, 'mlp-gradient on webgpu');
    const kernels = await page.evaluate(() => (globalThis as unknown as { theanineViewer: { kernels(): { label: string; node?: string }[] } }).theanineViewer.kernels());
    expect(kernels.length).to.be.above(1);
    expect(kernels.filter((k) => k.node !== undefined).length / kernels.length).to.be.above(0.6);
    // back to the cpu: the page's THEANINE_GPU_MODE is removed again
    expect((await runInPage('mlp-gradient', 'cpu')).device).to.equal('cpu');
  });

  it('passes and kernels: the pipeline\'s passes with changes, and the kernels Node\'s f.source() has', async () => {
    await runInPage('mlp-gradient', 'cpu');
    const got = await page.evaluate(() => {
      const v = (globalThis as unknown as { theanineViewer: { passes(): { name: string; changed: number }[]; kernels(): { name: string; label: string; node?: string }[]; count(s: string): number } }).theanineViewer;
      return { passes: v.passes(), kernels: v.kernels(), highlighted: v.count('#pass-graph g.changed') };
    });
    const a = analyze(runProgram(VIEWER_EXAMPLES['mlp-gradient']));
    const f = compile(a, 'cpu');
    numbers(f, a);
    expect(got.passes.map((p) => p.name)).to.deep.equal(a.passes.map((p) => p.name));
    expect(got.passes.find((p) => p.name === 'fusion')!.changed).to.be.above(0);
    expect(got.highlighted, 'the first pass that changed something is shown with its changes highlighted').to.be.above(0);
    expect(got.kernels.map((k) => k.label)).to.deep.equal(kernelsOf(f.source(), f.graph).map((k) => k.label));
    // Clicking a kernel highlights the line of the program that built its node (provenance, in the page).
    const picked = await page.evaluate(() => (globalThis as unknown as { theanineViewer: { pickKernel(k: number): { line?: string; selected: string } } }).theanineViewer.pickKernel(0));
    expect(picked.line).to.contain('K.relu(K.add(K.dot(x, W1), b1))');
    expect(picked.selected).to.match(/^fused\{dot,add\} float32 \(4, 5\) — (K\.dot; K\.add|K\.add; K\.dot) at line 14$/);
    // The Profile tab: the four calls after the first, a bar per kernel, the printed table.
    const prof = await page.evaluate(() => {
      const g = globalThis as unknown as { theanineViewer: { profile(): { calls: number; kernels: unknown[] }; tab(t: string): void; count(s: string): number }; document: { getElementById(id: string): { textContent: string } | null } };
      const v = g.theanineViewer;
      v.tab('profile');
      return { calls: v.profile().calls, kernels: v.profile().kernels.length, bars: v.count('#profile-bars .row'), table: g.document.getElementById('profile-table')?.textContent ?? '' };
    });
    expect(prof.calls).to.equal(4);
    expect(prof.bars).to.equal(prof.kernels);
    expect(prof.bars).to.be.above(3);
    expect(prof.table).to.match(/^profile of function "function" on cpu: 4 calls/);
  });

  it('steps through reverse mode: values forward, then adjoints from the loss (1) back, and verify_grad passes', async () => {
    await runInPage('softmax-crossentropy', 'cpu');
    const r = await page.evaluate(() => {
      const v = (globalThis as unknown as { theanineViewer: { tab(n: string): void; steps(): number; step(k: number): StepResult; check(): { ok: boolean }; count(s: string): number } }).theanineViewer;
      v.tab('reverse');
      const total = v.steps();
      const seen: StepResult[] = [];
      for (let k = 1; k <= total; k++) seen.push(v.step(k));
      return { total, seen, check: v.check(), red: v.count('#step-graph g.node.has-grad'), green: v.count('#step-graph g.node.has-value') };
    });
    const forward = r.seen.filter((s) => s.phase === 'forward');
    const backward = r.seen.filter((s) => s.phase === 'backward');
    expect(forward.length + backward.length).to.equal(r.total);
    expect(r.seen.findIndex((s) => s.phase === 'backward')).to.equal(forward.length);
    expect(backward[0]!.node).to.match(/^mean/);
    expect(backward[0]!.adjoint).to.equal('1');
    expect(backward.at(-1)!.node).to.match(/^placeholder/);
    expect(r.check).to.deep.equal({ ok: true });
    expect(r.red).to.equal(backward.length);
    expect(r.green).to.equal(forward.length);
  });

  it('steps through forward mode (the jvp example): value and tangent together, one pass, the loss\' tangent checked', async () => {
    await runInPage('jvp', 'cpu');
    const r = await page.evaluate(() => {
      const g = globalThis as unknown as { theanineViewer: { tab(n: string): void; steps(): number; step(k: number): StepResult; check(): { ok: boolean }; count(s: string): number }; document: { querySelector(s: string): { textContent: string } | null } };
      const v = g.theanineViewer;
      v.tab('reverse');
      const total = v.steps();
      const start = v.step(0);
      const seen: StepResult[] = [];
      for (let k = 1; k <= total; k++) seen.push(v.step(k));
      const rows = g.document.querySelector('#fd-table tbody')?.textContent ?? '';
      return {
        total, start, seen, check: v.check(), blue: v.count('#step-graph g.node.has-tangent'), red: v.count('#step-graph g.node.has-grad'),
        tab: g.document.querySelector('#tabs button[data-tab="reverse"]')?.textContent, rows,
      };
    });
    expect(r.tab).to.equal('Forward mode');
    expect(r.start.phase).to.equal('start');
    expect(r.seen.length).to.equal(r.total);
    expect(r.seen.every((s) => s.phase === 'forward')).to.equal(true);
    // The direction seeds W; the dot's tangent is x V; the loss' is -1.5375 (docs/autodiff.md's numbers).
    expect(r.seen.find((s) => s.node === 'placeholder "W"')!.tangent).to.equal('[1, 0, -1]');
    expect(r.seen.find((s) => s.node!.startsWith('dot'))!.tangent).to.equal('[-2, -1.5000, -2, 2]');
    expect(r.seen.at(-1)!.node).to.match(/^mean/);
    expect(r.seen.at(-1)!.tangent).to.equal('-1.5375');
    expect(r.check).to.deep.equal({ ok: true });
    expect(r.blue).to.equal(r.total);
    expect(r.red).to.equal(0);
    expect(r.rows).to.contain('jvp (forward mode)');
    expect(r.rows).to.contain('<gradient, v> (reverse mode)');
    // A reverse-mode example afterwards names the tab back.
    await runInPage('autodiff-linear', 'cpu');
    expect(await page.textContent('#tabs button[data-tab="reverse"]')).to.equal('Reverse mode');
  });

  it('takes the README\'s picture (same size as docs/pictures/viewer.png)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'theanine-viewer-'));
    try {
      const file = join(dir, 'viewer.png');
      await viewerScreenshot(browser!, viz!.url, file);
      const shot = decodePng(readFileSync(file));
      const committed = decodePng(readFileSync(join(root, 'docs', 'pictures', 'viewer.png')));
      expect([shot.width, shot.height]).to.deep.equal([VIEWPORT.width, VIEWPORT.height]);
      expect([committed.width, committed.height]).to.deep.equal([shot.width, shot.height]);
      // Not blank: the header's blue and the graph's colours are there.
      const colours = new Set<number>();
      for (let i = 0; i < shot.rgba.length; i += 4 * 97) colours.add((shot.rgba[i]! << 16) | (shot.rgba[i + 1]! << 8) | shot.rgba[i + 2]!);
      expect(colours.size).to.be.above(20);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
