// `theanine profile <example|file>`: compiles a built-in example graph (or the graph a module
// builds) with { profile: true }, runs it on seeded random inputs, and prints the profile table
// (src/runtime/profile.ts); --trace writes Chrome trace-event JSON, --json the plain object.
import { existsSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { backend as K, NDArray, type Tensor } from '../index.js';
import { EXAMPLES, buildExample } from '../examples/graphs.js';
import { Rng } from '../examples/random.js';
import { loadUserModule } from './export.js';
import { CliError, type Io } from './io.js';

/** What a module given to `theanine profile` builds: its default export (or `graph`) returns it. */
interface GraphSpec {
  readonly inputs: readonly Tensor[];
  readonly outputs: readonly Tensor[];
}

function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`${JSON.stringify(v)} is not a positive integer`);
  return n;
}

async function graphOf(what: string): Promise<GraphSpec> {
  if ((EXAMPLES as readonly string[]).includes(what)) return buildExample(what as (typeof EXAMPLES)[number]);
  const path = resolve(what);
  if (!existsSync(path)) throw new CliError(`${what} is neither an example (${EXAMPLES.join(', ')}) nor a file`);
  const mod = await loadUserModule(path);
  const build = mod['default'] ?? mod['graph'];
  if (typeof build !== 'function')
    throw new CliError(`${what}: export a function (default, or named graph) returning { inputs, outputs }`);
  const g = (await (build as () => unknown)()) as Partial<GraphSpec> | undefined;
  if (!Array.isArray(g?.inputs) || !Array.isArray(g?.outputs))
    throw new CliError(`${what}: its graph function must return { inputs: placeholders, outputs: tensors }`);
  return g as GraphSpec;
}

/** Seeded inputs of the placeholders' types; unknown dims (the batch) take `batch`. */
function inputsFor(inputs: readonly Tensor[], batch: number): NDArray[] {
  const rng = new Rng(7);
  return inputs.map((x) => {
    const shape = x.shape.map((d) => d ?? batch);
    const n = shape.reduce((a, b) => a * b, 1);
    const data = Array.from({ length: n }, () =>
      x.dtype.startsWith('float') ? 2 * rng.next() - 1 : Math.floor(4 * rng.next()),
    );
    return NDArray.from(data, x.dtype).reshape(shape);
  });
}

interface ProfileFlags {
  calls: number;
  batch: number;
  device?: 'cpu' | 'gpu';
  trace?: string;
  json?: boolean;
}

export function profileCommand(io: Io): Command {
  return new Command('profile')
    .description(
      'compile a built-in example (or the graph a module builds) with { profile: true }, run it on seeded inputs and print its profile',
    )
    .argument(
      '<example|file>',
      `one of: ${EXAMPLES.join(', ')}; or a module whose default export returns { inputs, outputs }`,
    )
    .option('--calls <n>', 'calls to profile (after one warm-up call)', positiveInt, 20)
    .option('--batch <n>', 'the size of unknown dims (the batch)', positiveInt, 64)
    .addOption(new Option('--device <device>', 'the device').choices(['cpu', 'gpu']))
    .option('--trace <file>', 'also write Chrome trace-event JSON (Perfetto, chrome://tracing) to <file>')
    .option('--json', 'print the profile as JSON instead of the table')
    .action(async (what: string, f: ProfileFlags) => {
      const g = await graphOf(what);
      const fn = K.function([...g.inputs], [...g.outputs], [], {
        profile: true,
        name: what,
        ...(f.device !== undefined ? { device: f.device } : {}),
      });
      const values = inputsFor(g.inputs, f.batch);
      fn(values); // warm-up: compiles, and V8 starts on the generated code
      fn.profile({ reset: true }); // the warm-up's kernel times stay out (its compile phases stay in)
      for (let i = 0; i < f.calls; i++) fn(values);
      const p = fn.profile();
      if (f.trace !== undefined) {
        try {
          writeFileSync(f.trace, fn.profile({ format: 'trace' }));
        } catch (e) {
          throw new CliError(`cannot write ${f.trace}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
        }
      }
      io.out(f.json === true ? `${JSON.stringify(p, null, 2)}\n` : fn.profile({ format: 'table' }));
      if (f.trace !== undefined) io.out(`wrote ${f.trace} (Chrome trace-event JSON)\n`);
    });
}
