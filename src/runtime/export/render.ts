// A lowered Program as TypeScript: the same kernels the cpu module runs (rendered by
// src/codegen/cpu), declared as typed top-level functions, and the same driver
// (src/codegen/cpu/driver.ts) bound to module statics instead of run-time slots: planned
// buffers are module-level typed arrays, constants and variables are module data, and a Scan's
// body is a typed function the loop calls. Extern steps (reference implementations) cannot be
// exported: they are refused with the op's name.
import type { NDArray } from '../../ir/ndarray.js';
import { isBuiltin } from '../../ir/registry.js';
import type { ScalarFn } from '../../codegen/kernel/expr.js';
import type { MatmulKernel, Program, ScanStep } from '../../codegen/kernel/ir.js';
import { CLASS_ARRAY } from '../../codegen/transform/plan.js';
import { prepare } from '../../codegen/pipeline.js';
import { renderDriver } from '../../codegen/cpu/driver.js';
import { arrayType, jsString } from '../../codegen/cpu/js.js';
import { provenanceComment } from '../../ir/provenance.js';
import type { KernelSource } from '../../codegen/cpu/loop.js';
import { accSize } from '../../codegen/cpu/matmul.js';

/** An op an exported module cannot contain (it has no code template). */
export class ExportError extends Error {
  override name = 'ExportError';
}

export interface TsParam {
  readonly name: string;
  readonly type: string;
  readonly initializer?: string;
}
export interface TsFunction {
  readonly name: string;
  readonly params: readonly TsParam[];
  readonly returnType: string;
  readonly body: string;
  readonly doc?: string;
}

/** The array type of a matmul's packs and tile sums (what its kernels take first): its `sum` dtype. */
const sumArray = (s: MatmulKernel) => arrayType(s.sum);

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
    if (k === undefined) {
      k = this.scalarFns.length;
      this.scalarFns.push(fn);
      this.fnIndex.set(fn, k);
    }
    return `_f${k}`;
  }

  constantName(v: NDArray): string {
    let n = this.constIndex.get(v);
    if (n === undefined) {
      n = `_c${this.constants.length}`;
      this.constants.push({ name: n, value: v });
      this.constIndex.set(v, n);
    }
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
  /** Whether the module's function updates variable slot `i` (a variable it never updates is as constant as a constant). */
  readonly updates?: (slot: number) => boolean;
  /** The learning phase (a number expression), top-level only. */
  readonly phase?: string;
  /** Write targets into these (Scan bodies); otherwise they are returned. */
  readonly out?: (k: number) => string;
}

/** Splits a rendered kernel into a typed declaration. */
function declareKernel(src: KernelSource, name: string, bufType: (id: number) => string, accType: string): TsFunction {
  const nl = src.source.indexOf('\n');
  const head = /^function \w+\(([^)]*)\) \{(?: \/\/ (.*))?$/.exec(src.source.slice(0, nl));
  if (head === null || !src.source.endsWith('\n}')) throw new Error('internal: unexpected kernel source shape');
  const body = src.source.slice(nl + 1, -2);
  const params = head[1]!
    .split(', ')
    .filter((a) => a !== '')
    .map((a) => {
      // Row bounds a kernel does not use (the matmul compute walks all its tiles) are marked unused.
      if (a === 'lo' || a === 'hi') return { name: new RegExp(`\\b${a}\\b`).test(body) ? a : `_${a}`, type: 'number' };
      if (a === 'acc') return { name: a, type: accType };
      const m = /^b(\d+)$/.exec(a);
      if (m === null) throw new Error(`internal: unexpected kernel parameter ${a}`);
      return { name: a, type: bufType(Number(m[1])) };
    });
  return { name, params, returnType: 'void', body, ...(head[2] !== undefined ? { doc: head[2] } : {}) };
}

/** Renders program `p`: its kernels and bodies go to `m`, its driver lines are returned with the result expressions. */
export function renderProgram(m: ModuleBuilder, p: Program, env: ProgramEnv): { lines: string[]; results: string[] } {
  const prepared = prepare(p, { wasm: false }); // the module has no WebAssembly: the JavaScript kernels and micro-kernel
  const plan = prepared.plan;
  const slotName = (sl: number) => `_${env.prefix}slot${sl}`;
  plan.slots.forEach((s, i) => m.statics.push([slotName(i), `new ${CLASS_ARRAY[s.cls]}(${s.size})`]));
  const bufType = (id: number) => arrayType(p.buffers[id]!.dtype);
  const count = { k: 0, v: 0, mm: 0 };
  const d = renderDriver(prepared, {
    kernel(s, render) {
      const src = render({ bufName: (id) => `b${id}`, fnName: (fn) => m.fnName(fn) });
      const name = `_${env.prefix}k${count.k++}`;
      m.functions.push(declareKernel(src, name, bufType, s.kind === 'matmul' ? sumArray(s) : 'Float64Array'));
      return { ...src, name };
    },
    slot: slotName,
    hoist(init) {
      const name = `_${env.prefix}v${count.v++}`;
      m.statics.push([name, init]);
      return name;
    },
    input: env.input,
    variable(slot) {
      if (env.variable === undefined) throw new Error('internal: a Scan body reads a variable');
      return env.variable(slot);
    },
    constant: (v) => m.constantName(v),
    phase(name) {
      if (env.phase === undefined) throw new Error('internal: a Scan body reads the learning phase');
      return [`const ${name} = new Uint8Array(1);`, `${name}[0] = ${env.phase};`];
    },
    epoch(name) {
      // Unseeded random draws are keyed by a counter of the module's calls (a Scan body reads its caller's).
      if (!m.statics.some(([n]) => n === '_epoch')) m.statics.push(['_epoch', 'new Float64Array(1)']);
      return [...(env.variable !== undefined ? ['_epoch[0] += 1;'] : []), `const ${name} = _epoch;`];
    },
    out: env.out,
    // A matmul's packing buffers and tile sums (the cpu module takes them from its packing arena).
    // Each product has its own, so the pack of a constant operand (or of a variable the module
    // never updates) is made at the first call only.
    matmul(s, _m, sources, name) {
      const pack = `_${env.prefix}mm${count.mm++}`;
      const arr = sumArray(s);
      m.statics.push(
        [`${pack}a`, `new ${arr}(${p.buffers[s.packA]!.size})`],
        [`${pack}b`, `new ${arr}(${p.buffers[s.packB]!.size})`],
        [`${pack}c`, `new ${arr}(${accSize(s)})`],
      );
      const fixed = (id: number | undefined) => {
        const d = id === undefined ? undefined : p.buffers[id]!;
        return (
          d !== undefined &&
          (d.role === 'constant' || (d.role === 'variable' && env.updates !== undefined && !env.updates(d.slot!)))
        );
      };
      const kept = (id: number) => {
        if (!fixed(sources.get(id))) return undefined;
        const flag = `${pack}${id === s.packA ? 'a' : 'b'}packed`;
        m.statics.push([flag, 'new Uint8Array(1)']);
        return { when: `${flag}[0] === 0`, done: `${flag}[0] = 1;` };
      };
      return { open: `{ const ${name(s.packA)} = ${pack}a, ${name(s.packB)} = ${pack}b, acc = ${pack}c;`, kept };
    },
    scan: (s, k, ins, outs) => ({
      setup: [],
      call: [`${scanBody(m, s, `${env.prefix}s${k}`)}(${[...ins, ...outs].map((a) => a.expr).join(', ')});`],
    }),
    print(s, input) {
      // print_tensor writes to the console, as the library's default print hook does (the module has no other hook).
      if (!m.statics.some(([n]) => n === '_print')) {
        m.statics.push([
          '_print',
          '(line: string): void => { (globalThis as unknown as { console?: { log(s: string): void } }).console?.log(line); }',
        ]);
      }
      return `_print(${jsString(s.message)} + rt.fmt(${input}, ${JSON.stringify(s.input.shape)}, ${s.input.dtype === 'bool'}));`;
    },
    extern(s) {
      const op = JSON.stringify(s.def.name);
      throw new ExportError(
        `op ${op} has no code template: compiled functions run it through its reference implementation, ` +
          'which an exported module cannot contain (the module does not import theanine). ' +
          (isBuiltin(s.def.name)
            ? `The built-in op ${op} has no kernel (${s.reason}): export a function without it (its result can be fed in as an input)`
            : `Give the user op ${op} a cpu template (defineOp({ cpu: '...' })), or export a function without it`),
      );
    },
    step(s, _i, lines) {
      // Each step names the user's calls it computes (escaped: file names are user strings).
      const note = provenanceComment(s.origin);
      return note === undefined ? lines : [`// ${note}`, ...lines];
    },
  });
  return { lines: [...d.prologue, ...d.body, ...d.copies], results: d.results };
}

/** A Scan's body as a typed function (declared in `m`); returns its name. */
function scanBody(m: ModuleBuilder, s: ScanStep, prefix: string): string {
  const sub = renderProgram(m, s.body, { prefix: `${prefix}_`, input: (i) => `in${i}`, out: (k) => `out${k}` });
  // Args the step's code never names (read for their shape only, or not at all) are marked unused.
  const read = new Set([...sub.lines.join('\n').matchAll(/\bin(\d+)\b/g)].map((x) => Number(x[1])));
  const name = `_${prefix}`;
  m.functions.push({
    name,
    params: [
      ...[...s.seqs, ...s.inits, ...s.consts].map((v, i) => ({
        name: read.has(i) ? `in${i}` : `_in${i}`,
        type: arrayType(v.dtype),
      })),
      ...s.body.targets.map((t, k) => ({ name: `out${k}`, type: arrayType(t.dtype) })),
    ],
    returnType: 'void',
    body: sub.lines.join('\n'),
    doc: `one step of a Scan: inputs are the sequences' slices, the states, the constants; outputs are the step's outputs, then the new states`,
  });
  return name;
}
