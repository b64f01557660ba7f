// The docs pictures script still runs, and the mlp-gradient SVG renders in headless Chromium:
// the screenshot is not blank and shows the node and cluster colours of the picture.
// Needs Debian's chromium (.ci/run installs it); without it the tests skip with a line saying so
// (test/helpers/needs.ts), and fail instead under THEANINE_TEST_NO_SKIP=1, as in CI.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXAMPLES } from '../../src/examples/graphs.js';
import { CHROMIUM_MISSING, findChromium, svgPixelSize } from '../../scripts/chromium.js';
import { countColour, decodePng, inkFraction } from '../../scripts/png.js';
import { needs } from '../helpers/needs.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

describe('scripts/docs-pictures.ts and the Chromium screenshot', function () {
  this.timeout(180000);
  let out: string;
  let run: ReturnType<typeof spawnSync>;

  before(function () {
    out = mkdtempSync(join(tmpdir(), 'theanine-pictures-'));
    needs(this, 'the docs pictures script and its Chromium screenshot (test/scripts/docs-pictures.test.ts)',
      findChromium() === undefined ? `${CHROMIUM_MISSING}; then run npm run test:file -- test/scripts/docs-pictures.test.ts` : undefined);
    run = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/docs-pictures.ts', '--out', out], { cwd: root, encoding: 'utf8' });
  });
  after(() => rmSync(out, { recursive: true, force: true }));

  it('the script runs and writes an SVG and a listing per example, the pipeline and the screenshot', () => {
    expect(run?.status, `${run?.stdout}\n${run?.stderr}`).to.equal(0);
    expect(run.stdout).to.match(/^wrote \d+ files to /);
    for (const ex of EXAMPLES) {
      expect(readFileSync(join(out, `${ex}.svg`), 'utf8')).to.match(/<svg width="\d+pt"/);
      expect(readFileSync(join(out, `${ex}.txt`), 'utf8')).to.match(new RegExp(`^${ex}: `));
    }
    expect(readFileSync(join(out, 'pipeline.svg'), 'utf8')).to.include('src/autodiff');
  });

  it('the mlp-gradient screenshot is the SVG rendered: full size, not blank, nodes and the gradient cluster visible', () => {
    const svgText = readFileSync(join(out, 'mlp-gradient.svg'), 'utf8');
    expect(svgText.match(/class="node"/g)!.length).to.be.above(40);
    expect(svgText).to.include('K.gradients: reverse mode');
    const img = decodePng(readFileSync(join(out, 'mlp-gradient.png')));
    const want = svgPixelSize(svgText);
    expect([img.width, img.height]).to.deep.equal([want.width, want.height]);
    const ink = inkFraction(img);
    expect(ink, 'share of non-white pixels').to.be.within(0.05, 0.9);
    // Fill colours from src/ir/dot.ts: the gradient cluster, variables (box3d) and placeholders.
    expect(countColour(img, '#fdecea'), 'gradient cluster fill').to.be.above(0.05 * img.width * img.height);
    expect(countColour(img, '#fcf3cf'), 'variable nodes').to.be.above(4 * 1000);
    expect(countColour(img, '#d5f5e3'), 'placeholder nodes').to.be.above(2 * 1000);
    expect(countColour(img, '#000000', 60), 'text and outlines').to.be.above(5000);
  });
});
