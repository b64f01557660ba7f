// Calls whose function checks its arguments and throws the reference's error (a device cannot
// throw): the device spells the call as the value it returns, and the runtime runs the cpu's code
// of the kernel on the host before the dispatch, its results unused, so bad data raises the same
// error as on the cpu (TensorFlow's CTC validates the lengths on the host likewise).

/** Each checked call's WGSL value, from its arguments' spellings. */
export const CHECKED_CALLS: Readonly<Record<string, (args: readonly string[]) => string>> = {
  // ctc_check(op, j, b, x, T, L, n, blank) returns x or throws (src/codegen/lower/ctc.ts).
  ctc_check: (a) => a[3]!,
};
