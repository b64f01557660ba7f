// The README's picture of the viewer (docs/pictures/viewer.png): Chromium opens the page that
// `theanine viz` serves, runs the mlp-gradient example and stops reverse mode halfway back from
// the loss. `npm run docs:viewer-picture` refreshes the committed file; the Chromium test takes the
// same picture into a temporary folder.
import type { Browser } from 'playwright-core';

export const VIEWPORT = { width: 1400, height: 860 } as const;

/** The Chromium flags the browser tests use: SwiftShader's WebGL2, no sandbox (root in CI), no network. */
export const CHROMIUM_ARGS = ['--no-sandbox', '--use-gl=angle', '--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--ignore-gpu-blocklist', '--disable-background-networking'];

interface ViewerApi {
  load(name: string): void;
  run(device: string): Promise<unknown>;
  tab(name: string): void;
  steps(): number;
  step(k: number): unknown;
}

/** Opens `url` (a served viewer) in a new page of `browser` and writes the screenshot to `file`. */
export async function viewerScreenshot(browser: Browser, url: string, file: string): Promise<void> {
  const page = await browser.newPage({ viewport: VIEWPORT });
  try {
    await page.goto(`${url}#mlp-gradient`);
    await page.waitForFunction('document.body.dataset.ready !== undefined', undefined, { timeout: 60000 });
    await page.evaluate(() => {
      const v = (globalThis as unknown as { theanineViewer: ViewerApi }).theanineViewer;
      v.tab('reverse');
      // Forward done, then two thirds of the adjoints: both colours on the graph.
      const total = v.steps();
      v.step(Math.round(total * 0.8));
    });
    await page.screenshot({ path: file });
  } finally {
    await page.close();
  }
}

// Run directly: serve the viewer, take the picture into docs/pictures.
if (import.meta.url === `file://${process.argv[1]}`) {
  const { chromium } = await import('playwright-core');
  const { findChromium, CHROMIUM_MISSING } = await import('./chromium.js');
  const { serveViewer, viewerFiles } = await import('../src/cli/viz.js');
  const bin = findChromium();
  if (bin === undefined) throw new Error(CHROMIUM_MISSING);
  const server = await serveViewer(await viewerFiles(), 0);
  const browser = await chromium.launch({ executablePath: bin, args: CHROMIUM_ARGS });
  try {
    const out = new URL('../docs/pictures/viewer.png', import.meta.url).pathname;
    await viewerScreenshot(browser, server.url, out);
    process.stdout.write(`wrote ${out}\n`);
  } finally {
    await browser.close();
    await server.close();
  }
}
