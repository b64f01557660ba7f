// Warnings (a step that falls back to the host or the reference interpreter, a missing GL
import { platform } from '#platform';
// context): written to stderr at once, so they come before the results that follow them.
// Node's process.emitWarning prints on a later tick (after a CLI's `test accuracy:` line) and
// adds its --trace-warnings hint; stderr writes are synchronous for files, pipes and terminals.
// Tests collect them (setWarningSink) and print them after the reporter's output.

export type WarningSink = (message: string) => void;

const writeStderr: WarningSink = (m) => {
  platform.writeStderr(`${m}\n`);
};

// On globalThis: a loader that gives this module two instances (tsx's CommonJS and ESM paths
// under mocha) must still send every warning to one sink.
const KEY = Symbol.for('theanine.warnings');
const shared = globalThis as { [KEY]?: { sink: WarningSink } };
const state = (shared[KEY] ??= { sink: writeStderr });

/** Prints one warning line (messages start with `theanine: `). */
export function warn(message: string): void {
  state.sink(message);
}

/** Sends warnings to `sink` (undefined: stderr); returns the sink it replaces, to put back later. */
export function setWarningSink(sink: WarningSink | undefined): WarningSink {
  const before = state.sink;
  state.sink = sink ?? writeStderr;
  return before;
}

/** The sink in use (a test that captures warnings puts it back). */
export function warningSink(): WarningSink {
  return state.sink;
}
