// The ops that still run as extern steps (their reference implementation inside compiled code)
// for want of a kernel, and why: the fallback rule (src/runtime/fallback.ts) names them, and the
// test tables accept extern steps of these ops and no others.

/**
 * Built-in ops that still run as extern steps (their reference implementation) because they have no
 * kernel-IR lowering yet. This is the one list: the test tables accept extern steps of these ops
 * and no others, and it shrinks as kernels land (issue 13 item 3).
 */
export const NO_KERNEL_YET: Readonly<Record<string, string>> = {
  ctc_interleave_blanks: 'no kernel yet (issue 13 item 3)',
  ctc_create_skip_idxs: 'no kernel yet (issue 13 item 3)',
  ctc_update_log_p: 'no kernel yet (issue 13 item 3)',
  ctc_path_probs: 'no kernel yet (issue 13 item 3)',
  // Searches whose output sizes depend on the data; TensorFlow runs its decoders on the CPU too.
  ctc_decode: 'a sequential search on the host (greedy or beam), as TensorFlow decodes on the CPU',
  ctc_label_dense_to_sparse: 'its output size depends on the label lengths (computed on the host)',
};

/** Why an op runs as an extern step (the lowering's words for it). */
export function externReason(op: string): string {
  return NO_KERNEL_YET[op] ?? 'no kernel: the op has no code template';
}

