// A lowered Program as TypeScript: the same kernels the cpu module runs (rendered by
// src/codegen/cpu), declared as typed top-level functions, and a driver with the same steps as
// buildModule's (src/codegen/cpu/module.ts), except that everything is bound statically: planned
// buffers are module-level typed arrays, constants and variables are module data, and a Scan's
// body is a typed function the loop calls. Extern steps (reference implementations) cannot be
// exported: they are refused with the op's name.
import type { NDArray } from '../../ir/ndarray.js';
import type { DType } from '../../ir/dtype.js';
import { isBuiltin } from '../../ir/registry.js';
import { ExprBuilder, type ScalarFn } from '../../codegen/expr.js';
import { collapseLoopKernel } from '../../codegen/collapse.js';
import type { Program, ScanStep, ValueRef } from '../../codegen/kernel.js';
import { planBuffers, type StorageClass } from '../../codegen/plan.js';
import { arrayType, commentText, jsString } from '../../codegen/cpu/js.js';
import { provenanceComment } from '../../ir/provenance.js';
import { renderLoopKernel, type KernelSource, type RenderEnv } from '../../codegen/cpu/loop.js';
import { accSize, packing, renderMatmulCompute } from '../../codegen/cpu/matmul.js';
import { sizeOf } from '../../ir/ndarray.js';

/** An op an exported module cannot contain (it has no code template). */
export class ExportError extends Error {
  override name = 'ExportError';
}

export interface TsParam { readonly name: string; readonly type: string; readonly initializer?: string }
export interface TsFunction {
  readonly name: string;
  readonly params: readonly TsParam[];
  readonly returnType: string;
  readonly body: string;
  readonly doc?: string;
}

const CLASS_ARRAY: Record<StorageClass, string> = {
  f32: 'Float32Array', f64: 'Float64Array', i32: 'Int32Array', i16: 'Int16Array', i8: 'Int8Array', u8: 'Uint8Array',
};

const size = (v: { shape: readonly number[] }) => sizeOf(v.shape);

/** What the JavaScript matmul kernels take first: the sums of a row of tiles (float32 for a product summed in float32). */
export const MATMUL_TYPE = 'Float64Array';

/** Everything a module collects while its programs are rendered. */
export class ModuleBuilder {
  /** Kernels and Scan bodies, each before its first caller. */
  readonly functions: TsFunction[] = [];
  /** Module-level consts in order: [name, initializer] (planned buffers, their views). */
  readonly statics: [string, string][] = [];
  readonly scalarFns: ScalarFn[] = [];
  /** Constant data the programs read, by name. */
  readonly constants: { readonly name: string; readonly value: NDArray }[] = [];
  private readonly fnIndex = new Map<ScalarFn, number>();
  private readonly constIndex = new Map<NDArray, string>();

  fnName(fn: ScalarFn): string {
    let k = this.fnIndex.get(fn);
    if (k === undefined) { k = this.scalarFns.length; this.scalarFns.push(fn); this.fnIndex.set(fn, k); }
    return `_f${k}`;
  }

  constantName(v: NDArray): string {
    let n = this.constIndex.get(v);
    if (n === undefined) { n = `_c${this.constants.length}`; this.constants.push({ name: n, value: v }); this.constIndex.set(v, n); }
    return n;
  }
}

export interface ProgramEnv {
  /** Names given to this program's kernels, planned arrays and Scan bodies. */
  readonly prefix: string;
  /** The expression of input slot `i`. */
  readonly input: (slot: number) => string;
  /** The expression of variable slot `i` (the top-level program only). */
  readonly variable?: (slot: number) => string;
  /** The learning phase (a number expression), top-level only. */
  readonly phase?: string;
  /** Write targets into these (Scan bodies); otherwise they are returned. */
  readonly out?: (k: number) => string;
}

/** Splits a rendered kernel into a typed declaration. */
function declareKernel(src: KernelSource, name: string, bufType: (id: number) => string): TsFunction {
  const nl = src.source.indexOf('\n');
  const head = /^function \w+\(([^)]*)\) \{(?: \/\/ (.*))?$/.exec(src.source.slice(0, nl));
  if (head === null || !src.source.endsWith('\n}')) throw new Error('internal: unexpected kernel source shape');
  const body = src.source.slice(nl + 1, -2);
  const params = head[1]!.split(', ').filter((a) => a !== '').map((a) => {
    // Row bounds a kernel does not use (the matmul compute walks all its tiles) are marked unused.
    if (a === 'lo' || a === 'hi') return { name: new RegExp(`\\b${a}\\b`).test(body) ? a : `_${a}`, type: 'number' };
    if (a === 'acc') return { name: a, type: /\brt\.rowPanel32\(/.test(body) ? 'Float32Array' : MATMUL_TYPE };
    const m = /^b(\d+)$/.exec(a);
    if (m === null) throw new Error(`internal: unexpected kernel parameter ${a}`);
    return { name: a, type: bufType(Number(m[1])) };
  });
  return { name, params, returnType: 'void', body, ...(head[2] !== undefined ? { doc: head[2] } : {}) };
}

/** Renders program `p`: its kernels and bodies go to `m`, its driver lines are returned with the result expressions. */
export function renderProgram(m: ModuleBuilder, p: Program, env: ProgramEnv): { lines: string[]; results: string[] } {
  const plan = planBuffers(p);
  const slotName = (sl: number) => `_${env.prefix}slot${sl}`;
  plan.slots.forEach((s, i) => m.statics.push([slotName(i), `new ${CLASS_ARRAY[s.cls]}(${s.size})`]));
  const bufType = (id: number) => arrayType(p.buffers[id]!.dtype);
  const renderEnv: RenderEnv = { bufName: (id) => `b${id}`, fnName: (fn) => m.fnName(fn) };
  const body: string[] = [];
  let kn = 0;
  // A matmul's packing buffers and tile sums (the cpu module takes them from its packing arena).
  let mn = 0;
  const call = (src: KernelSource) => {
    const name = `_${env.prefix}k${kn++}`;
    m.functions.push(declareKernel(src, name, bufType));
    const args = [...(src.needsAcc === true ? ['acc'] : []), ...src.buffers.map((b) => `b${b}`)].join(', ');
    // Row 0 first, as the cpu module does: V8 sees every path of the loop before optimizing it.
    if (src.rows === undefined) body.push(`${name}(${args});`);
    else if (src.rows <= 1) body.push(`${name}(${args}, 0, ${src.rows});`);
    else body.push(`${name}(${args}, 0, 1); ${name}(${args}, 1, ${src.rows});`);
  };
  let vn = 0;
  const view = (v: { buf: number; offset: number; shape: readonly number[] }): string => {
    const n = size(v);
    const slot = plan.slotOf.get(v.buf);
    if (slot !== undefined) {
      const name = `_${env.prefix}v${vn++}`;
      m.statics.push([name, `${slotName(slot)}.subarray(${v.offset}, ${v.offset + n})`]);
      return name;
    }
    return v.offset === 0 && n === p.buffers[v.buf]!.size ? `b${v.buf}` : `b${v.buf}.subarray(${v.offset}, ${v.offset + n})`;
  };

  let sn = 0;
  for (const s of p.steps) {
    // Each step names the user's calls it computes (escaped: file names are user strings).
    const note = provenanceComment(s.origin);
    if (note !== undefined) body.push(`// ${note}`);
    if (s.kind === 'loop') call(renderLoopKernel(s, 'k', renderEnv));
    else if (s.kind === 'matmul') {
      const pack = `_${env.prefix}mm${mn++}`;
      const nA = p.buffers[s.packA]!.size, nB = p.buffers[s.packB]!.size, nAcc = accSize(s);
      const arr = s.sum === 'float32' ? 'Float32Array' : 'Float64Array';
      m.statics.push([`${pack}a`, `new ${arr}(${nA})`], [`${pack}b`, `new ${arr}(${nB})`], [`${pack}c`, `new ${arr}(${nAcc})`]);
      body.push(`{ const b${s.packA} = ${pack}a, b${s.packB} = ${pack}b, acc = ${pack}c;`);
      const pk = packing(s);
      for (const c of pk.calls) {
        const { base, sb, sr, st } = c.op;
        body.push(`rt.packStrided(b${c.dst}, b${c.buf}, ${base}, ${sb}, ${sr}, ${st}, ${s.batch.size}, ${c.rows}, ${s.k.size}, ${c.p});`);
      }
      for (const kern of pk.kernels) call(renderLoopKernel(collapseLoopKernel(kern, new ExprBuilder(() => 'float64')), 'k', renderEnv));
      call(renderMatmulCompute(s, 'k', renderEnv, false)); // the JavaScript micro-kernel: the module has no WebAssembly
      body.push('}');
    } else if (s.kind === 'scan') {
      body.push(...renderScan(m, s, `${env.prefix}s${sn++}`, view));
    } else if (s.kind === 'print') {
      // print_tensor writes to the console, as the library's default print hook does (the module has no other hook).
      if (!m.statics.some(([n]) => n === '_print')) {
        m.statics.push(['_print', '(line: string): void => { (globalThis as unknown as { console?: { log(s: string): void } }).console?.log(line); }']);
      }
      body.push(`_print(${jsString(s.message)} + rt.fmt(${view(s.input)}, ${JSON.stringify(s.input.shape)}, ${s.input.dtype === 'bool'}));`);
    } else {
      const op = JSON.stringify(s.def.name);
      throw new ExportError(
        `op ${op} has no code template: compiled functions run it through its reference implementation, `
        + 'which an exported module cannot contain (the module does not import theanine). '
        + (isBuiltin(s.def.name)
          ? `The built-in op ${op} has no kernel (${s.reason}): export a function without it (its result can be fed in as an input)`
          : `Give the user op ${op} a cpu template (defineOp({ cpu: '...' })), or export a function without it`),
      );
    }
  }

  const results = p.targets.map((t) => (t.copy ? `b${t.buf}.slice(${t.offset}, ${t.offset + size(t)})` : `b${t.buf}`));
  const epilogue = env.out === undefined ? [] : p.targets.flatMap((t, k) => (
    !t.copy && p.buffers[t.buf]!.role === 'target' ? [] : [`rt.copy(${env.out!(k)}, 0, b${t.buf}, ${t.offset}, ${size(t)});`]
  ));
  // Only buffers the driver names get a local (a Scan's step buffers are module-level views).
  const named = new Set([...[...body, ...epilogue, ...results].join('\n').matchAll(/\bb(\d+)\b/g)].map((x) => Number(x[1])));
  const prologue: string[] = [];
  for (const b of p.buffers) {
    const name = `b${b.id}`;
    if (!named.has(b.id)) continue;
    switch (b.role) {
      case 'input': prologue.push(`const ${name} = ${env.input(b.slot!)};`); break;
      case 'variable':
        if (env.variable === undefined) throw new Error('internal: a Scan body reads a variable');
        prologue.push(`const ${name} = ${env.variable(b.slot!)};`);
        break;
      case 'phase':
        if (env.phase === undefined) throw new Error('internal: a Scan body reads the learning phase');
        prologue.push(`const ${name} = new Uint8Array(1);`, `${name}[0] = ${env.phase};`);
        break;
      case 'epoch':
        // Unseeded random draws are keyed by a counter of the module's calls (a Scan body reads its caller's).
        if (!m.statics.some(([n]) => n === '_epoch')) m.statics.push(['_epoch', 'new Float64Array(1)']);
        if (env.variable !== undefined) prologue.push('_epoch[0] += 1;');
        prologue.push(`const ${name} = _epoch;`);
        break;
      case 'constant': prologue.push(`const ${name} = ${m.constantName(b.value!)};`); break;
      case 'temp': case 'scratch': {
        const sl = plan.slotOf.get(b.id);
        if (sl !== undefined) prologue.push(`const ${name} = ${slotName(sl)};`);
        break;
      }
      case 'target': {
        const k = env.out !== undefined ? p.targets.findIndex((t) => t.buf === b.id && !t.copy) : -1;
        prologue.push(k >= 0 ? `const ${name} = ${env.out!(k)};` : `const ${name} = new ${arrayType(b.dtype)}(${b.size});`);
        break;
      }
      case 'extern': break;
    }
  }
  return { lines: [...prologue, ...body, ...epilogue], results };
}

/** A Scan step: its body as a typed function, and the loop that calls it (buildModule's renderScan, bound statically). */
function renderScan(m: ModuleBuilder, s: ScanStep, prefix: string, view: (v: ValueRef) => string): string[] {
  const nState = s.inits.length;
  const argRefs: { dtype: DType }[] = [...s.seqs, ...s.inits, ...s.consts];
  const outShapes = s.body.targets.slice(0, s.outStep.length);
  const sub = renderProgram(m, s.body, { prefix: `${prefix}_`, input: (i) => `in${i}`, out: (k) => `out${k}` });
  // Args the step's code never names (read for their shape only, or not at all) are marked unused.
  const read = new Set([...sub.lines.join('\n').matchAll(/\bin(\d+)\b/g)].map((x) => Number(x[1])));
  const inName = (i: number) => (read.has(i) ? `in${i}` : `_in${i}`);
  const name = `_${prefix}`;
  m.functions.push({
    name,
    params: [
      ...argRefs.map((v, i) => ({ name: inName(i), type: arrayType(v.dtype) })),
      ...s.body.targets.map((t, k) => ({ name: `out${k}`, type: arrayType(t.dtype) })),
    ],
    returnType: 'void',
    body: sub.lines.join('\n'),
    doc: `one step of a Scan: inputs are the sequences' slices, the states, the constants; outputs are the step's outputs, then the new states`,
  });
  const whole = (buf: number, like: ValueRef) => view({ buf, offset: 0, shape: like.shape, dtype: like.dtype });
  const seqStep = s.seqStep.map((b, i) => whole(b, { ...s.seqs[i]!, shape: s.seqs[i]!.shape.slice(1) }));
  const stA = s.stateA.map((b, j) => whole(b, s.inits[j]!));
  const stB = s.stateB.map((b, j) => whole(b, s.inits[j]!));
  const outStep = s.outStep.map((b, o) => whole(b, outShapes[o]!));
  const consts = s.consts.map((c) => view(c));
  const T = s.steps;
  const c = (j: number) => `c${prefix}_${j}`;
  const n = (j: number) => `n${prefix}_${j}`;
  const L: string[] = [`{ // ${commentText(s.label)}`];
  s.inits.forEach((v, j) => {
    L.push(`rt.copy(${stA[j]}, 0, b${v.buf}, ${v.offset}, ${size(v)});`);
    L.push(`let ${c(j)} = ${stA[j]}, ${n(j)} = ${stB[j]};`);
  });
  L.push(`for (let k = 0; k < ${T}; k++) {`);
  if (s.seqs.length > 0) L.push(`const t = ${s.backwards ? `${T - 1} - k` : 'k'};`);
  s.seqs.forEach((v, i) => L.push(`rt.copy(${seqStep[i]}, 0, b${v.buf}, ${v.offset} + t * ${size(v) / T}, ${size(v) / T});`));
  const states = Array.from({ length: nState }, (_, j) => c(j));
  const next = Array.from({ length: nState }, (_, j) => n(j));
  L.push(`${name}(${[...seqStep, ...states, ...consts, ...outStep, ...next].join(', ')});`);
  s.outItems.forEach((it, o) => {
    const k = size(outShapes[o]!);
    if (it.keep === 'all') L.push(`rt.copy(b${it.buf}, k * ${k}, ${outStep[o]}, 0, ${k});`);
    else if (it.keep === 'last') L.push(`if (k === ${T - 1}) rt.copy(b${it.buf}, 0, ${outStep[o]}, 0, ${k});`);
  });
  s.stateItems.forEach((it, j) => {
    const k = size(s.inits[j]!);
    if (it.keep === 'all') L.push(`rt.copy(b${it.buf}, k * ${k}, ${n(j)}, 0, ${k});`);
    else if (it.keep === 'last') L.push(`if (k === ${T - 1}) rt.copy(b${it.buf}, 0, ${n(j)}, 0, ${k});`);
  });
  for (let j = 0; j < nState; j++) L.push(`{ const w = ${c(j)}; ${c(j)} = ${n(j)}; ${n(j)} = w; }`);
  L.push('}');
  s.finalItems.forEach((b, j) => L.push(`rt.copy(b${b}, 0, ${c(j)}, 0, ${size(s.inits[j]!)});`));
  L.push('}');
  return L;
}
