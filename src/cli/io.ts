// Where the CLI writes, so tests can run main() in-process and read what it printed.
import { writeSync } from 'node:fs';

/** The stream progress bars are drawn on (process.stderr; tests give a stand-in terminal). */
export type ProgressStream = NodeJS.WritableStream & { readonly isTTY?: boolean; readonly columns?: number };

export interface Io {
  out(text: string): void;
  err(text: string): void;
  /** Interactive stderr: progress bars are drawn only there, plain lines otherwise. */
  readonly tty: boolean;
  /**
   * stdout is a terminal too (the same one, in practice): each epoch's kept bar is then its
   * record, and the epoch line is not printed a second time.
   */
  readonly outTty?: boolean;
  /** Where bars are drawn (default: process.stderr). */
  readonly progress?: ProgressStream;
}

/** stdout was closed by its reader (`theanine ... | head -1`): the command ends quietly. */
export class OutputClosed extends Error {
  override readonly name = 'OutputClosed';
}

function code(e: unknown): string | undefined {
  return typeof e === 'object' && e !== null && 'code' in e && typeof e.code === 'string' ? e.code : undefined;
}

/**
 * Writes all of `text` to `fd` now. Synchronous on purpose: training runs synchronously, so a
 * stream's asynchronous EPIPE event would only arrive after the whole run; writeSync reports a
 * closed pipe at once. EAGAIN (a non-blocking pipe whose reader is behind) is retried.
 */
function writeAll(fd: number, text: string): void {
  const buf = Buffer.from(text);
  let done = 0;
  while (done < buf.length) {
    try {
      done += writeSync(fd, buf, done);
    } catch (e) {
      if (code(e) === 'EAGAIN') continue;
      if (code(e) === 'EPIPE') throw new OutputClosed('stdout was closed');
      throw e;
    }
  }
}

export const processIo: Io = {
  out: (t) => {
    writeAll(1, t);
  },
  err: (t) => {
    try {
      writeAll(2, t);
    } catch (e) {
      if (!(e instanceof OutputClosed)) throw e; // nowhere left to report it
    }
  },
  tty: process.stderr.isTTY === true,
  outTty: process.stdout.isTTY === true,
};

/** A user error: printed as `theanine: <message>`, exit code 2. */
export class CliError extends Error {
  override readonly name = 'CliError';
}
