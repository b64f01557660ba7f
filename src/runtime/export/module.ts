// Ahead-of-time export (Theano's answer to tfcompile): a compiled function as a
// standalone TypeScript module. The module holds the generated kernels as typed functions, the
// variables' values at export time (base64 in the source, or a `.bin` file beside it above a
// size threshold), and one exported function with typed inputs and outputs whose JSDoc gives
// the shapes. It imports nothing from theanine. It is built with ts-morph and type-checked by
// the TypeScript compiler before it is returned: an export that does not type-check is a bug,
// never written.
import type { DType, TypedArray } from '../../ir/dtype.js';
import { ValueError } from '../../ir/errors.js';
import { describe, formatShape, type NDArray, sizeOf } from '../../ir/ndarray.js';
import type { Node } from '../../ir/node.js';
import type { Program } from '../../codegen/kernel/ir.js';
import { DynamicShapeError } from '../../codegen/lower/lower.js';
import { arrayType, commentText, jsString, literal } from '../../codegen/cpu/js.js';
import { BASE64_DECODER, TYPED_ARRAY, helperNames, helperPrelude, scalarSource } from './prelude.js';
import { ExportError, ModuleBuilder, renderProgram, type TsParam } from './render.js';
import type * as TsMorph from 'ts-morph';
import { buildAndCheck, loadTsMorph, reprint } from './typescript.js';
import { platform } from '#platform';

export { ExportError };

export interface ExportOptions {
  /** The exported function's name (an identifier; the module's other names start with `_` or are `rt`). */
  readonly name: string;
  /** Above this many bytes of data (variables and constants), the data goes to a `.bin` file beside the module. Default 1 MiB. */
  readonly binThreshold?: number;
  /** That file's name (no folders); default `<name>.bin`. */
  readonly binFile?: string;
  /** Concrete input shapes; default: the placeholders' shapes, or else the shapes of the latest call. */
  readonly shapes?: readonly (readonly number[])[];
}

export interface ExportedModule {
  readonly name: string;
  /** The TypeScript module text (formatted, type-checked). */
  readonly source: string;
  /** The data file the module reads, when the data was above the threshold. */
  readonly binary: { readonly fileName: string; readonly bytes: Uint8Array } | undefined;
  /** Writes the module to `path` (and the data file beside it); returns the paths written. */
  write(path: string): string[];
}

/** What exporting needs from a compiled function. */
export interface ExportSource {
  readonly name: string;
  readonly optimizer: string;
  readonly inputs: readonly Node[];
  readonly nOutputs: number;
  readonly updates: readonly (readonly [Node, Node])[];
  /** The program lowered for `shapes`, and the function's variables by slot. */
  lowered(shapes: readonly (readonly number[])[]): { program: Program; variables: readonly Node[] };
  lastInputShapes(): readonly (readonly number[])[] | undefined;
}

const DEFAULT_BIN_THRESHOLD = 1 << 20;
/** Data of at most this many elements is written as an array literal. */
const LITERAL_MAX = 16;
const RESERVED = new Set(
  (
    'break case catch class const continue debugger default delete do else enum export extends false finally for function if import ' +
    'in instanceof new null return super switch this throw true try typeof var void while with yield let static implements interface package private ' +
    'protected public await arguments eval undefined NaN Infinity Math Number Object Array'
  ).split(' '),
);
const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const suggestion = (name: unknown) =>
  typeof name === 'string' && IDENT.test(name.replace(/^_+/, '')) && name.replace(/^_+/, '') !== ''
    ? `${name.replace(/^_+/, '')}Fn`
    : 'model';
/** Names the driver declares; inputs are renamed away from them. */
const DRIVER_NAME = /^([a-z]\d+(_\d+)?|k|t|w|rt|learningPhase)$/;

/** Names the module itself declares or imports besides the runtime helpers. */
const MODULE_NAMES = new Set(['readFileSync', 'TypedArray', 'learningPhase']);

/**
 * The exported function's name must be usable as a declaration in the module:
 * each reason said on its own, with the fix. A name that shadows a global the module uses
 * (Float32Array, RangeError) or a name it imports (readFileSync) made the module fail to
 * type-check, reported as a bug in theanine.
 */
function checkName(name: unknown): string {
  const bad = (why: string) =>
    new ValueError(
      `exportModule: option name ${JSON.stringify(name)} ${why}; pick another name (for example ${JSON.stringify(suggestion(name))})`,
    );
  if (typeof name !== 'string')
    throw new TypeError(
      `exportModule: option name must be a string (the exported function's name), got ${describe(name)}`,
    );
  if (!IDENT.test(name))
    throw bad('is not a JavaScript identifier (letters, digits, _ and $, not starting with a digit)');
  if (RESERVED.has(name)) throw bad('is a reserved word or a built-in name');
  if (name.startsWith('_') || name === 'rt' || helperNames().includes(name) || MODULE_NAMES.has(name)) {
    throw bad(
      `is a name the generated module uses itself (names starting with '_', rt, ${[...MODULE_NAMES].join(', ')}, and the runtime helpers ${helperNames().join(', ')})`,
    );
  }
  if (name in globalThis) throw bad('would shadow the global of that name, which the generated module may use');
  return name;
}

function inputShapes(src: ExportSource, opts: ExportOptions): number[][] {
  const fn = 'exportModule';
  if (opts.shapes !== undefined) {
    if (!Array.isArray(opts.shapes) || opts.shapes.length !== src.inputs.length) {
      throw new ValueError(
        `${fn}: shapes must give one shape per input (${src.inputs.length}), got ${JSON.stringify(opts.shapes)}`,
      );
    }
    return src.inputs.map((ph, i) => {
      const s = opts.shapes![i]!;
      if (
        !Array.isArray(s) ||
        s.length !== ph.ndim ||
        s.some((d, k) => !Number.isInteger(d) || d < 0 || (ph.shape[k] !== null && ph.shape[k] !== d))
      ) {
        throw new ValueError(
          `${fn}: shapes[${i}] = ${JSON.stringify(s)} does not fit input ${i} (${JSON.stringify(ph.name)}) of shape ${formatShape(ph.shape)}`,
        );
      }
      return [...s];
    });
  }
  if (src.inputs.every((n) => n.shape.every((d) => d !== null))) return src.inputs.map((n) => n.shape as number[]);
  const last = src.lastInputShapes();
  if (last !== undefined) return last.map((s) => [...s]);
  const i = src.inputs.findIndex((n) => n.shape.some((d) => d === null));
  throw new ValueError(
    `${fn}: input ${i} (${JSON.stringify(src.inputs[i]!.name)}) has shape ${formatShape(src.inputs[i]!.shape)} with unknown dims; give the shapes to export for (exportModule({ name, shapes })) or call the function once first`,
  );
}

/** Parameter names for the inputs: the placeholders' names where they are usable identifiers. */
function paramNames(inputs: readonly Node[]): string[] {
  const used = new Set<string>();
  return inputs.map((n, i) => {
    let s = n.op === 'learning_phase' ? 'phase' : n.name.replace(/[^A-Za-z0-9_$]/g, '_');
    if (!IDENT.test(s) || RESERVED.has(s) || s.startsWith('_') || DRIVER_NAME.test(s))
      s = `input_${s.replace(/^_+/, '') || i}`;
    if (!IDENT.test(s)) s = `input${i}`;
    let u = s;
    for (let k = 2; used.has(u); k++) u = `${s}${k}`;
    used.add(u);
    return u;
  });
}

interface Blob {
  readonly name: string;
  readonly data: TypedArray;
  readonly dtype: DType;
  readonly what: string;
}

function bytesOf(a: TypedArray): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

/** Initializers for the module's data: literals when tiny, else base64 or slices of the .bin file. */
function dataStatements(
  blobs: readonly Blob[],
  threshold: number,
  binFile: string,
): { lines: string[]; bin: Uint8Array | undefined; decoder: boolean } {
  const big = blobs.filter((b) => b.data.length > LITERAL_MAX);
  const total = big.reduce((s, b) => s + b.data.byteLength, 0);
  const toBin = total > threshold;
  const lines: string[] = [];
  let bin: Uint8Array | undefined;
  const offsets = new Map<string, number>();
  if (toBin) {
    let off = 0;
    for (const b of big) {
      offsets.set(b.name, off);
      off += Math.ceil(b.data.byteLength / 8) * 8;
    } // 8-aligned: any typed array can view it
    bin = new Uint8Array(off);
    for (const b of big) bin.set(bytesOf(b.data), offsets.get(b.name)!);
    lines.push(`// The data (${total} bytes, little-endian) is read from ${commentText(binFile)} beside this module.`);
    lines.push(
      `const _bin = new Uint8Array(readFileSync(new URL(${jsString(`./${binFile}`)}, import.meta.url))).buffer;`,
    );
  }
  for (const b of blobs) {
    const T = arrayType(b.dtype);
    lines.push(`/** ${commentText(b.what)} */`);
    if (b.data.length <= LITERAL_MAX)
      lines.push(`const ${b.name} = new ${T}([${Array.from(b.data, (v) => literal(v)).join(', ')}]);`);
    else if (toBin) lines.push(`const ${b.name} = new ${T}(_bin, ${offsets.get(b.name)!}, ${b.data.length});`);
    else lines.push(`const ${b.name} = new ${T}(_b64(${JSON.stringify(platform.base64(bytesOf(b.data)))}).buffer);`);
  }
  return { lines, bin, decoder: !toBin && big.length > 0 };
}

/** Renders, formats and type-checks the module of `src`. */
export function exportFunction(src: ExportSource, opts: ExportOptions): ExportedModule {
  if (typeof opts !== 'object' || opts === null)
    throw new TypeError('exportModule: expected options { name, binThreshold?, binFile?, shapes? }');
  const name = checkName(opts.name);
  if (src.optimizer === 'none')
    throw new ValueError(
      'exportModule: this function has optimizer "none" (it runs the reference interpreter); compile it with "fast_run" or "fast_compile" to export it',
    );
  const threshold = opts.binThreshold ?? DEFAULT_BIN_THRESHOLD;
  if (typeof threshold !== 'number' || !(threshold >= 0))
    throw new ValueError(
      `exportModule: binThreshold must be a number of bytes >= 0, got ${JSON.stringify(opts.binThreshold)}`,
    );
  const binFile = opts.binFile ?? `${name}.bin`;
  if (
    typeof binFile !== 'string' ||
    binFile === '' ||
    platform.basename(binFile) !== binFile ||
    binFile === '.' ||
    binFile === '..'
  ) {
    throw new ValueError(
      `exportModule: binFile must be a plain file name (no folders), got ${JSON.stringify(opts.binFile)}`,
    );
  }
  const shapes = inputShapes(src, opts);
  let lowered: ReturnType<ExportSource['lowered']>;
  try {
    lowered = src.lowered(shapes);
  } catch (e) {
    // A result whose size depends on input values (not shapes): a module has one fixed layout per export.
    if (e instanceof DynamicShapeError && !e.invalid) {
      throw new ExportError(
        `exportModule(${name}): ${e.message}; an exported module is compiled for fixed input shapes, so every size must follow from them: export a function without ${e.op}`,
      );
    }
    throw e;
  }
  const { program, variables } = lowered;

  const m = new ModuleBuilder();
  const params = paramNames(src.inputs);
  const hasPhase = program.buffers.some((b) => b.role === 'phase');
  const varName = (slot: number) => `_var${slot}`;
  let driver: { lines: string[]; results: string[] };
  try {
    const updated = new Set(src.updates.map(([v]) => variables.indexOf(v)));
    driver = renderProgram(m, program, {
      prefix: '',
      input: (i) => params[i]!,
      variable: varName,
      updates: (slot) => updated.has(slot),
      ...(hasPhase ? { phase: 'learningPhase' } : {}),
    });
  } catch (e) {
    if (e instanceof ExportError) throw new ExportError(`exportModule(${name}): ${e.message}`);
    throw e;
  }

  // Planned arrays nothing names (a Scan item kept 'none' still has its empty buffer) are left out.
  const code = [...m.functions.map((f) => f.body), ...driver.lines, ...driver.results].join('\n');
  let statics = m.statics;
  for (let before = -1; before !== statics.length; ) {
    before = statics.length;
    const kept = statics;
    statics = kept.filter(
      ([n]) =>
        new RegExp(`\\b${n}\\b`).test(code) || kept.some(([o, init]) => o !== n && new RegExp(`\\b${n}\\b`).test(init)),
    );
  }

  // Data: the variables (read and updated) and the constants the kernels read.
  const blobs: Blob[] = [];
  const varSlots = new Map<Node, number>(variables.map((v, i) => [v, i]));
  const extraVars: Node[] = [];
  for (const [v] of src.updates)
    if (!varSlots.has(v)) {
      varSlots.set(v, variables.length + extraVars.length);
      extraVars.push(v);
    }
  for (const [v, slot] of varSlots) {
    blobs.push({
      name: varName(slot),
      data: v.cell!.value.data.slice(),
      dtype: v.dtype,
      what: `variable ${v.name}: ${v.dtype} ${formatShape(v.shape)} (its value at export)`,
    });
  }
  for (const c of m.constants)
    blobs.push({
      name: c.name,
      data: c.value.data,
      dtype: c.value.dtype,
      what: `constant ${c.value.dtype} ${formatShape(c.value.shape)}`,
    });
  const data = dataStatements(blobs, threshold, binFile);

  // The exported function: checks, the driver, updates, results.
  const nOut = src.nOutputs;
  const inSizes = shapes.map((s) => sizeOf(s));
  const checks = src.inputs.map(
    (ph, i) =>
      `if (${params[i]}.length !== ${inSizes[i]}) throw new RangeError(${jsString(`${name}: input ${params[i]} must have ${inSizes[i]} elements (${ph.dtype}, shape ${formatShape(shapes[i]!)}), got `)} + ${params[i]}.length);`,
  );
  const results = driver.results.map((r, k) => `const r${k} = ${r};`);
  const updates = src.updates.map(([v], k) => `${varName(varSlots.get(v)!)}.set(r${nOut + k});`);
  const outTypes = program.targets.slice(0, nOut).map((t) => arrayType(t.dtype));
  const fnParams: TsParam[] = [
    ...src.inputs.map((ph, i) => ({ name: params[i]!, type: arrayType(ph.dtype) })),
    ...(hasPhase ? [{ name: 'learningPhase', type: 'number', initializer: '0' }] : []),
  ];
  const doc = [
    `${name}: exported by theanine from a compiled function (optimizer ${src.optimizer}), specialised to the shapes below.`,
    'Arrays are flat, row-major; float16 is stored in Float32Array, int64 in Float64Array, bool in Uint8Array.',
    ...(src.updates.length > 0
      ? [`Each call also applies the function's ${src.updates.length} variable update(s) to the module's copies.`]
      : []),
    ...src.inputs.map(
      (ph, i) =>
        `@param ${params[i]} - input ${i} (${commentText(ph.name)}): ${ph.dtype}, shape ${formatShape(shapes[i]!)}`,
    ),
    ...(hasPhase ? ['@param learningPhase - 0 (test, the default) or 1 (train)'] : []),
    `@returns ${program.targets
      .slice(0, nOut)
      .map((t, k) => `[${k}] ${t.dtype}, shape ${formatShape(t.shape)}`)
      .join('; ')}`,
  ].join('\n');

  const info =
    `{ inputs: [${src.inputs.map((ph, i) => `{ name: ${jsString(ph.name)}, dtype: ${jsString(ph.dtype)}, shape: [${shapes[i]!.join(', ')}] }`).join(', ')}], ` +
    `outputs: [${program.targets
      .slice(0, nOut)
      .map((t) => `{ dtype: ${jsString(t.dtype)}, shape: [${t.shape.join(', ')}] }`)
      .join(', ')}] }`;

  const tm = loadTsMorph();
  const { StructureKind } = tm;
  const K = tm.VariableDeclarationKind.Const;
  const kernelText = [...m.functions.map((f) => f.body), ...driver.lines].join('\n');
  const prelude = helperPrelude(new Set([...kernelText.matchAll(/\brt\.(\w+)/g)].map((x) => x[1]!)));
  // The module as ts-morph structures, printed once.
  const statements: (string | TsMorph.StatementStructures)[] = [
    `// ${commentText(name)}: generated by theanine's exportModule. Do not edit; export again instead.`,
    '// Standalone: no imports of theanine. Kernels are the ones the compiled function runs.',
  ];
  if (data.bin !== undefined)
    statements.push({
      kind: StructureKind.ImportDeclaration,
      moduleSpecifier: 'node:fs',
      namedImports: ['readFileSync'],
    });
  if (prelude.typedArray) statements.push({ kind: StructureKind.TypeAlias, name: 'TypedArray', type: TYPED_ARRAY });
  // Function sources as statements of their own text (an initializer would be re-indented line by line).
  for (const [n, type, init] of prelude.consts)
    statements.push(`const ${n}${type !== '' ? `: ${type}` : ''} = ${reprint(tm, init)};`);
  m.scalarFns.forEach((fn, k) => {
    const s = scalarSource(fn);
    if (s === undefined)
      throw new ExportError(
        `exportModule(${name}): a kernel calls a scalar function without source text (${commentText(fn.name)})`,
      );
    statements.push(`const _f${k}: ${s.type} = ${reprint(tm, s.init)};`);
  });
  if (data.decoder) statements.push(BASE64_DECODER);
  statements.push(data.lines.join('\n'));
  for (const [n, init] of statics)
    statements.push({
      kind: StructureKind.VariableStatement,
      declarationKind: K,
      declarations: [{ name: n, initializer: init }],
    });
  for (const f of m.functions) {
    statements.push({
      kind: StructureKind.Function,
      name: f.name,
      parameters: f.params.map((p) => ({ name: p.name, type: p.type })),
      returnType: f.returnType,
      statements: f.body,
      ...(f.doc !== undefined ? { docs: [commentText(f.doc)] } : {}),
    });
  }
  statements.push({
    kind: StructureKind.Function,
    isExported: true,
    name,
    docs: [doc],
    parameters: fnParams.map((p) => ({
      name: p.name,
      type: p.type,
      ...(p.initializer !== undefined ? { initializer: p.initializer } : {}),
    })),
    returnType: `[${outTypes.join(', ')}]`,
    statements: [
      ...checks,
      ...driver.lines,
      ...results,
      ...updates,
      `return [${outTypes.map((_, k) => `r${k}`).join(', ')}];`,
    ].join('\n'),
  });
  statements.push({
    kind: StructureKind.VariableStatement,
    isExported: true,
    declarationKind: K,
    docs: ['Names, dtypes and shapes of the inputs and outputs.'],
    declarations: [{ name: `${name}Info`, initializer: `${info} as const` }],
  });
  // What the module uses of Node.js, so the check runs without @types/node (users compile it with theirs).
  const stub =
    data.bin === undefined
      ? undefined
      : "declare module 'node:fs' { export function readFileSync(path: URL): Uint8Array; }\n" +
        'interface ImportMeta { readonly url: string }\ndeclare class URL { constructor(url: string, base: string); }\n';
  const { source, errors } = buildAndCheck(tm, `/${name}.ts`, statements, stub);
  if (errors !== '')
    throw new Error(
      `exportModule(${name}): the generated module does not type-check, so it was not written (a bug in theanine, or a user op's template that reads names outside itself):\n${errors}`,
    );

  const binary = data.bin === undefined ? undefined : { fileName: binFile, bytes: data.bin };
  return {
    name,
    source,
    binary,
    write(path: string): string[] {
      platform.writeFile(path, source);
      if (binary === undefined) return [path];
      const bp = platform.join(platform.dirname(path), binary.fileName);
      platform.writeFile(bp, binary.bytes);
      return [path, bp];
    },
  };
}
