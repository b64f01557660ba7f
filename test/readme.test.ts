// The README's example, copied verbatim below (only the import path differs), run with
// console.log captured so the printed values can be checked against the README's comments.
import { expect } from 'chai';
import * as fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { autodiff, backend as K, debugprint } from '../src/index.js';

const here = fileURLToPath(import.meta.url);

describe('README', () => {
  beforeEach(() => K.clear_session());

  it('the example prints what its comments say', () => {
    const logged: unknown[][] = [];
    const log = console.log;
    console.log = (...args: unknown[]) => { logged.push(args); };
    const returned: unknown[] = [];
    try {
      // ---- README example ----
      const x = K.placeholder([null, 3], null, 'float32', false, 'x'); // batch of unknown size
      const W = K.variable([[1, 2], [3, 4], [5, 6]], null, 'W');
      const y = K.sum(K.dot(x, W).add(1), 1);                        // methods chain: .add .mul .T .dot
      console.log(K.int_shape(y));                                     // [ null ]
      console.log(debugprint(y));                                      // Theano-style graph listing

      const f = K.function([x], [y]);
      // @ts-expect-error -- README code is for default `strict`; this repo adds noUncheckedIndexedAccess
      console.log(f([[[1, 1, 1], [0, 1, 0]]])[0].toArray());           // [ 23, 9 ]

      // Gradients are graphs too: d sum(y) / dW, compiled like any output.
      const grads = K.gradients(K.sum(y), [W]);
      // @ts-expect-error -- README code is for default `strict`; this repo adds noUncheckedIndexedAccess
      console.log(K.function([x], grads)([[[1, 1, 1], [0, 1, 0]]])[0].toArray()); // [ [ 1, 1 ], [ 2, 2 ], [ 1, 1 ] ]

      // Updates: outputs read the old values, then all updates are written together.
      const acc = K.variable(0);
      const inc = K.placeholder([]);
      const step = K.function([inc], [acc], [K.update_add(acc, inc)]);
      step([1]); // [0]
      step([1]); // [1]
      // ---- end ----
      K.set_value(acc, 0);
      returned.push(step([1])[0]!.toArray(), step([1])[0]!.toArray(), K.get_value(acc).toArray());
    } finally {
      console.log = log;
    }
    expect(logged).to.have.length(4);
    expect(logged[0]).to.deep.equal([[null]]);
    expect(logged[1]).to.deep.equal([[
      'sum{axes=[1], keepdims=false} [id A] float32 (None,)',
      ' |add [id B] float32 (None, 2)',
      ' | |dot [id C] float32 (None, 2)',
      ' | | |placeholder "x" [id D] float32 (None, 3)',
      ' | | |variable "W" [id E] float32 (3, 2)',
      ' | |constant{1} [id F] float32 ()',
    ].join('\n')]);
    expect(logged[2]).to.deep.equal([[23, 9]]);
    expect(logged[3]).to.deep.equal([[[1, 1], [2, 2], [1, 1]]]);
    expect(returned).to.deep.equal([0, 1, 2]);
  });

  it('the autodiff example prints what its comment says (jvp, hessian_vector_product, vmap)', () => {
    const logged: unknown[][] = [];
    const log = console.log;
    console.log = (...args: unknown[]) => { logged.push(args); };
    try {
      // ---- README autodiff example ----
      const w = K.placeholder([2], null, 'float32', false, 'w');
      const cost = K.sum(K.pow(w, 3));                                    // w0^3 + w1^3
      const v = K.constant([1, 0]);
      const jv = autodiff.jvp(cost, w, v);                                // forward mode: 3 w0^2
      const hv = autodiff.hessian_vector_product(cost, w, v);             // forward over reverse: H v
      const rowNorm = autodiff.vmap((r: typeof w) => K.sum(K.square(r))); // a function of one row...
      const X = K.placeholder([3, 2], null, 'float32', false, 'X');       // ...applied to every row
      const f = K.function([w, X], [jv, hv, rowNorm(X)]);
      console.log(f([[1, 2], [[1, 1], [2, 0], [0, 3]]]).map((a) => a.toArray())); // [ 3, [ 6, 0 ], [ 2, 4, 9 ] ]
      // ---- end ----
    } finally {
      console.log = log;
    }
    // At w = [1, 2], v = [1, 0]: jvp = 3 w0^2 = 3; H = diag(6 w) so H v = [6, 0]; row sums of squares 2, 4, 9.
    expect(logged).to.deep.equal([[[3, [6, 0], [2, 4, 9]]]]);
  });

  for (const [heading, what] of [['A first graph', 'README example'], ['Autodiff beyond K.gradients', 'README autodiff example']] as const) {
    it(`this test holds the README's "${heading}" block verbatim`, () => {
      const readme = fs.readFileSync(new URL('../README.md', import.meta.url), 'utf8');
      const block = new RegExp(`## ${heading}\\s+[^\\n]*(?:\\n[^\\n\`]+)*\\s*\`\`\`ts\\n([\\s\\S]*?)\`\`\``).exec(readme);
      expect(block, `README has the "${heading}" ts block`).to.not.equal(null);
      const mine = fs.readFileSync(here, 'utf8');
      const section = mine.slice(mine.indexOf(`// ---- ${what} ----`), mine.indexOf('// ---- end ----', mine.indexOf(`// ---- ${what} ----`)));
      for (const line of block![1]!.split('\n')) {
        if (line.trim() === '' || line.startsWith('import ')) continue;
        expect(section, `README line missing from the test: ${line}`).to.include(`      ${line}\n`);
      }
    });
  }
});
