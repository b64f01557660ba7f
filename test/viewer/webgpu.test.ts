// The viewer's Kernels tab on the gpu device's webgpu mode: f.source() split into its WGSL
// kernels, each fused kernel linked to the node whose ops it names (viewer/model.ts kernelsOf).
import { expect } from 'chai';
import { VIEWER_EXAMPLES } from '../../src/examples/viewer-programs.js';
import { analyze, compile, kernelsOf, numbers, opsOf, referenceNumbers, runProgram } from '../../viewer/model.js';
import { topoSort } from '../../src/ir/graph.js';
import { onWebgpu } from '../helpers/webgpu.js';

describe('viewer model on gpu:webgpu', function () {
  this.timeout(300_000);
  onWebgpu();

  it('kernelsOf: one entry per WGSL kernel with its shader, fused kernels linked to their nodes', () => {
    const a = analyze(runProgram(VIEWER_EXAMPLES['mlp-gradient']));
    const f = compile(a, 'gpu');
    expect(f.device).to.equal('gpu:webgpu');
    const got = numbers(f, a);
    const want = referenceNumbers(a);
    got.forEach((g, k) => g.forEach((v, i) => expect(Math.abs(v - want[k]![i]!), `output ${k}[${i}]`).to.be.below(1e-4 + 1e-4 * Math.abs(want[k]![i]!))));
    const src = f.source();
    const headers = src.split('\n').filter((l) => /^\s*\/\/ .+: workgroups \d+ x \d+ x \d+$/.test(l));
    const ks = kernelsOf(src, f.graph);
    expect(ks.length, 'one view per WGSL kernel').to.equal(headers.length);
    expect(ks.length).to.be.above(1);
    for (const k of ks) expect(k.source, k.label).to.match(/@compute @workgroup_size\(\d+(, \d+)?\)/).and.to.match(/fn main\(/);
    const graph = new Set(topoSort(f.graph));
    const linked = ks.filter((k) => k.node !== undefined);
    expect(linked.length / ks.length, 'most kernels are linked').to.be.above(0.6);
    for (const k of linked) {
      expect(graph.has(k.node!)).to.equal(true);
      const ops = (/\[([^\]]+)\]/.exec(k.label)?.[1] ?? k.label.split(' ')[0]!).split(',');
      expect([...opsOf(k.node!)].sort(), `${k.name} ${k.label}`).to.deep.equal([...ops].sort());
    }
    expect(new Set(linked.map((k) => k.node)).size, 'one kernel per node').to.equal(linked.length);
  });
});
