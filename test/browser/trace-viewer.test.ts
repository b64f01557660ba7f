// The profiler's trace file (f.profile({ format: 'trace' })) in Chromium's own trace viewer, with
// no network: the DevTools frontend Chromium bundles (devtools://devtools/bundled/trace_app.html,
// its standalone Performance panel) loads the file as "Load profile..." does
// (TimelinePanel.loadFromFile), and the trace it parsed and draws holds a thread of the kernels,
// each with its total time as its duration, and a thread of the compile phases. chrome://tracing
// is gone from current Chromium and Perfetto's UI is fetched from the network, so this is the
// viewer a test can open. Skips visibly without Chromium (CI: a failure).
import { expect } from 'chai';
import { chromium, type Browser } from 'playwright-core';
import { backend as K, NDArray } from '../../src/index.js';
import { findChromium, CHROMIUM_MISSING } from '../../scripts/chromium.js';
import { needs } from '../helpers/needs.js';

interface Loaded {
  readonly active: boolean;
  /** The flame chart's entry titles. */
  readonly titles: readonly string[];
  /** The threads of the trace the panel parsed: their names, and their events' names and durations (microseconds). */
  readonly threads: readonly { readonly name: string; readonly names: readonly string[]; readonly durs: readonly number[] }[];
}

describe('in Chromium: the profiler\'s trace file opens in the DevTools Performance panel (offline)', function () {
  this.timeout(120000);
  let browser: Browser | undefined;

  before(async function () {
    const bin = findChromium();
    needs(this, 'opening the trace file in Chromium\'s trace viewer', bin === undefined ? CHROMIUM_MISSING : undefined);
    browser = await chromium.launch({ executablePath: bin!, args: ['--no-sandbox', '--disable-background-networking'] });
  });

  after(async () => {
    await browser?.close();
  });

  it('loads the trace; its kernels and compile phases are threads of events with their times', async () => {
    const x = K.placeholder([null, 64], null, 'float32', false, 'x');
    const w = K.variable(new NDArray(Float32Array.from({ length: 64 * 32 }, (_, i) => i / 4096), [64, 32]), 'float32', 'w');
    const f = K.function([x], [K.sum(K.tanh(K.dot(x, w)), 1)], [], { profile: true, device: 'cpu' });
    for (let i = 0; i < 3; i++) f([new NDArray(Float32Array.from({ length: 32 * 64 }, (_, j) => Math.sin(j + i)), [32, 64])]);
    const profile = f.profile();
    const trace = f.profile({ format: 'trace' });

    const page = await browser!.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto('devtools://devtools/bundled/trace_app.html');
    // the app is up once its tabbed panes are in the page
    await page.waitForFunction(() => (globalThis as unknown as { document: { querySelector(s: string): unknown } }).document.querySelector('.tabbed-pane') !== null, null, { timeout: 30000 });
    const got = await page.evaluate(async (text) => {
      // DevTools' own modules, as the page itself loads them
      const UI = await import('./ui/legacy/legacy.js' as string);
      const Timeline = await import('./panels/timeline/timeline.js' as string);
      await UI.ViewManager.ViewManager.instance().showView('timeline');
      const panel = Timeline.TimelinePanel.TimelinePanel.instance();
      await panel.loadFromFile(new File([text], 'theanine-profile.json', { type: 'application/json' }));
      for (let i = 0; i < 200 && !panel.hasActiveTrace(); i++) await new Promise((r) => setTimeout(r, 100));
      const dp = panel.getFlameChart().getMainDataProvider();
      const td = dp.timelineData();
      const titles: string[] = [];
      for (let i = 0; i < td.entryStartTimes.length; i++) titles.push(dp.entryTitle(i));
      const parsed = panel.getParsedTraceForLayoutTests();
      type Thread = { name: string; entries: { name: string; dur: number }[] };
      const threads = [...parsed.Renderer.processes.values()].flatMap((p: { threads: Map<unknown, Thread> }) => [...p.threads.values()].map((t) => ({
        name: t.name, names: t.entries.map((e) => e.name), durs: t.entries.map((e) => e.dur),
      })));
      return { active: panel.hasActiveTrace(), titles, threads };
    }, trace) as Loaded;
    await page.close();

    expect(errors, 'errors in the DevTools page').to.deep.equal([]);
    expect(got.active, 'the Performance panel has the trace').to.equal(true);
    const kernels = got.threads.find((t) => t.name === 'kernels (total over calls)');
    expect(kernels, JSON.stringify(got.threads)).to.not.equal(undefined);
    expect(kernels!.names).to.deep.equal(profile.kernels.map((k) => k.name));
    kernels!.durs.forEach((d, i) => expect(d, kernels!.names[i]).to.be.closeTo(profile.kernels[i]!.totalMs * 1000, 0.01));
    for (const k of profile.kernels) expect(got.titles, 'the flame chart draws every kernel').to.include(k.name);
    const compile = got.threads.find((t) => t.name === 'compile');
    expect(compile?.names).to.include.members(['passes', 'lower', 'plan', 'render', 'firstRun']);
  });
});
