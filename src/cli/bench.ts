// `theanine bench`: runs the benchmark suite in bench/ when this checkout has it.
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { CliError } from './io.js';

/** bench/ sits at the package root, two folders above src/cli or dist/cli. */
const packageRoot = fileURLToPath(new URL('../../', import.meta.url));
const ENTRIES = ['bench/run.ts', 'bench/index.ts'];

/** `root`: where to look for bench/ (the package root; tests give another folder). */
export function benchCommand(root: string = packageRoot): Command {
  return new Command('bench')
    .description('run the benchmark suite (bench/) against TensorFlow.js, in a checkout with its dev dependencies')
    .argument('[filter]', 'only the cases whose name contains this')
    .action((filter: string | undefined) => {
      const entry = ENTRIES.find((e) => existsSync(join(root, e)));
      if (entry === undefined) {
        // bench/ is not published: it needs the repository's dev dependencies (TensorFlow.js, tsx).
        throw new CliError(
          `bench runs the benchmark suite of a theanine checkout, which an installed package does not include (no ${ENTRIES.join(' or ')} under ${root}): clone the repository, run npm install there, then npx theanine bench`,
        );
      }
      // As `npm run bench`: TypeScript through tsx, --expose-gc so the suite can collect garbage between rounds.
      const r = spawnSync(
        process.execPath,
        ['--expose-gc', '--import', 'tsx', entry, ...(filter === undefined ? [] : [filter])],
        { cwd: root, stdio: 'inherit' },
      );
      if (r.status !== 0) throw new CliError(`the benchmark suite failed (exit code ${r.status ?? r.signal})`);
    });
}
