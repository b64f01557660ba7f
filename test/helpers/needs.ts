// Tests that need something beyond Node (headless Chromium, an X display) skip where it is
// missing, with a visible line saying what was skipped and how to enable it (printed after the
// run by setup.ts). CI sets THEANINE_TEST_NO_SKIP=1 (.ci/run): there a missing requirement is a
// failure, so nothing skips silently where everything should run.

/** What was skipped and why, in order (setup.ts prints them after the run). */
export const skipped: { what: string; why: string }[] = [];

export const NO_SKIP = 'THEANINE_TEST_NO_SKIP';

/**
 * Skips the running test or hook (`ctx` is mocha's `this`) when `missing` is a reason rather
 * than undefined; under THEANINE_TEST_NO_SKIP=1 throws instead.
 */
export function needs(ctx: Mocha.Context, what: string, missing: string | undefined): void {
  if (missing === undefined) return;
  if (process.env[NO_SKIP] === '1') throw new Error(`${what}: ${missing} (${NO_SKIP}=1 makes this a failure, not a skip)`);
  skipped.push({ what, why: missing });
  ctx.skip();
}

/** The lines printed after the run, one per skipped requirement. */
export function skipReport(): string[] {
  return skipped.map((s) => `skipped: ${s.what}: ${s.why} (CI sets ${NO_SKIP}=1 so that this fails instead)`);
}
