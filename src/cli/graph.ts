// `theanine graph <example>` and `theanine passes <example>`: the built-in graphs as debugprint
// text, DOT text or an SVG picture, before or after the optimizer; and the pass table.
import { writeFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import type { DotOptions, OptimizerLevel, Tensor } from '../index.js';
import { debugprint, dot, listPasses, optimize, svg } from '../index.js';
import { EXAMPLES, buildExample, type Example, type ExampleName } from '../examples/graphs.js';
import { CliError, type Io } from './io.js';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadUserModule } from './export.js';

const collect = (v: string, prev: string[]) => [...prev, v];

/** Loads the --require files first, so the user passes they define with { global: true } run. */
async function requireAll(files: readonly string[]): Promise<void> {
  for (const f of files) {
    const path = resolve(f);
    if (!existsSync(path)) throw new CliError(`cannot read ${f}: no such file`);
    await loadUserModule(path);
  }
}

const exampleArgument = () =>
  new Command().createArgument('<example>', `one of: ${EXAMPLES.join(', ')}`).choices(EXAMPLES);

type Level = Exclude<OptimizerLevel, 'none'>;
const levelOption = () =>
  new Option(
    '--optimizer <level>',
    'the optimizer level (default: keras.json "optimizer" or THEANINE_OPTIMIZER, else fast_run)',
  ).choices(['fast_run', 'fast_compile', 'eqsat']);

interface GraphFlags {
  optimized?: boolean;
  svg?: string;
  dot?: boolean;
  require: string[];
  optimizer?: Level;
}

/** DOT options of an example's `outputs` (as built or optimized): output names and its groups. */
export function dotOptionsOf(ex: Example, outputs: readonly Tensor[], optimized: boolean): DotOptions {
  return {
    title: `${ex.name}${optimized ? ' (optimized)' : ''}: ${ex.description}`,
    outputNames: ex.outputNames,
    ...(ex.groups !== undefined ? { cluster: ex.groups(outputs) } : {}),
  };
}

export function graphCommand(io: Io): Command {
  return new Command('graph')
    .description('show a built-in example graph: debugprint text (default), DOT text, or an SVG picture')
    .addArgument(exampleArgument())
    .option('--optimized', 'after the optimizer passes')
    .addOption(levelOption())
    .option('--svg <file>', 'write an SVG picture (Graphviz via @viz-js/viz) to <file>')
    .addOption(new Option('--dot', 'print DOT text instead of debugprint').conflicts('svg'))
    .option(
      '--require <file>',
      'load a module first (e.g. one defining passes with { global: true }); repeatable',
      collect,
      [],
    )
    .action(async (name: ExampleName, f: GraphFlags) => {
      await requireAll(f.require);
      const ex = buildExample(name);
      const outputs =
        f.optimized === true
          ? optimize(ex.outputs, f.optimizer !== undefined ? { optimizer: f.optimizer } : {}).outputs
          : ex.outputs;
      const opts = dotOptionsOf(ex, outputs, f.optimized === true);
      if (f.svg !== undefined) {
        const text = await svg(outputs, opts);
        try {
          writeFileSync(f.svg, text);
        } catch (e) {
          throw new CliError(`cannot write ${f.svg}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
        }
        io.out(`wrote ${f.svg} (${ex.name}${f.optimized === true ? ', optimized' : ''})\n`);
      } else if (f.dot === true) {
        io.out(dot(outputs, opts));
      } else {
        io.out(`${ex.name}: ${ex.description}\n${debugprint(outputs)}\n`);
      }
    });
}

export function passesCommand(io: Io): Command {
  return new Command('passes')
    .description('run the optimizer on a built-in example and list each pass with its time and node count')
    .addArgument(exampleArgument())
    .addOption(levelOption())
    .option(
      '--require <file>',
      'load a module first (e.g. one defining passes with { global: true }); repeatable',
      collect,
      [],
    )
    .action(async (name: ExampleName, f: { require: string[]; optimizer?: Level }) => {
      await requireAll(f.require);
      const ex = buildExample(name);
      const level = f.optimizer !== undefined ? { optimizer: f.optimizer } : {};
      const { passes } = optimize(ex.outputs, level);
      const docs = new Map(listPasses(level).map((p) => [p.name, p.doc] as const));
      const w = Math.max(4, ...passes.map((p) => p.name.length));
      io.out(`${ex.name}: ${ex.description}\n`);
      io.out(`${'pass'.padEnd(w)}  ${'time (ms)'.padStart(9)}  ${'nodes'.padStart(13)}  what it rewrites\n`);
      for (const p of passes) {
        io.out(
          `${p.name.padEnd(w)}  ${p.ms.toFixed(2).padStart(9)}  ${`${p.nodesBefore} -> ${p.nodesAfter}`.padStart(13)}  ${docs.get(p.name) ?? ''}\n`,
        );
        if (p.note !== undefined) io.out(`${''.padEnd(w)}  ${p.note}\n`);
      }
    });
}
