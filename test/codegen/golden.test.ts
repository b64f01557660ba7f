// Golden files of generated code for a few kernels, so a change in codegen shows up in review.
// Regenerate with UPDATE_GOLDEN=1 (then read the diff). Loop variables and temporaries get
// process-wide numbers, so they are renumbered by first appearance before comparing.
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { backend as K } from '../../src/index.js';
import type { Node } from '../../src/ir/node.js';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'golden');

export function normalizeSource(src: string): string {
  const names = new Map<string, string>();
  const count: Record<string, number> = {};
  return src.replace(/\b([ita])(\d+)\b/g, (m, kind: string) => {
    let n = names.get(m);
    if (n === undefined) { count[kind] = (count[kind] ?? -1) + 1; n = `${kind}${count[kind]}`; names.set(m, n); }
    return n;
  });
}

function golden(name: string, build: () => { inputs: Node[]; outputs: Node[] }): void {
  it(name, () => {
    const { inputs, outputs } = build();
    const src = normalizeSource(K.function(inputs, outputs).source());
    const file = path.join(dir, `${name}.js`);
    if (process.env['UPDATE_GOLDEN'] === '1') fs.writeFileSync(file, src + '\n');
    expect(fs.existsSync(file), `${file} is missing: run with UPDATE_GOLDEN=1`).to.equal(true);
    expect(src + '\n').to.equal(fs.readFileSync(file, 'utf8'));
  });
}

describe('codegen/cpu golden sources', () => {
  golden('elementwise-chain', () => {
    const x = K.placeholder([1000], null, 'float32');
    const y = K.placeholder([1000], null, 'float32');
    return { inputs: [x, y], outputs: [K.tanh(x.mul(y).add(1)).mul(x).sub(y)] };
  });
  golden('softmax-rows', () => {
    const x = K.placeholder([16, 10], null, 'float32');
    return { inputs: [x], outputs: [K.softmax(x)] };
  });
  golden('dense-bias-relu', () => {
    const x = K.placeholder([8, 12], null, 'float32');
    const W = K.variable(new Float32Array(12 * 6).fill(0.5).reduce<number[][]>((rows, v, i) => { (rows[Math.floor(i / 6)] ??= []).push(v); return rows; }, []));
    const b = K.variable(new Array(6).fill(0.1));
    return { inputs: [x], outputs: [K.relu(K.dot(x, W).add(b))] };
  });
  golden('column-sum-of-transpose', () => {
    const x = K.placeholder([6, 4], null, 'float64');
    return { inputs: [x], outputs: [K.sum(K.exp(x.T), 0)] };
  });
});
