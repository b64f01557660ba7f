// THEANINE_DEBUG: a comma-separated list of topics (`passes`, `gpu`, ...; `all` or `1` for every
import { platform } from '#platform';
// one). Read on each check, so a test or a REPL can switch it on and off.
function topics(): string[] {
  const v = platform.env('THEANINE_DEBUG');
  return v === undefined || v === '' ? [] : v.split(',').map((t) => t.trim());
}

/** Whether THEANINE_DEBUG asks for `topic`. */
export function debugEnabled(topic: string): boolean {
  const ts = topics();
  return ts.includes(topic) || ts.includes('all') || ts.includes('1');
}

/** Whether THEANINE_DEBUG is set at all (lines every topic shows, such as the device in use). */
export function debugAny(): boolean {
  return topics().length > 0;
}

export function debugLog(line: string): void {
  platform.writeStderr(`[theanine] ${line}\n`);
}
