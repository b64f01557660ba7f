// The reductions are rows (src/ir/ops/reduce.ts), as the elementwise ops are: each backend derives
// its table from them. Checked here: a reduction's name appears in few files of src (its row, its
// gradient, its K functions), each row's identity is neutral for its fold, and each fold spelling
// (the cpu's JavaScript, gpu.js', the SIMD tier's lane op) computes the row's reference fold.
import { expect } from 'chai';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { reductionRows, reduceOps } from '../../src/ir/ops/reduce.js';
import { FOLD_ROWS, REDUCE_INIT } from '../../src/codegen/kernel/expr.js';
import { foldCode } from '../../src/codegen/cpu/js.js';
import { FOLD } from '../../src/codegen/cpu/wasm/reduce-body.js';
import { S } from '../../src/codegen/cpu/wasm/approx.js';
import { templates } from '../../src/codegen/lower/templates.js';
import { tfKernels } from '../../src/runtime/tfjs/kernels/index.js';
import { onnxTranslations } from '../../src/runtime/onnx/ops/index.js';
import { ONNX_OPERATORS } from '../../src/runtime/onnx/operators.js';
import { ONNX_IMPORTABLE } from '../../src/api/onnx.js';

const SRC = join(import.meta.dirname, '../../src');
/** A new reduction touches its row, its gradient rule and its K function (plus K.size's use of prod). */
const MAX_FILES_NAMING_A_REDUCTION = 5;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) return relative(SRC, p) === 'examples' ? [] : files(p);
    return p.endsWith('.ts') ? [p] : [];
  });
}

/** Files that name `op` as a string ('prod') or a table key (prod: ...). */
function naming(op: string): string[] {
  const re = new RegExp(`['"]${op}['"]|(^|[^.\\w])${op}\\s*:`, 'm');
  return files(SRC).filter((f) => re.test(readFileSync(f, 'utf8'))).map((f) => relative(SRC, f)).sort();
}

const SAMPLES = [0, 1, -1, 2.5, -0.5, 3, NaN, Infinity, -Infinity];
const same = (a: number, b: number) => (Number.isNaN(a) ? Number.isNaN(b) : a === b);

describe('reductions as rows (src/ir/ops/reduce.ts)', () => {
  it(`'prod' is named in at most ${MAX_FILES_NAMING_A_REDUCTION} files of src (examples aside)`, () => {
    const found = naming('prod');
    expect(found).to.include('ir/ops/reduce.ts');
    expect(found.length, found.join(', ')).to.be.at.most(MAX_FILES_NAMING_A_REDUCTION);
  });

  it('each row\'s identity is neutral for its fold, on 0/1 values for the logical rows', () => {
    for (const r of reductionRows) {
      const vs = r.family === 'logical' ? [0, 1] : SAMPLES;
      for (const v of vs) expect(same(r.fold(r.identity, v), v), `${r.name}: fold(${r.identity}, ${v})`).to.equal(true);
    }
  });

  it('the kernel folds are the rows that name themselves; every row computes through one of them', () => {
    expect([...FOLD_ROWS.keys()].sort()).to.deep.equal(['all', 'any', 'max', 'min', 'prod', 'sum']);
    for (const r of reductionRows) {
      expect(FOLD_ROWS.has(r.spelling.kernel as never), r.name).to.equal(true);
      expect(REDUCE_INIT[r.spelling.kernel as keyof typeof REDUCE_INIT]).to.equal(r.identity);
    }
  });

  it('the cpu\'s and gpu.js\' fold statements compute the reference fold (NaN as the reference)', () => {
    for (const [op, r] of FOLD_ROWS) {
      const js = new Function('a', 'v', `${foldCode(op, 'a', 'v')} return a;`) as (a: number, v: number) => number;
      const vs = r.family === 'logical' ? [0, 1] : SAMPLES;
      for (const a of vs) for (const v of vs) expect(same(js(a, v), r.fold(a, v)), `${op}: ${a}, ${v}`).to.equal(true);
      // gpu.js: its helpers (t_nanmax) and float literals differ, so its spelling is checked for its form only
      const gpu = r.spelling.gpu ?? r.spelling.js!;
      expect(gpu, op).to.match(/\$0/).and.match(/\$1/);
    }
  });

  it('the SIMD tier folds exactly the rows with a lane op, with that op', () => {
    for (const [op, r] of FOLD_ROWS) expect(FOLD[op], op).to.equal(r.spelling.wasm === undefined ? undefined : S[r.spelling.wasm]);
  });

  it('every ONNX name of a row is an ai.onnx operator, and importOnnx reads the names of the same meaning', () => {
    for (const r of reductionRows) {
      expect(ONNX_OPERATORS[r.spelling.onnx], r.name).to.be.a('number');
      if (r.family !== 'logical') expect(ONNX_IMPORTABLE, r.name).to.include(r.spelling.onnx);
    }
  });

  it('every row has a kernel template, a tfjs kernel and an ONNX translation', () => {
    for (const name of Object.keys(reduceOps) as (keyof typeof reduceOps)[]) {
      expect(templates[name], name).to.not.equal(undefined);
      expect(typeof tfKernels[name], name).to.equal('function');
      expect(typeof onnxTranslations[name], name).to.equal('function');
    }
  });
});
