// Regenerates the pictures and graph listings in docs/ with the theanine CLI:
//   npx tsx scripts/docs-pictures.ts            writes docs/pictures/ and refreshes the listings in docs/*.md
//   npx tsx scripts/docs-pictures.ts --out DIR  writes DIR only (the test does this)
// Listings in docs/*.md sit between `<!-- listing: FILE -->` and `<!-- /listing -->` markers.
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { backend as K, debugprint, svg, type Tensor } from '../src/index.js';
import { runPasses } from '../src/passes/pass.js';
import { pipeline } from '../src/passes/pipeline.js';
import { cpuFusion } from '../src/runtime/cpu/fusion.js';
import { optimizeScans } from '../src/passes/scan.js';
import { main } from '../src/cli/main.js';
import { EXAMPLES, gradientCluster } from '../src/examples/graphs.js';
import { screenshotSvg } from './chromium.js';

const root = fileURLToPath(new URL('../', import.meta.url));

/** The pipeline of DESIGN.md, folder by folder (docs/architecture.md). */
const PIPELINE_DOT = `digraph pipeline {
  rankdir=LR; node [shape=box, style="rounded,filled", fillcolor="#ffffff", fontname="Helvetica", fontsize=11];
  edge [color="#555555"]; fontname="Helvetica";
  user [label="your code\\nK.placeholder, K.dot, ...", shape=ellipse, fillcolor="#d5f5e3"];
  api [label="src/api\\nK.* builders, K.function"];
  ir [label="src/ir\\nnodes, op records,\\ninterpreter, printer, DOT"];
  autodiff [label="src/autodiff\\nK.gradients: one rule per op", fillcolor="#fdecea"];
  passes [label="src/passes\\nmerge, canonicalize, stabilize,\\nspecialize, scan, fusion"];
  codegen [label="src/codegen\\nkernel IR -> cpu/ JS, gpu/ gpu.js", fillcolor="#e8f4fd"];
  runtime [label="src/runtime\\ncompiled functions, caches"];
  result [label="f(values) -> NDArray[]", shape=ellipse, fillcolor="#fcf3cf"];
  user -> api -> ir; api -> autodiff [label="gradients", fontsize=9]; autodiff -> ir [label="more IR", fontsize=9];
  api -> runtime [label="K.function", fontsize=9]; runtime -> passes -> codegen -> runtime [style=solid];
  runtime -> result;
}
`;

/** docs/autodiff.md's worked example: a linear model's squared error and its gradient. */
function autodiffExample(): { forward: string; gradient: string; dot: { outputs: ReturnType<typeof K.placeholder>[]; cluster: ReturnType<typeof gradientCluster> } } {
  const x = K.placeholder([null, 3], null, 'float32', false, 'x');
  const t = K.placeholder([null, 1], null, 'float32', false, 't');
  const W = K.variable([[0.1], [0.2], [0.3]], 'float32', 'W');
  const loss = K.mean(K.square(K.subtract(K.dot(x, W), t)));
  const [dW] = K.gradients(loss, [W]);
  return {
    forward: debugprint(loss), gradient: debugprint(dW!),
    dot: { outputs: [loss, dW!], cluster: gradientCluster(loss, [dW!]) },
  };
}

/** docs/passes.md's Scan lowering example: an rnn of 3 steps (unrolled) and of 28 steps (last step kept). */
function scanExample(): { before: string; unrolled: string; lastOnly: string } {
  const U = K.variable([[0.5, -0.5], [0.25, 1]], 'float32', 'U');
  const step = (xt: Tensor, [h]: Tensor[]): [Tensor, Tensor[]] => {
    const hn = K.tanh(K.add(xt, K.dot(h!, U)));
    return [hn, [hn]];
  };
  const lastOf = (steps: number) => {
    const x = K.placeholder([null, steps, 2], null, 'float32', false, 'x');
    return K.rnn(step, x, [K.sum(x, 1)])[0];
  };
  const short = lastOf(3);
  return { before: debugprint(short), unrolled: debugprint(optimizeScans([short])), lastOnly: debugprint(optimizeScans([lastOf(28)])) };
}

/**
 * docs/passes.md: one small graph per pass, printed before and after that pass inside the whole
 * pipeline (the graph the pass received, and what it made of it).
 */
function passDemos(): { pass: string; before: string; after: string }[] {
  const x = K.placeholder([null, 4], null, 'float32', false, 'x');
  const y = K.placeholder([null, 4], null, 'float32', false, 'y');
  const demos: [string, Tensor][] = [
    ['merge', K.add(K.multiply(x, y), K.multiply(y, x))],
    ['canonicalize', K.sum(K.negative(K.negative(K.add(K.multiply(x, 1), 0))))],
    ['stabilize', K.mean(K.categorical_crossentropy(K.softmax(x), y))],
    ['specialize', K.add(K.pow(x, 2), K.pow(y, 0.5))],
    ['fusion', K.sum(K.exp(K.subtract(x, K.max(x, 1, true))), 1)],
  ];
  return demos.map(([pass, out]) => {
    // The graph after each pass of the pipeline K.function runs on the cpu.
    const after: { name: string; outputs: readonly Tensor[] }[] = [];
    runPasses(pipeline('fast_run', cpuFusion), { outputs: [out] }, { onPass: (r, g) => after.push({ name: r.name, outputs: g.outputs }) });
    const i = after.findIndex((p) => p.name === pass);
    if (i < 0) throw new Error(`docs-pictures: the pipeline has no pass named ${pass}`);
    const before = i === 0 ? [out] : after[i - 1]!.outputs;
    return { pass, before: debugprint(before), after: debugprint(after[i]!.outputs) };
  });
}

interface Options { readonly out: string; readonly updateDocs: boolean; readonly log: (s: string) => void }

async function cli(...args: string[]): Promise<string> {
  let out = '';
  let err = '';
  const code = await main(['node', 'theanine', ...args], { out: (s) => { out += s; }, err: (s) => { err += s; }, tty: false });
  if (code !== 0) throw new Error(`theanine ${args.join(' ')} failed: ${err.trim()}`);
  return out;
}

/** Writes every picture and listing into `out`; returns the files written. */
export async function generate(opts: Options): Promise<string[]> {
  mkdirSync(opts.out, { recursive: true });
  const written: string[] = [];
  const put = (name: string, text: string) => { writeFileSync(join(opts.out, name), text); written.push(name); };
  put('pipeline.svg', await svg(PIPELINE_DOT));
  const ad = autodiffExample();
  put('autodiff-forward.txt', `${ad.forward}\n`);
  put('autodiff-gradient.txt', `${ad.gradient}\n`);
  const sc = scanExample();
  put('scan-before.txt', `${sc.before}\n`);
  put('scan-unrolled.txt', `${sc.unrolled}\n`);
  put('scan-last-step.txt', `${sc.lastOnly}\n`);
  put('autodiff.svg', await svg(ad.dot.outputs, { cluster: ad.dot.cluster, outputNames: ['loss', 'd loss / d W'], title: 'loss = mean((x W - t)^2) and K.gradients(loss, [W])' }));
  for (const d of passDemos()) {
    put(`pass-${d.pass}-before.txt`, `${d.before}\n`);
    put(`pass-${d.pass}-after.txt`, `${d.after}\n`);
  }
  for (const ex of EXAMPLES) {
    put(`${ex}.txt`, await cli('graph', ex));
    await cli('graph', ex, '--svg', join(opts.out, `${ex}.svg`));
    written.push(`${ex}.svg`);
    put(`${ex}-optimized.txt`, await cli('graph', ex, '--optimized'));
    await cli('graph', ex, '--optimized', '--svg', join(opts.out, `${ex}-optimized.svg`));
    written.push(`${ex}-optimized.svg`);
    put(`passes-${ex}.txt`, await cli('passes', ex));
  }
  screenshotSvg(join(opts.out, 'mlp-gradient.svg'), join(opts.out, 'mlp-gradient.png'));
  written.push('mlp-gradient.png');
  opts.log(`wrote ${written.length} files to ${opts.out}\n`);
  if (opts.updateDocs) updateListings(opts.out, opts.log);
  return written;
}

/** Replaces each marked listing in docs/*.md with the file it names. */
function updateListings(dir: string, log: (s: string) => void): void {
  const docs = join(root, 'docs');
  const marker = /(<!-- listing: ([\w.-]+) -->\n)[^]*?(<!-- \/listing -->)/g;
  for (const f of readdirSync(docs).filter((n) => n.endsWith('.md'))) {
    const path = join(docs, f);
    const before = readFileSync(path, 'utf8');
    const after = before.replace(marker, (_m, open: string, file: string, close: string) => {
      let text: string;
      try { text = readFileSync(join(dir, file), 'utf8').trimEnd(); } catch { return `${open}(not generated in this build: ${file})\n${close}`; }
      return `${open}\`\`\`text\n${text}\n\`\`\`\n${close}`;
    });
    if (after !== before) { writeFileSync(path, after); log(`updated listings in docs/${f}\n`); }
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const i = process.argv.indexOf('--out');
  const out = i > 0 ? process.argv[i + 1] : undefined;
  if (i > 0 && out === undefined) { process.stderr.write('docs-pictures: --out needs a folder\n'); process.exit(2); }
  generate({ out: out ?? join(root, 'docs', 'pictures'), updateDocs: out === undefined, log: (s) => process.stdout.write(s) })
    .catch((e: unknown) => { process.stderr.write(`docs-pictures: ${e instanceof Error ? e.message : String(e)}\n`); process.exit(2); });
}
