// The ops that still run as extern steps (their reference implementation inside compiled code)
// for want of a kernel, and why: the fallback rule (src/runtime/fallback.ts) names them, and the
// test tables accept extern steps of these ops and no others.

/**
 * Built-in ops that still run as extern steps (their reference implementation) because they have no
 * kernel-IR lowering yet. This is the one list: the test tables accept extern steps of these ops
 * and no others, and it shrinks as kernels land.
 */
export const NO_KERNEL_YET: Readonly<Record<string, string>> = {
  ctc_create_skip_idxs:
    'its result lists the positions where the label changes, so its size depends on the label values, not shapes ' +
    '(a function applying it to a placeholder runs the reference interpreter; to constants, it is folded)',
  // Searches and data-dependent sizes; TensorFlow runs its CTC decoders on the CPU too.
  ctc_decode:
    'beam search (greedy: false) is a search on the host, as TensorFlow runs its CTC decoders on the CPU: it keeps up to ' +
    'beam_width label prefixes per step, merged by prefix and ranked by probability (a data structure, not a loop nest over an index ' +
    'space); greedy decoding is a kernel',
  ctc_trim:
    'the width of decoded labels is the longest decoding in the batch, so its size depends on the decoded values, not shapes ' +
    "(a function returning ctc_decode's labels runs the reference interpreter; its scores alone stay compiled)",
  ctc_label_dense_to_sparse:
    'its results have one row per label before each label_length, so their sizes are sums of input values, not shapes ' +
    '(a function applying it to a placeholder runs the reference interpreter; to constants, it is folded)',
};

/** Why an op runs as an extern step (the lowering's words for it). */
export function externReason(op: string): string {
  return NO_KERNEL_YET[op] ?? 'no kernel: the op has no code template';
}
