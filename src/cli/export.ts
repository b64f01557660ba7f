// `theanine export <file> --out model.ts`: loads a module that builds a compiled function,
// calls its builder, and writes the function as a standalone TypeScript module (see
// f.exportModule, docs/extending.md). The CLI registers it; this file has no commander code.
import { existsSync, writeFileSync } from 'node:fs';
import { basename, extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { CompiledFunction } from '../index.js';

export interface ExportCommandOptions {
  /** The exported function's name; default: the output file's name as an identifier. */
  readonly name?: string;
  /** Which export of `file` builds the function; default: `default`, else its only exported function. */
  readonly builder?: string;
  /** Bytes of data above which it goes to a .bin file beside the module (default 1 MiB). */
  readonly binThreshold?: number;
}

export interface ExportCommandResult {
  readonly name: string;
  /** The module, then its .bin file if there is one. */
  readonly written: readonly string[];
}

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** The output file's name as an identifier: `model.ts` -> `model`, `my-net.ts` -> `my_net`. */
export function nameFromPath(out: string): string {
  let n = basename(out, extname(out))
    .replace(/[^A-Za-z0-9_$]/g, '_')
    .replace(/^_+/, '');
  if (n === '' || /^\d/.test(n)) n = `model${n === '' ? '' : `_${n}`}`;
  return IDENT.test(n) ? n : 'model';
}

/** Imports a user module (JavaScript, or TypeScript through tsx when it is installed). */
export async function loadUserModule(path: string): Promise<Record<string, unknown>> {
  const url = pathToFileURL(path).href;
  try {
    return (await import(url)) as Record<string, unknown>;
  } catch (e) {
    // Node without a TypeScript loader: load .ts files through tsx when it is installed.
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'ERR_UNKNOWN_FILE_EXTENSION' || !/\.[mc]?ts$/.test(path)) throw e;
    let tsx: { tsImport(specifier: string, parent: string): Promise<Record<string, unknown>> };
    try {
      tsx = (await import('tsx/esm/api' as string)) as typeof tsx;
    } catch {
      throw new Error(
        `${path} is TypeScript: install tsx (npm install --save-dev tsx) so theanine can load it, or compile it to JavaScript first`,
      );
    }
    return tsx.tsImport(url, import.meta.url);
  }
}

function isCompiled(f: unknown): f is CompiledFunction {
  return typeof f === 'function' && typeof (f as Partial<CompiledFunction>).exportModule === 'function';
}

/**
 * Loads `file` (a module whose default export, or only exported function, or `builder`, returns a
 * compiled function, or a promise of one), and writes that function's standalone module to `out`.
 */
export async function exportCommand(
  file: string,
  out: string,
  opts: ExportCommandOptions = {},
): Promise<ExportCommandResult> {
  const f = await builtFunction(file, opts.builder);
  const name = opts.name ?? nameFromPath(out);
  const binFile = `${basename(out, extname(out))}.bin`;
  const exported = f.exportModule({
    name,
    binFile,
    ...(opts.binThreshold !== undefined ? { binThreshold: opts.binThreshold } : {}),
  });
  return { name, written: exported.write(out) };
}

/** `theanine export <file> --format onnx --out model.onnx`: the function as a serialized ONNX model. */
export async function exportOnnxCommand(
  file: string,
  out: string,
  opts: { name?: string; builder?: string; opset?: number } = {},
): Promise<ExportCommandResult & { opset: number; bytes: number }> {
  const f = await builtFunction(file, opts.builder);
  const name = opts.name ?? nameFromPath(out);
  const opset = opts.opset ?? 17;
  const bytes = f.exportOnnx({ name, opset });
  writeFileSync(out, bytes);
  return { name, written: [out], opset, bytes: bytes.length };
}

async function builtFunction(file: string, builderName: string | undefined): Promise<CompiledFunction> {
  const opts = { builder: builderName };
  const path = resolve(file);
  if (!existsSync(path)) throw new Error(`cannot read ${file}: no such file`);
  const mod = await loadUserModule(path);
  const fns = Object.entries(mod).filter(([, v]) => typeof v === 'function');
  let key: string;
  if (opts.builder !== undefined) key = opts.builder;
  else if (typeof mod['default'] === 'function') key = 'default';
  else if (fns.length === 1) key = fns[0]![0];
  else {
    throw new Error(
      `${file} must export a function that returns a compiled function (as its default export, or its only exported function); ` +
        `it exports ${fns.length === 0 ? 'no functions' : `the functions ${fns.map(([k]) => k).join(', ')}: say which with --builder`}`,
    );
  }
  const builder = mod[key];
  if (typeof builder !== 'function') throw new Error(`${file} has no exported function ${JSON.stringify(key)}`);
  const f: unknown = await (builder as () => unknown)();
  if (!isCompiled(f)) {
    throw new Error(
      `${file}: ${key === 'default' ? 'the default export' : key}() returned ${f === null ? 'null' : typeof f}; it must return a compiled function (K.function(...))`,
    );
  }
  return f;
}
