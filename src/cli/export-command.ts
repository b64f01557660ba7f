// `theanine export <file> --out model.ts`: the commander side of export.ts (which loads the
// builder module and writes the standalone module; docs/extending.md).
import { Command, Option } from 'commander';
import { exportCommand, exportOnnxCommand } from './export.js';
import type { Io } from './io.js';
import { nonNegativeInt } from './numbers.js';

interface ExportFlags {
  out: string;
  name?: string;
  builder?: string;
  binThreshold?: number;
  format: string;
  opset?: number;
}

export function exportCli(io: Io): Command {
  return new Command('export')
    .description(
      'write a compiled function as a standalone TypeScript module that does not import theanine, or as an ONNX model (--format onnx)',
    )
    .argument(
      '<file>',
      'a module whose default export (or only exported function, or --builder) returns K.function(...)',
    )
    .requiredOption('--out <file>', 'the module to write; large data goes to a .bin file beside it')
    .option('--name <identifier>', "the exported function's name (default: from the --out file name)")
    .option('--builder <export>', 'which exported function of <file> builds the compiled function')
    .option(
      '--bin-threshold <bytes>',
      'data above this many bytes goes to the .bin file (default 1 MiB)',
      nonNegativeInt,
    )
    .addOption(new Option('--format <format>', 'what to write').choices(['typescript', 'onnx']).default('typescript'))
    .option('--opset <n>', 'the ONNX opset (17 to 21; --format onnx)', nonNegativeInt)
    .action(async (file: string, f: ExportFlags) => {
      if (f.format === 'onnx') {
        const r = await exportOnnxCommand(file, f.out, {
          ...(f.name !== undefined ? { name: f.name } : {}),
          ...(f.builder !== undefined ? { builder: f.builder } : {}),
          ...(f.opset !== undefined ? { opset: f.opset } : {}),
        });
        io.out(`wrote ${r.written.join(' and ')}: ONNX model ${r.name} (opset ${r.opset}, ${r.bytes} bytes)\n`);
        return;
      }
      const r = await exportCommand(file, f.out, {
        ...(f.name !== undefined ? { name: f.name } : {}),
        ...(f.builder !== undefined ? { builder: f.builder } : {}),
        ...(f.binThreshold !== undefined ? { binThreshold: f.binThreshold } : {}),
      });
      io.out(`wrote ${r.written.join(' and ')}: export function ${r.name}\n`);
    });
}
