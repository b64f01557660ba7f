// The theanine command line: train, graph, passes, export, viz, bench. Every error is one line on stderr
// (`theanine: ...`) and exit code 2; set THEANINE_DEBUG=cli to see the stack as well.
import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';
import { benchCommand } from './bench.js';
import { exportCli } from './export-command.js';
import { graphCommand, passesCommand } from './graph.js';
import { OutputClosed, processIo, type Io } from './io.js';
import { trainCommand } from './train.js';
import { profileCommand } from './profile.js';
import { vizCommand } from './viz.js';

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** Where commands look for things outside the package's code (tests point them elsewhere). */
export interface ProgramOptions {
  /** The folder holding bench/ (default: the package root). */
  readonly benchRoot?: string;
}

export function buildProgram(io: Io = processIo, opts: ProgramOptions = {}): Command {
  const program = new Command('theanine')
    .description('theanine: the Keras backend API for TypeScript, as a Theano-like graph compiler')
    .version(version())
    .addHelpText(
      'after',
      `
Environment:
  KERAS_BACKEND=theanine|tensorflow  default backend (else "backend" in keras.json)
  THEANINE_DEVICE=cpu|gpu            default device (else "device" in keras.json)
  KERAS_HOME=<dir>                   where keras.json is (default ~/.keras)
  THEANINE_TFJS_BACKEND=node|wasm|cpu  the TensorFlow.js flavour of the tensorflow backend
  THEANINE_GPU_MODE=webgpu|auto|headlessgl|webasm  the gpu device's mode (else "gpu_mode" in keras.json)
  THEANINE_DEBUG=cli                 print the stack trace of an error, not only its one line
  THEANINE_DEBUG=passes,gpu          the optimizer's passes, the gpu device and its kernels (all: every topic)
  THEANINE_MODE=debug                checking mode: every rewrite and kernel compared with the reference interpreter
  THEANINE_NAN_GUARD=1               raise at the first kernel that writes NaN or Inf from finite inputs
`,
    )
    .configureOutput({
      writeOut: (s) => io.out(s),
      writeErr: (s) => io.err(s),
      // One line: commander's suggestion ('Did you mean --epochs?') joins the message.
      outputError: (s, write) =>
        write(
          `theanine: ${s
            .replace(/^error: /, '')
            .trimEnd()
            .replace(/\s*\n\s*/g, ' ')}\n`,
        ),
    });
  for (const c of [
    trainCommand(io),
    graphCommand(io),
    passesCommand(io),
    exportCli(io),
    vizCommand(io),
    profileCommand(io),
    benchCommand(...(opts.benchRoot === undefined ? [] : [opts.benchRoot])),
  ]) {
    program.addCommand(c.configureOutput(program.configureOutput()));
  }
  program.exitOverride();
  for (const c of program.commands) c.exitOverride();
  return program;
}

/** Runs the CLI on `argv` (node, script, args...) and returns the exit code: 0, or 2 on any error. */
export async function main(argv: readonly string[], io: Io = processIo, opts: ProgramOptions = {}): Promise<number> {
  const program = buildProgram(io, opts);
  try {
    await program.parseAsync([...argv]);
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
    // `theanine ... | head -1`: the reader has what it wanted; end quietly, as cat and ls do.
    if (e instanceof OutputClosed) return 0;
    // One line: an error's provenance line (`built by K.gather at train.ts:41`) joins it.
    io.err(`theanine: ${(e instanceof Error ? e.message : String(e)).replace(/\n(built by [^\n]*)$/, ' ($1)')}\n`);
    if (process.env['THEANINE_DEBUG']?.split(',').includes('cli') === true && e instanceof Error)
      io.err(`${e.stack ?? ''}\n`);
    return 2;
  }
}
