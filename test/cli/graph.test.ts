import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCli } from '../helpers/cli.js';

describe('cli: theanine graph', function () {
  this.timeout(60000);

  it('prints debugprint of each example by default', async () => {
    for (const [ex, wants] of [
      ['mlp-forward', ['placeholder "x"', 'variable "dense1/W"', 'exp [id']],
      ['mlp-gradient', ['transpose{perm=[1,0]}', 'sum_to_like']],
      ['lstm', ['scan{go_backwards=false', 'body of scan', 'scan_arg "seq0"', 'sigmoid']],
      ['softmax-crossentropy', ['placeholder "logits"', 'log [id']],
      ['jvp', ['placeholder "v"', 'stop_gradient']],
      ['hessian-vector-product', ['placeholder "v_dense1/W"', 'placeholder "v_dense2/b"', 'sum_to_like']],
      ['vmap', ['float32 (None, 784, 32)', 'placeholder "x"', 'placeholder "y"']],
    ] as const) {
      const r = await runCli('graph', ex);
      expect(r.code, r.err).to.equal(0);
      expect(r.out.split('\n')[0]).to.match(new RegExp(`^${ex}: `));
      for (const w of wants) expect(r.out, `${ex} listing`).to.include(w);
    }
  });

  it('--dot prints DOT with the gradient nodes of mlp-gradient in their own box', async () => {
    const r = await runCli('graph', 'mlp-gradient', '--dot');
    expect(r.code, r.err).to.equal(0);
    expect(r.out).to.match(/^digraph theanine \{/);
    expect(r.out).to.include('subgraph "cluster_gradients"');
    expect(r.out).to.include('label="K.gradients: reverse mode"');
    for (const name of ['loss', 'd loss / d dense1/W', 'd loss / d dense2/b']) expect(r.out).to.include(`label="${name}"`);
  });

  it('--dot of lstm draws the Scan body as a cluster', async () => {
    const r = await runCli('graph', 'lstm', '--dot');
    expect(r.out).to.include('label="scan body"');
    expect(r.out.match(/scan_arg/g)!.length).to.be.at.least(3);
  });

  it('--svg writes an SVG file and says so', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'theanine-graph-'));
    try {
      const file = path.join(dir, 'g.svg');
      const r = await runCli('graph', 'softmax-crossentropy', '--svg', file);
      expect(r.code, r.err).to.equal(0);
      expect(r.out).to.equal(`wrote ${file} (softmax-crossentropy)\n`);
      expect(fs.readFileSync(file, 'utf8')).to.match(/<svg width="\d+pt"[^]*placeholder &quot;logits&quot;/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('--optimized prints the graph after the passes: fused kernels and the stabilized crossentropy', async () => {
    const fwd = await runCli('graph', 'mlp-forward', '--optimized');
    expect(fwd.code, fwd.err).to.equal(0);
    expect(fwd.out).to.match(/fused\{[a-z_,]+\} \[id A\]/);
    const xent = await runCli('graph', 'softmax-crossentropy', '--optimized');
    expect(xent.out).to.include('softmax_cross_entropy{axis=1}');
    expect(xent.out).not.to.include('log [id');
  });

  it('--optimized --dot draws fused kernels as boxes of their ops, inside the gradient box where they belong', async () => {
    const r = await runCli('graph', 'mlp-gradient', '--optimized', '--dot');
    expect(r.code, r.err).to.equal(0);
    expect(r.out).to.include('label="fused kernel (fused)"');
    expect(r.out).not.to.match(/\[label="fused\{/);
    // A fused cluster nested in the gradient cluster.
    const grad = r.out.indexOf('subgraph "cluster_gradients"');
    expect(grad).to.be.greaterThan(0);
    expect(r.out.slice(grad)).to.match(/^subgraph "cluster_gradients" \{[^]*?\n\s+subgraph "cluster_inner\d+" \{/);
  });
});

describe('cli: theanine passes', () => {
  it('lists every pass of the pipeline with its time, node counts and what it rewrites', async () => {
    const r = await runCli('passes', 'softmax-crossentropy');
    expect(r.code, r.err).to.equal(0);
    const lines = r.out.trimEnd().split('\n');
    expect(lines[0]).to.match(/^softmax-crossentropy: /);
    expect(lines[1]).to.match(/^pass\s+time \(ms\)\s+nodes\s+what it rewrites$/);
    const rows = lines.slice(2).map((l) => /^(\w+)\s+(\d+\.\d\d)\s+(\d+) -> (\d+)\s+(.+)$/.exec(l));
    expect(rows.every((m) => m !== null), r.out).to.equal(true);
    expect(rows.map((m) => m![1])).to.include.members(['merge', 'canonicalize', 'stabilize', 'specialize', 'fusion']);
    // Each pass starts from the count the previous one left; stabilize makes one op of the crossentropy.
    rows.slice(1).forEach((m, i) => expect(m![3]).to.equal(rows[i]![4]));
    const stab = rows.find((m) => m![1] === 'stabilize')!;
    expect(Number(stab[4])).to.be.below(Number(stab[3]));
  });

  it('--optimizer eqsat adds the eqsat pass, with its line (e-graph growth, stop, costs, choice) under it', async () => {
    const r = await runCli('passes', 'softmax-crossentropy', '--optimizer', 'eqsat');
    expect(r.code, r.err).to.equal(0);
    const lines = r.out.trimEnd().split('\n');
    const at = lines.findIndex((l) => /^eqsat\s+\d+\.\d\d\s+\d+ -> \d+\s+equality saturation/.test(l));
    expect(at, r.out).to.be.greaterThan(1);
    expect(lines[at + 1], r.out).to.match(/^\s+\d+ iterations \(e-nodes [0-9 >-]+\), stopped: \w+, .*cost greedy .* extracted .*graph/);
    const bad = await runCli('passes', 'softmax-crossentropy', '--optimizer', 'O3');
    expect(bad.code).to.not.equal(0);
    expect(bad.err).to.match(/O3.*fast_run, fast_compile, eqsat/);
  });
});

describe('cli: theanine export', function () {
  this.timeout(60000);
  it('writes the standalone module of a builder file and says what it wrote', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'theanine-export-cli-'));
    try {
      const out = path.join(dir, 'net.ts');
      const r = await runCli('export', 'test/cli/fixtures/export-model.ts', '--out', out, '--name', 'classify');
      expect(r.code, r.err).to.equal(0);
      expect(r.out).to.equal(`wrote ${out}: export function classify\n`);
      expect(fs.readFileSync(out, 'utf8')).to.match(/export function classify\(x: Float32Array\)/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
